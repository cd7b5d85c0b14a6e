#!/usr/bin/env bash
# bench_network.sh - the interpreter's whole-network speed against ONNX
# Runtime on the same network, in the same run.
#
#   tools/bench_network.sh [--build DIR] [--threads N] [--runs N] [--rounds N]
#
# 1. Builds (Release) ctosa, bench_network and bench_tosa_file in DIR
#    (default build-rel) if they are missing.
# 2. Makes build-models/mobilenet_v2_op13/model.onnx with
#    tools/models/make_models.py if missing (torchvision mobilenet_v2, random
#    weights, and its input_0.npy).
# 3. Lowers it: ctosa lower MODEL --spec TOSA-1.0+FP. When every node is
#    delegated (one partition), times ctosa_interp_run on the lowered .tosa
#    with input_0.npy (bench_tosa_file: no process start, no file reading)
#    and checks its output against ONNX Runtime's. Otherwise it says so and
#    compares ORT with the builder-made MobileNetV2-shaped graph only.
# 4. Times ONNX Runtime (tools/ort, npm onnxruntime-node, CPU, graph
#    optimisation "all", the same thread count) on the same model and input.
# 5. Runs bench_network: the builder-made MobileNetV2-shaped FP32 and int8
#    graphs, with the machine's FMA peak.
# Each timing is best / median / mean over --runs runs after warm-up; the
# ctosa and ORT timings alternate for --rounds rounds and the best round's
# median is compared, since the machine may be shared. The load average is
# printed before and after. Exit 0 even when a target is missed (it prints
# figures, it is not a test); 2 on usage or setup errors.
set -u
cd "$(dirname "$0")/.."
ROOT=$(pwd)
BUILD=build-rel
THREADS=$(nproc)
RUNS=30
ROUNDS=3
while [ $# -gt 0 ]; do
  case "$1" in
    --build) BUILD=$2; shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    --runs) RUNS=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    -h|--help) sed -n '2,27p' "$0"; exit 0 ;;
    *) echo "bench_network.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
PY=/usr/bin/python3
say() { printf '%s\n' "$*"; }

say "== machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
say "== load before: $(cut -d' ' -f1-3 /proc/loadavg)"

if [ ! -x "$BUILD/ctosa" ] || [ ! -x "$BUILD/bench/bench_network" ] || [ ! -x "$BUILD/bench/bench_tosa_file" ]; then
  say "== building $BUILD (Release)"
  cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >/dev/null &&
    cmake --build "$BUILD" -j"$(nproc)" --target ctosa bench_network bench_tosa_file >/dev/null ||
    { echo "bench_network.sh: build failed" >&2; exit 2; }
fi

MDIR=build-models/mobilenet_v2_op13
MODEL=$MDIR/model.onnx
if [ ! -f "$MODEL" ]; then
  say "== generating $MODEL"
  "$PY" tools/models/make_models.py --models mobilenet_v2 >/dev/null ||
    { echo "bench_network.sh: cannot make $MODEL (needs python3-torch, python3-torchvision)" >&2; exit 2; }
fi
INPUT=$MDIR/input_0.npy

HAVE_ORT=0
if [ -d tools/ort/node_modules/onnxruntime-node ] && command -v node >/dev/null; then
  HAVE_ORT=1
else
  say "== ONNX Runtime not installed: (cd tools/ort && npm install --ignore-scripts); skipping ORT"
fi

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# ORT timing: warm-up, then RUNS timed session.run calls on input_0.npy.
cat > "$TMP/ort_time.js" <<'EOF'
'use strict';
const fs = require('fs');
const ort = require(process.argv[2] + '/tools/ort/node_modules/onnxruntime-node');
const [model, input, threads, runs, outFile] =
  [process.argv[3], process.argv[4], +process.argv[5], +process.argv[6], process.argv[7]];
