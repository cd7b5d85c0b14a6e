#!/usr/bin/python3
"""cli_functions.py CTOSA TMPDIR - model-local ONNX functions and compile-time
values in the partitioned ONNX (driven by tests/cli_functions.sh).

Builds small models with onnx.helper (FunctionProto with ref_attr_name:
onnx >= 1.12), lowers them with `ctosa lower`, and checks:
  - func_twice: a Conv+Relu function called twice, a nested function
    (Outer -> ConvRelu, Scale) whose attributes are forwarded by
    ref_attr_name under other names; fully delegated into one partition,
    node names "<call>/<inner>", `ctosa run` output equal to numpy;
  - func_fallback: a function whose body has an op without lowering
    (ReverseSequence with run-time lengths, its `time_axis` a renamed
    attribute reference): the inner node falls back under its mangled name,
    the partitioned ONNX holds it as a plain node (attribute renamed), no
    functions left, passes onnx.checker; the pieces (part0, numpy
    ReverseSequence, part1) chained give the numpy reference;
  - const_export: Dropout's mask (a compile-time value of a delegated node)
    read by a delegated Compress, a CPU node (Unique) and a graph output: it
    is an initializer of the partitioned ONNX, which passes onnx.checker and
    in which every node input is produced by a node, an initializer or a
    graph input; part0 (Relu, Compress as SLICE) gives the numpy reference.
Every report is checked for the contract: each node in exactly one
partition or in fallback; the "inlined_functions" section maps every call
to the nodes and partitions of its body.
"""
import json
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

CTOSA, TMP = sys.argv[1], sys.argv[2]
rng = np.random.default_rng(7)
failures = []


def check(what, ok, detail=""):
    print(("ok: " if ok else "FAIL: ") + what + (f" ({detail})" if detail and not ok else ""))
    if not ok:
        failures.append(what)


def ref_attr(name, ref, typ):
    a = helper.make_attribute(name, [] if typ == onnx.AttributeProto.INTS else 0.0)
    for fld in ("ints", "f", "i"):
        a.ClearField(fld)
    a.ref_attr_name = ref
    a.type = typ
    return a


def conv_relu_fn():
    conv = helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv")
    conv.attribute.append(ref_attr("pads", "pads", onnx.AttributeProto.INTS))
    relu = helper.make_node("Relu", ["c"], ["y"], name="relu")
    return helper.make_function("local", "ConvRelu", ["x", "w", "b"], ["y"], [conv, relu],
                                [helper.make_opsetid("", 13)], ["pads"])


def scale_fn():
    k = helper.make_node("Constant", [], ["k"])  # unnamed: "<call>/Constant"
    k.attribute.append(ref_attr("value_float", "s", onnx.AttributeProto.FLOAT))
    mul = helper.make_node("Mul", ["x", "k"], ["y"], name="mul")
    return helper.make_function("local", "MulBy", ["x"], ["y"], [k, mul], [helper.make_opsetid("", 13)], ["s"])


def outer_fn():
    cr = helper.make_node("ConvRelu", ["x", "w", "b"], ["t"], name="cr", domain="local")
    cr.attribute.append(ref_attr("pads", "p", onnx.AttributeProto.INTS))
    sc = helper.make_node("MulBy", ["t"], ["y"], name="sc", domain="local")
    sc.attribute.append(ref_attr("s", "scale", onnx.AttributeProto.FLOAT))
    return helper.make_function("local", "Outer", ["x", "w", "b"], ["y"], [cr, sc],
                                [helper.make_opsetid("", 13), helper.make_opsetid("local", 1)], ["p", "scale"])


def rev_fn():
    rev = helper.make_node("ReverseSequence", ["x", "lens"], ["m"], name="rev", batch_axis=0)
    rev.attribute.append(ref_attr("time_axis", "order", onnx.AttributeProto.INT))
    sig = helper.make_node("Sigmoid", ["m"], ["y"], name="sig")
    return helper.make_function("local", "RevAct", ["x", "lens"], ["y"], [rev, sig],
                                [helper.make_opsetid("", 13)], ["order"])


def conv2d(x, w, b, pad):
    x = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    oh, ow = h - kh + 1, wd - kw + 1
    y = np.zeros((n, o, oh, ow), np.float64)
    for i in range(kh):
        for j in range(kw):
            y += np.einsum("nchw,oc->nohw", x[:, :, i:i + oh, j:j + ow], w[:, :, i, j])
    return y + b.reshape(1, -1, 1, 1)


def reverse_seq(x, lens):
    """ReverseSequence, batch_axis 0, time_axis 2."""
    y = x.astype(np.float64)
    for b, n in enumerate(lens):
        y[b, :, :n] = y[b, :, :n][:, ::-1]
    return y


