#!/bin/bash
# cli_run_timing.sh CTOSA SRC_DIR BUILD_DIR - `ctosa run --runs N` (one
# warm-up, N timed runs, best / median / mean) and `--profile` (time per
# operator kind and per operator): the figures are printed in the promised
# form and add up, outputs equal a plain run's, bad values are usage errors.
# Checks structure only, never speed.
set -u
ctosa=$1; src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL $*"; fail=$((fail + 1)); }

model=$src/tests/models/mobilenet_v2_x0_25_op13
[ -f "$model/model.onnx" ] || { echo "skipped: $model missing"; exit 77; }
"$ctosa" lower "$model/model.onnx" --spec TOSA-1.0+FP -o "$tmp/low" -q || { echo "FAIL lowering"; exit 1; }
g=$tmp/low/model.part0.tosa
in="--input input=$model/input_0.npy"

"$ctosa" run "$g" $in -o "$tmp/plain" -q || bad "plain run failed"
out=$("$ctosa" run "$g" $in -o "$tmp/timed" --runs 3 --threads 1 2>&1); rc=$?
[ $rc = 0 ] || bad "--runs 3: exit $rc: $out"
grep -Eq "^ran .*: warm-up [0-9.]+ ms, 3 runs: best [0-9.]+ ms, median [0-9.]+ ms, mean [0-9.]+ ms, CPU median [0-9.]+ ms$" <<<"$out" ||
  bad "--runs 3 lacks the timing line: $out"
cmp -s "$tmp/plain/output.npy" "$tmp/timed/output.npy" || bad "--runs output differs from a plain run's"
# best <= median <= the largest possible, as numbers
read -r best med < <(sed -n 's/.*best \([0-9.]*\) ms, median \([0-9.]*\) ms.*/\1 \2/p' <<<"$out")
awk -v b="$best" -v m="$med" 'BEGIN{exit !(b <= m)}' || bad "best $best > median $med"

# --profile: header, kind table whose counts and times add up to the header's
out=$("$ctosa" run "$g" $in -o "$tmp/prof" --runs 2 --profile 2>&1); rc=$?
[ $rc = 0 ] || bad "--profile: exit $rc: $out"
cmp -s "$tmp/plain/output.npy" "$tmp/prof/output.npy" || bad "--profile output differs from a plain run's"
hdr=$(grep -E "^profile: [0-9]+ operators ran, [0-9.]+ ms per run in operators \(2 runs profiled\)$" <<<"$out")
[ -n "$hdr" ] || bad "--profile header missing: $out"
nops=$(sed -n 's/^profile: \([0-9]*\) operators.*/\1/p' <<<"$hdr")
kinds=$(awk '/operator kind/{k=1; next} k && NF==4 {print} k && NF==0 && n++ {exit}' <<<"$out")
grep -q "^  CONV2D " <<<"$kinds" || bad "no CONV2D row in the kind table: $out"
grep -q "^  DEPTHWISE_CONV2D " <<<"$kinds" || bad "no DEPTHWISE_CONV2D row: $out"
sum=$(awk '{s += $2} END {print s}' <<<"$kinds")
[ "$sum" = "$nops" ] || bad "kind counts add up to $sum, header says $nops operators"
pct=$(awk '{gsub("%", "", $4); s += $4} END {printf "%.0f", s}' <<<"$kinds")
[ "$pct" -ge 99 ] && [ "$pct" -le 101 ] || bad "kind percentages add up to $pct"
# per-operator rows: slowest first, naming the operator
rows=$(grep -E "^ +[0-9.]+ +[0-9.]+% +[0-9.]+%  op #[0-9]+ [A-Z_0-9]+ '" <<<"$out")
[ "$(wc -l <<<"$rows")" -ge 20 ] || bad "fewer than 20 operator rows: $out"
sort -s -b -g -r -k1,1 -c <<<"$rows" 2>/dev/null || bad "operator rows are not slowest first"
# a single run can be profiled too, and -q keeps the profile but drops the rest
out=$("$ctosa" run "$g" $in -o "$tmp/q" --profile -q 2>&1)
grep -q "(1 run profiled)" <<<"$out" || bad "--profile -q: $out"
grep -q "^ran " <<<"$out" && bad "-q printed the ran line"
grep -q "^output" <<<"$out" && bad "-q printed the output line"

# usage errors
for v in 0 -1 x 1000001; do
  out=$("$ctosa" run "$g" $in -o "$tmp/e" --runs "$v" 2>&1); rc=$?
  [ $rc = 2 ] && grep -q -- "--runs expects" <<<"$out" || bad "--runs $v: exit $rc: $out"
done
# --profile on a partitioned model times its steps: one partition here
out=$("$ctosa" run "$tmp/low/model.partitioned.onnx" $in -o "$tmp/pp" --runs 2 --profile -q 2>&1); rc=$?
[ $rc = 0 ] && grep -Eq "^profile: 1 steps ran, [0-9.]+ ms per run in steps \(2 runs profiled\)$" <<<"$out" &&
  grep -Eq "^  partition +1 +[0-9.]+ +100.0%$" <<<"$out" || bad "--profile on .onnx: exit $rc: $out"
