#!/usr/bin/python3
"""QDQ models for the second layer of quantized lowerings (tests/test_quant_ops.c).

Each model takes integer tensors (input_<k>.npy for graph input k) and
returns integer tensors; ref_output_<k>.npy holds the ONNX QDQ semantics
computed in float64 with numpy (dequantize, float op, round half to even,
saturate), ort_output_<k>.npy ONNX Runtime's outputs (npm
onnxruntime-node through tools/ort, when installed). test_quant_ops.c states the tolerance per output in output
quantization steps. Deterministic (fixed seed). Run with Debian's python3:
    /usr/bin/python3 tests/data/lower/quant_ops/make_models.py
Models:
  table16   int16 activations through 513-entry TABLEs (11 functions)
  table_mixed  int8 -> int16 Sigmoid and int16 -> int8 Tanh through the int16 table
  ops16     int16 Add/Sub/Mul, MaxPool/AveragePool, Concat, Transpose,
            Slice, Reshape, MatMul of two activations (a16 x a16 -> int48)
  ops8      int8 Pad, Resize nearest/bilinear, ConvTranspose, Softmax,
            Sub, MatMul of two activations
  ops8_u8   the same kinds on uint8 tensors (torch's quint8)
  layernorm8, layernorm8_u8  LayerNormalization (opset 17) on int8 / uint8
  pad_reflect  Pad reflect: no group (float path under INT+FP)
  attention8   Transpose, MatMul of two activations, Mul, Softmax, MatMul
  convtr8   ConvTranspose 1-D, 2-D and 3-D with groups, dilations, output
            padding, per-channel weights, int8 and uint8
"""
import math
import os
import sys
import tempfile
import numpy as np
import onnx
from onnx import helper, TensorProto, numpy_helper

OUT = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(OUT, "..", "..", "..", "..", "tools", "models"))
import common  # noqa: E402  (tools/models: ONNX Runtime through tools/ort)
rng = np.random.default_rng(20261129)
NP2ONNX = {np.int16: TensorProto.INT16, np.int8: TensorProto.INT8, np.uint8: TensorProto.UINT8,
           np.int32: TensorProto.INT32}
f32 = lambda v: np.float64(np.float32(v))


def q(x, s, zp, dt):
    info = np.iinfo(dt)
    with np.errstate(invalid="ignore"):
        y = np.rint(x / f32(s)) + zp
    y = np.where(np.isnan(y), info.min, y)  # NaN (log of <= 0): the lowest value
    return np.clip(y, info.min, info.max).astype(dt)


def dq(x, s, zp):
    return (x.astype(np.float64) - zp) * f32(s)


class G:
    def __init__(self):
        self.nodes, self.inits, self.k = [], [], 0

    def const(self, arr):
        self.k += 1
        name = "c%d" % self.k
        self.inits.append(numpy_helper.from_array(np.asarray(arr), name))
        return name

    def node(self, op, ins, **attrs):
        self.k += 1
        out = "t%d" % self.k
        self.nodes.append(helper.make_node(op, ins, [out], name="%s_%d" % (op, self.k), **attrs))
        return out

    def dq(self, x, s, zp, axis=None):
        kw = {} if axis is None else {"axis": axis}
        return self.node("DequantizeLinear", [x, self.const(np.array(s, np.float32)), self.const(zp)], **kw)

    def q(self, x, s, zp):
        return self.node("QuantizeLinear", [x, self.const(np.array(s, np.float32)), self.const(zp)])


