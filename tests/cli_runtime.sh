#!/bin/bash
# cli_runtime.sh CTOSA SRC_DIR BUILD_DIR - the partitioned-model runtime from
# the command line: `ctosa run MODEL.partitioned.onnx` against ONNX Runtime
# on the quantized, int64, custom-operator and float-with-CPU-nodes models
# (cli_runtime_ort.py), a partition's uint8 input, `ctosa verify` (table,
# JSON, exit 1 over tolerance) and load-time errors (exit 2).
set -u
ctosa=$1; src=$2; build=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL $*"; fail=$((fail + 1)); }
py=/usr/bin/python3
"$py" -c 'import numpy, onnx' 2>/dev/null || { echo "skipped: /usr/bin/python3 with numpy and onnx needed"; exit 77; }
[ -d "$src/tools/ort/node_modules/onnxruntime-node" ] || {
  echo "skipped: onnxruntime-node missing (cd tools/ort && npm install --ignore-scripts)"; exit 77; }

CTOSA_EXAMPLE_PLUGIN=$build/examples/plugins/libctosa_example_plugin.so \
  "$py" "$src/tests/cli_runtime_ort.py" "$ctosa" "$src" "$tmp" || bad "runtime against ORT"

# A partition whose report marks its input uint8 takes a uint8 array.
q=$src/tests/data/lower/quant/add_requant_u8
"$ctosa" lower "$q/model.onnx" --spec TOSA-1.0+INT -o "$tmp/u8" -q || bad "lower add_requant_u8"
in=$("$py" -c "import json,sys; r=json.load(open(sys.argv[1])); p=r['partitions'][0]['inputs'][0]; print(p['name'], p['dtype'])" \
     "$tmp/u8/model.report.json")
set -- $in
[ "$2" = uint8 ] || bad "add_requant_u8: partition input is $2, not uint8"
"$ctosa" run "$tmp/u8/model.part0.tosa" --input "$1=$q/input_0.npy" -o "$tmp/u8/out1" -q || bad "run part0 with uint8 input"
"$ctosa" run "$tmp/u8/model.partitioned.onnx" --input "$1=$q/input_0.npy" -o "$tmp/u8/out2" -q || bad "run partitioned uint8"
"$py" - "$tmp/u8" <<'PY' || bad "uint8 outputs"
import glob, sys
import numpy as np
d = sys.argv[1]
a = np.load(glob.glob(d + "/out1/*.npy")[0])
b = np.load(glob.glob(d + "/out2/*.npy")[0])
# the partition returns INT8 bits, the model its uint8 value: the same bytes
assert a.dtype == np.int8 and b.dtype == np.uint8, (a.dtype, b.dtype)
assert np.array_equal(a.view(np.uint8), b)
PY
# Without the report beside it, a uint8 array is still refused (no guess).
mkdir -p "$tmp/u8/alone" && cp "$tmp/u8/model.part0.tosa" "$tmp/u8/alone/"
"$ctosa" run "$tmp/u8/alone/model.part0.tosa" --input "$1=$q/input_0.npy" -o "$tmp/u8/out3" -q 2>/dev/null
[ $? = 2 ] || bad "uint8 input without a report should be exit 2"

# verify: table + JSON, exit 0; exit 1 over a tolerance tightened to nothing.
r=$src/tests/data/runtime
node "$src/tools/ort/run_ort.js" "$r/float_mid.onnx" --out "$tmp/ort" --quiet "$r/float_mid_in.npy" || bad "ORT float_mid"
"$ctosa" verify "$r/float_mid.onnx" --spec TOSA-1.0+FP --input x="$r/float_mid_in.npy" \
  --expect y="$tmp/ort/output_0.npy" -o "$tmp/v1" > "$tmp/v1.txt" || bad "verify float_mid exit $?"
grep -q "y .*float .*ok" "$tmp/v1.txt" || bad "verify table: $(cat "$tmp/v1.txt")"
"$py" -c "import json,sys; j=json.load(open(sys.argv[1])); assert j['pass'] and j['outputs'][0]['top1'] == 1" \
  "$tmp/v1/float_mid.verify.json" || bad "verify JSON"
"$ctosa" verify "$r/float_mid.onnx" --spec TOSA-1.0+FP --input x="$r/float_mid_in.npy" \
  --expect y="$tmp/ort/output_0.npy" -o "$tmp/v2" --rtol 0 --json "$tmp/v2.json" > "$tmp/v2.txt"
[ $? = 1 ] || bad "verify over tolerance should exit 1"
grep -q "FAIL: relative error" "$tmp/v2.txt" || bad "verify failure line: $(cat "$tmp/v2.txt")"
"$py" -c "import json,sys; j=json.load(open(sys.argv[1])); assert not j['pass']" "$tmp/v2.json" || bad "verify JSON fail"
"$ctosa" verify "$r/float_mid.onnx" --spec TOSA-1.0+FP --input x="$r/float_mid_in.npy" -o "$tmp/v3" 2>/dev/null
[ $? = 2 ] || bad "verify without --expect should be exit 2"
"$ctosa" verify "$r/float_mid.onnx" --spec TOSA-1.0+FP --input x="$r/float_mid_in.npy" \
  --expect nope="$tmp/ort/output_0.npy" -o "$tmp/v4" 2>"$tmp/v4.err"
[ $? = 2 ] && grep -q "'nope' is not a model output" "$tmp/v4.err" || bad "verify unknown output: $(cat "$tmp/v4.err")"

# Bad input at load: a missing partition file names it, exit 2.
"$ctosa" lower "$r/float_mid.onnx" --spec TOSA-1.0+FP -o "$tmp/m" -q
rm "$tmp/m/float_mid.part1.tosa"
"$ctosa" run "$tmp/m/float_mid.partitioned.onnx" --input x="$r/float_mid_in.npy" -o "$tmp/m/out" 2>"$tmp/m.err"
[ $? = 2 ] && grep -q "float_mid.part1.tosa" "$tmp/m.err" && [ ! -e "$tmp/m/out" ] || bad "missing partition: $(cat "$tmp/m.err")"
rm "$tmp/m/float_mid.report.json"
"$ctosa" run "$tmp/m/float_mid.partitioned.onnx" --input x="$r/float_mid_in.npy" 2>"$tmp/m2.err"
[ $? = 2 ] && grep -q "no report" "$tmp/m2.err" || bad "missing report: $(cat "$tmp/m2.err")"

[ $fail = 0 ] && echo "cli_runtime: all checks passed"
exit $((fail > 0))
