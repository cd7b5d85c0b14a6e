#!/usr/bin/python3
"""Generates the runtime test models (tests/cli_runtime.sh). Run with
Debian's /usr/bin/python3 (onnx, numpy):

    /usr/bin/python3 tests/data/runtime/gen.py

- float_mid.onnx: a small float CNN with nodes in the middle that
  TOSA-1.0+FP cannot take (a round trip through bfloat16, which needs
  EXT-BF16, and an int64 ArgMax feeding a Cast), so the model splits into
  several partitions with CPU nodes between them.
- nonzero_mid.onnx: the same kind of network with a NonZero (output shape
  depends on the data) in the middle: it runs as a deferred node, lowered
  on each run with that run's values.
- detect_mid.onnx: a detector's tail: a Conv gives scores and boxes for 64
  anchors, then Greater / NonZero / Gather keep the scores above 0.5, TopK
  keeps at most 10 (k from Shape and Min), and an If runs
  NonMaxSuppression unless nothing is left. Inputs detect_in.npy (some
  boxes survive) and detect_none_in.npy (none do: empty tensors and the
  other branch); the expected outputs detect[_none]_out<i>.npy are computed
  here with numpy, following ONNX's definitions.
- unique_mid.onnx: a Unique in the middle: no lowering at all, so loading
  the partitioned model fails, naming the node.
- topk_big.onnx: a TopK with a constant k of 100 on a runtime tensor: as a
  TOSA graph it passes the 64-round limit, so the runtime sorts the run's
  values; expected outputs topk_big_out<i>.npy from numpy (float_mid_in.npy
  as input).
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


# ---- detect_mid: data-dependent shapes and an If
I64 = TensorProto.INT64
wd = (rng.standard_normal((5, 3, 3, 3)) * 0.4).astype(np.float32)
bd = np.array([-0.3, 0, 0, 0, 0], np.float32)


def const(name, a):
    return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(np.asarray(a), name + "_v"))


then_g = helper.make_graph([const("none", np.zeros((0,), np.int64))], "nothing_left", [],
                           [helper.make_tensor_value_info("none", I64, [0])])
else_g = helper.make_graph([
    helper.make_node("Unsqueeze", ["top_b", "ax0"], ["nms_b"], name="nms_boxes"),
    helper.make_node("Unsqueeze", ["top_s", "ax01"], ["nms_s"], name="nms_scores"),
    helper.make_node("NonMaxSuppression", ["nms_b", "nms_s", "max_out", "iou"], ["sel"], name="nms"),
    helper.make_node("Gather", ["sel", "two"], ["keep_col"], name="box_column", axis=1),
    helper.make_node("Squeeze", ["keep_col", "ax1"], ["kept"], name="kept"),
], "suppress", [], [helper.make_tensor_value_info("kept", I64, ["m"])])
nodes = [
    helper.make_node("Conv", ["x", "wd", "bd"], ["c"], name="head", pads=[1, 1, 1, 1]),
    helper.make_node("GlobalAveragePool", ["c"], ["pooled"], name="pool"),
    helper.make_node("Reshape", ["c", "rows"], ["c2"], name="rows"),
    helper.make_node("Slice", ["c2", "s0", "s1", "ax0"], ["logit2"], name="score_row"),
    helper.make_node("Squeeze", ["logit2", "ax0"], ["logit"], name="score_squeeze"),
    helper.make_node("Sigmoid", ["logit"], ["score"], name="sigmoid"),
    helper.make_node("Slice", ["c2", "s1", "s5", "ax0"], ["box4"], name="box_rows"),
    helper.make_node("Transpose", ["box4"], ["boxes"], name="box_t", perm=[1, 0]),
    helper.make_node("Greater", ["score", "half"], ["mask"], name="threshold"),
    helper.make_node("NonZero", ["mask"], ["nz"], name="nonzero"),
    helper.make_node("Squeeze", ["nz", "ax0"], ["idx"], name="idx"),
    helper.make_node("Gather", ["score", "idx"], ["sel_s"], name="sel_scores"),
    helper.make_node("Gather", ["boxes", "idx"], ["sel_b"], name="sel_boxes", axis=0),
    helper.make_node("Shape", ["sel_s"], ["n"], name="count"),
    helper.make_node("Min", ["n", "ten"], ["k"], name="k"),
    helper.make_node("TopK", ["sel_s", "k"], ["top_s", "top_i"], name="topk"),
    helper.make_node("Gather", ["sel_b", "top_i"], ["top_b"], name="top_boxes", axis=0),
    helper.make_node("Size", ["top_s"], ["left"], name="left"),
    helper.make_node("Equal", ["left", "zero"], ["empty"], name="empty"),
    helper.make_node("If", ["empty"], ["keep"], name="maybe_nms", then_branch=then_g, else_branch=else_g),
    helper.make_node("Gather", ["top_b", "keep"], ["out_boxes"], name="out_boxes", axis=0),
    helper.make_node("Gather", ["top_s", "keep"], ["out_scores"], name="out_scores"),
]
inits = [init("wd", wd), init("bd", bd), init("rows", np.array([5, 64], np.int64)),
         init("s0", np.array([0], np.int64)), init("s1", np.array([1], np.int64)), init("s5", np.array([5], np.int64)),
         init("ax0", np.array([0], np.int64)), init("ax1", np.array([1], np.int64)),
         init("ax01", np.array([0, 1], np.int64)), init("half", np.array(0.5, np.float32)),
         init("ten", np.array([10], np.int64)), init("zero", np.array(0, np.int64)),
         init("two", np.array([2], np.int64)), init("max_out", np.array([np.iinfo(np.int64).max], np.int64)),
         init("iou", np.array([0.3], np.float32))]
g = helper.make_graph(nodes, "detect_mid", [helper.make_tensor_value_info("x", F, [1, 3, 8, 8])],
                      [helper.make_tensor_value_info("out_boxes", F, ["m", 4]),
                       helper.make_tensor_value_info("out_scores", F, ["m"]),
                       helper.make_tensor_value_info("pooled", F, [1, 5, 1, 1])], inits)
save(g, "detect_mid.onnx")

g = helper.make_graph([
    helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
    helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
    helper.make_node("Unique", ["r1"], ["u"], name="unique"),
], "unique_mid", [helper.make_tensor_value_info("x", F, [1, 3, 16, 16])],
    [helper.make_tensor_value_info("u", F, ["n"])], [init("w1", w1), init("b1", b1)])
save(g, "unique_mid.onnx")


def conv_same(x, w, b):  # NCHW, stride 1, pads 1, in float64
    n, ci, h, wd_ = x.shape
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    out = np.zeros((n, w.shape[0], h, wd_))
    for i in range(3):
        for j in range(3):
            out += np.einsum("nchw,oc->nohw", xp[:, :, i:i + h, j:j + wd_], w[:, :, i, j].astype(np.float64))
    return out + b.reshape(1, -1, 1, 1)


def iou_over(a, b, thr):  # ONNX's definition, corners [y1, x1, y2, x2], in fp32
    f = np.float32
    ax0, ax1 = min(a[1], a[3]), max(a[1], a[3])
    ay0, ay1 = min(a[0], a[2]), max(a[0], a[2])
    bx0, bx1 = min(b[1], b[3]), max(b[1], b[3])
    by0, by1 = min(b[0], b[2]), max(b[0], b[2])
    ix0, ix1, iy0, iy1 = max(ax0, bx0), min(ax1, bx1), max(ay0, by0), min(ay1, by1)
    if ix1 <= ix0 or iy1 <= iy0:
        return False
    inter = f(f(ix1 - ix0) * f(iy1 - iy0))
    aa, ab = f(f(ax1 - ax0) * f(ay1 - ay0)), f(f(bx1 - bx0) * f(by1 - by0))
    uni = f(f(aa + ab) - inter)
    return inter > 0 and aa > 0 and ab > 0 and uni > 0 and f(inter / uni) > f(thr)


def detect(x):
    c = conv_same(x, wd, bd).astype(np.float32)
    pooled = c.astype(np.float64).mean(axis=(2, 3), keepdims=True).astype(np.float32)
    c2 = c.reshape(5, 64)
    score = (1 / (1 + np.exp(-c2[0].astype(np.float64)))).astype(np.float32)
    boxes = c2[1:5].T
    idx = np.nonzero(score > 0.5)[0]
    sel_s, sel_b = score[idx], boxes[idx]
    order = sorted(range(len(sel_s)), key=lambda i: (-sel_s[i], i))[:10]
    top_s, top_b = sel_s[order], sel_b[order]
    keep = []
    for i in range(len(top_s)):  # already sorted by score, ties by index
        if all(not iou_over(top_b[i], top_b[j], 0.3) for j in keep):
            keep.append(i)
    keep = np.array(keep, np.int64)
    return top_b[keep].reshape(-1, 4), top_s[keep], pooled


xd = rng.standard_normal((1, 3, 8, 8)).astype(np.float32)
for name, xin in (("detect", xd), ("detect_none", np.zeros((1, 3, 8, 8), np.float32))):
    np.save(os.path.join(HERE, name + "_in.npy"), xin)
    for i, a in enumerate(detect(xin)):
        np.save(os.path.join(HERE, "%s_out%d.npy" % (name, i)), a)


g = helper.make_graph([
    helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
    helper.make_node("Flatten", ["c1"], ["f"], name="flatten"),
    helper.make_node("TopK", ["f", "k100"], ["vals", "idx"], name="topk"),
], "topk_big", [helper.make_tensor_value_info("x", F, [1, 3, 16, 16])],
    [helper.make_tensor_value_info("vals", F, [1, 100]), helper.make_tensor_value_info("idx", I64, [1, 100])],
    [init("w1", w1), init("b1", b1), init("k100", np.array([100], np.int64))])
save(g, "topk_big.onnx")
f = conv_same(x, w1, b1).astype(np.float32).reshape(1, -1)
order = np.array(sorted(range(f.shape[1]), key=lambda i: (-f[0, i], i))[:100], np.int64)
np.save(os.path.join(HERE, "topk_big_out0.npy"), f[:, order])
np.save(os.path.join(HERE, "topk_big_out1.npy"), order.reshape(1, -1))
