#!/usr/bin/python3
"""Recurrent test models: LSTM / GRU / RNN option cases built with
onnx.helper, and two torch 1.13 networks (float and FX post-training
quantized), each with ONNX Runtime's outputs as the reference.

1. Option cases (--cases; default out tests/data/lower/rnn/<case>/): one
   LSTM, GRU or RNN node per model (opset 14, so `layout` exists) covering
   what the libonnx-testdata node tests do not: forward / reverse /
   bidirectional, per-row sequence_lens, initial_h / initial_c, peepholes,
   clip, input_forget, linear_before_reset, layout 1, every activation
   function with activation_alpha / activation_beta, all outputs, weights
   as a run-time input. Files: model.onnx, input_N.npy (graph inputs in
   order), ort_output_N.npy (every graph output, ORT all optimisations).

2. Networks (--nets; default out tests/models/<net>_<variant>/):
     kws_gru      keyword spotting: [1, 1, 49, 10] MFCC frames -> two
                  Conv2d+BatchNorm+ReLU (the second strided on frequency)
                  -> frames flattened -> GRU(64) -> Linear(12) on the last
                  step.
     seq_lstm     sequence classifier: [1, 24, 16] -> 2-layer
                  bidirectional LSTM(32) -> Linear(6) on the last step.
   Variants: fp32 (opset 13, torch float export), qnnpack and onednn
   (torch.ao FX post-training quantization -> convert_fx -> QDQ ONNX at
   opset 13). torch 1.13's FX static quantization has no quantized
   LSTM / GRU: the recurrent module stays float between a
   DequantizeLinear and a QuantizeLinear, and dynamic quantization
   (quantize_dynamic) does not export to ONNX. The flattening
   permute/reshape before the recurrent layer is kept float
   (qconfig None): torch cannot export a Reshape of a quantized tensor.
   Files as make_quantized.py writes them: model.onnx, input_0.npy,
   output_0.npy (torch), ort_output_0.npy, inputs_20.npy,
   ort_outputs_20.npy (ORT, all optimisations; for fp32 too), and for the
   quantized ones output_scale.npy (the output DequantizeLinear's scale),
   meta.json.

3. Quantized recurrent layers (--qnets; default out tests/data/lower/qrnn/):
   QDQ models as ONNX Runtime's static quantizer writes them, with the
   recurrent layer quantized too: int8 activations (symmetric, calibrated
   with ORT on 16 inputs), Conv / Gemm weights int8 per channel with int32
   biases, LSTM / GRU / RNN W and R int8 per output row and B int32
   (qnet_float names the networks: kws_gru_q, seq_lstm_q, rnn_mix_q).
   Files: model.onnx, inputs_20.npy, ort_outputs_20.npy (ORT runs the
   layer in float with the dequantized weights), meta.json.

Usage: /usr/bin/python3 tools/models/make_rnn.py [--cases] [--nets] [--qnets]
         [--out-cases DIR] [--out-nets DIR] [--out-qnets DIR]
(with no flag all parts are made). Needs tools/ort installed.
"""
import argparse
import os
import sys
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
import numpy as np  # noqa: E402

SEED = 20261201
N_SETS = 20


# ------------------------------------------------------------ option cases

