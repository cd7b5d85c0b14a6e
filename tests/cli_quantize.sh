#!/bin/bash
# cli_quantize.sh CTOSA SRC_DIR BUILD_DIR - `ctosa quantize` on the models
# of tests/models/quantize (made by tools/models/make_quantize_corpus.py
# --small): the QDQ model lowers to one TOSA-1.0+INT partition holding every
# node but the boundary QuantizeLinear / DequantizeLinear (int8 and int16),
# an operator the INT profile cannot run stays float with its reason, the
# report's fields, SQNR floors against the float model, ONNX Runtime runs
# the QDQ model (when tools/ort is installed), determinism, the folder form
# of calibration data, and bad calibration files (exit 2, nothing written).
set -u
ctosa=$1; src=$2; build=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL $*"; fail=$((fail + 1)); }
py=/usr/bin/python3
"$py" -c 'import numpy' 2>/dev/null || { echo "skipped: /usr/bin/python3 with numpy needed"; exit 77; }
m=$src/tests/models/quantize/mobilenet_v3_small_x0_5_64
t=$src/tests/models/quantize/tiny_concat_sin

# mobilenet_v3_small (HardSwish islands, squeeze-excite gates, residual Adds);
# at width 0.5 and 64x64 its random-weight outputs are tiny (std ~0.01), so
# the SQNR floors are low: they guard against regressions, docs/quantize.md
# has the figures of the full-size networks
"$ctosa" quantize "$m/float.onnx" --calibration input="$m/calib.npy" -o "$tmp/a" > "$tmp/a.txt" || bad "quantize exit $?"
grep -q "lowered under the target: 1 partition" "$tmp/a.txt" || bad "summary: $(cat "$tmp/a.txt")"
[ -f "$tmp/a/float.qdq.onnx" ] && [ -f "$tmp/a/float.quant.json" ] || bad "outputs missing"
[ -z "$(ls -A "$tmp/a" | grep -v '^float\.')" ] || bad "work files left behind: $(ls -A "$tmp/a")"
"$ctosa" lower "$tmp/a/float.qdq.onnx" --spec TOSA-1.0+INT -o "$tmp/al" -q || bad "lower the QDQ model"
"$py" - "$tmp/a/float.quant.json" "$tmp/al/float.qdq.report.json" 10.0 int8 <<'PY' || bad "int8 report"
import json, sys
q = json.load(open(sys.argv[1])); r = json.load(open(sys.argv[2]))
floor, act = float(sys.argv[3]), sys.argv[4]
assert q["activations"] == act and q["method"] == ("mse" if act == "int8" else "minmax"), q["method"]
assert q["bias_correction"] == "float", q["bias_correction"]
assert q["float_nodes"] == [], q["float_nodes"]
assert q["outputs"][0]["sqnr_db"] > floor, q["outputs"]
assert q["lowered"]["partitions"] == 1
ts = [t for t in q["tensors"] if "scale" in t]
assert len(ts) > 50 and all(t["scale"] > 0 and t["range"][0] <= 0 <= t["range"][1] for t in ts)
if act == "int16":
    assert all(t["zero_point"] == 0 for t in ts)
assert len(r["partitions"]) == 1, len(r["partitions"])
fb = sorted(f["op_type"] for f in r["fallback"])
assert fb == ["DequantizeLinear", "QuantizeLinear"], fb
# nothing float inside: the partition's boundary tensors are integers
p = r["partitions"][0]
assert all(io["dtype"] == act for io in p["inputs"] + p["outputs"]), p["inputs"] + p["outputs"]
ops = p["tosa_ops"]
assert ops.get("TABLE", 0) > 0 and ops.get("DEPTHWISE_CONV2D", 0) > 0, ops
PY

