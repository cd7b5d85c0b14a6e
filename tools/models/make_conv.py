#!/usr/bin/python3
"""Conv-heavy ONNX model with external data, for the streamed weight transforms.

Usage: /usr/bin/python3 tools/models/make_conv.py --out DIR [--channels 1024] [--convs 24] [--fc 4096]

Writes DIR/model.onnx and DIR/model.bin (the same layout as make_llm.py,
so bench/bench_lower_llm --model DIR measures it). Every weight has to
change bytes on its way to TOSA:
  x [1, C, 4, 4] -> N x (Conv 3x3 C->C, pads 1 -> Relu)   (OIHW -> OHWI)
  -> depthwise Conv 3x3 (group C)                          ([C,1,3,3] -> [3,3,C,1])
  -> grouped Conv 3x3 (group 4)                            (4 slices OIHW -> OHWI)
  -> Flatten -> Gemm transB [FC, 16C] -> Relu              ([N,K] -> [K,N])
  -> Gemm transB [FC, FC] -> y [1, FC]
Defaults: about 1.25 GB of fp32 weights. Weights are random (seeded), written
tensor by tensor (memory stays at one tensor), each 4096-aligned in
model.bin. Needs numpy and onnx (Debian python3-numpy, python3-onnx).
"""
import argparse
import os

import numpy as np
import onnx
from onnx import TensorProto, helper


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--channels", type=int, default=1024)
    ap.add_argument("--convs", type=int, default=24)
    ap.add_argument("--fc", type=int, default=4096)
    ap.add_argument("--seed", type=int, default=1234)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    rng = np.random.default_rng(a.seed)
    C, FC = a.channels, a.fc
    inits, nodes = [], []
    binpath = os.path.join(a.out, "model.bin")
    with open(binpath, "wb") as bf:

        def weight(name, shape):
            off = bf.tell()
            pad = (-off) % 4096
            if pad:
                bf.write(b"\0" * pad)
                off += pad
            fan_in = int(np.prod(shape[1:]))
            w = rng.standard_normal(shape, dtype=np.float32) * np.float32(1.0 / np.sqrt(fan_in))
            bf.write(w.tobytes())
            t = TensorProto()
            t.name = name
            t.data_type = TensorProto.FLOAT
            t.dims.extend(shape)
            t.data_location = TensorProto.EXTERNAL
            for k, v in (("location", "model.bin"), ("offset", str(off)), ("length", str(w.nbytes))):
                e = t.external_data.add()
                e.key, e.value = k, v
            inits.append(t)
            return name

        x = "x"
        for i in range(a.convs):
            w = weight(f"conv{i}.w", [C, C, 3, 3])
            nodes.append(helper.make_node("Conv", [x, w], [f"c{i}"], pads=[1, 1, 1, 1], name=f"conv{i}"))
            nodes.append(helper.make_node("Relu", [f"c{i}"], [f"r{i}"], name=f"relu{i}"))
            x = f"r{i}"
        w = weight("dw.w", [C, 1, 3, 3])
        nodes.append(helper.make_node("Conv", [x, w], ["dw"], group=C, pads=[1, 1, 1, 1], name="dw"))
        w = weight("grouped.w", [C, C // 4, 3, 3])
        nodes.append(helper.make_node("Conv", ["dw", w], ["gc"], group=4, pads=[1, 1, 1, 1], name="grouped"))
        nodes.append(helper.make_node("Flatten", ["gc"], ["flat"], name="flatten"))
        w = weight("fc1.w", [FC, C * 16])
        nodes.append(helper.make_node("Gemm", ["flat", w], ["fc1"], transB=1, name="fc1"))
        nodes.append(helper.make_node("Relu", ["fc1"], ["fc1r"], name="fc1_relu"))
        w = weight("fc2.w", [FC, FC])
        nodes.append(helper.make_node("Gemm", ["fc1r", w], ["y"], transB=1, name="fc2"))
    graph = helper.make_graph(nodes, "conv_stream",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, C, 4, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, FC])],
                              initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, os.path.join(a.out, "model.onnx"))
    print(f"{a.out}: model.bin {os.path.getsize(binpath) / 1e6:.1f} MB, {len(inits)} weights")


if __name__ == "__main__":
    main()
