#!/bin/bash
# cli_attn_ort.sh CTOSA SRC_DIR BUILD_DIR - Attention, RotaryEmbedding,
# RMSNormalization and a decoder block with a KV cache under TOSA-1.0+FP,
# each against ONNX Runtime and the numpy references written from the
# operator definitions (cli_attn_ort.py; cases in tests/data/lower/attn).
set -u
ctosa=$1; src=$2
py=/usr/bin/python3
"$py" -c 'import numpy' 2>/dev/null || { echo "skipped: /usr/bin/python3 with numpy needed"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ctosa_attn.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
"$py" "$src/tests/cli_attn_ort.py" "$ctosa" "$src" "$tmp"
