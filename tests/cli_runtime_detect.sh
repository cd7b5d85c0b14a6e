#!/bin/bash
# cli_runtime_detect.sh CTOSA SRC_DIR BUILD_DIR - the ONNX node tests of the
# operators whose output shapes depend on the data (NonZero, Compress,
# NonMaxSuppression, TopK, RoiAlign, If) end to end through the runtime
# (cli_runtime_nodes.py on those tests only), and a Dropout whose mask
# output the lowering computes (a constant model output): each must run
# and match, none may be refused. The full node run is cli_runtime_nodes.sh (long).
set -u
ctosa=$1; src=$2
data=/usr/share/libonnx-testdata/data/node
[ -d "$data" ] || { echo "skipped: $data missing (Debian's libonnx-testdata)"; exit 77; }
/usr/bin/python3 -c 'import numpy, onnx' 2>/dev/null || { echo "skipped: /usr/bin/python3 with numpy and onnx needed"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/node"
n=0
for d in "$data"/test_nonzero* "$data"/test_compress* "$data"/test_nonmaxsuppression* "$data"/test_top_k* \
         "$data"/test_roialign* "$data"/test_if "$data"/test_dropout_default_mask*; do
  [ -d "$d" ] && ln -s "$d" "$tmp/node/" && n=$((n + 1))
done
[ $n -gt 0 ] || { echo "skipped: none of the tests is in $data"; exit 77; }
/usr/bin/python3 "$src/tests/cli_runtime_nodes.py" "$ctosa" "$tmp/node" "$tmp/out" | tee "$tmp/summary.txt"
# the Dropout delegated too: its mask is then an initializer of the
# partitioned model, a model output no node computes
mkdir "$tmp/fp"
for d in "$tmp"/node/test_dropout_default_mask*; do ln -s "$(readlink "$d")" "$tmp/fp/" && n=$((n + 1)); done
/usr/bin/python3 "$src/tests/cli_runtime_nodes.py" "$ctosa" "$tmp/fp" "$tmp/outfp" TOSA-1.0+FP | tee -a "$tmp/summary.txt"
matched=$(grep -E "ran end to end and matched" "$tmp/summary.txt" | awk '{s += $1} END {print s + 0}')
if [ "$matched" != "$n" ]; then
  echo "FAIL: $matched of $n tests ran and matched"
  exit 1
fi
echo "cli_runtime_detect: all $n tests ran and matched"
