#!/usr/bin/python3
"""Layer-by-layer comparison of a QDQ model between ctosa (TOSA-1.0+INT on
the reference interpreter) and ONNX Runtime (fused integer kernels): every
QuantizeLinear output becomes a graph output of a copy of the model, both
run on the same input, and each layer's integer outputs are compared.
Shows where the first difference appears (docs/quantization.md, "Where
ctosa sits").

Usage: /usr/bin/python3 tools/models/compare_layers.py CTOSA MODEL_DIR [INPUT.npy]
       /usr/bin/python3 tools/models/compare_layers.py --isolate N CTOSA MODEL_DIR [OP,...]
  MODEL_DIR holds model.onnx (and input_0.npy, the default input).
  CTOSA_REQUANT=ort in the environment lowers with --requant ort
  (default rescale).
Needs tools/ort installed (npm install --ignore-scripts) and node.
Prints one line per layer: index, name, shape, max difference in steps,
number of differing elements.

--isolate N: runs ORT (all optimisations) on the first N sets of
MODEL_DIR/inputs_20.npy, then cuts every DequantizeLinear -> op ->
QuantizeLinear group out of the model (its inputs are the integer outputs of
earlier QuantizeLinear nodes) and runs that group alone, in ctosa and in ORT,
on ORT's own integer inputs. Differences therefore come from that group
only, not from earlier layers. Prints every group that differs and a summary
per op type (ctosa vs ORT's whole-model tensor; the group run alone in ORT
against the same tensor, as a check of the cut). OP,... restricts the groups
to those containing one of the named op types.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import helper, TensorProto

here = os.path.dirname(os.path.abspath(__file__))
ORT_JS = os.path.join(here, "..", "ort", "run_ort.js")


def isolate(nsets, ctosa, mdir, only):
    """Per-group comparison on ORT's own layer inputs (see the module doc)."""
    import collections
    work = tempfile.mkdtemp()
    src = os.path.join(mdir, "model.onnx")
    m = onnx.load(src)
    prod = {o: n for n in m.graph.node for o in n.output}
    qs = [n for n in m.graph.node if n.op_type == "QuantizeLinear"]
    for q in qs:
        m.graph.output.append(helper.make_tensor_value_info(q.output[0], TensorProto.UINT8, None))
    onnx.save(m, os.path.join(work, "all.onnx"))
    np.save(os.path.join(work, "xs.npy"), np.load(os.path.join(mdir, "inputs_20.npy"))[:nsets])
    fd = os.path.join(work, "full")
    os.makedirs(fd)
    subprocess.run(["node", ORT_JS, os.path.join(work, "all.onnx"), "--out", fd, "--batch",
                    os.path.join(work, "xs.npy"), "--quiet"], check=True)
    onames = [o.name for o in m.graph.output]
    full = {nm: np.load(os.path.join(fd, "output_%d.npy" % i)) for i, nm in enumerate(onames) if i > 0}
    total = collections.defaultdict(lambda: [0, 0, 0, 0])
    for gi, q in enumerate(qs[1:], 1):
        # walk back to the tensors that come (through Cast / Identity) from QuantizeLinear outputs
        ins, ops, seen, stack = {}, set(), set(), [q.input[0]]
        while stack:
            t = stack.pop()
            n = prod.get(t)
            if n is None or t in seen or n.op_type == "Constant":
                continue
            seen.add(t)
            s = t
            while prod.get(s) is not None and prod[s].op_type in ("Cast", "Identity"):
                s = prod[s].input[0]
            if s != t and s in full or (n.op_type == "QuantizeLinear" and t in full):
                ins[t] = s
                continue
            if n.op_type not in ("DequantizeLinear", "Cast", "Identity", "ConstantOfShape"):
                ops.add(n.op_type)
            stack.extend(x for x in n.input if x)
        kind = "+".join(sorted(ops))
        if not ins or (only and not ops & only):
            continue
        gd = os.path.join(work, "g%d" % gi)
        os.makedirs(gd)
        sub = os.path.join(gd, "g.onnx")
        onnx.utils.extract_model(src, sub, list(ins), [q.output[0]])
        files = {}
        for t, s in ins.items():
            files[t] = os.path.join(gd, "in%d.npy" % len(files))
            np.save(files[t], full[s])
        order = [i.name for i in onnx.load(sub).graph.input]
        od = os.path.join(gd, "ort")
        os.makedirs(od)
        subprocess.run(["node", ORT_JS, sub, "--out", od, "--batch", "--quiet"] + [files[t] for t in order],
                       check=True)
        ref = full[q.output[0]].astype(np.int64)
        alone = np.load(os.path.join(od, "output_0.npy")).astype(np.int64).reshape(ref.shape)
        low = os.path.join(gd, "low")
        subprocess.run([ctosa, "lower", sub, "--spec", "TOSA-1.0+INT", "-o", low, "-q",
                    "--requant", os.environ.get("CTOSA_REQUANT", "rescale")], check=True)
        p = json.load(open(os.path.join(low, "g.report.json")))["partitions"][0]
        got = []
        for k in range(nsets):
            args = []
            for j, pi in enumerate(p["inputs"]):
                f = os.path.join(low, "i%d_%d.npy" % (j, k))
                np.save(f, np.load(files[pi["name"]])[k].view(np.int8))
                args += ["--input", pi["name"] + "=" + f]
            o = os.path.join(low, "o%d" % k)
            subprocess.run([ctosa, "run", os.path.join(low, p["file"]), "-o", o, "-q"] + args, check=True)
            got.append(np.load(os.path.join(o, os.listdir(o)[0])).view(np.uint8).astype(np.int64))
        d = np.abs(np.stack(got).reshape(ref.shape) - ref)
        nd, na = int((d > 0).sum()), int((alone != ref).sum())
        t = total[kind]
        t[0] += nd
        t[1] += na
        t[2] += d.size
        t[3] = max(t[3], int(d.max()))
        if nd or na:
            print("%3d %-16s %-36s ctosa differs %6d (max %d), ORT alone %d, of %d"
                  % (gi, kind, q.output[0], nd, d.max(), na, d.size), flush=True)
    for kind, t in sorted(total.items()):
        print("%-17s ctosa differs on %d, ORT alone on %d, of %d outputs; max %d steps"
              % (kind, t[0], t[1], t[2], t[3]))
    shutil.rmtree(work, ignore_errors=True)
    return 0


if sys.argv[1] == "--isolate":
    sys.exit(isolate(int(sys.argv[2]), sys.argv[3], sys.argv[4],
                     set(sys.argv[5].split(",")) if len(sys.argv) > 5 else None))

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
