#!/bin/sh
# Generate the whole model corpus (everything too big to commit) into OUT
# (default: build-models/ at the top of the repo, ignored by git).
#   sh tools/models/make_all.sh [OUT]
# Needs Debian's python3-torch, python3-torchvision, python3-onnx; ONNX
# Runtime outputs are added when tools/ort is installed (npm, see docs/models.md).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/../../build-models}
py=/usr/bin/python3
$py "$here/make_models.py" --out "$out"
$py "$here/make_quantized.py" --out "$out"
$py "$here/make_llm.py" --preset 64mb --out "$out/llm_64mb_fp32" --check
$py "$here/make_llm.py" --preset 64mb --int8 --out "$out/llm_64mb_int8" --check
echo "make_all: corpus in $out" >&2