# the same with int16 activations (EXT-INT16)
"$ctosa" quantize "$m/float.onnx" --calibration input="$m/calib.npy" --activations int16 -o "$tmp/b" -q || bad "int16 exit $?"
"$ctosa" lower "$tmp/b/float.qdq.onnx" --spec TOSA-1.0+INT+int16 -o "$tmp/bl" -q || bad "lower int16"
"$py" - "$tmp/b/float.quant.json" "$tmp/bl/float.qdq.report.json" 18.0 int16 <<'PY' || bad "int16 report"
import json, sys
q = json.load(open(sys.argv[1])); r = json.load(open(sys.argv[2]))
assert q["activations"] == "int16" and q["spec"] == "TOSA-1.0+INT+int16"
assert q["outputs"][0]["sqnr_db"] > float(sys.argv[3]), q["outputs"]
assert len(r["partitions"]) == 1
assert sorted(f["op_type"] for f in r["fallback"]) == ["DequantizeLinear", "QuantizeLinear"]
assert all(t["zero_point"] == 0 for t in q["tensors"] if "scale" in t)
PY
# int16 without EXT-INT16 in the spec is a usage error
"$ctosa" quantize "$m/float.onnx" --calibration input="$m/calib.npy" --activations int16 --spec TOSA-1.0+INT \
  -o "$tmp/c" -q 2> "$tmp/c.err"
[ $? = 2 ] && grep -q "int16" "$tmp/c.err" || bad "int16 without +int16: $(cat "$tmp/c.err")"

# sequential bias correction: measured level by level on the quantized
# model, it matches the calibration samples' output means better than the
# prediction from the float run (11.5 dB with float, 13.9 dB sequential)
"$ctosa" quantize "$m/float.onnx" --calibration input="$m/calib.npy" --bias-correction sequential -o "$tmp/s" -q \
  || bad "sequential exit $?"
"$py" - "$tmp/a/float.quant.json" "$tmp/s/float.quant.json" <<'PY' || bad "sequential report"
import json, sys
a = json.load(open(sys.argv[1])); s = json.load(open(sys.argv[2]))
assert s["bias_correction"] == "sequential" and s["lowered"]["partitions"] == 1, s["lowered"]
assert s["outputs"][0]["sqnr_db"] > a["outputs"][0]["sqnr_db"] + 1.0, (s["outputs"], a["outputs"])
# the ranges are the same: only biases move
assert [t.get("scale") for t in s["tensors"]] == [t.get("scale") for t in a["tensors"]]
PY
[ -z "$(ls -A "$tmp/s" | grep -v '^float\.')" ] || bad "sequential: work files left behind: $(ls -A "$tmp/s")"
"$ctosa" quantize "$m/float.onnx" --calibration input="$m/calib.npy" --bias-correction half -q 2> "$tmp/bc.err"
[ $? = 2 ] && grep -q "bias-correction" "$tmp/bc.err" || bad "unknown --bias-correction: $(cat "$tmp/bc.err")"

# output-aware range search: on the calibration samples it only keeps a
# range that lowers the error at the output, and finds some on
# mobilenet_v3_small (about 16.5 to 22 dB on 3 samples); the search is
# deterministic (tiny model, twice)
"$ctosa" quantize "$m/float.onnx" --calibration input="$m/calib.npy" --range-search --max-samples 3 -o "$tmp/r" -q \
  || bad "range search exit $?"
"$py" - "$tmp/r/float.quant.json" <<'PY' || bad "range search report"
import json, sys
r = json.load(open(sys.argv[1]))
s = r["range_search"]
assert r["lowered"]["partitions"] == 1 and r["samples"] == 3, (r["lowered"], r["samples"])
assert 0 < s["changed"] < s["groups"] and s["groups"] + 1 < s["runs"] <= 3 * s["groups"] + 1, s
assert s["sqnr_db_after"] > s["sqnr_db_before"] + 3.0, s
PY
[ -z "$(ls -A "$tmp/r" | grep -v '^float\.')" ] || bad "range search: work files left behind: $(ls -A "$tmp/r")"
for k in 1 2; do
  "$ctosa" quantize "$t/float.onnx" --calibration x="$t/calib.npy" --range-search -o "$tmp/rt$k" -q \
    || bad "tiny range search exit $?"
