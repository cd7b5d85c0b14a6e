#!/usr/bin/python3
"""Generates the transformer-operator cases of tests/cli_attn_ort.sh:
Attention, RotaryEmbedding, RMSNormalization node tests and a decoder
block built from them with a KV cache; the operator variants (Resize by
interpolation matrices, dilated pooling, ...) and the opset 27/28
operators (CausalConvWithState, LinearAttention, SwiGLU).

One folder per case: model.onnx, input_<name>.npy for every runtime graph
input, output_<i>.npy (the numpy reference below, written from the ONNX
operator definitions, computed in float64 and rounded to the output dtype)
and a line in cases.txt:

    <case> ok <tol> [numpy|ort|twin] [long]
                                      fully delegated, one partition; every
                                      output within tol (relative to the
                                      output's largest magnitude) of ONNX
                                      Runtime and of the numpy reference;
                                      "numpy": ORT cannot run the model
                                      (the definition allows what its kernel
                                      refuses), numpy only; "ort": ONNX
                                      Runtime is the only reference; "twin":
                                      ONNX Runtime runs ort.onnx, the same
                                      node in its com.microsoft domain
                                      (ONNX Runtime 1.30 loads opsets up to
                                      26 only); "long":
                                      only with CTOSA_LONG_TESTS=1;
                                      "spec=S": lowered under spec S instead
                                      of TOSA-1.0+FP
    <case> reject <code> <word>       node n0 falls back with that code and a
                                      reason containing <word>

The models are built with make_node and explicit opset imports (Debian's
onnx 1.12 has no schemas for opset 23/24, so nothing is checked here).

Run: /usr/bin/python3 gen.py
"""
import os
import shutil

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(2317)
CASES = []

NP2ONNX = {
    np.dtype(np.float32): TensorProto.FLOAT,
    np.dtype(np.float16): TensorProto.FLOAT16,
    np.dtype(np.int64): TensorProto.INT64,
    np.dtype(np.int8): TensorProto.INT8,
    np.dtype(np.bool_): TensorProto.BOOL,
}


def rnd(*shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


def save(name, nodes, inputs, outputs, inits=(), opset=23, expect="ok 1e-4", out_types=None):
    """inputs: [(name, array)] fed at run time; outputs: [(name, array)]
    graph outputs with their references (None: no reference, the output's
    dtype from out_types and no shape); inits: [(name, array)]."""
    d = os.path.join(HERE, name)
    if os.path.isdir(d):
        shutil.rmtree(d)
    os.makedirs(d)
    g = helper.make_graph(
        nodes, name,
        [helper.make_tensor_value_info(n, NP2ONNX[a.dtype], a.shape) for n, a in inputs],
        [helper.make_tensor_value_info(n, NP2ONNX[np.asarray(a).dtype], np.asarray(a).shape)
         if a is not None else helper.make_tensor_value_info(n, NP2ONNX[np.dtype(out_types[i])], None)
         for i, (n, a) in enumerate(outputs)],
        [numpy_helper.from_array(a, n) for n, a in inits])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)],
                          producer_name="ctosa-gen")
    m.ir_version = 10
    onnx.save(m, os.path.join(d, "model.onnx"))
    for n, a in inputs:
        np.save(os.path.join(d, "input_%s.npy" % n), a)
    for i, (_, a) in enumerate(outputs):
        if a is None:
            continue
        np.save(os.path.join(d, "output_%d.npy" % i), np.ascontiguousarray(a))
    CASES.append("%s %s" % (name, expect))


# ------------------------------------------------------------ references
# Written from the operator definitions (float64 throughout).

def softmax_rows(x):
    """Softmax over the last axis; a row of only -inf gives zeros (the
    definition's rule for fully masked query rows)."""
    m = np.max(x, axis=-1, keepdims=True)
    m = np.where(np.isneginf(m), 0.0, m)
    e = np.exp(x - m)
    s = e.sum(axis=-1, keepdims=True)
    return e / np.where(s == 0, 1.0, s)


def attention_ref(Q, K, V, mask=None, past_k=None, past_v=None, nonpad=None, scale=None,
                  is_causal=0, q_heads=None, kv_heads=None, softcap=0.0, mode=0):
    """Returns Y, present_key, present_value, qk_matmul_output."""
    Q, K, V = (np.asarray(a, np.float64) for a in (Q, K, V))
    rank = Q.ndim
    if rank == 3:
        B = Q.shape[0]
        Q = Q.reshape(B, Q.shape[1], q_heads, -1).transpose(0, 2, 1, 3)
        K = K.reshape(B, K.shape[1], kv_heads, -1).transpose(0, 2, 1, 3)
        V = V.reshape(B, V.shape[1], kv_heads, -1).transpose(0, 2, 1, 3)
    B, Hq, S, D = Q.shape
    Hkv = K.shape[1]
    if past_k is not None:
        K = np.concatenate([past_k.astype(np.float64), K], axis=2)
        V = np.concatenate([past_v.astype(np.float64), V], axis=2)
    P = 0 if past_k is None else past_k.shape[2]
    T = K.shape[2]
    if scale is None:
        scale = 1.0 / np.sqrt(D)
    reps = Hq // Hkv
    Kr = np.repeat(K, reps, axis=1)  # query head h reads kv head h // reps
    Vr = np.repeat(V, reps, axis=1)
    qk = (Q * np.sqrt(scale)) @ (Kr * np.sqrt(scale)).transpose(0, 1, 3, 2)
    capped = softcap * np.tanh(qk / softcap) if softcap > 0 else qk
    bias = np.zeros((S, T))
    if mask is not None:
        m = mask
        if m.shape[-1] < T:  # shorter masks are padded with False / -inf
            pad = [(0, 0)] * (m.ndim - 1) + [(0, T - m.shape[-1])]
            m = np.pad(m, pad, constant_values=(False if m.dtype == np.bool_ else -np.inf))
        if m.dtype == np.bool_:
            m = np.where(m, 0.0, -np.inf)
        bias = bias + m.astype(np.float64)
    if is_causal or nonpad is not None:
        allow = np.ones((B, 1, S, T), bool)
        for b in range(B):
            off = nonpad[b] - S if (nonpad is not None and past_k is None) else P
            i = np.arange(S)[:, None]
            j = np.arange(T)[None, :]
            if is_causal:
                allow[b, 0] &= j <= i + off
            if nonpad is not None:
                allow[b, 0] &= j < nonpad[b]
        bias = bias + np.where(allow, 0.0, -np.inf)
    biased = capped + bias
    p = softmax_rows(biased)
    Y = p @ Vr
    if rank == 3:
        Y = Y.transpose(0, 2, 1, 3).reshape(B, S, -1)
    qk_out = [qk, capped, biased, p][mode]
    return Y, K, V, qk_out


