#!/usr/bin/python3
"""Per-layer accuracy check of a quantized (QDQ) ONNX model: ctosa against
ONNX Runtime, every layer fed ONNX Runtime's own inputs.

Deep quantized networks amplify single-step rounding differences, so the
final outputs of two correct integer implementations can drift apart. This
tool separates "each layer computes what ONNX Runtime computes" from that
growth (docs/quantization.md, "Checking a quantized model layer by layer"):

1. Every QuantizeLinear output (a quantized activation) becomes a graph
   output of a copy of the model; ONNX Runtime runs it with all graph
   optimisations (its fused integer kernels, "fused") and with none (the
   float QDQ definition, "unfused").
2. A "cut" copy reads every quantized activation from a graph input of its
   own instead of from the layer that made it, so each layer (the
   DequantizeLinear -> operators -> QuantizeLinear group ctosa folds) sees
   exactly ORT's fused value of its inputs. ctosa lowers the cut copy once
   (the given spec or target and options) and runs it on every input set;
   ONNX Runtime runs it unfused on the same values.
3. Per layer, in steps of the layer's output: ctosa against ORT fused
   (largest difference "max", share of differing elements "differ%", mean
   signed difference "bias": a systematic rounding bias shows there); ORT's
   own unfused run against its fused run ("ORTu"); ctosa against ORT's
   unfused run, i.e. against the QDQ definition evaluated in float32
   ("def"). "cut check" counts elements where ORT on the cut model differs
   from ORT on the whole model (0 unless ORT fuses across layers).

With --whole, the model itself is lowered and run too, and its final
outputs compared with ORT's fused run (within 3 output steps, largest
difference, same top-1) next to ORT's unfused run against the fused one.

Usage (Debian's /usr/bin/python3 with python3-onnx and numpy; node with
tools/ort installed):
  tools/models/qdq_layers.py CTOSA MODEL.onnx --inputs X.npy [options]
  tools/models/qdq_layers.py CTOSA MODEL_DIR [options]
MODEL_DIR holds model.onnx and inputs_20.npy. X.npy holds the input sets
of the model's (only) graph input stacked on a new first axis; for models
with several inputs give NAME=FILE.npy for each (--inputs is repeatable).
Options:
  -n N             use the first N input sets (default: all)
  --spec S / --target T / --requant M   passed to `ctosa lower`
                   (default --spec TOSA-1.0+INT)
  --tol K          exit status 1 when a delegated layer differs from ORT's
                   fused run by more than K steps (default 1)
  --whole          also lower and run the whole model (final outputs)
  --all            print every layer, not only those that differ
  --json FILE      write the figures as JSON
  --keep DIR       keep the work folder (models, ORT and ctosa outputs)
Exit status: 0 within --tol, 1 a layer beyond it, 2 bad usage or a failed
tool run.
"""
import argparse
import collections
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
ORT_JS = os.path.join(HERE, "..", "ort", "run_ort.js")
NP_TO_ONNX = {np.dtype(np.uint8): TensorProto.UINT8, np.dtype(np.int8): TensorProto.INT8,
              np.dtype(np.int16): TensorProto.INT16, np.dtype(np.uint16): TensorProto.UINT16,
              np.dtype(np.float32): TensorProto.FLOAT}
CUT = "__ort"  # suffix of the cut model's graph input standing for a quantized activation


def die(msg):
    print("qdq_layers: " + msg, file=sys.stderr)
    sys.exit(2)


def run(cmd, what):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        die("%s failed (exit %d): %s\n%s" % (what, r.returncode, " ".join(cmd[:4]), r.stderr[-2000:]))
    return r.stdout


def const_types(g):
    """element type of every initializer and Constant output, and of the
    Identity outputs that pass one on (torch's exporter shares constants)"""
    t = {i.name: i.data_type for i in g.initializer}
    for n in g.node:
        if n.op_type == "Constant":
            for a in n.attribute:
                if a.name == "value":
                    t[n.output[0]] = a.t.data_type
        elif n.op_type == "Identity" and n.input[0] in t:
            t[n.output[0]] = t[n.input[0]]
    return t


def fname(name):
    """the file name `ctosa run -o` gives a tensor"""
    return "".join(ch if ch.isalnum() or ch in "._-" else "_" for ch in name)


