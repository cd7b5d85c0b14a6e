#!/usr/bin/python3
"""Generates the data-movement / gather / reduction / misc lowering test
cases used by tests/test_lower_dm.c.

Each case is a folder <name>/ with model.onnx, one <input>.pb per runtime
graph input and one expected_<output>.pb per graph output (TensorProto
files). References are computed here with numpy, independently of ONNX's
reference implementation. cases.txt lists "<name> <need>" where need says
under which specs the model must be fully delegated: "fp" = TOSA-1.0+FP and
TOSA-1.0+INT+FP, "int" = only TOSA-1.0+INT+FP (integer data movement is a
PRO-INT row).

Run: /usr/bin/python3 gen.py   (Debian's python3 with numpy + onnx)
"""
import os
import shutil

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
RNG = np.random.default_rng(1234)
INT_MAX = 2**63 - 1
CASES = []

NP2ONNX = {
    np.dtype(np.float32): TensorProto.FLOAT,
    np.dtype(np.float16): TensorProto.FLOAT16,
    np.dtype(np.int32): TensorProto.INT32,
    np.dtype(np.int64): TensorProto.INT64,
    np.dtype(np.int8): TensorProto.INT8,
    np.dtype(np.bool_): TensorProto.BOOL,
}


def rnd(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def case(name, need, opset, nodes, inputs, outputs, inits=()):
    """inputs: [(name, array)] runtime inputs; inits: [(name, array)]
    initializers; outputs: [(name, expected array)]."""
    CASES.append((name, need, opset, nodes, inputs, outputs, inits))


def write():
    lines = []
    for name, need, opset, nodes, inputs, outputs, inits in CASES:
        d = os.path.join(HERE, name)
        if os.path.isdir(d):
            shutil.rmtree(d)
        os.makedirs(d)
        g = helper.make_graph(
            nodes, name,
            [helper.make_tensor_value_info(n, NP2ONNX[a.dtype], a.shape) for n, a in inputs],
            [helper.make_tensor_value_info(n, NP2ONNX[a.dtype], a.shape) for n, a in outputs],
            [numpy_helper.from_array(a, n) for n, a in inits])
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)],
                              producer_name="ctosa-gen")
        m.ir_version = 8
        if opset <= 17:
            onnx.checker.check_model(m)
        onnx.save(m, os.path.join(d, "model.onnx"))
        for n, a in inputs:
            with open(os.path.join(d, n + ".pb"), "wb") as f:
                f.write(numpy_helper.from_array(a, n).SerializeToString())
        for n, a in outputs:
            with open(os.path.join(d, "expected_" + n + ".pb"), "wb") as f:
                f.write(numpy_helper.from_array(a, n).SerializeToString())
        lines.append("%s %s\n" % (name, need))
    with open(os.path.join(HERE, "cases.txt"), "w") as f:
        f.writelines(lines)


def N(op, ins, outs, **kw):
    return helper.make_node(op, ins, outs, **kw)


def const_node(name, arr):
    return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(arr, name))


