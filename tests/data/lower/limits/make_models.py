#!/usr/bin/env python3
"""Makes the models of the lowering's memory limits (committed; Debian's
/usr/bin/python3 with python3-onnx; deterministic).

- resize_matrix_huge.onnx: a linear Resize of a 3-D tensor (interpolation
  matrices) from 16384 to 20000 elements on the last axis. Its matrix would
  hold 3.3e8 entries: the node is left to the CPU with the reason.
- resize_matrix_large.onnx: 4096 to 8192 elements (3.4e7 entries, 268 MB
  while it is built): lowered under the default limit, refused before it
  is allocated under a smaller --max-memory.

Also writes the huge one, prefixed with the spec byte of TOSA-1.0+FP, as a
crash regression of the fuzz_lower target (it once took 5 GB)."""
import os
import onnx
from onnx import TensorProto, helper

here = os.path.dirname(os.path.abspath(__file__))
fuzz = os.path.join(here, "..", "..", "..", "..", "fuzz", "regressions", "lower")


def resize(name, n_in, n_out, regression):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, n_in])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1, n_out])
    sizes = helper.make_tensor("sizes", TensorProto.INT64, [3], [1, 1, n_out])
    node = helper.make_node("Resize", ["x", "", "", "sizes"], ["y"], mode="linear")
    g = helper.make_graph([node], name, [x], [y], initializer=[sizes])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], producer_name="ctosa-gen")
    data = m.SerializeToString()
    with open(os.path.join(here, name + ".onnx"), "wb") as f:
        f.write(data)
    if not regression:
        return
    os.makedirs(fuzz, exist_ok=True)
    with open(os.path.join(fuzz, name + ".s1.onnx"), "wb") as f:
        f.write(bytes([1]) + data)


resize("resize_matrix_huge", 16384, 20000, True)
resize("resize_matrix_large", 4096, 8192, False)
