#!/usr/bin/python3
"""Generates the small ONNX models of tests/test_lower_conv.c.

One folder per case: model.onnx, input_<name>.npy for every graph input,
output_0.npy (numpy reference, computed here with numpy only), and a line in
cases.txt: "<case> ok" (must be fully delegated and match) or
"<case> reject <code>" (the node must fall back with that reason code).

Run with Debian's python3 (numpy, onnx):  /usr/bin/python3 gen.py
The references below are written from the ONNX operator definitions.
"""
import os
import shutil
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(1234)
CASES = []


def rnd(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def save(name, op, inputs, attrs, outputs, consts=None, opset=17, expect="ok",
         out_names=None, extra_nodes=None, graph_out=None, dtype=np.float32):
    """inputs: list of (name, array) fed at run time; consts: (name, array)
    initializers; outputs: list of reference arrays (or shapes when rejecting)."""
    consts = consts or []
    d = os.path.join(HERE, name)
    if os.path.isdir(d):
        shutil.rmtree(d)
    os.makedirs(d)
    in_names = [n for n, _ in inputs]
    node_inputs = attrs.pop("_inputs", None) or in_names + [n for n, _ in consts]
    out_names = out_names or ["y%d" % i for i in range(len(outputs))]
    node = helper.make_node(op, node_inputs, out_names, name="n0", **attrs)
    nodes = [node] + (extra_nodes or [])
    ttype = TensorProto.FLOAT16 if dtype == np.float16 else TensorProto.FLOAT
    g = helper.make_graph(
        nodes, name,
        [helper.make_tensor_value_info(n, ttype, a.shape) for n, a in inputs],
        [helper.make_tensor_value_info(n, ttype, np.asarray(o).shape)
         for n, o in zip(graph_out or out_names, outputs)],
        [numpy_helper.from_array(a, n) for n, a in consts])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)],
                          producer_name="ctosa-gen")
    m.ir_version = 8
    onnx.save(m, os.path.join(d, "model.onnx"))
    for n, a in inputs:
        np.save(os.path.join(d, "input_%s.npy" % n), a)
    for i, o in enumerate(outputs):
        np.save(os.path.join(d, "output_%d.npy" % i),
                np.ascontiguousarray(np.asarray(o, dtype=dtype)))
    CASES.append("%s %s" % (name, expect))


# ------------------------------------------------------------ references