function readF32Npy(file) { // float32, C order, little endian (make_models.py writes these)
  const b = fs.readFileSync(file);
  const major = b[6], hl = major === 1 ? b.readUInt16LE(8) : b.readUInt32LE(8), hs = major === 1 ? 10 : 12;
  const h = b.toString('latin1', hs, hs + hl);
  if (!/'descr':\s*'<f4'/.test(h) || /'fortran_order':\s*True/.test(h)) throw new Error(file + ': need <f4 C order');
  const dims = /'shape':\s*\(([^)]*)\)/.exec(h)[1].split(',').map(s => s.trim()).filter(s => s).map(Number);
  const ab = new ArrayBuffer(b.length - hs - hl);
  new Uint8Array(ab).set(b.subarray(hs + hl));
  return new ort.Tensor('float32', new Float32Array(ab), dims);
}
(async () => {
  const s = await ort.InferenceSession.create(model, {
    graphOptimizationLevel: 'all', intraOpNumThreads: threads, interOpNumThreads: 1,
    executionProviders: ['cpu'] });
  const feeds = {}; feeds[s.inputNames[0]] = readF32Npy(input);
  let out;
  for (let i = 0; i < 3; i++) out = await s.run(feeds);
  const t = [];
  for (let i = 0; i < runs; i++) {
    const t0 = process.hrtime.bigint();
    out = await s.run(feeds);
    t.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  const mean = t.reduce((a, b) => a + b, 0) / runs;
  t.sort((a, b) => a - b);
  const o = out[s.outputNames[0]].data;
  fs.writeFileSync(outFile, Buffer.from(o.buffer, o.byteOffset, o.byteLength));
  console.log(`RESULT ort best_ms=${t[0].toFixed(3)} median_ms=${t[runs >> 1].toFixed(3)} mean_ms=${mean.toFixed(3)}`);
})().catch(e => { console.error('ort_time: ' + e.message); process.exit(3); });
EOF

field() { sed -n "s/.*$1=\([0-9.]*\).*/\1/p" | head -1; }
min_of() { sort -g | head -1; }

say "== lowering $MODEL (TOSA-1.0+FP)"
LOWERED=""
if "$BUILD/ctosa" lower "$MODEL" --spec TOSA-1.0+FP -o "$TMP/low" > "$TMP/lower.txt" 2>&1; then
  cat "$TMP/lower.txt"
  if grep -q "(100.0%)" "$TMP/lower.txt" && grep -q "in 1 partition" "$TMP/lower.txt" &&
     [ -f "$TMP/low/model.part0.tosa" ]; then
    LOWERED=$TMP/low/model.part0.tosa
  else
    say "   not fully delegated: comparing ORT with the builder-made graph only"
  fi
else
  cat "$TMP/lower.txt"
  say "   lowering failed: comparing ORT with the builder-made graph only"
fi

: > "$TMP/ctosa_med"; : > "$TMP/ort_med"; : > "$TMP/ctosa_best"; : > "$TMP/ort_best"
for r in $(seq 1 "$ROUNDS"); do
  if [ -n "$LOWERED" ]; then
    "$BUILD/bench/bench_tosa_file" "$LOWERED" --input "input=$INPUT" --threads "$THREADS" \
      --runs "$RUNS" --output "output=$TMP/ctosa_out.npy" > "$TMP/t.txt" 2>&1 || { cat "$TMP/t.txt"; exit 2; }
    say "   round $r ctosa: $(grep RESULT "$TMP/t.txt" | cut -d' ' -f3-)"
    field median_ms < "$TMP/t.txt" >> "$TMP/ctosa_med"
    field best_ms < "$TMP/t.txt" >> "$TMP/ctosa_best"
  fi
  if [ $HAVE_ORT = 1 ]; then
    node "$TMP/ort_time.js" "$ROOT" "$MODEL" "$INPUT" "$THREADS" "$RUNS" "$TMP/ort_out.f32" > "$TMP/o.txt" 2>&1 ||
      { cat "$TMP/o.txt"; HAVE_ORT=0; break; }
    say "   round $r ORT:   $(grep RESULT "$TMP/o.txt" | cut -d' ' -f3-)"
    field median_ms < "$TMP/o.txt" >> "$TMP/ort_med"
    field best_ms < "$TMP/o.txt" >> "$TMP/ort_best"
  fi
done

if [ -n "$LOWERED" ] && [ $HAVE_ORT = 1 ] && [ -x "$PY" ]; then
  "$PY" - "$TMP/ctosa_out.npy" "$TMP/ort_out.f32" <<'EOF' || true
import sys, numpy as np
a = np.load(sys.argv[1]).astype(np.float32).ravel()
b = np.fromfile(sys.argv[2], dtype=np.float32)
print(f"   lowered graph vs ORT output: max |diff| {np.abs(a - b).max():.3g} (output std {b.std():.3g}), "
      f"top-1 {'same' if a.argmax() == b.argmax() else 'DIFFERENT'}")
EOF
fi

say "== builder-made MobileNetV2-shaped graphs (bench_network)"
"$BUILD/bench/bench_network" --threads "$THREADS" --runs "$RUNS" | tee "$TMP/n.txt"
NET_MED=$(grep "RESULT fp32" "$TMP/n.txt" | field median_ms)
NET_BEST=$(grep "RESULT fp32" "$TMP/n.txt" | field best_ms)

say "== summary ($THREADS threads; best round's median, and best single run)"
if [ $HAVE_ORT = 1 ]; then
  OM=$(min_of < "$TMP/ort_med"); OB=$(min_of < "$TMP/ort_best")
  say "   ONNX Runtime, mobilenet_v2 ONNX:        median $OM ms, best $OB ms"
  if [ -n "$LOWERED" ]; then
    CM=$(min_of < "$TMP/ctosa_med"); CB=$(min_of < "$TMP/ctosa_best")
    say "   ctosa, the same model lowered to TOSA:   median $CM ms, best $CB ms  ->" \
        "$(awk -v a="$CM" -v b="$OM" 'BEGIN{printf "%.2fx", a/b}') ORT (median)," \
        "$(awk -v a="$CB" -v b="$OB" 'BEGIN{printf "%.2fx", a/b}') (best); target <= 3x"
  fi
  say "   ctosa, builder-made FP32 MobileNetV2:   median $NET_MED ms, best $NET_BEST ms  ->" \
      "$(awk -v a="$NET_MED" -v b="$OM" 'BEGIN{printf "%.2fx", a/b}') ORT (median)"
fi
say "== load after: $(cut -d' ' -f1-3 /proc/loadavg)"
