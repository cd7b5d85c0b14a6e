#!/usr/bin/python3
"""QuantizeLinear models of a float input for tests/test_qlinear_exact.c.

The test feeds values next to the points where x / scale crosses a
half-integer, where float32 x / scale (ONNX, ONNX Runtime) and
x * (1 / scale) round to different integers; it computes the reference
itself. Models (input "x", output "y"):
  q_u8.onnx      [4096], uint8, scale of mnasnet0_5's input (qnnpack), zp 131
  q_s8_pc.onnx   [1, 3, 2048], int8, per-channel scales and zero points (axis 1)
  q_s16.onnx     [8192], int16 (opset 21), scale 1/3000.7, zp 7
Scales and zero points are listed in meta.txt (the test reads them there).
Deterministic. Run: /usr/bin/python3 tests/data/lower/qlinear_exact/make_qlinear.py
"""
import os
import numpy as np
import onnx
from onnx import helper, TensorProto, numpy_helper

OUT = os.path.dirname(os.path.abspath(__file__))
T = {np.int8: TensorProto.INT8, np.uint8: TensorProto.UINT8, np.int16: TensorProto.INT16}


def build(name, shape, scale, zp, zdt, opset, axis=None):
    s = np.array(scale, np.float32)
    z = np.array(zp, zdt)
    kw = {} if axis is None else {"axis": axis}
    node = helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"], **kw)
    g = helper.make_graph([node], name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                          [helper.make_tensor_value_info("y", T[zdt], shape)],
                          initializer=[numpy_helper.from_array(s, "s"), numpy_helper.from_array(z, "z")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], producer_name="ctosa-qlinear-exact")
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(OUT, name + ".onnx"))
    lo, hi = {np.uint8: (0, 255), np.int8: (-128, 127), np.int16: (-32768, 32767)}[zdt]
    return "%s %d %d %d %s\n" % (name, len(s.reshape(-1)), lo, hi, " ".join(
        "%.9g %d" % (a, b) for a, b in zip(s.reshape(-1).tolist(), z.reshape(-1).tolist())))


def main():
    lines = [build("q_u8", [4096], 0.035966177, 131, np.uint8, 13),
             build("q_s8_pc", [1, 3, 2048], [0.0073, 0.11, 1.3], [-3, 0, 100], np.int8, 13, axis=1),
             build("q_s16", [8192], np.float32(1 / 3000.7), 7, np.int16, 21)]
    with open(os.path.join(OUT, "meta.txt"), "w") as f:
        f.write("# name channels lo hi (scale zero_point) per channel\n")
        f.writelines(lines)


if __name__ == "__main__":
    main()
