#!/usr/bin/python3
"""Models for tests/test_shape_infer.c (shape inference over CPU-side nodes).

rules.onnx: one node per shape rule of src/lower/core/shape_infer.c, no
  value_info; expected.txt holds what ONNX's own shape inference
  (onnx.shape_inference, full static shapes) says for every node output:
  "name elem_type rank d0 d1 ...". The test runs ctosa's rules on every node
  as if it stayed on the CPU and compares.
resize_cubic.onnx: Conv -> Resize(cubic, tf_crop_and_resize to constant
  sizes with the roi a graph input: needs_constant) -> Relu -> Conv -> Add,
  no value_info, opset 13: the Resize stays on the CPU and the nodes after
  it must still be delegated (second partition).
qdq_cascade.onnx: tests/data/lower/quant/cascade_conv/model.onnx with
  its value_info removed (a torch-like undeclared export).
Deterministic. Run with Debian's python3:
    /usr/bin/python3 tests/data/lower/shape_infer/make_models.py
"""
import os
import numpy as np
import onnx
from onnx import helper, TensorProto, numpy_helper

OUT = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(7)
F = TensorProto.FLOAT


def rules():
    nodes, inits = [], []

    def c(name, arr):
        inits.append(numpy_helper.from_array(np.asarray(arr), name))
        return name

    def n(op, ins, out, **kw):
        nodes.append(helper.make_node(op, ins, [out] if isinstance(out, str) else out, name=op + "_" + (out if isinstance(out, str) else out[0]), **kw))

    ins = [helper.make_tensor_value_info("x", F, [2, 3, 17, 15]),
           helper.make_tensor_value_info("m", F, [4, 5, 6]),
           helper.make_tensor_value_info("v", F, [6]),
           helper.make_tensor_value_info("i", TensorProto.INT64, [2, 3]),
           helper.make_tensor_value_info("shp", TensorProto.INT64, [3])]
    c("w", rng.standard_normal((8, 3, 3, 3)).astype(np.float32))
    c("wg", rng.standard_normal((6, 1, 3, 3)).astype(np.float32))
    n("Conv", ["x", "w"], "conv_pad", pads=[1, 2, 0, 1], strides=[2, 1], dilations=[1, 2])
    n("Conv", ["x", "w"], "conv_same", auto_pad="SAME_UPPER", strides=[2, 3])
    n("Conv", ["x", "w"], "conv_valid", auto_pad="VALID", strides=[3, 2])
    n("Conv", ["x", "wg"], "conv_grouped", group=3, pads=[1, 1, 1, 1])
    n("MaxPool", ["x"], ["pool_max", "pool_idx"], kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)
    n("AveragePool", ["x"], "pool_avg", kernel_shape=[2, 4], strides=[2, 3], pads=[1, 0, 1, 2])
    n("GlobalAveragePool", ["x"], "gap")
    n("Flatten", ["gap"], "flat", axis=1)
    c("gw", rng.standard_normal((10, 3)).astype(np.float32))
    n("Gemm", ["flat", "gw"], "gemm", transB=1)
    c("mw", rng.standard_normal((6, 7)).astype(np.float32))
    n("MatMul", ["m", "mw"], "matmul")
    n("MatMul", ["v", "mw"], "matvec")
    c("rs", np.array([0, -1, 3], np.int64))
    n("Reshape", ["m", "rs"], "reshape")
    n("Transpose", ["m"], "transp", perm=[2, 0, 1])
    n("Transpose", ["m"], "transp_rev")
    n("Concat", ["m", "m"], "concat", axis=-1)
    c("ax0", np.array([0, 3], np.int64))
    n("Unsqueeze", ["m", "ax0"], "unsq")
    n("Squeeze", ["unsq", "ax0"], "sq")
    c("st", np.array([-1, 1], np.int64))
    c("en", np.array([-100, 100], np.int64))
    c("sax", np.array([2, 0], np.int64))
    c("ssp", np.array([-2, 2], np.int64))
    n("Slice", ["m", "st", "en", "sax", "ssp"], "slice")
    c("roi", np.zeros(0, np.float32))
    c("scales", np.array([1, 1, 2.5, 0.5], np.float32))
    n("Resize", ["x", "roi", "scales"], "resize_scales", mode="nearest")
    c("sizes", np.array([2, 3, 5, 9], np.int64))
    n("Resize", ["x", "", "", "sizes"], "resize_sizes", mode="linear")
    c("qs", np.array(0.1, np.float32))
    c("qz", np.array(3, np.int8))
    n("QuantizeLinear", ["x", "qs", "qz"], "q")
    n("DequantizeLinear", ["q", "qs", "qz"], "dq")
    n("QuantizeLinear", ["x", "qs"], "q_u8")
    n("Cast", ["x"], "cast", to=TensorProto.INT32)
    n("Add", ["m", "v"], "add_bc")
    n("Equal", ["m", "v"], "eq")
    n("Where", ["eq", "m", "v"], "where")
    n("Gather", ["m", "i"], "gather", axis=1)
    n("ReduceMean", ["m"], "rmean", axes=[0, 2], keepdims=0)
    c("rsax", np.array([1], np.int64))
    n("ReduceSum", ["m", "rsax"], "rsum")
    c("pads", np.array([0, 1, 2, 1, 0, 3], np.int64))
    n("Pad", ["m", "pads"], "pad")
    c("eshape", np.array([3, 1, 1, 1], np.int64))
    n("Expand", ["m", "eshape"], "expand")
    c("reps", np.array([1, 2, 3], np.int64))
    n("Tile", ["m", "reps"], "tile")
    n("Shape", ["m"], "shape")
    n("ArgMax", ["m"], "argmax", axis=1, keepdims=0)
    c("d2s_w", rng.standard_normal((8, 3, 1, 1)).astype(np.float32))
    n("Conv", ["x", "d2s_w"], "conv8")
    n("DepthToSpace", ["conv8"], "d2s", blocksize=2)
    n("Relu", ["d2s"], "relu")
    n("Softmax", ["m"], "softmax", axis=-1)
    # not inferable to a static shape: the test checks it stays unknown
    n("Reshape", ["m", "shp"], "reshape_rt")
    outs = [helper.make_tensor_value_info("softmax", F, [4, 5, 6]),
            helper.make_tensor_value_info("reshape_rt", F, [None, None, None])]
    g = helper.make_graph(nodes, "rules", ins, outs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], producer_name="ctosa-shape-gen")
    m.ir_version = 8
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(OUT, "rules.onnx"))
    inf = onnx.shape_inference.infer_shapes(m, strict_mode=True)
    types = {vi.name: vi.type.tensor_type for vi in list(inf.graph.value_info) + list(inf.graph.output)}
    with open(os.path.join(OUT, "expected.txt"), "w") as f:
        for nd in nodes:
            for o in nd.output:
                if o == "reshape_rt":
                    continue
                t = types[o]
                dims = [d.dim_value for d in t.shape.dim]
                assert all(d.HasField("dim_value") for d in t.shape.dim), o
                f.write("%s %d %d %s\n" % (o, t.elem_type, len(dims), " ".join(map(str, dims))))


