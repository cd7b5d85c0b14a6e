#!/usr/bin/python3
"""numpy reference for the models made by make_llm.py: logits for given
token ids, computed from the model's own files (the ONNX protobuf for the
configuration and inline tensors, the external-data file memory-mapped for
the weights), so a lowered TOSA graph can be checked against it without
ONNX Runtime and without loading a multi-GB model into memory.

It reads tensors by the names make_llm.py gives them but computes the
network from its own description (the same one the generator's docstring
gives), op for op in the same order as the ONNX graph, in float32 by default
(float64 with --float64, for an error-free reference).

Usage: /usr/bin/python3 tools/models/llm_reference.py MODEL.onnx
         [--tokens TOKENS.npy] [--out LOGITS.npy] [--float64]
TOKENS defaults to input_0.npy beside the model; OUT to stdout summary only.
"""
import argparse
import json
import os
import sys

import numpy as np

_NP = {1: np.float32, 2: np.uint8, 3: np.int8, 6: np.int32, 7: np.int64, 9: np.bool_,
       11: np.float64}


class Weights:
    """name -> array; external tensors are np.memmap views (no copy)."""

    def __init__(self, model_path):
        import onnx
        from onnx import numpy_helper
        self.dir = os.path.dirname(os.path.abspath(model_path))
        m = onnx.load(model_path, load_external_data=False)
        props = {p.key: p.value for p in m.metadata_props}
        if "ctosa.llm.config" not in props:
            raise SystemExit(f"llm_reference: {model_path}: no ctosa.llm.config metadata "
                             "(not made by make_llm.py)")
        self.cfg = json.loads(props["ctosa.llm.config"])
        self.t = {}
        self.maps = {}
        for t in m.graph.initializer:
            if t.data_location == onnx.TensorProto.EXTERNAL:
                self.t[t.name] = self._external(model_path, t)
            else:
                self.t[t.name] = numpy_helper.to_array(t)

    def _external(self, model_path, t):
        kv = {e.key: e.value for e in t.external_data}
        loc = kv.get("location", "")
        if not loc or os.path.isabs(loc) or ".." in loc.split("/"):
            raise SystemExit(f"llm_reference: {model_path}: tensor {t.name}: bad location {loc!r}")
        path = os.path.join(self.dir, loc)
        dtype = np.dtype(_NP[t.data_type])
        shape = tuple(t.dims)
        n = int(np.prod(shape)) * dtype.itemsize
        off = int(kv.get("offset", "0"))
        if int(kv.get("length", n)) != n or off + n > os.path.getsize(path):
            raise SystemExit(f"llm_reference: {model_path}: tensor {t.name}: range "
                             f"{off}+{n} does not fit {loc}")
        if path not in self.maps:
            self.maps[path] = np.memmap(path, dtype=np.uint8, mode="r")
        return self.maps[path][off:off + n].view(dtype).reshape(shape)

    def dense(self, name, axis, dt):
        """A 2-D weight as float: plain, or dequantized from int8."""
        if name in self.t:
            return np.asarray(self.t[name], dtype=dt)
        q = self.t[name + "_quantized"]
        s = self.t[name + "_scale"].astype(dt)
        z = self.t[name + "_zero_point"]
        shp = (-1, 1) if axis == 0 else (1, -1)
        w = np.asarray(q, dtype=dt)  # int8 -> float is exact, as is the
        if np.any(z):                # subtraction of an int8 zero point
            w -= z.astype(dt).reshape(shp)
        w *= s.reshape(shp)
        return w

    def embed(self, tokens, dt):
        name = "model.embed_tokens.weight"
        if name in self.t:
            return np.asarray(self.t[name][tokens], dtype=dt)
        q = np.asarray(self.t[name + "_quantized"][tokens], dtype=np.int32)
        z = self.t[name + "_zero_point"].astype(np.int32)[tokens][..., None]
        s = self.t[name + "_scale"].astype(dt)[tokens][..., None]
        return (q - z).astype(dt) * s


