#!/usr/bin/python3
"""Generates the tiny custom-operator models of tests/test_custom.c and their
numpy reference data. Run with Debian's /usr/bin/python3 (onnx, numpy):

    /usr/bin/python3 tests/data/lower/custom/gen.py

Outputs (next to this script): *.onnx, *_in.npy (inputs), *_out*.npy
(numpy results). Deterministic (fixed seed)."""
import os
import numpy as np
import onnx
from onnx import helper, TensorProto, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
F = TensorProto.FLOAT


def save(model, name):
    model.ir_version = 8
    onnx.save(model, os.path.join(HERE, name))


def vi(name, shape, t=F):
    return helper.make_tensor_value_info(name, t, shape)


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


rng = np.random.default_rng(8)

# 1. Add -> MySwish(beta=1.5) -> SplitHalf -> (Mul 2, Relu): one partition.
x = rng.standard_normal((1, 4, 8)).astype(np.float32)
bias = rng.standard_normal((8,)).astype(np.float32)
g = helper.make_graph(
    [helper.make_node("Add", ["x", "bias"], ["t0"], name="add"),
     helper.make_node("MySwish", ["t0"], ["t1"], name="swish", domain="com.example", beta=1.5),
     helper.make_node("SplitHalf", ["t1"], ["h0", "h1"], name="split", domain="com.example"),
     helper.make_node("Mul", ["h0", "two"], ["y0"], name="mul"),
     helper.make_node("Relu", ["h1"], ["y1"], name="relu")],
    "swish_split", [vi("x", [1, 4, 8])], [vi("y0", [1, 4, 4]), vi("y1", [1, 4, 4])],
    [numpy_helper.from_array(bias, "bias"), numpy_helper.from_array(np.array([2.0], np.float32), "two")])
save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.example", 1)]),
     "swish_split.onnx")
t0 = x + bias
t1 = t0 * sigmoid(np.float32(1.5) * t0)
np.save(os.path.join(HERE, "swish_split_in.npy"), x)
np.save(os.path.join(HERE, "swish_split_out0.npy"), (t1[..., :4] * 2).astype(np.float32))
np.save(os.path.join(HERE, "swish_split_out1.npy"), np.maximum(t1[..., 4:], 0).astype(np.float32))

# 2. SplitHalf on an odd last axis: its shape function refuses the node.
g = helper.make_graph(
    [helper.make_node("Relu", ["x"], ["t"], name="relu"),
     helper.make_node("SplitHalf", ["t"], ["a", "b"], name="split_odd", domain="com.example")],
    "split_odd", [vi("x", [2, 5])], [vi("a", [2, 2]), vi("b", [2, 3])])
save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.example", 1)]),
     "split_odd.onnx")

# 3. A three-output custom operator between standard operators.
x3 = rng.standard_normal((2, 6)).astype(np.float32)
g = helper.make_graph(
    [helper.make_node("Abs", ["x"], ["t"], name="abs"),
     helper.make_node("Three", ["t"], ["o0", "o1", "o2"], name="three", domain="com.test", scale=0.5,
                      mode="fast", sizes=[3, 1, 2]),
     helper.make_node("Neg", ["o0"], ["y0"], name="neg0"),
     helper.make_node("Neg", ["o1"], ["y1"], name="neg1"),
     helper.make_node("Neg", ["o2"], ["y2"], name="neg2")],
    "three_out", [vi("x", [2, 6])], [vi("y0", [2, 6]), vi("y1", [2, 6]), vi("y2", [2, 6])])
save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.test", 1)]),
     "three_out.onnx")
np.save(os.path.join(HERE, "three_out_in.npy"), x3)
for k in range(3):  # the test's kernel: output k = input * (k + 1) * scale
    np.save(os.path.join(HERE, "three_out_out%d.npy" % k), (-(np.abs(x3) * (k + 1) * 0.5)).astype(np.float32))

# 4. A standard operator a plugin lowers to CUSTOM instead (override).
g = helper.make_graph(
    [helper.make_node("Sigmoid", ["x"], ["t"], name="sig"),
     helper.make_node("Relu", ["t"], ["y"], name="relu")],
    "override", [vi("x", [2, 3])], [vi("y", [2, 3])])
save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), "override.onnx")

# 5. MySwish with an attribute its validation callback refuses (beta <= 0).
g = helper.make_graph(
    [helper.make_node("Relu", ["x"], ["t"], name="relu"),
     helper.make_node("MySwish", ["t"], ["y"], name="swish_bad", domain="com.example", beta=-1.0)],
    "swish_badbeta", [vi("x", [2, 4])], [vi("y", [2, 4])])
save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.example", 1)]),
     "swish_badbeta.onnx")

# 6. A custom operator with 70 outputs: over MAX_TENSOR_LIST_SIZE (64) of
# level 8K, fine without a level.
outs = ["o%d" % k for k in range(70)]
g = helper.make_graph(
    [helper.make_node("Abs", ["x"], ["t"], name="abs"),
     helper.make_node("Many", ["t"], outs, name="many", domain="com.test")],
    "many_out", [vi("x", [2])], [vi(o, [2]) for o in outs])
save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.test", 1)]),
     "many_out.onnx")
