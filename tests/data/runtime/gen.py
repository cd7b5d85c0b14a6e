#!/usr/bin/python3
"""Generates the runtime test models (tests/cli_runtime.sh). Run with
Debian's /usr/bin/python3 (onnx, numpy):

    /usr/bin/python3 tests/data/runtime/gen.py

- float_mid.onnx: a small float CNN with nodes in the middle that
  TOSA-1.0+FP cannot take (a round trip through bfloat16, which needs
  EXT-BF16, and an int64 ArgMax feeding a Cast), so the model splits into
  several partitions with CPU nodes between them.
- nonzero_mid.onnx: the same kind of network with a NonZero (output shape
  depends on the data) in the middle: no TOSA graph can run it.
Inputs: <name>_in.npy. Deterministic (fixed seed)."""
import os
import numpy as np
import onnx
from onnx import helper, TensorProto, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
F = TensorProto.FLOAT
rng = np.random.default_rng(19)


def init(name, a):
    return numpy_helper.from_array(np.asarray(a), name)


def save(g, name, opset=17):
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(HERE, name))


w1 = (rng.standard_normal((8, 3, 3, 3)) * 0.3).astype(np.float32)
b1 = (rng.standard_normal((8,)) * 0.1).astype(np.float32)
w2 = (rng.standard_normal((16, 8, 3, 3)) * 0.2).astype(np.float32)
b2 = (rng.standard_normal((16,)) * 0.1).astype(np.float32)
wf = (rng.standard_normal((10, 16)) * 0.3).astype(np.float32)
bf = (rng.standard_normal((10,)) * 0.1).astype(np.float32)
x = rng.standard_normal((1, 3, 16, 16)).astype(np.float32)

nodes = [
    helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
    helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
    # the deliberately unsupported part (for TOSA-1.0+FP): bf16 round trip
    helper.make_node("Cast", ["r1"], ["h"], name="to_bf16", to=TensorProto.BFLOAT16),
    helper.make_node("Cast", ["h"], ["r1b"], name="from_bf16", to=F),
    helper.make_node("Conv", ["r1b", "w2", "b2"], ["c2"], name="conv2", pads=[1, 1, 1, 1], strides=[2, 2]),
    helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
    # ... and an int64 ArgMax over channels turned into a float mask
    helper.make_node("ArgMax", ["r2"], ["am"], name="argmax", axis=1, keepdims=1),
    helper.make_node("Cast", ["am"], ["amf"], name="am_float", to=F),
    helper.make_node("Mul", ["amf", "tenth"], ["ams"], name="am_scale"),
    helper.make_node("Add", ["r2", "ams"], ["r3"], name="add_mask"),
    helper.make_node("GlobalAveragePool", ["r3"], ["gp"], name="gap"),
    helper.make_node("Flatten", ["gp"], ["fl"], name="flatten"),
    helper.make_node("Gemm", ["fl", "wf", "bf"], ["logits"], name="fc", transB=1),
    helper.make_node("Softmax", ["logits"], ["y"], name="softmax", axis=1),
]
g = helper.make_graph(nodes, "float_mid", [helper.make_tensor_value_info("x", F, [1, 3, 16, 16])],
                      [helper.make_tensor_value_info("y", F, [1, 10])],
                      [init("w1", w1), init("b1", b1), init("w2", w2), init("b2", b2), init("wf", wf),
                       init("bf", bf), init("tenth", np.array(0.1, np.float32))])
save(g, "float_mid.onnx")
np.save(os.path.join(HERE, "float_mid_in.npy"), x)

nodes = [
    helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
    helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
    helper.make_node("NonZero", ["r1"], ["nz"], name="nonzero"),
    helper.make_node("Cast", ["nz"], ["y"], name="cast", to=F),
]
g = helper.make_graph(nodes, "nonzero_mid", [helper.make_tensor_value_info("x", F, [1, 3, 16, 16])],
                      [helper.make_tensor_value_info("y", F, [4, "n"])], [init("w1", w1), init("b1", b1)])
save(g, "nonzero_mid.onnx")