def save(name, g, ins, outs, opset):
    """ins: [(name, array)], outs: [(name, ref array)]"""
    vi = lambda n, a: helper.make_tensor_value_info(n, NP2ONNX[a.dtype.type], list(a.shape))
    graph = helper.make_graph(g.nodes, name, [vi(n, a) for n, a in ins], [vi(n, a) for n, a in outs], g.inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="ctosa-quant-gen")
    m.ir_version = 8 if opset <= 17 else 10
    if opset <= 17:
        onnx.checker.check_model(m, full_check=True)
    d = os.path.join(OUT, name)
    os.makedirs(d, exist_ok=True)
    onnx.save(m, os.path.join(d, "model.onnx"))
    for k, (_, a) in enumerate(ins):
        np.save(os.path.join(d, "input_%d.npy" % k), a)
    for k, (_, a) in enumerate(outs):
        np.save(os.path.join(d, "ref_output_%d.npy" % k), a)
    # ONNX Runtime's outputs (default optimisations), when tools/ort is installed
    with tempfile.TemporaryDirectory() as tmp:
        res = common.run_ort(os.path.join(d, "model.onnx"),
                             [os.path.join(d, "input_%d.npy" % k) for k in range(len(ins))], tmp)
        for k, a in enumerate(res or []):
            np.save(os.path.join(d, "ort_output_%d.npy" % k), a)


# ------------------------------------------------------------ table16
def erf(v):
    return np.vectorize(math.erf)(v)


def table16():
    x = np.concatenate([np.arange(-32768, 32768, 13), [32767, -1, 0, 1, 2]]).astype(np.int16)[None, :]
    sx = 8.0 / 32768
    fx = dq(x, sx, 0)
    sp = lambda v: np.where(v > 30, v, np.log1p(np.exp(np.minimum(v, 30))))
    with np.errstate(divide="ignore", invalid="ignore"):
        ops = [
            ("Sigmoid", {}, 1 / (1 + np.exp(-fx)), 1.0 / 32768),
            ("Tanh", {}, np.tanh(fx), 1.0 / 32768),
            ("HardSigmoid", {"alpha": 0.25, "beta": 0.5}, np.clip(f32(0.25) * fx + 0.5, 0, 1), 1.0 / 32768),
            ("HardSwish", {}, fx * np.clip(fx / 6 + 0.5, 0, 1), 8.0 / 32768),
            ("Gelu", {}, 0.5 * fx * (1 + erf(fx / math.sqrt(2))), 8.0 / 32768),
            ("Exp", {}, np.exp(fx), 3000.0 / 32768),
            ("Log", {}, np.log(fx), 10.0 / 32768),
            ("Erf", {}, erf(fx), 1.0 / 32768),
            ("Softplus", {}, sp(fx), 8.0 / 32768),
            ("Elu", {"alpha": 1.0}, np.where(fx >= 0, fx, np.expm1(fx)), 8.0 / 32768),
            ("LeakyRelu", {"alpha": 0.1}, np.where(fx >= 0, fx, f32(0.1) * fx), 4.0 / 32768),
        ]
    g = G()
    outs = []
    z16 = lambda: np.array(0, np.int16)
    for op, attrs, ref, sy in ops:
        t = g.node(op, [g.dq("x", sx, z16())], **attrs)
        outs.append((g.q(t, sy, z16()), q(ref, sy, 0, np.int16)))
    save("table16", g, [("x", x)], outs, 21)


# -------------------------------------------------------------- ops16
def pool(x, k, s, fn):
    n, c, h, w = x.shape
    oh, ow = (h - k) // s + 1, (w - k) // s + 1
    y = np.zeros((n, c, oh, ow))
    for i in range(oh):
        for j in range(ow):
            y[:, :, i, j] = fn(x[:, :, i * s:i * s + k, j * s:j * s + k], axis=(2, 3))
    return y


