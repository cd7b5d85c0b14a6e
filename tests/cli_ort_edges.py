#!/usr/bin/python3
"""cli_ort_edges.py CTOSA SRC_DIR TMP - ONNX operators at the edges of their
domain, lowered to TOSA, against ONNX Runtime.

Pow over the bases where TOSA POW is unpredictable and ONNX is not:
negative bases (integer exponents give signed results, others NaN), zero
bases with zero or negative exponents (1, inf, -inf for -0 and odd
exponents), infinities and NaN. The exponent is a uniform constant
(integers, including past the repeated-squaring limit, halves, other
fractions), a constant vector broadcast over the base, or a graph input
covering every base with every exponent; fp32, fp16 and int32. Every POW
a partition holds must only ever see a positive (or NaN) base: the POW
inputs are read back with `ctosa run --output`.

LpNormalization (p = 1 and 2) with slices whose norm is zero: 0 there, as
ORT, not NaN.

CastLike whose `like` operand is a graph input of shape [0]: the partition
must not take it as an input (it never reads it), and the partitioned model
runs.

Each case is a one-node model written here: `ctosa lower` must delegate
the node, `ctosa run` on the partitioned model must match ORT (the same
NaN positions, the same infinities, finite values within 2e-6 relative for
fp32 and 2^-10 for fp16, integers exactly). Where ORT has no kernel for a
type, ORT runs the fp32 model on the same values and its results are
rounded to fp16. Prints one line per case; exit 1 when one is off."""
import json
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto

ctosa, src, tmp = sys.argv[1:4]
ORT = os.path.join(src, "tools", "ort", "run_ort.js")
ONNX_T = {np.float32: TensorProto.FLOAT, np.float16: TensorProto.FLOAT16, np.int32: TensorProto.INT32}

BASES = np.array([-3, -2, -1.5, -1, -0.5, -0.0, 0.0, 0.5, 1, 1.5, 2, 3, -np.inf, np.inf, np.nan])
EXPS = np.array([-3, -2, -1, -0.5, 0, 0.5, 1, 2, 3, 2.5, -1.5, 1 / 3, 65, -65, 100, np.inf, -np.inf, np.nan])


def model(path, dt, x_shape, y, y_dt=None, op="Pow", out_dt=None, **attrs):
    """z = op(x, y): y an array (an initializer), a shape (an input) or
    None (a one-input operator)."""
    y_dt = y_dt or dt
    ins = [helper.make_tensor_value_info("x", ONNX_T[dt], list(x_shape))]
    inits = []
    if isinstance(y, np.ndarray):
        inits.append(numpy_helper.from_array(y.astype(y_dt), "y"))
    elif y is not None:
        ins.append(helper.make_tensor_value_info("y", ONNX_T[y_dt], list(y)))
    node = helper.make_node(op, ["x", "y"] if y is not None else ["x"], ["z"], name=op.lower(), **attrs)
    g = helper.make_graph([node], op.lower(), ins,
                          [helper.make_tensor_value_info("z", ONNX_T[out_dt or dt], None)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 15)])
    m.ir_version = 8
    onnx.save(m, path)


def run(args):
    return subprocess.run(args, capture_output=True, text=True)


def ort(path, feeds, out):
    r = run(["node", ORT, path, "--out", out, "--quiet"] + feeds)
    return np.load(os.path.join(out, "output_0.npy")) if r.returncode == 0 else r.stderr.strip()


def compare(got, ref):
    if got.shape != ref.shape or got.dtype != ref.dtype:
        return "shape/dtype %s %s, expected %s %s" % (got.shape, got.dtype, ref.shape, ref.dtype)
    if got.dtype.kind != "f":
        bad = got != ref
    else:
        np.seterr(invalid="ignore", over="ignore")
        g, r = got.astype(np.float64), ref.astype(np.float64)
        tol = 2e-6 if got.dtype == np.float32 else 2.0 ** -10
        both_nan = np.isnan(g) & np.isnan(r)
        same_inf = np.isinf(r) & (g == r)
        fin = np.isfinite(r) & np.isfinite(g)
        close = fin & (np.abs(g - r) <= tol * np.maximum(np.abs(r), np.finfo(got.dtype).tiny))
        bad = ~(both_nan | same_inf | close)
    if bad.any():
        i = np.argwhere(bad)[0]
        return "%d of %d differ, first at %s: %r, ORT %r" % (bad.sum(), bad.size, tuple(i), got[tuple(i)],
                                                              ref[tuple(i)])
    return None


def pow_bases_positive(out, part, feeds):
    """Every POW of the partition reads a base > 0 (or NaN) on these inputs."""
    d = json.loads(run([ctosa, "dump", part, "--format", "json"]).stdout)
    bases = [op["inputs"][0] for b in d["regions"][0]["blocks"] for op in b["operators"] if op["op"] == "POW"]
    if not bases:
        return None, 0
    args = [ctosa, "run", part, "-o", os.path.join(out, "bases"), "-q"]
    for n, f in feeds:
        args += ["--input", "%s=%s" % (n, f)]
    for i, n in enumerate(bases):
        args += ["--output", "%s=%s" % (n, os.path.join(out, "base%d.npy" % i))]
    r = run(args)
    if r.returncode:
        return "run for POW inputs: %s" % r.stderr.strip(), len(bases)
    for i, n in enumerate(bases):
        v = np.load(os.path.join(out, "base%d.npy" % i)).astype(np.float64)
        if (v <= 0).any():
            return "POW input '%s' holds %r" % (n, v[v <= 0][0]), len(bases)
    return None, len(bases)