# ------------------------------------------------------------------ layout
def layout():
    a, b, c = rnd(2, 3, 1), rnd(2, 3, 4), rnd(2, 3, 2)
    case("concat_neg_axis", "fp", 13, [N("Concat", ["a", "b", "c"], ["y"], axis=-1)],
         [("a", a), ("b", b), ("c", c)], [("y", np.concatenate([a, b, c], -1))])
    a, b = RNG.integers(-50, 50, (2, 3)).astype(np.int32), RNG.integers(-5, 5, (4, 3)).astype(np.int32)
    case("concat_int32", "int", 11, [N("Concat", ["a", "b"], ["y"], axis=0)],
         [("a", a), ("b", b)], [("y", np.concatenate([a, b], 0))])

    x = rnd(2, 6, 3)
    case("split_attr", "fp", 11, [N("Split", ["x"], ["p", "q", "r"], axis=1, split=[1, 2, 3])],
         [("x", x)], [("p", x[:, :1]), ("q", x[:, 1:3]), ("r", x[:, 3:])])
    case("split_input", "fp", 13,
         [N("Split", ["x", "s"], ["p", "q"], axis=-1)], [("x", x)],
         [("p", x[..., :1]), ("q", x[..., 1:])], inits=[("s", np.array([1, 2], np.int64))])
    case("split_equal", "fp", 13, [N("Split", ["x"], ["p", "q", "r"], axis=1)],
         [("x", x)], [("p", x[:, :2]), ("q", x[:, 2:4]), ("r", x[:, 4:])])
    x7 = rnd(7, 2)
    case("split_num_outputs", "fp", 18,
         [N("Split", ["x"], ["p", "q", "r"], axis=0, num_outputs=3)], [("x", x7)],
         [("p", x7[:3]), ("q", x7[3:6]), ("r", x7[6:])])

    x = rnd(4, 10, 7, 5)
    case("slice_attr", "fp", 9,
         [N("Slice", ["x"], ["y"], starts=[1, -3, 0], ends=[INT_MAX, -1, 100], axes=[1, 2, -1])],
         [("x", x)], [("y", x[:, 1:, -3:-1, 0:])])
    case("slice_steps", "fp", 13,
         [N("Slice", ["x", "st", "en", "ax", "sp"], ["y"])], [("x", x)],
         [("y", x[:, 1::3, -1:-100:-2, 0:5:2])],
         inits=[("st", np.array([1, -1, 0], np.int64)),
                ("en", np.array([INT_MAX, -100, 5], np.int64)),
                ("ax", np.array([1, 2, 3], np.int64)),
                ("sp", np.array([3, -2, 2], np.int64))])
    case("slice_reverse", "fp", 13,
         [N("Slice", ["x", "st", "en", "ax", "sp"], ["y"])], [("x", x)],
         [("y", x[::-1, :, 5:1:-3])],
         inits=[("st", np.array([-1, 5], np.int64)), ("en", np.array([-INT_MAX, 1], np.int64)),
                ("ax", np.array([0, -2], np.int64)), ("sp", np.array([-1, -3], np.int64))])
    case("slice_default_axes", "fp", 13, [N("Slice", ["x", "st", "en"], ["y"])], [("x", x)],
         [("y", x[1:3, -20:4, 2:3])],
         inits=[("st", np.array([1, -20, 2], np.int64)), ("en", np.array([3, 4, 3], np.int64))])
    xi = RNG.integers(-100, 100, (5, 6)).astype(np.int32)
    case("slice_int32", "int", 13, [N("Slice", ["x", "st", "en", "ax", "sp"], ["y"])],
         [("x", xi)], [("y", xi[4:0:-2, 1::2])],
         inits=[("st", np.array([4, 1], np.int64)), ("en", np.array([0, 6], np.int64)),
                ("ax", np.array([0, 1], np.int64)), ("sp", np.array([-2, 2], np.int64))])

    x = rnd(1, 3, 4, 5)
    ref = np.pad(x, [(0, 0), (1, 0), (2, 1), (0, 0)], constant_values=1.5)[:, :, :, 1:4]
    case("pad_attr_negative", "fp", 10,
         [N("Pad", ["x"], ["y"], pads=[0, 1, 2, -1, 0, 0, 1, -1], value=1.5)], [("x", x)],
         [("y", ref)])
    case("pad_constant_input", "fp", 13, [N("Pad", ["x", "p", "v"], ["y"], mode="constant")],
         [("x", x)], [("y", np.pad(x, [(0, 0), (0, 0), (1, 2), (3, 0)], constant_values=-2.0))],
         inits=[("p", np.array([0, 0, 1, 3, 0, 0, 2, 0], np.int64)),
                ("v", np.array(-2.0, np.float32))])
    pads = [(0, 0), (1, 2), (3, 1), (2, 4)]
    flat = np.array([p[0] for p in pads] + [p[1] for p in pads], np.int64)
    case("pad_reflect", "fp", 13, [N("Pad", ["x", "p"], ["y"], mode="reflect")], [("x", x)],
         [("y", np.pad(x, pads, mode="reflect"))], inits=[("p", flat)])
    case("pad_edge", "fp", 13, [N("Pad", ["x", "p"], ["y"], mode="edge")], [("x", x)],
         [("y", np.pad(x, pads, mode="edge"))], inits=[("p", flat)])
    case("pad_wrap", "fp", 19, [N("Pad", ["x", "p"], ["y"], mode="wrap")], [("x", x)],
         [("y", np.pad(x, pads, mode="wrap"))], inits=[("p", flat)])
    case("pad_axes", "fp", 18, [N("Pad", ["x", "p", "", "a"], ["y"], mode="edge")], [("x", x)],
         [("y", np.pad(x, [(0, 0), (2, 0), (0, 0), (1, 3)], mode="edge"))],
         inits=[("p", np.array([1, 2, 3, 0], np.int64)), ("a", np.array([-1, 1], np.int64))])

    x = rnd(2, 1, 3)
    case("tile", "fp", 13, [N("Tile", ["x", "r"], ["y"])], [("x", x)],
         [("y", np.tile(x, (2, 3, 1)))], inits=[("r", np.array([2, 3, 1], np.int64))])
    x = rnd(3, 1)
    case("expand", "fp", 13, [N("Expand", ["x", "s"], ["y"])], [("x", x)],
         [("y", x * np.ones((2, 1, 4), np.float32))], inits=[("s", np.array([2, 1, 4], np.int64))])
    xb = RNG.integers(0, 2, (1, 3)).astype(np.bool_)
    case("expand_bool", "fp", 13, [N("Expand", ["x", "s"], ["y"])], [("x", xb)],
         [("y", np.broadcast_to(xb, (2, 3)).copy())], inits=[("s", np.array([2, 1], np.int64))])