def make_case(name, op, nd, S, B, I, H, attrs, opts, out_root):
    """opts: set of 'B', 'lens' ('lens0': one row of length 0), 'h0', 'c0',
    'P', 'Wrt' (W a run-time input), 'Y', 'Yh', 'Yc' (requested outputs)."""
    import onnx
    from onnx import helper, TensorProto, numpy_helper
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    G = {"LSTM": 4, "GRU": 3, "RNN": 1}[op]
    layout = attrs.get("layout", 0)
    xs = (B, S, I) if layout else (S, B, I)
    hs = (B, nd, H) if layout else (nd, B, H)
    f32 = np.float32
    W = rng.uniform(-0.6, 0.6, (nd, G * H, I)).astype(f32)
    R = rng.uniform(-0.6, 0.6, (nd, G * H, H)).astype(f32)
    inputs, inits, feeds = [], [], []
    x = rng.standard_normal(xs).astype(f32)
    inputs.append(helper.make_tensor_value_info("X", TensorProto.FLOAT, xs))
    feeds.append(x)
    if "Wrt" in opts:
        inputs.append(helper.make_tensor_value_info("W", TensorProto.FLOAT, W.shape))
        feeds.append(W)
    else:
        inits.append(numpy_helper.from_array(W, "W"))
    inits.append(numpy_helper.from_array(R, "R"))
    names = ["X", "W", "R"]
    if "B" in opts:
        inits.append(numpy_helper.from_array(rng.uniform(-0.5, 0.5, (nd, 2 * G * H)).astype(f32), "B"))
        names.append("B")
    else:
        names.append("")
    if "lens" in opts or "lens0" in opts:
        lens = np.array([S, max(1, S - 2), S - 1, 1][:B], np.int32)
        if "lens0" in opts:  # a row of length 0
            lens[1] = 0
        inits.append(numpy_helper.from_array(lens, "lens"))
        names.append("lens")
    else:
        names.append("")
    for st in ("h0", "c0"):
        if st == "c0" and op != "LSTM":
            continue
        if st in opts:
            inputs.append(helper.make_tensor_value_info(st, TensorProto.FLOAT, hs))
            feeds.append(rng.uniform(-0.8, 0.8, hs).astype(f32))
            names.append(st)
        else:
            names.append("")
    if "P" in opts:
        inits.append(numpy_helper.from_array(rng.uniform(-0.5, 0.5, (nd, 3 * H)).astype(f32), "P"))
        names.append("P")
    while names and names[-1] == "":
        names.pop()
    outs, onames = [], []
    yshape = (B, S, nd, H) if layout else (S, nd, B, H)
    for o, nm, shp in (("Y", "Y", yshape), ("Yh", "Y_h", hs), ("Yc", "Y_c", hs)):
        if o in opts:
            outs.append(helper.make_tensor_value_info(nm, TensorProto.FLOAT, shp))
            onames.append(nm)
        else:
            onames.append("")
    while onames and onames[-1] == "":
        onames.pop()
    direction = {1: "forward", 2: "bidirectional"}[nd]
    if attrs.get("reverse"):
        direction = "reverse"
    a = {k: v for k, v in attrs.items() if k != "reverse"}

    def build(a, inputs, outs):
        node = helper.make_node(op, names, onames, hidden_size=H, direction=direction, **a)
        g = helper.make_graph([node], name, inputs, outs, inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)])
        m.ir_version = 8
        onnx.checker.check_model(m, full_check=True)
        return m

    m = build(a, inputs, outs)
    d = os.path.join(out_root, name)
    os.makedirs(d, exist_ok=True)
    onnx.save(m, os.path.join(d, "model.onnx"))
    for i, f in enumerate(feeds):
        common.save_npy(os.path.join(d, f"input_{i}.npy"), f)
    # ONNX Runtime has no layout 1 (batch-major): its reference comes from
    # the same node with layout 0 on transposed inputs, transposed back
    perm_in = {"X": (1, 0, 2), "h0": (1, 0, 2), "c0": (1, 0, 2)}
    perm_out = {"Y": (2, 0, 1, 3), "Y_h": (1, 0, 2), "Y_c": (1, 0, 2)}
    ref_model, ref_feeds = m, feeds
    if layout:
        def tr_vi(v, perm):
            shp = [d.dim_value for d in v.type.tensor_type.shape.dim]
            if v.name not in perm:
                return v
            p = perm[v.name] if v.name in perm_in else np.argsort(perm[v.name])
            return helper.make_tensor_value_info(v.name, TensorProto.FLOAT, [shp[i] for i in p])
        a0 = dict(a, layout=0)
        ref_model = build(a0, [tr_vi(v, perm_in) for v in inputs], [tr_vi(v, perm_out) for v in outs])
        ref_feeds = [np.ascontiguousarray(f.transpose(perm_in[v.name])) if v.name in perm_in else f
                     for v, f in zip(inputs, feeds)]
    tmp = os.path.join(d, ".ort")
    os.makedirs(tmp, exist_ok=True)
    ref_path = os.path.join(tmp, "ref.onnx")
    onnx.save(ref_model, ref_path)
    paths = []
    for i, f in enumerate(ref_feeds):
        p = os.path.join(tmp, f"in_{i}.npy")
        np.save(p, f)
        paths.append(p)
    res = common.run_ort(ref_path, paths, tmp)
    if res is None:
        raise SystemExit("make_rnn: ONNX Runtime (tools/ort) is needed for the references")
    for i, (v, o) in enumerate(zip(outs, res)):
        if layout and v.name in perm_out:
            o = np.ascontiguousarray(o.transpose(perm_out[v.name]))
        common.save_npy(os.path.join(d, f"ort_output_{i}.npy"), o)
    common.remove_tree(tmp)
    common.log(f"{name}: {op} {direction} S={S} B={B} I={I} H={H} -> {len(res)} output(s)")


