#!/usr/bin/python3
"""ctosa's interpreter against ONNX Runtime, network by network.

For every network: `ctosa lower MODEL.onnx --spec SPEC`, then, for each
thread count, ROUNDS rounds that alternate `ctosa run --runs RUNS` (one
warm-up, RUNS timed runs of the lowered graph on the same inputs; the whole
partitioned model through the runtime when something falls back) with ONNX
Runtime's session.run timed the same way (bench/ort_time.js: CPU provider,
graph optimisation "all", the same intra-op thread count). Each round gives
the ratio ctosa median / ORT median; a network's ratio is the median of its
rounds' ratios (alternating rounds expose both sides to the same load on a
shared machine). The same is printed for the median process CPU time per
run (user + system of the whole process): with one thread it is the figure
to trust on a loaded machine, where wall times stretch with the load; with
more threads it also counts time workers spend waiting or spinning.
Prints one line per network and thread count, then the median ratios per
thread count. Outputs are compared with ORT's once
(max |difference| relative to the output's largest magnitude).

Usage: /usr/bin/python3 bench/bench_ort.py [--build DIR] [--models DIR]
         [--only a,b] [--threads 1,2] [--runs N] [--rounds N] [--spec SPEC]
         [--keep DIR] [MODEL.onnx ...]
Networks: every DIR/<name>/model.onnx (default build-models/bench, made by
bench/make_networks.py; inputs from input_<i>.npy beside it), plus each
MODEL.onnx given (random inputs of its declared float32 / int64 shapes).
It prints figures and exits 0 even when ctosa is slower; 2 on setup errors.
"""
import argparse
import glob
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
RAN = re.compile(r"best ([0-9.]+) ms, median ([0-9.]+) ms, mean [0-9.]+ ms, CPU median ([0-9.]+) ms")
ORT = re.compile(r"best_ms=([0-9.]+) median_ms=([0-9.]+) mean_ms=[0-9.]+ cpu_median_ms=([0-9.]+)")


def die(msg):
    print(f"bench_ort: {msg}", file=sys.stderr)
    sys.exit(2)


def sh(cmd, **kw):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)


def random_inputs(model, d):
    """Inputs for a given .onnx without input_<i>.npy: random values of the
    declared shapes (symbolic dimensions become 1)."""
    import onnx
    m = onnx.load(model, load_external_data=False)
    inits = {i.name for i in m.graph.initializer}
    rng = np.random.default_rng(1)
    out = []
    for i, vi in enumerate(x for x in m.graph.input if x.name not in inits):
        t = vi.type.tensor_type
        shape = [x.dim_value if x.HasField("dim_value") else 1 for x in t.shape.dim]
        if t.elem_type == onnx.TensorProto.FLOAT:
            a = rng.standard_normal(shape, dtype=np.float32)
        elif t.elem_type == onnx.TensorProto.INT64:
            a = rng.integers(0, 16, shape, dtype=np.int64)
        else:
            die(f"{model}: input '{vi.name}' has element type {t.elem_type}; give .npy inputs beside it")
        f = os.path.join(d, f"input_{i}.npy")
        np.save(f, a)
        out.append((vi.name, f))
    return out


def input_names(model):
    import onnx
    m = onnx.load(model, load_external_data=False)
    inits = {i.name for i in m.graph.initializer}
    return [x.name for x in m.graph.input if x.name not in inits], [x.name for x in m.graph.output]


def lower(ctosa, model, spec, out):
    stem = os.path.basename(model)[:-5]
    rep_path = os.path.join(out, stem + ".report.json")
    # --keep: a lowering newer than the model is reused (timing the
    # interpreter does not need the lowering redone)
    fresh = os.path.exists(rep_path) and os.path.getmtime(rep_path) > os.path.getmtime(model)
    r = subprocess.CompletedProcess([], 0) if fresh else sh([ctosa, "lower", model, "--spec", spec, "-o", out, "-q"])
    if r.returncode not in (0, 1) or not os.path.exists(rep_path):
        return None, f"lowering failed: {r.stdout.strip().splitlines()[-1] if r.stdout.strip() else r.returncode}"
    rep = json.load(open(rep_path))
    parts = rep.get("partitions", [])
    if rep["nodes_total"] == rep["nodes_delegated"] and len(parts) == 1:
        return os.path.join(out, parts[0]["file"]), "1 partition"
    fb = sorted({f["op_type"] for f in rep.get("fallback", [])})
    return (os.path.join(out, stem + ".partitioned.onnx"),
            f"{len(parts)} partitions, {len(rep.get('fallback', []))} CPU nodes ({','.join(fb)})")


def ctosa_time(ctosa, graph, inputs, threads, runs, outdir):
    cmd = [ctosa, "run", graph, "--threads", str(threads), "--runs", str(runs), "-o", outdir]
    for name, f in inputs:
        cmd += ["--input", f"{name}={f}"]
    r = sh(cmd)
    m = RAN.search(r.stdout)
    if r.returncode or not m:
        raise RuntimeError("ctosa run failed: " + r.stdout.strip()[-400:])
    return float(m.group(2)), float(m.group(3))


def ort_time(model, inputs, threads, runs, outdir):
    cmd = ["node", os.path.join(HERE, "ort_time.js"), model, str(threads), str(runs), outdir]
    cmd += [f"{n}={f}" for n, f in inputs]
    r = sh(cmd)
    m = ORT.search(r.stdout)
    if r.returncode or not m:
        raise RuntimeError("ORT failed: " + r.stdout.strip()[-400:])
    return float(m.group(2)), float(m.group(3))