# ------------------------------------------------------------------- misc
def misc():
    x = rnd(2, 4, 5)
    case("trilu_upper_k", "fp", 14, [N("Trilu", ["x", "k"], ["y"])], [("x", x)],
         [("y", np.triu(x, 1))], inits=[("k", np.array(1, np.int64))])
    case("trilu_lower_neg", "fp", 14, [N("Trilu", ["x", "k"], ["y"], upper=0)], [("x", x)],
         [("y", np.tril(x, -1))], inits=[("k", np.array(-1, np.int64))])
    case("trilu_lower", "fp", 14, [N("Trilu", ["x"], ["y"], upper=0)], [("x", x)],
         [("y", np.tril(x))])

    x, y = rnd(3, 4), rnd(3, 4)
    case("eyelike_add", "fp", 13,
         [N("EyeLike", ["x"], ["e"], k=1, dtype=TensorProto.FLOAT), N("Add", ["e", "y"], ["z"])],
         [("x", x), ("y", y)], [("z", np.eye(3, 4, 1, dtype=np.float32) + y)])
    y5 = rnd(5)
    case("range_add", "fp", 13,
         [N("Range", ["s", "l", "d"], ["r"]), N("Add", ["r", "y"], ["z"])], [("y", y5)],
         [("z", np.arange(1, 7.5, 1.5, dtype=np.float32) + y5)],
         inits=[("s", np.array(1, np.float32)), ("l", np.array(7.5, np.float32)),
                ("d", np.array(1.5, np.float32))])

    x = rnd(3, 5, 4)

    def cs(a, axis, exclusive, reverse):
        if reverse:
            a = np.flip(a, axis)
        r = np.cumsum(a, axis)
        if exclusive:
            r = r - a
        if reverse:
            r = np.flip(r, axis)
        return r.astype(a.dtype)

    nodes, outs = [], []
    for i, (ax, ex, rv) in enumerate([(1, 0, 0), (1, 1, 0), (-1, 0, 1), (0, 1, 1)]):
        nodes.append(N("CumSum", ["x", "a%d" % i], ["y%d" % i], exclusive=ex, reverse=rv))
        outs.append(("y%d" % i, cs(x, ax, ex, rv)))
    case("cumsum_float", "fp", 14, nodes, [("x", x)], outs,
         inits=[("a%d" % i, np.array(a, np.int64)) for i, a in enumerate([1, 1, -1, 0])])
    xl = rnd(2, 600)
    case("cumsum_long", "fp", 14, [N("CumSum", ["x", "a"], ["y"], reverse=1)], [("x", xl)],
         [("y", cs(xl, 1, 0, 1))], inits=[("a", np.array(1, np.int32))])
    xi = RNG.integers(-100, 100, (3, 7)).astype(np.int32)
    case("cumsum_int32", "int", 14, [N("CumSum", ["x", "a"], ["y"], exclusive=1)], [("x", xi)],
         [("y", cs(xi, 1, 1, 0))], inits=[("a", np.array(1, np.int64))])


