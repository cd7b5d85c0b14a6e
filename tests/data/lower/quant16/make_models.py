#!/usr/bin/python3
"""int16 (a16w8) Softmax, LayerNormalization and attention models for
tests/test_qseq.c.

Each model takes integer tensors (input_<k>.npy for graph input k) and
returns integer tensors; ref_output_<k>.npy holds the ONNX QDQ semantics in
float64 with numpy (dequantize, float op, round half to even, saturate),
ort_output_<k>.npy ONNX Runtime's outputs (npm onnxruntime-node through
tools/ort, when installed). Deterministic (fixed seed). Run with Debian's
python3:
    /usr/bin/python3 tests/data/lower/quant16/make_models.py
Models:
  softmax16    int16 Softmax over the last / a middle axis, a wide input
               scale (exp underflows), a 300-long axis, int8 -> int16 and
               int16 -> int8
  layernorm16  int16 LayerNormalization: constant, tiny and largest-variance
               rows, negative / zero gamma, two normalised axes with an int8
               gamma, int8 -> int16
  attention16  K^T, Q K^T, scaling, Softmax, P V on int16 activations
The small transformer encoder (transformer_small/) is made by
tools/models/make_qtransformer.py --small.
"""
import os
import sys
import tempfile
import numpy as np
import onnx
from onnx import helper, TensorProto, numpy_helper

OUT = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(OUT, "..", "..", "..", "..", "tools", "models"))
import common  # noqa: E402  (tools/models: ONNX Runtime through tools/ort)
rng = np.random.default_rng(20261201)
NP2ONNX = {np.int16: TensorProto.INT16, np.int8: TensorProto.INT8}
f32 = lambda v: np.float64(np.float32(v))


def q(x, s, dt, zp=0):
    info = np.iinfo(dt)
    return np.clip(np.rint(x / f32(s)) + zp, info.min, info.max).astype(dt)


def dq(x, s, zp=0):
    return (x.astype(np.float64) - zp) * f32(s)


class G:
    def __init__(self):
        self.nodes, self.inits, self.k = [], [], 0

    def const(self, arr):
        self.k += 1
        self.inits.append(numpy_helper.from_array(np.asarray(arr), "c%d" % self.k))
        return "c%d" % self.k

    def node(self, op, ins, **attrs):
        self.k += 1
        out = "t%d" % self.k
        self.nodes.append(helper.make_node(op, ins, [out], name="%s_%d" % (op, self.k), **attrs))
        return out

    def dq(self, x, s, zp):
        return self.node("DequantizeLinear", [x, self.const(np.array(s, np.float32)), self.const(zp)])

    def q(self, x, s, zp):
        return self.node("QuantizeLinear", [x, self.const(np.array(s, np.float32)), self.const(zp)])


def save(name, g, ins, outs):
    """ins: [(name, array)], outs: [(name, reference array)]; opset 21 (int16 Q/DQ)"""
    vi = lambda n, a: helper.make_tensor_value_info(n, NP2ONNX[a.dtype.type], list(a.shape))
    graph = helper.make_graph(g.nodes, name, [vi(n, a) for n, a in ins], [vi(n, a) for n, a in outs], g.inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], producer_name="ctosa-quant16-gen")
    m.ir_version = 10
    d = os.path.join(OUT, name)
    os.makedirs(d, exist_ok=True)
    onnx.save(m, os.path.join(d, "model.onnx"))
    for k, (_, a) in enumerate(ins):
        np.save(os.path.join(d, "input_%d.npy" % k), a)
    for k, (_, a) in enumerate(outs):
        np.save(os.path.join(d, "ref_output_%d.npy" % k), a)
    with tempfile.TemporaryDirectory() as tmp:
        res = common.run_ort(os.path.join(d, "model.onnx"),
                             [os.path.join(d, "input_%d.npy" % k) for k in range(len(ins))], tmp)
        for k, a in enumerate(res or []):
            np.save(os.path.join(d, "ort_output_%d.npy" % k), a)