def ops16():
    a = rng.integers(-32768, 32768, size=(1, 4, 6, 6)).astype(np.int16)
    b = rng.integers(-32768, 32768, size=(1, 4, 6, 6)).astype(np.int16)
    sa, sb = 4.0 / 32768, 3.0 / 32768
    fa, fb = dq(a, sa, 0), dq(b, sb, 0)
    z = lambda: np.array(0, np.int16)
    g = G()
    A = lambda: g.dq("a", sa, z())
    B = lambda: g.dq("b", sb, z())
    outs = []
    def out(t, s, ref):
        outs.append((g.q(t, s, z()), q(ref, s, 0, np.int16)))
    out(g.node("Add", [A(), B()]), 7.0 / 32768, fa + fb)
    out(g.node("Sub", [A(), B()]), 6.5 / 32768, fa - fb)
    out(g.node("Mul", [A(), B()]), 12.0 / 32768, fa * fb)
    mq, mref = outs[-1]
    out(g.node("MaxPool", [A()], kernel_shape=[2, 2], strides=[2, 2]), 3.0 / 32768, pool(fa, 2, 2, np.max))
    out(g.node("AveragePool", [A()], kernel_shape=[2, 2], strides=[2, 2]), sa, pool(fa, 2, 2, np.mean))
    out(g.node("Concat", [A(), B()], axis=1), 4.0 / 32768, np.concatenate([fa, fb], 1))
    out(g.node("Transpose", [A()], perm=[0, 2, 3, 1]), 2.0 / 32768, fa.transpose(0, 2, 3, 1))
    out(g.node("Slice", [B(), g.const(np.array([1, 2], np.int64)), g.const(np.array([5, 6], np.int64)),
                         g.const(np.array([2, 3], np.int64))]), sb, fb[:, :, 1:5, 2:6])
    out(g.node("Slice", [B(), g.const(np.array([0], np.int64)), g.const(np.array([3], np.int64)),
                         g.const(np.array([1], np.int64))]), 2.0 / 32768, fb[:, 0:3])
    # after the Mul (a partition of data movement alone stays on the CPU)
    out(g.node("Reshape", [g.dq(mq, 12.0 / 32768, z()), g.const(np.array([1, 4, 36], np.int64))]), 12.0 / 32768,
        dq(mref, 12.0 / 32768, 0).reshape(1, 4, 36))
    out(g.node("MatMul", [A(), B()]), 40.0 / 32768, fa @ fb)
    out(g.node("GlobalAveragePool", [B()]), sb, fb.mean(axis=(2, 3), keepdims=True))
    # a16w8 ConvTranspose: int16 activations, int8 per-channel weights, int48 accumulator
    w = rng.integers(-127, 128, size=(4, 3, 3, 3)).astype(np.int8)
    ws = np.array([0.01, 0.02, 0.005], np.float32)
    bias = rng.integers(-50000, 50000, size=(3,)).astype(np.int32)
    bs = (np.float32(sa) * ws).astype(np.float32)
    wdq = g.dq(g.const(w), ws, np.zeros(3, np.int8), axis=1)
    bdq = g.dq(g.const(bias), bs, np.zeros(3, np.int32), axis=0)
    t = g.node("ConvTranspose", [A(), wdq, bdq], strides=[2, 2], pads=[1, 1, 0, 0])
    ref = convtr_ref(fa, w.astype(np.float64) * ws.astype(np.float64)[None, :, None, None], bias * bs.astype(np.float64),
                     2, 0, 0)[:, :, 1:, 1:]
    out(t, 40.0 / 32768, ref)
    save("ops16", g, [("a", a), ("b", b)], outs, 21)


# --------------------------------------------------------------- ops8
def resize_ref(x, scale, linear):
    # half_pixel coordinates; nearest: round_prefer_floor (ONNX defaults)
    n, c, h, w = x.shape
    oh, ow = h * scale, w * scale
    y = np.zeros((n, c, oh, ow))
    def coord(o, insz):
        v = (o + 0.5) / scale - 0.5
        return v
    for i in range(oh):
        for j in range(ow):
            yi, xj = coord(i, h), coord(j, w)
            if not linear:
                ri = int(math.ceil(yi - 0.5)) if yi - math.floor(yi) == 0.5 else int(round(yi))
                rj = int(math.ceil(xj - 0.5)) if xj - math.floor(xj) == 0.5 else int(round(xj))
                ri, rj = min(max(ri, 0), h - 1), min(max(rj, 0), w - 1)
                y[:, :, i, j] = x[:, :, ri, rj]
            else:
                yi, xj = min(max(yi, 0), h - 1), min(max(xj, 0), w - 1)
                i0, j0 = int(math.floor(yi)), int(math.floor(xj))
                i1, j1 = min(i0 + 1, h - 1), min(j0 + 1, w - 1)
                dy, dx = yi - i0, xj - j0
                y[:, :, i, j] = (x[:, :, i0, j0] * (1 - dy) * (1 - dx) + x[:, :, i0, j1] * (1 - dy) * dx +
                                 x[:, :, i1, j0] * dy * (1 - dx) + x[:, :, i1, j1] * dy * dx)
    return y


