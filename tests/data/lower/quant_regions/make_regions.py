#!/usr/bin/python3
"""Quantized data-movement regions (docs/quantization.md, "Movement
regions"): DequantizeLinear outputs of several integer inputs, each with its
own scale and zero point, moved in float by Concat / Reshape / Transpose /
Slice / Split (torch's channel shuffle) into QuantizeLinear or Conv sinks.

Under TOSA-1.0+INT each model is one partition (tests/test_quant.c). The
reference (ref_output_N.npy) is the ONNX QDQ definition in float64 with
numpy: dequantize, move, (convolve,) divide by the output scale, round
half to even, saturate. Scales are float32 values, as the model stores
them. Deterministic. Run with Debian's python3:
    /usr/bin/python3 tests/data/lower/quant_regions/make_regions.py
"""
import os
import numpy as np
import onnx
from onnx import helper, TensorProto, numpy_helper

OUT = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(20261202)
NP2ONNX = {np.int8: TensorProto.INT8, np.uint8: TensorProto.UINT8}


def f32(s):
    return np.float64(np.float32(s))


def q(x, s, zp, dt):
    info = np.iinfo(dt)
    return np.clip(np.rint(x / f32(s)) + zp, info.min, info.max).astype(dt)


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

    def node(self, op, ins, n_out=1, **attrs):
        self.k += 1
        outs = ["t%d_%d" % (self.k, i) for i in range(n_out)]
        self.nodes.append(helper.make_node(op, ins, outs, name="%s_%d" % (op, self.k), **attrs))
        return outs[0] if n_out == 1 else outs

    def dq(self, x, s, zp):
        return self.node("DequantizeLinear", [x, self.const(np.array(s, np.float32)), self.const(zp)])

    def q(self, x, s, zp):
        return self.node("QuantizeLinear", [x, self.const(np.array(s, np.float32)), self.const(zp)])

    def i64(self, v):
        return self.const(np.array(v, np.int64))


def save(name, g, ins, outs):
    """ins: [(name, array)], outs: [(name, reference array)]"""
    vi = lambda n, a: helper.make_tensor_value_info(n, NP2ONNX[a.dtype.type], list(a.shape))
    graph = helper.make_graph(g.nodes, name, [vi(n, a) for n, a in ins], [vi(n, a) for n, a in outs], g.inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="ctosa-quant-gen")
    m.ir_version = 8
    onnx.checker.check_model(m, full_check=True)
    d = os.path.join(OUT, name)
    os.makedirs(d, exist_ok=True)
    onnx.save(m, os.path.join(d, "model.onnx"))
    for i, (_, a) in enumerate(ins):
        np.save(os.path.join(d, "input_%d.npy" % i), a)
    for i, (_, r) in enumerate(outs):
        np.save(os.path.join(d, "ref_output_%d.npy" % i), r)


def u8(shape):
    return rng.integers(0, 256, size=shape).astype(np.uint8)


def s8(shape):
    return rng.integers(-128, 128, size=shape).astype(np.int8)


def shuffle(g, a, b, C, H, W):
    """torch's channel shuffle of Concat(a, b) (2 groups), as exported:
    Concat, Reshape [N, 2, C, H, W], Transpose, Reshape [N, 2C, H, W]"""
    c = g.node("Concat", [a, b], axis=1)
    r = g.node("Reshape", [c, g.i64([1, 2, C, H, W])])
    t = g.node("Transpose", [r], perm=[0, 2, 1, 3, 4])
    return g.node("Reshape", [t, g.i64([1, 2 * C, H, W])])