# ----------------------------------------------------------------- gather
def gather():
    x = rnd(3, 4, 5)
    idx = np.array([[0, -1], [2, 1]], np.int64)
    case("gather_const", "fp", 13, [N("Gather", ["x", "i"], ["y"], axis=1)], [("x", x)],
         [("y", np.take(x, idx, axis=1))], inits=[("i", idx)])
    case("gather_scalar_idx", "fp", 13, [N("Gather", ["x", "i"], ["y"], axis=-1)], [("x", x)],
         [("y", np.take(x, 3, axis=-1))], inits=[("i", np.array(3, np.int64))])
    d = rnd(5, 3)
    ri = np.array([4, -1, 0, -5], np.int32)
    case("gather_runtime", "int", 13, [N("Gather", ["d", "i"], ["y"], axis=0)],
         [("d", d), ("i", ri)], [("y", np.take(d, ri, axis=0))])

    d = rnd(3, 4)
    gi = np.array([[0, -1, 2], [3, 1, 0], [-4, 2, 2]], np.int64)
    case("gather_elements_const", "fp", 13, [N("GatherElements", ["d", "i"], ["y"], axis=-1)],
         [("d", d)], [("y", np.take_along_axis(d, np.where(gi < 0, gi + 4, gi), -1))],
         inits=[("i", gi)])
    gi0 = np.array([[1, 0, -1, 2], [0, 2, 1, -3]], np.int32)
    case("gather_elements_runtime", "int", 13,
         [N("GatherElements", ["d", "i"], ["y"], axis=0)], [("d", d), ("i", gi0)],
         [("y", np.take_along_axis(d, np.where(gi0 < 0, gi0 + 3, gi0), 0))])

    def scatter_el(data, ind, upd, axis):
        out = data.copy()
        ind = np.where(ind < 0, ind + data.shape[axis], ind)
        for p in np.ndindex(*ind.shape):
            q = list(p)
            q[axis] = ind[p]
            out[tuple(q)] = upd[p]
        return out

    d, u = rnd(3, 5), rnd(3, 2)
    si = np.array([[1, -1], [0, 2], [4, 3]], np.int64)
    case("scatter_elements_const", "fp", 13,
         [N("ScatterElements", ["d", "i", "u"], ["y"], axis=1)], [("d", d), ("u", u)],
         [("y", scatter_el(d, si, u, 1))], inits=[("i", si)])
    si32 = np.array([[2, 0], [-2, 1]], np.int32)
    u2 = rnd(2, 2)
    case("scatter_elements_runtime", "int", 13,
         [N("ScatterElements", ["d", "i", "u"], ["y"], axis=0)],
         [("d", d), ("i", si32), ("u", u2)], [("y", scatter_el(d, si32, u2, 0))])

    def scatter_nd(data, ind, upd):
        out = data.copy()
        for p in np.ndindex(*ind.shape[:-1]):
            out[tuple(ind[p])] = upd[p]
        return out

    d = rnd(4, 3, 2)
    ni = np.array([[1], [3]], np.int64)
    u = rnd(2, 3, 2)
    case("scatternd_rows", "fp", 13, [N("ScatterND", ["d", "i", "u"], ["y"])],
         [("d", d), ("u", u)], [("y", scatter_nd(d, ni, u))], inits=[("i", ni)])
    ni2 = np.array([[[0, 1], [2, -1]], [[3, 0], [1, 1]]], np.int64)
    u2 = rnd(2, 2, 2)
    ni2p = np.where(ni2 < 0, ni2 + np.array([4, 3]), ni2)
    case("scatternd_pairs", "fp", 13, [N("ScatterND", ["d", "i", "u"], ["y"])],
         [("d", d), ("u", u2)], [("y", scatter_nd(d, ni2p, u2))], inits=[("i", ni2)])
    # reduction add: duplicates accumulate
    def scatter_nd_add(data, ind, upd):
        out = data.copy()
        for p in np.ndindex(*ind.shape[:-1]):
            out[tuple(ind[p])] += upd[p]
        return out

    nia = np.array([[1], [3], [1]], np.int64)
    ua = rnd(3, 3, 2)
    case("scatternd_add", "fp", 16, [N("ScatterND", ["d", "i", "u"], ["y"], reduction="add")],
         [("d", d), ("u", ua)], [("y", scatter_nd_add(d, nia, ua))], inits=[("i", nia)])
    d5, u5 = rnd(3, 5), rnd(3, 2)
    sia = np.array([[1, 1], [0, -1], [4, 4]], np.int64)
    ref = d5.copy()
    for p in np.ndindex(*sia.shape):
        ref[p[0], sia[p] % 5] += u5[p]
    case("scatter_elements_add", "fp", 16,
         [N("ScatterElements", ["d", "i", "u"], ["y"], axis=1, reduction="add")],
         [("d", d5), ("u", u5)], [("y", ref)], inits=[("i", sia)])
    ref = d5.copy()
    for p in np.ndindex(*sia.shape):
        ref[p[0], sia[p] % 5] *= u5[p]
    case("scatter_elements_mul", "fp", 16,
         [N("ScatterElements", ["d", "i", "u"], ["y"], axis=1, reduction="mul")],
         [("d", d5), ("u", u5)], [("y", ref)], inits=[("i", sia)])
    ref = d.copy()
    for p in np.ndindex(*nia.shape[:-1]):
        ref[tuple(nia[p])] = np.maximum(ref[tuple(nia[p])], ua[p])
    case("scatternd_max", "fp", 18, [N("ScatterND", ["d", "i", "u"], ["y"], reduction="max")],
         [("d", d), ("u", ua)], [("y", ref)], inits=[("i", nia)])
    di = RNG.integers(-50, 50, (4, 3)).astype(np.int32)
    ui = RNG.integers(-50, 50, (3, 3)).astype(np.int32)
    ref = di.copy()
    for p in range(3):
        ref[nia[p, 0]] += ui[p]
    case("scatternd_add_int32", "int", 16,
         [N("ScatterND", ["d", "i", "u"], ["y"], reduction="add")],
         [("d", di), ("u", ui)], [("y", ref)], inits=[("i", nia)])
    ni3 = np.array([[2, 1], [0, 0], [3, 2]], np.int32)
    u3 = rnd(3, 2)
    # ScatterND takes int64 indices: an int32 input Cast up (carried as i32)
    case("scatternd_runtime", "int", 13,
         [N("Cast", ["i"], ["i64"], to=TensorProto.INT64), N("ScatterND", ["d", "i64", "u"], ["y"])],
         [("d", d), ("i", ni3), ("u", u3)], [("y", scatter_nd(d, ni3, u3))])