def reference_logits(model_path, tokens, dtype=np.float32):
    W = Weights(model_path)
    c = W.cfg
    dt = np.dtype(dtype)
    B, S = c["batch"], c["seq"]
    H, nh, kvh = c["hidden"], c["heads"], c["kv_heads"]
    D = H // nh
    tokens = np.asarray(tokens)
    if tokens.shape != (B, S):
        raise SystemExit(f"llm_reference: tokens shape {tokens.shape}, model wants {(B, S)}")
    if tokens.min() < 0 or tokens.max() >= c["vocab"]:
        raise SystemExit("llm_reference: token id out of range")
    eps = dt.type(c["rms_eps"])

    def rmsnorm(x, name):
        ms = np.mean(x * x, axis=-1, keepdims=True, dtype=dt)
        return (x / np.sqrt(ms + eps)) * np.asarray(W.t[name], dtype=dt)

    # rotary tables exactly as the generator defines them: positions 0..S-1,
    # inverse frequencies theta^(-2i/D), halves duplicated
    inv = 1.0 / (c["rope_theta"] ** (np.arange(0, D, 2, dtype=np.float64) / D))
    ang = np.arange(S, dtype=np.float64)[:, None] * inv[None, :]
    ang = np.concatenate([ang, ang], axis=1)
    cos = np.cos(ang).astype(np.float32).astype(dt)
    sin = np.sin(ang).astype(np.float32).astype(dt)

    def rope(x):
        rot = np.concatenate([-x[..., D // 2:], x[..., :D // 2]], axis=-1)
        return x * cos + rot * sin

    def split(x, n):
        return x.reshape(B, S, n, D).transpose(0, 2, 1, 3)

    causal = np.tril(np.ones((S, S), dtype=bool))
    scale = dt.type(np.float32(1.0 / np.sqrt(D)))
    x = W.embed(tokens, dt)
    for i in range(c["layers"]):
        p = f"model.layers.{i}."
        h = rmsnorm(x, p + "input_layernorm.weight")
        q = rope(split(h @ W.dense(p + "self_attn.q_proj.weight", 1, dt), nh))
        k = rope(split(h @ W.dense(p + "self_attn.k_proj.weight", 1, dt), kvh))
        v = split(h @ W.dense(p + "self_attn.v_proj.weight", 1, dt), kvh)
        if kvh != nh:
            k = np.repeat(k, nh // kvh, axis=1)
            v = np.repeat(v, nh // kvh, axis=1)
        s = (q @ k.transpose(0, 1, 3, 2)) * scale
        s = np.where(causal, s, dt.type(-np.inf))
        e = np.exp(s - s.max(axis=-1, keepdims=True))
        pr = e / e.sum(axis=-1, keepdims=True)
        a = (pr @ v).transpose(0, 2, 1, 3).reshape(B, S, H)
        x = x + a @ W.dense(p + "self_attn.o_proj.weight", 1, dt)
        h = rmsnorm(x, p + "post_attention_layernorm.weight")
        g = h @ W.dense(p + "mlp.gate_proj.weight", 1, dt)
        u = h @ W.dense(p + "mlp.up_proj.weight", 1, dt)
        with np.errstate(over="ignore"):  # exp(-g) = inf for g << 0 gives sig = 0
            sig = 1 / (1 + np.exp(-g))
        x = x + ((g * sig) * u) @ W.dense(p + "mlp.down_proj.weight", 1, dt)
    h = rmsnorm(x, "model.norm.weight")
    return h @ W.dense("lm_head.weight", 1, dt)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("model")
    ap.add_argument("--tokens")
    ap.add_argument("--out")
    ap.add_argument("--float64", action="store_true")
    a = ap.parse_args()
    tok = a.tokens or os.path.join(os.path.dirname(os.path.abspath(a.model)), "input_0.npy")
    logits = reference_logits(a.model, np.load(tok),
                              np.float64 if a.float64 else np.float32)
    if a.out:
        tmp = a.out + ".tmp.npy"
        np.save(tmp, logits)
        os.replace(tmp, a.out)
    print(json.dumps({"shape": list(logits.shape), "std": float(logits.std()),
                      "absmax": float(np.abs(logits).max()),
                      "argmax_last": int(logits[0, -1].argmax())}))


if __name__ == "__main__":
    sys.exit(main())