def pads_for(in_sp, k, s, dl, pads, auto_pad):
    n = len(in_sp)
    pb, pe = list(pads[:n]), list(pads[n:])
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        for i in range(n):
            out = -(-in_sp[i] // s[i])
            tot = max(0, (out - 1) * s[i] + (k[i] - 1) * dl[i] + 1 - in_sp[i])
            pb[i] = tot // 2 if auto_pad == "SAME_UPPER" else tot - tot // 2
            pe[i] = tot - pb[i]
    elif auto_pad == "VALID":
        pb, pe = [0] * n, [0] * n
    return pb, pe


def conv_ref(x, w, b=None, strides=None, dil=None, pads=None, group=1, auto_pad="NOTSET"):
    n = x.ndim - 2
    k = w.shape[2:]
    s = strides or [1] * n
    dl = dil or [1] * n
    pb, pe = pads_for(x.shape[2:], k, s, dl, pads or [0] * 2 * n, auto_pad)
    xp = np.pad(x.astype(np.float64), [(0, 0), (0, 0)] + list(zip(pb, pe)))
    N, C = x.shape[:2]
    M = w.shape[0]
    out_sp = [(xp.shape[2 + i] - ((k[i] - 1) * dl[i] + 1)) // s[i] + 1 for i in range(n)]
    y = np.zeros([N, M] + out_sp)
    cg, mg = C // group, M // group
    for g in range(group):
        xg = xp[:, g * cg:(g + 1) * cg]
        wg = w[g * mg:(g + 1) * mg].astype(np.float64)
        for kk in np.ndindex(*k):
            sl = tuple(slice(kk[i] * dl[i], kk[i] * dl[i] + (out_sp[i] - 1) * s[i] + 1, s[i])
                       for i in range(n))
            patch = xg[(slice(None), slice(None)) + sl]  # N, cg, out...
            y[:, g * mg:(g + 1) * mg] += np.einsum("nc...,mc->nm...", patch,
                                                   wg[(slice(None), slice(None)) + kk])
    if b is not None:
        y += b.reshape([1, M] + [1] * n)
    return y.astype(np.float32)


def conv_transpose_ref(x, w, b=None, strides=None, dil=None, pads=None, out_pad=None, group=1):
    n = x.ndim - 2
    k = w.shape[2:]
    s = strides or [1] * n
    dl = dil or [1] * n
    pads = pads or [0] * 2 * n
    op = out_pad or [0] * n
    N, C = x.shape[:2]
    mg = w.shape[1]
    M = mg * group
    full = [(x.shape[2 + i] - 1) * s[i] + (k[i] - 1) * dl[i] + 1 + op[i] for i in range(n)]
    y = np.zeros([N, M] + full)
    cg = C // group
    for g in range(group):
        for ii in np.ndindex(*x.shape[2:]):
            for kk in np.ndindex(*k):
                o = tuple(ii[i] * s[i] + kk[i] * dl[i] for i in range(n))
                xv = x[(slice(None), slice(g * cg, (g + 1) * cg)) + ii].astype(np.float64)
                wv = w[(slice(g * cg, (g + 1) * cg), slice(None)) + kk].astype(np.float64)
                y[(slice(None), slice(g * mg, (g + 1) * mg)) + o] += xv @ wv
    sl = tuple(slice(pads[i], full[i] - pads[n + i]) for i in range(n))
    y = y[(slice(None), slice(None)) + sl]
    if b is not None:
        y += b.reshape([1, M] + [1] * n)
    return y.astype(np.float32)


def pool_ref(x, kind, k, strides=None, pads=None, ceil=False, include_pad=False,
             auto_pad="NOTSET"):
    n = x.ndim - 2
    s = strides or [1] * n
    pb, pe = pads_for(x.shape[2:], k, s, [1] * n, pads or [0] * 2 * n, auto_pad)
    out = []
    for i in range(n):
        span = x.shape[2 + i] + pb[i] + pe[i] - k[i]
        o = (-(-span // s[i]) if ceil else span // s[i]) + 1
        if ceil and (o - 1) * s[i] >= x.shape[2 + i] + pb[i]:
            o -= 1
        out.append(o)
    N, C = x.shape[:2]
    y = np.zeros([N, C] + out, np.float64)
    for oi in np.ndindex(*out):
        lo = [oi[i] * s[i] - pb[i] for i in range(n)]
        hi = [lo[i] + k[i] for i in range(n)]
        clo = [max(0, v) for v in lo]
        chi = [min(x.shape[2 + i], hi[i]) for i, v in enumerate(hi)]
        win = x[(slice(None), slice(None)) + tuple(slice(a, b) for a, b in zip(clo, chi))]
        win = win.reshape(N, C, -1).astype(np.float64)
        if kind == "max":
            y[(slice(None), slice(None)) + oi] = win.max(-1)
        else:
            if include_pad:
                # padded extent, without the ceil-mode overhang
                plo = [max(lo[i], -pb[i]) for i in range(n)]
                phi = [min(hi[i], x.shape[2 + i] + pe[i]) for i in range(n)]
                cnt = np.prod([phi[i] - plo[i] for i in range(n)])
            else:
                cnt = win.shape[-1]
            y[(slice(None), slice(None)) + oi] = win.sum(-1) / cnt
    return y.astype(np.float32)


def softmax_ref(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


ROI = None  # (start, end) per spatial axis for tf_crop_and_resize references


def resize_coord(o, in_sz, out_sz, scale, ctm, len_resized=None, axis=0):
    if ctm == "tf_crop_and_resize":
        s, e = ROI[axis]
        if out_sz > 1:
            return s * (in_sz - 1) + o * (e - s) * (in_sz - 1) / (out_sz - 1)
        return 0.5 * (s + e) * (in_sz - 1)
    if ctm == "asymmetric":
        return o / scale
    if ctm == "half_pixel":
        return (o + 0.5) / scale - 0.5
    if ctm == "pytorch_half_pixel":
        return (o + 0.5) / scale - 0.5 if out_sz > 1 else 0.0
    if ctm == "align_corners":
        # with scales, the ONNX reference uses in*scale as the resized length
        ln = out_sz if len_resized is None else len_resized
        return 0.0 if ln <= 1 else o * (in_sz - 1) / (ln - 1)
    if ctm == "tf_half_pixel_for_nn":
        return (o + 0.5) / scale
    if ctm == "half_pixel_symmetric":
        adjustment = out_sz / (in_sz * scale)
        return in_sz / 2 * (1 - adjustment) + (o + 0.5) / scale - 0.5
    raise ValueError(ctm)


def resize_ref(x, out_hw, scales, mode, ctm, nearest_mode="round_prefer_floor", by_scales=False):
    N, C, H, W = x.shape
    OH, OW = out_hw
    y = np.zeros((N, C, OH, OW), np.float64)
    def near(v):
        if nearest_mode == "floor":
            return int(np.floor(v))
        if nearest_mode == "ceil":
            return int(np.ceil(v))
        f = np.floor(v)
        if v - f == 0.5:
            return int(f) if nearest_mode == "round_prefer_floor" else int(f) + 1
        return int(np.floor(v + 0.5))
    for oy in range(OH):
        cy = resize_coord(oy, H, OH, scales[0], ctm, H * scales[0] if by_scales else None, 0)
        for ox in range(OW):
            cx = resize_coord(ox, W, OW, scales[1], ctm, W * scales[1] if by_scales else None, 1)
            if mode == "nearest":
                iy = min(max(near(cy), 0), H - 1)
                ix = min(max(near(cx), 0), W - 1)
                y[:, :, oy, ox] = x[:, :, iy, ix]
            else:
                cyc = min(max(cy, 0), H - 1)
                cxc = min(max(cx, 0), W - 1)
                y0, x0 = int(np.floor(cyc)), int(np.floor(cxc))
                y1, x1 = min(y0 + 1, H - 1), min(x0 + 1, W - 1)
                dy, dx = cyc - y0, cxc - x0
                y[:, :, oy, ox] = (x[:, :, y0, x0] * (1 - dy) * (1 - dx) +
                                   x[:, :, y0, x1] * (1 - dy) * dx +
                                   x[:, :, y1, x0] * dy * (1 - dx) + x[:, :, y1, x1] * dy * dx)
    return y.astype(np.float32)


# ----------------------------------------------------------------- cases

def conv_cases():
    x = rnd(1, 3, 7, 8)
    w = rnd(4, 3, 3, 3)
    b = rnd(4)
    save("conv2d_basic", "Conv", [("x", x)], {}, [conv_ref(x, w, b)], [("w", w), ("b", b)])
    save("conv2d_pads_strides_nobias", "Conv", [("x", x)],
         {"pads": [1, 0, 2, 1], "strides": [2, 3]},
         [conv_ref(x, w, None, strides=[2, 3], pads=[1, 0, 2, 1])], [("w", w)])
    save("conv2d_dilation", "Conv", [("x", x)], {"dilations": [2, 1], "pads": [1, 1, 1, 1]},
         [conv_ref(x, w, b, dil=[2, 1], pads=[1, 1, 1, 1])], [("w", w), ("b", b)])
    for ap in ("SAME_UPPER", "SAME_LOWER", "VALID"):
        save("conv2d_auto_%s" % ap.lower(), "Conv", [("x", x)],
             {"auto_pad": ap, "strides": [2, 2]},
             [conv_ref(x, w, b, strides=[2, 2], auto_pad=ap)], [("w", w), ("b", b)])
    xd = rnd(2, 4, 6, 5)
    wd = rnd(8, 1, 3, 3)
    bd = rnd(8)
    save("conv2d_depthwise_mult2", "Conv", [("x", xd)], {"group": 4, "pads": [1, 1, 1, 1]},
         [conv_ref(xd, wd, bd, pads=[1, 1, 1, 1], group=4)], [("w", wd), ("b", bd)])
    wg = rnd(6, 2, 3, 1)
    save("conv2d_group2", "Conv", [("x", xd)], {"group": 2, "strides": [1, 2]},
         [conv_ref(xd, wg, None, strides=[1, 2], group=2)], [("w", wg)])
    x1 = rnd(2, 3, 11)
    w1 = rnd(5, 3, 4)
    save("conv1d", "Conv", [("x", x1)], {"pads": [2, 1], "strides": [2], "dilations": [2]},
         [conv_ref(x1, w1, None, strides=[2], dil=[2], pads=[2, 1])], [("w", w1)])
    x3 = rnd(1, 2, 4, 5, 5)
    w3 = rnd(3, 2, 2, 3, 3)
    b3 = rnd(3)
    save("conv3d", "Conv", [("x", x3)], {"pads": [0, 1, 1, 1, 0, 1], "strides": [1, 2, 2]},
         [conv_ref(x3, w3, b3, strides=[1, 2, 2], pads=[0, 1, 1, 1, 0, 1])],
         [("w", w3), ("b", b3)])
    # weight as a runtime input: must be bound
    save("conv2d_weight_input", "Conv", [("x", x), ("w", w)], {}, [conv_ref(x, w)],
         expect="reject needs_constant")


def conv_transpose_cases():
    x = rnd(1, 3, 4, 5)
    w = rnd(3, 2, 3, 3)
    b = rnd(2)
    save("convtr_basic", "ConvTranspose", [("x", x)], {}, [conv_transpose_ref(x, w, b)],
         [("w", w), ("b", b)])
    save("convtr_strides_pads_outpad", "ConvTranspose", [("x", x)],
         {"strides": [2, 3], "pads": [1, 0, 1, 2], "output_padding": [1, 1]},
         [conv_transpose_ref(x, w, None, strides=[2, 3], pads=[1, 0, 1, 2], out_pad=[1, 1])],
         [("w", w)])
    save("convtr_dilation", "ConvTranspose", [("x", x)], {"dilations": [2, 2]},
         [conv_transpose_ref(x, w, b, dil=[2, 2])], [("w", w), ("b", b)])
    # output_shape: total padding = 2*(4-1)+3-9 = 0 / 2*(5-1)+3-12 = -1
    save("convtr_output_shape", "ConvTranspose", [("x", x)],
         {"strides": [2, 2], "output_shape": [9, 12]},
         [conv_transpose_ref(x, w, b, strides=[2, 2], pads=[0, 0, 0, 0], out_pad=[0, 1])],
         [("w", w), ("b", b)])
    wg = rnd(4, 1, 2, 2)
    xg = rnd(1, 4, 3, 3)
    save("convtr_group2", "ConvTranspose", [("x", xg)], {"group": 2, "strides": [2, 2]},
         [conv_transpose_ref(xg, wg, None, strides=[2, 2], group=2)], [("w", wg)])
    x3 = rnd(1, 2, 3, 4, 3)
    w3 = rnd(2, 3, 2, 3, 2)
    b3 = rnd(3)
    save("convtr_3d", "ConvTranspose", [("x", x3)],
         {"strides": [2, 1, 3], "pads": [1, 0, 2, 0, 1, 1], "output_padding": [1, 0, 0],
          "dilations": [1, 2, 1]},
         [conv_transpose_ref(x3, w3, b3, strides=[2, 1, 3], dil=[1, 2, 1], pads=[1, 0, 2, 0, 1, 1],
                             out_pad=[1, 0, 0])], [("w", w3), ("b", b3)])
    x1 = rnd(1, 2, 5)
    w1 = rnd(2, 3, 3)
    save("convtr_1d", "ConvTranspose", [("x", x1)], {"strides": [2]},
         [conv_transpose_ref(x1, w1, None, strides=[2])], [("w", w1)])


def pool_cases():
    x = rnd(1, 3, 7, 8)
    save("maxpool_basic", "MaxPool", [("x", x)], {"kernel_shape": [3, 3]},
         [pool_ref(x, "max", [3, 3])])
    save("maxpool_pads_strides", "MaxPool", [("x", x)],
         {"kernel_shape": [3, 2], "pads": [1, 0, 1, 1], "strides": [2, 2]},
         [pool_ref(x, "max", [3, 2], [2, 2], [1, 0, 1, 1])])
    save("maxpool_ceil", "MaxPool", [("x", x)],
         {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1},
         [pool_ref(x, "max", [3, 3], [2, 2], ceil=True)])
    save("maxpool_same_upper", "MaxPool", [("x", x)],
         {"kernel_shape": [3, 3], "strides": [2, 2], "auto_pad": "SAME_UPPER"},
         [pool_ref(x, "max", [3, 3], [2, 2], auto_pad="SAME_UPPER")])
    x1 = rnd(2, 3, 9)
    save("maxpool_1d", "MaxPool", [("x", x1)], {"kernel_shape": [2], "strides": [2]},
         [pool_ref(x1, "max", [2], [2])])
    # dilated pools and the Resize variants beyond RESIZE (cubic, extrapolation,
    # other ranks and axes) are compared with ONNX Runtime by tests/cli_attn_ort.sh
    save("maxpool_indices", "MaxPool", [("x", x)], {"kernel_shape": [2, 2]},
         [pool_ref(x, "max", [2, 2]), np.zeros((1, 3, 6, 7), np.float32)],
         expect="reject unsupported_attribute")
    save("avgpool_basic", "AveragePool", [("x", x)], {"kernel_shape": [2, 3], "strides": [1, 2]},
         [pool_ref(x, "avg", [2, 3], [1, 2])])
    save("avgpool_pads_exclude", "AveragePool", [("x", x)],
         {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]},
         [pool_ref(x, "avg", [3, 3], pads=[1, 1, 1, 1])])
    save("avgpool_pads_include", "AveragePool", [("x", x)],
         {"kernel_shape": [3, 3], "pads": [1, 2, 1, 0], "count_include_pad": 1, "strides": [2, 2]},
         [pool_ref(x, "avg", [3, 3], [2, 2], [1, 2, 1, 0], include_pad=True)])
    save("avgpool_ceil", "AveragePool", [("x", x)],
         {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1},
         [pool_ref(x, "avg", [3, 3], [2, 2], ceil=True)])
    save("avgpool_1d_same_lower", "AveragePool", [("x", x1)],
         {"kernel_shape": [4], "auto_pad": "SAME_LOWER"},
         [pool_ref(x1, "avg", [4], auto_pad="SAME_LOWER")])
    x3p = rnd(1, 2, 5, 6, 4)
    save("maxpool_3d_pads", "MaxPool", [("x", x3p)],
         {"kernel_shape": [2, 3, 2], "strides": [2, 2, 1], "pads": [1, 1, 0, 0, 1, 1]},
         [pool_ref(x3p, "max", [2, 3, 2], [2, 2, 1], [1, 1, 0, 0, 1, 1])])
    save("avgpool_3d_exclude_ceil", "AveragePool", [("x", x3p)],
         {"kernel_shape": [3, 2, 2], "strides": [2, 2, 3], "pads": [1, 0, 1, 1, 1, 0], "ceil_mode": 1},
         [pool_ref(x3p, "avg", [3, 2, 2], [2, 2, 3], [1, 0, 1, 1, 1, 0], ceil=True)])
    save("avgpool_3d_include", "AveragePool", [("x", x3p)],
         {"kernel_shape": [2, 2, 3], "pads": [1, 1, 1, 0, 1, 1], "count_include_pad": 1},
         [pool_ref(x3p, "avg", [2, 2, 3], None, [1, 1, 1, 0, 1, 1], include_pad=True)])
    save("globalavgpool", "GlobalAveragePool", [("x", x)], {},
         [x.mean(axis=(2, 3), keepdims=True)])
    save("globalmaxpool", "GlobalMaxPool", [("x", x)], {}, [x.max(axis=(2, 3), keepdims=True)])
    x3 = rnd(1, 2, 3, 4, 5)
    save("globalavgpool_3d", "GlobalAveragePool", [("x", x3)], {},
         [x3.mean(axis=(2, 3, 4), keepdims=True)])


def matmul_cases():
    a, b = rnd(3, 4), rnd(4, 5)
    save("matmul_2d", "MatMul", [("a", a), ("b", b)], {}, [a @ b])
    a3, b3 = rnd(2, 3, 4), rnd(2, 4, 5)
    save("matmul_3d", "MatMul", [("a", a3), ("b", b3)], {}, [a3 @ b3])
    a4, b2 = rnd(2, 2, 3, 4), rnd(4, 5)
    save("matmul_4d_x_2d_const", "MatMul", [("a", a4)], {}, [a4 @ b2], [("b", b2)])
    ab, bb = rnd(3, 4), rnd(2, 1, 4, 5)
    save("matmul_broadcast", "MatMul", [("a", ab), ("b", bb)], {}, [ab @ bb])
    bb2 = rnd(1, 3, 4, 2)
    a42 = rnd(2, 1, 5, 4)
    save("matmul_broadcast_both", "MatMul", [("a", a42), ("b", bb2)], {}, [a42 @ bb2])
    v = rnd(4)
    save("matmul_vec_left", "MatMul", [("a", v), ("b", b3)], {}, [v @ b3])
    save("matmul_vec_right", "MatMul", [("a", a3), ("b", v)], {}, [a3 @ v])
    A, B, C = rnd(4, 3), rnd(5, 4), rnd(5)
    save("gemm_all", "Gemm", [("a", A), ("b", B), ("c", C)],
         {"transA": 1, "transB": 1, "alpha": 0.5, "beta": 2.0}, [0.5 * (A.T @ B.T) + 2.0 * C])
    B2, C2 = rnd(4, 6), rnd(3, 1)
    save("gemm_const_b", "Gemm", [("a", A.T.copy())], {"alpha": 1.5}, [1.5 * (A.T @ B2) + C2],
         [("b", B2), ("c", C2)])
    save("gemm_no_c", "Gemm", [("a", A.T.copy()), ("b", B2)], {}, [A.T @ B2])
    q, k = rnd(2, 3, 4, 5), rnd(2, 3, 6, 5)
    save("einsum_attention", "Einsum", [("q", q), ("k", k)], {"equation": "bhqd,bhkd->bhqk"},
         [np.einsum("bhqd,bhkd->bhqk", q, k)], opset=12)
    save("einsum_ij_jk", "Einsum", [("a", a), ("b", b)], {"equation": "ij,jk->ik"},
         [np.einsum("ij,jk->ik", a, b)], opset=12)
    save("einsum_transpose_out", "Einsum", [("a", a3), ("b", b3)], {"equation": "bij,bjk->kbi"},
         [np.einsum("bij,bjk->kbi", a3, b3)], opset=12)
    save("einsum_sum", "Einsum", [("a", a3)], {"equation": "bij->jb"},
         [np.einsum("bij->jb", a3)], opset=12)
    u, v2 = rnd(5), rnd(5)
    save("einsum_inner", "Einsum", [("a", u), ("b", v2)], {"equation": "i,i"},
         [np.array(np.einsum("i,i", u, v2), np.float32)], opset=12)
    w3 = rnd(3)
    save("einsum_outer_implicit", "Einsum", [("a", u), ("b", w3)], {"equation": "i,j"},
         [np.einsum("i,j", u, w3)], opset=12)
    save("einsum_sum_free", "Einsum", [("a", a3), ("b", b)], {"equation": "bij,jk->k"},
         [np.einsum("bij,jk->k", a3, b)], opset=12)
    e1, e2 = rnd(2, 3, 4, 5), rnd(2, 3, 5, 6)
    save("einsum_ellipsis", "Einsum", [("a", e1), ("b", e2)], {"equation": "...ij,...jk->...ik"},
         [np.einsum("...ij,...jk->...ik", e1, e2)], opset=12)
    e3 = rnd(5, 2)
    save("einsum_ellipsis_implicit", "Einsum", [("a", e1), ("b", e3)], {"equation": "...ij,jk"},
         [np.einsum("...ij,jk", e1, e3)], opset=12)
    dg = rnd(2, 3, 3)
    save("einsum_diagonal", "Einsum", [("a", dg)], {"equation": "bii->bi"},
         [np.einsum("bii->bi", dg)], opset=12, expect="reject unsupported_attribute")


def norm_cases():
    x = rnd(2, 3, 4, 5)
    s, b, m, v = rnd(3), rnd(3), rnd(3), np.abs(rnd(3)) + 0.5
    ref = (x - m.reshape(1, 3, 1, 1)) / np.sqrt(v.reshape(1, 3, 1, 1) + 1e-3) * s.reshape(1, 3, 1, 1) \
        + b.reshape(1, 3, 1, 1)
    save("batchnorm_const", "BatchNormalization", [("x", x)], {"epsilon": 1e-3}, [ref],
         [("s", s), ("b", b), ("m", m), ("v", v)], opset=15)
    save("batchnorm_runtime", "BatchNormalization",
         [("x", x), ("s", s), ("b", b), ("m", m), ("v", v)], {"epsilon": 1e-3}, [ref], opset=9)
    save("batchnorm_training", "BatchNormalization", [("x", x)], {"training_mode": 1},
         [ref], [("s", s), ("b", b), ("m", m), ("v", v)], opset=15,
         expect="reject unsupported_attribute")
    mu = x.mean(axis=(2, 3), keepdims=True)
    var = x.var(axis=(2, 3), keepdims=True)
    ref = (x - mu) / np.sqrt(var + 1e-5) * s.reshape(1, 3, 1, 1) + b.reshape(1, 3, 1, 1)
    save("instancenorm", "InstanceNormalization", [("x", x)], {}, [ref], [("s", s), ("b", b)])
    for axis in (-1, 1, 0):
        ax = tuple(range(axis % 4, 4))
        mu = x.mean(axis=ax, keepdims=True)
        var = x.var(axis=ax, keepdims=True)
        sh = x.shape[axis % 4:]
        sc, bc = rnd(*sh), rnd(*sh)
        ref = (x - mu) / np.sqrt(var + 1e-5) * sc + bc
        save("layernorm_axis%d" % (axis % 4), "LayerNormalization", [("x", x)], {"axis": axis},
             [ref], [("s", sc), ("b", bc)], opset=17)
    sc = rnd(5)
    mu = x.mean(axis=-1, keepdims=True)
    inv = 1 / np.sqrt(x.var(axis=-1, keepdims=True) + 1e-5)
    save("layernorm_stats", "LayerNormalization", [("x", x)], {"epsilon": 1e-5},
         [(x - mu) * inv * sc, mu, inv], [("s", sc)], opset=17,
         out_names=["y", "mean", "invstd"])
    xg = rnd(2, 4, 3, 3)
    sg, bg = rnd(4), rnd(4)
    xr = xg.reshape(2, 2, -1)
    yg = ((xr - xr.mean(-1, keepdims=True)) / np.sqrt(xr.var(-1, keepdims=True) + 1e-5)).reshape(xg.shape)
    save("groupnorm_21", "GroupNormalization", [("x", xg)], {"num_groups": 2},
         [yg * sg.reshape(1, 4, 1, 1) + bg.reshape(1, 4, 1, 1)], [("s", sg), ("b", bg)], opset=21)
    sg2, bg2 = rnd(2), rnd(2)
    yg2 = (yg.reshape(2, 2, -1) * sg2.reshape(1, 2, 1) + bg2.reshape(1, 2, 1)).reshape(xg.shape)
    save("groupnorm_18", "GroupNormalization", [("x", xg)], {"num_groups": 2},
         [yg2], [("s", sg2), ("b", bg2)], opset=18)
    sr = rnd(4, 5)
    ref = x / np.sqrt((x * x).mean(axis=(2, 3), keepdims=True) + 1e-5) * sr
    save("rmsnorm", "RMSNormalization", [("x", x)], {"axis": 2}, [ref], [("s", sr)], opset=23)
    save("lpnorm_p2", "LpNormalization", [("x", x)], {"axis": 1},
         [x / np.sqrt((x * x).sum(axis=1, keepdims=True))])
    save("lpnorm_p1", "LpNormalization", [("x", x)], {"axis": -1, "p": 1},
         [x / np.abs(x).sum(axis=-1, keepdims=True)])
    xl = rnd(1, 5, 3, 2)
    size, alpha, beta, bias = 3, 2e-2, 0.75, 1.5
    sq = np.zeros_like(xl)
    for ch in range(5):
        lo, hi = max(0, ch - (size - 1) // 2), min(4, ch + (size - 1) - (size - 1) // 2)
        sq[:, ch] = (xl[:, lo:hi + 1] ** 2).sum(axis=1)
    save("lrn", "LRN", [("x", xl)], {"size": size, "alpha": alpha, "beta": beta, "bias": bias},
         [xl / (bias + alpha / size * sq) ** beta])


def softmax_cases():
    x = rnd(2, 3, 4)
    for axis in (-1, 1, 0):
        save("softmax_axis%d" % (axis % 3), "Softmax", [("x", x)], {"axis": axis},
             [softmax_ref(x, axis)], opset=13)
    save("logsoftmax_axis1", "LogSoftmax", [("x", x)], {"axis": 1},
         [np.log(softmax_ref(x, 1))], opset=13)
    x2 = x.reshape(2, 12)
    save("softmax_legacy_axis1", "Softmax", [("x", x)], {},
         [softmax_ref(x2, 1).reshape(x.shape)], opset=11)
    save("logsoftmax_legacy_axis2", "LogSoftmax", [("x", x)], {"axis": 2},
         [np.log(softmax_ref(x, 2))], opset=11)
    xh = np.array([[[3, 1, 3, 2], [0, 5, 5, 1], [2, 2, 2, 2]]], np.float32)
    hm = np.zeros_like(xh)
    idx = xh.argmax(axis=-1)
    for i in range(3):
        hm[0, i, idx[0, i]] = 1
    save("hardmax_ties", "Hardmax", [("x", xh)], {}, [hm], opset=13)


def resize_cases():
    x = rnd(1, 2, 4, 5)
    empty = np.zeros((0,), np.float32)
    def rs(name, mode, ctm, scales=None, sizes=None, nearest="round_prefer_floor", expect="ok",
           opset=13):
        attrs = {"mode": mode, "coordinate_transformation_mode": ctm}
        if mode == "nearest":
            attrs["nearest_mode"] = nearest
        if sizes is not None:
            out = sizes
            sc = (sizes[0] / 4, sizes[1] / 5)
            consts = [("roi", empty), ("scales", empty), ("sizes", np.array([1, 2] + sizes, np.int64))]
        else:
            out = [int(np.floor(4 * scales[0])), int(np.floor(5 * scales[1]))]
            sc = scales
            consts = [("roi", empty), ("scales", np.array([1, 1] + scales, np.float32))]
        ref = resize_ref(x, out, sc, mode, ctm, nearest, sizes is None) if expect == "ok" else np.zeros((1, 2) + tuple(out), np.float32)
        save(name, "Resize", [("x", x)], attrs, [ref], consts, opset=opset, expect=expect)
    rs("resize_nearest_up2_asym", "nearest", "asymmetric", scales=[2.0, 2.0], nearest="floor")
    rs("resize_nearest_half_pixel", "nearest", "half_pixel", sizes=[7, 9])
    rs("resize_nearest_ceil_half", "nearest", "half_pixel", sizes=[8, 8], nearest="ceil")
    rs("resize_nearest_prefer_ceil", "nearest", "asymmetric", sizes=[6, 10], nearest="round_prefer_ceil")
    rs("resize_nearest_down", "nearest", "half_pixel", scales=[0.5, 0.6])
    rs("resize_linear_half_pixel", "linear", "half_pixel", scales=[2.0, 1.6])
    rs("resize_linear_align", "linear", "align_corners", sizes=[7, 9])
    rs("resize_linear_pytorch", "linear", "pytorch_half_pixel", sizes=[3, 3])
    rs("resize_linear_asym_down", "linear", "asymmetric", scales=[0.5, 0.8])
    rs("resize_linear_align_scales", "linear", "align_corners", scales=[0.6, 1.5])
    rs("resize_nearest_align_floor", "nearest", "align_corners", sizes=[7, 3], nearest="floor")
    rs("resize_nearest_tf_nn", "nearest", "tf_half_pixel_for_nn", sizes=[6, 7])
    rs("resize_linear_symmetric", "linear", "half_pixel_symmetric", scales=[0.6, 1.7], opset=19)
    rs("resize_nearest_symmetric", "nearest", "half_pixel_symmetric", scales=[1.6, 0.7], opset=19)
    global ROI
    for name, roi, sizes, mode, expect in [
            ("resize_crop_linear", [0.2, 0.25, 0.8, 1.0], [4, 3], "linear", "ok"),
            ("resize_crop_nearest", [0.0, 0.5, 0.5, 1.0], [5, 6], "nearest", "ok")]:
        ROI = [(roi[0], roi[2]), (roi[1], roi[3])]
        consts = [("roi", np.array([0, 0, roi[0], roi[1], 1, 1, roi[2], roi[3]], np.float32)),
                  ("scales", empty), ("sizes", np.array([1, 2] + sizes, np.int64))]
        attrs = {"mode": mode, "coordinate_transformation_mode": "tf_crop_and_resize",
                 "extrapolation_value": 7.0}
        sc = (sizes[0] / 4, sizes[1] / 5)
        ref = resize_ref(x, sizes, sc, mode, "tf_crop_and_resize", "round_prefer_floor") \
            if expect == "ok" else np.zeros((1, 2) + tuple(sizes), np.float32)
        save(name, "Resize", [("x", x)], attrs, [ref], consts, opset=13, expect=expect)
    ref = np.repeat(np.repeat(x, 2, axis=2), 3, axis=3)
    save("upsample_nearest", "Upsample", [("x", x)], {"mode": "nearest"}, [ref],
         [("scales", np.array([1, 1, 2, 3], np.float32))], opset=9)
    save("upsample7_linear", "Upsample", [("x", x)], {"mode": "linear", "scales": [1.0, 1.0, 2.0, 1.5]},
         [resize_ref(x, [8, 7], (2.0, 1.5), "linear", "asymmetric")], opset=7)
    xd = rnd(1, 8, 2, 3)
    b = 2
    dcr = np.zeros((1, 2, 4, 6), np.float32)
    crd = np.zeros((1, 2, 4, 6), np.float32)
    for c in range(2):
        for h in range(2):
            for w in range(3):
                for i in range(b):
                    for j in range(b):
                        dcr[0, c, h * b + i, w * b + j] = xd[0, (i * b + j) * 2 + c, h, w]
                        crd[0, c, h * b + i, w * b + j] = xd[0, c * b * b + i * b + j, h, w]
    # alone it only moves data: the partitioner keeps it on the CPU
    save("depthtospace_alone", "DepthToSpace", [("x", xd)], {"blocksize": 2}, [dcr], opset=13,
         expect="reject no_compute")
    dbl = [helper.make_node("Add", ["t", "t"], ["y0"], name="n1")]
    save("depthtospace_dcr", "DepthToSpace", [("x", xd)], {"blocksize": 2}, [2 * dcr], opset=13,
         out_names=["t"], extra_nodes=dbl, graph_out=["y0"])
    save("depthtospace_crd", "DepthToSpace", [("x", xd)], {"blocksize": 2, "mode": "CRD"},
         [2 * crd], opset=13, out_names=["t"], extra_nodes=dbl, graph_out=["y0"])
    s2d = np.zeros((1, 8, 2, 3), np.float32)
    for c in range(2):
        for h in range(2):
            for w in range(3):
                for i in range(b):
                    for j in range(b):
                        s2d[0, (i * b + j) * 2 + c, h, w] = crd[0, c, h * b + i, w * b + j]
    save("spacetodepth", "SpaceToDepth", [("x", crd)], {"blocksize": 2}, [2 * s2d], opset=13,
         out_names=["t"], extra_nodes=dbl, graph_out=["y0"])


def fp16_cases():
    """float16 models (TOSA-1.0+FP has fp16); references in float64 from
    the fp16 values, compared with a looser tolerance (tolerance in cases.txt)."""
    h = np.float16
    x = rnd(1, 3, 6, 7).astype(h)
    w = rnd(4, 3, 3, 3).astype(h)
    b = rnd(4).astype(h)
    save("fp16_conv2d", "Conv", [("x", x)], {"pads": [1, 1, 1, 1]},
         [conv_ref(x.astype(np.float32), w.astype(np.float32), b.astype(np.float32), pads=[1, 1, 1, 1])],
         [("w", w), ("b", b)], dtype=h, expect="ok 4e-3 4e-3")
    save("fp16_avgpool", "AveragePool", [("x", x)], {"kernel_shape": [2, 2], "strides": [2, 2]},
         [pool_ref(x.astype(np.float32), "avg", [2, 2], [2, 2])], dtype=h, expect="ok 2e-3 1e-3")
    a, bm = rnd(2, 3, 8).astype(h), rnd(8, 5).astype(h)
    save("fp16_matmul", "MatMul", [("a", a), ("b", bm)], {},
         [a.astype(np.float32) @ bm.astype(np.float32)], dtype=h, expect="ok 4e-3 4e-3")
    xs = rnd(2, 3, 8).astype(h)
    save("fp16_softmax", "Softmax", [("x", xs)], {"axis": -1},
         [softmax_ref(xs.astype(np.float32), -1)], dtype=h, opset=13, expect="ok 4e-3 1e-3")
    sc, bc = rnd(8).astype(h), rnd(8).astype(h)
    xf = xs.astype(np.float32)
    ref = (xf - xf.mean(-1, keepdims=True)) / np.sqrt(xf.var(-1, keepdims=True) + 1e-5) * sc.astype(np.float32) + bc.astype(np.float32)
    save("fp16_layernorm", "LayerNormalization", [("x", xs)], {}, [ref], [("s", sc), ("b", bc)],
         dtype=h, expect="ok 4e-3 4e-3")
    xr = rnd(1, 2, 3, 4).astype(h)
    empty = np.zeros((0,), np.float16)
    save("fp16_resize_linear", "Resize", [("x", xr)], {"mode": "linear"},
         [resize_ref(xr.astype(np.float32), [6, 8], (2.0, 2.0), "linear", "half_pixel")],
         [("roi", empty), ("scales", np.array([1, 1, 2, 2], np.float32))], dtype=h, opset=13,
         expect="ok 2e-3 1e-3")


def edge_cases():
    x = rnd(1, 2, 5, 6)
    w = rnd(2, 3, 2, 2)
    # pads larger than the kernel: TOSA out_pad must stay > -kernel, the rest is cropped
    save("convtr_big_pads", "ConvTranspose", [("x", x)],
         {"strides": [3, 3], "pads": [2, 3, 3, 2]},
         [conv_transpose_ref(x, w, None, strides=[3, 3], pads=[2, 3, 3, 2])], [("w", w)])
    # floor division leaves an input tail the windows never read: cropped
    xc = rnd(1, 2, 8, 9)
    wc = rnd(3, 2, 3, 2)
    save("conv2d_crop_tail", "Conv", [("x", xc)], {"strides": [3, 4]},
         [conv_ref(xc, wc, None, strides=[3, 4])], [("w", wc)])
    save("maxpool_crop_tail", "MaxPool", [("x", xc)], {"kernel_shape": [2, 2], "strides": [3, 4]},
         [pool_ref(xc, "max", [2, 2], [3, 4])])
    # Gemm with a scalar C and transA only, beta 0 skips C
    A, B = rnd(3, 4), rnd(3, 5)
    save("gemm_transA_beta0", "Gemm", [("a", A), ("b", B)], {"transA": 1, "beta": 0.0},
         [A.T @ B], [("c", rnd(1))])
    # non-constant bias of a grouped conv: sliced at run time
    xd = rnd(1, 4, 5, 5)
    wg = rnd(4, 2, 3, 3)
    bg = rnd(4)
    save("conv2d_group_runtime_bias", "Conv", [("x", xd), ("b", bg)], {"group": 2, "_inputs": ["x", "w", "b"]},
         [conv_ref(xd, wg, bg, group=2)], [("w", wg)])


def bad_cases():
    """Attribute values that cannot be expressed: clean fallbacks, no crash."""
    x = rnd(1, 2, 5, 5)
    w = rnd(3, 2, 3, 3)
    z = np.zeros((1, 3, 3, 3), np.float32)
    save("bad_conv_stride0", "Conv", [("x", x)], {"strides": [0, 1]}, [z], [("w", w)],
         expect="reject unsupported_attribute")
    save("bad_conv_kernel_too_big", "Conv", [("x", x)], {}, [z], [("w", rnd(3, 2, 6, 6))],
         expect="reject unsupported_attribute")
    save("bad_conv_group", "Conv", [("x", x)], {"group": 3}, [z], [("w", w)],
         expect="reject unsupported_attribute")
    save("bad_pool_no_kernel", "MaxPool", [("x", x)], {}, [x], expect="reject unsupported_attribute")
    save("bad_avgpool_pad_ge_kernel", "AveragePool", [("x", x)],
         {"kernel_shape": [2, 2], "pads": [2, 0, 0, 0]}, [np.zeros((1, 2, 6, 4), np.float32)],
         expect="reject unsupported_attribute")
    rnd(1, 2, 5)  # the draw of a former case: the later cases keep their data
    save("bad_resize_scales_input", "Resize", [("x", x), ("scales", np.array([1, 1, 2, 2], np.float32))],
         {"mode": "nearest", "_inputs": ["x", "", "scales"]}, [np.zeros((1, 2, 10, 10), np.float32)],
         opset=13, expect="reject needs_constant")
    save("bad_softmax_axis", "Softmax", [("x", x)], {"axis": 4}, [x], opset=13,
         expect="reject unsupported_attribute")
    save("bad_lpnorm_p3", "LpNormalization", [("x", x)], {"p": 3}, [x],
         expect="reject unsupported_attribute")
    save("bad_gemm_rank3", "Gemm", [("a", rnd(2, 3, 4)), ("b", rnd(4, 5))], {},
         [np.zeros((2, 3, 5), np.float32)], expect="reject unsupported_attribute")
    save("bad_einsum_three", "Einsum", [("a", rnd(2, 3)), ("b", rnd(3, 4)), ("c", rnd(4, 5))],
         {"equation": "ij,jk,kl->il"}, [np.zeros((2, 5), np.float32)], opset=12,
         expect="reject unsupported_attribute")


def chain_cases():
    """conv -> relu-free chain -> pool -> conv: adjacent transposes cancel."""
    x = rnd(1, 3, 8, 8)
    w1, w2 = rnd(4, 3, 3, 3), rnd(4, 4, 1, 1)
    y1 = conv_ref(x, w1, None, pads=[1, 1, 1, 1])
    y2 = pool_ref(y1, "max", [2, 2], [2, 2])
    y3 = conv_ref(y2, w2)
    extra = [helper.make_node("MaxPool", ["t1"], ["t2"], name="n1", kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Conv", ["t2", "w2"], ["y0"], name="n2")]
    save("chain_conv_pool_conv", "Conv", [("x", x)], {"pads": [1, 1, 1, 1], "_inputs": ["x", "w1"]},
         [y3], [("w1", w1), ("w2", w2)], out_names=["t1"], extra_nodes=extra,
         graph_out=["y0"])


def rank0_cases():
    # own generator: the cases above keep their data when these change
    r = np.random.default_rng(20261201)
    a, b = (r.standard_normal(3).astype(np.float32) for _ in range(2))
    # 1-D x 1-D: the product is a scalar (a RESHAPE to rank 0, shape [])
    save("matmul_1d_1d", "MatMul", [("a", a), ("b", b)], {}, [np.array(a @ b, np.float32)])


def lp_ref(x, p, k, strides=None, pads=None, dil=None, ceil=False, auto_pad="NOTSET"):
    """LpPool by its definition: (sum over the window of |x|^p)^(1/p), the
    padding counting as zeros."""
    n = x.ndim - 2
    s = strides or [1] * n
    dl = dil or [1] * n
    pb, pe = pads_for(x.shape[2:], k, s, dl, pads or [0] * 2 * n, auto_pad)
    out = []
    for i in range(n):
        span = x.shape[2 + i] + pb[i] + pe[i] - ((k[i] - 1) * dl[i] + 1)
        o = (-(-span // s[i]) if ceil else span // s[i]) + 1
        if ceil and (o - 1) * s[i] >= x.shape[2 + i] + pb[i]:
            o -= 1
        out.append(o)
    a = np.abs(x.astype(np.float64)) ** p
    N, C = x.shape[:2]
    y = np.zeros([N, C] + out)
    for oi in np.ndindex(*out):
        acc = np.zeros((N, C))
        for ki in np.ndindex(*k):
            pos = [oi[i] * s[i] + ki[i] * dl[i] - pb[i] for i in range(n)]
            if all(0 <= pos[i] < x.shape[2 + i] for i in range(n)):
                acc += a[(slice(None), slice(None)) + tuple(pos)]
        y[(slice(None), slice(None)) + oi] = acc ** (1.0 / p)
    return y


def lppool_cases():
    # own generator: the cases above keep their data when these change
    r = np.random.default_rng(20261202)
    TIGHT = "ok 1e-5 1e-6"  # ONNX Runtime agrees with the references within 1.2e-7

    def x_(*shape):
        return r.standard_normal(shape).astype(np.float32)

    x = x_(1, 3, 7, 8)
    save("lppool_2d_p2", "LpPool", [("x", x)], {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "strides": [2, 2]},
         [lp_ref(x, 2, [3, 3], [2, 2], [1, 1, 1, 1])], opset=18, expect=TIGHT)
    x1 = x_(2, 3, 9)
    save("lppool_1d_p1", "LpPool", [("x", x1)], {"kernel_shape": [3], "p": 1},
         [lp_ref(x1, 1, [3])], opset=11, expect=TIGHT)
    x3 = x_(1, 2, 4, 5, 4)
    save("lppool_3d_p3", "LpPool", [("x", x3)], {"kernel_shape": [2, 2, 2], "p": 3},
         [lp_ref(x3, 3, [2, 2, 2])], opset=18, expect=TIGHT)
    save("lppool_dilated_ceil", "LpPool", [("x", x)],
         {"kernel_shape": [2, 2], "dilations": [2, 2], "strides": [2, 2], "ceil_mode": 1},
         [lp_ref(x, 2, [2, 2], [2, 2], dil=[2, 2], ceil=True)], opset=18, expect=TIGHT)
    save("lppool_same_upper_p4", "LpPool", [("x", x)], {"kernel_shape": [3, 3], "auto_pad": "SAME_UPPER", "p": 4},
         [lp_ref(x, 4, [3, 3], auto_pad="SAME_UPPER")], opset=18, expect=TIGHT)
    xz = x.copy()
    xz[:, :, :4, :4] = 0  # windows of zeros: the root of 0 is 0
    save("lppool_zeros", "LpPool", [("x", xz)], {"kernel_shape": [2, 2], "strides": [2, 2]},
         [lp_ref(xz, 2, [2, 2], [2, 2])], opset=18, expect=TIGHT)
    xh = x_(1, 2, 5, 6).astype(np.float16)
    save("lppool_fp16", "LpPool", [("x", xh)], {"kernel_shape": [2, 3]},
         [lp_ref(xh, 2, [2, 3])], opset=18, dtype=np.float16)
    save("globallppool_p2", "GlobalLpPool", [("x", x)], {},
         [(np.abs(x.astype(np.float64)) ** 2).sum((2, 3), keepdims=True) ** 0.5], opset=2, expect=TIGHT)
    save("globallppool_3d_p3", "GlobalLpPool", [("x", x3)], {"p": 3},
         [(np.abs(x3.astype(np.float64)) ** 3).sum((2, 3, 4), keepdims=True) ** (1 / 3)], opset=2, expect=TIGHT)


def main():
    conv_cases()
    conv_transpose_cases()
    pool_cases()
    matmul_cases()
    norm_cases()
    softmax_cases()
    resize_cases()
    chain_cases()
    fp16_cases()
    edge_cases()
    bad_cases()
    rank0_cases()
    lppool_cases()
    with open(os.path.join(HERE, "cases.txt"), "w") as f:
        f.write("\n".join(CASES) + "\n")
    print("%d cases" % len(CASES))


if __name__ == "__main__":
    sys.exit(main())
