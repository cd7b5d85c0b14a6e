#!/bin/bash
# cli_memcap.sh CTOSA SRC_DIR BUILD_DIR - the --max-memory cap of `ctosa
# lower` and `ctosa run`: a tiny cap stops a real model with exit 2 and a
# message naming the limit and the flag, leaving no output files; the
# default cap lowers and runs it; malformed SIZE values are usage errors.
set -u
ctosa=$1; src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL $*"; fail=$((fail + 1)); }
expect() { # rc want_rc out pattern what
  [ "$1" = "$2" ] || bad "$5: exit $1, expected $2 (output: $3)"
  [ -z "$4" ] || grep -q -- "$4" <<<"$3" || bad "$5: output lacks '$4': $3"
}

model=$src/tests/models/mobilenet_v2_x0_25_op13/model.onnx
[ -f "$model" ] || { echo "skipped: $model missing"; exit 77; }

# lower: tiny caps fail at different stages (decoded constants, a node,
# building the partition)
# and write nothing, not even the output folder.
for cap in 64K 700K 1200K 2M; do
  out=$("$ctosa" lower "$model" --spec TOSA-1.0+FP -o "$tmp/low$cap" --max-memory "$cap" -q 2>&1); rc=$?
  expect $rc 2 "$out" "memory limit of" "lower --max-memory $cap"
  expect $rc 2 "$out" "--max-memory" "lower --max-memory $cap"
  [ ! -e "$tmp/low$cap" ] || bad "lower --max-memory $cap left $(ls "$tmp/low$cap")"
done
# The message gives the cap in bytes.
out=$("$ctosa" lower "$model" --spec TOSA-1.0+FP -o "$tmp/x" --max-memory 64K -q 2>&1)
grep -q "limit of 65536 bytes" <<<"$out" || bad "64K is not reported as 65536 bytes: $out"
# Default cap (8G) and an explicit generous one both succeed with the same files.
out=$("$ctosa" lower "$model" --spec TOSA-1.0+FP -o "$tmp/def" -q 2>&1); rc=$?
expect $rc 0 "$out" "" "lower with the default cap"
out=$("$ctosa" lower "$model" --spec TOSA-1.0+FP -o "$tmp/big" --max-memory 64M -q 2>&1); rc=$?
expect $rc 0 "$out" "" "lower --max-memory 64M"
for f in "$tmp/def"/*; do cmp -s "$f" "$tmp/big/$(basename "$f")" || bad "$(basename "$f") differs under --max-memory 64M"; done
[ -f "$tmp/def/model.part0.tosa" ] || bad "default lower wrote no model.part0.tosa"

# run: small_cnn, lowered whole to one partition.
cnn=$src/examples/models/small_cnn.onnx
"$ctosa" lower "$cnn" --spec TOSA-1.0+FP -o "$tmp/cnn" -q || bad "lower small_cnn"
tosa=$tmp/cnn/small_cnn.part0.tosa
in=input=$src/examples/models/small_cnn.input_0.npy
out=$("$ctosa" run "$tosa" --input "$in" -o "$tmp/run4k" --max-memory 4K -q 2>&1); rc=$?
expect $rc 2 "$out" "memory limit of 4096 bytes" "run --max-memory 4K"
expect $rc 2 "$out" "--max-memory" "run --max-memory 4K"
[ ! -e "$tmp/run4k" ] || bad "run --max-memory 4K left $(ls "$tmp/run4k")"
out=$("$ctosa" run "$tosa" --input "$in" -o "$tmp/runok" -q 2>&1); rc=$?
expect $rc 0 "$out" "" "run with the default cap"
[ -n "$(ls "$tmp/runok" 2>/dev/null)" ] || bad "run with the default cap wrote no output"

# Malformed SIZE values: usage errors for both commands.
for s in abc -5 1T 0 "" 12KB " 5" 5M5 99999999999999999999 17179869184G; do
  out=$("$ctosa" lower "$model" --spec TOSA-1.0+FP -o "$tmp/u" --max-memory "$s" -q 2>&1); rc=$?
  expect $rc 2 "$out" "--max-memory expects a byte count" "lower --max-memory '$s'"
  out=$("$ctosa" run "$tosa" --input "$in" -o "$tmp/u" --max-memory "$s" -q 2>&1); rc=$?
  expect $rc 2 "$out" "--max-memory expects a byte count" "run --max-memory '$s'"
done
[ ! -e "$tmp/u" ] || bad "a usage error left output files"
out=$("$ctosa" lower "$model" --spec TOSA-1.0+FP -o "$tmp/u" --max-memory 2>&1); rc=$?
expect $rc 2 "$out" "needs a value" "lower --max-memory without a value"
# --help documents the flag and its default.
"$ctosa" lower --help | grep -q -- "--max-memory SIZE.*" || bad "lower --help lacks --max-memory"
"$ctosa" lower --help | grep -q "default 8G" || bad "lower --help lacks the 8G default"
"$ctosa" run --help | grep -q "at most 16G" || bad "run --help lacks the 16G default"

# What one node allocates while it is lowered counts against the cap before
# it is allocated: a Resize whose interpolation matrix needs 268 MB stops
# under a 100M cap at once (exit 2, nothing written) and
# is lowered under the default cap; one needing 2.6 GB is left to the CPU
# with its reason whatever the cap.
lim=$src/tests/data/lower/limits
out=$( ("$ctosa" lower "$lim/resize_matrix_large.onnx" --spec TOSA-1.0+FP -o "$tmp/rl" --max-memory 100M -q) 2>&1); rc=$?
expect $rc 2 "$out" "at node #0 'Resize#0'), which passes the memory limit of 104857600 bytes" "large resize matrix under 100M"
[ ! -e "$tmp/rl" ] || bad "large resize matrix under 100M left $(ls "$tmp/rl")"
out=$("$ctosa" lower "$lim/resize_matrix_large.onnx" --spec TOSA-1.0+FP -o "$tmp/rl2" -q 2>&1); rc=$?
expect $rc 0 "$out" "" "large resize matrix under the default cap"
grep -q '"nodes_delegated": 1' "$tmp/rl2/resize_matrix_large.report.json" || bad "large resize matrix not delegated"
out=$( ("$ctosa" lower "$lim/resize_matrix_huge.onnx" --spec TOSA-1.0+FP -o "$tmp/rh" -q) 2>&1); rc=$?
expect $rc 0 "$out" "" "huge resize matrix"
grep -q '"code": "level_limit", "reason": "Resize: axis 2 from 16384 to 20000 elements needs an interpolation matrix of more than 2^26 entries"' \
  "$tmp/rh/resize_matrix_huge.report.json" || bad "huge resize matrix: no level_limit fallback in $(cat "$tmp/rh/resize_matrix_huge.report.json")"

[ $fail = 0 ] && echo "cli_memcap: all checks passed"
exit $((fail > 0))