# and a detector's tail: partitions, CPU nodes, nodes lowered at run time;
# kind counts add up to the header's, outputs as without --profile
d=$src/tests/data/runtime
if "$ctosa" lower "$d/detect_mid.onnx" --spec TOSA-1.0+FP -o "$tmp/det" -q; then
  dm=$tmp/det/detect_mid.partitioned.onnx
  "$ctosa" run "$dm" --input x="$d/detect_in.npy" -o "$tmp/dplain" -q || bad "detect_mid plain run"
  out=$("$ctosa" run "$dm" --input x="$d/detect_in.npy" -o "$tmp/dprof" --runs 3 --profile 2>&1); rc=$?
  [ $rc = 0 ] || bad "--profile on detect_mid: exit $rc: $out"
  for f in "$tmp"/dplain/*.npy; do cmp -s "$f" "$tmp/dprof/${f##*/}" || bad "--profile changes ${f##*/}"; done
  nsteps=$(sed -n 's/^profile: \([0-9]*\) steps ran, [0-9.]* ms per run in steps (3 runs profiled)$/\1/p' <<<"$out")
  [ -n "$nsteps" ] || bad "detect_mid --profile header: $out"
  kinds=$(awk '/step kind/{k=1; next} k && NF==0 {exit} k {print}' <<<"$out")
  grep -q "^  partition " <<<"$kinds" || bad "no partition row: $out"
  grep -q "^  NonZero (CPU, lowered at run time) " <<<"$kinds" || bad "no NonZero row lowered at run time: $out"
  grep -q "^  If (CPU, lowered at run time) " <<<"$kinds" || bad "no If row: $out"
  sum=$(awk '{s += $(NF-2)} END {print s}' <<<"$kinds")
  [ "$sum" = "$nsteps" ] || bad "step kind counts add up to $sum, header says $nsteps"
  grep -Eq "^ +[0-9.]+ +[0-9.]+% +[0-9.]+%  nonzero \(NonZero, CPU, lowered at run time\)$" <<<"$out" ||
    bad "no per-step row for the NonZero: $out"
else
  bad "lowering detect_mid"
fi
# a partitioned model is timed through the runtime
out=$("$ctosa" run "$tmp/low/model.partitioned.onnx" $in -o "$tmp/pm" --runs 2 2>&1); rc=$?
[ $rc = 0 ] && grep -Eq "2 runs: best [0-9.]+ ms, median [0-9.]+ ms, mean [0-9.]+ ms, CPU median [0-9.]+ ms \(1 partition, 0 CPU nodes" <<<"$out" ||
  bad "--runs on a partitioned model: exit $rc: $out"
h=$("$ctosa" run --help)
grep -q -- "--runs N" <<<"$h" && grep -q -- "--profile" <<<"$h" || bad "run --help lacks --runs / --profile"

# --reference: the plain loops give the int8 network's outputs byte for
# byte, as a .tosa and as a partitioned model; nothing is fused then, so
# more operators run (the RESCALEs the int8 convolutions store).
q=$src/tests/models/mobilenet_v2_x0_25_qnnpack
if [ -f "$q/model.onnx" ]; then
  "$ctosa" lower "$q/model.onnx" --spec TOSA-1.0+INT+FP -o "$tmp/q" -q || bad "lowering the int8 network"
  qin="--input input=$q/input_0.npy"
  ops() { sed -n 's/^profile: \([0-9]*\) operators ran.*/\1/p' <<<"$1"; }
  o1=$("$ctosa" run "$tmp/q/model.part0.tosa" $qin -o "$tmp/qf" --profile -q 2>&1) || bad "int8 --profile: $o1"
  o2=$("$ctosa" run "$tmp/q/model.part0.tosa" $qin -o "$tmp/qr" --profile --reference -q 2>&1) ||
    bad "int8 --profile --reference: $o2"
  n1=$(ops "$o1"); n2=$(ops "$o2")
  [ -n "$n1" ] && [ -n "$n2" ] && [ "$n2" -gt "$n1" ] || bad "--reference ran $n2 operators, the fast run $n1"
  cmp -s "$tmp/qf/output.npy" "$tmp/qr/output.npy" || bad "--reference changes the int8 .tosa's output"
  "$ctosa" run "$tmp/q/model.partitioned.onnx" $qin -o "$tmp/qpf" -q || bad "int8 partitioned run"
  "$ctosa" run "$tmp/q/model.partitioned.onnx" $qin -o "$tmp/qpr" --reference -q || bad "partitioned --reference"
  cmp -s "$tmp/qpf/output.npy" "$tmp/qpr/output.npy" || bad "--reference changes the partitioned model's output"
  cmp -s "$tmp/qf/output.npy" "$tmp/qpr/output.npy" || bad "the partitioned model's output is not the .tosa's"
else
  echo "note: $q missing, --reference not checked"
fi
grep -q -- "--reference" <<<"$h" || bad "run --help lacks --reference"

[ $fail = 0 ] && echo "cli_run_timing: all checks passed"
exit $((fail > 0))
