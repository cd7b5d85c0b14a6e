#!/bin/bash
# cli_bigfile.sh CTOSA SRC_DIR BUILD_DIR - the tools on an LLM-shaped TOSA
# file in the external (offset/size) layout. bench/bench_bigfile --make
# writes the fp32 graph (embedding GATHER, per layer RMSNorm, attention with
# a mask input and a SiLU MLP, 9 MATMULs); then `ctosa info`, `check`,
# `dump` and `run` must work on it: info reports the external layout, the
# size and the counts, check passes TOSA-1.0+FP and fails +INT, dump prints
# the weights, a slice run (--outputs) needs only the inputs it reads and
# gives exactly the bytes the whole run gives for the same tensors.
# By default a small model (2 layers, hidden 64, forced external layout);
# with CTOSA_LONG_TESTS=1 the real thing: 16 layers, hidden 2048, 953M
# parameters, a 3.8 GB file over 2 GiB (needs ~4 GB of disk and of RAM).
set -u
ctosa=$1; build=$3
bench=$build/../bench/bench_bigfile
[ -x "$bench" ] || { echo "skipped: $bench not built"; exit 77; }
base=${TMPDIR:-/tmp}
if [ "${CTOSA_LONG_TESTS:-0}" = 1 ]; then
  L=16; H=2048; F=5632; V=32000; T=8; extra=""
  free_kb=$(df -Pk "$base" | awk 'NR==2 {print $4}')
  [ "${free_kb:-0}" -gt 6000000 ] || { echo "skipped: less than 6 GB free in $base"; exit 77; }
else
  L=2; H=64; F=160; V=100; T=4; extra="--external"
fi
tmp=$(mktemp -d "$base/ctosa-bigfile-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL $*"; fail=$((fail + 1)); }
expect() { # rc want_rc out pattern what
  [ "$1" = "$2" ] || bad "$5: exit $1, expected $2 (output: ${3:0:2000})"
  [ -z "$4" ] || grep -q -- "$4" <<<"$3" || bad "$5: output lacks '$4': ${3:0:2000}"
}
# What the graph holds (bench_bigfile.c): 5 small constants, the table, per
# layer 7 weights and 2 gammas, the final gamma and lm_head.
params=$((2 * V * H + L * (4 * H * H + 3 * H * F)))
consts=$((9 * L + 8))
cbytes=$((17 + 8 * V * H + L * (16 * H * H + 12 * H * F + 8 * H) + 4 * H))
matmuls=$((9 * L + 1))

m=$tmp/llm.tosa
out=$("$bench" --make "$m" --layers $L --hidden $H --ffn $F --vocab $V --tokens $T $extra 2>&1); rc=$?
expect $rc 0 "$out" "$params parameters" "bench_bigfile --make"
size=$(stat -c %s "$m" 2>/dev/null || echo 0)
if [ $L = 16 ]; then
  [ "$size" -gt 2147483647 ] || bad "the file has $size bytes, not over 2 GiB"
fi

out=$("$ctosa" info "$m" 2>&1); rc=$?
expect $rc 0 "$out" "layout: *external" "info"
expect $rc 0 "$out" "file size: *$size bytes" "info"
expect $rc 0 "$out" "MATMUL *$matmuls\b" "info"
expect $rc 0 "$out" "constants: *$consts ($cbytes bytes)" "info"
out=$("$ctosa" info "$m" --json 2>&1); rc=$?
expect $rc 0 "$out" "\"layout\": \"external\"" "info --json"

out=$("$ctosa" check "$m" --spec TOSA-1.0+FP 2>&1); rc=$?
expect $rc 0 "$out" "OK, conforms to TOSA-1.0+FP" "check"
out=$("$ctosa" check "$m" --spec TOSA-1.0+INT 2>&1); rc=$?
expect $rc 1 "$out" "MATMUL" "check under TOSA-1.0+INT"

out=$("$ctosa" dump "$m" 2>&1); rc=$?
expect $rc 0 "$out" "embed.table: fp32\[1,$V,$H\]  const $((4 * V * H)) B" "dump"
expect $rc 0 "$out" "l$((L - 1)).mlp.wdown: fp32\[1,$F,$H\]" "dump"
"$ctosa" dump "$m" --format json > "$tmp/dump.json" 2>&1; rc=$?
expect $rc 0 "" "" "dump --format json"
if [ -x /usr/bin/python3 ]; then
  /usr/bin/python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(len(d['regions'][0]['blocks'][0]['tensors']))" \
    "$tmp/dump.json" > "$tmp/n.txt" 2>&1 || bad "dump --format json is not JSON: $(head -c 500 "$tmp/n.txt")"
fi

tok=$m.tokens.npy; mask=$m.mask.npy
# A slice: the embedding and layer 0.
out=$("$ctosa" run "$m" --input tokens="$tok" --input mask="$mask" --outputs l0.out -o "$tmp/slice" 2>&1); rc=$?
expect $rc 0 "$out" "l0.out: fp32 \[1,$T,$H\]" "run --outputs l0.out"
[ -f "$tmp/slice/l0.out.npy" ] || bad "run --outputs l0.out wrote no l0.out.npy"
[ ! -e "$tmp/slice/logits.npy" ] || bad "the slice also wrote logits.npy"
# A smaller slice does not read the mask, so it need not be given.
out=$("$ctosa" run "$m" --input tokens="$tok" --outputs l0.attn.q,embed -o "$tmp/q" 2>&1); rc=$?
expect $rc 0 "$out" "l0.attn.q: fp32 \[1,$T,$H\]" "run --outputs l0.attn.q"
# ...but layer 0 does.
out=$("$ctosa" run "$m" --input tokens="$tok" --outputs l0.out -o "$tmp/x" 2>&1); rc=$?
expect $rc 2 "$out" "input 'mask' (dtype fp32, shape \[1,$T,$T\]) is not given" "slice without the mask"
# The whole graph, with the same intermediate written too: identical bytes.
out=$("$ctosa" run "$m" --input tokens="$tok" --input mask="$mask" --output l0.out="$tmp/full_l0.npy" \
      --output l0.attn.q="$tmp/full_q.npy" -o "$tmp/full" 2>&1); rc=$?
expect $rc 0 "$out" "logits: fp32 \[1,$T,$V\]" "run (whole graph)"
cmp -s "$tmp/slice/l0.out.npy" "$tmp/full_l0.npy" || bad "l0.out of the slice differs from the whole run's"
cmp -s "$tmp/q/l0.attn.q.npy" "$tmp/full_q.npy" || bad "l0.attn.q of the slice differs from the whole run's"
if [ -x /usr/bin/python3 ] && /usr/bin/python3 -c "import numpy" 2>/dev/null; then
  /usr/bin/python3 - "$tmp/full/logits.npy" "$tmp/q/embed.npy" $T $V $H <<'EOF' || bad "outputs are not finite or the embedding rows are wrong"
import sys, numpy as np
logits = np.load(sys.argv[1]); emb = np.load(sys.argv[2]); T, V, H = map(int, sys.argv[3:])
assert logits.shape == (1, T, V) and np.isfinite(logits).all() and logits.std() > 0
assert emb.shape == (1, T, H) and np.abs(emb).max() <= 0.04 and emb.std() > 0.01
EOF
fi

[ $fail = 0 ] && echo "cli_bigfile: all checks passed ($size bytes)"
exit $((fail > 0))