def layer_kinds(g, qouts):
    """For each QuantizeLinear output: the operator types between it and the
    quantized activations (or graph inputs) it is computed from."""
    prod = {o: n for n in g.node for o in n.output}
    skip = {"DequantizeLinear", "QuantizeLinear", "Constant", "ConstantOfShape", "Identity", "Cast"}
    ginputs = set(i.name for i in g.input)
    kinds = {}
    for q in qouts:
        ops, seen, stack = set(), set(), [prod[q].input[0]]
        while stack:
            t = stack.pop()
            n = prod.get(t)
            if n is None or t in seen or t in qouts:
                continue
            seen.add(t)
            if n.op_type not in skip:
                ops.add(n.op_type)
            if n.op_type == "QuantizeLinear":
                continue
            stack.extend(x for x in n.input if x)
        # no operator: the model's input QuantizeLinear, or a DequantizeLinear
        # -> QuantizeLinear pair (a requantisation)
        kinds[q] = "+".join(sorted(ops)) or ("QuantizeLinear" if prod[q].input[0] in ginputs else "Requantize")
    return kinds


def ort_batch(model, feeds, out, opt, nout):
    """ORT over every input set; feeds: {name: stacked .npy} in the order of
    the graph inputs (given by position: run_ort.js reads a name holding a
    '/' as a path); -> list of arrays"""
    key = json.dumps([opt] + [hashlib.md5(open(f, "rb").read()).hexdigest() for f in [model, *feeds.values()]])
    done = os.path.join(out, "done.json")
    if os.path.isfile(done) and open(done).read() == key:
        return [np.load(os.path.join(out, "output_%d.npy" % i)) for i in range(nout)]
    os.makedirs(out, exist_ok=True)
    run(["node", ORT_JS, model, "--out", out, "--opt", opt, "--batch", "--quiet"] + list(feeds.values()),
        "ONNX Runtime (%s)" % opt)
    with open(done, "w") as f:  # --keep: a later run on the same files reuses these outputs
        f.write(key)
    return [np.load(os.path.join(out, "output_%d.npy" % i)) for i in range(nout)]


def prune(g, keep_outputs):
    """drop nodes whose outputs nothing reads"""
    need = set(keep_outputs)
    live = []
    for n in reversed(list(g.node)):
        if any(o in need for o in n.output):
            live.append(n)
            need.update(x for x in n.input if x)
    live.reverse()
    del g.node[:]
    g.node.extend(live)
    used = set(x for n in live for x in n.input)
    ins = [i for i in g.input if i.name in used]
    del g.input[:]
    g.input.extend(ins)


def ctosa_lower(ctosa, model, out, lower_args):
    run([ctosa, "lower", model, "-o", out, "-q", "--stem", "m"] + lower_args, "ctosa lower")
    return json.load(open(os.path.join(out, "m.report.json")))


def ctosa_runs(ctosa, pdir, nsets, feeds_of, want, work):
    """ctosa run of the partitioned model for every input set; feeds_of(k)
    gives {graph input: array}; returns {output name: stacked array}"""
    got = collections.defaultdict(list)
    for k in range(nsets):
        args = []
        for j, (name, arr) in enumerate(feeds_of(k).items()):
            f = os.path.join(work, "in%d.npy" % j)
            np.save(f, arr)
            args += ["--input", "%s=%s" % (name, f)]
        od = os.path.join(work, "out")
        shutil.rmtree(od, ignore_errors=True)
        run([ctosa, "run", os.path.join(pdir, "m.partitioned.onnx"), "-o", od, "-q"] + args, "ctosa run")
        for name in want:
            got[name].append(np.load(os.path.join(od, fname(name) + ".npy")))
    return {n: np.stack(v) for n, v in got.items()}


def steps(a, b):
    return a.astype(np.int64) - b.astype(np.int64)


def top1(a, b):
    a = a.reshape(len(a), -1)
    b = b.reshape(len(b), -1)
    return int(sum(1 for i in range(len(a)) if set(np.flatnonzero(a[i] == a[i].max())) &
                   set(np.flatnonzero(b[i] == b[i].max()))))