# ----------------------------------------------------------------- reduce
def reduce():
    x = rnd(3, 4, 5)
    xp = np.abs(x) + 0.1
    ops = {
        "ReduceSum": lambda a, ax, k: np.sum(a, ax, keepdims=k),
        "ReduceMean": lambda a, ax, k: np.mean(a, ax, keepdims=k),
        "ReduceMax": lambda a, ax, k: np.max(a, ax, keepdims=k),
        "ReduceMin": lambda a, ax, k: np.min(a, ax, keepdims=k),
        "ReduceProd": lambda a, ax, k: np.prod(a, ax, keepdims=k),
        "ReduceL1": lambda a, ax, k: np.sum(np.abs(a), ax, keepdims=k),
        "ReduceL2": lambda a, ax, k: np.sqrt(np.sum(a * a, ax, keepdims=k)),
        "ReduceLogSum": lambda a, ax, k: np.log(np.sum(a, ax, keepdims=k)),
        "ReduceLogSumExp": lambda a, ax, k: np.log(np.sum(np.exp(a.astype(np.float64)), ax,
                                                          keepdims=k)),
        "ReduceSumSquare": lambda a, ax, k: np.sum(a * a, ax, keepdims=k),
    }
    for op, f in ops.items():
        src = xp if op in ("ReduceLogSum",) else x
        name = "r_" + op[6:].lower()
        # opset 13 attribute form (ReduceSum: axes input), keepdims 0 on two axes
        if op == "ReduceSum":
            case(name + "_13", "fp", 13, [N(op, ["x", "a"], ["y"], keepdims=0)], [("x", src)],
                 [("y", f(src, (0, 2), False).astype(np.float32))],
                 inits=[("a", np.array([0, -1], np.int64))])
        else:
            case(name + "_13", "fp", 13, [N(op, ["x"], ["y"], axes=[0, -1], keepdims=0)],
                 [("x", src)], [("y", f(src, (0, 2), False).astype(np.float32))])
        # opset 18 axes input, keepdims 1
        case(name + "_18", "fp", 18, [N(op, ["x", "a"], ["y"])], [("x", src)],
             [("y", f(src, (1,), True).astype(np.float32))], inits=[("a", np.array([-2], np.int64))])
        # default: all axes
        case(name + "_all", "fp", 11, [N(op, ["x"], ["y"])], [("x", src)],
             [("y", f(src, None, True).astype(np.float32))])
    # a lone no-op reduction is an IDENTITY: a partition without compute
    case("r_sum_noop", "reject:no_compute:", 13,
         [N("ReduceSum", ["x", "a"], ["y"], noop_with_empty_axes=1)], [("x", x)], [("y", x)],
         inits=[("a", np.zeros((0,), np.int64))])
    xl = x * 40.0
    case("r_logsumexp_big", "fp", 13, [N("ReduceLogSumExp", ["x"], ["y"], axes=[2])],
         [("x", xl)],
         [("y", np.log(np.sum(np.exp(xl.astype(np.float64)), 2, keepdims=True)).astype(np.float32))])
    xb = RNG.integers(0, 2, (3, 4, 2)).astype(np.bool_)
    case("r_max_bool", "fp", 20, [N("ReduceMax", ["x", "a"], ["y"], keepdims=0)], [("x", xb)],
         [("y", np.any(xb, (0, 2)))], inits=[("a", np.array([0, 2], np.int64))])
    case("r_min_bool", "fp", 20, [N("ReduceMin", ["x"], ["y"])], [("x", xb)],
         [("y", np.all(xb, None, keepdims=True))])
    xi = RNG.integers(-100, 100, (3, 4)).astype(np.int32)
    case("r_sum_int32", "int", 13, [N("ReduceSum", ["x", "a"], ["y"])], [("x", xi)],
         [("y", np.sum(xi, 1, keepdims=True).astype(np.int32))],
         inits=[("a", np.array([1], np.int64))])
    case("r_max_int32", "int", 13, [N("ReduceMax", ["x"], ["y"], axes=[0], keepdims=0)],
         [("x", xi)], [("y", np.max(xi, 0))])

    # ArgMax / ArgMin with ties (rounded values)
    xt = np.round(rnd(3, 4, 5) * 2).astype(np.float32)

    def arg(a, axis, keep, last, is_min):
        b = -a if is_min else a
        if last:
            b = np.flip(b, axis)
            r = b.shape[axis] - 1 - np.argmax(b, axis)
        else:
            r = np.argmax(b, axis)
        if keep:
            r = np.expand_dims(r, axis)
        return r.astype(np.int64)

    for op, mn in (("ArgMax", False), ("ArgMin", True)):
        for ax, keep, last in ((1, 1, 0), (-1, 0, 1), (0, 1, 1)):
            name = "%s_ax%d_k%d_l%d" % (op.lower(), ax, keep, last)
            name = name.replace("-", "m")
            # int64 results stay inside the partition: Cast to int32 after
            case(name, "fp", 12,
                 [N(op, ["x"], ["i"], axis=ax, keepdims=keep, select_last_index=last),
                  N("Cast", ["i"], ["y"], to=TensorProto.INT32)],
                 [("x", xt)], [("y", arg(xt, ax, keep, last, mn).astype(np.int32))])
    # an int64 graph output needs int64 in the spec
    case("argmax_int64_out", "reject:int64_not_enabled:", 13,
         [N("ArgMax", ["x"], ["y"], axis=1)], [("x", xt)], [("y", arg(xt, 1, 1, 0, False))])
    xi8 = RNG.integers(-128, 128, (4, 6)).astype(np.int8)
    xi8[0, :2] = -128
    case("argmin_int8", "int", 13,
         [N("ArgMin", ["x"], ["i"], axis=1, keepdims=0, select_last_index=1),
          N("Cast", ["i"], ["y"], to=TensorProto.INT32)],
         [("x", xi8)], [("y", arg(xi8.astype(np.int32), 1, 0, 1, True).astype(np.int32))])
    # TOSA 1.0 ARGMAX has no i32 row
    xi32 = RNG.integers(-5, 5, (4, 6)).astype(np.int32)
    case("argmin_int32", "reject:not_in_spec:", 13,
         [N("ArgMin", ["x"], ["i"], axis=1), N("Cast", ["i"], ["y"], to=TensorProto.INT32)],
         [("x", xi32)], [("y", arg(xi32, 1, 1, 0, True).astype(np.int32))])