def rope_ref(x, cos, sin, pos=None, interleaved=0, rot=0, num_heads=0):
    x = np.asarray(x, np.float64)
    shape = x.shape
    if x.ndim == 4:  # [B, H, S, D] -> [B, S, H, D]
        x = x.transpose(0, 2, 1, 3)
    else:
        x = x.reshape(shape[0], shape[1], num_heads, -1)
    D = x.shape[3]
    rot = rot or D
    if pos is not None:
        cos, sin = cos[pos], sin[pos]
    cos = cos.astype(np.float64)[:, :, None, :]
    sin = sin.astype(np.float64)[:, :, None, :]
    xr, rest = x[..., :rot], x[..., rot:]
    if interleaved:
        x1, x2 = xr[..., 0::2], xr[..., 1::2]
    else:
        x1, x2 = xr[..., :rot // 2], xr[..., rot // 2:]
    re = cos * x1 - sin * x2
    im = sin * x1 + cos * x2
    if interleaved:
        out = np.stack([re, im], axis=-1).reshape(xr.shape)
    else:
        out = np.concatenate([re, im], axis=-1)
    y = np.concatenate([out, rest], axis=-1)
    return y.transpose(0, 2, 1, 3) if len(shape) == 4 else y.reshape(shape)


def rms_ref(x, scale, axis=-1, eps=1e-5):
    x = np.asarray(x, np.float64)
    axes = tuple(range(axis % x.ndim, x.ndim))
    return x / np.sqrt((x * x).mean(axis=axes, keepdims=True) + eps) * scale.astype(np.float64)


# ------------------------------------------------------------ Attention

ATTN_OUT = ["Y", "present_key", "present_value", "qk_matmul_output"]


def attn_case(name, ins, attrs, n_out=1, opset=23, dtype=np.float32, expect=None, inits=(),
              **ref):
    """ins: ordered (slot name, array or None); the node has the ONNX input
    order Q, K, V, attn_mask, past_key, past_value, nonpad_kv_seqlen."""
    slots = ["Q", "K", "V", "attn_mask", "past_key", "past_value", "nonpad_kv_seqlen"]
    given = dict(ins)
    init_names = {n for n, _ in inits}
    names = []
    for s in slots:
        names.append(s if (s in given and given[s] is not None) or s in init_names else "")
    while names and not names[-1]:
        names.pop()
    outs = ATTN_OUT[:n_out]
    if n_out == 4 and "past_key" not in given:
        outs = ["Y", "", "", "qk_matmul_output"]
    node = helper.make_node("Attention", names, outs, name="n0", **attrs)
    init_vals = dict(inits)
    y, pk, pv, qk = attention_ref(
        given["Q"], given["K"], given["V"], mask=given.get("attn_mask"), past_k=given.get("past_key"),
        past_v=given.get("past_value"), nonpad=init_vals.get("nonpad_kv_seqlen"), scale=attrs.get("scale"),
        is_causal=attrs.get("is_causal", 0), q_heads=attrs.get("q_num_heads"),
        kv_heads=attrs.get("kv_num_heads"), softcap=attrs.get("softcap", 0.0),
        mode=attrs.get("qk_matmul_output_mode", 0))
    refs = {"Y": y, "present_key": pk, "present_value": pv, "qk_matmul_output": qk}
    outputs = [(o, refs[o].astype(dtype)) for o in outs if o]
    tol = "1e-4" if dtype == np.float32 else "5e-3"
    save(name, [node], [(n, a) for n, a in ins if a is not None], outputs, inits=inits, opset=opset,
         expect=expect or "ok " + tol)


def attention_cases():
    f = np.float32
    B, S, T, D = 2, 3, 5, 8
    q, k, v = rnd(B, 2, S, D), rnd(B, 2, T, D), rnd(B, 2, T, D)
    attn_case("attn_4d_basic", [("Q", q), ("K", k), ("V", v)], {})
    attn_case("attn_24_basic", [("Q", q), ("K", k), ("V", v)], {}, opset=24)
    # 3-D inputs, heads from the attributes; Q/K and V head sizes differ
    attn_case("attn_3d_heads", [("Q", rnd(2, 4, 16)), ("K", rnd(2, 6, 16)), ("V", rnd(2, 6, 12))],
              {"q_num_heads": 4, "kv_num_heads": 4})
    attn_case("attn_3d_gqa", [("Q", rnd(1, 5, 24)), ("K", rnd(1, 5, 12)), ("V", rnd(1, 5, 8))],
              {"q_num_heads": 4, "kv_num_heads": 2})
    attn_case("attn_4d_mqa", [("Q", rnd(2, 4, 3, 5)), ("K", rnd(2, 1, 4, 5)), ("V", rnd(2, 1, 4, 3))], {})
    # masks: bool 2-D with a fully masked row, bool 4-D broadcast over heads,
    # float 3-D with -inf entries and a fully -inf row, float 4-D
    bm = rng.random((S, T)) > 0.4
    bm[:, 0] = True
    bm[1, :] = False
    attn_case("attn_mask_bool_2d", [("Q", q), ("K", k), ("V", v), ("attn_mask", bm)], {})
    bm4 = rng.random((B, 1, S, T)) > 0.3
    attn_case("attn_mask_bool_4d_bcast", [("Q", q), ("K", k), ("V", v), ("attn_mask", bm4)], {})
    fm3 = rnd(2, S, T)
    fm3[0, 1, 2] = -np.inf
    fm3[1, 2, :] = -np.inf
    attn_case("attn_mask_float_3d", [("Q", q), ("K", k), ("V", v), ("attn_mask", fm3)], {})
    attn_case("attn_mask_float_4d", [("Q", q), ("K", k), ("V", v), ("attn_mask", rnd(1, 2, S, T))], {})
    # causal (square and cross-length), causal with a mask
    qs = rnd(B, 2, T, D)
    attn_case("attn_causal", [("Q", qs), ("K", k), ("V", v)], {"is_causal": 1})
    attn_case("attn_causal_cross", [("Q", q), ("K", k), ("V", v)], {"is_causal": 1})
    attn_case("attn_causal_mask", [("Q", q), ("K", k), ("V", v), ("attn_mask", bm4)], {"is_causal": 1})
    attn_case("attn_scale_softcap", [("Q", q * 3), ("K", k * 3), ("V", v), ("attn_mask", rnd(S, T))],
              {"scale": 0.3, "softcap": 2.0})
    # KV cache: past + present outputs, GQA, causal aligned after the past
    P = 4
    pk, pv = rnd(1, 2, P, 6), rnd(1, 2, P, 7)
    attn_case("attn_past_gqa_causal",
              [("Q", rnd(1, 4, 2, 6)), ("K", rnd(1, 2, 2, 6)), ("V", rnd(1, 2, 2, 7)), ("attn_mask", None),
               ("past_key", pk), ("past_value", pv)], {"is_causal": 1}, n_out=3)
    attn_case("attn_past_3d_mask",
              [("Q", rnd(1, 1, 24)), ("K", rnd(1, 1, 12)), ("V", rnd(1, 1, 14)),
               ("attn_mask", rng.random((1, P + 1)) > 0.3), ("past_key", pk), ("past_value", pv)],
              {"q_num_heads": 4, "kv_num_heads": 2}, n_out=3)
    # qk_matmul_output in each mode (softcap and a mask so they all differ)
    for mode in range(4):
        attn_case("attn_qk_mode%d" % mode, [("Q", q * 2), ("K", k * 2), ("V", v), ("attn_mask", fm3)],
                  {"softcap": 1.5, "qk_matmul_output_mode": mode}, n_out=4)
    # opset 24: a mask shorter than the keys (padded with -inf); ONNX
    # Runtime's kernel refuses it, so numpy only
    attn_case("attn_short_mask", [("Q", q), ("K", k), ("V", v), ("attn_mask", rnd(S, T - 2))], {}, opset=24,
              expect="ok 1e-4 numpy")
    # opset 24: nonpad_kv_seqlen known at compile time; at run time it is
    # a data-dependent mask the lowering refuses
    np_len = np.array([3, 5], np.int64)
    attn_case("attn_nonpad_const", [("Q", q), ("K", k), ("V", v)], {}, opset=24,
              inits=[("nonpad_kv_seqlen", np_len)])
    node = helper.make_node("Attention", ["Q", "K", "V", "", "", "", "nonpad_kv_seqlen"], ["Y"], name="n0")
    y = attention_ref(q, k, v, nonpad=np_len)[0].astype(f)
    save("attn_nonpad_runtime", [node], [("Q", q), ("K", k), ("V", v), ("nonpad_kv_seqlen", np_len)],
         [("Y", y)], opset=24, expect="reject needs_constant nonpad_kv_seqlen")
    # fp16 (computed in float inside, like ONNX Runtime)
    h = np.float16
    attn_case("attn_fp16_gqa_past",
              [("Q", rnd(1, 4, 2, 8, dtype=h)), ("K", rnd(1, 2, 2, 8, dtype=h)), ("V", rnd(1, 2, 2, 8, dtype=h)),
               ("attn_mask", rng.random((2, P + 2)) > 0.3), ("past_key", rnd(1, 2, P, 8, dtype=h)),
               ("past_value", rnd(1, 2, P, 8, dtype=h))], {"is_causal": 1}, n_out=3, dtype=h)
    attn_case("attn_fp16_3d_softcap",
              [("Q", rnd(2, 3, 16, dtype=h)), ("K", rnd(2, 4, 8, dtype=h)), ("V", rnd(2, 4, 8, dtype=h)),
               ("attn_mask", rnd(3, 4, dtype=h))], {"q_num_heads": 2, "kv_num_heads": 1, "softcap": 3.0},
              dtype=h)


# ------------------------------------------------------------ RotaryEmbedding

def rope_case(name, x, cos, sin, pos=None, attrs=None, dtype=np.float32, pos_const=True, expect=None):
    attrs = attrs or {}
    ins = [("x", x)]
    inits = [("cos_cache", cos), ("sin_cache", sin)]
    names = ["x", "cos_cache", "sin_cache"]
    if pos is not None:
        names.append("position_ids")
        if pos_const:
            inits.append(("position_ids", pos))
        else:
            ins.append(("position_ids", pos))
    node = helper.make_node("RotaryEmbedding", names, ["y"], name="n0", **attrs)
    y = rope_ref(x, cos, sin, pos, attrs.get("interleaved", 0), attrs.get("rotary_embedding_dim", 0),
                 attrs.get("num_heads", 0)).astype(dtype)
    tol = "1e-4" if dtype == np.float32 else "2e-3"
    save(name, [node], ins, [("y", y)], inits=inits, expect=expect or "ok " + tol)


def rope_tables(n, half, dtype=np.float32):
    theta = np.outer(np.arange(n), 1.0 / 10000 ** (np.arange(half) / half))
    return np.cos(theta).astype(dtype), np.sin(theta).astype(dtype)


def rope_cases():
    B, H, S, D = 2, 3, 4, 8
    c3, s3 = (a.reshape(1, S, D // 2).repeat(B, 0) for a in rope_tables(S, D // 2))
    c3[1] = np.roll(c3[1], 1, axis=0)  # per-batch rows differ
    rope_case("rope_4d", rnd(B, H, S, D), c3, s3)
    rope_case("rope_4d_interleaved", rnd(B, H, S, D), c3, s3, attrs={"interleaved": 1})
    cp, sp = rope_tables(16, 3)
    pos = np.array([[0, 1, 2, 3], [7, 8, 9, 15]], np.int64)
    rope_case("rope_3d_partial_pos", rnd(B, S, H * D), cp, sp, pos,
              {"num_heads": H, "rotary_embedding_dim": 6})
    rope_case("rope_3d_partial_pos_interleaved", rnd(B, S, H * D), cp, sp, pos,
              {"num_heads": H, "rotary_embedding_dim": 6, "interleaved": 1})
    # runtime position ids are int64 data: TOSA-1.0+FP has no int64
    rope_case("rope_pos_runtime", rnd(B, S, H * D), cp, sp, pos, {"num_heads": H, "rotary_embedding_dim": 6},
              pos_const=False, expect="reject int64_not_enabled position_ids")
    # ... and with a spec that has int64 they are gathered at run time
    rope_case("rope_pos_runtime_int64", rnd(B, S, H * D), cp, sp, pos, {"num_heads": H, "rotary_embedding_dim": 6},
              pos_const=False, expect="ok 1e-4 spec=TOSA-1.1+FP+int64")
    h = np.float16
    ch, sh = rope_tables(16, 3, h)
    rope_case("rope_fp16_interleaved_partial", rnd(B, H, S, D, dtype=h), ch, sh, pos,
              {"interleaved": 1, "rotary_embedding_dim": 6}, dtype=h)


# ------------------------------------------------------------ RMSNormalization

def rms_cases():
    x = rnd(2, 3, 8)
    for axis, sshape in ((-1, (8,)), (1, (3, 8))):
        sc = rnd(*sshape)
        node = helper.make_node("RMSNormalization", ["x", "scale"], ["y"], name="n0", axis=axis, epsilon=1e-5)
        save("rms_axis%d" % axis, [node], [("x", x), ("scale", sc)], [("y", rms_ref(x, sc, axis).astype(np.float32))])
    h = np.float16
    xh, sch = rnd(2, 5, 16, dtype=h), rnd(16, dtype=h)
    node = helper.make_node("RMSNormalization", ["x", "scale"], ["y"], name="n0")
    save("rms_fp16", [node], [("x", xh), ("scale", sch)], [("y", rms_ref(xh, sch).astype(h))],
         expect="ok 2e-3")


# ------------------------------------------------------------ decoder block

def decoder_block():
    """Pre-norm decoder layer: RMSNorm -> Q/K/V projections -> rotary on Q
    and K -> causal grouped-query Attention with the KV cache as graph
    inputs/outputs -> output projection + residual -> RMSNorm -> SwiGLU MLP
    (SiLU gate as Sigmoid * x) + residual."""
    S, P, Dm, Hq, Hkv, hd, F = 4, 6, 64, 4, 2, 16, 128
    w = lambda *s: (rnd(*s) / np.sqrt(s[0])).astype(np.float32)  # noqa: E731
    x = rnd(1, S, Dm)
    past_k, past_v = rnd(1, Hkv, P, hd), rnd(1, Hkv, P, hd)
    cos, sin = (a[P:P + S].reshape(1, S, hd // 2) for a in rope_tables(P + S, hd // 2))
    g1, g2 = (1 + 0.1 * rnd(Dm)).astype(np.float32), (1 + 0.1 * rnd(Dm)).astype(np.float32)
    Wq, Wk, Wv, Wo = w(Dm, Hq * hd), w(Dm, Hkv * hd), w(Dm, Hkv * hd), w(Hq * hd, Dm)
    W1, W3, W2 = w(Dm, F), w(Dm, F), w(F, Dm)
    N = helper.make_node
    nodes = [
        N("RMSNormalization", ["x", "g1"], ["h1"], name="norm1", epsilon=1e-6),
        N("MatMul", ["h1", "Wq"], ["q"], name="wq"),
        N("MatMul", ["h1", "Wk"], ["k"], name="wk"),
        N("MatMul", ["h1", "Wv"], ["v"], name="wv"),
        N("RotaryEmbedding", ["q", "cos", "sin"], ["qr"], name="rope_q", num_heads=Hq),
        N("RotaryEmbedding", ["k", "cos", "sin"], ["kr"], name="rope_k", num_heads=Hkv),
        N("Attention", ["qr", "kr", "v", "", "past_key", "past_value"], ["att", "present_key", "present_value"],
          name="attn", is_causal=1, q_num_heads=Hq, kv_num_heads=Hkv),
        N("MatMul", ["att", "Wo"], ["o"], name="wo"),
        N("Add", ["x", "o"], ["r1"], name="res1"),
        N("RMSNormalization", ["r1", "g2"], ["h2"], name="norm2", epsilon=1e-6),
        N("MatMul", ["h2", "W1"], ["gate"], name="w1"),
        N("MatMul", ["h2", "W3"], ["up"], name="w3"),
        N("Sigmoid", ["gate"], ["sg"], name="sig"),
        N("Mul", ["gate", "sg"], ["silu"], name="silu"),
        N("Mul", ["silu", "up"], ["act"], name="glu"),
        N("MatMul", ["act", "W2"], ["down"], name="w2"),
        N("Add", ["r1", "down"], ["y"], name="res2"),
    ]
    h1 = rms_ref(x, g1, eps=1e-6)
    q = rope_ref(h1 @ Wq, cos, sin, num_heads=Hq)
    k = rope_ref(h1 @ Wk, cos, sin, num_heads=Hkv)
    att, pk, pv, _ = attention_ref(q, k, h1 @ Wv, past_k=past_k, past_v=past_v, is_causal=1, q_heads=Hq,
                                   kv_heads=Hkv)
    r1 = x + att @ Wo
    h2 = rms_ref(r1, g2, eps=1e-6)
    gate = h2 @ W1
    y = r1 + (gate / (1 + np.exp(-gate)) * (h2 @ W3)) @ W2
    f = np.float32
    save("decoder_block", nodes,
         [("x", x), ("cos", cos), ("sin", sin), ("past_key", past_k), ("past_value", past_v)],
         [("y", y.astype(f)), ("present_key", pk.astype(f)), ("present_value", pv.astype(f))],
         inits=[("g1", g1), ("g2", g2), ("Wq", Wq), ("Wk", Wk), ("Wv", Wv), ("Wo", Wo), ("W1", W1),
                ("W3", W3), ("W2", W2)])


# ------------------------------------------------------------ variants
# The other operators of the list (normalisations, reductions, scans,
# Einsum, Mod, variadic ops, Resize, pooling) in the variants transformer
# and vision exporters emit. The reference is ONNX Runtime alone ("ort").

def ort_case(name, op, inputs, attrs=None, inits=(), n_out=1, opset=18, out_dtype=None, expect="ok 1e-4 ort",
             in_names=None):
    expect = sampled(name, expect)
    attrs = attrs or {}
    names = in_names or [n for n, _ in inputs] + [n for n, _ in inits]
    outs = ["y%d" % i for i in range(n_out)]
    node = helper.make_node(op, names, outs, name="n0", **attrs)
    dt = out_dtype or [inputs[0][1].dtype] * n_out
    save(name, [node], inputs, [(o, None) for o in outs], inits=inits, opset=opset,
         expect=expect, out_types=dt)


# the variants run by the default suite (every one with CTOSA_LONG_TESTS=1)
SAMPLE = {"ln_fp16_stash", "mvn_default", "rl2_noaxes_nokeep", "cumsum_ex1_rev1", "einsum_1", "mean_3in",
          "resize_linear_pytorch_half_pixel_x", "avgpool_ceil_incl", "swish_alpha", "tscatter_circular",
          "gridsample_bilinear_zeros_ac0", "gridsample_nearest_zeros_ac0", "resize_tf_half_pixel_nn", "resize_tf_half_pixel_nearest",
          "resize_cubic_half_pixel", "resize_cubic_crop_extrap", "resize_cubic_fp16", "resize_linear_antialias_down",
          "maxpool_dil", "avgpool_dil_incl_ceil", "ccws_basic", "linattn_gated_delta", "linattn_gqa", "swiglu_fp16"}


def sampled(name, expect):
    """expect, marked long unless the default suite runs the case."""
    return expect + " long" if expect.startswith("ok") and name not in SAMPLE else expect


def variant_cases():
    x4 = rnd(2, 3, 4, 5)
    for ax in (0, 1, 2, -1):
        ort_case("ln_axis%d" % ax, "LayerNormalization", [("x", x4)],
                 inits=[("s", rnd(*x4.shape[ax:])), ("b", rnd(*x4.shape[ax:]))], attrs={"axis": ax}, n_out=3,
                 opset=17)
    h = np.float16
    ort_case("ln_fp16_stash", "LayerNormalization", [("x", rnd(2, 5, 8, dtype=h))],
             inits=[("s", rnd(8, dtype=h)), ("b", rnd(8, dtype=h))], n_out=3, opset=17, expect="ok 2e-3 ort",
             out_dtype=[h, np.float32, np.float32])  # Mean, InvStdDev in the stash type
    ort_case("groupnorm_21", "GroupNormalization", [("x", rnd(2, 6, 3, 4))],
             inits=[("s", rnd(6)), ("b", rnd(6))], attrs={"num_groups": 3}, opset=21)
    ort_case("mvn_default", "MeanVarianceNormalization", [("x", x4)], opset=13)
    ort_case("mvn_axes12", "MeanVarianceNormalization", [("x", x4)], attrs={"axes": [1, 2]}, opset=13)
    ort_case("lpnorm_p1", "LpNormalization", [("x", x4)], attrs={"axis": 1, "p": 1}, opset=13)
    for op in ("ReduceLogSumExp", "ReduceL1", "ReduceL2", "ReduceSumSquare"):
        short = op[6:].lower()
        ort_case("r%s_axes_keep" % short, op, [("x", x4)], inits=[("axes", np.array([1, -1], np.int64))],
                 opset=18)
        ort_case("r%s_noaxes_nokeep" % short, op, [("x", x4)], attrs={"keepdims": 0}, opset=18)
        ort_case("r%s_13" % short, op, [("x", x4)], attrs={"axes": [2], "keepdims": 0}, opset=13)
    for ex, rev in ((0, 0), (1, 0), (0, 1), (1, 1)):
        ort_case("cumsum_ex%d_rev%d" % (ex, rev), "CumSum", [("x", x4)],
                 inits=[("axis", np.array(2, np.int64))], attrs={"exclusive": ex, "reverse": rev}, opset=14)
    for up, k in ((1, 0), (1, -1), (0, 0), (0, 2)):
        ort_case("trilu_u%d_k%d" % (up, k), "Trilu", [("x", rnd(2, 4, 5))],
                 inits=[("k", np.array(k, np.int64))], attrs={"upper": up}, opset=14)
    for i, (eq, shapes) in enumerate((("bhqd,bhkd->bhqk", [(2, 3, 4, 5), (2, 3, 6, 5)]),
                                      ("bhqk,bhkd->bhqd", [(2, 3, 4, 6), (2, 3, 6, 5)]),
                                      ("bsh,hd->bsd", [(2, 4, 6), (6, 3)]), ("bij->bji", [(2, 3, 5)]),
                                      ("bij->bj", [(2, 3, 4)]), ("i,j->ij", [(3,), (4,)]),
                                      ("...ij,...jk->...ik", [(2, 3, 4), (2, 4, 5)]))):
        # a lone transpose only moves data: no partition of its own
        ort_case("einsum_%d" % i, "Einsum", [("x%d" % j, rnd(*s)) for j, s in enumerate(shapes)],
                 attrs={"equation": eq}, opset=12, expect="reject no_compute compute" if i == 3 else "ok 1e-4 ort")
    ort_case("mod_fmod", "Mod", [("a", rnd(3, 4) * 5), ("b", rnd(4) + 3)], attrs={"fmod": 1}, opset=13)
    for op in ("Min", "Max", "Sum", "Mean"):
        ort_case("%s_3in" % op.lower(), op, [("a", rnd(2, 3, 4)), ("b", rnd(3, 1)), ("c", rnd(4))], opset=13)
    xr = rnd(1, 2, 4, 5)
    empty = np.zeros((0,), np.float32)
    for mode, ctm, nm, sc in (("nearest", "asymmetric", "floor", (2.0, 1.5)),
                              ("nearest", "half_pixel", "round_prefer_floor", (1.5, 2.0)),
                              ("nearest", "align_corners", "round_prefer_ceil", (2.0, 2.0)),
                              ("nearest", "asymmetric", "ceil", (0.5, 0.6)),
                              ("linear", "half_pixel", None, (2.0, 1.5)),
                              ("linear", "pytorch_half_pixel", None, (0.5, 0.8)),
                              ("linear", "align_corners", None, (1.75, 2.0)),
                              ("linear", "asymmetric", None, (2.0, 3.0)),
                              ("linear", "half_pixel_symmetric", None, (1.5, 1.6))):
        attrs = {"mode": mode, "coordinate_transformation_mode": ctm}
        if nm:
            attrs["nearest_mode"] = nm
        ort_case("resize_%s_%s_%s" % (mode, ctm, nm or "x"), "Resize", [("x", xr)], attrs=attrs,
                 inits=[("roi", empty), ("scales", np.array((1, 1) + sc, np.float32))], opset=19)
    # tf_half_pixel_for_nn, the spelling of older definitions and of ONNX
    # Runtime (which refuses tf_half_pixel_for_nearest), is a RESIZE offset
    ort_case("resize_tf_half_pixel_nn", "Resize", [("x", xr)],
             attrs={"mode": "nearest", "coordinate_transformation_mode": "tf_half_pixel_for_nn"},
             inits=[("roi", empty), ("scales", np.array((1, 1, 0.5, 0.6), np.float32))], opset=19)
    xp = rnd(1, 2, 7, 8)
    ort_case("maxpool_ceil", "MaxPool", [("x", xp)],
             attrs={"kernel_shape": [3, 2], "strides": [2, 2], "ceil_mode": 1}, opset=12)
    ort_case("avgpool_ceil_incl", "AveragePool", [("x", xp)],
             attrs={"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1], "ceil_mode": 1,
                    "count_include_pad": 1}, opset=19)
    # GridSample with a run-time grid, slightly beyond [-1, 1] so padding matters
    xg, grid = rnd(2, 3, 5, 6), (rng.random((2, 4, 7, 2)) * 2.4 - 1.2).astype(np.float32)
    grid[0, 0, 0] = [0.0, 0.0]  # x = 2.5 exactly without align_corners (W = 6): nearest rounds to even
    grid[0, 0, 1] = [0.2, -1.0]  # y = -0.5 on the edge
    for mode, pad, align, opset in (("bilinear", "zeros", 0, 16), ("bilinear", "border", 1, 16),
                                    ("linear", "zeros", 1, 20), ("linear", "border", 0, 22),
                                    ("nearest", "zeros", 0, 20), ("nearest", "border", 1, 16)):
        ort_case("gridsample_%s_%s_ac%d" % (mode, pad, align), "GridSample", [("x", xg), ("grid", grid)],
                 attrs={"mode": mode, "padding_mode": pad, "align_corners": align}, opset=opset)
    ort_case("gridsample_reflection", "GridSample", [("x", xg), ("grid", grid)],
             attrs={"padding_mode": "reflection"}, opset=20, expect="reject unsupported_attribute reflection")
    ort_case("swish_alpha", "Swish", [("x", rnd(2, 3, 4) * 3)], attrs={"alpha": 0.7}, opset=24)
    ort_case("swish", "Swish", [("x", rnd(2, 3, 4) * 3)], opset=24)
    cache, upd = rnd(2, 3, 6, 4), rnd(2, 3, 2, 4)
    ort_case("tscatter_linear", "TensorScatter", [("cache", cache), ("upd", upd)],
             inits=[("wi", np.array([1, 4], np.int64))], opset=24)
    ort_case("tscatter_circular", "TensorScatter", [("cache", cache), ("upd", upd)],
             inits=[("wi", np.array([5, 2], np.int64))], attrs={"mode": "circular"}, opset=24)
    ort_case("tscatter_noidx_axis1", "TensorScatter", [("cache", rnd(2, 6, 3)), ("upd", rnd(2, 2, 3))],
             attrs={"axis": 1}, opset=24)
    ort_case("tscatter_runtime_idx", "TensorScatter",
             [("cache", cache), ("upd", upd), ("wi", np.array([1, 4], np.int64))], opset=24,
             expect="reject needs_constant wi")


# ------------------------------------------------------------ Resize by matrices
# Cubic, antialiasing, extrapolation: the reference follows the definition's
# own formulation (the n input samples nearest to the original coordinate,
# edge-padded, weighted by the mode's coefficients).

def cubic_w(t, a):
    t = abs(t)
    if t <= 1:
        return ((a + 2) * t - (a + 3)) * t * t + 1
    if t < 2:
        return ((a * t - 5 * a) * t + 8 * a) * t - 4 * a
    return 0.0


def resize_coeffs(mode, ratio, scale, a, antialias, nearest):
    s = min(scale, 1.0) if antialias else 1.0
    if mode == "nearest":
        if ratio == 1:
            return [0.0, 1.0]
        up = {"round_prefer_floor": ratio > 0.5, "round_prefer_ceil": ratio >= 0.5, "floor": False,
              "ceil": True}[nearest]
        return [0.0, 1.0] if up else [1.0, 0.0]
    if mode == "linear":
        start = int(np.floor(-1 / s) + 1)
        c = [max(0.0, 1 - abs((i - ratio) * s)) for i in range(start, 2 - start)]
    else:
        start = int(np.floor(-2 / s) + 1)
        c = [cubic_w((i - ratio) * s, a) for i in range(start, 2 - start)]
    c = np.array(c)
    return c / c.sum() if s < 1 else c


def resize_matrix(n_in, n_out, scale, length, mode, ctm, nearest="round_prefer_floor", a=-0.75, exclude=0,
                  antialias=0, roi=(0.0, 1.0)):
    """[n_out, n_in] weights and the rows outside the input (tf_crop_and_resize)."""
    M = np.zeros((n_out, n_in))
    outside = np.zeros(n_out, bool)
    for x in range(n_out):
        if ctm == "asymmetric":
            xo = x / scale
        elif ctm == "pytorch_half_pixel":
            xo = (x + 0.5) / scale - 0.5 if n_out > 1 else 0.0
        elif ctm == "align_corners":
            xo = x * (n_in - 1) / (length - 1) if length > 1 else 0.0
        elif ctm == "tf_half_pixel_for_nearest":
            xo = (x + 0.5) / scale
        elif ctm == "half_pixel_symmetric":
            adj = n_out / (scale * n_in)
            xo = n_in / 2 * (1 - adj) + (x + 0.5) / scale - 0.5
        elif ctm == "tf_crop_and_resize":
            xo = (roi[0] * (n_in - 1) + x * (roi[1] - roi[0]) * (n_in - 1) / (n_out - 1) if n_out > 1
                  else 0.5 * (roi[0] + roi[1]) * (n_in - 1))
            if xo < 0 or xo > n_in - 1:
                outside[x] = True
                continue
        else:
            xo = (x + 0.5) / scale - 0.5
        ratio = xo - np.floor(xo)
        if ratio == 0:
            ratio = 1.0
        c = np.array(resize_coeffs(mode, ratio, scale, a, antialias, nearest), np.float64)
        n = len(c)
        lo = int(np.floor(xo))
        cand = sorted(range(lo - n - 1, lo + n + 2), key=lambda i: (abs(xo - i), i))[:n]
        idx = np.array(sorted(cand))
        if exclude:
            c = np.where((idx >= 0) & (idx < n_in), c, 0.0)
            c = c / c.sum()
        for w, i in zip(c, idx):
            M[x, min(max(i, 0), n_in - 1)] += w
    return M, outside


def resize_ref(x, out_shape, scales, from_scales, extrapolation=0.0, roi=None, **kw):
    y = np.asarray(x, np.float64)
    outside_any = np.zeros(out_shape, bool)
    for ax in range(x.ndim):
        n_in, n_out = x.shape[ax], out_shape[ax]
        length = n_in * scales[ax] if from_scales else n_out
        r = (roi[ax], roi[x.ndim + ax]) if roi is not None else (0.0, 1.0)
        M, out = resize_matrix(n_in, n_out, scales[ax], length, roi=r, **kw)
        y = np.moveaxis(np.tensordot(M, np.moveaxis(y, ax, 0), axes=1), 0, ax)
        sh = [1] * x.ndim
        sh[ax] = n_out
        outside_any |= out.reshape(sh)
    return np.where(outside_any, extrapolation, y)


def resize_case(name, x, attrs, scales=None, sizes=None, roi=None, axes=None, opset=19, tol=None, expect=None):
    """scales / sizes per listed axis (all axes when axes is None). ONNX
    Runtime knows tf_half_pixel_for_nearest by its older name only: the
    reference alone checks that spelling."""
    names = ["x", "roi" if roi is not None else "", "scales" if scales is not None else ""]
    inits = []
    if roi is not None:
        inits.append(("roi", np.array(roi, np.float32)))
    if scales is not None:
        inits.append(("scales", np.array(scales, np.float32)))
    if sizes is not None:
        names.append("sizes")
        inits.append(("sizes", np.array(sizes, np.int64)))
    while names and not names[-1]:
        names.pop()
    if axes is not None:
        attrs = dict(attrs, axes=axes)
    node = helper.make_node("Resize", names, ["y"], name="n0", **attrs)
    ax = axes if axes is not None else list(range(x.ndim))
    sc = [1.0] * x.ndim
    out = list(x.shape)
    for i, a in enumerate(ax):
        if scales is not None:
            sc[a] = float(np.float32(scales[i]))
            out[a] = int(np.floor(x.shape[a] * sc[a] + 1e-9))
        else:
            out[a] = sizes[i]
            sc[a] = sizes[i] / x.shape[a]
    full_roi = None
    if roi is not None:
        full_roi = [0.0] * x.ndim + [1.0] * x.ndim
        for i, a in enumerate(ax):
            full_roi[a], full_roi[x.ndim + a] = roi[i], roi[len(ax) + i]
    y = resize_ref(x, out, sc, scales is not None, extrapolation=attrs.get("extrapolation_value", 0.0),
                   roi=full_roi, mode=attrs.get("mode", "nearest"),
                   ctm=attrs.get("coordinate_transformation_mode", "half_pixel"),
                   nearest=attrs.get("nearest_mode", "round_prefer_floor"), a=attrs.get("cubic_coeff_a", -0.75),
                   exclude=attrs.get("exclude_outside", 0), antialias=attrs.get("antialias", 0))
    tol = tol or ("1e-4" if x.dtype == np.float32 else "2e-3")
    if attrs.get("coordinate_transformation_mode") == "tf_half_pixel_for_nearest":
        tol += " numpy"
    save(name, [node], [("x", x)], [("y", y.astype(x.dtype))], inits=inits, opset=opset,
         expect=sampled(name, expect or "ok " + tol))


def resize_matrix_cases():
    x = rnd(1, 2, 5, 6)
    cases = []
    for ctm in ("half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "half_pixel_symmetric",
                "tf_half_pixel_for_nearest"):
        cases.append(("cubic_" + ctm, {"mode": "cubic", "coordinate_transformation_mode": ctm},
                      dict(scales=[1, 1, 1.6, 2.5])))
    cases += [
        ("cubic_a05_exclude", {"mode": "cubic", "cubic_coeff_a": -0.5, "exclude_outside": 1},
         dict(scales=[1, 1, 2.0, 1.5])),
        ("cubic_down_exclude", {"mode": "cubic", "exclude_outside": 1}, dict(scales=[1, 1, 0.6, 0.5])),
        ("cubic_sizes", {"mode": "cubic"}, dict(sizes=[1, 2, 9, 4])),
        ("cubic_sizes_ac", {"mode": "cubic", "coordinate_transformation_mode": "align_corners"},
         dict(sizes=[1, 2, 3, 11])),
        ("cubic_1d_w", {"mode": "cubic"}, dict(scales=[3.0], axes=[3])),
        ("cubic_1d_h_sizes", {"mode": "cubic"}, dict(sizes=[7], axes=[2])),
        ("cubic_crop_extrap", {"mode": "cubic", "coordinate_transformation_mode": "tf_crop_and_resize",
                               "extrapolation_value": 10.0},
         dict(sizes=[6, 5], axes=[2, 3], roi=[-0.2, 0.1, 0.9, 1.3])),
        ("cubic_antialias_down", {"mode": "cubic", "antialias": 1}, dict(scales=[1, 1, 0.6, 0.4])),
        ("linear_antialias_down", {"mode": "linear", "antialias": 1}, dict(scales=[1, 1, 0.5, 0.35])),
        ("linear_crop_extrap", {"mode": "linear", "coordinate_transformation_mode": "tf_crop_and_resize",
                                "extrapolation_value": -3.0},
         dict(sizes=[1, 2, 4, 7], roi=[0, 0, -0.3, 0.2, 1, 1, 0.8, 1.4])),
        ("nearest_crop_extrap", {"mode": "nearest", "coordinate_transformation_mode": "tf_crop_and_resize"},
         dict(sizes=[3, 8], axes=[2, 3], roi=[0.1, -0.5, 0.7, 1.5])),
        ("linear_3d", {"mode": "linear"}, dict(scales=[1, 2.0, 0.5], x=rnd(2, 3, 8))),
        ("linear_channels", {"mode": "linear"}, dict(scales=[1, 2.0, 1, 1])),
        ("nearest_down20x", {"mode": "nearest"}, dict(sizes=[1, 2, 1, 1], x=rnd(1, 2, 40, 42))),
    ]
    for name, attrs, kw in cases:
        xx = kw.pop("x", x)
        resize_case("resize_" + name, xx, attrs, **kw)
    h = np.float16
    resize_case("resize_cubic_fp16", rnd(1, 2, 5, 6, dtype=h), {"mode": "cubic"}, scales=[1, 1, 2.0, 1.5])
    resize_case("resize_cubic_fp16_antialias", rnd(1, 3, 8, 7, dtype=h), {"mode": "cubic", "antialias": 1},
                sizes=[5, 3], axes=[2, 3])
    # the coordinate mode in the definition's current spelling, on RESIZE
    resize_case("resize_tf_half_pixel_nearest", rnd(1, 2, 4, 5), {"mode": "nearest",
                                                "coordinate_transformation_mode": "tf_half_pixel_for_nearest"},
                scales=[1, 1, 0.5, 0.6])
    resize_case("resize_tf_half_pixel_nearest_up", x, {"mode": "nearest",
                                                       "coordinate_transformation_mode": "tf_half_pixel_for_nearest"},
                scales=[1, 1, 2.0, 1.5])
    # an integer tensor cannot take the matrices
    save("resize_cubic_int8", [helper.make_node("Resize", ["x", "", "scales"], ["y"], name="n0", mode="cubic")],
         [("x", (rnd(1, 1, 4, 4) * 20).astype(np.int8))], [("y", None)],
         inits=[("scales", np.array([1, 1, 2, 2], np.float32))], opset=19, out_types=[np.int8],
         expect="reject unsupported_dtype float")


# ------------------------------------------------------------ dilated pooling

def pool_dilation_cases():
    xp = rnd(1, 2, 9, 10)
    h = np.float16
    for name, op, attrs, x, opset in (
            ("maxpool_dil", "MaxPool", {"kernel_shape": [3, 2], "strides": [2, 2], "dilations": [2, 1],
                                        "ceil_mode": 1}, xp, 12),
            ("maxpool_dil_pads", "MaxPool", {"kernel_shape": [2, 3], "strides": [1, 3], "dilations": [3, 2],
                                             "pads": [1, 1, 1, 2]}, xp, 12),
            # (ONNX Runtime sizes SAME padding from the undilated kernel,
            # against the definition's output size ceil(in / stride))
            ("maxpool_dil_valid", "MaxPool", {"kernel_shape": [3, 3], "dilations": [2, 2], "auto_pad": "VALID"},
             xp, 12),
            ("maxpool_dil_1d", "MaxPool", {"kernel_shape": [3], "strides": [2], "dilations": [3], "pads": [1, 2],
                                           "ceil_mode": 1}, rnd(2, 3, 17), 12),
            ("maxpool_dil_3d", "MaxPool", {"kernel_shape": [2, 2, 2], "dilations": [2, 1, 2], "strides": [1, 2, 1]},
             rnd(1, 2, 5, 6, 7), 12),
            ("maxpool_dil_fp16", "MaxPool", {"kernel_shape": [2, 2], "dilations": [2, 3], "pads": [1, 1, 1, 1]},
             rnd(1, 3, 8, 9, dtype=h), 12),
            ("avgpool_dil_excl", "AveragePool", {"kernel_shape": [2, 2], "dilations": [2, 2], "pads": [1, 0, 1, 0]},
             xp, 19),
            ("avgpool_dil_incl_ceil", "AveragePool", {"kernel_shape": [3, 2], "strides": [2, 2], "dilations": [2, 3],
                                                      "pads": [2, 1, 1, 1], "count_include_pad": 1, "ceil_mode": 1},
             xp, 19),
            ("avgpool_dil_excl_ceil", "AveragePool", {"kernel_shape": [3, 3], "strides": [3, 2], "dilations": [2, 2],
                                                      "pads": [2, 1, 0, 1], "ceil_mode": 1}, xp, 19),
            ("avgpool_dil_1d_fp16", "AveragePool", {"kernel_shape": [4], "dilations": [2], "pads": [3, 1],
                                                    "count_include_pad": 1}, rnd(2, 3, 15, dtype=h), 19),
            ("avgpool_dil_3d", "AveragePool", {"kernel_shape": [2, 2, 2], "dilations": [1, 2, 2], "pads": [1, 1, 0, 0, 1, 1]},
             rnd(1, 2, 4, 6, 7), 19)):
        tol = "2e-3 ort" if x.dtype == h else "1e-4 ort"
        ort_case(name, op, [("x", x)], attrs=attrs, opset=opset, expect="ok " + tol)
    # dilations on an AveragePool before opset 19 are not in the definition
    ort_case("avgpool_dil_opset11", "AveragePool", [("x", xp)], attrs={"kernel_shape": [2, 2], "dilations": [2, 2]},
             opset=11, expect="reject unsupported_attribute dilations")


# ------------------------------------------------------------ opset 27 / 28 operators
# ONNX Runtime 1.30 loads models up to opset 26, so these are checked
# against numpy references of the definitions and, where ONNX Runtime has a
# kernel of the same operator in its com.microsoft domain, against that
# kernel on a twin model (ort.onnx; "twin" in cases.txt).

def save_twin(name, node, inputs, outputs, inits=()):
    """The same node in the com.microsoft domain at opset 21, as ort.onnx."""
    d = os.path.join(HERE, name)
    tw = helper.make_node(node.op_type, list(node.input), list(node.output), name="n0", domain="com.microsoft")
    tw.attribute.extend(node.attribute)
    g = helper.make_graph(
        [tw], name, [helper.make_tensor_value_info(n, NP2ONNX[a.dtype], a.shape) for n, a in inputs],
        [helper.make_tensor_value_info(n, NP2ONNX[a.dtype], a.shape) for n, a in outputs],
        [numpy_helper.from_array(a, n) for n, a in inits])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid("com.microsoft", 1)],
                          producer_name="ctosa-gen")
    m.ir_version = 10
    onnx.save(m, os.path.join(d, "ort.onnx"))


def causal_conv_ref(x, w, b=None, past=None, act="none"):
    x64 = np.asarray(x, np.float64)
    k = w.shape[2]
    pad = np.zeros(x.shape[:2] + (k - 1,)) if past is None else np.asarray(past, np.float64)
    p = np.concatenate([pad, x64], axis=2)
    L = x.shape[2]
    y = sum(p[:, :, j:j + L] * w[:, 0, j].astype(np.float64)[None, :, None] for j in range(k))
    if b is not None:
        y = y + b.astype(np.float64)[None, :, None]
    if act in ("silu", "swish"):
        y = y / (1 + np.exp(-y))
    return y.astype(x.dtype), p[:, :, L:].astype(x.dtype)


def causal_conv_case(name, B, C, L, k, bias=True, past=True, act=None, dtype=np.float32, w_runtime=False,
                     twin=True):
    x, w = rnd(B, C, L, dtype=dtype), rnd(C, 1, k, dtype=dtype)
    b = rnd(C, dtype=dtype) if bias else None
    ps = rnd(B, C, k - 1, dtype=dtype) if past else None
    names = ["x", "w", "b" if bias else "", "past" if past else ""]
    while not names[-1]:
        names.pop()
    attrs = {"activation": act} if act else {}
    node = helper.make_node("CausalConvWithState", names, ["y", "state"], name="n0", **attrs)
    y, s = causal_conv_ref(x, w, b, ps, act or "none")
    ins = [("x", x)] + ([("past", ps)] if past else [])
    inits = [("w", w)] + ([("b", b)] if bias else [])
    if w_runtime:
        ins, inits = ins + [("w", w)], [i for i in inits if i[0] != "w"]
    tol = "1e-4" if dtype == np.float32 else "2e-3"
    save(name, [node], ins, [("y", y), ("state", s)], inits=inits, opset=27,
         expect=sampled(name, "ok %s%s" % (tol, " twin" if twin else " numpy")))
    if twin:
        save_twin(name, node, ins, [("y", y), ("state", s)], inits)


def linear_attention_ref(q, k, v, past=None, decay=None, beta=None, erase=None, q_heads=1, kv_heads=1,
                         rule="gated_delta", scale=0.0):
    B, T, _ = q.shape
    dk, dv, G = q.shape[2] // q_heads, v.shape[2] // kv_heads, q_heads // kv_heads
    f = lambda a, h: np.asarray(a, np.float64).reshape(B, T, h, -1).transpose(0, 2, 1, 3)  # noqa: E731
    q4, k4, v4 = f(q, q_heads), f(k, kv_heads), f(v, kv_heads)
    S = np.zeros((B, kv_heads, dk, dv)) if past is None else np.asarray(past, np.float64).copy()
    sc = scale or 1 / np.sqrt(dk)
    out = np.zeros((B, q_heads, T, dv))
    g4 = f(decay, kv_heads) if decay is not None else None
    b4 = np.broadcast_to(f(beta, beta.shape[2]), (B, kv_heads, T, 1)) if beta is not None else None
    e4 = f(erase, kv_heads) if erase is not None else None
    for t in range(T):
        if g4 is not None:
            S = S * np.exp(g4[:, :, t, :])[..., None]
        vt = v4[:, :, t, :]
        if b4 is not None:
            ke = k4[:, :, t, :] * (e4[:, :, t, :] if e4 is not None else 1)
            vt = b4[:, :, t, :] * (vt - np.einsum("bhdm,bhd->bhm", S, ke))
        S = S + k4[:, :, t, :, None] * vt[:, :, None, :]
        out[:, :, t, :] = sc * np.einsum("bhd,bhdm->bhm", q4[:, :, t, :], np.repeat(S, G, axis=1))
    y = out.transpose(0, 2, 1, 3).reshape(B, T, q_heads * dv)
    return y.astype(q.dtype), S.astype(past.dtype if past is not None else q.dtype)


def l2n(x, heads):
    B, T, hd = x.shape
    x4 = x.astype(np.float64).reshape(B, T, heads, -1)
    return (x4 / np.maximum(np.linalg.norm(x4, axis=-1, keepdims=True), 1e-6)).reshape(B, T, hd).astype(x.dtype)


def linear_attention_case(name, B, T, Hq, Hkv, dk, dv, rule="gated_delta", per_head_decay=False, beta_one=False,
                          past=False, scale=None, erase=False, dtype=np.float32, twin=True):
    q, v = rnd(B, T, Hq * dk, dtype=dtype), rnd(B, T, Hkv * dv, dtype=dtype)
    k = rnd(B, T, Hkv * dk, dtype=dtype)
    gated, delta = rule in ("gated", "gated_delta"), rule in ("delta", "gated_delta")
    if delta:
        k = l2n(k, Hkv)
    ins = [("query", q), ("key", k), ("value", v)]
    slots = {"past_state": rnd(B, Hkv, dk, dv, dtype=dtype) * dtype(0.1) if past else None,
             "decay": (-np.abs(rnd(B, T, Hkv if per_head_decay else Hkv * dk)) * 0.1).astype(dtype) if gated else None,
             "beta": rng.random((B, T, 1 if beta_one else Hkv)).astype(dtype) if delta else None,
             "erase_gate": rng.random((B, T, Hkv * dk)).astype(dtype) if erase else None}
    names = ["query", "key", "value"] + [s if slots[s] is not None else "" for s in slots]
    while not names[-1]:
        names.pop()
    ins += [(s, a) for s, a in slots.items() if a is not None]
    attrs = {"q_num_heads": Hq, "kv_num_heads": Hkv, "update_rule": rule}
    if scale is not None:
        attrs["scale"] = scale
    node = helper.make_node("LinearAttention", names, ["y", "present_state"], name="n0", **attrs)
    y, s = linear_attention_ref(q, k, v, slots["past_state"], slots["decay"], slots["beta"], slots["erase_gate"],
                                Hq, Hkv, rule, scale or 0.0)
    tol = "1e-4" if dtype == np.float32 else "5e-3"
    save(name, [node], ins, [("y", y), ("present_state", s)], opset=27,
         expect=sampled(name, "ok %s%s" % (tol, " twin" if twin else " numpy")))
    if twin:
        save_twin(name, node, ins, [("y", y), ("present_state", s)])


def opset27_cases():
    causal_conv_case("ccws_basic", 2, 6, 5, 4)
    causal_conv_case("ccws_silu_nopast", 1, 8, 7, 3, past=False, act="silu")
    causal_conv_case("ccws_swish_nobias_decode", 2, 5, 1, 4, bias=False, act="swish")
    causal_conv_case("ccws_runtime_w", 1, 4, 6, 2, w_runtime=True, twin=False)
    causal_conv_case("ccws_fp16", 2, 6, 5, 4, act="silu", dtype=np.float16)
    linear_attention_case("linattn_linear", 2, 4, 4, 4, 8, 8, rule="linear")
    linear_attention_case("linattn_gated", 2, 4, 4, 4, 8, 8, rule="gated")
    linear_attention_case("linattn_gated_head", 2, 4, 4, 4, 8, 8, rule="gated", per_head_decay=True)
    linear_attention_case("linattn_delta", 2, 4, 4, 4, 8, 8, rule="delta")
    linear_attention_case("linattn_gated_delta", 2, 4, 4, 4, 8, 8)
    linear_attention_case("linattn_beta_one", 2, 4, 4, 4, 8, 8, beta_one=True)
    linear_attention_case("linattn_gqa", 2, 4, 8, 4, 8, 6, past=True)
    linear_attention_case("linattn_mqa_decode", 2, 1, 8, 1, 8, 8, past=True)
    linear_attention_case("linattn_scale_past", 1, 6, 2, 2, 4, 5, past=True, scale=0.25)
    linear_attention_case("linattn_erase", 1, 3, 2, 2, 4, 4, erase=True, twin=False)
    linear_attention_case("linattn_fp16", 1, 4, 4, 2, 8, 8, past=True, dtype=np.float16)
    for name, alpha, dtype in (("swiglu", None, np.float32), ("swiglu_alpha", 0.5, np.float32),
                               ("swiglu_fp16", None, np.float16)):
        a, b = rnd(2, 3, 8, dtype=dtype) * dtype(3), rnd(2, 3, 8, dtype=dtype)
        attrs = {"alpha": alpha} if alpha else {}
        node = helper.make_node("SwiGLU", ["a", "b"], ["y"], name="n0", **attrs)
        a64 = a.astype(np.float64)
        y = a64 / (1 + np.exp(-(alpha or 1.0) * a64)) * b
        save(name, [node], [("a", a), ("b", b)], [("y", y.astype(dtype))], opset=28,
             expect=sampled(name, "ok %s numpy" % ("1e-4" if dtype == np.float32 else "2e-3")))


def main():
    attention_cases()
    rope_cases()
    rms_cases()
    decoder_block()
    variant_cases()
    resize_matrix_cases()
    pool_dilation_cases()
    opset27_cases()
    with open(os.path.join(HERE, "cases.txt"), "w") as f:
        f.write("\n".join(CASES) + "\n")
    # folders of cases no longer generated go
    names = {c.split()[0] for c in CASES}
    for e in os.listdir(HERE):
        if os.path.isfile(os.path.join(HERE, e, "model.onnx")) and e not in names:
            shutil.rmtree(os.path.join(HERE, e))
    print("%d cases" % len(CASES))


if __name__ == "__main__":
    main()
