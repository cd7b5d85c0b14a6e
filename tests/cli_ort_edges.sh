#!/bin/bash
# cli_ort_edges.sh CTOSA SRC_DIR BUILD_DIR - ONNX operators at the edges of
# their domain, lowered to TOSA, against ONNX Runtime (cli_ort_edges.py):
# Pow on negative and zero bases, infinities and NaN (fp32, fp16, int32,
# constant and input exponents; no POW of a lowered graph ever reads a base
# TOSA leaves unpredictable), LpNormalization of all-zero slices.
set -u
ctosa=$1; src=$2
py=/usr/bin/python3
"$py" -c 'import numpy, onnx' 2>/dev/null || { echo "skipped: /usr/bin/python3 with numpy and onnx needed"; exit 77; }
command -v node >/dev/null || { echo "skipped: node (nodejs) needed for ONNX Runtime"; exit 77; }
[ -d "$src/tools/ort/node_modules/onnxruntime-node" ] || {
  echo "skipped: onnxruntime-node missing (cd tools/ort && npm install --ignore-scripts)"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$py" "$src/tests/cli_ort_edges.py" "$ctosa" "$src" "$tmp"