def case(label, dt, x, y, y_dt=None, op="Pow", out_dt=None, **attrs):
    """op(x, y) with y a constant array (a 1-tuple), an input array or None."""
    out = os.path.join(tmp, label)
    os.makedirs(out, exist_ok=True)
    y_const = isinstance(y, tuple) or y is None
    if isinstance(y, tuple):
        y = y[0]
    path = os.path.join(out, "model.onnx")
    model(path, dt, x.shape, y if y_const else y.shape, y_dt, op, out_dt, **attrs)
    feeds = [("x", os.path.join(out, "x.npy"))]
    np.save(feeds[0][1], x.astype(dt))
    if not y_const:
        feeds.append(("y", os.path.join(out, "y.npy")))
        np.save(feeds[1][1], y.astype(y_dt or dt))
    r = run([ctosa, "lower", path, "--spec", "TOSA-1.0+FP+INT", "-o", out, "-q"])
    if r.returncode:
        return "lower exit %d: %s" % (r.returncode, r.stderr.strip())
    rep = json.load(open(os.path.join(out, "model.report.json")))
    # x^0 and x^1 lower to a fill and an identity: a partition that only
    # moves data is left to the CPU by design (and computes the same)
    if rep["nodes_delegated"] != 1 and [f["code"] for f in rep["fallback"]] != ["no_compute"]:
        return "%s not delegated: %s" % (op, json.dumps(rep["fallback"]))
    on_cpu = rep["nodes_delegated"] != 1
    # a partition input is a value some operator of the partition reads
    unread = [i["name"] for p in rep["partitions"] for i in p["inputs"] if op == "CastLike" and i["name"] == "y"]
    if unread:
        return "partition input %s is never read" % unread
    args = [ctosa, "run", os.path.join(out, "model.partitioned.onnx"), "-o", os.path.join(out, "rt"), "-q",
            "--output", "z=" + os.path.join(out, "z.npy")]
    for n, f in feeds:
        args += ["--input", "%s=%s" % (n, f)]
    r = run(args)
    if r.returncode:
        return "run exit %d: %s" % (r.returncode, r.stderr.strip())
    got = np.load(os.path.join(out, "z.npy"))
    ref = ort(path, [f for _, f in feeds], os.path.join(out, "ort"))
    note = ""
    if isinstance(ref, str) and dt == np.float16:
        # ORT's CPU Pow has no fp16 kernel: the fp32 model on the same values
        p32 = os.path.join(out, "model32.onnx")
        model(p32, np.float32, x.shape, y if y_const else y.shape, np.float32, op, out_dt, **attrs)
        f32 = []
        for n, f in feeds:
            f32.append(os.path.join(out, n + "32.npy"))
            np.save(f32[-1], np.load(f).astype(np.float32))
        ref = ort(p32, f32, os.path.join(out, "ort32"))
        if not isinstance(ref, str):
            ref = ref.astype(np.float16)
            note = " (ORT fp32, rounded)"
    if isinstance(ref, str):
        return "ORT: " + ref
    why = compare(got, ref)
    if why:
        return why
    if on_cpu:
        return "ok %d elements, on the CPU: no compute to delegate%s" % (got.size, note)
    why, n_pow = pow_bases_positive(out, os.path.join(out, "model.part0.tosa"), feeds)
    if why:
        return why
    return "ok %d elements, %d POW%s%s" % (got.size, n_pow, "" if n_pow == 1 else "s", note)


cases = []
for dt in (np.float32, np.float16):
    tag = "fp32" if dt == np.float32 else "fp16"
    x = BASES.reshape(-1, 1) * np.ones((1, 4))
    for e in EXPS:
        cases.append(("%s_const_%g" % (tag, e), dt, x, (np.array(e),)))
    # a constant vector broadcast over the base's last axis
    xv = BASES.reshape(-1, 1) * np.ones((1, 8))
    cases.append(("%s_const_vector" % tag, dt, xv, (np.array([-3, -2, -0.5, 0, 0.5, 2, 3, 2.5]),)))
    # the exponent as an input: every base with every exponent
    cases.append(("%s_input" % tag, dt, BASES.reshape(-1, 1), EXPS.reshape(1, -1)))
cases.append(("fp32_base_fp16_exponent", np.float32, BASES.reshape(-1, 1), EXPS.reshape(1, -1), np.float16))
ib = np.arange(-4, 5).reshape(-1, 1)
cases.append(("int32_input", np.int32, ib, np.arange(0, 6).reshape(1, -1)))
cases.append(("int32_const_3", np.int32, ib, (np.array(3),)))
cases = [("pow_" + c[0],) + tuple(c[1:]) for c in cases]

# LpNormalization: rows and columns of zeros among ordinary values
xl = np.array([[0, 0, 0, 0], [1, 0, 2, 4], [0, 0, 0, 0], [-0.0, 0, 3, 0]])
for dt in (np.float32, np.float16):
    for p in (1, 2):
        for axis in (-1, 0):
            cases.append(("lpnorm_%s_p%d_axis%d" % ("fp32" if dt == np.float32 else "fp16", p, axis), dt,
                          xl, None, None, "LpNormalization", {"p": p, "axis": axis}))

# CastLike: `like` only gives the type; as a graph input of shape [0]
for to in (np.float16, np.int32):
    cases.append(("castlike_empty_like_%s" % np.dtype(to).name, np.float32, np.array([[1.5, -2.25, 3], [0, 7, -1]]),
                  np.zeros((0,), to), to, "CastLike", to, {}))

failed = 0
for label, *a in cases:
    kw = a.pop() if len(a) in (6, 7) else {}
    why = case(label, *a, **kw)
    ok = why.startswith("ok")
    print("%-4s %-28s %s" % ("ok" if ok else "FAIL", label, why[3:] if ok else why))
    failed += not ok
print("%d of %d cases match ONNX Runtime" % (len(cases) - failed, len(cases)))
sys.exit(1 if failed else 0)
