#!/usr/bin/python3
"""cli_runtime_nodes.py CTOSA NODE_DIR TMP [SPEC] - the ONNX node tests
(Debian's libonnx-testdata) end to end through the runtime: each test model
is lowered under a narrow spec (default TOSA-1.0+INT, so float nodes fall
back to the CPU), `ctosa run MODEL.partitioned.onnx` runs it (partitions on
the interpreter, CPU nodes on the host executor) on test_data_set_0, and the
outputs are compared with the expected ones (rtol 1e-3, atol 1e-5, integers
exactly: the node-test acceptance's tolerances). Prints the counts: tests
that ran end to end and matched, how many of those had CPU nodes, tests the
runtime refused at load (a CPU node nothing can express, or a model input
no TOSA tensor carries; exit 2 naming it), and other outcomes: a run that
fails otherwise, or outputs that differ, are failures."""
import collections
import json
import os
import subprocess
import sys

import numpy as np
from onnx import numpy_helper, TensorProto

ctosa, root, tmp = sys.argv[1:4]
spec = sys.argv[4] if len(sys.argv) > 4 else "TOSA-1.0+INT"


def pb(path):
    t = TensorProto()
    t.ParseFromString(open(path, "rb").read())
    return numpy_helper.to_array(t)


# The expected float -> bfloat16 values of this onnx test data version
# truncate (16117 where round-to-nearest-even, which ONNX's Cast specifies
# and the lowering does, gives 16118).
KNOWN_DIFFER = {"test_cast_FLOAT_to_BFLOAT16"}

counts = collections.Counter()
examples = collections.defaultdict(list)
for name in sorted(os.listdir(root)):
    d = os.path.join(root, name)
    ds = os.path.join(d, "test_data_set_0")
    if not os.path.isfile(os.path.join(d, "model.onnx")) or not os.path.isdir(ds):
        continue
    out = os.path.join(tmp, name)
    r = subprocess.run([ctosa, "lower", os.path.join(d, "model.onnx"), "--spec", spec, "-o", out, "-q"],
                       capture_output=True, text=True)
    if r.returncode:
        counts["lower refused the model"] += 1
        continue
    rep = json.load(open(os.path.join(out, "model.report.json")))
    ins = sorted(f for f in os.listdir(ds) if f.startswith("input_"))
    outs = sorted(f for f in os.listdir(ds) if f.startswith("output_"))
    names = rep["graph"]["inputs"]
    init = {t["name"] for t in rep["graph"]["tensors"] if t.get("initializer")}
    names = [n for n in names if n not in init]
    if len(names) != len(ins) or len(rep["graph"]["outputs"]) != len(outs):
        counts["inputs/outputs not one file each"] += 1
        continue
    args = [ctosa, "run", os.path.join(out, "model.partitioned.onnx"), "-q"]
    for n, f in zip(names, ins):
        args += ["--input", "%s=%s" % (n, os.path.join(ds, f))]
    for i, n in enumerate(rep["graph"]["outputs"]):
        args += ["--output", "%s=%s" % (n, os.path.join(out, "o%d.npy" % i))]
    r = subprocess.run(args, capture_output=True, text=True)
    cpu = len(rep["fallback"]) > 0
    if r.returncode == 2 and "cannot run on the host executor" in r.stderr:
        counts["refused at load: a CPU node nothing can express"] += 1
        examples["refused"].append(name)
        continue
    if r.returncode == 2 and ("which no TOSA type carries" in r.stderr or
                              "has no tensor type with a shape" in r.stderr):
        counts["refused at load: a model input no TOSA tensor carries (double, uint16-64, string, "
               "sequence, optional)"] += 1
        examples["refused input"].append(name)
        continue
    if r.returncode == 2 and "expected shape" in r.stderr and name.startswith("test_castlike_"):
        # the 'like' input's data is [1] where the model declares [3, 4]
        counts["test data does not fit the model's declared inputs"] += 1
        continue
    if r.returncode:
        counts["run failed (exit %d)" % r.returncode] += 1
        examples["run failed"].append("%s: %s" % (name, r.stderr.strip()[:200]))
        continue
    ok = True
    for i, f in enumerate(outs):
        exp = pb(os.path.join(ds, f))
        got = np.load(os.path.join(out, "o%d.npy" % i))
        if got.shape != exp.shape:
            ok = False
        elif exp.dtype.kind == "f":
            ok &= bool(np.allclose(got.astype(np.float64), exp.astype(np.float64), rtol=1e-3, atol=1e-5,
                                   equal_nan=True))
        else:
            ok &= bool(np.array_equal(got.astype(exp.dtype), exp)) and got.dtype.kind == exp.dtype.kind
    if ok:
        counts["ran end to end and matched" + (", with CPU nodes" if cpu else ", all delegated")] += 1
    elif name in KNOWN_DIFFER:
        counts["ran, outputs differ where the test data is known wrong"] += 1
    else:
        counts["ran, outputs differ"] += 1
        examples["differ"].append(name)
for k, v in sorted(counts.items()):
    print("%5d  %s" % (v, k))
for k, v in examples.items():
    print("%s: %s" % (k, ", ".join(v[:40])))