# ------------------------------------------------------------------ fp16
def half():
    x = rnd(3, 8, 4, dtype=np.float16)
    case("f16_slice_steps", "fp", 13, [N("Slice", ["x", "st", "en", "ax", "sp"], ["y"])],
         [("x", x)], [("y", x[:, 7:0:-3, ::2])],
         inits=[("st", np.array([7, 0], np.int64)), ("en", np.array([0, 4], np.int64)),
                ("ax", np.array([1, 2], np.int64)), ("sp", np.array([-3, 2], np.int64))])
    case("f16_reduce_mean", "fp", 13, [N("ReduceMean", ["x"], ["y"], axes=[1], keepdims=0)],
         [("x", x)], [("y", np.mean(x.astype(np.float32), 1).astype(np.float16))])
    case("f16_cumsum", "fp", 14, [N("CumSum", ["x", "a"], ["y"])], [("x", x)],
         [("y", np.cumsum(x.astype(np.float32), 1).astype(np.float16))],
         inits=[("a", np.array(1, np.int64))])
    case("f16_gather", "fp", 13, [N("Gather", ["x", "i"], ["y"], axis=2)], [("x", x)],
         [("y", np.take(x, [3, 0, -1], axis=2))], inits=[("i", np.array([3, 0, -1], np.int64))])
    case("f16_pad_reflect", "fp", 13, [N("Pad", ["x", "p"], ["y"], mode="reflect")], [("x", x)],
         [("y", np.pad(x, [(0, 0), (2, 1), (0, 3)], mode="reflect"))],
         inits=[("p", np.array([0, 2, 0, 0, 1, 3], np.int64))])