done
cmp -s "$tmp/rt1/float.qdq.onnx" "$tmp/rt2/float.qdq.onnx" || bad "range search: QDQ model differs between runs"
cmp -s "$tmp/rt1/float.quant.json" "$tmp/rt2/float.quant.json" || bad "range search: report differs between runs"
"$py" - "$tmp/rt1/float.quant.json" <<'PY' || bad "tiny range search report"
import json, sys
r = json.load(open(sys.argv[1]))
s = r["range_search"]
assert s["sqnr_db_after"] >= s["sqnr_db_before"] and s["changed"] >= 1, s
# the final model (its bias corrections follow the new ranges) stays close
# to the one the search measured last
assert abs(r["outputs"][0]["sqnr_db"] - s["sqnr_db_after"]) < 0.5, (r["outputs"], s)
PY

# determinism, and the folder form of the calibration data
"$ctosa" quantize "$m/float.onnx" --calibration "$m/calib.npy" -o "$tmp/d" -q || bad "second run"
cmp -s "$tmp/a/float.qdq.onnx" "$tmp/d/float.qdq.onnx" || bad "QDQ model differs between runs"
cmp -s "$tmp/a/float.quant.json" "$tmp/d/float.quant.json" || bad "report differs between runs"
mkdir -p "$tmp/folder"
"$py" -c "
import numpy as np, sys
a = np.load(sys.argv[1])
for i, s in enumerate(a): np.save(sys.argv[2] + '/s%02d.npy' % i, s)
" "$m/calib.npy" "$tmp/folder" || bad "split samples"
"$ctosa" quantize "$m/float.onnx" --calibration input="$tmp/folder" -o "$tmp/e" -q || bad "folder calibration"
cmp -s "$tmp/a/float.qdq.onnx" "$tmp/e/float.qdq.onnx" || bad "folder and stacked calibration differ"

# cross-layer equalization: the equalized float model computes what the
# original does (both lowered under TOSA-1.0+FP and run on a calibration
# sample and on a fresh one), the tensors between the pairs are scaled (not
# a no-op), Relu6 / HardSwish pairs are counted as left alone, the QDQ model
# still lowers to one partition, and the output is deterministic
for k in 1 2; do
  "$ctosa" quantize "$m/float.onnx" --calibration input="$m/calib.npy" --equalize -o "$tmp/q$k" > "$tmp/q$k.txt" \
    || bad "equalize exit $?"
done
grep -q "equalized: [1-9][0-9]* convolution pairs" "$tmp/q1.txt" || bad "equalize summary: $(cat "$tmp/q1.txt")"
for f in float.qdq.onnx float.quant.json float.equalized.onnx; do
  cmp -s "$tmp/q1/$f" "$tmp/q2/$f" || bad "equalize: $f differs between runs"
