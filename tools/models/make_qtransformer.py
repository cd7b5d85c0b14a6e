#!/usr/bin/python3
"""Export an int16-activation transformer encoder (a16w8) as a QDQ model.

torch 1.13 has no int16 quantized tensors, so the model is quantized the
way ONNX Runtime's static quantizer does it (quantize_static, QDQ format,
activation type QInt16, weight type QInt8), written out here with onnx's
helper:
  - the float model: two post-norm encoder layers (separate q/k/v Linear,
    4 heads, attention MatMuls of two activations, Softmax, LayerNorm,
    GELU as torch exports it: Div, Erf, Add, Mul, Mul), mean over the
    sequence and a Linear classifier; exported at opset 17 with fixed
    shapes (no Shape/Gather arithmetic);
  - calibration: every float tensor's range over CALIB random inputs (ORT,
    optimisations disabled), symmetric int16 scale absmax/32767, zero
    point 0;
  - the operators ONNX Runtime's QDQ quantizer handles (MatMul, Gemm, Add,
    Mul, Softmax, LayerNormalization, Reshape, Transpose, ReduceMean, ...)
    get QuantizeLinear -> DequantizeLinear on every float input and output;
    Div and Erf (which it does not quantize) stay float between them;
  - weights (second input of MatMul / Gemm) int8 symmetric per output
    channel; other constants (biases, LayerNorm gamma/beta, scalars) int8
    symmetric per tensor;
  - opset 21 (int16 QuantizeLinear / DequantizeLinear), IR 10.

Writes OUT/transformer_a16w8/ like make_quantized.py: model.onnx,
input_0.npy, inputs_20.npy, float_output_0.npy, ort_output_0.npy,
ort_outputs_20.npy, ort_noopt_outputs_20.npy, meta.json.

--small makes transformer_small (sequence 8, width 32, 2 heads, feed-forward
64, two layers; about 40 KB, committed in tests/data/lower/quant16/).

Usage: /usr/bin/python3 tools/models/make_qtransformer.py [--out DIR] [--small] [--no-ort]
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
import numpy as np  # noqa: E402

SEED = 20261201
T, D, H, FF, LAYERS, CLASSES = 16, 64, 4, 128, 2, 10
N_SETS = 20
CALIB = 16
# operators whose float inputs and outputs ONNX Runtime's QDQ quantizer wraps
QUANT_OPS = {"MatMul", "Gemm", "Add", "Mul", "Softmax", "LayerNormalization", "Reshape", "Transpose",
             "ReduceMean", "Relu", "Sigmoid", "Tanh", "Concat", "Squeeze", "Unsqueeze", "Gather"}
WEIGHT_INPUT = {"MatMul": 1, "Gemm": 1}


def build(torch):
    nn = torch.nn

    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.q, self.k, self.v, self.o = (nn.Linear(D, D) for _ in range(4))
            self.ln1, self.ln2 = nn.LayerNorm(D), nn.LayerNorm(D)
            self.fc1, self.fc2 = nn.Linear(D, FF), nn.Linear(FF, D)

        def forward(self, x):
            dh = D // H
            q = self.q(x).reshape(1, T, H, dh).transpose(1, 2)
            k = self.k(x).reshape(1, T, H, dh).transpose(1, 2)
            v = self.v(x).reshape(1, T, H, dh).transpose(1, 2)
            a = torch.softmax(torch.matmul(q, k.transpose(2, 3)) * (dh ** -0.5), dim=-1)
            o = torch.matmul(a, v).transpose(1, 2).reshape(1, T, D)
            x = self.ln1(x + self.o(o))
            return self.ln2(x + self.fc2(torch.nn.functional.gelu(self.fc1(x))))

    class Encoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleList(Layer() for _ in range(LAYERS))
            self.head = nn.Linear(D, CLASSES)

        def forward(self, x):
            for layer in self.layers:
                x = layer(x)
            return self.head(x.mean(dim=1))

    torch.manual_seed(SEED)
    return Encoder().eval()


def qdq_insert(model, ranges, onnx):
    """ONNX Runtime-style QDQ a16w8 quantization of the float model."""
    from onnx import helper, numpy_helper, TensorProto
    g = model.graph
    inits = {t.name: numpy_helper.to_array(t) for t in g.initializer}
    for n in g.node:  # Constant nodes as initializers
        if n.op_type == "Constant":
            inits[n.output[0]] = numpy_helper.to_array(n.attribute[0].t)
    nodes = [n for n in g.node if n.op_type != "Constant"]
    float_t = set(ranges) | {k for k, v in inits.items() if v.dtype == np.float32}
    wrap = set()
    for n in nodes:
        if n.op_type in QUANT_OPS:
            for t in list(n.input) + list(n.output):
                if t in float_t:
                    wrap.add(t)
    new_nodes, new_inits, rename = [], [], {}
    # constants: kept ones (shapes) unchanged
    used_consts = set()

    def const(name, arr):
        new_inits.append(numpy_helper.from_array(np.asarray(arr), name))

    def add_qdq(t, after):
        """t -> Q -> DQ -> t_dq; returns the DequantizeLinear output name."""
        lo, hi = ranges[t]
        s = max(abs(lo), abs(hi), 1e-8) / 32767.0
        const(t + "_s", np.float32(s))
        const(t + "_z", np.int16(0))
        after.append(helper.make_node("QuantizeLinear", [t, t + "_s", t + "_z"], [t + "_q"], name=t + "_Q"))
        after.append(helper.make_node("DequantizeLinear", [t + "_q", t + "_s", t + "_z"], [t + "_dq"],
                                      name=t + "_DQ"))
        return t + "_dq"

    def weight_dq(n, k, t):
        w = inits[t].astype(np.float32)
        nm = t + "_w%d" % k
        if n.op_type in WEIGHT_INPUT and WEIGHT_INPUT[n.op_type] == k and w.ndim == 2:
            trans = n.op_type == "Gemm" and any(a.name == "transB" and a.i for a in n.attribute)
            axis = 0 if trans else 1
            am = np.abs(w).max(axis=1 - axis)
            s = np.maximum(am, 1e-8) / 127.0
            sb = s[None, :] if axis == 1 else s[:, None]
            q = np.clip(np.rint(w / sb), -127, 127).astype(np.int8)
            const(nm + "_q", q)
            const(nm + "_s", s.astype(np.float32))
            const(nm + "_z", np.zeros(s.shape, np.int8))
            return helper.make_node("DequantizeLinear", [nm + "_q", nm + "_s", nm + "_z"], [nm], name=nm + "_DQ",
                                    axis=axis), nm
        s = max(float(np.abs(w).max()), 1e-8) / 127.0
        q = np.clip(np.rint(w / s), -127, 127).astype(np.int8)
        const(nm + "_q", q)
        const(nm + "_s", np.float32(s))
        const(nm + "_z", np.int8(0))
        return helper.make_node("DequantizeLinear", [nm + "_q", nm + "_s", nm + "_z"], [nm], name=nm + "_DQ"), nm

    for t in g.input:
        if t.name in wrap:
            after = []
            rename[t.name] = add_qdq(t.name, after)
            new_nodes += after
    for n in nodes:
        ins = list(n.input)
        for k, t in enumerate(ins):
            if t in inits and inits[t].dtype == np.float32 and n.op_type in QUANT_OPS:
                dq, nm = weight_dq(n, k, t)
                new_nodes.append(dq)
                ins[k] = nm
            elif t in rename:
                ins[k] = rename[t]
            elif t in inits:
                used_consts.add(t)
        attrs = list(n.attribute)
        if n.op_type.startswith("Reduce") and any(at.name == "axes" for at in attrs):
            # opset 18 moved ReduceMean's axes from an attribute to an input
            ax = [at for at in attrs if at.name == "axes"][0]
            const(n.name + "_axes", np.array(ax.ints, np.int64))
            ins.append(n.name + "_axes")
            attrs = [at for at in attrs if at.name != "axes"]
        nn_ = helper.make_node(n.op_type, ins, list(n.output), name=n.name)
        nn_.attribute.extend(attrs)
        new_nodes.append(nn_)
        for t in n.output:
            if t in wrap and t not in [o.name for o in g.output]:
                after = []
                rename[t] = add_qdq(t, after)
                new_nodes += after
            elif t in wrap:  # graph output: quantized, dequantized for the user
                after = []
                lo, hi = ranges[t]
                s = max(abs(lo), abs(hi), 1e-8) / 32767.0
                const(t + "_s", np.float32(s))
                const(t + "_z", np.int16(0))
                # the node writes a renamed float tensor, Q/DQ give the output
                nn_.output[list(n.output).index(t)] = t + "_f"
                after.append(helper.make_node("QuantizeLinear", [t + "_f", t + "_s", t + "_z"], [t + "_q"],
                                              name=t + "_Q"))
                after.append(helper.make_node("DequantizeLinear", [t + "_q", t + "_s", t + "_z"], [t],
                                              name=t + "_DQ"))
                new_nodes += after
    for t in used_consts:
        const(t, inits[t])
    graph = helper.make_graph(new_nodes, g.name, list(g.input), list(g.output), new_inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], producer_name="ctosa-qtransformer")
    m.ir_version = 10
    return m


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=common.DEFAULT_OUT)
    ap.add_argument("--no-ort", action="store_true")
    ap.add_argument("--small", action="store_true", help="the small encoder committed for the tests")
    a = ap.parse_args()
    global T, D, H, FF
    name = "transformer_a16w8"
    if a.small:
        T, D, H, FF = 8, 32, 2, 64
        name = "transformer_small"
    import warnings
    warnings.filterwarnings("ignore")
    import torch
    import onnx
    from onnx import helper
    if not common.ort_available():
        raise SystemExit("make_qtransformer: needs tools/ort (calibration runs ONNX Runtime)")
    t = common.Timer()
    d = os.path.join(a.out, name)
    os.makedirs(d, exist_ok=True)
    work = os.path.join(d, ".work")
    model = build(torch)
    rng = np.random.default_rng(SEED)
    x = rng.standard_normal((1, T, D), dtype=np.float32)
    xs = rng.standard_normal((N_SETS, 1, T, D), dtype=np.float32)
    cal = rng.standard_normal((CALIB, 1, T, D), dtype=np.float32)
    with torch.no_grad():
        yf = model(torch.from_numpy(x)).numpy()
    fpath = os.path.join(work, "float.onnx")
    os.makedirs(work, exist_ok=True)
    torch.onnx.export(model, (torch.from_numpy(x),), fpath, opset_version=17, input_names=["input"],
                      output_names=["output"], do_constant_folding=True)
    fm = onnx.load(fpath)
    # calibration: every float tensor a graph output
    cm = onnx.load(fpath)
    names = [o for n in cm.graph.node if n.op_type != "Constant" for o in n.output]
    have = {o.name for o in cm.graph.output}
    for nm in names:
        if nm not in have:
            cm.graph.output.append(helper.make_tensor_value_info(nm, onnx.TensorProto.FLOAT, None))
    cpath = os.path.join(work, "calib.onnx")
    onnx.save(cm, cpath)
    common.save_npy(os.path.join(work, "cal.npy"), cal)
    outs = common.run_ort(cpath, [os.path.join(work, "cal.npy")], os.path.join(work, "cal"), opt="disabled",
                          batch=True)
    onames = [o.name for o in cm.graph.output]
    ranges = {}
    for nm, arr in zip(onames, outs):
        if arr.dtype == np.float32:
            ranges[nm] = (float(arr.min()), float(arr.max()))
    ranges["input"] = (float(cal.min()), float(cal.max()))
    qm = qdq_insert(fm, ranges, onnx)
    path = os.path.join(d, "model.onnx")
    tmp = path + ".tmp"
    onnx.save(qm, tmp)
    os.replace(tmp, path)
    common.save_npy(os.path.join(d, "input_0.npy"), x)
    common.save_npy(os.path.join(d, "inputs_20.npy"), xs)
    common.save_npy(os.path.join(d, "float_output_0.npy"), yf)
    meta = {"name": name, "opset": 21, "seed": SEED, "torch": torch.__version__,
            "layers": LAYERS, "d_model": D, "heads": H, "ff": FF, "seq": T, "classes": CLASSES,
            "calibration": f"{CALIB} standard-normal inputs", "nodes": len(qm.graph.node),
            "ops": common.op_histogram(qm), "model_bytes": os.path.getsize(path)}
    from onnx import numpy_helper
    s_out = [float(numpy_helper.to_array(i)) for i in qm.graph.initializer if i.name == "output_s"][0]
    meta["output_scale"], meta["output_zero_point"] = s_out, 0
    if not a.no_ort:
        for opt, tag in (("all", "ort"), ("disabled", "ort_noopt")):
            o1 = common.run_ort(path, [os.path.join(d, "input_0.npy")], os.path.join(work, tag), opt=opt)[0]
            o20 = common.run_ort(path, [os.path.join(d, "inputs_20.npy")], os.path.join(work, tag), opt=opt,
                                 batch=True)[0]
            common.save_npy(os.path.join(d, f"{tag}_output_0.npy"), o1)
            common.save_npy(os.path.join(d, f"{tag}_outputs_20.npy"), o20)
        a0 = np.load(os.path.join(d, "ort_outputs_20.npy")).astype(np.float64)
        b0 = np.load(os.path.join(d, "ort_noopt_outputs_20.npy")).astype(np.float64)
        meta["ort_vs_ort_noopt_max_steps"] = float(np.abs(a0 - b0).max() / s_out)
        o1 = np.load(os.path.join(d, "ort_output_0.npy")).astype(np.float64)
        meta["ort_vs_float_max_abs"] = float(np.abs(o1 - yf).max())
    common.remove_tree(work)
    common.write_json(os.path.join(d, "meta.json"), meta)
    common.log(f"{name}: {meta['nodes']} nodes, out scale {s_out:.4g}, "
               f"{meta.get('ort_vs_float_max_abs', float('nan')):.3g} max |ORT - float|, "
               f"{t.lap():.1f}s -> {d}")


if __name__ == "__main__":
    main()
