#!/usr/bin/python3
"""cli_quant_deleg.py CTOSA SRC_DIR TMP - delegation and truthful
boundaries of small QDQ models written here, against ONNX Runtime.

Each model is lowered under one or more specs. Checked:
- which nodes stay on the CPU: exactly the list given per case (the
  boundary QuantizeLinear / DequantizeLinear with float sides, and the
  float operators a case places there on purpose), and the partition count;
- every partition input and output: the report's dtype, scale and zero
  point and the partitioned ONNX's type are those of the ONNX value of that
  name in the original model (its type from ONNX shape inference; scale
  and zero point from the QuantizeLinear that produced it, through no-op
  Casts);
- the partitioned model run by `ctosa run` against ONNX Runtime on the
  original model: within `tol` output quantisation steps everywhere.
Prints one line per case and spec; exit 1 when one is off."""
import glob
import json
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper, shape_inference

ctosa, src, tmp = sys.argv[1:4]
ORT = os.path.join(src, "tools", "ort", "run_ort.js")
rng = np.random.default_rng(7)
NP = {TensorProto.UINT8: np.uint8, TensorProto.INT8: np.int8, TensorProto.INT16: np.int16}
NAMES = {TensorProto.FLOAT: "float32", TensorProto.UINT8: "uint8", TensorProto.INT8: "int8",
         TensorProto.INT16: "int16", TensorProto.INT32: "int32"}


