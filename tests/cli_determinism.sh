#!/bin/bash
# cli_determinism.sh CTOSA SRC_DIR BUILD_DIR - the same command twice gives
# byte-identical outputs: `ctosa lower` (every .tosa, .partitioned.onnx and
# report, into different output folders from different working folders)
# and `ctosa run` on each partition (output .npy files) with 1, 2 and 3
# worker threads.
set -u
ctosa=$1; src=$2
[ -x /usr/bin/python3 ] && /usr/bin/python3 -c "import numpy" 2>/dev/null || { echo "skipped: needs /usr/bin/python3 with numpy"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0; files=0
check_same() { # dirA dirB what
  local a=$1 b=$2
  for f in "$a"/*; do
    [ -f "$f" ] || continue
    files=$((files + 1))
    if ! cmp -s "$f" "$b/$(basename "$f")"; then echo "FAIL $3: $(basename "$f") differs"; fail=$((fail + 1)); fi
  done
  [ "$(ls "$a" | wc -l)" = "$(ls "$b" | wc -l)" ] || { echo "FAIL $3: different file sets"; fail=$((fail + 1)); }
}
models=(tests/models/transformer_encoder_op17 tests/models/mobilenet_v2_x0_25_op13
        tests/data/lower/conv/chain_conv_pool_conv)
for m in "${models[@]}"; do
  [ -f "$src/$m/model.onnx" ] || { echo "skip $m (missing)"; continue; }
  name=$(basename "$m")
  for k in 1 2; do
    mkdir -p "$tmp/cwd$k"
    (cd "$tmp/cwd$k" && "$ctosa" lower "$src/$m/model.onnx" --spec TOSA-1.0+INT+FP -o "$tmp/$name.$k" -q) ||
      { echo "FAIL $name: lower exited $?"; fail=$((fail + 1)); continue 2; }
  done
  check_same "$tmp/$name.1" "$tmp/$name.2" "lower $name"
  for t in "$tmp/$name.1"/*.tosa; do
    [ -f "$t" ] || continue
    # Inputs: the model's input when the partition takes it, else zeros.
    args=()
    while IFS=$'\t' read -r iname idtype ishape; do
      [ -n "$iname" ] || continue
      /usr/bin/python3 - "$tmp/in_$iname.npy" "$idtype" "$ishape" <<'PY' || true
import sys, numpy as np
path, dt, shape = sys.argv[1], sys.argv[2], [int(x) for x in sys.argv[3].split(',') if x]
rng = np.random.default_rng(7)
dt = {'FP32': np.float32, 'INT8': np.int8, 'INT32': np.int32, 'BOOL': np.bool_, 'INT16': np.int16,
      'FP16': np.float16}.get(dt, np.float32)
np.save(path, (rng.standard_normal(shape) * 3).astype(dt))
PY
      args+=(--input "$iname=$tmp/in_$iname.npy")
    done < <("$ctosa" dump "$t" --format json | /usr/bin/python3 -c '
import json, sys
d = json.load(sys.stdin)
b = d["regions"][0]["blocks"][0]
ts = {t["name"]: t for t in b["tensors"]}
for n in b["inputs"]:
    t = ts[n]
    print("%s\t%s\t%s" % (n, t["dtype"], ",".join(str(x) for x in t["shape"])))
')
    for th in 1 2 3; do
      mkdir -p "$tmp/run$th"; rm -f "$tmp/run$th"/*
      "$ctosa" run "$t" "${args[@]}" --threads $th -o "$tmp/run$th" -q ||
        { echo "FAIL $(basename "$t"): run --threads $th exited $?"; fail=$((fail + 1)); }
    done
    check_same "$tmp/run1" "$tmp/run2" "run $(basename "$t") threads 1 vs 2"
    check_same "$tmp/run1" "$tmp/run3" "run $(basename "$t") threads 1 vs 3"
  done
done
echo "$files files compared, $fail failures"
[ "$files" -gt 0 ] || { echo "nothing compared"; exit 1; }
[ "$fail" = 0 ]