def weights(o, c, k):
    return (rng.standard_normal((o, c, k, k)) * 0.3).astype(np.float32), \
        (rng.standard_normal(o) * 0.1).astype(np.float32)


def save(model, name):
    onnx.checker.check_model(model)
    path = os.path.join(TMP, name + ".onnx")
    onnx.save(model, path)
    return path


def lower(path, stem):
    out = os.path.join(TMP, "out_" + stem)
    p = subprocess.run([CTOSA, "lower", path, "--spec", "TOSA-1.0+FP", "-o", out, "-q"],
                       capture_output=True, text=True)
    check(f"{stem}: ctosa lower exits 0", p.returncode == 0, p.stderr)
    if p.returncode != 0:
        return out, None
    with open(os.path.join(out, stem + ".report.json")) as f:
        return out, json.load(f)


def run_part(out, stem, part, inputs, outputs):
    args = [CTOSA, "run", os.path.join(out, f"{stem}.part{part}.tosa"), "-q"]
    for k, v in inputs.items():
        fn = os.path.join(out, f"in_{part}_{abs(hash(k))}.npy")
        np.save(fn, v.astype(np.float32))
        args += ["--input", f"{k}={fn}"]
    res = {}
    for k in outputs:
        fn = os.path.join(out, f"out_{part}_{abs(hash(k))}.npy")
        args += ["--output", f"{k}={fn}"]
        res[k] = fn
    p = subprocess.run(args, capture_output=True, text=True)
    check(f"{stem}: ctosa run part{part}", p.returncode == 0, p.stderr)
    return {k: np.load(fn) for k, fn in res.items()} if p.returncode == 0 else None


def accounting(stem, rep, expect_nodes):
    seen = {}
    for p in rep["partitions"]:
        for n in p["nodes"]:
            seen[n] = seen.get(n, 0) + 1
    for f in rep["fallback"]:
        seen[f["node"]] = seen.get(f["node"], 0) + 1
    check(f"{stem}: every node in exactly one partition or fallback",
          sorted(seen) == sorted(expect_nodes) and all(v == 1 for v in seen.values())
          and rep["nodes_total"] == len(expect_nodes), f"{sorted(seen)} vs {sorted(expect_nodes)}")
    # every call's nodes are its body's nodes, with the partitions they went to
    for c in rep.get("inlined_functions", []):
        inner = [n for n in expect_nodes if n.startswith(c["node"] + "/")]
        check(f"{stem}: call {c['node']} lists its body's nodes", sorted(c["nodes"]) == sorted(inner),
              f"{c['nodes']} vs {inner}")
        parts = sorted({p["id"] for p in rep["partitions"] for n in p["nodes"] if n in inner})
        check(f"{stem}: call {c['node']} lists its partitions", c["partitions"] == parts, f"{c} vs {parts}")
        fb = [f["node"] for f in rep["fallback"] if f["node"] in inner]
        check(f"{stem}: call {c['node']} lists its fallback nodes", c["fallback"] == fb, f"{c} vs {fb}")


def structural(stem, path):
    m = onnx.load(path)
    try:
        onnx.checker.check_model(m)
        check(f"{stem}: partitioned ONNX passes onnx.checker", True)
    except Exception as e:  # noqa: BLE001
        check(f"{stem}: partitioned ONNX passes onnx.checker", False, str(e).splitlines()[0])
    have = {i.name for i in m.graph.input} | {i.name for i in m.graph.initializer} | {""}
    dangling = []
    for n in m.graph.node:
        dangling += [i for i in n.input if i not in have]
        have |= set(n.output)
    dangling += [o.name for o in m.graph.output if o.name not in have]
    check(f"{stem}: every node input and graph output is produced", not dangling, str(dangling))
    return m


# ---------------------------------------------------------------- func_twice
x = rng.standard_normal((1, 3, 8, 8)).astype(np.float32)
W1, B1 = weights(4, 3, 3)
W2, B2 = weights(4, 4, 3)
W3, B3 = weights(2, 4, 3)
inits = [numpy_helper.from_array(a, n) for a, n in
         [(W1, "W1"), (B1, "B1"), (W2, "W2"), (B2, "B2"), (W3, "W3"), (B3, "B3")]]
c1 = helper.make_node("ConvRelu", ["x", "W1", "B1"], ["y1"], name="c1", domain="local", pads=[1, 1, 1, 1])
c2 = helper.make_node("ConvRelu", ["y1", "W2", "B2"], ["y2"], name="c2", domain="local", pads=[0, 0, 0, 0])
o = helper.make_node("Outer", ["y2", "W3", "B3"], ["out"], name="o", domain="local", p=[1, 1, 1, 1], scale=0.5)
g = helper.make_graph([c1, c2, o], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                      [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, 2, 6, 6])], inits)
model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("local", 1)],
                          functions=[conv_relu_fn(), scale_fn(), outer_fn()])
