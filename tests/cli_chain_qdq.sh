#!/bin/bash
# cli_chain_qdq.sh CTOSA SRC_DIR BUILD_DIR - the exact input QuantizeLinear
# of a quantized network lowered under TOSA-1.0+INT+FP (some 37 fp32 /
# int32 / bool element-wise operators) runs as one fused element-wise
# group, and its int8 result, and the network's output, are the bytes of
# the plain reference loops (which run every operator on its own).
set -u
ctosa=$1; src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL $*"; fail=$((fail + 1)); }
dir=$src/tests/models/mobilenet_v2_x0_25_onednn
[ -f "$dir/model.onnx" ] || { echo "skipped: $dir missing"; exit 77; }
"$ctosa" lower "$dir/model.onnx" --spec TOSA-1.0+INT+FP -o "$tmp/m" -q || bad "lower exit $?"
m=$tmp/m/model.part0.tosa
# the quantized input: what the first TRANSPOSE reads
q=$("$ctosa" dump "$m" | sed -n 's/^ *#[0-9]* TRANSPOSE (\([^)]*\)).*/\1/p' | head -1)
[ -n "$q" ] || bad "no TRANSPOSE after the input QuantizeLinear"
in=$("$ctosa" dump "$m" | sed -n 's/^ *inputs: //p' | head -1)
for t in 1 2; do
  "$ctosa" run "$m" --input "$in=$dir/input_0.npy" --outputs "$q" -o "$tmp/f$t" --threads $t --profile \
    > "$tmp/prof$t" 2>&1 || bad "fused run exit $?"
  grep -q "fused element-wise operators" "$tmp/prof$t" || bad "no fused group in the profile ($t threads)"
done
"$ctosa" run "$m" --input "$in=$dir/input_0.npy" --outputs "$q" -o "$tmp/r" --reference -q || bad "reference exit $?"
f=$(ls "$tmp/r" | head -1)
[ -n "$f" ] || bad "the reference run wrote nothing"
for t in 1 2; do
  cmp -s "$tmp/f$t/$f" "$tmp/r/$f" || bad "quantized input differs from the reference loops ($t threads)"
done
exit $((fail > 0))
