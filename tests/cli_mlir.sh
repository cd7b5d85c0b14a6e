#!/bin/bash
# cli_mlir.sh CTOSA SRC_DIR BUILD_DIR - the MLIR text from the command line:
# `ctosa lower --emit mlir` writes <stem>.partN.mlir beside each .tosa (the
# same text as `ctosa dump --format mlir` of that .tosa); `dump --format
# mlir --input` adds @ctosa_run, which mlir-runner executes to the same
# numbers as `ctosa run`; usage errors exit 2 and leave no file.
# The checks needing LLVM 22's mlir-opt / mlir-runner (mlir-22-tools) are
# skipped visibly (exit 77 after the others) when the tools are missing.
set -u
ctosa=$(realpath "$1"); src=$(realpath "$2")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL $*"; fail=$((fail + 1)); }
ok() { echo "ok: $*"; }
bin=${CTOSA_MLIR_BIN:-/usr/lib/llvm-22/bin}
lib=$(dirname "$bin")/lib
model=$src/examples/models/small_cnn.onnx

# --emit mlir beside the .tosa, same text as dump
"$ctosa" lower "$model" --spec TOSA-1.0+FP --emit mlir -o "$tmp/out" -q || bad "lower --emit mlir exit $?"
[ -f "$tmp/out/small_cnn.part0.mlir" ] && ok "--emit mlir wrote small_cnn.part0.mlir" || bad "no small_cnn.part0.mlir"
(cd "$tmp/out" && "$ctosa" dump small_cnn.part0.tosa --format mlir > "$tmp/dump.mlir") || bad "dump --format mlir exit $?"
cmp -s "$tmp/dump.mlir" "$tmp/out/small_cnn.part0.mlir" && ok "dump --format mlir gives the same text" ||
  bad "dump --format mlir differs from --emit mlir"
grep -q '"tosa.conv2d"(' "$tmp/dump.mlir" && grep -q 'loc("conv1"("small_cnn.part0.tosa":' "$tmp/dump.mlir" &&
  ok "generic form with loc(node(file:index))" || bad "no generic conv2d with its location"

# usage errors: exit 2, nothing written
"$ctosa" lower "$model" --spec TOSA-1.0+FP --emit json -o "$tmp/bad" -q 2>"$tmp/err"
[ $? -eq 2 ] && grep -q "expects 'mlir'" "$tmp/err" && [ ! -e "$tmp/bad" ] && ok "--emit json: exit 2" ||
  bad "--emit json not a usage error"
part=$tmp/out/small_cnn.part0.tosa
"$ctosa" dump "$part" --format mlir --input nosuch="$src/examples/models/small_cnn.input_0.npy" -o "$tmp/x.mlir" 2>"$tmp/err"
[ $? -eq 2 ] && grep -q "not a graph input" "$tmp/err" && [ ! -e "$tmp/x.mlir" ] && ok "--input of no graph input: exit 2, no file" ||
  bad "--input nosuch: $(cat "$tmp/err")"
"$ctosa" dump "$part" --format json --input input="$src/examples/models/small_cnn.input_0.npy" 2>"$tmp/err" >/dev/null
[ $? -eq 2 ] && ok "--input without --format mlir: exit 2" || bad "--input with json accepted"
"$ctosa" dump "$part" --format mlir --input input="$src/examples/models/small_cnn.output_0.npy" -o "$tmp/y.mlir" 2>"$tmp/err"
[ $? -eq 2 ] && [ ! -e "$tmp/y.mlir" ] && ok "--input of the wrong shape: exit 2, no file ($(head -c 100 "$tmp/err"))" ||
  bad "--input of the wrong shape accepted"
ls "$tmp" | grep -q tmp && bad "temporary files left: $(ls "$tmp")"

if [ ! -x "$bin/mlir-opt" ] || [ ! -x "$bin/mlir-runner" ]; then
  [ $fail -eq 0 ] || exit 1
  echo "skipped: mlir-opt / mlir-runner not in $bin (apt-get install mlir-22-tools)"; exit 77
fi

"$bin/mlir-opt" --tosa-attach-target="profiles=pro_fp" --tosa-validate=strict-op-spec-alignment \
  "$tmp/out/small_cnn.part0.mlir" -o /dev/null && ok "mlir-opt validates it under pro_fp" || bad "mlir-opt rejects it"
"$bin/mlir-opt" --tosa-attach-target="profiles=pro_int" --tosa-validate=strict-op-spec-alignment \
  "$tmp/out/small_cnn.part0.mlir" -o /dev/null 2>"$tmp/err"
[ $? -ne 0 ] && grep -q "small_cnn.part0.tosa:0:0: error" "$tmp/err" && ok "rejected under pro_int, at the operator's location" ||
  bad "accepted under pro_int"

# @ctosa_run through the documented pipeline (docs/mlir.md) vs ctosa run
in=$src/examples/models/small_cnn.input_0.npy
"$ctosa" dump "$part" --format mlir --input input="$in" -o "$tmp/run.mlir" || bad "dump --input exit $?"
pipeline=$(sed -n 's/^    "\(.*\)"[ \\]*$/\1/p' "$src/tests/mlir_testutil.h" | tr -d '\n' | sed 's/""//g')
"$bin/mlir-opt" --pass-pipeline="$pipeline" "$tmp/run.mlir" -o "$tmp/run.ll" 2>"$tmp/err" || bad "pipeline: $(head -3 "$tmp/err")"
"$bin/mlir-runner" -e ctosa_run -entry-point-result=void \
  -shared-libs="$lib/libmlir_runner_utils.so.22.1,$lib/libmlir_c_runner_utils.so.22.1" "$tmp/run.ll" >"$tmp/printed" 2>"$tmp/err" ||
  bad "mlir-runner: $(head -3 "$tmp/err")"
"$ctosa" run "$part" --input input="$in" -o "$tmp/ref" >/dev/null || bad "ctosa run exit $?"
py=/usr/bin/python3
if "$py" -c 'import numpy' 2>/dev/null; then
  "$py" - "$tmp/printed" "$tmp/ref/output.npy" <<'PY' && ok "mlir-runner output matches ctosa run" || bad "mlir-runner output differs"
import re, sys
import numpy as np
text = open(sys.argv[1]).read().split("data =", 1)[1]
bits = np.array([int(x) for x in re.findall(r"-?\d+", text)], dtype=np.uint64).astype(np.uint32)
got = bits.view(np.float32)
ref = np.load(sys.argv[2]).ravel()
mag = np.abs(ref).max()
rel = np.abs(got - ref).max() / mag
print("  %d values, max |diff| / magnitude = %.3g" % (ref.size, rel))
sys.exit(0 if got.size == ref.size and rel <= 1e-4 else 1)
PY
else
  echo "note: /usr/bin/python3 with numpy missing: the printed values are not compared"
fi
[ $fail -eq 0 ] && echo "all ok" && exit 0
echo "$fail check(s) failed"; exit 1