def convtr_ref(x, w, b, stride, pad, opad):
    n, c, h, wd = x.shape
    _, m, kh, kw = w.shape
    fh, fw = (h - 1) * stride + kh, (wd - 1) * stride + kw
    y = np.zeros((n, m, fh + opad, fw + opad))
    for i in range(h):
        for j in range(wd):
            y[:, :, i * stride:i * stride + kh, j * stride:j * stride + kw] += np.einsum("nc,cmhw->nmhw", x[:, :, i, j], w)
    oh, ow = fh + opad - 2 * pad, fw + opad - 2 * pad
    return y[:, :, pad:pad + oh, pad:pad + ow] + b[None, :, None, None]


def softmax(v, axis):
    e = np.exp(v - v.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def ops8(name, dt):
    u8 = dt == np.uint8
    lo, hi = (0, 256) if u8 else (-128, 128)
    za, zb = (131, 120) if u8 else (3, -2)
    a = rng.integers(lo, hi, size=(1, 3, 5, 5)).astype(dt)
    b = rng.integers(lo, hi, size=(1, 3, 5, 5)).astype(dt)
    sa, sb = 0.05, 0.04
    fa, fb = dq(a, sa, za), dq(b, sb, zb)
    Z = lambda v: np.array(v, dt)
    g = G()
    A = lambda: g.dq("a", sa, Z(za))
    B = lambda: g.dq("b", sb, Z(zb))
    outs = []
    def out(t, s, zp, ref):
        outs.append((g.q(t, s, Z(zp)), q(ref, s, zp, dt)))
    zo = 128 if u8 else 0
    pads = np.array([0, 0, 1, 2, 0, 0, 2, 1], np.int64)
    padded = lambda v, cv: np.pad(v, ((0, 0), (0, 0), (1, 2), (2, 1)), constant_values=cv)
    out(g.node("Pad", [A(), g.const(pads)]), sa, za, padded(fa, 0.0))
    out(g.node("Pad", [A(), g.const(pads), g.const(np.array(0.5, np.float32))]), 0.06, zo + 5, padded(fa, 0.5))
    roi, sc = g.const(np.array([], np.float32)), g.const(np.array([1, 1, 2, 2], np.float32))
    out(g.node("Resize", [A(), roi, sc], mode="nearest"), sa, za, resize_ref(fa, 2, False))
    out(g.node("Resize", [A(), roi, sc], mode="linear"), sa, za, resize_ref(fa, 2, True))
    out(g.node("Resize", [A(), roi, sc], mode="linear"), 0.03, zo + 7, resize_ref(fa, 2, True))
    out(g.node("Softmax", [A()], axis=-1), 1.0 / 256, -128 + zo, softmax(fa, -1))
    out(g.node("Softmax", [B()], axis=1), 1.0 / 256, -128 + zo, softmax(fb, 1))
    out(g.node("Sub", [A(), B()]), 0.08, zo - 4, fa - fb)
    out(g.node("MatMul", [A(), B()]), 0.12, zo + 2, fa @ fb)
    if not u8:
        w = rng.integers(-127, 128, size=(3, 4, 3, 3)).astype(np.int8)
        ws = np.array([0.01, 0.02, 0.005, 0.015], np.float32)
        bias = rng.integers(-500, 500, size=(4,)).astype(np.int32)
        bs = (np.float32(sa) * ws).astype(np.float32)
        wdq = g.dq(g.const(w), ws, np.zeros(4, np.int8), axis=1)
        bdq = g.dq(g.const(bias), bs, np.zeros(4, np.int32), axis=0)
        t = g.node("ConvTranspose", [A(), wdq, bdq], strides=[2, 2], pads=[1, 1, 1, 1], output_padding=[1, 1])
        ref = convtr_ref(fa, w.astype(np.float64) * ws.astype(np.float64)[None, :, None, None],
                         bias * bs.astype(np.float64), 2, 1, 1)
        out(t, 0.1, 1, ref)
    save(name, g, [("a", a), ("b", b)], outs, 13)


def layernorm(v, g, b, axis, eps):
    ax = tuple(range(axis % v.ndim, v.ndim))
    mu = v.mean(axis=ax, keepdims=True)
    var = ((v - mu) ** 2).mean(axis=ax, keepdims=True)
    return (v - mu) / np.sqrt(var + eps) * g + b


def layernorm8(name, dt):
    u8 = dt == np.uint8
    lo, hi = (0, 256) if u8 else (-128, 128)
    za = 140 if u8 else -5
    a = rng.integers(lo, hi, size=(2, 6, 64)).astype(dt)
    a[0, 1, :] = a[0, 1, 0]                              # a constant row: variance 0, eps decides
    a[0, 2, :] = za + rng.integers(-2, 3, size=64)      # a row of tiny variance
    a[1, 3, :] = np.where(np.arange(64) % 2 == 0, lo, hi - 1)  # the largest variance
    sa = 0.05
    fa = dq(a, sa, za)
    Z = lambda v: np.array(v, dt)
    zo = 128 if u8 else 0
    g = G()
    A = lambda: g.dq("a", sa, Z(za))
    outs = []
    def out(t, s, zp, ref):
        outs.append((g.q(t, s, Z(zp)), q(ref, s, zp, dt)))
    gam = rng.uniform(0.5, 1.5, size=64).astype(np.float32)
    gam[3], gam[7], gam[11] = -0.8, 0.0, 2.5
    bet = rng.uniform(-0.3, 0.3, size=64).astype(np.float32)
    t = g.node("LayerNormalization", [A(), g.const(gam), g.const(bet)], axis=-1, epsilon=1e-5)
    out(t, 4.0 / 128, zo, layernorm(fa, gam.astype(np.float64), bet.astype(np.float64), -1, np.float64(np.float32(1e-5))))
    # over the last two axes (N = 384), int8-quantized gamma as ORT's quantizer writes it, no bias
    gq = rng.integers(20, 127, size=(6, 64)).astype(np.int8)
    gdq = g.dq(g.const(gq), 0.01, np.array(0, np.int8))
    t = g.node("LayerNormalization", [A(), gdq], axis=1, epsilon=1e-3)
    out(t, 3.0 / 128, zo - 10, layernorm(fa, gq.astype(np.float64) * f32(0.01), 0.0, 1, np.float64(np.float32(1e-3))))
    save(name, g, [("a", a)], outs, 17)


def table_mixed():
    # int8 input -> int16 output (widened by 256 before the 513-entry table)
    # and int16 input -> int8 output (the table, then RESCALE to int8)
    x8 = np.arange(-128, 128).astype(np.int8)[None, :]
    x16 = np.arange(-32768, 32768, 97).astype(np.int16)[None, :]
    g = G()
    f8 = dq(x8, 0.05, -3)
    t = g.node("Sigmoid", [g.dq("x8", 0.05, np.array(-3, np.int8))])
    outs = [(g.q(t, 1.0 / 32768, np.array(0, np.int16)), q(1 / (1 + np.exp(-f8)), 1.0 / 32768, 0, np.int16))]
    f16 = dq(x16, 6.0 / 32768, 0)
    t = g.node("Tanh", [g.dq("x16", 6.0 / 32768, np.array(0, np.int16))])
    outs.append((g.q(t, 1.0 / 128, np.array(2, np.int8)), q(np.tanh(f16), 1.0 / 128, 2, np.int8)))
    save("table_mixed", g, [("x8", x8), ("x16", x16)], outs, 21)


def pad_reflect():
    # Pad mode reflect has no integer head: no group forms, and under
    # TOSA-1.0+INT+FP the DequantizeLinear, the float Pad and the
    # QuantizeLinear delegate one by one
    a = rng.integers(-128, 128, size=(1, 2, 4, 4)).astype(np.int8)
    g = G()
    t = g.node("Pad", [g.dq("a", 0.1, np.array(4, np.int8)), g.const(np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64))],
               mode="reflect")
    ref = np.pad(dq(a, 0.1, 4), ((0, 0), (0, 0), (1, 1), (1, 1)), mode="reflect")
    save("pad_reflect", g, [("a", a)], [(g.q(t, 0.1, np.array(4, np.int8)), q(ref, 0.1, 4, np.int8))], 13)


