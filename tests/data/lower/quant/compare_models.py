#!/usr/bin/python3
"""Runs a QDQ model lowered under an INT-only spec on ctosa's interpreter and
compares its dequantized outputs with the stored ONNX Runtime / torch outputs
(in output quantization steps). Usage:
  compare_models.py CTOSA MODEL_DIR [SPEC] [N]   (N inputs of inputs_20.npy, default 20)
Prints one JSON line."""
import json, os, subprocess, sys, tempfile
import numpy as np

ctosa, mdir = sys.argv[1], sys.argv[2]
spec = sys.argv[3] if len(sys.argv) > 3 else "TOSA-1.0+INT"
nin = int(sys.argv[4]) if len(sys.argv) > 4 else 20
tmp = tempfile.mkdtemp()
subprocess.run([ctosa, "lower", os.path.join(mdir, "model.onnx"), "--spec", spec, "-o", tmp, "-q"], check=True)
rep = json.load(open(os.path.join(tmp, "model.report.json")))
parts = rep["partitions"]
assert len(parts) == 1, parts
p = parts[0]
pin, pout = p["inputs"][0], p["outputs"][0]
xs = np.load(os.path.join(mdir, "inputs_20.npy"))[:nin]
outs = []
for k in range(nin):
    x = xs[k].astype(np.float32)
    s, zp = np.float32(pin["scale"]), pin["zero_point"]
    q = np.clip(np.rint(x / s) + zp, 0, 255).astype(np.uint8)
    np.save(os.path.join(tmp, "in.npy"), q.view(np.int8))
    subprocess.run([ctosa, "run", os.path.join(tmp, p["file"]), "--input", pin["name"] + "=" + os.path.join(tmp, "in.npy"),
                    "--output", pout["name"] + "=" + os.path.join(tmp, "out.npy"), "-q", "--threads", "2"], check=True)
    y = np.load(os.path.join(tmp, "out.npy")).view(np.uint8).astype(np.float32)
    outs.append((y - pout["zero_point"]) * np.float32(pout["scale"]))
ours = np.stack(outs)
step = pout["scale"]
res = {"model": os.path.basename(mdir.rstrip("/")), "inputs": nin,
       "delegated_nodes": rep.get("summary", {}).get("delegated_nodes"), "partitions": len(parts)}
def top1(a, b):
    return int(sum(1 for i in range(len(a)) if set(np.flatnonzero(a[i] == a[i].max())) & set(np.flatnonzero(b[i] == b[i].max()))))
for ref in ["ort_outputs_20", "ort_noopt_outputs_20", "outputs_20"]:
    r = np.load(os.path.join(mdir, ref + ".npy"))[:nin].reshape(ours.shape)
    d = np.abs(ours - r) / step
    res[ref] = {"max_steps": round(float(d.max()), 3), "within3": round(float((d <= 3.0001).mean()), 4),
                "exact": round(float((d < 0.001).mean()), 4), "top1": top1(ours.reshape(nin, -1), r.reshape(nin, -1))}
print(json.dumps(res))
