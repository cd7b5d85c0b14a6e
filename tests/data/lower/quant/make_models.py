#!/usr/bin/python3
"""Tiny hand-built QDQ models for the integer (TOSA INT) lowering edges.

Each model takes an integer tensor (int8/uint8), runs
DequantizeLinear -> op -> QuantizeLinear groups and returns an integer
tensor, so under TOSA-1.0+INT the whole graph is one partition. The
reference output (ref_output_0.npy) is the ONNX QDQ semantics computed in
float64 with numpy (dequantize, float op, round half to even, saturate).
Integer TOSA rounds once per RESCALE, half up, so it may differ from the
reference by one step at exact ties (and by float rounding of the
reference near ties); test_quant.c checks <= 1 step and reports how many
elements are exact. Deterministic (fixed seed). Run with Debian's python3:
    /usr/bin/python3 tests/data/lower/quant/make_models.py
"""
import os
import numpy as np
import onnx
from onnx import helper, TensorProto, numpy_helper

OUT = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(20261129)
NP2ONNX = {np.int16: TensorProto.INT16, np.int8: TensorProto.INT8, np.uint8: TensorProto.UINT8, np.int32: TensorProto.INT32}


def q(x, s, zp, dt):
    info = np.iinfo(dt)
    return np.clip(np.rint(x / s) + zp, info.min, info.max).astype(dt)


def dq(x, s, zp):
    return (x.astype(np.float64) - zp) * s


class G:
    def __init__(self):
        self.nodes, self.inits, self.k = [], [], 0

    def const(self, arr, name=None):
        self.k += 1
        name = name or "c%d" % self.k
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


def save(name, g, xin, xname, out, odt, ref, infer=False, opset=13):
    graph = helper.make_graph(g.nodes, name,
                              [helper.make_tensor_value_info(xname, NP2ONNX[xin.dtype.type], list(xin.shape))],
                              [helper.make_tensor_value_info(out, NP2ONNX[odt], list(ref.shape))], g.inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="ctosa-quant-gen")
    m.ir_version = 8 if opset <= 13 else 10
    if opset <= 17:  # onnx 1.12 knows opsets up to 17 (int16 Q/DQ needs 21)
        onnx.checker.check_model(m, full_check=True)
    if infer:
        m = onnx.shape_inference.infer_shapes(m)
    d = os.path.join(OUT, name)
    os.makedirs(d, exist_ok=True)
    onnx.save(m, os.path.join(d, "model.onnx"))
    np.save(os.path.join(d, "input_0.npy"), xin)
    np.save(os.path.join(d, "ref_output_0.npy"), ref)


