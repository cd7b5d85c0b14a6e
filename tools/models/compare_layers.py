#!/usr/bin/python3
"""Layer-by-layer comparison of a QDQ model between ctosa (TOSA-1.0+INT on
the reference interpreter) and ONNX Runtime (fused integer kernels): every
QuantizeLinear output becomes a graph output of a copy of the model, both
run on the same input, and each layer's integer outputs are compared.
Shows where the first difference appears (docs/quantization.md, "Where
ctosa sits").

Usage: /usr/bin/python3 tools/models/compare_layers.py CTOSA MODEL_DIR [INPUT.npy]
  MODEL_DIR holds model.onnx (and input_0.npy, the default input).
  CTOSA_REQUANT=ort in the environment lowers with --requant ort
  (default rescale).
Needs tools/ort installed (npm install --ignore-scripts) and node.
Prints one line per layer: index, name, shape, max difference in steps,
number of differing elements.

Each layer fed ONNX Runtime's own inputs (where a difference comes from,
rather than how far it has grown): tools/models/qdq_layers.py.
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import helper, TensorProto

here = os.path.dirname(os.path.abspath(__file__))
ORT_JS = os.path.join(here, "..", "ort", "run_ort.js")


ctosa, mdir = sys.argv[1], sys.argv[2]
inp = sys.argv[3] if len(sys.argv) > 3 else os.path.join(mdir, "input_0.npy")
tmp = tempfile.mkdtemp()

m = onnx.load(os.path.join(mdir, "model.onnx"))
outs = set(o.name for o in m.graph.output)
qnames = [n.output[0] for n in m.graph.node if n.op_type == "QuantizeLinear" and n.output[0] not in outs]
# element type of each QuantizeLinear output: its zero point's (uint8 default)
ctype = {t.name: t.data_type for t in m.graph.initializer}
for n in m.graph.node:
    if n.op_type == "Constant" and n.attribute and n.attribute[0].name == "value":
        ctype[n.output[0]] = n.attribute[0].t.data_type
qtype = {n.output[0]: ctype.get(n.input[2], TensorProto.UINT8) if len(n.input) > 2 else TensorProto.UINT8
         for n in m.graph.node if n.op_type == "QuantizeLinear"}
# the first QuantizeLinear (float input -> int) stays on the CPU under INT
for name in qnames[1:]:
    m.graph.output.append(helper.make_tensor_value_info(name, qtype[name], None))
model = os.path.join(tmp, "dbg.onnx")
onnx.save(m, model)
names = [o.name for o in m.graph.output]

ortd = os.path.join(tmp, "ort")
os.makedirs(ortd)
subprocess.run(["node", ORT_JS, model, "--out", ortd, inp, "--quiet"],
               check=True)

low = os.path.join(tmp, "low")
subprocess.run([ctosa, "lower", model, "--spec", "TOSA-1.0+INT", "-o", low, "-q",
                    "--requant", os.environ.get("CTOSA_REQUANT", "rescale")], check=True)
rep = json.load(open(os.path.join(low, "dbg.report.json")))
assert len(rep["partitions"]) == 1, "expected one partition"
p = rep["partitions"][0]
pin = p["inputs"][0]
x = np.load(inp).astype(np.float32)
lo, hi = (0, 255) if pin["dtype"] == "uint8" else (-128, 127)
q = np.clip(np.rint(x / np.float32(pin["scale"])) + pin["zero_point"], lo, hi)
q = q.astype(np.uint8 if pin["dtype"] == "uint8" else np.int8)
np.save(os.path.join(low, "in.npy"), q.view(np.int8))
od = os.path.join(low, "outs")
subprocess.run([ctosa, "run", os.path.join(low, p["file"]), "--input", pin["name"] + "=" + os.path.join(low, "in.npy"),
                "-o", od, "-q"], check=True)


def fname(n):
    return "".join(ch if ch.isalnum() or ch in "._-" else "_" for ch in n)


for k, o in enumerate(p["outputs"]):
    if o["name"] not in names:
        continue
    a = np.load(os.path.join(od, fname(o["name"]) + ".npy"))
    a = (a.view(np.uint8) if o["dtype"] == "uint8" else a).astype(np.int64)
    b = np.load(os.path.join(ortd, "output_%d.npy" % names.index(o["name"]))).astype(np.int64)
    d = np.abs(a - b)
    print("%3d %-40s %-20s max %3d  differing %8d / %d" % (k, o["name"], o["shape"], d.max(), (d > 0).sum(), d.size))
