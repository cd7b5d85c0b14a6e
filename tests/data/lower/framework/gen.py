#!/usr/bin/python3
"""Generates the small ONNX models tests/test_lower_framework.c uses.

Run with Debian's python3 (onnx 1.12, numpy):
    /usr/bin/python3 tests/data/lower/framework/gen.py
Outputs are deterministic and committed next to this script."""
import os
import numpy as np
import onnx
from onnx import helper, TensorProto, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
F = TensorProto.FLOAT
I64 = TensorProto.INT64


def save(name, nodes, inputs, outputs, inits=(), opset=13, value_info=()):
    g = helper.make_graph(nodes, name, inputs, outputs, initializer=list(inits), value_info=list(value_info))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], producer_name="ctosa-gen")
    m.ir_version = 8
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(HERE, name + ".onnx"))


def vi(name, t, shape):
    return helper.make_tensor_value_info(name, t, shape)


# 1. reshape/identity chain around one Relu: x -> Identity -> Reshape -> Relu -> Flatten -> y
save("chain",
     [helper.make_node("Identity", ["x"], ["a"], name="id0"),
      helper.make_node("Reshape", ["a", "shp"], ["b"], name="rs0"),
      helper.make_node("Relu", ["b"], ["c"], name="relu0"),
      helper.make_node("Flatten", ["c"], ["y"], name="fl0", axis=1)],
     [vi("x", F, [2, 3, 4])], [vi("y", F, [2, 12])],
     [numpy_helper.from_array(np.array([2, 12], np.int64), "shp")])

# 2. shape arithmetic: y = Reshape(Relu(x), Concat(Gather(Shape(x), 0), [-1]))
save("shape_chain",
     [helper.make_node("Relu", ["x"], ["r"], name="relu"),
      helper.make_node("Shape", ["x"], ["s"], name="shape"),
      helper.make_node("Gather", ["s", "zero"], ["d0"], name="gather", axis=0),
      helper.make_node("Unsqueeze", ["d0", "ax0"], ["d0u"], name="unsq"),
      helper.make_node("Concat", ["d0u", "minus1"], ["ns"], name="concat", axis=0),
      helper.make_node("Reshape", ["r", "ns"], ["y"], name="reshape")],
     [vi("x", F, [2, 3, 4])], [vi("y", F, [2, 12])],
     [numpy_helper.from_array(np.array(0, np.int64), "zero"),
      numpy_helper.from_array(np.array([0], np.int64), "ax0"),
      numpy_helper.from_array(np.array([-1], np.int64), "minus1")])

# 3. constant folding: k = Relu(Constant) + w folded; y = x + k
save("fold",
     [helper.make_node("Constant", [], ["c"], name="const",
                       value=numpy_helper.from_array(np.array([[-1.0, 2.0, -3.0, 4.0]], np.float32))),
      helper.make_node("Relu", ["c"], ["rc"], name="relu_c"),
      helper.make_node("Add", ["rc", "w"], ["k"], name="add_k"),
      helper.make_node("Add", ["x", "k"], ["y"], name="add_y")],
     [vi("x", F, [3, 4])], [vi("y", F, [3, 4])],
     [numpy_helper.from_array(np.array([[0.5, 0.5, 0.5, 0.5]], np.float32), "w")])

# 4. a CPU node in the middle (NonZero: its shape depends on the data):
#    A -> X(cpu) -> B and A -> B directly.
#    A and B must end in different partitions.
save("split",
     [helper.make_node("Relu", ["x"], ["a"], name="A"),
      helper.make_node("NonZero", ["a"], ["nz"], name="X"),
      helper.make_node("Cast", ["nz"], ["nzf"], name="Xc", to=F),
      helper.make_node("ReduceSum", ["nzf"], ["s"], name="Xs", keepdims=0),
      helper.make_node("Add", ["a", "s"], ["y"], name="B")],
     [vi("x", F, [2, 3])], [vi("y", F, [2, 3])],
     value_info=[vi("nz", I64, [2, None]), vi("nzf", F, [2, None]), vi("s", F, [])])