def attention8():
    # a quantized attention block: K^T (Transpose), Q K^T (MatMul of two
    # activations), scaling (Mul by a quantized constant), Softmax, P V
    x = [rng.integers(-128, 128, size=(1, 2, 8, 16)).astype(np.int8) for _ in range(3)]
    g = G()
    Z = lambda v: np.array(v, np.int8)
    Q, K, V = (g.dq(n, 0.05, Z(0)) for n in ("q", "k", "v"))
    kt = g.q(g.node("Transpose", [K], perm=[0, 1, 3, 2]), 0.05, Z(0))
    s = g.q(g.node("MatMul", [Q, g.dq(kt, 0.05, Z(0))]), 0.5, Z(0))
    s2 = g.q(g.node("Mul", [g.dq(s, 0.5, Z(0)), g.dq(g.const(np.array([100], np.int8)), 0.0025, Z(0))]), 0.1, Z(0))
    p = g.q(g.node("Softmax", [g.dq(s2, 0.1, Z(0))], axis=-1), 1 / 256, Z(-128))
    o = g.q(g.node("MatMul", [g.dq(p, 1 / 256, Z(-128)), V]), 0.05, Z(0))
    fq, fk, fv = (dq(v, 0.05, 0) for v in x)
    rs = dq(q(fq @ fk.transpose(0, 1, 3, 2), 0.5, 0, np.int8), 0.5, 0)
    rs2 = dq(q(rs * (100 * f32(0.0025)), 0.1, 0, np.int8), 0.1, 0)
    rp = dq(q(softmax(rs2, -1), 1 / 256, -128, np.int8), 1 / 256, -128)
    save("attention8", g, [("q", x[0]), ("k", x[1]), ("v", x[2])], [(o, q(rp @ fv, 0.05, 0, np.int8))], 13)