model.ir_version = 8
path = save(model, "func_twice")
ref = np.maximum(conv2d(x, W1, B1, 1), 0)
ref = np.maximum(conv2d(ref, W2, B2, 0), 0)
ref = np.maximum(conv2d(ref, W3, B3, 1), 0) * 0.5
out, rep = lower(path, "func_twice")
if rep:
    names = ["c1/conv", "c1/relu", "c2/conv", "c2/relu", "o/cr/conv", "o/cr/relu", "o/sc/Constant", "o/sc/mul"]
    accounting("func_twice", rep, names)
    check("func_twice: fully delegated, one partition",
          rep["nodes_delegated"] == 8 and len(rep["partitions"]) == 1 and not rep["fallback"], str(rep["fallback"]))
    calls = [(c["node"], c["op_type"], c["depth"]) for c in rep.get("inlined_functions", [])]
    check("func_twice: inlined_functions lists the calls, callers first",
          calls == [("c1", "ConvRelu", 0), ("c2", "ConvRelu", 0), ("o", "Outer", 0), ("o/cr", "ConvRelu", 1),
                    ("o/sc", "MulBy", 1)], str(calls))
    r = run_part(out, "func_twice", 0, {"x": x}, ["out"])
    if r:
        d = float(np.max(np.abs(r["out"] - ref)))
        check("func_twice: ctosa run matches numpy (max |diff| %.2g <= 1e-4)" % d, d <= 1e-4)
    structural("func_twice", os.path.join(out, "func_twice.partitioned.onnx"))

# ------------------------------------------------------------- func_fallback
c1 = helper.make_node("ConvRelu", ["x", "W1", "B1"], ["y1"], name="c1", domain="local", pads=[1, 1, 1, 1])
na = helper.make_node("RevAct", ["y1", "lens"], ["y2"], name="na", domain="local", order=2)
o = helper.make_node("Outer", ["y2", "W2", "B2"], ["out"], name="o", domain="local", p=[0, 0, 0, 0], scale=2.0)
g = helper.make_graph([c1, na, o], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8]),
                                        helper.make_tensor_value_info("lens", TensorProto.INT64, [1])],
                      [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, 4, 6, 6])], inits[:4])
model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("local", 1)],
                          functions=[conv_relu_fn(), scale_fn(), outer_fn(), rev_fn()])
model.ir_version = 8
path = save(model, "func_fallback")
y1 = np.maximum(conv2d(x, W1, B1, 1), 0)
lens = [5]
m1 = reverse_seq(y1, lens)
y2 = 1 / (1 + np.exp(-m1))
ref = np.maximum(conv2d(y2, W2, B2, 0), 0) * 2.0
out, rep = lower(path, "func_fallback")
if rep:
    names = ["c1/conv", "c1/relu", "na/rev", "na/sig", "o/cr/conv", "o/cr/relu", "o/sc/Constant", "o/sc/mul"]
    accounting("func_fallback", rep, names)
    fb = [(f["node"], f["code"]) for f in rep["fallback"]]
    check("func_fallback: only the inner ReverseSequence falls back", fb == [("na/rev", "unsupported_op")], str(fb))
    check("func_fallback: two partitions", len(rep["partitions"]) == 2)
    calls = {c["node"]: c for c in rep.get("inlined_functions", [])}
    check("func_fallback: call 'na' is split between fallback and partition 1",
          "na" in calls and calls["na"]["fallback"] == ["na/rev"] and calls["na"]["partitions"] == [1],
          str(calls.get("na")))
    m = structural("func_fallback", os.path.join(out, "func_fallback.partitioned.onnx"))
    mv = [n for n in m.graph.node if n.op_type == "ReverseSequence"]
    check("func_fallback: the inner node is a plain node with its attribute renamed, no functions left",
          len(mv) == 1 and mv[0].name == "na/rev" and sorted((a.name, a.i, a.ref_attr_name) for a in mv[0].attribute
                                                     if a.name == "time_axis") == [("time_axis", 2, "")] and len(m.functions) == 0, str(mv))
    p0 = run_part(out, "func_fallback", 0, {"x": x}, [mv[0].input[0]] if mv else [])
    if p0 and mv:
        mid = reverse_seq(p0[mv[0].input[0]], lens)
        p1 = run_part(out, "func_fallback", 1, {mv[0].output[0]: mid}, ["out"])
        if p1:
            d = float(np.max(np.abs(p1["out"] - ref)))
            check("func_fallback: part0 -> numpy ReverseSequence -> part1 matches numpy (max |diff| %.2g <= 1e-4)" % d, d <= 1e-4)

