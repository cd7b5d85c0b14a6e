#!/bin/sh
# Regenerates the committed .tosa test inputs from their JSON sources with
# Debian's flatc (2.0.8). Run from anywhere; needs ../shared beside the tree.
#   small.tosa        1.0 graph: CONST/CONST_SHAPE/ADD/CLAMP/RESHAPE/CUSTOM,
#                     a variable tensor, a location (malformed-corpus seed)
#   v11.tosa          1.1 draft graph with SoftwareVersion, DIM, block-scaled op, INT64 data
#   external.tosa     1.0 graph whose two constants live after the flatbuffer
#                     (offset/size layout; segments at 4096 and 4160)
#   oldnum_*.tosa     "1.1.0 draft" files that look pre-1.0-final (must be refused)
#   v080.tosa         version 0.80.0 (must be refused)
set -e
here=$(cd "$(dirname "$0")" && pwd)
schema=$here/../../../../shared/reference/tosa/schema
cd "$here"
for j in small external oldnum_data oldnum_yield v080; do
  flatc -b "$schema/tosa-1.0.fbs" "$j.json"
done
flatc -b "$schema/tosa-1.1-draft.fbs" v11.json
# external.tosa: pad the flatbuffer to 4096 bytes, then two 16-byte int32
# segments: [1,2,3,4] at 4096 and [-1,-2,-3,-4] at 4160 (64-byte aligned).
python3 - <<'PY'
import struct
b = bytearray(open("external.tosa", "rb").read())
assert len(b) <= 4096
b += bytes(4096 - len(b))
b += struct.pack("<4i", 1, 2, 3, 4) + bytes(48)
b += struct.pack("<4i", -1, -2, -3, -4)
open("external.tosa", "wb").write(b)
PY
