#!/usr/bin/python3
"""Generate an LLM-shaped ONNX model with external data (the large-model corpus).

Graph (Llama-like decoder, static shapes, default opset 13):
  input_ids int64 [B, S] -> Gather(embedding)
  N x decoder block:
    RMSNorm by primitives: Pow(x,2) ReduceMean(-1) Add(eps) Sqrt Div Mul(w)
    q/k/v MatMul projections, Reshape [B,S,h,D], Transpose [B,h,S,D]
    rotary embedding by primitives: Slice halves, Neg, Concat, Mul cos/sin, Add
    grouped-query attention when kv_heads < heads (Unsqueeze Expand Reshape)
    MatMul(q, Transpose(k)) * 1/sqrt(D), causal mask (Where with -inf, or
    Add of a 0/-inf tensor), Softmax(-1), MatMul(p, v), Transpose, Reshape,
    o_proj MatMul, residual Add
    RMSNorm, SiLU-gated MLP: gate MatMul, Sigmoid, Mul, up MatMul, Mul,
    down MatMul, residual Add
  final RMSNorm, lm_head MatMul -> logits float32 [B, S, vocab]

Weights: every tensor of >= 1024 bytes lives in ONE external-data file
(model.bin beside model.onnx), each at an offset aligned to --align (4096 by
default, so it can be mmap'd), written tensor by tensor in bounded chunks:
memory does not grow with the model (a 4.4 GB model needs < 100 MB RSS).
--int8 makes every 2-D weight (embedding, projections, lm_head) int8 with
per-channel float scales and int8 zero points (all 0) behind DequantizeLinear
(axis 1 = output channel for MatMul weights [in, out]; axis 0 = row for the
embedding [vocab, hidden], dequantized before the Gather).
Weights are random (uniform, variance 1/fan_in; fixed seed per tensor), so
the model computes nothing meaningful but its numbers stay well scaled.

Presets (any field can be overridden by its option):
  tiny   hidden 64,   layers 2,  heads 4,  kv 2, ffn 172,  vocab 256,   seq 8
  64mb   hidden 512,  layers 4,  heads 8,  kv 4, ffn 1376,  vocab 4096, seq 16
         (fp32: 16.8 M parameters, 67 MB)
  1b     hidden 2048, layers 16, heads 32, kv 8, ffn 8192,  vocab 32000, seq 32
         (Llama-3.2-1B-like body with a 32k vocabulary and an untied lm_head:
          1.10 G parameters, 4.4 GB fp32, 1.1 GB int8)

--inline puts every weight into model.onnx itself (raw_data, no model.bin;
the model is then built in memory, so only below protobuf's 2 GB).

Outputs in --out DIR: model.onnx, model.bin, input_0.npy (random token ids,
int64 [B, S]) and, with --check: output_0.npy (numpy reference logits, see
llm_reference.py) and ort_output_0.npy (ONNX Runtime, when tools/ort is
installed), with their max |difference| printed and checked against --tol.
The model's metadata_props["ctosa.llm.config"] holds the configuration JSON.

Usage: /usr/bin/python3 tools/models/make_llm.py --preset tiny --out DIR
         [--int8] [--check] [--hidden N --layers N --heads N --kv-heads N
          --ffn N --vocab N --seq N --batch N --opset 13|17|18
          --mask where|add --align BYTES --seed N --inline]
"""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
import numpy as np  # noqa: E402

PRESETS = {
    "tiny": dict(hidden=64, layers=2, heads=4, kv_heads=2, ffn=172, vocab=256, seq=8),
    "64mb": dict(hidden=512, layers=4, heads=8, kv_heads=4, ffn=1376, vocab=4096, seq=16),
    "1b": dict(hidden=2048, layers=16, heads=32, kv_heads=8, ffn=8192, vocab=32000, seq=32),
}
INLINE_LIMIT = 1024          # bytes; smaller tensors stay inside model.onnx
CHUNK_ELEMS = 4 << 20        # elements generated and written per step
RMS_EPS = 1e-5
ROPE_THETA = 10000.0


