#!/usr/bin/python3
"""Hand-built QDQ edge models for tests/test_quant_edges.c.

Each model is DequantizeLinear -> Conv or Gemm (int8 weights, int32 bias)
-> QuantizeLinear with integer input and output, so under TOSA-1.0+INT it
is one partition of CONV2D/MATMUL + RESCALE. Scales are chosen so that the
requantisation ratio s_x*s_w/s_y is exactly a float32 number (s_x, s_y
powers of two; the generator asserts it): then ONNX's float semantics,
ONNX Runtime's float32 ratio and ctosa's 31-bit multiplier all scale by the
same number, and the reference can be computed exactly with rationals.

Files per model DIR/: model.onnx, input_0.npy,
  ref_onnx.npy  ONNX semantics, exact: round half to even, saturate
  ref_tosa.npy  the same with ties rounded half up (toward +infinity), which
                is what RESCALE (SINGLE_ROUND) does; differs from ref_onnx
                only at exact ties
  meta.txt      "ties N" (elements whose exact value is k + 1/2) and
                "fallback CODE" for models TOSA cannot represent
Deterministic. Run: /usr/bin/python3 tests/data/lower/quant_edges/make_edges.py
"""
import os
from fractions import Fraction as Fr
import numpy as np
import onnx
from onnx import helper, TensorProto, numpy_helper

OUT = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(20261129)
T = {np.int8: TensorProto.INT8, np.uint8: TensorProto.UINT8, np.int32: TensorProto.INT32}


def rnd(v, half_up):
    f = Fr(v)
    k = f.numerator // f.denominator  # floor
    r = f - k
    if r > Fr(1, 2) or (r == Fr(1, 2) and (half_up or k % 2 == 1)):
        k += 1
    return k, r == Fr(1, 2)


def exact_ratio(sx, sw, sy):
    r32 = np.float32(np.float32(sx) * np.float32(sw)) / np.float32(sy)
    ex = Fr(float(np.float32(sx))) * Fr(float(np.float32(sw))) / Fr(float(np.float32(sy)))
    return ex, Fr(float(np.float32(r32))) == ex