def conv_ref(x, w, b, stride, pad, group):
    n, c, h, wd = x.shape
    m, cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh = (h + 2 * pad - kh) // stride + 1
    ow = (wd + 2 * pad - kw) // stride + 1
    y = np.zeros((n, m, oh, ow))
    mg = m // group
    for o in range(m):
        g0 = (o // mg) * cg
        for i in range(oh):
            for j in range(ow):
                y[:, o, i, j] = (xp[:, g0:g0 + cg, i * stride:i * stride + kh, j * stride:j * stride + kw] * w[o]).sum(axis=(1, 2, 3))
    return y + b.reshape(1, -1, 1, 1)


def conv_model(name, xdt, xzp, ydt, yzp, wscales, relu, group=1, stride=1, pad=1, ys=None):
    C, M, H = 4, 4 if group > 1 else 6, 6
    info = np.iinfo(xdt)
    x = rng.integers(info.min, info.max + 1, size=(1, C, H, H)).astype(xdt)
    xs = 0.05
    cg = C // group
    wq = rng.integers(-127, 128, size=(M, cg, 3, 3)).astype(np.int8)
    wsc = np.array(wscales, np.float32)
    bias_real = rng.normal(0, 0.5, size=M)
    bs = (np.float32(xs) * wsc).astype(np.float32)
    bq = np.clip(np.rint(bias_real / bs), -2**31, 2**31 - 1).astype(np.int32)
    g = G()
    xd = g.dq("x", xs, np.array(xzp, xdt))
    wd = g.dq(g.const(wq), wsc, np.zeros(M, np.int8), axis=0)
    bd = g.dq(g.const(bq), bs, np.zeros(M, np.int32), axis=0)
    y = g.node("Conv", [xd, wd, bd], kernel_shape=[3, 3], pads=[pad] * 4, strides=[stride] * 2, group=group)
    if relu:
        y = g.node("Relu", [y])
    xr = dq(x, np.float32(xs), xzp)
    wr = dq(wq, wsc.reshape(-1, 1, 1, 1).astype(np.float64), 0)
    yr = conv_ref(xr, wr, dq(bq, bs.astype(np.float64), 0), stride, pad, group)
    if relu:
        yr = np.maximum(yr, 0)
    ys = ys or float(np.abs(yr).max() / 90.0)
    out = g.q(y, ys, np.array(yzp, ydt))
    save(name, g, x, "x", out, ydt, q(yr, np.float64(np.float32(ys)), yzp, ydt))


# zero points at the type limits, saturation (output scale small so many
# values clip), per-channel with one tiny-scale channel
conv_model("conv_zp_limits_u8", np.uint8, 0, np.uint8, 255, [0.01, 0.02, 1e-9, 0.005, 0.03, 0.01], False)
conv_model("conv_zp_limits_s8", np.int8, -128, np.int8, -128, [0.01, 0.02, 0.003, 0.005, 0.03, 0.01], True)
conv_model("conv_saturate", np.int8, 3, np.uint8, 128, [0.02] * 6, False, ys=0.01)
conv_model("conv_depthwise_stride2", np.uint8, 131, np.uint8, 7, [0.01, 0.05, 1e-7, 0.02], True, group=4, stride=2)


def add_model(name, sa, za, sb, zb, sy, zy, dt):
    info = np.iinfo(dt)
    a = rng.integers(info.min, info.max + 1, size=(1, 3, 4, 5)).astype(dt)
    b = rng.integers(info.min, info.max + 1, size=(1, 3, 4, 5)).astype(dt)
    g = G()
    bc = g.const(b)
    s = g.node("Add", [g.dq("a", sa, np.array(za, dt)), g.dq(bc, sb, np.array(zb, dt))])
    out = g.q(s, sy, np.array(zy, dt))
    yr = dq(a, np.float64(np.float32(sa)), za) + dq(b, np.float64(np.float32(sb)), zb)
    save(name, g, a, "a", out, dt, q(yr, np.float64(np.float32(sy)), zy, dt))


add_model("add_requant_u8", 0.02, 0, 0.5, 255, 0.6, 128, np.uint8)
add_model("add_requant_s8", 1e-3, -128, 0.25, 127, 0.4, -5, np.int8)


# rounding ties: Relu with y_scale = 2 * x_scale gives exact halves; ONNX
# rounds them to even, TOSA RESCALE rounds half up
def ties_model():
    x = np.arange(-128, 128, dtype=np.int8).reshape(1, 1, 16, 16)
    g = G()
    y = g.node("Relu", [g.dq("x", 0.5, np.array(0, np.int8))])
    out = g.q(y, 1.0, np.array(0, np.int8))
    save("relu_ties", g, x, "x", out, np.int8, q(np.maximum(dq(x, 0.5, 0), 0), 1.0, 0, np.int8))


ties_model()


# largest shifts: Gemm whose scale ratio s_x*s_w/s_y is 2^-40 (shift near
# 62) and a Flatten->Gemm with a large ratio
def gemm_model(name, xs, wscale, ys):
    x = rng.integers(-128, 128, size=(2, 16)).astype(np.int8)
    wq = rng.integers(-127, 128, size=(8, 16)).astype(np.int8)
    wsc = np.array(wscale, np.float32)
    g = G()
    y = g.node("Gemm", [g.dq("x", xs, np.array(1, np.int8)), g.dq(g.const(wq), wsc, np.zeros(8, np.int8), axis=0)],
               transB=1)
    out = g.q(y, ys, np.array(-3, np.int8))
    yr = dq(x, np.float64(np.float32(xs)), 1) @ (wq.astype(np.float64) * wsc.astype(np.float64).reshape(-1, 1)).T
    save(name, g, x, "x", out, np.int8, q(yr, np.float64(np.float32(ys)), -3, np.int8))


gemm_model("gemm_tiny_ratio", 2.0 ** -20, [2.0 ** -20] * 8, 2.0 ** -8)
gemm_model("gemm_large_ratio", 0.5, [0.25, 0.5, 1.0, 0.125, 0.5, 0.5, 0.25, 1.0], 8.0)


# pooling / concat / data movement on quantized tensors
def misc_model():
    x = rng.integers(0, 256, size=(1, 4, 6, 6)).astype(np.uint8)
    xs, xz = 0.1, 100
    g = G()
    mp = g.q(g.node("MaxPool", [g.dq("x", xs, np.array(xz, np.uint8))], kernel_shape=[2, 2], strides=[2, 2]),
             0.12, np.array(90, np.uint8))
    ap = g.q(g.node("GlobalAveragePool", [g.dq("x", xs, np.array(xz, np.uint8))]), 0.05, np.array(128, np.uint8))
    fl = g.q(g.node("Flatten", [g.dq(mp, 0.12, np.array(90, np.uint8))]), 0.12, np.array(90, np.uint8))
    fa = g.q(g.node("Flatten", [g.dq(ap, 0.05, np.array(128, np.uint8))]), 0.05, np.array(128, np.uint8))
    cat = g.node("Concat", [g.dq(fl, 0.12, np.array(90, np.uint8)), g.dq(fa, 0.05, np.array(128, np.uint8))], axis=1)
    out = g.q(cat, 0.1, np.array(60, np.uint8))
    xr = dq(x, np.float64(np.float32(xs)), xz)
    mpr = xr.reshape(1, 4, 3, 2, 3, 2).max(axis=(3, 5))
    mpq = q(mpr, np.float64(np.float32(0.12)), 90, np.uint8)
    apq = q(xr.mean(axis=(2, 3), keepdims=True), np.float64(np.float32(0.05)), 128, np.uint8)
    catr = np.concatenate([dq(mpq, np.float64(np.float32(0.12)), 90).reshape(1, -1),
                           dq(apq, np.float64(np.float32(0.05)), 128).reshape(1, -1)], axis=1)
    save("pool_concat_u8", g, x, "x", out, np.uint8, q(catr, np.float64(np.float32(0.1)), 60, np.uint8))


misc_model()


# int8 / uint8 activations through 256-entry TABLEs (one output each)
def table_model():
    from math import erf
    x = np.arange(0, 256, dtype=np.uint8).reshape(1, 4, 8, 8)
    xs, xz = 0.05, 120
    xr = dq(x, np.float64(np.float32(xs)), xz)
    verf = np.vectorize(erf)
    acts = [("Sigmoid", {}, lambda v: 1 / (1 + np.exp(-v)), 1 / 256.0, 0, np.uint8),
            ("Tanh", {}, np.tanh, 1 / 128.0, 0, np.int8),
            ("HardSwish", {}, lambda v: v * np.clip(v / 6 + 0.5, 0, 1), 0.05, -20, np.int8),
            ("HardSigmoid", {"alpha": 0.25, "beta": 0.4}, lambda v: np.clip(0.25 * v + 0.4, 0, 1), 1 / 255.0, 0, np.uint8),
            ("Exp", {}, np.exp, 0.1, -128, np.int8),
            ("Erf", {}, verf, 1 / 128.0, 0, np.int8),
            ("Softplus", {}, lambda v: np.log1p(np.exp(v)), 0.03, -128, np.int8),
            ("Elu", {"alpha": 0.7}, lambda v: np.where(v >= 0, v, 0.7 * np.expm1(v)), 0.04, -30, np.int8),
            ("LeakyRelu", {"alpha": 0.1}, lambda v: np.where(v >= 0, v, 0.1 * v), 0.03, 0, np.int8)]
    g = G()
    outs, refs = [], []
    for op, attrs, f, ys, yz, dt in acts:
        y = g.node(op, [g.dq("x", xs, np.array(xz, np.uint8))], **attrs)
        outs.append(g.q(y, ys, np.array(yz, dt)))
        refs.append((op, q(f(xr), np.float64(np.float32(ys)), yz, dt), dt))
    graph = helper.make_graph(g.nodes, "tables",
                              [helper.make_tensor_value_info("x", TensorProto.UINT8, list(x.shape))],
                              [helper.make_tensor_value_info(o, NP2ONNX[dt], list(r.shape)) for o, (_, r, dt) in zip(outs, refs)],
                              g.inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)], producer_name="ctosa-quant-gen")
    m.ir_version = 8
    onnx.checker.check_model(m, full_check=True)
    d = os.path.join(OUT, "tables_u8")
    os.makedirs(d, exist_ok=True)
    onnx.save(m, os.path.join(d, "model.onnx"))
    np.save(os.path.join(d, "input_0.npy"), x)
    for i, (_, r, _) in enumerate(refs):
        np.save(os.path.join(d, "ref_output_%d.npy" % i), r)