# --------------------------------------------------------------- rejects
def rejects():
    x = rnd(4, 5)
    st = np.array([1], np.int64)
    case("rej_slice_runtime_starts", "reject:needs_constant:st", 13,
         [N("Slice", ["x", "st", "en"], ["y"])], [("x", x), ("st", st)], [("y", x[1:3])],
         inits=[("en", np.array([3], np.int64))])
    d, u = rnd(3, 5), rnd(3, 2)
    si = np.array([[1, 0], [0, 2], [4, 3]], np.int64)
    case("rej_scatter_add_runtime", "reject:needs_constant:i", 16,
         [N("ScatterElements", ["d", "i", "u"], ["y"], axis=1, reduction="add")],
         [("d", d), ("u", u), ("i", si.astype(np.int32))], [("y", d)])
    case("rej_reflect_too_wide", "reject:unsupported_attribute:", 13,
         [N("Pad", ["x", "p"], ["y"], mode="reflect")], [("x", x)], [("y", x)],
         inits=[("p", np.array([4, 0, 0, 0], np.int64))])
    # repeated indices without reduction: applied in order, the last wins
    ud = rnd(2, 5)
    ref = d.copy()
    ref[1] = ud[1]
    case("scatternd_duplicate", "fp", 13,
         [N("ScatterND", ["d", "i", "u"], ["y"])], [("d", d), ("u", ud)], [("y", ref)],
         inits=[("i", np.array([[1], [-2]], np.int64))])


