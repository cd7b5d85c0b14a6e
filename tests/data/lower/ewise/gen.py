#!/usr/bin/python3
"""Generates the elementwise / unary / activation / cast lowering test cases.

Run with Debian's python3 (numpy + onnx 1.12):

    /usr/bin/python3 tests/data/lower/ewise/gen.py

For every case it writes <case>/model.onnx (one node, fixed shapes, constant
inputs as initializers), <case>/input_N.pb and <case>/output_N.pb
(TensorProtos named after the graph values, as in the ONNX node tests), and
one line per spec to cases.txt:

    <case> <spec> <expect> <rtol> <atol>

expect: "ok" = one partition holding every node, outputs match within
rtol/atol (integers and bools exactly); "any" = not asserted beyond a clean
result (matches when delegated); anything else = the node falls back with
that reason code. Expected outputs are computed with numpy in float64 from
the (rounded) inputs, following the ONNX operator definitions.
"""
import os
import shutil
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(20261129)

FP = "TOSA-1.0+FP"
INTFP = "TOSA-1.0+INT+FP"
BF = "TOSA-1.0+FP+bf16"

I64 = "TOSA-1.1+INT+FP+int64"
F8 = "TOSA-1.0+FP+fp8e4m3"

BF16 = "bf16"  # marker dtype: stored as uint16 bit patterns
F8E4M3 = "fp8e4m3"  # marker dtype: stored as uint8 bit patterns (onnx 1.12 has no fp8)

lines = []


def bf16_round(x):
    """float32 -> bfloat16 bits (round to nearest even)."""
    b = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    b = (b + 0x7FFF + ((b >> 16) & 1)) >> 16
    return b.astype(np.uint16)


def bf16_val(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32)


def fp8e4m3_table():
    """value of each e4m3fn code (0x7f / 0xff are NaN)."""
    vals = []
    for code in range(256):
        sgn = -1.0 if code & 0x80 else 1.0
        e, m = (code >> 3) & 15, code & 7
        if e == 15 and m == 7:
            vals.append(np.nan)
        elif e == 0:
            vals.append(sgn * m / 8.0 * 2.0 ** -6)
        else:
            vals.append(sgn * (1 + m / 8.0) * 2.0 ** (e - 7))
    return np.array(vals)


def fp8e4m3_round(x, saturate):
    """float -> e4m3fn bits, nearest (ties to the even code); overflow NaN
    unless saturate (then +-448; inf too)."""
    tab = fp8e4m3_table()
    out = []
    for v in np.asarray(x, np.float64).ravel():
        if np.isnan(v):
            out.append(0x7F)
            continue
        if saturate:
            v = min(max(v, -448.0), 448.0)
        elif abs(v) >= 464.0:  # rounds past the largest finite value
            out.append(0x7F if v > 0 else 0xFF)
            continue
        best = None
        for code in range(256):
            t = tab[code]
            if np.isnan(t) or (t == 0 and code == 0x80):
                continue
            d = abs(t - v)
            if best is None or d < best[0] or (d == best[0] and (code & 1) == 0):
                best = (d, code)
        code = best[1]
        if v < 0 and tab[code] == 0:
            code = 0x80
        out.append(code)
    return np.array(out, np.uint8).reshape(np.shape(x))


def onnx_type(a):
    if isinstance(a, tuple) and a[0] == BF16:
        return TensorProto.BFLOAT16
    if isinstance(a, tuple) and a[0] == F8E4M3:
        return 17
    return helper.np_dtype_to_tensor_dtype(a.dtype) if hasattr(helper, "np_dtype_to_tensor_dtype") \
        else onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[a.dtype]


def to_proto(name, a):
    if isinstance(a, tuple) and a[0] == BF16:
        bits = a[1]
        t = helper.make_tensor(name, TensorProto.BFLOAT16, bits.shape, bits.tobytes(), raw=True)
        return t
    if isinstance(a, tuple) and a[0] == F8E4M3:
        t = TensorProto()
        t.name = name
        t.data_type = 17
        t.dims.extend(a[1].shape)
        t.raw_data = a[1].tobytes()
        return t
    return numpy_helper.from_array(a, name)


def shape_of(a):
    return list(a[1].shape) if isinstance(a, tuple) else list(a.shape)