table_model()


# data movement on quantized tensors: Slice (same parameters: the bits move),
# Gather and Unsqueeze / Squeeze / Transpose with requantisation
def move_model():
    x = rng.integers(0, 256, size=(2, 3, 4, 5)).astype(np.uint8)
    xs, xz = 0.03, 77
    g = G()
    sl = g.node("Slice", [g.dq("x", xs, np.array(xz, np.uint8)), g.const(np.array([1, 1], np.int64)),
                          g.const(np.array([3, 5], np.int64)), g.const(np.array([2, 3], np.int64))])
    slq = g.q(sl, xs, np.array(xz, np.uint8))
    ga = g.node("Gather", [g.dq(slq, xs, np.array(xz, np.uint8)), g.const(np.array([2, 0, 1], np.int64))], axis=1)
    gaq = g.q(ga, 0.05, np.array(-10, np.int8))
    un = g.node("Unsqueeze", [g.dq(gaq, 0.05, np.array(-10, np.int8)), g.const(np.array([0], np.int64))])
    unq = g.q(un, 0.02, np.array(200, np.uint8))
    tr = g.node("Transpose", [g.dq(unq, 0.02, np.array(200, np.uint8))], perm=[0, 1, 3, 4, 2])
    out = g.q(tr, 0.02, np.array(200, np.uint8))
    xr = dq(x, np.float64(np.float32(xs)), xz)
    slr = q(xr[:, :, 1:3, 1:5], np.float64(np.float32(xs)), xz, np.uint8)
    gar = dq(slr, np.float64(np.float32(xs)), xz)[:, [2, 0, 1]]
    gaqr = q(gar, np.float64(np.float32(0.05)), -10, np.int8)
    unr = q(dq(gaqr, np.float64(np.float32(0.05)), -10)[None], np.float64(np.float32(0.02)), 200, np.uint8)
    save("move_requant", g, x, "x", out, np.uint8, unr.transpose(0, 1, 3, 4, 2))


move_model()


# a group whose head cannot lower (a Conv whose requantisation ratio
# s_x s_w / s_y = 2^30 RESCALE cannot express) goes to the CPU as a whole;
# the next group still delegates with integer I/O
def cascade_model():
    x = rng.integers(-128, 128, size=(1, 4, 5, 5)).astype(np.int8)
    wq = rng.integers(-127, 128, size=(4, 2, 1, 1)).astype(np.int8)
    g = G()
    y = g.node("Conv", [g.dq("x", 0.1, np.array(0, np.int8)), g.dq(g.const(wq), 0.01, np.array(0, np.int8))],
               kernel_shape=[1, 1], group=2)
    ys = float(np.float32(0.1) * np.float32(0.01)) / 2.0 ** 30
    yq = g.q(y, ys, np.array(3, np.int8))
    out = g.q(g.node("Relu", [g.dq(yq, ys, np.array(3, np.int8))]), 0.1 * ys, np.array(-128, np.int8))
    xr = dq(x, np.float64(np.float32(0.1)), 0)
    wr = dq(wq, np.float64(np.float32(0.01)), 0)
    yr = np.concatenate([np.einsum("nchw,oc->nohw", xr[:, 0:2], wr[0:2, :, 0, 0]),
                         np.einsum("nchw,oc->nohw", xr[:, 2:4], wr[2:4, :, 0, 0])], axis=1)
    yqr = q(yr, np.float64(np.float32(ys)), 3, np.int8)
    ref = q(np.maximum(dq(yqr, np.float64(np.float32(ys)), 3), 0), np.float64(np.float32(0.1 * ys)), -128, np.int8)
    save("cascade_conv", g, x, "x", out, np.int8, ref, infer=True)
    # the value the CPU part hands to the partition (output of the Conv's Q)
    np.save(os.path.join(OUT, "cascade_conv", "cpu_" + yq + ".npy"), yqr)