def build(name, kind, x, xs, xz, w, ws, wz, bq, ys, yz, ydt, relu=False, stride=1, pad=0, fallback=None,
          check_exact=True, tie_tests=None):
    """kind: conv (x NCHW, w OIHW) or gemm (x [N,K], w [M,K], transB).
    tie_tests: the number of tie tests (EQUAL operators) the lowering must
    emit, written to meta.txt when given."""
    nodes, inits = [], []
    k = [0]

    def c(arr):
        k[0] += 1
        nm = "c%d" % k[0]
        inits.append(numpy_helper.from_array(np.asarray(arr), nm))
        return nm

    def node(op, ins, **kw):
        k[0] += 1
        out = "t%d" % k[0]
        nodes.append(helper.make_node(op, ins, [out], name="%s_%d" % (op, k[0]), **kw))
        return out

    M = w.shape[0]
    ws = np.asarray(ws, np.float32)
    per_ch = ws.ndim == 1
    xd = node("DequantizeLinear", ["x", c(np.array(xs, np.float32)), c(np.array(xz, x.dtype))])
    wd = node("DequantizeLinear", [c(w), c(ws), c(np.array(wz, np.int8) if not per_ch else np.full(M, wz, np.int8))],
              **({"axis": 0} if per_ch else {}))
    bs = (np.float32(xs) * ws).astype(np.float32)
    bd = node("DequantizeLinear", [c(bq.astype(np.int32)), c(bs if per_ch else np.array(bs, np.float32)),
                                   c(np.zeros(M, np.int32) if per_ch else np.array(0, np.int32))],
              **({"axis": 0} if per_ch else {}))
    if kind == "conv":
        h = node("Conv", [xd, wd, bd], strides=[stride, stride], pads=[pad] * 4)
    else:
        h = node("Gemm", [xd, wd, bd], transB=1)
    if relu:
        h = node("Relu", [h])
    y = node("QuantizeLinear", [h, c(np.array(ys, np.float32)), c(np.array(yz, ydt))])
    # exact reference
    xi = x.astype(np.int64) - int(xz)
    wi = w.astype(np.int64) - int(wz)
    if kind == "conv":
        n_, ci, hh, ww_ = x.shape
        _, _, kh, kw = w.shape
        xp = np.pad(xi, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
        oh, ow = (hh + 2 * pad - kh) // stride + 1, (ww_ + 2 * pad - kw) // stride + 1
        acc = np.zeros((n_, M, oh, ow), np.int64)
        for i in range(oh):
            for j in range(ow):
                patch = xp[:, :, i * stride:i * stride + kh, j * stride:j * stride + kw]
                acc[:, :, i, j] = np.einsum("ncij,mcij->nm", patch, wi)
        acc += bq.astype(np.int64)[None, :, None, None]
        chan = lambda idx: idx[1]
    else:
        acc = xi @ wi.T + bq.astype(np.int64)[None, :]
        chan = lambda idx: idx[1]
    info = np.iinfo(ydt)
    ref_onnx = np.zeros(acc.shape, ydt)
    ref_tosa = np.zeros(acc.shape, ydt)
    ties = 0
    ratios = [exact_ratio(xs, ws[m] if per_ch else ws, ys) for m in range(M)]
    if check_exact:
        assert all(e for _, e in ratios), name
    for idx in np.ndindex(acc.shape):
        r = ratios[chan(idx)][0]
        v = Fr(int(acc[idx])) * r
        if relu:
            v = max(v, Fr(0))
        a, tie = rnd(v, False)
        b, _ = rnd(v, True)
        ties += tie
        ref_onnx[idx] = min(max(a + yz, info.min), info.max)
        ref_tosa[idx] = min(max(b + yz, info.min), info.max)
    graph = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", T[x.dtype.type], list(x.shape))],
                              [helper.make_tensor_value_info(y, T[ydt], list(acc.shape))], inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="ctosa-quant-edges")
    m.ir_version = 8
    onnx.checker.check_model(m, full_check=True)
    d = os.path.join(OUT, name)
    os.makedirs(d, exist_ok=True)
    onnx.save(m, os.path.join(d, "model.onnx"))
    np.save(os.path.join(d, "input_0.npy"), np.ascontiguousarray(x))
    np.save(os.path.join(d, "ref_onnx.npy"), ref_onnx)
    np.save(os.path.join(d, "ref_tosa.npy"), ref_tosa)
    with open(os.path.join(d, "meta.txt"), "w") as f:
        f.write("ties %d\n" % ties)
        f.write("differ %d\n" % int((ref_onnx != ref_tosa).sum()))
        if fallback:
            f.write("fallback %s\n" % fallback)
        if tie_tests is not None:
            f.write("tie_tests %d\n" % tie_tests)
    sat = int(((ref_tosa == info.min) | (ref_tosa == info.max)).sum())
    print("%-26s ties %4d  differ %4d  saturated %4d / %d" % (name, ties, (ref_onnx != ref_tosa).sum(), sat, acc.size))


def f32_full(n, lo, hi):
    """float32 values with full 24-bit mantissas"""
    return (rng.uniform(lo, hi, n).astype(np.float32) * np.float32(1 + 2 ** -23)).astype(np.float32)