def case(name, op, inputs, outputs, attrs=None, opset=17, consts=(), specs=((FP, "ok"), (INTFP, "ok")),
         rtol=1e-3, atol=1e-5, out_types=None):
    """inputs: list of (name, array); consts: names among them that become
    initializers; outputs: list of (name, expected array or None)."""
    d = os.path.join(HERE, name)
    os.makedirs(d, exist_ok=True)
    ins, inits = [], []
    for n, a in inputs:
        if n == "":
            continue
        if n in consts:
            inits.append(to_proto(n, a))
        else:
            ins.append(helper.make_tensor_value_info(n, onnx_type(a), shape_of(a)))
    outs = []
    for i, (n, a) in enumerate(outputs):
        t = out_types[i] if out_types else onnx_type(a)
        outs.append(helper.make_tensor_value_info(n, t, shape_of(a)))
    node = helper.make_node(op, [n for n, _ in inputs], [n for n, _ in outputs], name=name,
                            **(attrs or {}))
    g = helper.make_graph([node], name, ins, outs, initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], producer_name="ctosa-gen")
    m.ir_version = 8
    onnx.save(m, os.path.join(d, "model.onnx"))
    k = 0
    for n, a in inputs:
        if n == "" or n in consts:
            continue
        with open(os.path.join(d, "input_%d.pb" % k), "wb") as f:
            f.write(to_proto(n, a).SerializeToString())
        k += 1
    for i, (n, a) in enumerate(outputs):
        with open(os.path.join(d, "output_%d.pb" % i), "wb") as f:
            f.write(to_proto(n, a).SerializeToString())
    for spec, expect in specs:
        lines.append("%s %s %s %g %g" % (name, spec, expect, rtol, atol))


def f32(*shape, lo=-3.0, hi=3.0):
    return rng.uniform(lo, hi, shape).astype(np.float32)


def ints(dt, *shape, lo=-100, hi=100):
    return rng.integers(lo, hi, shape).astype(dt)


def unary(name, op, x, fn, attrs=None, opset=17, **kw):
    y = fn(x.astype(np.float64)).astype(x.dtype) if x.dtype.kind == "f" else fn(x)
    case(name, op, [("x", x)], [("y", y)], attrs=attrs, opset=opset, **kw)


FLOAT_ONLY = ((FP, "ok"), (INTFP, "ok"))
INT_ONLY = ((FP, "any"), (INTFP, "ok"))