# 4b. two branches from two graph inputs meet at an Add: one partition.
save("branches",
     [helper.make_node("Relu", ["x1"], ["a"], name="ra"),
      helper.make_node("Relu", ["x2"], ["b"], name="rb"),
      helper.make_node("Add", ["a", "b"], ["y"], name="add")],
     [vi("x1", F, [2, 3]), vi("x2", F, [2, 3])], [vi("y", F, [2, 3])])

# 5. no_compute: Transpose alone, fed by CPU node and feeding CPU node.
save("no_compute",
     [helper.make_node("NonZero", ["x"], ["nz"], name="nz"),
      helper.make_node("Transpose", ["x"], ["t"], name="tr", perm=[1, 0]),
      helper.make_node("Identity", ["t"], ["y"], name="idy")],
     [vi("x", F, [2, 3])], [vi("y", F, [3, 2]), vi("nz", I64, [2, None])])

# 6. needs_constant: Reshape whose shape is a graph input.
save("needs_const",
     [helper.make_node("Relu", ["x"], ["r"], name="relu"),
      helper.make_node("Reshape", ["r", "shape"], ["y"], name="reshape")],
     [vi("x", F, [2, 6]), vi("shape", I64, [2])], [vi("y", F, [3, 4])])
np.save(os.path.join(HERE, "needs_const_shape.npy"), np.array([3, 4], np.int64))

# 7. symbolic batch: --shape x=2x4
save("dynamic",
     [helper.make_node("Relu", ["x"], ["y"], name="relu")],
     [vi("x", F, ["N", 4])], [vi("y", F, ["N", 4])])

# 8. int64: a runtime int64 (Cast from int32) added to an int64 initializer
#    that fits int32 and to one that does not.
save("int64",
     [helper.make_node("Cast", ["x"], ["xi"], name="cast", to=I64),
      helper.make_node("Add", ["xi", "small"], ["y1"], name="add_small"),
      helper.make_node("Add", ["xi", "big"], ["y2"], name="add_big")],
     [vi("x", TensorProto.INT32, [4])], [vi("y1", I64, [4]), vi("y2", I64, [4])],
     [numpy_helper.from_array(np.array([1, 2, 3, 4], np.int64), "small"),
      numpy_helper.from_array(np.array([1, 2, 3, 1 << 40], np.int64), "big")])

# 8b. int64 constants only: Reshape by an int64 shape computed from
#     constants (narrowed, folded) feeding a float Add.
save("int64_const",
     [helper.make_node("Add", ["s1", "s2"], ["shp"], name="add_shape"),
      helper.make_node("Reshape", ["x", "shp"], ["r"], name="reshape"),
      helper.make_node("Relu", ["r"], ["y"], name="relu")],
     [vi("x", F, [2, 6])], [vi("y", F, [3, 4])],
     [numpy_helper.from_array(np.array([1, 2], np.int64), "s1"),
      numpy_helper.from_array(np.array([2, 2], np.int64), "s2")])

# 9. transposes that cancel: Transpose -> Relu -> Transpose(inverse)
save("transposes",
     [helper.make_node("Transpose", ["x"], ["t1"], name="t1", perm=[0, 2, 3, 1]),
      helper.make_node("Relu", ["t1"], ["r"], name="relu"),
      helper.make_node("Transpose", ["r"], ["y"], name="t2", perm=[0, 3, 1, 2])],
     [vi("x", F, [1, 3, 4, 5])], [vi("y", F, [1, 3, 4, 5])])

# 10. a long chain for timing: 1000 nodes Add/Relu alternating.
nodes = []
prev = "x"
for i in range(1000):
    out = "v%d" % i if i < 999 else "y"
    if i % 2 == 0:
        nodes.append(helper.make_node("Add", [prev, "bias"], [out], name="n%d" % i))
    else:
        nodes.append(helper.make_node("Relu", [prev], [out], name="n%d" % i))
    prev = out
save("long", nodes, [vi("x", F, [1, 64])], [vi("y", F, [1, 64])],
     [numpy_helper.from_array(np.full((1, 64), 0.01, np.float32), "bias")])
print("ok")