def main():
    # zero points at the type limits (uint8 0 / 255, int8 -128 / 127), both
    # input and output side, per-channel weights with full-mantissa scales;
    # the output zero point at a limit saturates about half the outputs.
    cases = [("conv_u8_zp0_to_255", np.uint8, 0, np.uint8, 255),
             ("conv_u8_zp255_to_0", np.uint8, 255, np.uint8, 0),
             ("conv_s8_zpm128_to_127", np.int8, -128, np.int8, 127),
             ("conv_s8_zp127_to_m128", np.int8, 127, np.int8, -128)]
    for name, xdt, xz, ydt, yz in cases:
        info = np.iinfo(xdt)
        x = rng.integers(info.min, info.max + 1, (1, 3, 7, 7)).astype(xdt)
        w = rng.integers(-127, 128, (5, 3, 3, 3)).astype(np.int8)
        ws = f32_full(5, 0.002, 0.02)
        bq = rng.integers(-3000, 3000, 5)
        build(name, "conv", x, 2.0 ** -5, xz, w, ws, 0, bq, 2.0 ** -2, yz, ydt, stride=2, pad=1)
    # weight zero point at the int8 limits (per tensor): TOSA CONV2D takes a
    # weight zero point
    for name, wz in [("conv_wzp_m128", -128), ("conv_wzp_127", 127)]:
        x = rng.integers(-128, 128, (1, 2, 5, 5)).astype(np.int8)
        w = rng.integers(-128, 128, (3, 2, 3, 3)).astype(np.int8)
        build(name, "conv", x, 2.0 ** -4, 3, w, f32_full(1, 0.001, 0.002)[0], wz, rng.integers(-500, 500, 3),
              2.0 ** 3, -7, np.int8, pad=1)
    # rounding ties, both signs: ratio exactly 2^-3 (s_x = 2^-4, s_w = 2^-1,
    # s_y = 2^-2); column 0 gives x/8 (ties where x = 8k + 4), columns 1 and 2
    # give +-x/2 (ties at every odd x)
    a = np.arange(-64, 64, dtype=np.int64)
    x = np.ascontiguousarray(np.stack([a, -a]).T).astype(np.int8)
    w = np.array([[1, 0], [4, 0], [0, -4]], np.int8)
    build("gemm_ties", "gemm", x, 2.0 ** -4, 0, w, 2.0 ** -1, 0, np.array([0, 0, 0]), 2.0 ** -2, 0, np.int8)
    # the same with uint8 and zero points, biases shifting the ties
    xu = (x.astype(np.int16) + 128).astype(np.uint8)
    build("gemm_ties_u8", "gemm", xu, 2.0 ** -4, 128, w, 2.0 ** -1, 0, np.array([4, -4, 12]), 2.0 ** -2, 128,
          np.uint8)
    # largest ratio RESCALE takes: just below 2^29 (shift 2); accumulators in
    # {-1, 0, 1} so outputs saturate except 0
    xs_ = np.array([[1, 0, -1, 0], [0, 0, 0, 0]], np.int8)
    wl = np.eye(4, dtype=np.int8)
    r = np.float32(2.0 ** 29 * (1 - 2 ** -24))
    build("gemm_ratio_max", "gemm", xs_, 1.0, 0, wl, r, 0, np.zeros(4, np.int64), 1.0, 0, np.int8)
    # ratio > 1 without saturation: 3.0 * acc
    xs3 = rng.integers(-20, 21, (3, 4)).astype(np.int8)
    build("gemm_ratio_3", "gemm", xs3, 2.0, 0, wl, 1.5, 0, np.zeros(4, np.int64), 1.0, 5, np.int8)
    # ratio 2^29: shift would be 1, outside RESCALE (shift 2..62)
    build("gemm_ratio_too_large", "gemm", xs_, 1.0, 0, wl, np.float32(2.0 ** 29), 0, np.zeros(4, np.int64), 1.0, 0,
          np.int8, fallback="unsupported_attribute")
    # small ratios: 1.2345678 * 2^-20 (shift 50) with large accumulators;
    # 1.9 * 2^-32 (shift 62, the largest) where only biases near the int32
    # limit reach an output step; 1.9 * 2^-34 (shift 64: the multiplier is
    # shifted down instead) where every output is the zero point
    K = 256
    xb = np.full((2, K), 127, np.int8)
    xb[1] = -128
    wb = np.stack([np.full(K, 127, np.int8), np.full(K, -128, np.int8), rng.integers(-128, 128, K).astype(np.int8)])
    build("gemm_ratio_2m20", "gemm", xb, 2.0 ** -10, 0, wb, np.float32(1.2345678) * np.float32(2.0 ** -10), 0,
          np.array([12345, -54321, 7]), 1.0, 0, np.int8)
    big = 2 ** 31 - 1 - 2 ** 23
    build("gemm_ratio_2m32", "gemm", xb, 2.0 ** -16, 0, wb, np.float32(1.9) * np.float32(2.0 ** -16), 0,
          np.array([big, -big, 2 ** 30]), 1.0, 0, np.int8)
    build("gemm_ratio_2m34", "gemm", xb, 2.0 ** -16, 0, wb, np.float32(1.9) * np.float32(2.0 ** -18), 0,
          np.array([big, -big, 2 ** 30]), 1.0, 0, np.int8)
    # per-channel with one channel of scale 1e-20 (and a bias at the int32
    # limit in that channel's tiny units): that channel's outputs are the
    # zero point; the others are exact
    x = rng.integers(-128, 128, (1, 4, 6, 6)).astype(np.int8)
    w = rng.integers(-127, 128, (4, 4, 1, 1)).astype(np.int8)
    ws = np.array([0.0125, 1e-20, 0.003, 0.07], np.float32)
    bq = np.array([100, 2 ** 31 - 1, -100, 0])
    build("conv_perchannel_tiny", "conv", x, 2.0 ** -6, -2, w, ws, 0, bq, 2.0 ** -3, 1, np.int8)
    # ties that the ratio allows but the weights rule out: the lowering
    # emits a tie test only when some accumulator value can be a tie.
    # Ratio 3 * 2^-10 (ties at acc = 512 mod 1024) with even weights and odd
    # biases: every accumulator is odd, no test.
    x = rng.integers(-128, 128, (1, 3, 6, 6)).astype(np.int8)
    w = (2 * rng.integers(-60, 61, (4, 3, 3, 3))).astype(np.int8)
    bq = 2 * rng.integers(-200, 200, 4) + 1
    build("conv_ties_odd_acc", "conv", x, 2.0 ** -4, 5, w, 3 * 2.0 ** -8, 0, bq, 2.0 ** -2, -3, np.int8, pad=1,
          tie_tests=0)
    # ratio 5 * 2^-16 (ties at acc = 2^15 mod 2^16) with weights in {-1, 0,
    # 1} over 16 x 3 x 3 inputs: |acc| <= 144 * 128 + 100 < 2^15, no test
    # (the bound from the kernel size alone, 255^2 * 144, would reach it)
    x = rng.integers(-128, 128, (1, 16, 5, 5)).astype(np.int8)
    w = rng.integers(-1, 2, (3, 16, 3, 3)).astype(np.int8)
    build("conv_ties_out_of_reach", "conv", x, 2.0 ** -8, 0, w, 5 * 2.0 ** -10, 0, rng.integers(-100, 101, 3),
          2.0 ** -2, 0, np.int8, pad=1, tie_tests=0)
    # per channel, one channel whose accumulators reach its ties (weights
    # {2, 2}, bias 0, ratio 2^-3: acc = 2(x0 + x1), ties at 4 mod 8) beside
    # one that cannot (odd bias over even weights): one tie test, exact
    a = np.arange(-64, 64, dtype=np.int64)
    x = np.ascontiguousarray(np.stack([a, (a * 5 + 2) % 128 - 64]).T).astype(np.int8)
    w = np.array([[2, 2], [4, -2]], np.int8)
    build("gemm_ties_one_channel", "gemm", x, 2.0 ** -4, 0, w, np.array([0.5, 0.375], np.float32), 0,
          np.array([0, 3]), 2.0 ** -2, 0, np.int8, tie_tests=1)


main()
