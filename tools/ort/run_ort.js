#!/usr/bin/env node
// Run an ONNX model with ONNX Runtime (npm onnxruntime-node, CPU) on .npy
// inputs and write .npy outputs. ORT is the independent oracle that ctosa's
// lowered graphs are compared against; Debian has no onnxruntime package, so
// this is the only ORT on the build machines.
//
// Install once (from this folder): npm install --ignore-scripts
//   (--ignore-scripts: the package's postinstall tries to download GPU
//    binaries from a non-npm host and fails without network.)
//
// Usage:
//   node run_ort.js MODEL.onnx --out DIR [options] [INPUT ...]
// INPUT is either FILE.npy (graph inputs in order) or NAME=FILE.npy.
// Options:
//   --out DIR      write DIR/output_<i>.npy for every graph output (required)
//   --opt LEVEL    graph optimization: disabled | basic | extended | all
//                  (default all, ORT's own default; "disabled" keeps QDQ
//                  models in float reference form instead of fused int8 kernels)
//   --batch        every input file holds K input sets stacked on a new axis 0;
//                  run K times and stack each output along a new axis 0
//   --threads N    intra-op threads (default 1, for reproducible timing)
//   --quiet        no JSON summary on stdout
// Exit codes: 0 ok, 2 bad usage/input, 3 ORT failure.
'use strict';

const fs = require('fs');
const path = require('path');

function die(code, msg) {
  process.stderr.write(`run_ort: ${msg}\n`);
  process.exit(code);
}

let ort;
try {
  ort = require('onnxruntime-node');
} catch (e) {
  die(3, `cannot load onnxruntime-node (run "npm install --ignore-scripts" in ${__dirname}): ${e.message}`);
}

// ---- .npy (format 1.0/2.0/3.0, C order, little endian) -------------------

// numpy descr -> [ORT tensor type, TypedArray constructor, bytes per element]
const NPY_TYPES = {
  '<f4': ['float32', Float32Array, 4],
  '<f8': ['float64', Float64Array, 8],
  '<f2': ['float16', Uint16Array, 2],
  '|i1': ['int8', Int8Array, 1],
  '|u1': ['uint8', Uint8Array, 1],
  '<i2': ['int16', Int16Array, 2],
  '<u2': ['uint16', Uint16Array, 2],
  '<i4': ['int32', Int32Array, 4],
  '<u4': ['uint32', Uint32Array, 4],
  '<i8': ['int64', BigInt64Array, 8],
  '<u8': ['uint64', BigUint64Array, 8],
  '|b1': ['bool', Uint8Array, 1],
};
const ORT_TO_DESCR = {};
for (const [d, [t]] of Object.entries(NPY_TYPES)) ORT_TO_DESCR[t] = d;

function readNpy(file) {
  let buf;
  try {
    buf = fs.readFileSync(file);
  } catch (e) {
    die(2, `${file}: ${e.message}`);
  }
  if (buf.length < 10 || buf.toString('latin1', 0, 6) !== '\x93NUMPY')
    die(2, `${file}: not a .npy file (bad magic at offset 0)`);
  const major = buf[6];
  let hlen, hstart;
  if (major === 1) { hlen = buf.readUInt16LE(8); hstart = 10; }
  else if (major === 2 || major === 3) { hlen = buf.readUInt32LE(8); hstart = 12; }
  else die(2, `${file}: unsupported .npy version ${major}`);
  if (hstart + hlen > buf.length) die(2, `${file}: header runs past end of file`);
  const header = buf.toString('latin1', hstart, hstart + hlen);
  const descr = /'descr'\s*:\s*'([^']*)'/.exec(header);
  const fortran = /'fortran_order'\s*:\s*(True|False)/.exec(header);
  const shape = /'shape'\s*:\s*\(([^)]*)\)/.exec(header);
  if (!descr || !fortran || !shape) die(2, `${file}: cannot parse header ${JSON.stringify(header)}`);
  let d = descr[1];
  if (d === '<b1') d = '|b1';
  if (d === '<i1') d = '|i1';
  if (d === '<u1') d = '|u1';
  const t = NPY_TYPES[d];
  if (!t) die(2, `${file}: unsupported dtype '${descr[1]}' (big endian or exotic)`);
  if (fortran[1] === 'True') die(2, `${file}: Fortran-order arrays are not supported`);
  const dims = shape[1].split(',').map(s => s.trim()).filter(s => s.length).map(Number);
  const count = dims.reduce((a, b) => a * b, 1);
  const off = hstart + hlen;
  if (buf.length - off !== count * t[2])
    die(2, `${file}: data size ${buf.length - off} bytes, shape [${dims}] needs ${count * t[2]}`);
  // Copy into an aligned ArrayBuffer (Buffer slices may be misaligned).
  const ab = new ArrayBuffer(count * t[2]);
  new Uint8Array(ab).set(buf.subarray(off));
  return { type: t[0], data: new t[1](ab), dims };
}

function writeNpy(file, type, data, dims) {
  const descr = ORT_TO_DESCR[type];
  if (!descr) die(3, `${file}: cannot write output of type ${type}`);
  const shapeStr = dims.length === 1 ? `(${dims[0]},)` : `(${dims.join(', ')})`;
  let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': ${shapeStr}, }`;
  // Pad with spaces so magic+len+header+\n is a multiple of 64 (numpy's rule).
  const total = 10 + header.length + 1;
  header += ' '.repeat((64 - (total % 64)) % 64) + '\n';
  const pre = Buffer.alloc(10);
  pre.write('\x93NUMPY', 0, 'latin1');
  pre[6] = 1; pre[7] = 0;
  pre.writeUInt16LE(header.length, 8);
  let body;
  if (type === 'bool') body = Buffer.from(Uint8Array.from(data, v => (v ? 1 : 0)));
  else body = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  const tmp = `${file}.tmp.${process.pid}`;
  fs.writeFileSync(tmp, Buffer.concat([pre, Buffer.from(header, 'latin1'), body]));
  fs.renameSync(tmp, file);
}