def convtr_nd_ref(x, w, b, strides, pads, opad, dil, group):
    """ONNX ConvTranspose in float64: pads [begin..., end...]."""
    n, C = x.shape[:2]
    sp, ks, Mg = x.shape[2:], w.shape[2:], w.shape[1]
    nd, Cg = len(sp), C // group
    full = [(sp[i] - 1) * strides[i] + (ks[i] - 1) * dil[i] + 1 + opad[i] for i in range(nd)]
    y = np.zeros((n, Mg * group) + tuple(full))
    for g in range(group):
        xg, wg = x[:, g * Cg:(g + 1) * Cg], w[g * Cg:(g + 1) * Cg]
        for idx in np.ndindex(*sp):
            for kidx in np.ndindex(*ks):
                pos = tuple(idx[i] * strides[i] + kidx[i] * dil[i] for i in range(nd))
                y[(slice(None), slice(g * Mg, (g + 1) * Mg)) + pos] += xg[(slice(None), slice(None)) + idx] @ \
                    wg[(slice(None), slice(None)) + kidx]
    cut = tuple(slice(pads[i], full[i] - pads[nd + i]) for i in range(nd))
    return y[(slice(None), slice(None)) + cut] + b.reshape((1, -1) + (1,) * nd)


def convtr8():
    # ConvTranspose on the integer path: groups (one TRANSPOSE_CONV2D per
    # group), 1-D (over height 1), 3-D (CONV3D over the stretched input),
    # dilations (weight-zero-point gaps), output padding, per-channel
    # weights (axis 1: one scale per channel of a group), uint8
    ins, outs = [], []
    g = G()
    cases = [
        # name, input shape, dtype, zp, weight shape, per-channel, attrs
        ("a2", (1, 4, 5, 5), np.int8, 3, (4, 3, 3, 3), False, 2,
         dict(strides=[2, 2], pads=[1, 1, 1, 1], output_padding=[1, 1])),
        ("a2", None, None, None, (4, 2, 3, 3), True, 4, dict(dilations=[2, 2], pads=[2, 1, 0, 2])),
        ("a1", (1, 4, 7), np.int8, -5, (4, 3, 4), True, 1, dict(strides=[3], pads=[1, 0])),
        ("a1", None, None, None, (4, 2, 3), False, 2, dict(strides=[2], output_padding=[1])),
        ("a3", (1, 4, 3, 4, 4), np.int8, 2, (4, 2, 2, 3, 3), True, 1,
         dict(strides=[1, 2, 2], pads=[0, 1, 1, 0, 1, 0])),
        ("a3", None, None, None, (4, 3, 3, 2, 2), False, 2, dict(strides=[2, 1, 2], dilations=[1, 2, 1])),
        ("u2", (1, 4, 4, 4), np.uint8, 130, (4, 2, 3, 3), True, 2, dict(strides=[2, 2], pads=[0, 1, 1, 0])),
    ]
    arrays = {}
    sa = 0.05
    for name, shape, dt, zp, wshape, pc, group, attrs in cases:
        if shape is not None:
            info = np.iinfo(dt)
            arrays[name] = (rng.integers(info.min, info.max + 1, size=shape).astype(dt), dt, zp)
            ins.append((name, arrays[name][0]))
        a, dt, zp = arrays[name]
        nd = len(wshape) - 2
        Mg = wshape[1]
        M = Mg * group
        w = rng.integers(-127, 128, size=wshape).astype(np.int8)
        ws = (rng.uniform(0.005, 0.02, Mg) if pc else np.array([0.01])).astype(np.float32)
        bias = rng.integers(-400, 400, size=(M,)).astype(np.int32)
        wsc = ws if pc else ws[0]
        bs = (np.float32(sa) * np.resize(ws, M)).astype(np.float32)
        wdq = g.dq(g.const(w), wsc, np.zeros(Mg, np.int8) if pc else np.array(0, np.int8), axis=1 if pc else None)
        bdq = g.dq(g.const(bias), bs, np.zeros(M, np.int32), axis=0)
        t = g.node("ConvTranspose", [g.dq(name, sa, np.array(zp, dt)), wdq, bdq], group=group, **attrs)
        wf = w.astype(np.float64) * np.resize(ws.astype(np.float64), Mg).reshape((1, Mg) + (1,) * nd)
        ref = convtr_nd_ref(dq(a, sa, zp), wf, bias * bs.astype(np.float64), attrs.get("strides", [1] * nd),
                            attrs.get("pads", [0] * 2 * nd), attrs.get("output_padding", [0] * nd),
                            attrs.get("dilations", [1] * nd), group)
        zo = 128 if dt == np.uint8 else 1
        outs.append((g.q(t, 0.3, np.array(zo, dt)), q(ref, 0.3, zo, dt)))
    save("convtr8", g, ins, outs, 13)


table16()
ops16()
table_mixed()
layernorm8("layernorm8", np.int8)
layernorm8("layernorm8_u8", np.uint8)
ops8("ops8", np.int8)
ops8("ops8_u8", np.uint8)
pad_reflect()
attention8()
convtr8()
