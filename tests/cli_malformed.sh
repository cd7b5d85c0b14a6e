#!/bin/bash
# cli_malformed.sh CTOSA SRC_DIR BUILD_DIR - runs the CLI on every case of
# tests/data/malformed/index.tsv (made by make_malformed.py there): each
# must exit with the expected code (2), print every key word of its index
# row on stderr, never die from a signal, and leave no file in its output
# folder (no partial outputs).
set -u
ctosa=$1; src=$2
dir=$src/tests/data/malformed
index=$dir/index.tsv
[ -f "$index" ] || { echo "missing $index"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0; n=0; k=0
while IFS=$'\t' read -r file cmd want keys; do
  case "$file" in '#'*|'') continue ;; esac
  n=$((n + 1))
  out=$tmp/out$n
  c=${cmd//\{F\}/$dir/$file}; c=${c//\{O\}/$out}; c=${c//\{M\}/$dir}
  bash -c "\"$ctosa\" $c" >"$tmp/stdout" 2>"$tmp/stderr"
  rc=$?
  if [ "$rc" -ge 128 ]; then
    echo "FAIL $file: killed by signal $((rc - 128)) ($cmd)"; fail=$((fail + 1)); continue
  fi
  if [ "$rc" != "$want" ]; then
    echo "FAIL $file: exit $rc, expected $want ($cmd)"; head -n 3 "$tmp/stderr"; fail=$((fail + 1)); continue
  fi
  IFS='|' read -ra words <<<"$keys"
  for w in "${words[@]}"; do
    k=$((k + 1))
    if ! grep -qF -- "$w" "$tmp/stderr"; then
      echo "FAIL $file: message lacks '$w': $(head -c 300 "$tmp/stderr")"; fail=$((fail + 1))
    fi
  done
  if [ -d "$out" ] && [ -n "$(ls -A "$out")" ]; then
    echo "FAIL $file: left files in the output folder: $(ls -A "$out" | head -n 5 | tr '\n' ' ')"
    fail=$((fail + 1))
  fi
done <"$index"
echo "$n malformed inputs, $k key words checked, $fail failures"
[ "$n" -ge 100 ] || { echo "FAIL: fewer than 100 cases in $index"; exit 1; }
[ "$fail" = 0 ]
