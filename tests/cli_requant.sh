#!/bin/bash
# cli_requant.sh CTOSA SRC_DIR BUILD_DIR - `ctosa lower --requant`: the
# default emits one RESCALE per quantized output; `ort` emulates ONNX
# Runtime's float32 rounding of convolutions with extra int32 operators
# (more TOSA ops, the same nodes delegated), leaves Add as it is, is ignored
# under the U55 subset, and both graphs run; a bad value
# is a usage error (exit 2) that writes nothing.
set -u
ctosa=$1; src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL $*"; fail=$((fail + 1)); }
dir=$src/tests/models/mobilenet_v2_x0_25_onednn
[ -f "$dir/model.onnx" ] || { echo "skipped: $dir missing"; exit 77; }
py=/usr/bin/python3
"$py" -c 'import numpy' 2>/dev/null || { echo "skipped: /usr/bin/python3 with numpy needed"; exit 77; }

low() { # name spec-or-target-args...
  local name=$1; shift
  "$ctosa" lower "$dir/model.onnx" "$@" -o "$tmp/$name" -q || bad "lower $name exit $?"
}
low def --spec TOSA-1.0+INT
low rescale --spec TOSA-1.0+INT --requant rescale
low ort --spec TOSA-1.0+INT --requant ort
low u55 --target ethos-u55-128
low u55ort --target ethos-u55-128 --requant ort

cmp -s "$tmp/def/model.part0.tosa" "$tmp/rescale/model.part0.tosa" || bad "--requant rescale differs from the default"
cmp -s "$tmp/u55/model.part0.tosa" "$tmp/u55ort/model.part0.tosa" || bad "--requant ort changed the U55 graph"
"$py" - "$tmp" <<'PY' || fail=$((fail + 1))
import json, sys
t = sys.argv[1]
r = {k: json.load(open("%s/%s/model.report.json" % (t, k))) for k in ("def", "ort")}
ops = {k: sum(sum(p["tosa_ops"].values()) for p in v["partitions"]) for k, v in r.items()}
d = {k: v["nodes_delegated"] for k, v in r.items()}
print("delegated", d, "TOSA ops", ops)
ok = d["def"] == d["ort"] and ops["ort"] > 2 * ops["def"]
# (the default has SELECTs only in the exactly rounded means)
sel = {k: v["partitions"][0]["tosa_ops"].get("SELECT", 0) for k, v in r.items()}
ok = ok and sel["ort"] > sel["def"] + 10
if not ok:
    print("FAIL: expected the same delegation and more ops (with SELECT) under --requant ort")
    sys.exit(1)
PY
# both graphs run on the interpreter
x=$dir/input_0.npy
if [ -f "$x" ]; then
  in=$("$py" -c 'import json,sys; print(json.load(open(sys.argv[1]))["partitions"][0]["inputs"][0]["name"])' "$tmp/def/model.report.json")
  # the partition's input is the quantized tensor: quantize with the report's parameters
  "$py" - "$tmp/def/model.report.json" "$x" "$tmp/q.npy" <<'PY'
import json, sys, numpy as np
p = json.load(open(sys.argv[1]))["partitions"][0]["inputs"][0]
x = np.load(sys.argv[2])
q = np.clip(np.round(x / p["scale"]) + p["zero_point"], 0, 255).astype(np.uint8)
# TOSA has no uint8: the partition's input is an INT8 tensor holding the
# uint8 bits (docs/quantization.md, "uint8")
assert p["dtype"] == "uint8"
np.save(sys.argv[3], q.view(np.int8))
PY
  for k in def ort; do
    "$ctosa" run "$tmp/$k/model.part0.tosa" --input "$in=$tmp/q.npy" -o "$tmp/run_$k" >/dev/null || bad "run $k"
  done
  for k in def ort; do
    n=$(ls "$tmp/run_$k" 2>/dev/null | wc -l)
    [ "$n" = 1 ] || bad "run $k wrote $n files"
  done
fi
# a quantized Add keeps its one RESCALE under --requant ort: ORT's QLinearAdd
# rounds its float32 multiply-adds on the way, so snapping the exact sum
# would move values ORT does not move (exact 122.5000017: ORT gives 123)
adir=$src/tests/data/lower/quant/add_requant_s8
for k in adef aort; do
  extra=(); [ $k = aort ] && extra=(--requant ort)
  "$ctosa" lower "$adir/model.onnx" --spec TOSA-1.0+INT "${extra[@]}" -o "$tmp/$k" -q || bad "lower $k"
done
cmp -s "$tmp/adef/model.part0.tosa" "$tmp/aort/model.part0.tosa" || bad "--requant ort changed a quantized Add"
out=$("$ctosa" lower "$dir/model.onnx" --spec TOSA-1.0+INT --requant fast -o "$tmp/bad" 2>&1); rc=$?
[ $rc = 2 ] || bad "--requant fast: exit $rc"
grep -q "rescale' or 'ort'" <<<"$out" || bad "--requant fast: message: $out"
[ ! -e "$tmp/bad" ] || bad "--requant fast left $tmp/bad"
[ $fail = 0 ] && echo "cli_requant: ok"
exit $((fail > 0))
