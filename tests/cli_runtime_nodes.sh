#!/bin/bash
# cli_runtime_nodes.sh CTOSA SRC_DIR BUILD_DIR - the ONNX node tests
# (libonnx-testdata) through the runtime with their float nodes on the host
# executor (cli_runtime_nodes.py). Long: only with CTOSA_LONG_TESTS=1.
# Fails when a test runs but gives other numbers than ONNX's, or fails
# other than by a load-time refusal naming the node.
set -u
ctosa=$1; src=$2
[ -n "${CTOSA_LONG_TESTS:-}" ] || { echo "skipped: set CTOSA_LONG_TESTS=1 (about 900 lower + run pairs)"; exit 77; }
data=/usr/share/libonnx-testdata/data/node
[ -d "$data" ] || { echo "skipped: $data missing (Debian's libonnx-testdata)"; exit 77; }
/usr/bin/python3 -c 'import numpy, onnx' 2>/dev/null || { echo "skipped: /usr/bin/python3 with numpy and onnx needed"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
/usr/bin/python3 "$src/tests/cli_runtime_nodes.py" "$ctosa" "$data" "$tmp" | tee "$tmp/summary.txt"
! grep -qE "ran, outputs differ$|run failed" "$tmp/summary.txt"