class G:
    """A small QDQ graph under construction."""

    def __init__(self):
        self.nodes, self.inits, self.k = [], [], 0

    def name(self, p):
        self.k += 1
        return "%s_%d" % (p, self.k)

    def const(self, arr, p="c"):
        n = self.name(p)
        self.inits.append(numpy_helper.from_array(np.asarray(arr), n))
        return n

    def op(self, op, ins, p=None, **at):
        out = self.name(p or op.lower())
        self.nodes.append(helper.make_node(op, ins, [out], name=out + "_node", **at))
        return out

    def q(self, x, s, zp, dt, cast=False):
        """QuantizeLinear (and, as torch writes it, a no-op Cast after it)."""
        y = self.op("QuantizeLinear", [x, self.const(np.float32(s), "s"), self.const(NP[dt](zp), "zp")], "q")
        return self.op("Cast", [y], "cast", to=dt) if cast else y

    def dq(self, x, s, zp, dt):
        return self.op("DequantizeLinear", [x, self.const(np.float32(s), "s"), self.const(NP[dt](zp), "zp")], "dq")

    def conv(self, x, cin, cout, wdt=TensorProto.INT8):
        w = rng.integers(-100, 100, (cout, cin, 3, 3)).astype(np.int8)
        ws = (rng.random(cout) * 0.01 + 0.002).astype(np.float32)
        wd = self.op("DequantizeLinear", [self.const(w, "w"), self.const(ws, "ws"),
                                          self.const(np.zeros(cout, np.int8), "wzp")], "wdq", axis=0)
        return self.op("Conv", [x, wd], "conv", pads=[1, 1, 1, 1])

    def model(self, x_shape, y, y_shape, path, opset=21):
        g = helper.make_graph(self.nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
                              [helper.make_tensor_value_info(y, TensorProto.FLOAT, y_shape)], self.inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
        m.ir_version = 8
        onnx.checker.check_model(m)
        onnx.save(m, path)


def dq_q_chain(path, dt):
    """x -> Q -> DQ -> Conv -> Q -> DQ -> Q (same parameters) -> DQ -> Q
    (another scale and zero point) -> DQ -> Conv -> Q -> DQ -> y."""
    g = G()
    u8 = dt == TensorProto.UINT8
    z = (lambda v: v + 128) if u8 else (lambda v: v)
    i16 = dt == TensorProto.INT16
    cast = dt != TensorProto.INT16
    h = g.dq(g.q("x", 0.02, z(0) if not i16 else 0, dt, cast), 0.02, z(0) if not i16 else 0, dt)
    s1 = 0.05 if not i16 else 0.0004
    h = g.q(g.conv(h, 3, 8), s1, z(3) if not i16 else 0, dt, cast)
    h = g.q(g.dq(h, s1, z(3) if not i16 else 0, dt), s1, z(3) if not i16 else 0, dt, cast)
    s2 = 0.0731 if not i16 else 0.00071
    h = g.q(g.dq(h, s1, z(3) if not i16 else 0, dt), s2, z(-5) if not i16 else 0, dt, cast)
    h = g.dq(h, s2, z(-5) if not i16 else 0, dt)
    s3 = 0.1 if not i16 else 0.002
    h = g.q(g.conv(h, 8, 4), s3, z(1) if not i16 else 0, dt, cast)
    y = g.dq(h, s3, z(1) if not i16 else 0, dt)
    g.model([1, 3, 8, 8], y, [1, 4, 8, 8], path)
    return s3


def split_dq(path):
    """int16 activations: a folded DequantizeLinear (a) read by two heads in
    two partitions (a float Conv between them stays on the CPU under
    TOSA-1.0+INT+int16): the second partition must read the int16 value
    under its own name, typed int16 with its scale, never the float name."""
    g = G()
    dt = TensorProto.INT16
    x = g.dq(g.q("x", 0.001, 0, dt), 0.001, 0, dt)
    a = g.dq(g.q(g.conv(x, 3, 3), 0.002, 0, dt), 0.002, 0, dt)
    b = g.dq(g.q(g.conv(a, 3, 3), 0.002, 0, dt), 0.002, 0, dt)  # head 1 reads a
    w = (rng.standard_normal((3, 3, 3, 3)) * 0.1).astype(np.float32)
    f = g.op("Conv", [b, g.const(w, "fw")], "fconv", pads=[1, 1, 1, 1])  # float: CPU
    c = g.dq(g.q(f, 0.002, 0, dt), 0.002, 0, dt)
    y = g.dq(g.q(g.op("Add", [a, c]), 0.003, 0, dt), 0.003, 0, dt)  # head 2 reads a
    g.model([1, 3, 8, 8], y, [1, 3, 8, 8], path)
    return 0.003


def float_conv_dq_weight(path):
    """A float Conv (its input not quantized, as shufflenet's after the
    channel shuffle) whose int8 weight behind a DequantizeLinear is larger
    than the size above which other dequantized constants stay run-time
    operators: TOSA needs the weight constant, so it is folded."""
    g = G()
    w = rng.integers(-127, 127, (128, 64, 3, 3)).astype(np.int8)
    ws = (rng.random(128) * 0.01 + 0.002).astype(np.float32)
    wd = g.op("DequantizeLinear", [g.const(w, "w"), g.const(ws, "ws"), g.const(np.zeros(128, np.int8), "wzp")],
              "wdq", axis=0)
    f = g.op("Conv", ["x", wd], "fconv", pads=[1, 1, 1, 1])
    y = g.dq(g.q(f, 0.05, 0, TensorProto.INT8), 0.05, 0, TensorProto.INT8)
    g.model([1, 64, 4, 4], y, [1, 128, 4, 4], path)
    return 0.05


def move_params(dt, requant):
    """(s0, z0, s1, z1): the input and output quantization of a data-movement
    test; the output's equal the input's unless `requant`."""
    i16 = dt == TensorProto.INT16
    s0, z0 = (0.0005, 0) if i16 else (0.03, 128 if dt == TensorProto.UINT8 else -3)
    s1, z1 = (s0 * 1.37, 0) if i16 else (0.041, 120 if dt == TensorProto.UINT8 else 7)
    return (s0, z0, s1, z1) if requant else (s0, z0, s0, z0)


def pad_move(path, dt, mode, requant):
    """x -> Q -> DQ -> Pad (reflect / edge / wrap) -> Q -> DQ -> y: the
    float Pad lowering's data movement on the integer carrier; with
    `requant` the output QuantizeLinear has other parameters (a RESCALE)."""
    g = G()
    s0, z0, s1, z1 = move_params(dt, requant)
    h = g.dq(g.q("x", s0, z0, dt), s0, z0, dt)
    pads = g.const(np.array([0, 0, 2, 1, 0, 0, 1, 2], np.int64), "pads")
    h = g.op("Pad", [h, pads], "pad", mode=mode)
    y = g.dq(g.q(h, s1, z1, dt), s1, z1, dt)
    g.model([1, 3, 5, 6], y, [1, 3, 8, 9], path)
    return s1


def shuffle_chain(path, dt, requant):
    """x -> Q -> DQ -> Reshape -> Transpose -> Reshape -> Slice -> Q -> DQ:
    a channel shuffle as torch exports it, in float between one
    DequantizeLinear and one QuantizeLinear: the moves run on the integer
    carrier and the QuantizeLinear requantises once (nothing when the
    parameters agree)."""
    g = G()
    s0, z0, s1, z1 = move_params(dt, requant)
    h = g.dq(g.q("x", s0, z0, dt), s0, z0, dt)
    h = g.op("Reshape", [h, g.const(np.array([1, 2, 4, 5, 6], np.int64), "shape")])
    h = g.op("Transpose", [h], perm=[0, 2, 1, 3, 4])
    h = g.op("Reshape", [h, g.const(np.array([1, 8, 5, 6], np.int64), "shape")])
    h = g.op("Slice", [h, g.const(np.array([2], np.int64), "st"), g.const(np.array([7], np.int64), "en"),
                       g.const(np.array([1], np.int64), "ax")])
    y = g.dq(g.q(h, s1, z1, dt), s1, z1, dt)
    g.model([1, 8, 5, 6], y, [1, 5, 5, 6], path)
    return s1


def run(args):
    return subprocess.run(args, capture_output=True, text=True)


def truth(m):
    """ONNX type of every value, and (scale, zero point) of quantized ones."""
    m = shape_inference.infer_shapes(m)
    g = m.graph
    types = {v.name: v.type.tensor_type.elem_type for v in list(g.value_info) + list(g.input) + list(g.output)}
    prod = {o: n for n in g.node for o in n.output}
    consts = {i.name: numpy_helper.to_array(i) for i in g.initializer}
    qp = {}
    for v in types:
        p = prod.get(v)
        while p is not None and p.op_type == "Cast":
            p = prod.get(p.input[0])
        if p is not None and p.op_type == "QuantizeLinear":
            qp[v] = (float(consts[p.input[1]]), int(consts[p.input[2]]))
    return types, qp


def check_boundaries(model, out):
    types, qp = truth(onnx.load(model))
    rep = json.load(open(glob.glob(os.path.join(out, "*.report.json"))[0]))
    pm = onnx.load(glob.glob(os.path.join(out, "*.partitioned.onnx"))[0])
    ptypes = {v.name: v.type.tensor_type.elem_type
              for v in list(pm.graph.value_info) + list(pm.graph.input) + list(pm.graph.output)}
    errs = []
    for p in rep["partitions"]:
        for io in p["inputs"] + p["outputs"]:
            n, t = io["name"], types.get(io["name"])
            if io["dtype"] != NAMES.get(t):
                errs.append("%s: report dtype %s, ONNX %s" % (n, io["dtype"], NAMES.get(t)))
            if ptypes.get(n) != t:
                errs.append("%s: partitioned ONNX type %s, ONNX %s" % (n, ptypes.get(n), t))
            if n in qp:
                s, z = qp[n]
                if "scale" not in io or abs(io["scale"] - s) > 1e-7 * s or io.get("zero_point") != z:
                    errs.append("%s: report scale/zero point %s/%s, ONNX %s/%s"
                                % (n, io.get("scale"), io.get("zero_point"), s, z))
            elif "scale" in io:
                errs.append("%s: report gives a scale to a %s value" % (n, NAMES.get(t)))
    return rep, errs


def case(name, build, specs, cpu_ops, n_parts, tol):
    """specs: spec -> expected CPU op types (sorted list) and partitions."""
    model = os.path.join(tmp, name + ".onnx")
    step = build(model)
    x = (rng.standard_normal([d.dim_value for d in onnx.load(model).graph.input[0].type.tensor_type.shape.dim])
         * 1.5).astype(np.float32)
    xin = os.path.join(tmp, name + "_x.npy")
    np.save(xin, x)
    od = os.path.join(tmp, name + "_ort")
    r = run(["node", ORT, model, "--out", od, "--quiet", "--opt", "disabled", xin])
    if r.returncode:
        print("FAIL %s: ORT: %s" % (name, r.stderr.strip()))
        return False
    ref = np.load(os.path.join(od, "output_0.npy"))
    ok = True
    for spec in specs:
        out = os.path.join(tmp, name + "_" + spec.replace("+", "_"))
        r = run([ctosa, "lower", model, "--spec", spec, "-o", out, "-q"])
        if r.returncode:
            print("FAIL %s %s: lower: %s" % (name, spec, r.stderr.strip()))
            ok = False
            continue
        rep, errs = check_boundaries(model, out)
        cpu = sorted(f["op_type"] for f in rep["fallback"])
        if cpu != sorted(cpu_ops[spec]):
            errs.append("CPU nodes %s, expected %s (%s)" % (cpu, sorted(cpu_ops[spec]),
                        "; ".join(f["reason"][:120] for f in rep["fallback"])))
        if len(rep["partitions"]) != n_parts[spec]:
            errs.append("%d partitions, expected %d" % (len(rep["partitions"]), n_parts[spec]))
        y = os.path.join(out, "y.npy")
        pm = glob.glob(os.path.join(out, "*.partitioned.onnx"))[0]
        onm = onnx.load(model).graph.output[0].name
        r = run([ctosa, "run", pm, "--input", "x=" + xin, "--output", onm + "=" + y, "-q"])
        if r.returncode:
            errs.append("run: " + r.stderr.strip())
        else:
            d = np.abs(np.load(y).astype(np.float64) - ref) / step
            if d.max() > tol + 1e-3:
                errs.append("%.2f steps from ONNX Runtime (at most %g)" % (d.max(), tol))
        print("%s %s %s: %d nodes delegated of %d, %d partitions%s" % (
            "FAIL" if errs else "ok  ", name, spec, rep["nodes_delegated"], rep["nodes_total"],
            len(rep["partitions"]), "".join("\n    " + e for e in errs)))
        ok &= not errs
    return ok


ok = True
for dt, nm in ((TensorProto.UINT8, "u8"), (TensorProto.INT8, "i8"), (TensorProto.INT16, "i16")):
    base = "TOSA-1.0+INT+int16" if dt == TensorProto.INT16 else "TOSA-1.0+INT"
    fp = base + "+FP"
    # the requantising DQ -> Q pair: one rounding as QuantizeLinear's, but
    # half up at exact ties (none in these random values): one step
    ok &= case("dq_q_" + nm, lambda p, dt=dt: dq_q_chain(p, dt), [base, fp],
               {base: ["QuantizeLinear", "DequantizeLinear"], fp: []}, {base: 1, fp: 1}, 1)
ok &= case("split_dq_i16", split_dq, ["TOSA-1.0+INT+int16"],
           {"TOSA-1.0+INT+int16": ["QuantizeLinear", "DequantizeLinear", "Conv", "QuantizeLinear",
                                   "DequantizeLinear"]},
           {"TOSA-1.0+INT+int16": 2}, 2)
for dt, nm in ((TensorProto.UINT8, "u8"), (TensorProto.INT8, "i8"), (TensorProto.INT16, "i16")):
    base = "TOSA-1.0+INT+int16" if dt == TensorProto.INT16 else "TOSA-1.0+INT"
    for mode in ("reflect", "edge", "wrap"):
        for rq in (False, True):
            ok &= case("pad_%s_%s%s" % (mode, nm, "_rq" if rq else ""),
                       lambda p, dt=dt, mode=mode, rq=rq: pad_move(p, dt, mode, rq), [base],
                       {base: ["QuantizeLinear", "DequantizeLinear"]}, {base: 1}, 1 if rq else 0)
for dt, nm in ((TensorProto.UINT8, "u8"), (TensorProto.INT8, "i8"), (TensorProto.INT16, "i16")):
    base = "TOSA-1.0+INT+int16" if dt == TensorProto.INT16 else "TOSA-1.0+INT"
    for rq in (False, True):
        ok &= case("shuffle_%s%s" % (nm, "_rq" if rq else ""), lambda p, dt=dt, rq=rq: shuffle_chain(p, dt, rq),
                   [base], {base: ["QuantizeLinear", "DequantizeLinear"]}, {base: 1}, 1 if rq else 0)
ok &= case("float_conv_dq_weight", float_conv_dq_weight, ["TOSA-1.0+INT+FP"], {"TOSA-1.0+INT+FP": []},
           {"TOSA-1.0+INT+FP": 1}, 1)
sys.exit(0 if ok else 1)