CASES = [
    # name, op, directions, S, B, I, H, attributes, options
    ("lstm_bidir_peep_lens", "LSTM", 2, 5, 3, 4, 3, {}, {"B", "lens", "h0", "c0", "P", "Y", "Yh", "Yc"}),
    ("lstm_reverse_layout1", "LSTM", 1, 4, 2, 3, 5, {"reverse": 1, "layout": 1},
     {"B", "h0", "c0", "Y", "Yh", "Yc"}),
    ("lstm_reverse_lens", "LSTM", 1, 6, 3, 3, 4, {"reverse": 1}, {"B", "lens", "P", "Y", "Yh", "Yc"}),
    ("lstm_clip_input_forget", "LSTM", 1, 5, 2, 4, 3, {"clip": 0.4, "input_forget": 1},
     {"B", "h0", "c0", "Y", "Yh", "Yc"}),
    ("lstm_activations", "LSTM", 2, 4, 2, 3, 3,
     {"activations": ["HardSigmoid", "LeakyRelu", "ScaledTanh", "sigmoid", "Elu", "Softsign"],
      "activation_alpha": [0.3, 0.2, 0.9, 1.2], "activation_beta": [0.45, 1.1]},
     {"B", "Y", "Yh", "Yc"}),
    ("lstm_runtime_weights_yh", "LSTM", 1, 3, 2, 4, 3, {}, {"Wrt", "B", "Yh"}),
    ("gru_lbr_bidir_lens", "GRU", 2, 5, 3, 4, 3, {"linear_before_reset": 1},
     {"B", "lens", "h0", "Y", "Yh"}),
    ("gru_reverse_layout1", "GRU", 1, 4, 2, 3, 4, {"reverse": 1, "layout": 1}, {"B", "h0", "Y", "Yh"}),
    ("gru_activations_clip", "GRU", 2, 4, 2, 3, 3,
     {"activations": ["Sigmoid", "Affine", "HardSigmoid", "Softplus"], "activation_alpha": [0.7, 0.25],
      "activation_beta": [0.1, 0.55], "clip": 1.5},
     {"B", "Y", "Yh"}),
    ("gru_runtime_weights", "GRU", 1, 3, 2, 4, 3, {"linear_before_reset": 1}, {"Wrt", "B", "lens", "Y"}),
    ("rnn_bidir_relu_lens", "RNN", 2, 5, 3, 4, 3, {"activations": ["Relu", "Tanh"]},
     {"B", "lens", "h0", "Y", "Yh"}),
    ("rnn_reverse_layout1_thresh", "RNN", 1, 4, 2, 3, 4,
     {"reverse": 1, "layout": 1, "activations": ["ThresholdedRelu"], "activation_alpha": [0.1]},
     {"B", "h0", "Y", "Yh"}),
    ("lstm_zero_length_row", "LSTM", 2, 4, 3, 3, 3, {}, {"B", "lens0", "h0", "c0", "Y", "Yh", "Yc"}),
    ("gru_zero_length_row", "GRU", 1, 4, 3, 3, 3, {"reverse": 1}, {"B", "lens0", "h0", "Y", "Yh"}),
    # more steps than one CONCAT may take (64): Y is concatenated in groups
    ("rnn_long_sequence", "RNN", 2, 70, 2, 2, 3, {}, {"B", "lens", "Y", "Yh"}),
    ("rnn_sigmoid_clip", "RNN", 1, 4, 2, 3, 4, {"activations": ["Sigmoid"], "clip": 0.8}, {"Y", "Yh"}),
]