def tensor_names(layers):
    """Weight names in file order (shared with llm_reference.py)."""
    names = ["model.embed_tokens.weight"]
    for i in range(layers):
        p = f"model.layers.{i}."
        names += [p + "input_layernorm.weight", p + "self_attn.q_proj.weight",
                  p + "self_attn.k_proj.weight", p + "self_attn.v_proj.weight",
                  p + "self_attn.o_proj.weight", p + "post_attention_layernorm.weight",
                  p + "mlp.gate_proj.weight", p + "mlp.up_proj.weight",
                  p + "mlp.down_proj.weight"]
    return names + ["model.norm.weight", "lm_head.weight"]


def rope_tables(seq, dim):
    """cos/sin [S, D] for positions 0..S-1, halves duplicated (rotate_half form)."""
    inv = 1.0 / (ROPE_THETA ** (np.arange(0, dim, 2, dtype=np.float64) / dim))
    ang = np.arange(seq, dtype=np.float64)[:, None] * inv[None, :]
    ang = np.concatenate([ang, ang], axis=1)
    return np.cos(ang).astype(np.float32), np.sin(ang).astype(np.float32)


class BinWriter:
    """Appends tensors to the external-data file at aligned offsets and makes
    the matching TensorProtos; small tensors are made inline instead."""

    def __init__(self, path, location, align):
        self.f = open(path, "wb")
        self.location = location
        self.align = align
        self.pos = 0
        self.initializers = []
        self.external_bytes = 0

    def _pad(self):
        pad = (-self.pos) % self.align
        if pad:
            self.f.write(b"\0" * pad)
            self.pos += pad

    def _external(self, name, onnx_type, dims, nbytes, start):
        from onnx import TensorProto
        t = TensorProto()
        t.name = name
        t.data_type = onnx_type
        t.dims.extend(dims)
        t.data_location = TensorProto.EXTERNAL
        for k, v in (("location", self.location), ("offset", str(start)),
                     ("length", str(nbytes))):
            e = t.external_data.add()
            e.key, e.value = k, v
        self.initializers.append(t)
        self.external_bytes += nbytes

    def add_array(self, name, arr):
        from onnx import numpy_helper
        arr = np.ascontiguousarray(arr)
        if arr.nbytes < INLINE_LIMIT:
            self.initializers.append(numpy_helper.from_array(arr, name))
            return
        from onnx import mapping
        self._pad()
        start = self.pos
        self.f.write(arr.tobytes())
        self.pos += arr.nbytes
        self._external(name, mapping.NP_TYPE_TO_TENSOR_TYPE[arr.dtype], arr.shape,
                       arr.nbytes, start)

    def add_generated(self, name, shape, dtype, gen):
        """gen(row0, row1) returns rows [row0, row1) of a 2-D tensor; called
        in bounded chunks so the whole tensor is never in memory."""
        from onnx import mapping
        rows, cols = shape
        self._pad()
        start = self.pos
        step = max(1, CHUNK_ELEMS // cols)
        for r0 in range(0, rows, step):
            r1 = min(rows, r0 + step)
            block = np.ascontiguousarray(gen(r0, r1), dtype=dtype)
            assert block.shape == (r1 - r0, cols)
            self.f.write(memoryview(block).cast("B"))
            self.pos += block.nbytes
        nbytes = rows * cols * np.dtype(dtype).itemsize
        assert self.pos - start == nbytes
        self._external(name, mapping.NP_TYPE_TO_TENSOR_TYPE[np.dtype(dtype)], shape,
                       nbytes, start)

    def close(self):
        self._pad()
        self.f.close()


def make_weights(cfg, w, seed, int8):
    """Write all weights; returns nothing (initializers collect in w)."""
    H, F, V, L = cfg["hidden"], cfg["ffn"], cfg["vocab"], cfg["layers"]
    D = H // cfg["heads"]
    KV = cfg["kv_heads"] * D
    shapes = {"embed_tokens": (V, H), "q_proj": (H, H), "k_proj": (H, KV), "v_proj": (H, KV),
              "o_proj": (H, H), "gate_proj": (H, F), "up_proj": (H, F), "down_proj": (F, H),
              "lm_head": (H, V)}
    for idx, name in enumerate(tensor_names(L)):
        rng = np.random.default_rng([seed, idx])
        short = name.split(".")[-2]
        if short.endswith("norm") or short == "norm":
            w.add_array(name, (0.8 + 0.4 * rng.random(H, dtype=np.float32)).astype(np.float32))
            continue
        rows, cols = shapes[short]
        # Embedding rows are activations (unit scale); [in, out] weights get
        # variance 1/fan_in; the residual branches' outputs are damped by
        # 1/sqrt(2 L) so the residual stream does not grow with depth.
        fan_in = cols if short == "embed_tokens" else rows
        std = 1.0 if short == "embed_tokens" else 1.0 / np.sqrt(fan_in)
        if short in ("o_proj", "down_proj"):
            std /= np.sqrt(2 * L)
        bound = np.float32(std * np.sqrt(3.0))
        if not int8:
            def gen(r0, r1, rng=rng, bound=bound, cols=cols):
                a = rng.random((r1 - r0, cols), dtype=np.float32)
                a *= 2 * bound
                a -= bound
                return a
            w.add_generated(name, (rows, cols), np.float32, gen)
            continue
        # int8: values uniform in [-127, 127]; per-channel scales around
        # bound/127 (x0.5..1.5) so dequantized weights keep the fp32 scale.
        axis = 0 if short == "embed_tokens" else 1
        nch = rows if axis == 0 else cols
        scale = (bound / 127.0 * (0.5 + rng.random(nch, dtype=np.float32))).astype(np.float32)
        w.add_array(name + "_scale", scale)
        w.add_array(name + "_zero_point", np.zeros(nch, np.int8))

        def gen8(r0, r1, rng=rng, cols=cols):
            a = np.frombuffer(rng.bytes((r1 - r0) * cols), dtype=np.int8).reshape(r1 - r0, cols)
            return np.maximum(a, np.int8(-127))
        w.add_generated(name + "_quantized", (rows, cols), np.int8, gen8)


def build_graph(cfg, w, int8, opset, mask_kind):
    from onnx import TensorProto, helper
    B, S, H, L = cfg["batch"], cfg["seq"], cfg["hidden"], cfg["layers"]
    nh, kvh = cfg["heads"], cfg["kv_heads"]
    D = H // nh
    nodes = []
    counter = [0]
    have = set()  # names of constants already made

    def node(op, inputs, n_out=1, **attrs):
        counter[0] += 1
        outs = [f"{op.lower()}_{counter[0]}" + (f"_{k}" if n_out > 1 else "") for k in range(n_out)]
        nodes.append(helper.make_node(op, inputs, outs, name=f"{op}_{counter[0]}", **attrs))
        return outs[0] if n_out == 1 else outs

    def const(name, arr):
        if name not in have:
            w.add_array(name, np.asarray(arr))
            have.add(name)
        return name

    def weight(name, axis):
        if not int8:
            return name
        return node("DequantizeLinear", [name + "_quantized", name + "_scale",
                                         name + "_zero_point"], axis=axis)

    def reduce_mean_last(x):
        if opset >= 18:
            return node("ReduceMean", [x, const("axes_last", np.array([-1], np.int64))],
                        keepdims=1)
        return node("ReduceMean", [x], axes=[-1], keepdims=1)

    def rmsnorm(x, wname):
        sq = node("Pow", [x, "const_two"])
        ms = reduce_mean_last(sq)
        rms = node("Sqrt", [node("Add", [ms, "const_eps"])])
        return node("Mul", [node("Div", [x, rms]), wname])

    def rope(x):  # x [B, h, S, D]
        lo = node("Slice", [x, "slice_lo_start", "slice_lo_end", "slice_axes"])
        hi = node("Slice", [x, "slice_hi_start", "slice_hi_end", "slice_axes"])
        rot = node("Concat", [node("Neg", [hi]), lo], axis=-1)
        return node("Add", [node("Mul", [x, "rope_cos"]), node("Mul", [rot, "rope_sin"])])

    def heads(x, n):  # [B, S, n*D] -> [B, n, S, D]
        shp = const(f"shape_bs{n}d", np.array([B, S, n, D], np.int64))
        return node("Transpose", [node("Reshape", [x, shp])], perm=[0, 2, 1, 3])

    def repeat_kv(x):  # [B, kvh, S, D] -> [B, nh, S, D]
        if kvh == nh:
            return x
        u = node("Unsqueeze", [x, "axes_2"])
        e = node("Expand", [u, "shape_expand_kv"])
        return node("Reshape", [e, "shape_bhsd"])

    const("const_two", np.array(2.0, np.float32))
    const("const_eps", np.array(RMS_EPS, np.float32))
    const("const_scale", np.array(1.0 / np.sqrt(D), np.float32))
    cos, sin = rope_tables(S, D)
    const("rope_cos", cos)
    const("rope_sin", sin)
    const("slice_lo_start", np.array([0], np.int64))
    const("slice_lo_end", np.array([D // 2], np.int64))
    const("slice_hi_start", np.array([D // 2], np.int64))
    const("slice_hi_end", np.array([D], np.int64))
    const("slice_axes", np.array([-1], np.int64))
    const("shape_bsh", np.array([B, S, H], np.int64))
    if kvh != nh:
        const("axes_2", np.array([2], np.int64))
        const("shape_expand_kv", np.array([B, kvh, nh // kvh, S, D], np.int64))
        const("shape_bhsd", np.array([B, nh, S, D], np.int64))
    causal = np.tril(np.ones((S, S), dtype=bool))
    if mask_kind == "where":
        const("causal_mask", causal)
        const("const_neg_inf", np.array(-np.inf, np.float32))
    else:
        const("causal_mask", np.where(causal, 0.0, -np.inf).astype(np.float32))

    x = node("Gather", [weight("model.embed_tokens.weight", 0), "input_ids"], axis=0)
    for i in range(L):
        p = f"model.layers.{i}."
        h = rmsnorm(x, p + "input_layernorm.weight")
        q = heads(node("MatMul", [h, weight(p + "self_attn.q_proj.weight", 1)]), nh)
        k = heads(node("MatMul", [h, weight(p + "self_attn.k_proj.weight", 1)]), kvh)
        v = heads(node("MatMul", [h, weight(p + "self_attn.v_proj.weight", 1)]), kvh)
        q, k = rope(q), rope(k)
        k, v = repeat_kv(k), repeat_kv(v)
        s = node("MatMul", [q, node("Transpose", [k], perm=[0, 1, 3, 2])])
        s = node("Mul", [s, "const_scale"])
        if mask_kind == "where":
            s = node("Where", ["causal_mask", s, "const_neg_inf"])
        else:
            s = node("Add", [s, "causal_mask"])
        pr = node("Softmax", [s], axis=-1)
        a = node("Transpose", [node("MatMul", [pr, v])], perm=[0, 2, 1, 3])
        a = node("Reshape", [a, "shape_bsh"])
        x = node("Add", [x, node("MatMul", [a, weight(p + "self_attn.o_proj.weight", 1)])])
        h = rmsnorm(x, p + "post_attention_layernorm.weight")
        g = node("MatMul", [h, weight(p + "mlp.gate_proj.weight", 1)])
        u = node("MatMul", [h, weight(p + "mlp.up_proj.weight", 1)])
        m = node("Mul", [node("Mul", [g, node("Sigmoid", [g])]), u])
        x = node("Add", [x, node("MatMul", [m, weight(p + "mlp.down_proj.weight", 1)])])
    h = rmsnorm(x, "model.norm.weight")
    logits = node("MatMul", [h, weight("lm_head.weight", 1)])
    nodes[-1].output[0] = "logits"
    graph = helper.make_graph(
        nodes, "llm",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, [B, S])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [B, S, cfg["vocab"]])],
        initializer=w.initializers)
    model = helper.make_model(graph, producer_name="ctosa-make_llm",
                              opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8  # onnx 1.13 (opset 18) still used IR 8
    helper.set_model_props(model, {"ctosa.llm.config": json.dumps(cfg, sort_keys=True)})
    return model


def param_count(cfg):
    H, F, V, L = cfg["hidden"], cfg["ffn"], cfg["vocab"], cfg["layers"]
    KV = cfg["kv_heads"] * (H // cfg["heads"])
    per = 2 * H * H + 2 * H * KV + 3 * H * F + 2 * H
    return 2 * V * H + L * per + H


def inline_weights(model, bin_path):
    """Moves every external tensor into the protobuf (raw_data). The whole
    model is then built in memory: only for models well under 2 GB."""
    from onnx import TensorProto
    with open(bin_path, "rb") as f:
        for t in model.graph.initializer:
            if t.data_location != TensorProto.EXTERNAL:
                continue
            kv = {e.key: e.value for e in t.external_data}
            f.seek(int(kv["offset"]))
            t.raw_data = f.read(int(kv["length"]))
            del t.external_data[:]
            t.data_location = TensorProto.DEFAULT


def generate(cfg, out, int8, opset, mask_kind, align, seed, inline=False):
    os.makedirs(out, exist_ok=True)
    onnx_path = os.path.join(out, "model.onnx")
    bin_path = os.path.join(out, "model.bin")
    t0 = time.perf_counter()
    w = BinWriter(bin_path + ".tmp", "model.bin", align)
    try:
        make_weights(cfg, w, seed, int8)
        model = build_graph(cfg, w, int8, opset, mask_kind)
    finally:
        w.close()
    os.replace(bin_path + ".tmp", bin_path)
    if inline:
        inline_weights(model, bin_path)
        os.remove(bin_path)
    # Serialized by hand: onnx.save would try to handle external data itself.
    with open(onnx_path + ".tmp", "wb") as f:
        f.write(model.SerializeToString())
    os.replace(onnx_path + ".tmp", onnx_path)
    rng = np.random.default_rng([seed, 999999])
    tokens = rng.integers(0, cfg["vocab"], size=(cfg["batch"], cfg["seq"]), dtype=np.int64)
    common.save_npy(os.path.join(out, "input_0.npy"), tokens)
    return time.perf_counter() - t0, len(model.graph.node)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--preset", choices=sorted(PRESETS), default="tiny")
    for k in ("hidden", "layers", "heads", "kv-heads", "ffn", "vocab", "seq"):
        ap.add_argument("--" + k, type=int)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--out", required=True)
    ap.add_argument("--int8", action="store_true", help="int8 QDQ weights")
    ap.add_argument("--opset", type=int, default=13, choices=(13, 17, 18))
    ap.add_argument("--mask", choices=("where", "add"), default="where")
    ap.add_argument("--align", type=int, default=4096)
    ap.add_argument("--inline", action="store_true",
                    help="weights inside model.onnx (raw_data), no model.bin (< 2 GB only)")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--check", action="store_true",
                    help="onnx checker + numpy reference + ORT, compare")
    ap.add_argument("--tol", type=float, default=1e-4)
    a = ap.parse_args()
    cfg = dict(PRESETS[a.preset])
    for k in ("hidden", "layers", "heads", "kv_heads", "ffn", "vocab", "seq"):
        v = getattr(a, k)
        if v is not None:
            cfg[k] = v
    cfg["batch"] = a.batch
    cfg["int8"] = a.int8
    cfg["mask"] = a.mask
    cfg["opset"] = a.opset
    cfg["rms_eps"] = RMS_EPS
    cfg["rope_theta"] = ROPE_THETA
    if cfg["hidden"] % cfg["heads"] or cfg["heads"] % cfg["kv_heads"] or \
            (cfg["hidden"] // cfg["heads"]) % 2:
        raise SystemExit("make_llm: need hidden % heads == 0, heads % kv_heads == 0, "
                         "even head size")
    if a.align < 1 or a.align & (a.align - 1):
        raise SystemExit("make_llm: --align must be a power of two")
    if a.inline and param_count(cfg) * (1 if a.int8 else 4) > 1_800_000_000:
        raise SystemExit("make_llm: --inline needs a model under 2 GB (protobuf limit)")
    secs, nnodes = generate(cfg, a.out, a.int8, a.opset, a.mask, a.align, a.seed, a.inline)
    bin_file = os.path.join(a.out, "model.bin")
    size_bin = os.path.getsize(bin_file) if os.path.exists(bin_file) else 0
    size_onnx = os.path.getsize(os.path.join(a.out, "model.onnx"))
    meta = {"config": cfg, "preset": a.preset, "seed": a.seed, "align": a.align,
            "parameters": param_count(cfg), "nodes": nnodes, "model_onnx_bytes": size_onnx,
            "model_bin_bytes": size_bin, "seconds_generate": round(secs, 3)}
    common.log(f"make_llm: {a.out}: {param_count(cfg) / 1e6:.2f} M parameters, "
               f"{'int8' if a.int8 else 'fp32'}, {nnodes} nodes, model.onnx "
               f"{size_onnx / 1e3:.1f} KB, model.bin {size_bin / 1e6:.1f} MB, {secs:.1f} s")
    try:
        if a.check:
            check(a, cfg, meta)
    finally:
        common.write_json(os.path.join(a.out, "meta.json"), meta)
    if a.check and meta.get("max_abs_diff_ref_ort_basic", 0.0) > a.tol:
        raise SystemExit(2)


def check(a, cfg, meta):
    import onnx
    import llm_reference
    path = os.path.join(a.out, "model.onnx")
    if a.opset <= 17:
        # By path, so the checker also sees the external-data file. Not with
        # full_check: onnx 1.12 then runs infer_shapes_path, which rewrites
        # the model in place; strict shape inference goes to a scratch file.
        onnx.checker.check_model(path)
        scratch = os.path.join(a.out, ".inferred.onnx")
        onnx.shape_inference.infer_shapes_path(path, scratch, check_type=True, strict_mode=True)
        os.remove(scratch)
        meta["onnx_checker"] = "ok"
        common.log("make_llm: onnx checker and strict shape inference ok")
    else:
        meta["onnx_checker"] = "skipped (onnx 1.12 knows opsets <= 17)"
        common.log("make_llm: onnx 1.12's checker stops at opset 17: not checked")
    tokens = np.load(os.path.join(a.out, "input_0.npy"))
    t = time.perf_counter()
    ref = llm_reference.reference_logits(path, tokens)
    meta["seconds_reference"] = round(time.perf_counter() - t, 3)
    meta["logits_std"] = float(ref.std())
    common.log(f"make_llm: numpy reference {meta['seconds_reference']:.2f} s, "
               f"logits std {ref.std():.3g}")
    common.save_npy(os.path.join(a.out, "output_0.npy"), ref)
    # ORT at "basic" (constant folding, no fusions): its "extended"/"all"
    # levels turn DequantizeLinear->MatMul into int8 kernels with dynamically
    # quantized activations (MatMulIntegerToFloat), which is not the model's
    # float semantics (0.04 off on the tiny int8 model).
    tmpd = os.path.join(a.out, ".ort")
    inp = [os.path.join(a.out, "input_0.npy")]
    outs = common.run_ort(path, inp, tmpd, opt="basic")
    if outs is None:
        meta["ort"] = "not installed"
        common.log("make_llm: ONNX Runtime not installed (tools/ort): reference not cross-checked")
        return
    common.save_npy(os.path.join(a.out, "ort_output_0.npy"), outs[0])
    meta["max_abs_diff_ref_ort_basic"] = diff = common.max_abs_diff(ref, outs[0])
    meta["max_abs_diff_ref_ort_all"] = fused = common.max_abs_diff(
        ref, common.run_ort(path, inp, tmpd, opt="all")[0])
    common.remove_tree(tmpd)
    common.log(f"make_llm: max |numpy reference - ORT(basic)| = {diff:.3g} (tol {a.tol:g}); "
               f"ORT(all) {fused:.3g}")


if __name__ == "__main__":
    main()