def shuffle_ref(a, b):
    c = np.concatenate([a, b], axis=1)
    n, cc, h, w = c.shape
    return c.reshape(n, 2, cc // 2, h, w).transpose(0, 2, 1, 3, 4).reshape(n, cc, h, w)


def half_ends(g, x):
    """the Slice bound torch computes from the shape: Shape, Gather, Div"""
    sh = g.node("Shape", [x])
    ch = g.node("Gather", [sh, g.i64(1)], axis=0)
    return g.node("Unsqueeze", [g.node("Div", [ch, g.i64(2)]), g.i64([0])])


C, H, W = 4, 3, 5


# 1. equal parameters everywhere: the sinks are the moved bits (bit-exact);
# the halves taken by Slice with torch's shape arithmetic and by Split
def shuffle_equal():
    x1, x2 = u8((1, C, H, W)), u8((1, C, H, W))
    s, z = 0.05, np.array(10, np.uint8)
    g = G()
    y = shuffle(g, g.dq("x1", s, z), g.dq("x2", s, z), C, H, W)
    e = half_ends(g, y)
    lo = g.q(g.node("Slice", [y, g.i64([0]), e, g.i64([1])]), s, z)
    hi = g.q(g.node("Slice", [y, e, g.i64([2 * C]), g.i64([1])]), s, z)
    sp = g.node("Split", [y], n_out=2, axis=1)
    s0, s1 = g.q(sp[0], s, z), g.q(sp[1], s, z)
    ref = shuffle_ref(x1, x2)
    save("shuffle_equal", g, [("x1", x1), ("x2", x2)],
         [(lo, ref[:, :C]), (hi, ref[:, C:]), (s0, ref[:, :C]), (s1, ref[:, C:])])


# 2. differing source scales and types into sinks of other parameters: each
# source requantised to its sink (s1 / sink 0.25 = 1/2: exact ties, rounded
# half to even; the int8 sink saturates)
def shuffle_requant():
    x1, x2 = u8((1, C, H, W)), s8((1, C, H, W))
    g = G()
    y = shuffle(g, g.dq("x1", 0.125, np.array(3, np.uint8)), g.dq("x2", 0.1, np.array(-5, np.int8)), C, H, W)
    lo = g.q(g.node("Slice", [y, g.i64([0]), g.i64([C]), g.i64([1])]), 0.25, np.array(128, np.uint8))
    hi = g.q(g.node("Slice", [y, g.i64([C]), g.i64([2 * C]), g.i64([1])]), 0.0375, np.array(0, np.int8))
    ref = shuffle_ref(dq(x1, 0.125, 3), dq(x2, 0.1, -5))
    save("shuffle_requant", g, [("x1", x1), ("x2", x2)],
         [(lo, q(ref[:, :C], 0.25, 128, np.uint8)), (hi, q(ref[:, C:], 0.0375, 0, np.int8))])


# 2b. sources of one zero point and type but different scales: each sink
# requantises the shuffled carrier channel by channel (exact ties again:
# 0.125 / 0.25)
def shuffle_scales():
    x1, x2 = u8((1, C, H, W)), u8((1, C, H, W))
    g = G()
    y = shuffle(g, g.dq("x1", 0.125, np.array(4, np.uint8)), g.dq("x2", 0.1, np.array(4, np.uint8)), C, H, W)
    lo = g.q(g.node("Slice", [y, g.i64([0]), g.i64([C]), g.i64([1])]), 0.25, np.array(128, np.uint8))
    hi = g.q(g.node("Slice", [y, g.i64([C]), g.i64([2 * C]), g.i64([1])]), 0.0375, np.array(0, np.int8))
    ref = shuffle_ref(dq(x1, 0.125, 4), dq(x2, 0.1, 4))
    save("shuffle_scales", g, [("x1", x1), ("x2", x2)],
         [(lo, q(ref[:, :C], 0.25, 128, np.uint8)), (hi, q(ref[:, C:], 0.0375, 0, np.int8))])


# 3. one source feeding two sinks of different parameters, one of them
# through a second operator, and the first sink's parameters equal to the
# source's
def one_source_two_sinks():
    x = s8((1, C, H, W))
    g = G()
    t = g.node("Transpose", [g.dq("x", 0.02, np.array(7, np.int8))], perm=[0, 2, 3, 1])
    a = g.q(t, 0.02, np.array(7, np.int8))
    b = g.q(g.node("Reshape", [t, g.i64([1, H * W * C])]), 0.03, np.array(100, np.uint8))
    r = dq(x, 0.02, 7).transpose(0, 2, 3, 1)
    save("one_source_two_sinks", g, [("x", x)], [(a, x.transpose(0, 2, 3, 1)),
                                                 (b, q(r.reshape(1, -1), 0.03, 100, np.uint8))])


# 4. Concat of two differently scaled sources, then Flatten, into one sink
def concat_two_scales():
    x1, x2 = u8((1, 2, H, W)), u8((1, 3, H, W))
    g = G()
    c = g.node("Concat", [g.dq("x1", 0.04, np.array(0, np.uint8)), g.dq("x2", 0.09, np.array(128, np.uint8))],
               axis=1)
    y = g.q(g.node("Flatten", [c], axis=1), 0.06, np.array(20, np.uint8))
    r = np.concatenate([dq(x1, 0.04, 0), dq(x2, 0.09, 128)], axis=1).reshape(1, -1)
    save("concat_two_scales", g, [("x1", x1), ("x2", x2)], [(y, q(r, 0.06, 20, np.uint8))])


def conv_ref(x, w, b, group):
    n, c, h, wd = x.shape
    m, cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    y = np.zeros((n, m, h, wd))
    mg = m // group
    for o in range(m):
        g0 = (o // mg) * cg
        for i in range(h):
            for j in range(wd):
                y[:, o, i, j] = (xp[:, g0:g0 + cg, i:i + kh, j:j + kw] * w[o]).sum(axis=(1, 2, 3))
    return y + b.reshape(1, -1, 1, 1)


# 5. a shuffle read by Convs the quantizer left in float (torch: the first
# convolutions of a downsampling block): float input, int8 weights behind
# DequantizeLinear, float bias, output quantized (through Relu for one).
# A dense 3x3 (one integer convolution per source scale, the other scale's
# weights masked) and a depthwise 3x3 (one, the source scales in the
# weight scales); with a second zero point (shuffle_conv_zp) each
# convolution reads the shuffle replayed with the other source at its
# zero point.
def shuffle_conv(name, z2):
    x1, x2 = u8((1, C, H, W)), u8((1, C, H, W))
    g = G()
    y = shuffle(g, g.dq("x1", 0.03, np.array(0, np.uint8)), g.dq("x2", 0.045, np.array(z2, np.uint8)), C, H, W)
    xr = shuffle_ref(dq(x1, 0.03, 0), dq(x2, 0.045, z2))
    outs = []
    for group, relu, ys in ((1, True, 0.11), (2 * C, False, 0.05)):
        M, cg = 2 * C, 2 * C // group
        wq = rng.integers(-127, 128, size=(M, cg, 3, 3)).astype(np.int8)
        ws = 0.01
        b = rng.normal(0, 0.3, size=M).astype(np.float32)
        wd = g.dq(g.const(wq), ws, np.array(0, np.int8))
        cv = g.node("Conv", [y, wd, g.const(b)], kernel_shape=[3, 3], pads=[1, 1, 1, 1], group=group)
        if relu:
            cv = g.node("Relu", [cv])
        out = g.q(cv, ys, np.array(128 if relu else 0, np.uint8 if relu else np.int8))
        r = conv_ref(xr, dq(wq, ws, 0), b.astype(np.float64), group)
        if relu:
            r = np.maximum(r, 0)
        outs.append((out, q(r, ys, 128, np.uint8) if relu else q(r, ys, 0, np.int8)))
    save(name, g, [("x1", x1), ("x2", x2)], outs)


# 6. the accumulator bound: every weight -128 with zero point 127 and the
# first source at 255 (|x - z| (w - z_w) = 255 * 255 in every term): the
# fraction bits of the sum must keep the RESCALE by 2^k inside what it
# REQUIREs
def shuffle_conv_extreme():
    x1, x2 = np.full((1, C, H, W), 255, np.uint8), u8((1, C, H, W))
    g = G()
    y = shuffle(g, g.dq("x1", 0.03, np.array(0, np.uint8)), g.dq("x2", 0.045, np.array(0, np.uint8)), C, H, W)
    xr = shuffle_ref(dq(x1, 0.03, 0), dq(x2, 0.045, 0))
    outs = []
    for group in (1, 2 * C):  # dense, depthwise
        wq = np.full((2 * C, 2 * C // group, 3, 3), -128, np.int8)
        b = rng.normal(0, 0.3, size=2 * C).astype(np.float32)
        wd = g.dq(g.const(wq), 0.01, np.array(127, np.int8))
        cv = g.node("Conv", [y, wd, g.const(b)], kernel_shape=[3, 3], pads=[1, 1, 1, 1], group=group)
        r = conv_ref(xr, dq(wq, 0.01, 127), b.astype(np.float64), group)
        ys = float(np.abs(r).max() / 120.0)
        outs.append((g.q(cv, ys, np.array(0, np.int8)), q(r, ys, 0, np.int8)))
    save("shuffle_conv_extreme", g, [("x1", x1), ("x2", x2)], outs)


shuffle_equal()
shuffle_requant()
shuffle_scales()
one_source_two_sinks()
concat_two_scales()
shuffle_conv("shuffle_conv", 0)
shuffle_conv("shuffle_conv_zp", 9)
shuffle_conv_extreme()