// ---- arguments ------------------------------------------------------------

function parseArgs(argv) {
  const a = { model: null, out: null, opt: 'all', batch: false, threads: 1, quiet: false, inputs: [] };
  for (let i = 0; i < argv.length; i++) {
    const s = argv[i];
    const next = () => { if (i + 1 >= argv.length) die(2, `${s} needs a value`); return argv[++i]; };
    if (s === '--out') a.out = next();
    else if (s === '--opt') a.opt = next();
    else if (s === '--batch') a.batch = true;
    else if (s === '--threads') a.threads = parseInt(next(), 10);
    else if (s === '--quiet') a.quiet = true;
    else if (s === '-h' || s === '--help') {
      process.stdout.write(fs.readFileSync(__filename, 'utf8').split('\n').slice(1, 23).join('\n') + '\n');
      process.exit(0);
    } else if (s.startsWith('--')) die(2, `unknown option ${s}`);
    else if (!a.model) a.model = s;
    else a.inputs.push(s);
  }
  if (!a.model) die(2, 'no model given (usage: run_ort.js MODEL.onnx --out DIR [INPUT.npy | NAME=INPUT.npy ...])');
  if (!a.out) die(2, '--out DIR is required');
  if (!['disabled', 'basic', 'extended', 'all'].includes(a.opt)) die(2, `bad --opt ${a.opt}`);
  if (!(a.threads >= 1)) die(2, 'bad --threads');
  return a;
}

function sliceTensor(t, k) {
  const inner = t.dims.slice(1);
  const n = inner.reduce((x, y) => x * y, 1);
  return new ort.Tensor(t.type, t.data.slice(k * n, (k + 1) * n), inner);
}

async function main() {
  const a = parseArgs(process.argv.slice(2));
  if (!fs.existsSync(a.model)) die(2, `${a.model}: no such file`);
  fs.mkdirSync(a.out, { recursive: true });
  let session;
  const t0 = process.hrtime.bigint();
  try {
    session = await ort.InferenceSession.create(path.resolve(a.model), {
      graphOptimizationLevel: a.opt,
      intraOpNumThreads: a.threads,
      interOpNumThreads: 1,
      executionProviders: ['cpu'],
    });
  } catch (e) {
    die(3, `${a.model}: ORT cannot load the model: ${e.message}`);
  }
  const t1 = process.hrtime.bigint();
  const names = session.inputNames;
  if (a.inputs.length !== names.length)
    die(2, `model has ${names.length} inputs (${names.join(', ')}), ${a.inputs.length} given`);
  const feeds = {};
  a.inputs.forEach((spec, i) => {
    let name = names[i], file = spec;
    const eq = spec.indexOf('=');
    if (eq > 0 && !spec.slice(0, eq).includes('/') && !spec.slice(0, eq).endsWith('.npy')) {
      name = spec.slice(0, eq);
      file = spec.slice(eq + 1);
      if (!names.includes(name)) die(2, `model has no input named '${name}' (inputs: ${names.join(', ')})`);
    }
    if (feeds[name]) die(2, `input '${name}' given twice`);
    feeds[name] = readNpy(file);
  });
  let K = 1;
  if (a.batch) {
    K = null;
    for (const [n, t] of Object.entries(feeds)) {
      if (t.dims.length < 1) die(2, `--batch: input '${n}' has no leading axis`);
      if (K === null) K = t.dims[0];
      else if (K !== t.dims[0]) die(2, `--batch: input '${n}' has ${t.dims[0]} sets, expected ${K}`);
    }
  }
  const results = session.outputNames.map(() => []);
  const t2 = process.hrtime.bigint();
  for (let k = 0; k < K; k++) {
    const f = {};
    for (const [n, t] of Object.entries(feeds))
      f[n] = a.batch ? sliceTensor(t, k) : new ort.Tensor(t.type, t.data, t.dims);
    let out;
    try {
      out = await session.run(f);
    } catch (e) {
      die(3, `${a.model}: ORT run failed${a.batch ? ` on set ${k}` : ''}: ${e.message}`);
    }
    session.outputNames.forEach((n, i) => results[i].push(out[n]));
  }
  const t3 = process.hrtime.bigint();
  const summary = { model: a.model, opt: a.opt, sets: K, load_ms: Number(t1 - t0) / 1e6,
                    run_ms: Number(t3 - t2) / 1e6, outputs: [] };
  session.outputNames.forEach((n, i) => {
    const parts = results[i];
    const type = parts[0].type;
    let dims = parts[0].dims.slice();
    let data;
    if (!a.batch) data = parts[0].data;
    else {
      const n1 = parts[0].data.length;
      data = new parts[0].data.constructor(n1 * K);
      parts.forEach((p, k) => data.set(p.data, k * n1));
      dims = [K, ...dims];
    }
    const file = path.join(a.out, `output_${i}.npy`);
    writeNpy(file, type, data, dims);
    summary.outputs.push({ name: n, type, dims, file });
  });
  if (!a.quiet) process.stdout.write(JSON.stringify(summary) + '\n');
}

main().catch(e => die(3, e.stack || String(e)));