def compare(outdir, out_names):
    worst = 0.0
    for i, name in enumerate(out_names):
        c = os.path.join(outdir, re.sub(r"[^A-Za-z0-9._-]", "_", name) + ".npy")
        o = os.path.join(outdir, f"ort_{i}.bin")
        if not (os.path.exists(c) and os.path.exists(o)):
            return "outputs not compared"
        a = np.load(c)
        b = np.fromfile(o, dtype=a.dtype).reshape(a.shape) if a.dtype != np.bool_ else None
        if b is None or a.dtype.kind != "f":
            continue
        scale = max(float(np.abs(b).max()), 1e-30)
        worst = max(worst, float(np.abs(a.astype(np.float64) - b).max()) / scale)
    return f"max|diff|/max|ort| {worst:.1e}"


def placement(build):
    """Prints whether the first two CPUs share a cache now (bench_placement):
    on a VM the host may move the vCPUs, and two-thread figures depend on it
    (bench/README.md)."""
    probe = os.path.join(build, "bench", "bench_placement")
    if os.cpu_count() and os.cpu_count() >= 2 and os.access(probe, os.X_OK):
        r = subprocess.run([probe], capture_output=True, text=True)
        if r.returncode == 0:
            print("== " + r.stdout.strip())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--models", default=os.path.join(ROOT, "build-models", "bench"))
    ap.add_argument("--only", default="")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--spec", default="TOSA-1.0+INT+FP")
    ap.add_argument("--keep", default="", help="directory for the lowered graphs (default: a temporary one)")
    ap.add_argument("onnx", nargs="*")
    a = ap.parse_args()
    ctosa = os.path.join(a.build, "ctosa")
    if not os.access(ctosa, os.X_OK):
        die(f"{ctosa} not built (cmake -S . -B build -DCMAKE_BUILD_TYPE=Release && make -C build ctosa)")
    if not os.path.isdir(os.path.join(ROOT, "tools", "ort", "node_modules", "onnxruntime-node")):
        die("ONNX Runtime not installed: (cd tools/ort && npm install --ignore-scripts)")
    only = {n for n in a.only.split(",") if n}
    nets = []
    for m in sorted(glob.glob(os.path.join(a.models, "*", "model.onnx"))):
        name = os.path.basename(os.path.dirname(m))
        if not only or name in only:
            nets.append((name, m))
    for m in a.onnx:
        if not os.path.exists(m):
            die(f"{m}: no such file")
        nets.append((os.path.basename(m)[:-5], m))
    if not nets:
        die(f"no networks: run /usr/bin/python3 bench/make_networks.py (models go to {a.models})")
    threads = [int(t) for t in a.threads.split(",")]
    work = a.keep or tempfile.mkdtemp(prefix="bench_ort.")
    load = open("/proc/loadavg").read().split()[:3]
    cpu = next((ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo") if ln.startswith("model name")), "?")
    print(f"== {os.cpu_count()} CPUs ({cpu}), load {' '.join(load)}; {a.rounds} alternating rounds of "
          f"{a.runs} runs after a warm-up; ratio = ctosa median / ORT median, median over rounds")
    placement(a.build)
    ratios = {t: [] for t in threads}
    cratios = {t: [] for t in threads}
    print(f"{'network':<20} {'thr':>3} {'ctosa ms':>9} {'ORT ms':>9} {'ratio':>6} "
          f"{'ctosa CPU':>9} {'ORT CPU':>9} {'CPU ratio':>9}  notes")
    for name, model in nets:
        d = os.path.join(work, name)
        os.makedirs(d, exist_ok=True)
        mdir = os.path.dirname(os.path.abspath(model))
        names, out_names = input_names(model)
        files = [os.path.join(mdir, f"input_{i}.npy") for i in range(len(names))]
        if all(os.path.exists(f) and a.onnx.count(model) == 0 for f in files):
            inputs = list(zip(names, files))
        else:
            inputs = random_inputs(model, d)
        graph, how = lower(ctosa, model, a.spec, os.path.join(d, "low"))
        if not graph:
            print(f"{name:<20} {'':>3} {'':>9} {'':>9} {'-':>6}  {how}", flush=True)
            continue
        for t in threads:
            rr, cr, cm, om, cc, oc = [], [], [], [], [], []
            note = how
            try:
                for r in range(a.rounds):
                    c, ccpu = ctosa_time(ctosa, graph, inputs, t, a.runs, d)
                    o, ocpu = ort_time(model, inputs, t, a.runs, d if r == 0 else "-")
                    if r == 0:
                        note += "; " + compare(d, out_names)
                    rr.append(c / o)
                    cr.append(ccpu / ocpu if ocpu > 0 else float("nan"))
                    cm.append(c)
                    om.append(o)
                    cc.append(ccpu)
                    oc.append(ocpu)
            except RuntimeError as e:
                print(f"{name:<20} {t:>3} {'':>9} {'':>9} {'-':>6}  {e}", flush=True)
                continue
            ratio, cratio = statistics.median(rr), statistics.median(cr)
            ratios[t].append(ratio)
            cratios[t].append(cratio)
            print(f"{name:<20} {t:>3} {statistics.median(cm):>9.2f} {statistics.median(om):>9.2f} {ratio:>5.2f}x "
                  f"{statistics.median(cc):>9.2f} {statistics.median(oc):>9.2f} {cratio:>8.2f}x  {note}", flush=True)
    for t in threads:
        if ratios[t]:
            print(f"== {t} thread{'s' if t > 1 else ''}: median ratio {statistics.median(ratios[t]):.2f}x "
                  f"(max {max(ratios[t]):.2f}x), CPU-time ratio median {statistics.median(cratios[t]):.2f}x "
                  f"(max {max(cratios[t]):.2f}x) over {len(ratios[t])} networks")
    placement(a.build)
    print(f"== load after: {' '.join(open('/proc/loadavg').read().split()[:3])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
