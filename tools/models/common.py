"""Shared helpers for the ctosa model generators (tools/models/*.py).

Run every generator with Debian's /usr/bin/python3 (python3-torch 1.13,
python3-torchvision 0.14, python3-onnx 1.12, numpy 1.24); the pyenv python3
that may come first on PATH has none of them.
"""
import json
import os
import shutil
import subprocess
import sys
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ORT_DIR = os.path.join(REPO, "tools", "ort")
ORT_SCRIPT = os.path.join(ORT_DIR, "run_ort.js")
DEFAULT_OUT = os.path.join(REPO, "build-models")  # matches /build*/ in .gitignore


def log(msg):
    print(msg, file=sys.stderr, flush=True)


class Timer:
    def __init__(self):
        self.t0 = time.perf_counter()

    def lap(self):
        t = time.perf_counter()
        d, self.t0 = t - self.t0, t
        return d


def save_npy(path, arr):
    """np.save through a temporary name, so a killed run leaves no half file."""
    tmp = path + ".tmp.npy"
    np.save(tmp, np.ascontiguousarray(arr))
    os.replace(tmp, path)


def write_json(path, obj):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(obj, f, indent=1, sort_keys=True)
        f.write("\n")
    os.replace(tmp, path)


def file_mb(path):
    return os.path.getsize(path) / 1e6


def op_histogram(model):
    """{op_type: count} over the main graph (sorted by name)."""
    h = {}
    for n in model.graph.node:
        key = n.op_type if n.domain in ("", "ai.onnx") else f"{n.domain}.{n.op_type}"
        h[key] = h.get(key, 0) + 1
    return dict(sorted(h.items()))


def ort_available():
    """True when node and the npm onnxruntime-node package can be used
    (CTOSA_NO_ORT=1 in the environment forces False)."""
    if os.environ.get("CTOSA_NO_ORT") == "1" or shutil.which("node") is None:
        return False
    return os.path.isdir(os.path.join(ORT_DIR, "node_modules", "onnxruntime-node"))


def run_ort(model_path, inputs, out_dir, opt="all", batch=False):
    """Run tools/ort/run_ort.js; inputs = list of .npy paths in graph-input
    order. Returns the list of output arrays, or None if ORT is unavailable.
    Raises RuntimeError when ORT is present but fails."""
    if not ort_available():
        return None
    os.makedirs(out_dir, exist_ok=True)
    cmd = ["node", ORT_SCRIPT, model_path, "--out", out_dir, "--opt", opt, "--quiet"]
    if batch:
        cmd.append("--batch")
    cmd += list(inputs)
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"ORT failed on {model_path}: {r.stderr.strip()}")
    outs = []
    i = 0
    while os.path.exists(os.path.join(out_dir, f"output_{i}.npy")):
        outs.append(np.load(os.path.join(out_dir, f"output_{i}.npy")))
        i += 1
    return outs


def reestimate_batchnorm(model, make_batch, batches=4):
    """Replace default BatchNorm running statistics (mean 0, var 1) by the
    real statistics of the activations on random data: with the defaults a
    random-weight network's activations shrink layer after layer (mobilenet_v2
    logits ~1e-9, its quantized form all zeros), which makes useless test data.
    momentum=None makes the running stats a plain cumulative average."""
    import torch
    bns = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    for m in bns:
        m.reset_running_stats()
        m.momentum = None
    model.train()
    with torch.no_grad():
        for i in range(batches):
            model(make_batch(i))
    model.eval()
    return len(bns)


def remove_tree(d):
    """Remove a scratch folder of plain files (no error if absent)."""
    if os.path.isdir(d):
        shutil.rmtree(d)


def max_abs_diff(a, b):
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    return float(np.max(np.abs(a - b))) if a.size else 0.0