done
"$py" - "$tmp/a/float.quant.json" "$tmp/q1/float.quant.json" <<'PY' || bad "equalize report"
import json, sys
a = json.load(open(sys.argv[1])); q = json.load(open(sys.argv[2]))
e = q["equalize"]
assert "equalize" not in a
assert e["pairs"] >= 5 and e["sweeps"] >= 2 and e["model"] == "float.equalized.onnx", e
assert e["skipped_other"] >= 1 and e["first_max_scale"] > 1.05, e
assert q["lowered"]["partitions"] == 1 and q["float_nodes"] == [], q["lowered"]
assert q["outputs"][0]["sqnr_db"] > 8.0, q["outputs"]
ta = {t["name"]: t for t in a["tensors"]}; tq = {t["name"]: t for t in q["tensors"]}
assert ta.keys() == tq.keys()
# the tensors between the pairs have new ranges; the model output has not
moved = [n for n in ta if abs(tq[n]["max"] - ta[n]["max"]) > 0.01 * abs(ta[n]["max"]) + 1e-9]
assert len(moved) >= e["pairs"], (len(moved), e)
out = q["outputs"][0]["name"]
assert out not in moved and abs(tq[out]["min"] - ta[out]["min"]) <= 1e-4 * abs(ta[out]["min"]), (tq[out], ta[out])
PY
"$py" - "$m/calib.npy" "$tmp/eqin" <<'PY' || bad "equalize inputs"
import numpy as np, os, sys
c = np.load(sys.argv[1]); os.makedirs(sys.argv[2])
np.save(sys.argv[2] + "/s0.npy", c[0].reshape((1,) + c.shape[-3:]).astype(np.float32))
np.save(sys.argv[2] + "/s1.npy", np.random.default_rng(5).standard_normal((1,) + c.shape[-3:]).astype(np.float32))
PY
for v in orig:$m/float.onnx eq:$tmp/q1/float.equalized.onnx; do
  "$ctosa" lower "${v#*:}" --spec TOSA-1.0+FP -o "$tmp/fl_${v%%:*}" -q || bad "lower the ${v%%:*} float model"
  for k in 0 1; do
    "$ctosa" run "$tmp/fl_${v%%:*}"/*.partitioned.onnx --input input="$tmp/eqin/s$k.npy" \
      -o "$tmp/fo_${v%%:*}$k" -q || bad "run the ${v%%:*} float model"
  done
done
"$py" - "$tmp" <<'PY' || bad "the equalized float model computes something else"
import glob, numpy as np, sys
for k in (0, 1):
    a = np.load(glob.glob(sys.argv[1] + "/fo_orig%d/*.npy" % k)[0]).astype(np.float64)
    b = np.load(glob.glob(sys.argv[1] + "/fo_eq%d/*.npy" % k)[0]).astype(np.float64)
    d = np.max(np.abs(a - b)); r = np.max(np.abs(a))
    assert a.shape == b.shape and r > 0 and d <= 1e-4 * r, (k, d, r)
PY

# mixed precision by MAC budget (--int16 auto, --int16-budget P): it picks
# int16 tensors (on this model it must find some: each of the first few
# lowers the calibration noise by well over 1%), the convolutions reading
# them stay within the budget, the summary and the report say the share of
# MACs run twice, the model still lowers to one TOSA-1.0+INT partition with
# every node but the boundary pair (int16 tensors inside it), the SQNR
# does not fall, and the output is deterministic; a tight budget takes
# fewer tensors and still keeps to it
for k in 1 2; do
  "$ctosa" quantize "$m/float.onnx" --calibration input="$m/calib.npy" --int16 auto -o "$tmp/ma$k" > "$tmp/ma$k.txt" \
    || bad "--int16 auto exit $?"
done
grep -q "MACs per sample ([0-9.]*%, budget 25%), run twice" "$tmp/ma1.txt" || bad "--int16 auto summary: $(cat "$tmp/ma1.txt")"
for f in float.qdq.onnx float.quant.json; do
  cmp -s "$tmp/ma1/$f" "$tmp/ma2/$f" || bad "--int16 auto: $f differs between runs"
done
"$ctosa" quantize "$m/float.onnx" --calibration input="$m/calib.npy" --int16-budget 3 -o "$tmp/mb" -q \
  || bad "--int16-budget exit $?"
"$ctosa" lower "$tmp/ma1/float.qdq.onnx" --spec TOSA-1.0+INT -o "$tmp/mal" -q || bad "lower the --int16 auto model"
"$py" - "$tmp/a/float.quant.json" "$tmp/ma1/float.quant.json" "$tmp/mb/float.quant.json" \
  "$tmp/mal/float.qdq.report.json" <<'PY' || bad "--int16 auto report"
import json, sys
a, q, b, r = (json.load(open(p)) for p in sys.argv[1:5])
h, hb = q["int16"], b["int16"]
assert "int16" not in a
assert h["mode"] == "budget" and h["budget_pct"] == 25 and hb["mode"] == "budget" and hb["budget_pct"] == 3, (h, hb)
assert len(h["tensors"]) >= 2 and h["sqnr_db_after"] > h["sqnr_db_before"] + 1.0, h
for x in (h, hb):
    assert x["runs"] == x["candidates"] + 2, x  # one run per candidate: no more
    assert abs(x["macs_twice_pct"] - 100 * x["macs_int16_inputs"] / x["macs_model"]) < 1e-6, x
    assert 0 <= x["macs_twice_pct"] <= x["budget_pct"] * (1 + 1e-9), x
assert len(hb["tensors"]) < len(h["tensors"]), (hb, h)
t = {x["name"]: x for x in q["tensors"]}
assert all(t[n]["dtype"] == "int16" and t[n]["zero_point"] == 0 for n in h["tensors"]), h
assert q["outputs"][0]["sqnr_db"] > a["outputs"][0]["sqnr_db"] + 1.0, (q["outputs"], a["outputs"])
assert q["lowered"]["partitions"] == 1 and q["float_nodes"] == [], q["lowered"]
assert len(r["partitions"]) == 1, len(r["partitions"])
fb = sorted(f["op_type"] for f in r["fallback"])
assert fb == ["DequantizeLinear", "QuantizeLinear"], fb
PY
"$ctosa" quantize "$m/float.onnx" --calibration input="$m/calib.npy" --int16 most -q 2> "$tmp/i16.err"
[ $? = 2 ] && grep -q "auto or a tensor count" "$tmp/i16.err" || bad "--int16 most: $(cat "$tmp/i16.err")"
for p in 0 101; do
  "$ctosa" quantize "$m/float.onnx" --calibration input="$m/calib.npy" --int16-budget $p -q 2> "$tmp/i16.err"
  [ $? = 2 ] && grep -q "int16-budget" "$tmp/i16.err" || bad "--int16-budget $p: $(cat "$tmp/i16.err")"
done

# an operator the INT profile cannot run (Sin) stays float, with its reason;
# MaxPool, the Concat of two branches and x * Sigmoid(x) are quantized
"$ctosa" quantize "$t/float.onnx" --calibration x="$t/calib.npy" -o "$tmp/t" -q || bad "tiny exit $?"
"$py" - "$tmp/t/float.quant.json" <<'PY' || bad "tiny report"
import json, sys
q = json.load(open(sys.argv[1]))
assert [(f["node"], f["op_type"]) for f in q["float_nodes"]] == [("sin", "Sin")], q["float_nodes"]
assert "not" in q["float_nodes"][0]["reason"] or "TOSA" in q["float_nodes"][0]["reason"], q["float_nodes"]
t = {x["name"]: x for x in q["tensors"]}
# the concat inputs share the output's parameters when every input spans at
# least half of its range; MaxPool keeps its input's
w = lambda n: t[n]["range"][1] - t[n]["range"][0]
share = all(w(n) >= 0.5 * w("cat") for n in ("c1", "c2"))
same = [(t[n]["scale"], t[n]["zero_point"]) == (t["cat"]["scale"], t["cat"]["zero_point"]) for n in ("c1", "c2")]
assert all(same) == share, (t["c1"], t["c2"], t["cat"])
assert (t["p0"]["scale"], t["p0"]["zero_point"]) == (t["r0"]["scale"], t["r0"]["zero_point"])
assert t["sg"].get("quantized") is False and "scale" in t["silu"], (t["sg"], t["silu"])
assert t["c0"].get("fused") and "scale" not in t["c0"], t["c0"]
assert q["outputs"][0]["sqnr_db"] > 20, q["outputs"]
assert q["lowered"]["partitions"] == 2, q["lowered"]
PY

# ONNX Runtime runs the QDQ models; on the calibration samples its SQNR
# against the float model is what ctosa's integer run reported
if [ -d "$src/tools/ort/node_modules/onnxruntime-node" ]; then
  for x in "a $m" "b $m" "t $t"; do
    set -- $x
    node "$src/tools/ort/run_ort.js" "$2/float.onnx" --out "$tmp/o_f$1" --batch --quiet "$2/calib.npy" || bad "ORT float $1"
    node "$src/tools/ort/run_ort.js" "$tmp/$1/float.qdq.onnx" --out "$tmp/o_q$1" --batch --quiet "$2/calib.npy" \
      || bad "ORT on the QDQ model $1"
    "$py" -c "
import json, numpy as np, sys
f = np.load(sys.argv[1]).astype(np.float64); q = np.load(sys.argv[2]).astype(np.float64)
s = 10 * np.log10(np.sum(f * f) / np.sum((f - q) ** 2))
r = json.load(open(sys.argv[3]))['outputs'][0]['sqnr_db']
assert abs(s - r) < 1.5, (s, r)
" "$tmp/o_f$1/output_0.npy" "$tmp/o_q$1/output_0.npy" "$tmp/$1/float.quant.json" || bad "ORT SQNR $1"
  done
else
  echo "note: onnxruntime-node missing, ORT checks skipped"
fi

# bad calibration data: exit 2, the file named, nothing written
"$py" - "$tmp" <<'PY' || bad "make bad files"
import numpy as np, sys
d = sys.argv[1]
np.save(d + "/shape.npy", np.zeros((4, 3, 32, 32), np.float32))
np.save(d + "/dtype.npy", np.zeros((4, 1, 3, 64, 64), np.int64))
np.save(d + "/empty.npy", np.zeros((0, 1, 3, 64, 64), np.float32))
np.save(d + "/nan.npy", np.full((1, 1, 3, 64, 64), np.nan, np.float32))
open(d + "/trunc.npy", "wb").write(open(d + "/shape.npy", "rb").read()[:200])
PY
for f in shape dtype empty nan trunc; do
  "$ctosa" quantize "$m/float.onnx" --calibration input="$tmp/$f.npy" -o "$tmp/bad_$f" -q 2> "$tmp/$f.err"
  rc=$?
  [ $rc = 2 ] || bad "$f.npy: exit $rc, want 2"
  grep -q "$f.npy" "$tmp/$f.err" || bad "$f.npy: message does not name the file: $(cat "$tmp/$f.err")"
  [ -z "$(ls -A "$tmp/bad_$f" 2>/dev/null)" ] || bad "$f.npy: output left: $(ls -A "$tmp/bad_$f")"
done
grep -q "float32" "$tmp/dtype.err" || bad "dtype message: $(cat "$tmp/dtype.err")"
grep -q "empty" "$tmp/empty.err" || bad "empty message: $(cat "$tmp/empty.err")"
grep -q "\[N,1,3,64,64\]" "$tmp/shape.err" || bad "shape message: $(cat "$tmp/shape.err")"
"$ctosa" quantize "$m/float.onnx" --calibration nosuch="$m/calib.npy" -o "$tmp/bad_name" -q 2> "$tmp/n.err"
[ $? = 2 ] && grep -q "no input 'nosuch'" "$tmp/n.err" || bad "unknown input: $(cat "$tmp/n.err")"
"$ctosa" quantize "$m/float.onnx" -o "$tmp/bad_none" -q 2>/dev/null
[ $? = 2 ] || bad "missing --calibration should be exit 2"
"$ctosa" quantize "$m/float.onnx" --calibration input="$m/calib.npy" --method nosuch -q 2>/dev/null
[ $? = 2 ] || bad "unknown --method should be exit 2"

[ $fail = 0 ] && echo "cli_quantize: ok"
exit $((fail > 0))
