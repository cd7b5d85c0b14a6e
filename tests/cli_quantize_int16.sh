#!/bin/bash
# cli_quantize_int16.sh CTOSA SRC_DIR BUILD_DIR - mixed precision
# (`ctosa quantize --int16 N`) on tests/models/quantize's mobilenet_v3_small:
# the tensors made int16 lower the output error against plain int8 on the
# same samples (the quantizer's own run and ONNX Runtime's), the report
# names them with zero point 0 and the MACs they cost, the QDQ model
# (opset 21) still lowers to one TOSA-1.0+INT partition holding every node
# but the boundary QuantizeLinear / DequantizeLinear, where the convolutions
# reading an int16 tensor run as two int8 halves, and the choice is
# deterministic.
set -u
ctosa=$1; src=$2; build=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL $*"; fail=$((fail + 1)); }
py=/usr/bin/python3
"$py" -c 'import numpy, onnx' 2>/dev/null || { echo "skipped: /usr/bin/python3 with numpy and onnx needed"; exit 77; }
m=$src/tests/models/quantize/mobilenet_v3_small_x0_5_64
n=3

"$ctosa" quantize "$m/float.onnx" --calibration input="$m/calib.npy" --max-samples $n -o "$tmp/a" -q || bad "int8 exit $?"
"$ctosa" quantize "$m/float.onnx" --calibration input="$m/calib.npy" --max-samples $n --int16 2 -o "$tmp/m" \
  > "$tmp/m.txt" || bad "--int16 exit $?"
grep -q "^int16: 2 tensors of .* candidates" "$tmp/m.txt" && grep -q "MACs per sample" "$tmp/m.txt" \
  || bad "summary: $(cat "$tmp/m.txt")"
[ -z "$(ls -A "$tmp/m" | grep -v '^float\.')" ] || bad "work files left behind: $(ls -A "$tmp/m")"
"$ctosa" lower "$tmp/m/float.qdq.onnx" --spec TOSA-1.0+INT -o "$tmp/ml" -q || bad "lower the mixed QDQ model"
"$py" - "$tmp/a/float.quant.json" "$tmp/m/float.quant.json" "$tmp/ml/float.qdq.report.json" "$tmp/m/float.qdq.onnx" \
  <<'PY' || bad "mixed report"
import json, sys, onnx
a, q, r = (json.load(open(p)) for p in sys.argv[1:4])
h = q["int16"]
assert len(h["tensors"]) == 2 and h["candidates"] >= 2 and h["runs"] == h["candidates"] + 2, h
assert h["sqnr_db_after"] > h["sqnr_db_before"] + 0.5, h
assert 0 < h["macs_int16_inputs"] < h["macs_model"], h
# against plain int8 on the same samples: measurably better
assert q["outputs"][0]["sqnr_db"] > a["outputs"][0]["sqnr_db"] + 0.5, (q["outputs"], a["outputs"])
t = {x["name"]: x for x in q["tensors"]}
for name in h["tensors"]:
    assert t[name]["dtype"] == "int16" and t[name]["zero_point"] == 0, t[name]
assert sum(x.get("dtype") == "int16" for x in q["tensors"]) == 2
assert sum(x.get("dtype") == "int8" for x in q["tensors"]) > 50
m = onnx.load(sys.argv[4])
assert [o.version for o in m.opset_import if o.domain in ("", "ai.onnx")] == [21]
# one partition, every node but the boundary pair delegated
assert q["lowered"]["partitions"] == 1 and len(r["partitions"]) == 1, (q["lowered"], len(r["partitions"]))
assert sorted(f["op_type"] for f in r["fallback"]) == ["DequantizeLinear", "QuantizeLinear"], r["fallback"]
ops = r["partitions"][0]["tosa_ops"]
# an int16 tensor read by a convolution inside the partition is split
inner = [n for n in h["tensors"] if n != "input"]
if inner:
    assert ops.get("BITWISE_AND", 0) > 0 and ops.get("ARITHMETIC_RIGHT_SHIFT", 0) > 0, ops
PY

# deterministic
"$ctosa" quantize "$m/float.onnx" --calibration input="$m/calib.npy" --max-samples $n --int16 2 -o "$tmp/d" -q \
  || bad "second run"
cmp -s "$tmp/m/float.qdq.onnx" "$tmp/d/float.qdq.onnx" || bad "QDQ model differs between runs"
cmp -s "$tmp/m/float.quant.json" "$tmp/d/float.quant.json" || bad "report differs between runs"

# ONNX Runtime agrees: the mixed model is closer to float than the int8 one
if [ -d "$src/tools/ort/node_modules/onnxruntime-node" ]; then
  "$py" -c "import numpy as np, sys; np.save(sys.argv[2], np.load(sys.argv[1])[:$n])" \
         "$m/calib.npy" "$tmp/cal.npy" || bad "first samples"
  for x in f:$m/float.onnx a:$tmp/a/float.qdq.onnx m:$tmp/m/float.qdq.onnx; do
    node "$src/tools/ort/run_ort.js" "${x#*:}" --out "$tmp/o_${x%%:*}" --batch --quiet "$tmp/cal.npy" \
      || bad "ORT ${x%%:*}"
  done
  "$py" -c "
import json, numpy as np, sys
f, a, m = (np.load(sys.argv[i]).astype(np.float64) for i in (1, 2, 3))
s = lambda q: 10 * np.log10(np.sum(f * f) / np.sum((f - q) ** 2))
r = json.load(open(sys.argv[4]))['outputs'][0]['sqnr_db']
assert s(m) > s(a) + 0.5 and abs(s(m) - r) < 1.5, (s(m), s(a), r)
" "$tmp/o_f/output_0.npy" "$tmp/o_a/output_0.npy" "$tmp/o_m/output_0.npy" "$tmp/m/float.quant.json" \
    || bad "ORT SQNR"
else
  echo "note: onnxruntime-node missing, ORT checks skipped"
fi

# a bad count is a usage error
"$ctosa" quantize "$m/float.onnx" --calibration input="$m/calib.npy" --int16 two -q 2> "$tmp/u.err"
[ $? = 2 ] && grep -q "int16" "$tmp/u.err" || bad "--int16 two: $(cat "$tmp/u.err")"

[ $fail = 0 ] && echo "cli_quantize_int16: ok"
exit $((fail > 0))