def make_cases(out_root):
    for c in CASES:
        make_case(*c, out_root=out_root)


# ---------------------------------------------------------------- networks

def build_net(name, torch):
    nn = torch.nn

    class Kws(nn.Module):
        def __init__(self):
            super().__init__()
            self.c1 = nn.Conv2d(1, 8, 3, padding=1)
            self.b1 = nn.BatchNorm2d(8)
            self.c2 = nn.Conv2d(8, 8, 3, stride=(1, 2), padding=1)
            self.b2 = nn.BatchNorm2d(8)
            self.rnn = nn.GRU(8 * 5, 64, batch_first=True)
            self.fc = nn.Linear(64, 12)

        def forward(self, x):
            y = torch.relu(self.b1(self.c1(x)))
            y = torch.relu(self.b2(self.c2(y)))          # [1, 8, 49, 5]
            y = torch.flatten(y.permute(0, 2, 1, 3), 2)  # [1, 49, 40]
            o = self.rnn(y)[0]
            return self.fc(o[:, -1])

    class SeqLstm(nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = nn.LSTM(16, 32, num_layers=2, bidirectional=True, batch_first=True)
            self.fc = nn.Linear(64, 6)

        def forward(self, x):
            o = self.rnn(x)[0]
            return self.fc(o[:, -1])

    if name == "kws_gru":
        return Kws(), (1, 1, 49, 10)
    return SeqLstm(), (1, 24, 16)


def output_scale(model):
    from onnx import numpy_helper
    out = model.graph.output[0].name
    consts = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    for n in model.graph.node:
        if n.op_type == "Constant":
            for a in n.attribute:
                if a.name == "value":
                    consts[n.output[0]] = numpy_helper.to_array(a.t)
    for n in model.graph.node:
        if out in n.output and n.op_type == "DequantizeLinear":
            return float(np.asarray(consts[n.input[1]]).reshape(-1)[0])
    return None


def make_net(name, variant, out_root, torch, onnx):
    torch.manual_seed(SEED)
    rng = np.random.default_rng(SEED)
    model, shape = build_net(name, torch)

    def batch(n):
        return torch.from_numpy(rng.standard_normal((n,) + shape[1:], dtype=np.float32))

    common.reestimate_batchnorm(model, lambda i: batch(8))
    model.eval()
    x = rng.standard_normal(shape, dtype=np.float32)
    xs = rng.standard_normal((N_SETS,) + shape, dtype=np.float32)
    if variant != "fp32":
        from torch.ao.quantization import get_default_qconfig_mapping
        from torch.ao.quantization.quantize_fx import prepare_fx, convert_fx
        torch.backends.quantized.engine = variant
        qm = get_default_qconfig_mapping(variant)
        qm = qm.set_object_type(torch.flatten, None).set_object_type("permute", None)
        pm = prepare_fx(model, qm, (torch.from_numpy(x),))
        with torch.no_grad():
            for _ in range(4):
                for i in range(8):
                    pm(batch(1))
        model = convert_fx(pm)
    with torch.no_grad():
        y = model(torch.from_numpy(x)).numpy()
    d = os.path.join(out_root, f"{name}_{variant}")
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, "model.onnx")
    tmp = path + ".tmp"
    torch.onnx.export(model, (torch.from_numpy(x),), tmp, opset_version=13,
                      input_names=["input"], output_names=["output"])
    os.replace(tmp, path)
    m = onnx.load(path)
    onnx.checker.check_model(m, full_check=True)
    common.save_npy(os.path.join(d, "input_0.npy"), x)
    common.save_npy(os.path.join(d, "output_0.npy"), y)
    common.save_npy(os.path.join(d, "inputs_20.npy"), xs)
    tmpd = os.path.join(d, ".ort")
    o1 = common.run_ort(path, [os.path.join(d, "input_0.npy")], tmpd)
    if o1 is None:
        raise SystemExit("make_rnn: ONNX Runtime (tools/ort) is needed for the references")
    o20 = common.run_ort(path, [os.path.join(d, "inputs_20.npy")], tmpd, batch=True)[0]
    common.remove_tree(tmpd)
    common.save_npy(os.path.join(d, "ort_output_0.npy"), o1[0])
    common.save_npy(os.path.join(d, "ort_outputs_20.npy"), o20)
    meta = {"name": name, "variant": variant, "opset": 13, "seed": SEED, "torch": torch.__version__,
            "input_shape": list(shape), "output_shape": list(y.shape), "nodes": len(m.graph.node),
            "ops": common.op_histogram(m), "model_bytes": os.path.getsize(path),
            "torch_vs_ort_max_abs": common.max_abs_diff(y, o1[0]),
            "output_absmax": float(np.abs(o20).max())}
    if variant != "fp32":
        s = output_scale(m)
        meta["output_scale"] = s
        meta["engine"] = variant
        common.save_npy(os.path.join(d, "output_scale.npy"), np.array([s], np.float32))
        meta["torch_vs_ort_steps"] = common.max_abs_diff(y, o1[0]) / s
    common.write_json(os.path.join(d, "meta.json"), meta)
    common.log(f"{name}_{variant}: {meta['model_bytes'] / 1e3:.0f} kB, {meta['nodes']} nodes, "
               f"torch vs ORT max |diff| {meta['torch_vs_ort_max_abs']:.3g}")