cascade_model()


# a residual Add whose two inputs come from different partitions (a float
# Floor, which no group takes, stays on the CPU in between): the folded
# DequantizeLinear of the skip branch must join the Add's partition, so
# every partition boundary is an integer tensor with scale and zero point
def boundary_model():
    x = rng.integers(-128, 128, size=(1, 4, 5, 5)).astype(np.int8)
    wq = rng.integers(-127, 128, size=(4, 4, 1, 1)).astype(np.int8)
    g = G()
    y = g.node("Conv", [g.dq("x", 0.1, np.array(0, np.int8)), g.dq(g.const(wq), 0.01, np.array(0, np.int8))],
               kernel_shape=[1, 1])
    yq = g.q(y, 0.2, np.array(3, np.int8))
    fq = g.q(g.node("Floor", [g.dq(yq, 0.2, np.array(3, np.int8))]), 0.25, np.array(-2, np.int8))
    out = g.q(g.node("Add", [g.dq(fq, 0.25, np.array(-2, np.int8)), g.dq(yq, 0.2, np.array(3, np.int8))]),
              0.3, np.array(1, np.int8))
    xr = dq(x, np.float64(np.float32(0.1)), 0)
    wr = dq(wq, np.float64(np.float32(0.01)), 0)
    yqr = q(np.einsum("nchw,oc->nohw", xr, wr[:, :, 0, 0]), np.float64(np.float32(0.2)), 3, np.int8)
    yd = dq(yqr, np.float64(np.float32(0.2)), 3)
    fqr = q(np.floor(yd), np.float64(np.float32(0.25)), -2, np.int8)
    ref = q(dq(fqr, np.float64(np.float32(0.25)), -2) + yd, np.float64(np.float32(0.3)), 1, np.int8)
    save("boundary_residual", g, x, "x", out, np.int8, ref, infer=True)
    np.save(os.path.join(OUT, "boundary_residual", "cpu_" + fq + ".npy"), fqr)



# AveragePool (padding excluded from the count) staying in the input's
# parameters, then requantised by the Q
def avgpool_model():
    x = rng.integers(0, 256, size=(1, 3, 7, 7)).astype(np.uint8)
    g = G()
    y = g.node("AveragePool", [g.dq("x", 0.04, np.array(100, np.uint8))], kernel_shape=[3, 3], strides=[2, 2],
               pads=[1, 1, 1, 1])
    out = g.q(y, 0.04, np.array(100, np.uint8))
    xr = np.pad(dq(x, np.float64(np.float32(0.04)), 100), ((0, 0), (0, 0), (1, 1), (1, 1)))
    ones = np.pad(np.ones((1, 3, 7, 7)), ((0, 0), (0, 0), (1, 1), (1, 1)))
    yr = np.zeros((1, 3, 4, 4))
    for i in range(4):
        for j in range(4):
            yr[:, :, i, j] = xr[:, :, 2 * i:2 * i + 3, 2 * j:2 * j + 3].sum(axis=(2, 3)) / \
                ones[:, :, 2 * i:2 * i + 3, 2 * j:2 * j + 3].sum(axis=(2, 3))
    save("avgpool_u8", g, x, "x", out, np.uint8, q(yr, np.float64(np.float32(0.04)), 100, np.uint8))


avgpool_model()