# -------------------------------------------------------------- const_export
v = rng.standard_normal(16).astype(np.float32)
drop = helper.make_node("Dropout", ["v"], ["d", "mask"], name="drop")
relu = helper.make_node("Relu", ["d"], ["r"], name="relu")
cmp_ = helper.make_node("Compress", ["r", "mask"], ["c"], name="cmp", axis=0)
uq = helper.make_node("Unique", ["mask"], ["u"], name="uq")
g = helper.make_graph([drop, relu, cmp_, uq], "g", [helper.make_tensor_value_info("v", TensorProto.FLOAT, [16])],
                      [helper.make_tensor_value_info("c", TensorProto.FLOAT, [None]),
                       helper.make_tensor_value_info("u", TensorProto.BOOL, [None]),
                       helper.make_tensor_value_info("mask", TensorProto.BOOL, [16])])
model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
model.ir_version = 8
path = save(model, "const_export")
out, rep = lower(path, "const_export")
if rep:
    accounting("const_export", rep, ["drop", "relu", "cmp", "uq"])
    fb = [(f["node"], f["code"]) for f in rep["fallback"]]
    # the mask is folded (Dropout at inference keeps everything), so the
    # Compress is SLICEs of r, delegated with it; Unique stays on the CPU
    check("const_export: Dropout, Relu and Compress delegated, Unique falls back", fb == [("uq", "unsupported_op")],
          str(fb))
    m = structural("const_export", os.path.join(out, "const_export.partitioned.onnx"))
    inits = {i.name: numpy_helper.to_array(i) for i in m.graph.initializer}
    check("const_export: the mask is an initializer (all true, bool [16])",
          "mask" in inits and inits["mask"].dtype == np.bool_ and inits["mask"].shape == (16,)
          and bool(inits["mask"].all()), str(inits.get("mask")))
    p0 = run_part(out, "const_export", 0, {"v": v}, ["c"])
    if p0 and "mask" in inits:
        check("const_export: part0 (Relu, Compress) matches numpy with the exported mask",
              np.array_equal(p0["c"], np.maximum(v, 0)[inits["mask"]]))

# ------------------------------------------------------------ shape chain
# Shape of a delegated value -> ConstantOfShape (both folded) read by a CPU
# LpPool, and by a delegated Add: the folded nodes stay on the CPU with it.
xs = rng.standard_normal((1, 2, 4, 4)).astype(np.float32)
nodes = [helper.make_node("Relu", ["xs"], ["r"], name="relu"),
         helper.make_node("Shape", ["r"], ["s"], name="shape"),
         helper.make_node("ConstantOfShape", ["s"], ["k"], name="cos",
                          value=numpy_helper.from_array(np.array([0.5], np.float32))),
         helper.make_node("LpPool", ["k"], ["lp"], name="lp", kernel_shape=[1, 1], p=2),
         helper.make_node("Add", ["r", "k"], ["a"], name="add")]
g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("xs", TensorProto.FLOAT, [1, 2, 4, 4])],
                      [helper.make_tensor_value_info("lp", TensorProto.FLOAT, [1, 2, 4, 4]),
                       helper.make_tensor_value_info("a", TensorProto.FLOAT, [1, 2, 4, 4])])
model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
model.ir_version = 8
path = save(model, "shape_chain")
out, rep = lower(path, "shape_chain")
if rep:
    accounting("shape_chain", rep, ["relu", "shape", "cos", "lp", "add"])
    structural("shape_chain", os.path.join(out, "shape_chain.partitioned.onnx"))

# ------------------------------------------------------------- recursion
rec = helper.make_function("local", "Rec", ["x"], ["y"],
                           [helper.make_node("Rec", ["x"], ["y"], name="again", domain="local")],
                           [helper.make_opsetid("local", 1)], [])
g = helper.make_graph([helper.make_node("Rec", ["v"], ["w"], name="r0", domain="local")], "g",
                      [helper.make_tensor_value_info("v", TensorProto.FLOAT, [4])],
                      [helper.make_tensor_value_info("w", TensorProto.FLOAT, [4])])
model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("local", 1)],
                          functions=[rec])
model.ir_version = 8
path = os.path.join(TMP, "recursive.onnx")
onnx.save(model, path)
p = subprocess.run([CTOSA, "lower", path, "--spec", "TOSA-1.0+FP", "-o", os.path.join(TMP, "out_rec")],
                   capture_output=True, text=True)
check("recursive function: exit 2 naming the call and the depth cap",
      p.returncode == 2 and "r0" in p.stderr and "nested deeper than" in p.stderr
      and not os.path.exists(os.path.join(TMP, "out_rec", "recursive.report.json")), p.stderr)

print(f"{len(failures)} failure(s)")
sys.exit(1 if failures else 0)