# ------------------------------------------------- quantized recurrent layers

QNETS = ("kws_gru_q", "seq_lstm_q", "rnn_mix_q")


def qnet_float(name, rng):
    """The float graph (onnx.helper, fixed shapes, no shape arithmetic):
    kws_gru_q: [1, 1, 49, 10] -> Conv 3x3 (8) -> Relu -> Conv 3x3 stride
      (1, 2) (8) -> Relu -> frames [49, 1, 40] -> GRU(64,
      linear_before_reset 1, as torch exports nn.GRU) -> last step -> Gemm(12);
    seq_lstm_q: [1, 24, 16] -> bidirectional LSTM(32) -> [24, 1, 64] ->
      LSTM(32) -> last step -> Gemm(6);
    rnn_mix_q: [1, 12, 8] -> reverse GRU(16, linear_before_reset 0) ->
      bidirectional RNN(16) -> last step -> Gemm(4)."""
    from onnx import helper, TensorProto, numpy_helper
    nodes, inits = [], []
    u = lambda *sh, a=1.0: rng.uniform(-a, a, size=sh).astype(np.float32)

    def const(nm, arr):
        inits.append(numpy_helper.from_array(np.asarray(arr), nm))
        return nm

    def node(op, ins, out, **kw):
        nodes.append(helper.make_node(op, ins, [out] if isinstance(out, str) else out, name=op + "_" + str(len(nodes)),
                                      **kw))
        return out if isinstance(out, str) else out[0]

    def rnn(op, x, I, H, nd, tag, **kw):
        G = {"LSTM": 4, "GRU": 3, "RNN": 1}[op]
        a = 1.0 / np.sqrt(H)
        W = const(tag + "_W", u(nd, G * H, I, a=a))
        R = const(tag + "_R", u(nd, G * H, H, a=a))
        B = const(tag + "_B", u(nd, 2 * G * H, a=a))
        return node(op, [x, W, R, B], [tag + "_Y", "", ""][:3 if op == "LSTM" else 2], hidden_size=H, **kw)

    if name == "kws_gru_q":
        shape = (1, 1, 49, 10)
        x = node("Conv", ["input", const("c1_w", u(8, 1, 3, 3, a=0.5)), const("c1_b", u(8, a=0.1))], "c1",
                 pads=[1, 1, 1, 1])
        x = node("Relu", [x], "r1")
        x = node("Conv", [x, const("c2_w", u(8, 8, 3, 3, a=0.25)), const("c2_b", u(8, a=0.1))], "c2",
                 pads=[1, 1, 1, 1], strides=[1, 2])
        x = node("Relu", [x], "r2")
        x = node("Transpose", [x], "t1", perm=[2, 0, 1, 3])                  # [49, 1, 8, 5]
        x = node("Reshape", [x, const("s1", np.array([49, 1, 40], np.int64))], "frames")
        y = rnn("GRU", x, 40, 64, 1, "gru", linear_before_reset=1)            # [49, 1, 1, 64]
        y = node("Squeeze", [y, const("ax1", np.array([1], np.int64))], "sq")
        y = node("Gather", [y, const("last", np.array(48, np.int64))], "lastf", axis=0)
        node("Gemm", [y, const("fc_w", u(12, 64, a=0.3)), const("fc_b", u(12, a=0.1))], "output", transB=1)
        outs = (12,)
    elif name == "seq_lstm_q":
        shape = (1, 24, 16)
        x = node("Transpose", ["input"], "t0", perm=[1, 0, 2])               # [24, 1, 16]
        y = rnn("LSTM", x, 16, 32, 2, "l1", direction="bidirectional")     # [24, 2, 1, 32]
        y = node("Transpose", [y], "t1", perm=[0, 2, 1, 3])
        y = node("Reshape", [y, const("s1", np.array([24, 1, 64], np.int64))], "l1f")
        y = rnn("LSTM", y, 64, 32, 1, "l2")
        y = node("Squeeze", [y, const("ax1", np.array([1], np.int64))], "sq")
        y = node("Gather", [y, const("last", np.array(23, np.int64))], "lastf", axis=0)
        node("Gemm", [y, const("fc_w", u(6, 32, a=0.3)), const("fc_b", u(6, a=0.1))], "output", transB=1)
        outs = (6,)
    else:
        shape = (1, 12, 8)
        x = node("Transpose", ["input"], "t0", perm=[1, 0, 2])
        y = rnn("GRU", x, 8, 16, 1, "g1", direction="reverse")
        y = node("Squeeze", [y, const("ax1", np.array([1], np.int64))], "sq1")
        y = rnn("RNN", y, 16, 16, 2, "r1", direction="bidirectional")
        y = node("Transpose", [y], "t1", perm=[0, 2, 1, 3])
        y = node("Reshape", [y, const("s1", np.array([12, 1, 32], np.int64))], "r1f")
        y = node("Gather", [y, const("last", np.array(11, np.int64))], "lastf", axis=0)
        node("Gemm", [y, const("fc_w", u(4, 32, a=0.3)), const("fc_b", u(4, a=0.1))], "output", transB=1)
        outs = (4,)
    g = helper.make_graph(nodes, name, [helper.make_tensor_value_info("input", TensorProto.FLOAT, list(shape))],
                          [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, outs[0]])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)], producer_name="ctosa-qrnn")
    m.ir_version = 8
    return m, shape