def out_step(g, name):
    """scale of the QuantizeLinear behind a DequantizeLinear graph output"""
    prod = {o: n for n in g.node for o in n.output}
    inits = {i.name: numpy_helper.to_array(i) for i in g.initializer}
    for n in g.node:
        if n.op_type == "Constant":
            for a in n.attribute:
                if a.name == "value":
                    inits[n.output[0]] = numpy_helper.to_array(a.t)
    n = prod.get(name)
    while n is not None and n.op_type in ("Identity", "Reshape", "Flatten", "Squeeze"):
        n = prod.get(n.input[0])
    if n is None or n.op_type != "DequantizeLinear" or n.input[1] not in inits:
        return None
    s = inits[n.input[1]]
    return float(s) if s.size == 1 else None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("ctosa")
    ap.add_argument("model")
    ap.add_argument("--inputs", action="append", default=[])
    ap.add_argument("-n", type=int, default=0)
    ap.add_argument("--spec")
    ap.add_argument("--target")
    ap.add_argument("--requant")
    ap.add_argument("--tol", type=int, default=1)
    ap.add_argument("--whole", action="store_true")
    ap.add_argument("--all", action="store_true")
    ap.add_argument("--json")
    ap.add_argument("--keep")
    a = ap.parse_args()
    t0 = time.time()
    mpath = a.model
    if os.path.isdir(mpath):
        if not a.inputs:
            a.inputs = [os.path.join(mpath, "inputs_20.npy")]
        mpath = os.path.join(mpath, "model.onnx")
    if not os.path.isfile(mpath):
        die("%s: no such model" % mpath)
    if not a.inputs:
        die("give --inputs X.npy (input sets stacked on a new first axis)")
    lower_args = ["--target", a.target] if a.target else ["--spec", a.spec or "TOSA-1.0+INT"]
    if a.requant:
        lower_args += ["--requant", a.requant]
    m = onnx.load(mpath)
    g = m.graph
    inits = set(i.name for i in g.initializer)
    ginputs = [i.name for i in g.input if i.name not in inits]
    xs = {}
    for spec in a.inputs:
        name, _, f = spec.rpartition("=") if "=" in spec else (None, None, spec)
        if name is None:
            if len(ginputs) != 1:
                die("the model has %d inputs: give NAME=FILE.npy for each" % len(ginputs))
            name = ginputs[0]
        if name not in ginputs:
            die("%s: not a graph input of %s" % (name, mpath))
        xs[name] = np.load(f)
    if set(xs) != set(ginputs):
        die("missing input sets for %s" % ", ".join(sorted(set(ginputs) - set(xs))))
    nsets = min(len(v) for v in xs.values())
    if a.n:
        nsets = min(nsets, a.n)
    xs = {k: v[:nsets] for k, v in xs.items()}
    work = a.keep or tempfile.mkdtemp(prefix="qdq_layers_")
    os.makedirs(work, exist_ok=True)
    feeds = {}
    for k in ginputs:
        v = xs[k]
        feeds[k] = os.path.join(work, "x_%s.npy" % fname(k))
        np.save(feeds[k], v)

    # 1. every quantized activation as a graph output, ORT fused and unfused
    ctype = const_types(g)
    qnodes = [n for n in g.node if n.op_type == "QuantizeLinear"]
    qouts = [n.output[0] for n in qnodes]
    if not qouts:
        die("%s has no QuantizeLinear" % mpath)
    qtype = {n.output[0]: ctype.get(n.input[2], TensorProto.UINT8) if len(n.input) > 2 and n.input[2]
             else TensorProto.UINT8 for n in qnodes}
    orig_outs = [o.name for o in g.output]
    full = onnx.ModelProto()
    full.CopyFrom(m)
    have = set(orig_outs)
    for q in qouts:
        if q not in have:
            full.graph.output.append(helper.make_tensor_value_info(q, qtype[q], None))
    full_path = os.path.join(work, "full.onnx")
    onnx.save(full, full_path)
    names = [o.name for o in full.graph.output]
    fused = dict(zip(names, ort_batch(full_path, feeds, os.path.join(work, "ort_fused"), "all", len(names))))
    unfused = dict(zip(names, ort_batch(full_path, feeds, os.path.join(work, "ort_unfused"), "disabled",
                                        len(names))))

    # 2. the cut model: each quantized activation read from a graph input
    cut = onnx.ModelProto()
    cut.CopyFrom(m)
    cg = cut.graph
    consumed = set(x for n in cg.node for x in n.input)
    # a QuantizeLinear of a constant (weights kept in float by the exporter)
    # stays: its output is the same in every run and downstream lowerings
    # need it constant
    qin = {n.output[0]: n.input[0] for n in qnodes}
    fed = [q for q in qouts if q in consumed and qin[q] not in ctype]
    for n in cg.node:
        for i, x in enumerate(n.input):
            if x in fed:
                n.input[i] = x + CUT
    for q in fed:
        arr = fused[q]
        cg.input.append(helper.make_tensor_value_info(q + CUT, NP_TO_ONNX[arr.dtype], list(arr.shape[1:])))
    del cg.output[:]
    for q in qouts:
        cg.output.append(helper.make_tensor_value_info(q, qtype[q], list(fused[q].shape[1:])))
    prune(cg, qouts)
    cut_path = os.path.join(work, "cut.onnx")
    onnx.save(cut, cut_path)
    cut_in = [i.name for i in cg.input if i.name not in inits]
    cfeeds = {}
    for name in cut_in:
        if name in feeds:
            cfeeds[name] = feeds[name]
        else:
            cfeeds[name] = os.path.join(work, "a_%d.npy" % len(cfeeds))
            np.save(cfeeds[name], fused[name[:-len(CUT)]])
    cut_fused = dict(zip(qouts, ort_batch(cut_path, cfeeds, os.path.join(work, "cut_fused"), "all",
                                          len(qouts))))
    cut_unfused = dict(zip(qouts, ort_batch(cut_path, cfeeds, os.path.join(work, "cut_unfused"), "disabled",
                                            len(qouts))))

    # 3. ctosa on the cut model, fed the same values
    rep = ctosa_lower(a.ctosa, cut_path, os.path.join(work, "ctosa_cut"), lower_args)
    cpu = set(f["node"] for f in rep.get("fallback", []))

    def cut_feeds(k):
        d = {}
        for name in cut_in:
            v = xs[name][k] if name in xs else fused[name[:-len(CUT)]][k]
            d[name] = np.ascontiguousarray(v)
        return d

    ours = ctosa_runs(a.ctosa, os.path.join(work, "ctosa_cut"), nsets, cut_feeds, qouts, work)
    kinds = layer_kinds(g, set(qouts))
    qnode_of = {n.output[0]: n for n in qnodes}
    rows = []
    for q in qouts:
        ref = fused[q]
        d = steps(ours[q].reshape(ref.shape), ref)
        du = steps(cut_unfused[q].reshape(ref.shape), ref)
        dc = steps(cut_fused[q].reshape(ref.shape), ref)
        dd = steps(ours[q].reshape(ref.shape), cut_unfused[q].reshape(ref.shape))
        on_cpu = qnode_of[q].name in cpu
        rows.append({"layer": q, "kind": kinds[q], "elements": int(d.size), "cpu": bool(on_cpu),
                     "max": int(np.abs(d).max()), "differ": int((d != 0).sum()),
                     "bias": float(d.mean()), "up": int((d > 0).sum()), "down": int((d < 0).sum()),
                     "ort_unfused_max": int(np.abs(du).max()), "ort_unfused_differ": int((du != 0).sum()),
                     "definition_max": int(np.abs(dd).max()), "definition_differ": int((dd != 0).sum()),
                     "cut_check": int((dc != 0).sum())})
    res = {"model": mpath, "lower": " ".join(lower_args), "sets": nsets, "layers": rows}

    if a.whole:
        rep_w = ctosa_lower(a.ctosa, mpath, os.path.join(work, "ctosa_whole"), lower_args)
        whole = ctosa_runs(a.ctosa, os.path.join(work, "ctosa_whole"), nsets,
                           lambda k: {n: np.ascontiguousarray(xs[n][k]) for n in xs}, orig_outs, work)
        res["whole"] = []
        for o in orig_outs:
            ref = fused[o].astype(np.float64)
            st = out_step(g, o) or 1.0
            w = np.abs(whole[o].reshape(ref.shape).astype(np.float64) - ref) / st
            u = np.abs(unfused[o].astype(np.float64) - ref) / st
            res["whole"].append({"output": o, "step": st, "delegated": rep_w.get("nodes_delegated"),
                                 "nodes": rep_w.get("nodes_total"), "partitions": len(rep_w.get("partitions", [])),
                                 "within3": 100.0 * float((w <= 3.0001).mean()), "max": float(w.max()),
                                 "top1": top1(whole[o].reshape(ref.shape), ref),
                                 "ort_unfused_within3": 100.0 * float((u <= 3.0001).mean()),
                                 "ort_unfused_max": float(u.max()), "ort_unfused_top1": top1(unfused[o], ref)})

    # report
    bad = [r for r in rows if r["max"] > a.tol and not r["cpu"]]
    print("%s: %d layers, %d input sets, ctosa lower %s" % (mpath, len(rows), nsets, " ".join(lower_args)))
    print("%-44s %-22s %10s %5s %9s %9s %5s %9s %5s %9s" % (
        "layer (QuantizeLinear output)", "kind", "elements", "max", "differ%", "bias", "ORTu", "ORTu%", "def",
        "def%"))
    for r in rows:
        if a.all or r["max"] or r["definition_max"] or r["ort_unfused_max"] > 1 or r["cut_check"]:
            print("%-44s %-22s %10d %5d %9.4f %+9.5f %5d %9.4f %5d %9.4f%s%s" % (
                r["layer"][-44:], r["kind"][:22], r["elements"], r["max"], 100.0 * r["differ"] / r["elements"],
                r["bias"], r["ort_unfused_max"], 100.0 * r["ort_unfused_differ"] / r["elements"],
                r["definition_max"], 100.0 * r["definition_differ"] / r["elements"],
                "  (CPU)" if r["cpu"] else "", "  (cut differs from the whole model in ORT: %d)" % r["cut_check"]
                if r["cut_check"] else ""))
    per = collections.OrderedDict()
    for r in rows:
        p = per.setdefault(r["kind"], [0, 0, 0, 0, 0, 0, 0, 0])
        p[0] += 1
        p[1] += r["elements"]
        p[2] += r["differ"]
        p[3] = max(p[3], r["max"])
        p[4] += r["ort_unfused_differ"]
        p[5] = max(p[5], r["ort_unfused_max"])
        p[6] += r["definition_differ"]
        p[7] = max(p[7], r["definition_max"])
    print("\nper kind: layers, elements; elements differing from ORT fused (max steps): ctosa, ORT unfused; "
          "ctosa from ORT unfused (the QDQ definition)")
    for kind, p in sorted(per.items(), key=lambda kv: -kv[1][1]):
        print("  %-30s %4d %11d %9d (%d) %9d (%d) %9d (%d)" % (kind[:30], *p))
    tot = sum(r["elements"] for r in rows)
    nd = sum(r["differ"] for r in rows)
    ndu = sum(r["ort_unfused_differ"] for r in rows)
    mx = max(r["max"] for r in rows)
    res["summary"] = {"layers": len(rows), "elements": tot, "differ": nd, "max": mx,
                      "layers_over_tol": len(bad), "ort_unfused_differ": ndu,
                      "ort_unfused_max": max(r["ort_unfused_max"] for r in rows),
                      "definition_differ": sum(r["definition_differ"] for r in rows),
                      "definition_max": max(r["definition_max"] for r in rows),
                      "cut_check": sum(r["cut_check"] for r in rows), "seconds": round(time.time() - t0, 1)}
    print("\nall layers: max %d step(s), %d of %d elements differ (%.4f%%), %d layer(s) beyond %d step(s); "
          "ORT unfused: max %d, %d differ; ctosa from ORT unfused: max %d, %d differ; cut check %d" % (
              mx, nd, tot, 100.0 * nd / tot, len(bad), a.tol, res["summary"]["ort_unfused_max"], ndu,
              res["summary"]["definition_max"], res["summary"]["definition_differ"], res["summary"]["cut_check"]))
    for w in res.get("whole", []):
        print("whole model, output %s (%d/%d nodes delegated, %d partition(s)): within 3 steps of ORT fused "
              "%.2f%%, max %.2f, top-1 %d/%d; ORT unfused vs fused: %.2f%%, max %.2f, top-1 %d/%d" % (
                  w["output"], w["delegated"], w["nodes"], w["partitions"], w["within3"], w["max"], w["top1"],
                  nsets, w["ort_unfused_within3"], w["ort_unfused_max"], w["ort_unfused_top1"], nsets))
    print("(%.1f s)" % (time.time() - t0))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)
    if not a.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
