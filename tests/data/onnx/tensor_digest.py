#!/usr/bin/python3
"""Prints "<path> <dtype> <nbytes> <fnv1a64 hex>" for every TensorProto .pb
file under the given folders, decoded by onnx's numpy_helper: an independent
decoder that tests/test_onnx_tensor.c compares ctosa's reader against.
Files that are not plain tensors (SequenceProto, OptionalProto), strings and
types numpy_helper converts (bfloat16 becomes float32 in onnx 1.12) are
skipped."""
import glob
import os
import sys

import onnx
from onnx import TensorProto, numpy_helper

MASK = (1 << 64) - 1


def fnv(data):
    h = 0xCBF29CE484222325
    for b in data:
        h = ((h ^ b) * 0x100000001B3) & MASK
    return h


def main():
    for root in sys.argv[1:]:
        for path in sorted(glob.glob(os.path.join(root, "*", "test_data_set_0", "*.pb"))):
            t = TensorProto()
            try:
                with open(path, "rb") as f:
                    t.ParseFromString(f.read())
                if t.data_type in (0, TensorProto.STRING, TensorProto.BFLOAT16) or t.data_type > 16:
                    continue
                a = numpy_helper.to_array(t)
            except Exception:
                continue
            data = a.tobytes()
            print(path, t.data_type, len(data), "%016x" % fnv(data))


if __name__ == "__main__":
    main()