# ------------------------------------------------ GatherND, OneHot, IsNaN/IsInf
def gathernd_onehot():
    rng = np.random.default_rng(99)  # its own stream: the cases above keep their data

    def gather_nd(data, ind, b):
        lead = ind.shape[:b]
        out = []
        for bi in np.ndindex(*lead):
            sub, ix = data[bi], ind[bi]
            out.append(np.stack([sub[tuple(ix[p])] for p in np.ndindex(*ix.shape[:-1])]).reshape(
                ix.shape[:-1] + sub.shape[ix.shape[-1]:]))
        return np.stack(out).reshape(ind.shape[:-1] + data.shape[b + ind.shape[-1]:])

    d = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    ic = np.array([[[1, -1], [0, 2]], [[2, 3], [-3, 0]]], np.int64)  # [2, 2, 2], batch 1
    ip = np.where(ic < 0, ic + np.array([3, 4]), ic)
    case("gathernd_batch_const", "fp", 13, [N("GatherND", ["d", "i"], ["y"], batch_dims=1)],
         [("d", d)], [("y", gather_nd(d, ip, 1))], inits=[("i", ic)])
    ir = np.array([[1, 2, 3, 4], [0, -1, -2, 0], [1, 0, 3, -5]], np.int32)  # full tuples: C = 1
    irp = np.where(ir < 0, ir + np.array([2, 3, 4, 5]), ir)
    # GatherND takes int64 indices: int32 graph inputs Cast up, which the
    # int64 rules carry as i32
    case("gathernd_runtime_full", "int", 13,
         [N("Cast", ["i"], ["i64"], to=TensorProto.INT64), N("GatherND", ["d", "i64"], ["y"])],
         [("d", d), ("i", ir)], [("y", gather_nd(d, irp, 0))])
    ib = np.array([[[2], [0]], [[-1], [1]]], np.int32)  # [2, 2, 1], batch 1, runtime
    case("gathernd_runtime_batch", "int", 13,
         [N("Cast", ["i"], ["i64"], to=TensorProto.INT64), N("GatherND", ["d", "i64"], ["y"], batch_dims=1)],
         [("d", d), ("i", ib)], [("y", gather_nd(d, np.where(ib < 0, ib + 3, ib), 1))])

    def one_hot(ind, depth, values, axis, wrap):
        ind = np.trunc(ind).astype(np.int64)
        if wrap:
            ind = np.where(ind < 0, ind + depth, ind)
        hot = np.arange(depth).reshape([depth] + [1] * ind.ndim) == ind[None]
        return np.moveaxis(np.where(hot, values[1], values[0]), 0, axis % (ind.ndim + 1))

    oi = np.array([[0, 3, -1], [5, -6, 2]], np.int32)
    ov = np.array([-2.5, 4.0], np.float32)
    case("onehot_int_axis1", "int", 11, [N("OneHot", ["i", "dp", "v"], ["y"], axis=1)],
         [("i", oi)], [("y", one_hot(oi, 5, ov, 1, True))],
         inits=[("dp", np.array([5], np.int64)), ("v", ov)])
    case("onehot_opset9_negative", "int", 9, [N("OneHot", ["i", "dp", "v"], ["y"])],
         [("i", oi)], [("y", one_hot(oi, 5, ov, -1, False))],
         inits=[("dp", np.array([5], np.int64)), ("v", ov)])
    of = np.array([1.7, -0.5, -1.2, 2.99, 7.0], np.float32)
    vi = np.array([0, 7], np.int32)
    case("onehot_float_indices", "int", 11, [N("OneHot", ["i", "dp", "v"], ["y"], axis=0)],
         [("i", of)], [("y", one_hot(of, 3, vi, 0, True))],
         inits=[("dp", np.array([3.0], np.float32)), ("v", vi)])

    def top_k(a, k, axis, largest):
        # stable sort: equal values keep their order (the lowest index first)
        order = np.argsort(-a if largest else a, axis=axis, kind="stable")
        idx = np.take(order, np.arange(k), axis=axis)
        return np.take_along_axis(a, idx, axis=axis), idx

    # ties, and values equal to the fill (-inf / +inf) among the picks
    tx = np.array([[3.0, -np.inf, 3.0, 1.0, -np.inf, 7.0],
                   [-np.inf, -np.inf, -np.inf, 2.0, np.inf, 2.0]], np.float32)
    for largest, k in ((1, 5), (0, 4)):
        tv, ti = top_k(tx, k, 1, largest)
        case("topk_ties_%s" % ("largest" if largest else "smallest"), "fp", 11,
             [N("TopK", ["x", "k"], ["v", "i64"], axis=-1, largest=largest),
              N("Cast", ["i64"], ["i"], to=TensorProto.INT32)],
             [("x", tx)], [("v", tv), ("i", ti.astype(np.int32))],
             inits=[("k", np.array([k], np.int64))])
    t8 = rng.integers(-128, 128, (3, 7, 2)).astype(np.int8)
    tv, ti = top_k(t8, 3, 1, 1)
    case("topk_int8_axis1", "int", 11,
         [N("TopK", ["x", "k"], ["v", "i64"], axis=1), N("Cast", ["i64"], ["i"], to=TensorProto.INT32)],
         [("x", t8)], [("v", tv), ("i", ti.astype(np.int32))], inits=[("k", np.array([3], np.int64))])
    tx10 = rng.standard_normal((2, 9)).astype(np.float32)
    tv, ti = top_k(tx10, 2, 1, 1)
    case("topk_opset9_attr", "fp", 9,
         [N("TopK", ["x"], ["v", "i64"], k=2), N("Cast", ["i64"], ["i"], to=TensorProto.INT32)],
         [("x", tx10)], [("v", tv), ("i", ti.astype(np.int32))])

    xk = rng.standard_normal((2, 80)).astype(np.float32)
    case("rej_topk_too_many", "reject:level_limit:", 11,
         [N("TopK", ["x", "k"], ["v", "i"])], [("x", xk)], [("v", xk[:, :65])],
         inits=[("k", np.array([65], np.int64))])

    # Compress with a constant condition on a runtime input: SLICEs
    cx = rng.standard_normal((3, 5)).astype(np.float32)
    cc = np.array([True, False, True, True, False])
    case("compress_const_cond_axis1", "fp", 11, [N("Compress", ["x", "cond"], ["y"], axis=1)],
         [("x", cx)], [("y", np.compress(cc, cx, axis=1))], inits=[("cond", cc)])
    cf = np.array([False, True, True, False, False, True, True])  # shorter than the 15 elements
    case("compress_const_cond_flat", "fp", 11, [N("Compress", ["x", "cond"], ["y"])],
         [("x", cx)], [("y", np.compress(cf, cx.ravel()))], inits=[("cond", cf)])
    case("rej_compress_runtime_cond", "reject:dynamic_shape:", 11, [N("Compress", ["x", "cond"], ["y"], axis=1)],
         [("x", cx), ("cond", cc)], [("y", np.compress(cc, cx, axis=1))])
    case("rej_nonzero_runtime", "reject:dynamic_shape:", 13, [N("NonZero", ["x"], ["y"])],
         [("x", cx)], [("y", np.array(np.nonzero(cx)))])

    x = np.array([[1.0, np.inf, -np.inf], [np.nan, 0.0, -3.0]], np.float32)
    case("isnan", "fp", 13, [N("IsNaN", ["x"], ["y"])], [("x", x)], [("y", np.isnan(x))])
    for pos, neg in ((1, 1), (1, 0), (0, 1), (0, 0)):
        ref = (np.isposinf(x) & bool(pos)) | (np.isneginf(x) & bool(neg))
        case("isinf_%d%d" % (pos, neg), "fp", 13,
             [N("IsInf", ["x"], ["y"], detect_positive=pos, detect_negative=neg)], [("x", x)],
             [("y", ref)])


layout()
misc()
half()
rejects()
gather()
reduce()
gathernd_onehot()
write()
print("wrote %d cases" % len(CASES))
