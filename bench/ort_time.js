#!/usr/bin/env node
// ort_time.js - times ONNX Runtime's session.run on one model, the way
// bench/bench_ort.py times `ctosa run --runs`: one warm-up run, then RUNS
// timed runs on the same inputs; prints
//   RESULT ort best_ms=... median_ms=... mean_ms=... cpu_median_ms=...
// (cpu: the process's user + system time per run)
// and writes each output's raw bytes (little endian, C order) to
// OUTDIR/ort_<i>.bin when OUTDIR is given.
//
// Usage: node bench/ort_time.js MODEL.onnx THREADS RUNS OUTDIR NAME=FILE.npy...
// onnxruntime-node comes from tools/ort (npm install --ignore-scripts there).
'use strict';
const fs = require('fs');
const path = require('path');

let ort;
try {
  ort = require(path.join(__dirname, '..', 'tools', 'ort', 'node_modules', 'onnxruntime-node'));
} catch (e) {
  process.stderr.write(`ort_time: cannot load onnxruntime-node from tools/ort: ${e.message}\n`);
  process.exit(3);
}

const TYPES = { '<f4': ['float32', Float32Array], '<i8': ['int64', BigInt64Array],
                '<i4': ['int32', Int32Array], '|i1': ['int8', Int8Array], '|u1': ['uint8', Uint8Array] };

function readNpy(file) {
  const b = fs.readFileSync(file);
  if (b.toString('latin1', 0, 6) !== '\x93NUMPY') throw new Error(`${file}: not a .npy file`);
  const major = b[6], hl = major === 1 ? b.readUInt16LE(8) : b.readUInt32LE(8), hs = major === 1 ? 10 : 12;
  const h = b.toString('latin1', hs, hs + hl);
  const descr = /'descr':\s*'([^']*)'/.exec(h)[1];
  if (!TYPES[descr] || /'fortran_order':\s*True/.test(h)) throw new Error(`${file}: dtype ${descr} or order unsupported`);
  const dims = /'shape':\s*\(([^)]*)\)/.exec(h)[1].split(',').map(s => s.trim()).filter(s => s).map(Number);
  const [type, Arr] = TYPES[descr];
  const ab = new ArrayBuffer(b.length - hs - hl);
  new Uint8Array(ab).set(b.subarray(hs + hl));
  return new ort.Tensor(type, new Arr(ab), dims);
}

(async () => {
  const [model, threads, runs, outDir, ...ins] = process.argv.slice(2);
  const s = await ort.InferenceSession.create(model, {
    graphOptimizationLevel: 'all', intraOpNumThreads: +threads, interOpNumThreads: 1,
    executionMode: 'sequential', executionProviders: ['cpu'] });
  const feeds = {};
  for (const a of ins) {
    const eq = a.indexOf('=');
    feeds[a.slice(0, eq)] = readNpy(a.slice(eq + 1));
  }
  let out = await s.run(feeds);
  const t = [], cpu = [];
  for (let i = 0; i < +runs; i++) {
    const c0 = process.cpuUsage();
    const t0 = process.hrtime.bigint();
    out = await s.run(feeds);
    t.push(Number(process.hrtime.bigint() - t0) / 1e6);
    const c = process.cpuUsage(c0);
    cpu.push((c.user + c.system) / 1e3);
  }
  cpu.sort((a, b) => a - b);
  const cmed = cpu.length % 2 ? cpu[cpu.length >> 1] : (cpu[cpu.length / 2 - 1] + cpu[cpu.length / 2]) / 2;
  const mean = t.reduce((a, b) => a + b, 0) / t.length;
  t.sort((a, b) => a - b);
  const n = t.length, med = n % 2 ? t[n >> 1] : (t[n / 2 - 1] + t[n / 2]) / 2;
  if (outDir && outDir !== '-')
    s.outputNames.forEach((name, i) => {
      const d = out[name].data;
      fs.writeFileSync(path.join(outDir, `ort_${i}.bin`), Buffer.from(d.buffer, d.byteOffset, d.byteLength));
    });
  console.log(`RESULT ort best_ms=${t[0].toFixed(3)} median_ms=${med.toFixed(3)} mean_ms=${mean.toFixed(3)} cpu_median_ms=${cmed.toFixed(3)}`);
})().catch(e => { process.stderr.write(`ort_time: ${e.message}\n`); process.exit(3); });