def resize_cubic():
    nodes, inits = [], []
    w1 = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    w2 = rng.standard_normal((5, 4, 1, 1)).astype(np.float32)
    inits += [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(w2, "w2"),
              numpy_helper.from_array(np.array([1, 4, 16, 16], np.int64), "sizes"),
              numpy_helper.from_array(rng.standard_normal((5, 1, 1)).astype(np.float32), "bias")]
    nodes.append(helper.make_node("Conv", ["x", "w1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]))
    nodes.append(helper.make_node("Resize", ["c1", "roi", "", "sizes"], ["r"], name="resize", mode="cubic",
                                  coordinate_transformation_mode="tf_crop_and_resize"))
    nodes.append(helper.make_node("Relu", ["r"], ["a"], name="relu"))
    nodes.append(helper.make_node("Conv", ["a", "w2"], ["c2"], name="conv2"))
    nodes.append(helper.make_node("Add", ["c2", "bias"], ["y"], name="add"))
    g = helper.make_graph(nodes, "resize_cubic", [helper.make_tensor_value_info("x", F, [1, 3, 8, 8]),
                                                  helper.make_tensor_value_info("roi", F, [8])],
                          [helper.make_tensor_value_info("y", F, [1, 5, 16, 16])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], producer_name="ctosa-shape-gen")
    m.ir_version = 8
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(OUT, "resize_cubic.onnx"))


def qdq_cascade():
    m = onnx.load(os.path.join(OUT, "..", "quant", "cascade_conv", "model.onnx"))
    del m.graph.value_info[:]
    for o in m.graph.output:
        o.type.tensor_type.ClearField("shape")
    onnx.save(m, os.path.join(OUT, "qdq_cascade.onnx"))


rules()
resize_cubic()
qdq_cascade()