def softmax(v, axis):
    e = np.exp(v - v.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


I16, I8 = np.int16, np.int8
Z16, Z8 = np.array(0, I16), np.array(0, I8)
SP = 1.0 / 32767  # probabilities: the scale ORT's int16 calibration gives [0, 1]


def softmax16():
    a = rng.integers(-32768, 32768, size=(2, 4, 40)).astype(I16)
    a[0, 1, :] = 1234                      # a constant row: 1/40 each
    a[0, 2, :] = -32768
    a[0, 2, 5] = 32767                     # one dominant element
    a[1, 0, :] = rng.integers(-40, 40, size=40)  # nearly uniform
    b = rng.integers(-32768, 32768, size=(1, 2, 300)).astype(I16)
    c = rng.integers(-128, 128, size=(2, 4, 40)).astype(I8)
    sa, sw, sb, sc = 8.0 / 32768, 0.01, 6.0 / 32768, 0.08
    fa, fb, fc = dq(a, sa), dq(b, sb), dq(c, sc, 3)
    g = G()
    outs = []
    out = lambda t, s, zp, ref, dt: outs.append((g.q(t, s, np.array(zp, dt)), q(ref, s, dt, zp)))
    out(g.node("Softmax", [g.dq("a", sa, Z16)], axis=-1), SP, 0, softmax(fa, -1), I16)
    out(g.node("Softmax", [g.dq("a", sa, Z16)], axis=1), SP, 0, softmax(fa, 1), I16)
    # input scale 0.01: differences up to 655, exp underflows below 2^-31
    out(g.node("Softmax", [g.dq("a", sw, Z16)], axis=-1), SP / 2, 0, softmax(dq(a, sw), -1), I16)
    out(g.node("Softmax", [g.dq("b", sb, Z16)], axis=-1), 0.05 / 32767, 0, softmax(fb, -1), I16)
    out(g.node("Softmax", [g.dq("c", sc, np.array(3, I8))], axis=-1), SP, 0, softmax(fc, -1), I16)
    out(g.node("Softmax", [g.dq("a", sa, Z16)], axis=-1), 1.0 / 256, -128, softmax(fa, -1), I8)
    save("softmax16", g, [("a", a), ("b", b), ("c", c)], outs)


def layernorm(v, gam, bet, axis, eps):
    ax = tuple(range(axis % v.ndim, v.ndim))
    mu = v.mean(axis=ax, keepdims=True)
    var = ((v - mu) ** 2).mean(axis=ax, keepdims=True)
    return (v - mu) / np.sqrt(var + eps) * gam + bet


def layernorm16():
    a = rng.integers(-32768, 32768, size=(2, 6, 64)).astype(I16)
    a[0, 1, :] = a[0, 1, 0]                                    # variance 0: eps decides
    a[0, 2, :] = 100 + rng.integers(-2, 3, size=64)           # tiny variance
    a[1, 3, :] = np.where(np.arange(64) % 2 == 0, -32768, 32767)  # the largest variance
    a[1, 4, :] = rng.integers(-300, 300, size=64)             # small values
    c = rng.integers(-128, 128, size=(2, 6, 64)).astype(I8)
    sa, sc = 4.0 / 32768, 0.05
    fa, fc = dq(a, sa), dq(c, sc, -5)
    g = G()
    outs = []
    out = lambda t, s, zp, ref, dt: outs.append((g.q(t, s, np.array(zp, dt)), q(ref, s, dt, zp)))
    gam = rng.uniform(0.5, 1.5, size=64).astype(np.float32)
    gam[3], gam[7], gam[11] = -0.8, 0.0, 2.5
    bet = rng.uniform(-0.3, 0.3, size=64).astype(np.float32)
    G64, B64 = gam.astype(np.float64), bet.astype(np.float64)
    t = g.node("LayerNormalization", [g.dq("a", sa, Z16), g.const(gam), g.const(bet)], axis=-1, epsilon=1e-5)
    out(t, 24.0 / 32767, 0, layernorm(fa, G64, B64, -1, f32(1e-5)), I16)
    # over the last two axes (N = 384), int8 gamma as ORT's quantizer writes it, no bias
    gq = rng.integers(20, 127, size=(6, 64)).astype(I8)
    t = g.node("LayerNormalization", [g.dq("a", sa, Z16), g.dq(g.const(gq), 0.01, Z8)], axis=1, epsilon=1e-3)
    out(t, 4.0 / 32767, 0, layernorm(fa, gq.astype(np.float64) * f32(0.01), 0.0, 1, f32(1e-3)), I16)
    # int8 input, int16 output
    t = g.node("LayerNormalization", [g.dq("c", sc, np.array(-5, I8)), g.const(gam), g.const(bet)], axis=-1,
               epsilon=1e-5)
    out(t, 24.0 / 32767, 0, layernorm(fc, G64, B64, -1, f32(1e-5)), I16)
    # int16 input, int8 output
    t = g.node("LayerNormalization", [g.dq("a", sa, Z16), g.const(gam), g.const(bet)], axis=-1, epsilon=1e-5)
    out(t, 4.0 / 128, 0, layernorm(fa, G64, B64, -1, f32(1e-5)), I8)
    save("layernorm16", g, [("a", a), ("c", c)], outs)


def attention16():
    # Q K^T / sqrt(d) softmax, P V on int16 activations (a16w8: the scaling
    # constant int8), the quantisation ORT's int16 calibration would give
    x = [rng.integers(-32768, 32768, size=(1, 2, 16, 16)).astype(I16) for _ in range(3)]
    s = 3.0 / 32768
    g = G()
    Qd, Kd, Vd = (g.dq(n, s, Z16) for n in ("q", "k", "v"))
    ss, s2s = 40.0 / 32768, 10.0 / 32768
    kt = g.q(g.node("Transpose", [Kd], perm=[0, 1, 3, 2]), s, Z16)
    sc = g.q(g.node("MatMul", [Qd, g.dq(kt, s, Z16)]), ss, Z16)
    sc2 = g.q(g.node("Mul", [g.dq(sc, ss, Z16), g.dq(g.const(np.array([64], I8)), 0.25 / 64, Z8)]), s2s, Z16)
    p = g.q(g.node("Softmax", [g.dq(sc2, s2s, Z16)], axis=-1), SP, Z16)
    o = g.q(g.node("MatMul", [g.dq(p, SP, Z16), Vd]), 3.0 / 32768, Z16)
    fq, fk, fv = (dq(v, s) for v in x)
    rs = dq(q(fq @ fk.transpose(0, 1, 3, 2), ss, I16), ss)
    rs2 = dq(q(rs * (64 * f32(0.25 / 64)), s2s, I16), s2s)
    rp = dq(q(softmax(rs2, -1), SP, I16), SP)
    save("attention16", g, [("q", x[0]), ("k", x[1]), ("v", x[2])], [(o, q(rp @ fv, 3.0 / 32768, I16))])


softmax16()
layernorm16()
attention16()
