#!/usr/bin/python3
"""Seeds for the code paths added since the first fuzzing campaign
(fuzz/README.md, "Seeds for newer paths"). Writes into fuzz/corpus/:

  onnx/  and lower/ (lower seeds start with the spec byte, see fuzz_lower.c):
    fn_*.onnx      model-local functions: a call, a function calling a
                   function, attributes passed down with ref_attr_name
                   (two levels), a default attribute value, a function
                   used in an If branch.
    si_*.onnx      a CPU-side node (cubic Resize, an unknown custom op)
                   followed by delegated nodes, no value_info (shape
                   inference over CPU-side nodes).
    big_*.onnx     weights >= 64 KiB (Conv, MatMul, Gemm transB, ConvTranspose
                   with NHWC layout transposes) for the streamed weight
                   transforms.
  plus copies of tests/data/lower/quant_ops/*/model.onnx and
  tests/data/lower/shape_infer/*.onnx (QDQ int8 / int16 Softmax, LayerNorm,
  Resize, Pad, ConvTranspose, tables; shape rules).
  report/: report JSON files (fuzz_report.c), written by hand here.

Deterministic. Run with Debian's python3 (has onnx and numpy):
    /usr/bin/python3 fuzz/make_seeds.py
"""
import glob
import json
import os

import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
F = TensorProto.FLOAT
rng = np.random.default_rng(11)


def vi(name, shape, t=F):
    return helper.make_tensor_value_info(name, t, shape)


def model(nodes, ins, outs, inits=(), functions=(), opset=17, value_info=()):
    g = helper.make_graph(nodes, "g", ins, outs, initializer=list(inits), value_info=list(value_info))
    imports = [helper.make_opsetid("", opset), helper.make_opsetid("local", 1)]
    m = helper.make_model(g, opset_imports=imports, functions=list(functions))
    m.ir_version = 8
    return m.SerializeToString()


def attr_ref(name, ref, t):
    a = onnx.AttributeProto()
    a.name, a.ref_attr_name, a.type = name, ref, t
    return a


def fn_models():
    out = {}
    # ScaledAdd(x, y; alpha) = x * alpha + y ; alpha via ref_attr_name.
    c = helper.make_node("Constant", [], ["a"])
    c.attribute.append(attr_ref("value_float", "alpha", onnx.AttributeProto.FLOAT))
    body = [c, helper.make_node("Mul", ["x", "a"], ["xa"]), helper.make_node("Add", ["xa", "y"], ["z"])]
    scaled = helper.make_function("local", "ScaledAdd", ["x", "y"], ["z"], body,
                                  [helper.make_opsetid("", 17)], attributes=["alpha"])
    # Double(x; beta) = ScaledAdd(x, x; alpha = beta): nested, ref_attr passed down.
    call = helper.make_node("ScaledAdd", ["x", "x"], ["y"], domain="local")
    call.attribute.append(attr_ref("alpha", "beta", onnx.AttributeProto.FLOAT))
    double = helper.make_function("local", "Double", ["x"], ["y"], [call, ],
                                  [helper.make_opsetid("", 17), helper.make_opsetid("local", 1)],
                                  attributes=["beta"])
    # Act(x) = Relu(Double(x)) with a default attribute (attribute_proto).
    act = helper.make_function("local", "Act", ["x"], ["y"],
                               [helper.make_node("Double", ["x"], ["d"], domain="local", beta=0.5),
                                helper.make_node("Relu", ["d"], ["y"])],
                               [helper.make_opsetid("", 17), helper.make_opsetid("local", 1)])
    w = numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "w")
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Act", ["c"], ["a1"], domain="local"),
             helper.make_node("ScaledAdd", ["a1", "c"], ["s"], domain="local", alpha=2.0),
             helper.make_node("Double", ["s"], ["y"], domain="local", beta=-1.0)]
    fns = [scaled, double, act]
    out["fn_nested_ref_attr"] = model(nodes, [vi("x", [1, 3, 8, 8])], [vi("y", [1, 4, 8, 8])], [w], fns)
    # The same without value_info for the function outputs and with a fallback
    # (custom op) in between: inlined nodes on both sides of the CPU.
    nodes2 = [helper.make_node("Act", ["x"], ["a"], domain="local"),
              helper.make_node("Mystery", ["a"], ["m"], domain="com.example"),
              helper.make_node("Double", ["m"], ["y"], domain="local", beta=3.0)]
    m2 = onnx.load_from_string(model(nodes2, [vi("x", [2, 5])], [vi("y", [2, 5])], (), fns))
    m2.opset_import.append(helper.make_opsetid("com.example", 1))
    out["fn_around_custom"] = m2.SerializeToString()
    # A function used inside an If branch, and one called twice with
    # different attributes.
    then_g = helper.make_graph([helper.make_node("Double", ["x"], ["t"], domain="local", beta=2.0)],
                               "then", [], [vi("t", [2, 5])])
    else_g = helper.make_graph([helper.make_node("Act", ["x"], ["e"], domain="local")], "else", [],
                               [vi("e", [2, 5])])
    cond = numpy_helper.from_array(np.array(True), "cond")
    nodes3 = [helper.make_node("If", ["cond"], ["y0"], then_branch=then_g, else_branch=else_g),
              helper.make_node("Double", ["y0"], ["y"], domain="local", beta=0.25)]
    out["fn_in_if"] = model(nodes3, [vi("x", [2, 5])], [vi("y", [2, 5])], [cond], fns)
    # A function missing its attribute (ref with no value given): must be an
    # error or a fallback, never a crash.
    nodes4 = [helper.make_node("ScaledAdd", ["x", "x"], ["y"], domain="local")]
    out["fn_missing_attr"] = model(nodes4, [vi("x", [3])], [vi("y", [3])], (), fns)
    # Recursion through two functions.
    p = helper.make_function("local", "P", ["x"], ["y"], [helper.make_node("Q", ["x"], ["y"], domain="local")],
                             [helper.make_opsetid("local", 1)])
    q = helper.make_function("local", "Q", ["x"], ["y"], [helper.make_node("P", ["x"], ["y"], domain="local")],
                             [helper.make_opsetid("local", 1)])
    out["fn_mutual_recursion"] = model([helper.make_node("P", ["x"], ["y"], domain="local")],
                                       [vi("x", [3])], [vi("y", [3])], (), [p, q])
    return out


