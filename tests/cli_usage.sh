#!/usr/bin/env bash
# cli_usage.sh CTOSA SRC_DIR BUILD_DIR - usage errors of the commands that
# take one model (lower, quantize, verify, run, dump, info): a second model,
# an unknown option, an option without its value, no model at all, and
# both --spec and --target. Each must exit 2 with a message naming the
# command and the fault, print nothing on stdout and write no output file.
set -u
ctosa=$1 src=$2
m=$src/examples/models/small_cnn.onnx
x=$src/examples/models/small_cnn.input_0.npy
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ctosa_usage.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fails=0 n=0
expect_usage() { # expect_usage PATTERN cmd... : exit 2, "ctosa CMD: ..." matching PATTERN
  local pat=$1
  shift
  n=$((n + 1))
  rm -rf "$tmp/o"
  "$ctosa" "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  if [ $rc -ne 2 ]; then
    echo "FAIL ($*): exit $rc, expected 2"; head -3 "$tmp/err"; fails=$((fails + 1)); return
  fi
  if ! grep -Eq -- "^ctosa $1: .*$pat" "$tmp/err"; then
    echo "FAIL ($*): message does not match '$pat':"; head -3 "$tmp/err"; fails=$((fails + 1)); return
  fi
  if [ -s "$tmp/out" ]; then echo "FAIL ($*): wrote to stdout"; fails=$((fails + 1)); fi
  if [ -e "$tmp/o" ]; then echo "FAIL ($*): created the output folder"; fails=$((fails + 1)); fi
}
spec="--spec TOSA-1.0+FP"
expect_usage "more than one model given \('$m' and '$m'\)" lower "$m" "$m" $spec -o "$tmp/o"
expect_usage "unknown option '--bogus'" lower "$m" --bogus $spec -o "$tmp/o"
expect_usage "--spec needs a value" lower "$m" --spec
expect_usage "no model given" lower $spec -o "$tmp/o"
expect_usage "give --spec or --target, not both" lower "$m" $spec --target ethos-u55-128 -o "$tmp/o"
expect_usage "more than one model given" quantize "$m" "$m" --calibration "$x" -o "$tmp/o"
expect_usage "no model given" quantize --calibration "$x" -o "$tmp/o"
expect_usage "unknown option '--bogus'" quantize "$m" --bogus -o "$tmp/o"
expect_usage "more than one MODEL.onnx given" verify "$m" "$m" $spec
expect_usage "more than one MODEL.tosa given" run "$m" "$m"
expect_usage "more than one model given" dump "$m" "$m"
expect_usage "no model given" dump
expect_usage "more than one model given" info "$m" "$m"
expect_usage "no model given" info
echo "$n usage errors checked, $fails failures"
[ $fails -eq 0 ]