def qdq_wrap(m, ranges):
    """ONNX Runtime's QDQ pattern, int8: every float activation through
    QuantizeLinear -> DequantizeLinear (symmetric, zero point 0, scale
    absmax / 127); Conv / Gemm weights int8 per output channel with int32
    biases (scale s_x s_w); LSTM / GRU / RNN W and R int8 per output row
    (axis 1) and B int32 per tensor."""
    from onnx import helper, numpy_helper
    g = m.graph
    inits = {t.name: numpy_helper.to_array(t) for t in g.initializer}
    new_inits, new_nodes = [], []
    scale = {}

    def const(nm, arr):
        new_inits.append(numpy_helper.from_array(np.asarray(arr), nm))
        return nm

    def act_scale(t):
        lo, hi = ranges[t]
        return np.float32(max(abs(lo), abs(hi), 1e-6) / 127.0)

    def qdq(t):
        s = scale[t] = act_scale(t)
        const(t + "_s", s)
        const(t + "_z", np.int8(0))
        new_nodes.append(helper.make_node("QuantizeLinear", [t, t + "_s", t + "_z"], [t + "_q"], name=t + "_Q"))
        new_nodes.append(helper.make_node("DequantizeLinear", [t + "_q", t + "_s", t + "_z"], [t + "_dq"],
                                          name=t + "_DQ"))
        return t + "_dq"

    def wdq(nm, w, axis):
        red = tuple(i for i in range(w.ndim) if i != axis)
        s = (np.maximum(np.abs(w).max(axis=red), 1e-8) / 127.0).astype(np.float32)
        shp = [1] * w.ndim
        shp[axis] = -1
        qv = np.clip(np.rint(w / s.reshape(shp)), -127, 127).astype(np.int8)
        const(nm + "_q", qv)
        const(nm + "_s", s)
        const(nm + "_z", np.zeros(s.shape, np.int8))
        new_nodes.append(helper.make_node("DequantizeLinear", [nm + "_q", nm + "_s", nm + "_z"], [nm + "_dq"],
                                          name=nm + "_DQ", axis=axis))
        return nm + "_dq", s

    def bdq(nm, b, s):
        s = np.asarray(s, np.float32)
        qv = np.clip(np.rint(b / s), -2 ** 31 + 1, 2 ** 31 - 1).astype(np.int32)
        const(nm + "_q", qv)
        const(nm + "_s", s)
        const(nm + "_z", np.zeros(s.shape, np.int32))
        kw = {"axis": 0} if s.ndim else {}
        new_nodes.append(helper.make_node("DequantizeLinear", [nm + "_q", nm + "_s", nm + "_z"], [nm + "_dq"],
                                          name=nm + "_DQ", **kw))
        return nm + "_dq"

    rename = {"input": qdq("input")}
    for n in g.node:
        ins = list(n.input)
        ins[0] = rename[ins[0]]
        if n.op_type in ("Conv", "Gemm"):
            ins[1], sw = wdq(n.input[1], inits[n.input[1]], 0)
            ins[2] = bdq(n.input[2], inits[n.input[2]], scale[n.input[0]] * sw)
        elif n.op_type in ("LSTM", "GRU", "RNN"):
            ins[1], _ = wdq(n.input[1], inits[n.input[1]], 1)
            ins[2], _ = wdq(n.input[2], inits[n.input[2]], 1)
            b = inits[n.input[3]]
            ins[3] = bdq(n.input[3], b, np.float32(max(np.abs(b).max(), 1e-8) / 2 ** 24))
        for k in range(1, len(ins)):
            if ins[k] and ins[k] in inits and ins[k] == n.input[k]:
                const(ins[k], inits[ins[k]])
        out = n.output[0]
        fin = out == "output"
        nn_ = helper.make_node(n.op_type, ins, [out + "_f" if fin else out] + list(n.output[1:]), name=n.name)
        nn_.attribute.extend(n.attribute)
        new_nodes.append(nn_)
        if fin:  # the graph output: QuantizeLinear, DequantizeLinear named "output"
            s = scale[out] = act_scale(out)
            const("out_s", s)
            const("out_z", np.int8(0))
            new_nodes.append(helper.make_node("QuantizeLinear", [out + "_f", "out_s", "out_z"], ["out_q"], name="out_Q"))
            new_nodes.append(helper.make_node("DequantizeLinear", ["out_q", "out_s", "out_z"], ["output"],
                                              name="out_DQ"))
        else:
            rename[out] = qdq(out)
    graph = helper.make_graph(new_nodes, g.name, list(g.input), list(g.output), new_inits)
    qm = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)], producer_name="ctosa-qrnn")
    qm.ir_version = 8
    return qm, float(scale["output"])