def si_models():
    out = {}
    w = numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "w")
    w2 = numpy_helper.from_array(rng.standard_normal((4, 4, 1, 1)).astype(np.float32), "w2")
    sc = numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "sc")
    # Conv -> Resize cubic (CPU) -> Relu -> Conv -> MaxPool -> Flatten -> no value_info.
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Resize", ["c", "", "sc"], ["r"], mode="cubic"),
             helper.make_node("Relu", ["r"], ["a"]),
             helper.make_node("Conv", ["a", "w2"], ["c2"], strides=[2, 2]),
             helper.make_node("MaxPool", ["c2"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Flatten", ["p"], ["y"])]
    out["si_resize_then_delegated"] = model(nodes, [vi("x", [1, 3, 8, 8])], [vi("y", None)], [w, w2, sc])
    # Shape arithmetic after a CPU-side node: Shape -> Gather -> Reshape.
    shp = numpy_helper.from_array(np.array([0, -1], np.int64), "shp")
    idx = numpy_helper.from_array(np.array([1, 0], np.int64), "idx")
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"]),
             helper.make_node("Resize", ["c", "", "sc"], ["r"], mode="cubic"),
             helper.make_node("Reshape", ["r", "shp"], ["f"]),
             helper.make_node("Transpose", ["f"], ["t"], perm=[1, 0]),
             helper.make_node("Gather", ["t", "idx"], ["g"], axis=0),
             helper.make_node("Softmax", ["g"], ["y"], axis=-1)]
    out["si_reshape_gather"] = model(nodes, [vi("x", [1, 3, 8, 8])], [vi("y", None)], [w, sc, shp, idx])
    return out


def big_models():
    out = {}
    # Conv with a 72 KiB weight (NCHW -> NHWC layout transform streamed).
    w = numpy_helper.from_array(rng.standard_normal((64, 32, 3, 3)).astype(np.float32), "w")
    wt = numpy_helper.from_array(rng.standard_normal((32, 16, 3, 3)).astype(np.float32), "wt")
    mm = numpy_helper.from_array(rng.standard_normal((128, 160)).astype(np.float32), "mm")
    gw = numpy_helper.from_array(rng.standard_normal((96, 160)).astype(np.float32), "gw")
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("Transpose", ["r"], ["t"], perm=[0, 2, 3, 1]),
             helper.make_node("Transpose", ["t"], ["u"], perm=[0, 3, 1, 2]),
             helper.make_node("GlobalAveragePool", ["u"], ["g"]),
             helper.make_node("Flatten", ["g"], ["f"])]
    out["big_conv_transpose"] = model(nodes, [vi("x", [1, 32, 4, 4])], [vi("f", [1, 64])], [w])
    nodes = [helper.make_node("MatMul", ["x", "mm"], ["m"]),
             helper.make_node("Gemm", ["m", "gw"], ["y"], transB=1)]
    out["big_matmul_gemm"] = model(nodes, [vi("x", [2, 128])], [vi("y", [2, 96])], [mm, gw])
    nodes = [helper.make_node("ConvTranspose", ["x", "wt"], ["y"], strides=[2, 2], pads=[1, 1, 1, 1])]
    out["big_convtranspose"] = model(nodes, [vi("x", [1, 32, 3, 3])], [vi("y", None)], [wt])
    # int8 QDQ conv with a 72 KiB int8 weight (per-channel).
    q = lambda n, s, z, t: [numpy_helper.from_array(np.array(s, np.float32), n + "_s"),
                           numpy_helper.from_array(np.array(z, t), n + "_z")]
    wq = numpy_helper.from_array(rng.integers(-127, 127, (128, 64, 3, 3)).astype(np.int8), "wq")
    inits = [wq] + q("x", 0.05, 0, np.int8) + q("y", 0.1, 0, np.int8)
    inits += [numpy_helper.from_array(np.full(128, 0.01, np.float32), "w_s"),
              numpy_helper.from_array(np.zeros(128, np.int8), "w_z")]
    nodes = [helper.make_node("QuantizeLinear", ["x", "x_s", "x_z"], ["xq"]),
             helper.make_node("DequantizeLinear", ["xq", "x_s", "x_z"], ["xd"]),
             helper.make_node("DequantizeLinear", ["wq", "w_s", "w_z"], ["wd"], axis=0),
             helper.make_node("Conv", ["xd", "wd"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("QuantizeLinear", ["c", "y_s", "y_z"], ["yq"]),
             helper.make_node("DequantizeLinear", ["yq", "y_s", "y_z"], ["y"])]
    out["big_qdq_conv8"] = model(nodes, [vi("x", [1, 64, 4, 4])], [vi("y", [1, 128, 4, 4])], inits)
    return out


def reports():
    """Report JSON seeds; the real ones come from `ctosa lower` runs too."""
    rep = {
        "model": "dir/model<script>.onnx", "spec": "TOSA-1.0+INT+FP",
        "partitions": [{"id": 0, "nodes": ["c", "r"], "inputs": ["x"], "outputs": ["r"]}],
        "fallback": [{"node": "m", "op": "Mystery", "code": "unsupported_op", "reason": "</script><b>"}],
        "graph": {"nodes": [{"name": "c", "op": "Conv", "inputs": ["x", "w"], "outputs": ["c"], "partition": 0},
                            {"name": "r", "op": "Relu", "inputs": ["c"], "outputs": ["r"], "partition": 0},
                            {"name": "m", "op": "Mystery", "inputs": ["r"], "outputs": ["y"]}],
                  "inputs": ["x"], "outputs": ["y"]},
    }
    out = {"report_graph": json.dumps(rep, indent=1).encode()}
    rep2 = dict(rep)
    del rep2["graph"]
    out["report_old"] = json.dumps(rep2).encode()
    out["report_unicode"] = b'\xef\xbb\xbf{"model":"\\u00e9\\ud83d\\ude00","partitions":[],"fallback":[],"graph":{"nodes":[]}}'
    out["report_bad_node"] = b'{"partitions":[{"id":1e400,"nodes":[]}],"fallback":[{"node":""}],"graph":{"nodes":[{"name":1}]}}'
    out["report_deep"] = b'{"partitions":[],"fallback":[],"x":' + b'[' * 127 + b']' * 127 + b'}'
    return out


def main():
    onnx_dir, lower_dir = os.path.join(HERE, "corpus", "onnx"), os.path.join(HERE, "corpus", "lower")
    report_dir = os.path.join(HERE, "corpus", "report")
    os.makedirs(report_dir, exist_ok=True)
    seeds = {}
    seeds.update(fn_models())
    seeds.update(si_models())
    seeds.update(big_models())
    for p in sorted(glob.glob(os.path.join(ROOT, "tests/data/lower/quant_ops/*/model.onnx"))):
        seeds["qops_" + os.path.basename(os.path.dirname(p))] = open(p, "rb").read()
    for p in sorted(glob.glob(os.path.join(ROOT, "tests/data/lower/shape_infer/*.onnx"))):
        seeds["si_test_" + os.path.basename(p)[:-5]] = open(p, "rb").read()
    for name, data in sorted(seeds.items()):
        with open(os.path.join(onnx_dir, name + ".onnx"), "wb") as f:
            f.write(data)
        # Spec byte: 0 INT+FP, 2 INT+int16 (float nodes fall back: shape
        # inference over everything), 3 TOSA 1.1 with extensions.
        # Bit 2 (4 = INT+FP, 6 = INT+int16): write the outputs (partitioned ONNX).
        specs = [0, 2, 3, 4, 6] if name.startswith(("qops_", "si_")) else [0, 2, 4]
        for s in specs:
            with open(os.path.join(lower_dir, "%s.s%d.onnx" % (name, s)), "wb") as f:
                f.write(bytes([s]) + data)
    for name, data in sorted(reports().items()):
        with open(os.path.join(report_dir, name + ".json"), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
