#!/usr/bin/python3
"""cli_attn_ort.py CTOSA SRC_DIR TMP [NAME...] - the transformer operators (Attention,
RotaryEmbedding, RMSNormalization and a decoder block built from them)
under TOSA-1.0+FP against ONNX Runtime and the numpy references of
tests/data/lower/attn (gen.py there says what cases.txt means; a case
may name another spec), and the
variants of older operators transformer and vision exporters emit
(normalisations, reductions, CumSum, Trilu, Einsum, Mod, variadic ops,
Resize, pooling, Swish, TensorScatter) against ONNX Runtime, and the
opset 27/28 operators (CausalConvWithState, LinearAttention, SwiGLU), which
ONNX Runtime 1.30 does not load, against numpy references and, for a
"twin" case, ONNX Runtime's com.microsoft kernel of the same operator
(ort.onnx beside the model): a sample by default, every case with
CTOSA_LONG_TESTS=1.

For an "ok" case: `ctosa lower` must delegate every node into one
partition; `ctosa run MODEL.partitioned.onnx` must match ONNX Runtime
(tools/ort/run_ort.js) and the numpy reference within the case's tolerance
relative to each output's largest finite magnitude. A "reject" case must
leave node n0 on the CPU with the code and a reason naming the input or
attribute. Without onnxruntime-node the numpy references alone are used
(said on every line). Prints one line per case with the largest absolute
difference to ORT and exits 1 when a case fails."""
import glob
import json
import os
import subprocess
import sys

import numpy as np

ctosa, src, tmp = sys.argv[1:4]
ONLY = sys.argv[4:]  # substrings: run only the cases whose name has one
DATA = os.path.join(src, "tests", "data", "lower", "attn")
ORT = os.path.join(src, "tools", "ort", "run_ort.js")
HAVE_ORT = os.path.isdir(os.path.join(src, "tools", "ort", "node_modules", "onnxruntime-node"))


def compare(got, ref, tol):
    """(ok, max abs difference, relative difference)."""
    if got.shape != ref.shape:
        return False, float("inf"), "shape %s, expected %s" % (got.shape, ref.shape)
    g, r = got.astype(np.float64), ref.astype(np.float64)
    same_inf = (np.isinf(g) & np.isinf(r) & (np.sign(g) == np.sign(r))) | (np.isnan(g) & np.isnan(r))
    with np.errstate(invalid="ignore"):
        d = np.where(same_inf, 0.0, np.abs(g - r))
    fin = np.abs(r[np.isfinite(r)])
    m = fin.max() if fin.size else 0.0
    ad = float(d.max()) if d.size else 0.0
    rel = ad / m if m else ad
    return bool(rel <= tol), ad, "rel %.2g" % rel


def run_case(name, kind, args):
    d = os.path.join(DATA, name)
    model = os.path.join(d, "model.onnx")
    out = os.path.join(tmp, name)
    spec = ([a[5:] for a in args if a.startswith("spec=")] or ["TOSA-1.0+FP"])[0]
    r = subprocess.run([ctosa, "lower", model, "--spec", spec, "-o", out, "-q"],
                       capture_output=True, text=True)
    if r.returncode:
        return False, "lower exit %d: %s" % (r.returncode, r.stderr.strip())
    rep = json.load(open(os.path.join(out, "model.report.json")))
    if kind == "reject":
        code, word = args[0], args[1]
        for fb in rep["fallback"]:
            if fb.get("node") == "n0":
                ok = fb.get("code") == code and word in fb.get("reason", "")
                return ok, "falls back: %s (%s)" % (fb.get("code"), fb.get("reason"))
        return False, "node n0 was delegated, expected %s" % code
    tol = float(args[0])
    numpy_only = "numpy" in args[1:]
    ort_only = "ort" in args[1:]
    ort_model = os.path.join(d, "ort.onnx") if "twin" in args[1:] else model
    if ort_only and not HAVE_ORT:
        return True, "skipped: ONNX Runtime is its only reference and onnxruntime-node is missing"
    if rep["fallback"] or rep["nodes_delegated"] != rep["nodes_total"] or len(rep["partitions"]) != 1:
        return False, "%d/%d delegated, %d partitions: %s" % (
            rep["nodes_delegated"], rep["nodes_total"], len(rep["partitions"]),
            "; ".join("%s %s" % (f.get("node"), f.get("reason")) for f in rep["fallback"]))
    names = rep["graph"]["inputs"]
    feeds = [os.path.join(d, "input_%s.npy" % n) for n in names]
    cmd = [ctosa, "run", os.path.join(out, "model.partitioned.onnx"), "-o", os.path.join(out, "rt"), "-q"]
    for n, f in zip(names, feeds):
        cmd += ["--input", "%s=%s" % (n, f)]
    outs = rep["graph"]["outputs"]
    for i, n in enumerate(outs):
        cmd += ["--output", "%s=%s" % (n, os.path.join(out, "rt_%d.npy" % i))]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        return False, "run exit %d: %s" % (r.returncode, r.stderr.strip())
    use_ort = HAVE_ORT and not numpy_only
    if use_ort:
        r = subprocess.run(["node", ORT, ort_model, "--out", os.path.join(out, "ort"), "--quiet"] + feeds,
                           capture_output=True, text=True)
        if r.returncode:
            return False, "ORT exit %d: %s" % (r.returncode, r.stderr.strip())
    ok, notes = True, []
    for i, n in enumerate(outs):
        got = np.load(os.path.join(out, "rt_%d.npy" % i))
        note = n
        if not ort_only:
            o1, ad1, why1 = compare(got, np.load(os.path.join(d, "output_%d.npy" % i)), tol)
            note += " numpy %s" % why1
            ok &= o1
        if use_ort:
            o2, ad2, why2 = compare(got, np.load(os.path.join(out, "ort", "output_%d.npy" % i)), tol)
            ok &= o2
            note += ", ORT max abs %.2g %s" % (ad2, why2)
        notes.append(note)
    src_note = " [ORT: its com.microsoft kernel]" if use_ort and ort_model != model else ""
    src_note = src_note if use_ort else (" [numpy only: ORT cannot run it]" if numpy_only else " [numpy only: no ORT]")
    return ok, "1 partition%s%s; %s" % ("" if spec == "TOSA-1.0+FP" else " under " + spec, src_note, "; ".join(notes))


def main():
    failed = n = 0
    long_run = bool(os.environ.get("CTOSA_LONG_TESTS"))
    for line in open(os.path.join(DATA, "cases.txt")):
        parts = line.split()
        if len(parts) < 3 or (parts[-1] == "long" and not long_run):
            continue
        if ONLY and not any(o in parts[0] for o in ONLY):
            continue
        n += 1
        ok, why = run_case(parts[0], parts[1], parts[2:])
        print("%-4s %-34s %s" % ("ok" if ok else "FAIL", parts[0], why))
        failed += not ok
    print("%d of %d cases pass%s" % (n - failed, n, "" if HAVE_ORT else " (no onnxruntime-node: numpy references only)"))
    return 1 if failed or (n < 40 and not ONLY) else 0


if __name__ == "__main__":
    sys.exit(main())
