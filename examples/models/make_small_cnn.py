#!/usr/bin/python3
"""Generates the bundled example model examples/models/small_cnn.onnx.

A small image classifier (opset 13, float32, static shapes):

    input [1,3,32,32] -> Conv 3->8 3x3 pad 1 -> Relu -> MaxPool 2x2
                      -> Conv 8->16 3x3 pad 1 -> Relu -> MaxPool 2x2
                      -> GlobalAveragePool -> Flatten -> Gemm 16->10 -> output [1,10]

Weights are random (fixed seed, He-scaled so activations keep their size).
Also writes small_cnn.input_0.npy (standard normal) and
small_cnn.output_0.npy, the output computed here in float64 numpy and
stored as float32, so the example can be checked without any other
runtime. Deterministic: re-running gives byte-identical files.

Usage: /usr/bin/python3 examples/models/make_small_cnn.py [OUT_DIR]
(Debian's python3 with python3-onnx and python3-numpy.)
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def conv2d(x, w, b, pad):
    n, c, h, wd = x.shape
    k, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = h + 2 * pad - kh + 1, wd + 2 * pad - kw + 1
    out = np.zeros((n, k, oh, ow))
    for i in range(kh):
        for j in range(kw):
            patch = xp[:, :, i:i + oh, j:j + ow]          # n c oh ow
            out += np.einsum("nchw,kc->nkhw", patch, w[:, :, i, j])
    return out + b.reshape(1, k, 1, 1)


def maxpool2(x):
    n, c, h, w = x.shape
    return x.reshape(n, c, h // 2, 2, w // 2, 2).max(axis=(3, 5))


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    rng = np.random.default_rng(20261129)

    def he(shape, fan_in):
        return (rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)).astype(np.float32)

    w1, b1 = he((8, 3, 3, 3), 27), (rng.standard_normal(8) * 0.1).astype(np.float32)
    w2, b2 = he((16, 8, 3, 3), 72), (rng.standard_normal(16) * 0.1).astype(np.float32)
    wf, bf = he((10, 16), 16), (rng.standard_normal(10) * 0.1).astype(np.float32)
    x = rng.standard_normal((1, 3, 32, 32)).astype(np.float32)

    inits = [numpy_helper.from_array(a, n) for a, n in
             [(w1, "conv1.weight"), (b1, "conv1.bias"), (w2, "conv2.weight"),
              (b2, "conv2.bias"), (wf, "fc.weight"), (bf, "fc.bias")]]
    pool = dict(kernel_shape=[2, 2], strides=[2, 2])
    nodes = [
        helper.make_node("Conv", ["input", "conv1.weight", "conv1.bias"], ["c1"], name="conv1",
                         kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("MaxPool", ["r1"], ["p1"], name="pool1", **pool),
        helper.make_node("Conv", ["p1", "conv2.weight", "conv2.bias"], ["c2"], name="conv2",
                         kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
        helper.make_node("MaxPool", ["r2"], ["p2"], name="pool2", **pool),
        helper.make_node("GlobalAveragePool", ["p2"], ["gap"], name="gap"),
        helper.make_node("Flatten", ["gap"], ["flat"], name="flatten", axis=1),
        helper.make_node("Gemm", ["flat", "fc.weight", "fc.bias"], ["output"], name="fc",
                         transB=1),
    ]
    graph = helper.make_graph(
        nodes, "small_cnn",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, 32, 32])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 10])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)],
                              producer_name="ctosa examples/models/make_small_cnn.py")
    model.ir_version = 8
    onnx.checker.check_model(model)

    # Reference in float64.
    h = x.astype(np.float64)
    h = maxpool2(np.maximum(conv2d(h, w1.astype(np.float64), b1, 1), 0))
    h = maxpool2(np.maximum(conv2d(h, w2.astype(np.float64), b2, 1), 0))
    h = h.mean(axis=(2, 3))
    y = (h @ wf.astype(np.float64).T + bf).astype(np.float32)

    os.makedirs(out_dir, exist_ok=True)
    onnx.save(model, os.path.join(out_dir, "small_cnn.onnx"))
    np.save(os.path.join(out_dir, "small_cnn.input_0.npy"), x)
    np.save(os.path.join(out_dir, "small_cnn.output_0.npy"), y)
    print("small_cnn.onnx: %d bytes, output std %.3f" %
          (os.path.getsize(os.path.join(out_dir, "small_cnn.onnx")), float(y.std())))


if __name__ == "__main__":
    main()