# a16w8 (EXT-INT16): int16 activations (zero point 0), int8 per-channel
# weights, int48 accumulators; Conv + Relu, Flatten, Gemm (opset 21: the
# first with int16 QuantizeLinear / DequantizeLinear)
def a16w8_model():
    x = rng.integers(-32768, 32768, size=(1, 3, 5, 5)).astype(np.int16)
    xs = 1e-4
    wq = rng.integers(-127, 128, size=(4, 3, 3, 3)).astype(np.int8)
    wsc = np.array([0.01, 0.02, 0.005, 0.015], np.float32)
    bs = (np.float32(xs) * wsc).astype(np.float32)
    bq = np.rint(rng.normal(0, 0.3, size=4) / bs).astype(np.int32)
    g = G()
    z16 = lambda: np.array(0, np.int16)
    y = g.node("Conv", [g.dq("x", xs, z16()), g.dq(g.const(wq), wsc, np.zeros(4, np.int8), axis=0),
                        g.dq(g.const(bq), bs, np.zeros(4, np.int32), axis=0)], kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    y = g.node("Relu", [y])
    ys = 2e-4
    yq = g.q(y, ys, z16())
    fl = g.q(g.node("Flatten", [g.dq(yq, ys, z16())]), ys, z16())
    w2 = rng.integers(-127, 128, size=(6, 100)).astype(np.int8)
    w2s = np.float32(0.002)
    gm = g.node("Gemm", [g.dq(fl, ys, z16()), g.dq(g.const(w2), w2s, np.array(0, np.int8))], transB=1)
    zs = 5e-4
    out = g.q(gm, zs, z16())
    xr = dq(x, np.float64(np.float32(xs)), 0)
    yr = np.maximum(conv_ref(xr, dq(wq, wsc.reshape(-1, 1, 1, 1).astype(np.float64), 0), dq(bq, bs.astype(np.float64), 0), 1, 1, 1), 0)
    yqr = q(yr, np.float64(np.float32(ys)), 0, np.int16)
    gr = dq(yqr, np.float64(np.float32(ys)), 0).reshape(1, -1) @ (w2.astype(np.float64) * np.float64(w2s)).T
    save("a16w8_conv_gemm", g, x, "x", out, np.int16, q(gr, np.float64(np.float32(zs)), 0, np.int16), opset=21)


a16w8_model()
boundary_model()


def conv_nd_ref(x, w, b, group, pad):
    """Convolution of any spatial rank (stride 1, symmetric pad) in float64."""
    nsp = x.ndim - 2
    xp = np.pad(x, [(0, 0), (0, 0)] + [(pad, pad)] * nsp)
    m, cg = w.shape[:2]
    ks = w.shape[2:]
    outs = [xp.shape[2 + i] - ks[i] + 1 for i in range(nsp)]
    y = np.zeros((x.shape[0], m) + tuple(outs))
    mg = m // group
    for o in range(m):
        g0 = (o // mg) * cg
        for idx in np.ndindex(*outs):
            sl = tuple(slice(idx[i], idx[i] + ks[i]) for i in range(nsp))
            y[(slice(None), o) + idx] = (xp[(slice(None), slice(g0, g0 + cg)) + sl] * w[o]).sum(
                axis=tuple(range(1, 2 + nsp)))
    return y + b.reshape((1, -1) + (1,) * nsp)


# quantized convolutions beyond 2-D group 1 / depthwise: grouped (group 2 of
# 8 channels, group 4 with per-channel weights), 1-D and 3-D (grouped too)
def conv_groups_model(name, spatial, C, M, group, per_channel, xdt=np.uint8, xzp=131):
    info = np.iinfo(xdt)
    x = rng.integers(info.min, info.max + 1, size=(1, C) + spatial).astype(xdt)
    xs = 0.05
    cg = C // group
    ks = (3,) * len(spatial)
    wq = rng.integers(-127, 128, size=(M, cg) + ks).astype(np.int8)
    wsc = (rng.uniform(0.005, 0.03, size=M) if per_channel else np.full(M, 0.02)).astype(np.float32)
    bs = (np.float32(xs) * wsc).astype(np.float32)
    bq = np.rint(rng.normal(0, 0.5, size=M) / bs).astype(np.int32)
    g = G()
    xd = g.dq("x", xs, np.array(xzp, xdt))
    if per_channel:
        wd = g.dq(g.const(wq), wsc, np.zeros(M, np.int8), axis=0)
        bd = g.dq(g.const(bq), bs, np.zeros(M, np.int32), axis=0)
    else:
        wd = g.dq(g.const(wq), float(wsc[0]), np.array(0, np.int8))
        bd = g.dq(g.const(bq), float(bs[0]), np.array(0, np.int32))
    y = g.node("Relu", [g.node("Conv", [xd, wd, bd], kernel_shape=list(ks), pads=[1] * (2 * len(spatial)),
                                group=group)])
    xr = dq(x, np.float64(np.float32(xs)), xzp)
    wr = dq(wq, wsc.reshape((-1,) + (1,) * (1 + len(spatial))).astype(np.float64), 0)
    yr = np.maximum(conv_nd_ref(xr, wr, dq(bq, bs.astype(np.float64), 0), group, 1), 0)
    ys = float(np.abs(yr).max() / 200.0)
    out = g.q(y, ys, np.array(0, np.uint8))
    save(name, g, x, "x", out, np.uint8, q(yr, np.float64(np.float32(ys)), 0, np.uint8))


conv_groups_model("conv_group2", (6, 6), 8, 6, 2, False)
conv_groups_model("conv_group4_pc", (5, 5), 8, 8, 4, True, np.int8, -3)
conv_groups_model("conv1d_group2", (9,), 4, 6, 2, True)
conv_groups_model("conv3d", (4, 5, 5), 2, 3, 1, True)
conv_groups_model("conv3d_group2", (3, 4, 4), 4, 4, 2, False, np.int8, 5)


# float operators of one quantized input (torch's opset-13 HardSwish
# HardSigmoid * x, SiLU Sigmoid * x, GELU Div / Erf / Add / Mul / Mul, and a
# Mul by a float constant): each becomes one exact 256-entry TABLE
def island_model():
    from math import erf
    x = np.arange(0, 256, dtype=np.uint8).reshape(1, 4, 8, 8)
    xs, xz = 0.05, 120
    xr = dq(x, np.float64(np.float32(xs)), xz)
    verf = np.vectorize(erf)
    g = G()
    xd = lambda: g.dq("x", xs, np.array(xz, np.uint8))
    outs, refs = [], []
    d = xd()
    hs = g.node("Mul", [d, g.node("HardSigmoid", [d], alpha=1.0 / 6, beta=0.5)])
    outs.append(g.q(hs, 0.04, np.array(-10, np.int8)))
    refs.append((q(xr * np.clip(xr / 6 + 0.5, 0, 1), np.float64(np.float32(0.04)), -10, np.int8), np.int8))
    d = xd()
    si = g.node("Mul", [d, g.node("Sigmoid", [d])])
    outs.append(g.q(si, 0.035, np.array(20, np.uint8)))
    refs.append((q(xr / (1 + np.exp(-xr)), np.float64(np.float32(0.035)), 20, np.uint8), np.uint8))
    d = xd()
    e = g.node("Erf", [g.node("Div", [d, g.const(np.array(1.4142135381698608, np.float32))])])
    ge = g.node("Mul", [g.node("Mul", [d, g.node("Add", [e, g.const(np.array(1.0, np.float32))])]),
                        g.const(np.array(0.5, np.float32))])
    outs.append(g.q(ge, 0.03, np.array(-100, np.int8)))
    refs.append((q(0.5 * xr * (1 + verf(xr / np.sqrt(2))), np.float64(np.float32(0.03)), -100, np.int8), np.int8))
    d = xd()
    mc = g.node("Mul", [d, g.const(np.array(-0.75, np.float32))])
    outs.append(g.q(mc, 0.05, np.array(0, np.int8)))
    refs.append((q(xr * -0.75, np.float64(np.float32(0.05)), 0, np.int8), np.int8))
    graph = helper.make_graph(g.nodes, "islands",
                              [helper.make_tensor_value_info("x", TensorProto.UINT8, list(x.shape))],
                              [helper.make_tensor_value_info(o, NP2ONNX[dt], list(r.shape)) for o, (r, dt) in zip(outs, refs)],
                              g.inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="ctosa-quant-gen")
    m.ir_version = 8
    onnx.checker.check_model(m, full_check=True)
    dd = os.path.join(OUT, "islands_u8")
    os.makedirs(dd, exist_ok=True)
    onnx.save(m, os.path.join(dd, "model.onnx"))
    np.save(os.path.join(dd, "input_0.npy"), x)
    for i, (r, _) in enumerate(refs):
        np.save(os.path.join(dd, "ref_output_%d.npy" % i), r)


island_model()


# means with exact ties: GlobalAveragePool over 2x2 and 28x28 (torch gives
# the mean its input's parameters), ReduceMean over the last axis (opset 13
# attribute) with a doubled output scale; the QDQ reference rounds half to even
def mean_model():
    x = rng.integers(0, 256, size=(1, 6, 2, 2)).astype(np.uint8)
    x2 = rng.integers(0, 256, size=(1, 3, 28, 28)).astype(np.uint8)
    x3 = rng.integers(-128, 128, size=(1, 4, 10)).astype(np.int8)
    # exact ties on purpose: 28x28 means 0.5, 3.5, -3.5 (x2 - 128), rows of
    # x3 - 1 summing to 30, 50, -30 (means / 2 = 1.5, 2.5, -1.5)
    for ch, (base, k) in enumerate(((128, 129), (131, 132), (125, 124))):
        v = np.full(784, base, np.uint8)
        v[:392] = k
        x2[0, ch] = rng.permutation(v).reshape(28, 28)
    for row, tot in enumerate((30, 50, -30)):
        v = np.full(10, tot // 10 + 1, np.int64)
        x3[0, row] = rng.permutation(v).astype(np.int8)
    g = G()
    outs, refs = [], []
    gp = g.node("GlobalAveragePool", [g.dq("x", 0.1, np.array(7, np.uint8))])
    outs.append(g.q(gp, 0.1, np.array(7, np.uint8)))
    refs.append((q(dq(x, np.float64(np.float32(0.1)), 7).mean(axis=(2, 3), keepdims=True),
                   np.float64(np.float32(0.1)), 7, np.uint8), np.uint8))
    gp2 = g.node("GlobalAveragePool", [g.dq("x2", 0.02, np.array(128, np.uint8))])
    outs.append(g.q(gp2, 0.02, np.array(128, np.uint8)))
    refs.append((q(dq(x2, np.float64(np.float32(0.02)), 128).mean(axis=(2, 3), keepdims=True),
                   np.float64(np.float32(0.02)), 128, np.uint8), np.uint8))
    rm = g.node("ReduceMean", [g.dq("x3", 0.25, np.array(1, np.int8))], axes=[2], keepdims=0)
    outs.append(g.q(rm, 0.5, np.array(-1, np.int8)))
    refs.append((q(dq(x3, 0.25, 1).mean(axis=2), 0.5, -1, np.int8), np.int8))
    graph = helper.make_graph(g.nodes, "means",
                              [helper.make_tensor_value_info("x", TensorProto.UINT8, list(x.shape)),
                               helper.make_tensor_value_info("x2", TensorProto.UINT8, list(x2.shape)),
                               helper.make_tensor_value_info("x3", TensorProto.INT8, list(x3.shape))],
                              [helper.make_tensor_value_info(o, NP2ONNX[dt], list(r.shape)) for o, (r, dt) in zip(outs, refs)],
                              g.inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="ctosa-quant-gen")
    m.ir_version = 8
    onnx.checker.check_model(m, full_check=True)
    dd = os.path.join(OUT, "mean_ties")
    os.makedirs(dd, exist_ok=True)
    onnx.save(m, os.path.join(dd, "model.onnx"))
    for i, a in enumerate((x, x2, x3)):
        np.save(os.path.join(dd, "input_%d.npy" % i), a)
    for i, (r, _) in enumerate(refs):
        np.save(os.path.join(dd, "ref_output_%d.npy" % i), r)
    ties = [int(np.sum(np.abs(np.modf(v)[0]) == 0.5)) for v in (
        dq(x, 1.0, 7).mean(axis=(2, 3)), dq(x2, 1.0, 128).mean(axis=(2, 3)), dq(x3, 1.0, 1).mean(axis=2) / 2)]
    print("mean_ties: exact ties per output", ties)


mean_model()
# a16w8 grouped convolutions that are not depthwise (regnet_x's blocks),
# side by side on one int16 input: group 4 of 8 channels with per-channel
# weights and Relu, and group 2 with one weight scale and stride 2; int48
# accumulators, which TOSA cannot concatenate
def a16w8_group_model():
    x = rng.integers(-32768, 32768, size=(1, 8, 6, 6)).astype(np.int16)
    xs, ys, zs = 1e-4, 3e-4, 4e-4
    g = G()
    z16 = lambda: np.array(0, np.int16)
    w1 = rng.integers(-127, 128, size=(8, 2, 3, 3)).astype(np.int8)
    w1s = rng.uniform(0.005, 0.03, size=8).astype(np.float32)
    b1s = (np.float32(xs) * w1s).astype(np.float32)
    b1 = np.rint(rng.normal(0, 0.5, size=8) / b1s).astype(np.int32)
    y = g.node("Conv", [g.dq("x", xs, z16()), g.dq(g.const(w1), w1s, np.zeros(8, np.int8), axis=0),
                        g.dq(g.const(b1), b1s, np.zeros(8, np.int32), axis=0)],
               kernel_shape=[3, 3], pads=[1, 1, 1, 1], group=4)
    o1 = g.q(g.node("Relu", [y]), ys, z16())
    w2 = rng.integers(-127, 128, size=(6, 4, 3, 3)).astype(np.int8)
    w2s = np.float32(0.02)
    b2s = np.float32(np.float32(xs) * w2s)
    b2 = np.rint(rng.normal(0, 0.5, size=6) / b2s).astype(np.int32)
    y2 = g.node("Conv", [g.dq("x", xs, z16()), g.dq(g.const(w2), w2s, np.array(0, np.int8)),
                         g.dq(g.const(b2), b2s, np.array(0, np.int32))],
                kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[2, 2], group=2)
    o2 = g.q(y2, zs, z16())
    xr = dq(x, np.float64(np.float32(xs)), 0)
    r1 = np.maximum(conv_ref(xr, dq(w1, w1s.reshape(-1, 1, 1, 1).astype(np.float64), 0),
                             dq(b1, b1s.astype(np.float64), 0), 1, 1, 4), 0)
    r2 = conv_ref(xr, dq(w2, np.float64(w2s), 0), dq(b2, np.float64(b2s), 0), 2, 1, 2)
    refs = [q(r1, np.float64(np.float32(ys)), 0, np.int16), q(r2, np.float64(np.float32(zs)), 0, np.int16)]
    graph = helper.make_graph(g.nodes, "a16w8_conv_group",
                              [helper.make_tensor_value_info("x", TensorProto.INT16, list(x.shape))],
                              [helper.make_tensor_value_info(o, TensorProto.INT16, list(r.shape))
                               for o, r in zip((o1, o2), refs)], g.inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], producer_name="ctosa-quant-gen")
    m.ir_version = 10
    dd = os.path.join(OUT, "a16w8_conv_group")
    os.makedirs(dd, exist_ok=True)
    onnx.save(m, os.path.join(dd, "model.onnx"))
    np.save(os.path.join(dd, "input_0.npy"), x)
    for i, r in enumerate(refs):
        np.save(os.path.join(dd, "ref_output_%d.npy" % i), r)


a16w8_group_model()


# exact ties in the requantisation of elementwise heads and of one operand:
# Add and Sub of two equal-scale inputs into twice their scale (sum / 2),
# Mul into half the product's scale, Relu and Concat into twice the input
# scale; every odd value is an exact tie, which the QDQ reference rounds
# half to even (one RESCALE alone would round half up)
def ewise_ties_model():
    a = rng.integers(0, 256, size=(1, 4, 6, 6)).astype(np.uint8)
    b = rng.integers(0, 256, size=(1, 4, 6, 6)).astype(np.uint8)
    c = rng.integers(-3, 4, size=(1, 4, 6, 6)).astype(np.int8)
    s1, sc = np.float32(0.1), np.float32(0.5)
    s2 = np.float32(2 * s1)
    f1 = np.float64(s1)
    g = G()
    outs, refs = [], []
    da = lambda: g.dq("a", s1, np.array(128, np.uint8))
    db = lambda: g.dq("b", s1, np.array(120, np.uint8))
    outs.append(g.q(g.node("Add", [da(), db()]), s2, np.array(128, np.uint8)))
    refs.append((q(dq(a, f1, 128) + dq(b, f1, 120), np.float64(s2), 128, np.uint8), np.uint8))
    outs.append(g.q(g.node("Sub", [da(), db()]), s2, np.array(3, np.int8)))
    refs.append((q(dq(a, f1, 128) - dq(b, f1, 120), np.float64(s2), 3, np.int8), np.int8))
    outs.append(g.q(g.node("Mul", [da(), g.dq("c", sc, np.array(0, np.int8))]), s1, np.array(0, np.int8)))
    refs.append((q(dq(a, f1, 128) * dq(c, np.float64(sc), 0), f1, 0, np.int8), np.int8))
    outs.append(g.q(g.node("Relu", [da()]), s2, np.array(0, np.uint8)))
    refs.append((q(np.maximum(dq(a, f1, 128), 0), np.float64(s2), 0, np.uint8), np.uint8))
    outs.append(g.q(g.node("Concat", [da(), db()], axis=1), s2, np.array(128, np.uint8)))
    refs.append((q(np.concatenate([dq(a, f1, 128), dq(b, f1, 120)], axis=1), np.float64(s2), 128, np.uint8),
                 np.uint8))
    graph = helper.make_graph(g.nodes, "ewise_ties",
                              [helper.make_tensor_value_info(n, NP2ONNX[v.dtype.type], list(v.shape))
                               for n, v in (("a", a), ("b", b), ("c", c))],
                              [helper.make_tensor_value_info(o, NP2ONNX[dt], list(r.shape)) for o, (r, dt) in zip(outs, refs)],
                              g.inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="ctosa-quant-gen")
    m.ir_version = 8
    onnx.checker.check_model(m, full_check=True)
    dd = os.path.join(OUT, "ewise_ties")
    os.makedirs(dd, exist_ok=True)
    onnx.save(m, os.path.join(dd, "model.onnx"))
    for i, v in enumerate((a, b, c)):
        np.save(os.path.join(dd, "input_%d.npy" % i), v)
    for i, (r, _) in enumerate(refs):
        np.save(os.path.join(dd, "ref_output_%d.npy" % i), r)
    exact = (dq(a, 1, 128) + dq(b, 1, 120), dq(a, 1, 128) - dq(b, 1, 120), dq(a, 1, 128) * dq(c, 1, 0),
             np.maximum(dq(a, 1, 128), 0), np.concatenate([dq(a, 1, 128), dq(b, 1, 120)], axis=1))
    print("ewise_ties: exact ties per output", [int(np.sum(np.abs(v) % 2 == 1)) for v in exact])


ewise_ties_model()

# Mixed int8 / int16 activations (ctosa quantize --int16): int8 -> Conv +
# Relu -> int16 -> depthwise (stride 2) -> int16 -> 1x1 Conv -> int8. Under
# TOSA-1.0+INT (no EXT-INT16) each int16 input is split into two int8
# halves, two int8 convolutions with int32 accumulators: exact.
def a16_split_model():
    r = np.random.default_rng(20261202)
    x = r.integers(-128, 128, size=(1, 4, 7, 7)).astype(np.int8)
    xs, xz = 0.05, -3
    g = G()
    z16 = lambda: np.array(0, np.int16)
    w1 = r.integers(-127, 128, size=(8, 4, 3, 3)).astype(np.int8)
    w1s = r.uniform(0.005, 0.03, size=8).astype(np.float32)
    b1s = (np.float32(xs) * w1s).astype(np.float32)
    b1 = np.rint(r.normal(0, 0.5, size=8) / b1s).astype(np.int32)
    f1 = lambda v: v.reshape(-1, 1, 1, 1).astype(np.float64)
    xr = dq(x, np.float64(np.float32(xs)), xz)
    y1r = np.maximum(conv_ref(xr, dq(w1, f1(w1s), 0), dq(b1, b1s.astype(np.float64), 0), 1, 1, 1), 0)
    y1s = np.float32(np.abs(y1r).max() / 30000)
    y = g.node("Conv", [g.dq("x", xs, np.array(xz, np.int8)), g.dq(g.const(w1), w1s, np.zeros(8, np.int8), axis=0),
                        g.dq(g.const(b1), b1s, np.zeros(8, np.int32), axis=0)], kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    y1 = g.q(g.node("Relu", [y]), y1s, z16())
    y1q = q(y1r, np.float64(y1s), 0, np.int16)
    w2 = r.integers(-127, 128, size=(8, 1, 3, 3)).astype(np.int8)
    w2s = r.uniform(0.005, 0.03, size=8).astype(np.float32)
    b2s = (y1s * w2s).astype(np.float32)
    b2 = np.rint(r.normal(0, 0.5, size=8) / b2s).astype(np.int32)
    y2r = conv_ref(dq(y1q, np.float64(y1s), 0), dq(w2, f1(w2s), 0), dq(b2, b2s.astype(np.float64), 0), 2, 1, 8)
    y2s = np.float32(np.abs(y2r).max() / 20000)
    y2 = g.q(g.node("Conv", [g.dq(y1, y1s, z16()), g.dq(g.const(w2), w2s, np.zeros(8, np.int8), axis=0),
                             g.dq(g.const(b2), b2s, np.zeros(8, np.int32), axis=0)],
                    kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[2, 2], group=8), y2s, z16())
    y2q = q(y2r, np.float64(y2s), 0, np.int16)
    w3 = r.integers(-127, 128, size=(5, 8, 1, 1)).astype(np.int8)
    w3s = r.uniform(0.005, 0.03, size=5).astype(np.float32)
    b3s = (y2s * w3s).astype(np.float32)
    b3 = np.rint(r.normal(0, 0.5, size=5) / b3s).astype(np.int32)
    y3r = conv_ref(dq(y2q, np.float64(y2s), 0), dq(w3, f1(w3s), 0), dq(b3, b3s.astype(np.float64), 0), 1, 0, 1)
    zs = np.float32(np.abs(y3r).max() / 100)
    out = g.q(g.node("Conv", [g.dq(y2, y2s, z16()), g.dq(g.const(w3), w3s, np.zeros(5, np.int8), axis=0),
                              g.dq(g.const(b3), b3s, np.zeros(5, np.int32), axis=0)], kernel_shape=[1, 1]),
              zs, np.array(7, np.int8))
    save("a16_split", g, x, "x", out, np.int8, q(y3r, np.float64(zs), 7, np.int8), opset=21)


a16_split_model()

print("wrote models to", OUT)