def main():
    for e in os.listdir(HERE):
        p = os.path.join(HERE, e)
        if os.path.isdir(p):
            shutil.rmtree(p)

    # ------------------------------------------------------------ binary
    a, b = f32(2, 3, 4), f32(4)
    case("add_f32_bcast", "Add", [("a", a), ("b", b)], [("y", a + b)])
    a, b = f32(2, 3).astype(np.float16), f32(2, 3).astype(np.float16)
    case("add_f16", "Add", [("a", a), ("b", b)], [("y", (a.astype(np.float32) + b).astype(np.float16))],
         rtol=1e-2)
    ab, bb = bf16_round(f32(2, 3)), bf16_round(f32(2, 3))
    case("mul_bf16", "Mul", [("a", (BF16, ab)), ("b", (BF16, bb))],
         [("y", (BF16, bf16_round(bf16_val(ab) * bf16_val(bb))))], specs=((BF, "ok"),), rtol=1e-2)
    a, b = ints(np.int32, 3, 4, lo=-10**6, hi=10**6), ints(np.int32, 3, 1, lo=-10**6, hi=10**6)
    case("add_i32", "Add", [("a", a), ("b", b)], [("y", a + b)], specs=((FP, "ok"), (INTFP, "ok")))
    a, b = ints(np.int8, 2, 5, lo=-128, hi=128), ints(np.int8, 2, 5, lo=-128, hi=128)
    case("add_i8_wrap", "Add", [("a", a), ("b", b)], [("y", a + b)], specs=INT_ONLY)
    a, b = ints(np.int16, 2, 5, lo=-32768, hi=32768), ints(np.int16, 5, lo=-32768, hi=32768)
    case("sub_i16_wrap", "Sub", [("a", a), ("b", b)], [("y", a - b)], specs=INT_ONLY)
    a, b = ints(np.int8, 3, 4, lo=-128, hi=128), ints(np.int8, 3, 4, lo=-128, hi=128)
    case("mul_i8_wrap", "Mul", [("a", a), ("b", b)], [("y", a * b)], specs=INT_ONLY)
    a, b = ints(np.int32, 3, 4, lo=-3000, hi=3000), ints(np.int32, 4, lo=-3000, hi=3000)
    # b needs a RESHAPE to rank 2, and PRO-FP has no int32 RESHAPE rows
    case("mul_i32", "Mul", [("a", a), ("b", b)], [("y", a * b)], specs=((FP, "not_in_spec"), (INTFP, "ok")))
    # a constant b is emitted at rank 2 directly: no RESHAPE needed
    case("mul_i32_const_bcast", "Mul", [("a", a), ("b", b)], [("y", a * b)], consts=("b",))
    a, b = f32(2, 3), np.array(1.5, np.float32)
    case("mul_f32_scalar_const", "Mul", [("a", a), ("b", b)], [("y", a * b)], consts=("b",))
    a, b = f32(3, 4), f32(3, 4)
    case("sub_f32", "Sub", [("a", a), ("b", b)], [("y", a - b)])
    a, b = f32(3, 4), f32(1, 4, lo=0.5, hi=4) * np.array([1, -1, 1, -1], np.float32)
    case("div_f32", "Div", [("a", a), ("b", b)], [("y", (a.astype(np.float64) / b).astype(np.float32))])
    case("div_f32_const", "Div", [("a", a), ("b", b)], [("y", (a.astype(np.float64) / b).astype(np.float32))],
         consts=("b",))
    a = np.array([[7, -7, 7, -7, 0, 100]], np.int32)
    b = np.array([[2, 2, -2, -2, 3, 7]], np.int32)
    case("div_i32_trunc", "Div", [("a", a), ("b", b)], [("y", np.trunc(a / b).astype(np.int32))],
         specs=((FP, "ok"), (INTFP, "ok")))
    a = np.array([-128, -7, 7, 127, 100], np.int8)
    b = np.array([-1, 2, -2, 3, -7], np.int8)
    case("div_i8", "Div", [("a", a), ("b", b)], [("y", np.trunc(a.astype(np.float64) / b).astype(np.int32).astype(np.int8))],
         specs=INT_ONLY)

    # Pow
    a, b = f32(2, 3, lo=0.5, hi=2), f32(2, 3, lo=-2, hi=2)
    case("pow_f32", "Pow", [("a", a), ("b", b)], [("y", np.power(a.astype(np.float64), b).astype(np.float32))])
    a = f32(2, 3)
    for e, nm in ((2.0, "2"), (3.0, "3"), (-1.0, "m1"), (0.5, "half"), (0.0, "0"), (2.5, "2p5")):
        x = np.abs(a) + 0.1 if e in (0.5, 2.5) else a
        case("pow_const_" + nm, "Pow", [("a", x), ("e", np.array(e, np.float32))],
             [("y", np.power(x.astype(np.float64), e).astype(np.float32))], consts=("e",),
             specs=((FP, "no_compute"), (INTFP, "no_compute")) if e == 0 else ((FP, "ok"), (INTFP, "ok")))
    a, b = np.array([1, 2, 3, -2], np.int32), np.array([4, 5, 6, 3], np.int32)
    case("pow_i32_i32", "Pow", [("a", a), ("b", b)], [("y", np.power(a, b))], specs=INT_ONLY)
    a, b = f32(2, 3, lo=0.5, hi=2), np.array([1, 2, 3], np.int32)
    case("pow_f32_i32", "Pow", [("a", a), ("b", b)], [("y", np.power(a.astype(np.float64), b).astype(np.float32))],
         specs=((FP, "any"), (INTFP, "ok")))
    a = ints(np.int32, 2, 3, lo=-20, hi=20)
    case("pow_i32_const3", "Pow", [("a", a), ("e", np.array(3, np.int32))], [("y", a ** 3)], consts=("e",),
         specs=((FP, "ok"), (INTFP, "ok")))

    # Mod
    a = np.array([-7, 7, -7, 7, 5, -5, 0, 9], np.int32)
    b = np.array([3, -3, -3, 3, 5, 2, 3, -4], np.int32)
    case("mod_i32_fmod0", "Mod", [("a", a), ("b", b)], [("y", np.mod(a, b))], specs=INT_ONLY)
    case("mod_i32_fmod1", "Mod", [("a", a), ("b", b)], [("y", np.fmod(a, b))], attrs={"fmod": 1},
         specs=((FP, "ok"), (INTFP, "ok")))
    a8, b8 = a.astype(np.int8), b.astype(np.int8)
    case("mod_i8_fmod0", "Mod", [("a", a8), ("b", b8)], [("y", np.mod(a8, b8))], specs=INT_ONLY)
    a, b = f32(3, 4, lo=-10, hi=10), f32(3, 4, lo=1, hi=3) * np.array([1, -1, 1, -1], np.float32)
    case("mod_f32_fmod1", "Mod", [("a", a), ("b", b)], [("y", np.fmod(a.astype(np.float64), b).astype(np.float32))],
         attrs={"fmod": 1}, atol=1e-4)

    # variadic
    a, b, c = f32(2, 3, 4), f32(3, 1), f32(4)
    case("max_f32_3", "Max", [("a", a), ("b", b), ("c", c)], [("y", np.maximum(np.maximum(a, b), c))])
    case("min_f32_3", "Min", [("a", a), ("b", b), ("c", c)], [("y", np.minimum(np.minimum(a, b), c))])
    case("sum_f32_3", "Sum", [("a", a), ("b", b), ("c", c)], [("y", a + b + c)])
    case("mean_f32_2", "Mean", [("a", a), ("b", b)], [("y", ((a.astype(np.float64) + b) / 2).astype(np.float32))])
    # a lone IDENTITY moves data only: the partitioner keeps it on the CPU
    case("max_f32_1", "Max", [("a", a)], [("y", a)], specs=((FP, "no_compute"),))
    a, b = ints(np.int8, 2, 4, lo=-128, hi=128), ints(np.int8, 4, lo=-128, hi=128)
    case("min_i8", "Min", [("a", a), ("b", b)], [("y", np.minimum(a, b))], specs=INT_ONLY)
    a, b = ints(np.int32, 2, 4), ints(np.int32, 2, 4)
    case("max_i32", "Max", [("a", a), ("b", b)], [("y", np.maximum(a, b))], specs=INT_ONLY)

    # logical / bitwise
    p, q = rng.integers(0, 2, (2, 3, 4)).astype(bool), rng.integers(0, 2, (3, 4)).astype(bool)
    case("and_bool", "And", [("a", p), ("b", q)], [("y", p & q)])
    case("or_bool", "Or", [("a", p), ("b", q)], [("y", p | q)])
    case("xor_bool", "Xor", [("a", p), ("b", q)], [("y", p ^ q)])
    case("not_bool", "Not", [("x", p)], [("y", ~p)])
    a, b = ints(np.int32, 3, 4, lo=-1000, hi=1000), ints(np.int32, 3, 4, lo=-1000, hi=1000)
    case("bitwise_and_i32", "BitwiseAnd", [("a", a), ("b", b)], [("y", a & b)], opset=18, specs=INT_ONLY)
    case("bitwise_or_i32", "BitwiseOr", [("a", a), ("b", b)], [("y", a | b)], opset=18, specs=INT_ONLY)
    case("bitwise_xor_i32", "BitwiseXor", [("a", a), ("b", b)], [("y", a ^ b)], opset=18, specs=INT_ONLY)
    a8 = ints(np.int8, 3, 4, lo=-128, hi=128)
    case("bitwise_not_i8", "BitwiseNot", [("x", a8)], [("y", ~a8)], opset=18, specs=INT_ONLY)
    u, s = np.array([1, 2, 4, 8], np.uint8), np.array([1, 2, 1, 3], np.uint8)
    case("bitshift_u8_reject", "BitShift", [("a", u), ("b", s)], [("y", u << s)],
         attrs={"direction": "LEFT"}, specs=((INTFP, "unsupported_dtype"),))

    # comparisons
    a, b = f32(2, 3, 4), f32(4)
    b[0] = a[0, 0, 0]
    case("equal_f32", "Equal", [("a", a), ("b", b)], [("y", a == b)], opset=11)
    case("greater_f32", "Greater", [("a", a), ("b", b)], [("y", a > b)])
    case("greater_equal_f32", "GreaterOrEqual", [("a", a), ("b", b)], [("y", a >= b)], opset=12)
    case("less_f32", "Less", [("a", a), ("b", b)], [("y", a < b)])
    case("less_equal_f32", "LessOrEqual", [("a", a), ("b", b)], [("y", a <= b)], opset=12)
    a, b = ints(np.int32, 3, 4, lo=-3, hi=3), ints(np.int32, 3, 4, lo=-3, hi=3)
    case("equal_i32", "Equal", [("a", a), ("b", b)], [("y", a == b)], specs=INT_ONLY)
    case("less_equal_i32", "LessOrEqual", [("a", a), ("b", b)], [("y", a <= b)], opset=12, specs=INT_ONLY)
    a8, b8 = a.astype(np.int8), b.astype(np.int8)
    case("less_i8", "Less", [("a", a8), ("b", b8)], [("y", a8 < b8)], specs=INT_ONLY)
    case("equal_bool", "Equal", [("a", p), ("b", q)], [("y", p == q)])
    cnd, x, y = rng.integers(0, 2, (3, 1)).astype(bool), f32(1, 4), f32(3, 4)
    case("where_f32_bcast", "Where", [("c", cnd), ("x", x), ("y", y)], [("o", np.where(cnd, x, y))])
    x8, y8 = ints(np.int8, 3, 4), ints(np.int8, 4)
    case("where_i8", "Where", [("c", cnd), ("x", x8), ("y", y8)], [("o", np.where(cnd, x8, y8))], specs=INT_ONLY)

    # ------------------------------------------------------------- unary
    x = f32(3, 4)
    unary("abs_f32", "Abs", x, np.abs)
    x8 = np.array([-128, -5, 0, 5, 127], np.int8)
    case("abs_i8", "Abs", [("x", x8)], [("y", np.abs(x8))], specs=INT_ONLY)
    xi = ints(np.int32, 3, 4)
    case("neg_i32", "Neg", [("x", xi)], [("y", -xi)], specs=INT_ONLY)
    case("neg_i8", "Neg", [("x", x8)], [("y", -x8)], specs=INT_ONLY)
    unary("neg_f32", "Neg", x, np.negative)
    unary("ceil_f32", "Ceil", x, np.ceil)
    unary("floor_f32", "Floor", x, np.floor)
    xr = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 2.4, 2.6, -2.6, 0.0, -0.0, 1e8, 8388609.0,
                   -3.5, 4.5, 0.49999997], np.float32)
    unary("round_f32", "Round", xr, np.round, opset=11)
    with np.errstate(over="ignore"):  # 1e8 becomes inf in fp16, which rounds to inf
        unary("round_f16", "Round", xr[:12].astype(np.float16), np.round, opset=11, rtol=0)
    xs = np.array([-2.5, 0.0, 3.0, -0.1, 7.0, -1e-8], np.float32)
    unary("sign_f32", "Sign", xs, np.sign)
    xsi = np.array([-5, 0, 3, -1, 100], np.int32)
    case("sign_i32", "Sign", [("x", xsi)], [("y", np.sign(xsi))], specs=INT_ONLY)
    xp = f32(3, 4, lo=0.0, hi=10.0)
    xp[0, 0] = 0.0
    unary("sqrt_f32", "Sqrt", xp, np.sqrt)
    unary("reciprocal_f32", "Reciprocal", f32(3, 4, lo=0.5, hi=4), np.reciprocal)
    unary("exp_f32", "Exp", x, np.exp)
    unary("log_f32", "Log", f32(3, 4, lo=0.01, hi=100), np.log)
    unary("sin_f32", "Sin", f32(3, 4, lo=-7, hi=7), np.sin)
    unary("cos_f32", "Cos", f32(3, 4, lo=-7, hi=7), np.cos)
    unary("tan_f32", "Tan", f32(3, 4, lo=-1.4, hi=1.4), np.tan)
    xa = np.concatenate([f32(20, lo=-1, hi=1), np.array([-1, 1, 0, 0.999, -0.999], np.float32)])
    unary("asin_f32", "Asin", xa, np.arcsin)
    unary("acos_f32", "Acos", xa, np.arccos)
    xt = np.concatenate([f32(20, lo=-50, hi=50), np.array([0, 1, -1, 1e-3, 1e6, -1e6], np.float32)])
    unary("atan_f32", "Atan", xt, np.arctan)
    unary("sinh_f32", "Sinh", f32(3, 4, lo=-5, hi=5), np.sinh)
    unary("cosh_f32", "Cosh", f32(3, 4, lo=-5, hi=5), np.cosh)
    unary("asinh_f32", "Asinh", f32(3, 4, lo=-20, hi=20), np.arcsinh)
    unary("acosh_f32", "Acosh", f32(3, 4, lo=1, hi=20), np.arccosh)
    unary("atanh_f32", "Atanh", f32(3, 4, lo=-0.95, hi=0.95), np.arctanh)
    from math import erf
    unary("erf_f32", "Erf", x, np.vectorize(erf))
    unary("sqrt_f16", "Sqrt", xp.astype(np.float16), np.sqrt, rtol=1e-2)

    # -------------------------------------------------------- activation
    x = f32(2, 3, 4)
    unary("relu_f32", "Relu", x, lambda v: np.maximum(v, 0))
    xi = ints(np.int32, 3, 4)
    case("relu_i32", "Relu", [("x", xi)], [("y", np.maximum(xi, 0))], opset=14, specs=INT_ONLY)
    x8 = ints(np.int8, 3, 4, lo=-128, hi=128)
    case("relu_i8", "Relu", [("x", x8)], [("y", np.maximum(x8, 0))], opset=14, specs=INT_ONLY)
    unary("clip6_attr", "Clip", x, lambda v: np.clip(v, -1.0, 0.5), attrs={"min": -1.0, "max": 0.5}, opset=6)
    unary("clip6_default", "Clip", x, lambda v: v, opset=6)
    case("clip11_const", "Clip", [("x", x), ("lo", np.array(-0.5, np.float32)), ("hi", np.array(1.0, np.float32))],
         [("y", np.clip(x, -0.5, 1.0))], opset=11, consts=("lo", "hi"))
    case("clip11_runtime", "Clip", [("x", x), ("lo", np.array(-0.5, np.float32)), ("hi", np.array(1.0, np.float32))],
         [("y", np.clip(x, -0.5, 1.0))], opset=11)
    case("clip11_max_only", "Clip", [("x", x), ("", None), ("hi", np.array(1.0, np.float32))],
         [("y", np.minimum(x, 1.0))], opset=13, consts=("hi",))
    case("clip11_swapped", "Clip", [("x", x), ("lo", np.array(1.0, np.float32)), ("hi", np.array(-1.0, np.float32))],
         [("y", np.minimum(np.maximum(x, 1.0), -1.0))], opset=13, consts=("lo", "hi"))
    case("clip_i8_min", "Clip", [("x", x8), ("lo", np.array(-10, np.int8))], [("y", np.maximum(x8, -10).astype(np.int8))],
         opset=13, consts=("lo",), specs=INT_ONLY)
    case("clip_i32", "Clip", [("x", xi), ("lo", np.array(-10, np.int32)), ("hi", np.array(20, np.int32))],
         [("y", np.clip(xi, -10, 20))], opset=13, consts=("lo", "hi"), specs=INT_ONLY)
    unary("leakyrelu_default", "LeakyRelu", x, lambda v: np.where(v < 0, 0.01 * v, v))
    unary("leakyrelu_a2", "LeakyRelu", x, lambda v: np.where(v < 0, 2.0 * v, v), attrs={"alpha": 2.0})
    sl = f32(3, 1, lo=0, hi=1)
    case("prelu_bcast", "PRelu", [("x", x), ("s", sl)], [("y", np.where(x < 0, x * sl, x))])
    sl4 = f32(4, lo=0, hi=1)
    case("prelu_const_slope", "PRelu", [("x", x), ("s", sl4)], [("y", np.where(x < 0, x * sl4, x))], consts=("s",))
    unary("sigmoid_f32", "Sigmoid", x, lambda v: 1 / (1 + np.exp(-v)))
    unary("tanh_f32", "Tanh", x, np.tanh)
    unary("hardsigmoid_f32", "HardSigmoid", x, lambda v: np.clip(0.5 * v + 0.6, 0, 1),
          attrs={"alpha": 0.5, "beta": 0.6})
    unary("hardswish_f32", "HardSwish", f32(3, 4, lo=-5, hi=5), lambda v: v * np.clip(v / 6 + 0.5, 0, 1), opset=14)
    from math import erf as _erf
    verf = np.vectorize(_erf)
    unary("gelu_none", "Gelu", x, lambda v: 0.5 * v * (1 + verf(v / np.sqrt(2))), opset=20)
    unary("gelu_tanh", "Gelu", x,
          lambda v: 0.5 * v * (1 + np.tanh(np.sqrt(2 / np.pi) * (v + 0.044715 * v ** 3))),
          attrs={"approximate": "tanh"}, opset=20)
    unary("elu_f32", "Elu", x, lambda v: np.where(v < 0, 0.7 * (np.exp(v) - 1), v), attrs={"alpha": 0.7})
    unary("celu_f32", "Celu", x, lambda v: np.maximum(0, v) + np.minimum(0, 2.0 * (np.exp(v / 2.0) - 1)),
          attrs={"alpha": 2.0}, opset=12)
    al, ga = 1.6732632423543772, 1.0507009873554805
    unary("selu_default", "Selu", x, lambda v: ga * np.where(v > 0, v, al * np.exp(v) - al))
    xl = np.concatenate([f32(10, lo=-5, hi=5), np.array([-100, 100, 0, 30], np.float32)])
    unary("softplus_f32", "Softplus", xl, lambda v: np.logaddexp(0, v))
    unary("softsign_f32", "Softsign", x, lambda v: v / (1 + np.abs(v)))
    unary("thresholdedrelu_f32", "ThresholdedRelu", x, lambda v: np.where(v > 0.5, v, 0),
          attrs={"alpha": 0.5}, opset=10)
    unary("shrink_soft", "Shrink", x, lambda v: np.where(v < -1.0, v + 0.5, np.where(v > 1.0, v - 0.5, 0)),
          attrs={"lambd": 1.0, "bias": 0.5}, opset=9)
    unary("shrink_hard", "Shrink", x, lambda v: np.where(v < -0.5, v, np.where(v > 0.5, v, 0)), opset=9)
    unary("mish_f32", "Mish", xl, lambda v: v * np.tanh(np.logaddexp(0, v)), opset=18)

    # -------------------------------------------------------------- cast
    xc = np.array([-2.7, -2.5, -0.5, -0.0, 0.4, 1.5, 2.5, 2.9, 100.9, -100.9], np.float32)
    T = TensorProto
    case("cast_f32_i32", "Cast", [("x", xc)], [("y", np.trunc(xc).astype(np.int32))], attrs={"to": T.INT32},
         specs=((FP, "ok"), (INTFP, "ok")))
    case("cast_f32_i8", "Cast", [("x", xc)], [("y", np.trunc(xc).astype(np.int8))], attrs={"to": T.INT8})
    xb = np.array([0.0, -0.0, 1.0, -3.5, 1e-30, np.nan], np.float32)
    case("cast_f32_bool", "Cast", [("x", xb)], [("y", xb != 0)], attrs={"to": T.BOOL})
    pb = rng.integers(0, 2, (3, 4)).astype(bool)
    case("cast_bool_f32", "Cast", [("x", pb)], [("y", pb.astype(np.float32))], attrs={"to": T.FLOAT})
    case("cast_bool_i32", "Cast", [("x", pb)], [("y", pb.astype(np.int32))], attrs={"to": T.INT32}, specs=INT_ONLY)
    xi = np.array([-300, -129, -1, 0, 1, 127, 128, 255, 70000], np.int32)
    case("cast_i32_i8_wrap", "Cast", [("x", xi)], [("y", xi.astype(np.int8))], attrs={"to": T.INT8}, specs=INT_ONLY)
    case("cast_i32_bool", "Cast", [("x", xi)], [("y", xi != 0)], attrs={"to": T.BOOL}, specs=INT_ONLY)
    case("cast_i32_f32", "Cast", [("x", xi)], [("y", xi.astype(np.float32))], attrs={"to": T.FLOAT})
    x8 = np.array([-128, -1, 0, 127], np.int8)
    case("cast_i8_i32", "Cast", [("x", x8)], [("y", x8.astype(np.int32))], attrs={"to": T.INT32}, specs=INT_ONLY)
    xf = f32(3, 4, lo=-100, hi=100)
    case("cast_f32_f16", "Cast", [("x", xf)], [("y", xf.astype(np.float16))], attrs={"to": T.FLOAT16})
    xh = xf.astype(np.float16)
    case("cast_f16_f32", "Cast", [("x", xh)], [("y", xh.astype(np.float32))], attrs={"to": T.FLOAT}, rtol=0, atol=0)
    case("cast_f32_bf16", "Cast", [("x", xf)], [("y", (BF16, bf16_round(xf)))], attrs={"to": T.BFLOAT16},
         specs=((BF, "ok"),), rtol=0, atol=0)
    case("cast_f32_f32", "Cast", [("x", xf)], [("y", xf)], attrs={"to": T.FLOAT}, specs=((FP, "no_compute"),))
    case("castlike_f32_i16", "CastLike", [("x", xc), ("like", np.array([0], np.int16))],
         [("y", np.trunc(xc).astype(np.int16))], opset=15, specs=INT_ONLY)
    case("cast_f64_reject", "Cast", [("x", xc.astype(np.float64))], [("y", xc)], attrs={"to": T.FLOAT},
         specs=((FP, "unsupported_dtype"),))
    case("cast_to_u8_reject", "Cast", [("x", xc)], [("y", np.abs(xc).astype(np.uint8))], attrs={"to": T.UINT8},
         specs=((FP, "unsupported_dtype"),))

    # ------------------------------------- fp16 through the longer chains
    # every step rounds to fp16 (ulp 2^-10 relative), hence the looser bounds
    h = f32(3, 4).astype(np.float16)
    for nm, op, fn, kw in (("atan", "Atan", np.arctan, {}), ("asin", "Asin", np.arcsin, {}),
                           ("softplus", "Softplus", lambda v: np.logaddexp(0, v), {}),
                           ("gelu", "Gelu", lambda v: 0.5 * v * (1 + verf(v / np.sqrt(2))), {"opset": 20}),
                           ("mish", "Mish", lambda v: v * np.tanh(np.logaddexp(0, v)), {"opset": 18}),
                           ("hardswish", "HardSwish", lambda v: v * np.clip(v / 6 + 0.5, 0, 1), {"opset": 14})):
        xin = (h / np.float16(3)) if op == "Asin" else h
        unary(nm + "_f16", op, xin, fn, rtol=1e-2, atol=2e-3, **kw)
    hp, hs = f32(2, 3, 4).astype(np.float16), f32(3, 1, lo=0, hi=1).astype(np.float16)
    case("prelu_f16", "PRelu", [("x", hp), ("s", hs)],
         [("y", np.where(hp < 0, hp.astype(np.float32) * hs, hp).astype(np.float16))], rtol=1e-2)
    xi16 = ints(np.int32, 2, 3, 4, lo=-50, hi=50)
    si = ints(np.int32, 3, 1, lo=0, hi=4)
    case("prelu_i32", "PRelu", [("x", xi16), ("s", si)], [("y", np.where(xi16 < 0, xi16 * si, xi16))],
         opset=16, specs=INT_ONLY)

    # -------------------------------------------- int64 (TOSA 1.1 + EXT-INT64)
    a, b = ints(np.int64, 3, 4, lo=-10**12, hi=10**12), ints(np.int64, 4, lo=-10**12, hi=10**12)
    case("add_i64", "Add", [("a", a), ("b", b)], [("y", a + b)], specs=((I64, "ok"), (INTFP, "int64_not_enabled")))
    a, b = np.array([1, 2, 3, -2], np.int64), np.array([4, 5, 6, 3], np.int64)
    case("pow_i64_i64", "Pow", [("a", a), ("b", b)], [("y", np.power(a, b))], specs=((I64, "ok"),))
    case("cast_f32_i64", "Cast", [("x", xc)], [("y", np.trunc(xc).astype(np.int64))], attrs={"to": T.INT64},
         specs=((I64, "ok"),))
    a, b = np.array([-7, 7, -7, 7, 0], np.int64), np.array([3, -3, -3, 3, 5], np.int64)
    case("mod_i64_fmod0", "Mod", [("a", a), ("b", b)], [("y", np.mod(a, b))], specs=((I64, "ok"),))

    # ------------------------------------------------- fp8 (EXT-FP8E4M3)
    x8 = np.array([0.3, -17.2, 448.0, 1000.0, -1000.0, np.inf, -np.inf, np.nan, 0.0, 2.0 ** -9], np.float32)
    case("cast_f32_fp8_sat", "Cast", [("x", x8)], [("y", (F8E4M3, fp8e4m3_round(x8, True)))],
         attrs={"to": 17}, opset=19, specs=((F8, "ok"),), rtol=0, atol=0)
    case("cast_f32_fp8_nosat", "Cast", [("x", x8)], [("y", (F8E4M3, fp8e4m3_round(x8, False)))],
         attrs={"to": 17, "saturate": 0}, opset=19, specs=((F8, "ok"),), rtol=0, atol=0)
    b8 = fp8e4m3_round(x8, True)
    case("cast_fp8_f32", "Cast", [("x", (F8E4M3, b8))], [("y", fp8e4m3_table()[b8].astype(np.float32))],
         attrs={"to": T.FLOAT}, opset=19, specs=((F8, "ok"),), rtol=0, atol=0)

    with open(os.path.join(HERE, "cases.txt"), "w") as f:
        f.write("# generated by gen.py: case spec expect rtol atol\n")
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
    sys.exit(0)