def make_qnet(name, out_root, onnx):
    from onnx import helper
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    fm, shape = qnet_float(name, rng)
    d = os.path.join(out_root, name)
    work = os.path.join(d, ".work")
    os.makedirs(work, exist_ok=True)
    cal = rng.standard_normal((16,) + shape, dtype=np.float32)
    xs = rng.standard_normal((N_SETS,) + shape, dtype=np.float32)
    cm = onnx.load_from_string(fm.SerializeToString())
    names = [o for n in cm.graph.node for o in n.output if o and o != "output"]
    for nm in names:
        cm.graph.output.append(helper.make_tensor_value_info(nm, onnx.TensorProto.FLOAT, None))
    cpath = os.path.join(work, "calib.onnx")
    onnx.save(cm, cpath)
    common.save_npy(os.path.join(work, "cal.npy"), cal)
    res = common.run_ort(cpath, [os.path.join(work, "cal.npy")], os.path.join(work, "cal"), opt="disabled",
                         batch=True)
    if res is None:
        raise SystemExit("make_rnn: ONNX Runtime (tools/ort) is needed for calibration")
    ranges = {o.name: (float(a.min()), float(a.max())) for o, a in zip(cm.graph.output, res)}
    ranges["input"] = (float(cal.min()), float(cal.max()))
    qm, s_out = qdq_wrap(fm, ranges)
    onnx.checker.check_model(qm, full_check=True)
    path = os.path.join(d, "model.onnx")
    onnx.save(qm, path + ".tmp")
    os.replace(path + ".tmp", path)
    common.save_npy(os.path.join(d, "inputs_20.npy"), xs)
    o20 = common.run_ort(path, [os.path.join(d, "inputs_20.npy")], work, batch=True)[0]
    common.save_npy(os.path.join(d, "ort_outputs_20.npy"), o20)
    common.remove_tree(work)
    meta = {"name": name, "opset": 14, "input_shape": list(shape), "nodes": len(qm.graph.node),
            "ops": common.op_histogram(qm), "model_bytes": os.path.getsize(path), "output_scale": s_out,
            "output_zero_point": 0}
    common.write_json(os.path.join(d, "meta.json"), meta)
    common.log(f"{name}: {meta['model_bytes'] / 1e3:.0f} kB, {meta['nodes']} nodes, output scale {s_out:.4g}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", action="store_true")
    ap.add_argument("--nets", action="store_true")
    ap.add_argument("--qnets", action="store_true", help="the QDQ models with quantized recurrent layers")
    ap.add_argument("--out-qnets", default=os.path.join(common.REPO, "tests", "data", "lower", "qrnn"))
    ap.add_argument("--out-cases", default=os.path.join(common.REPO, "tests", "data", "lower", "rnn"))
    ap.add_argument("--out-nets", default=os.path.join(common.REPO, "tests", "models"))
    a = ap.parse_args()
    both = not a.cases and not a.nets and not a.qnets
    import warnings
    warnings.filterwarnings("ignore")
    if a.cases or both:
        make_cases(a.out_cases)
    if a.qnets or both:
        import onnx
        for name in QNETS:
            make_qnet(name, a.out_qnets, onnx)
    if a.nets or both:
        import torch
        import onnx
        torch.set_num_threads(1)
        for name in ("kws_gru", "seq_lstm"):
            for variant in ("fp32", "qnnpack", "onednn"):
                make_net(name, variant, a.out_nets, torch, onnx)


if __name__ == "__main__":
    main()
