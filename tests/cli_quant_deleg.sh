#!/bin/bash
# cli_quant_deleg.sh CTOSA SRC_DIR BUILD_DIR - delegation and truthful
# boundaries of QDQ models (cli_quant_deleg.py): DequantizeLinear straight
# into QuantizeLinear (same and differing parameters, uint8 / int8 / int16)
# delegated under TOSA-1.0+INT with only the boundary Q / DQ on the CPU; a
# folded DequantizeLinear read by two partitions; every partition input and
# output described by the report and the partitioned ONNX with its ONNX
# type, scale and zero point; results against ONNX Runtime.
set -u
ctosa=$1; src=$2
py=/usr/bin/python3
"$py" -c 'import numpy, onnx' 2>/dev/null || { echo "skipped: /usr/bin/python3 with numpy and onnx needed"; exit 77; }
command -v node >/dev/null || { echo "skipped: node (nodejs) needed for ONNX Runtime"; exit 77; }
[ -d "$src/tools/ort/node_modules/onnxruntime-node" ] || {
  echo "skipped: onnxruntime-node missing (cd tools/ort && npm install --ignore-scripts)"; exit 77; }
tmp=${CTOSA_KEEP_TMP:-$(mktemp -d)}
[ -n "${CTOSA_KEEP_TMP:-}" ] || trap 'rm -rf "$tmp"' EXIT
"$py" "$src/tests/cli_quant_deleg.py" "$ctosa" "$src" "$tmp"
