#!/usr/bin/python3
"""Export int8 QDQ models made by torch 1.13 FX post-training quantization.

Path that works with Debian's torch 1.13 (see docs/models.md):
  torchvision.models.quantization.<net>(weights=None, quantize=False)
  -> BatchNorm statistics re-estimated on random data (else outputs are ~0)
  -> prepare_fx(model, get_default_qconfig_mapping(engine), example)
  -> calibration on random batches -> convert_fx
  -> torch.onnx.export(opset_version=13)
The result is QDQ ONNX: uint8 per-tensor activations (QuantizeLinear /
DequantizeLinear pairs), int8 weights and int32 biases in Constant nodes
behind DequantizeLinear, float Conv/Gemm/Relu/Add/MaxPool between them.
Engines: qnnpack -> per-tensor weights; onednn -> per-channel (axis 0)
weights and biases. (fbgemm is not built into Debian's torch; onednn uses the
same x86 default qconfig, per-channel symmetric weights.)

Networks: resnet18, mobilenet_v2 (1x3x224x224) and
mobilenet_v2_x0_25 (width 0.25, 100 classes, 1x3x64x64: small enough to commit).

For every network and engine it writes OUT/<net>_<engine>/:
  model.onnx                  QDQ model, opset 13
  input_0.npy                 one random input (float32)
  output_0.npy                torch's quantized (int8 kernel) output
  float_output_0.npy          the float model's output before quantization
  ort_output_0.npy            ORT, default optimizations (fused int8 kernels)
  ort_noopt_output_0.npy      ORT, optimizations disabled (float QDQ reference)
  inputs_20.npy               20 more random inputs stacked [20, 1, 3, H, W]
  outputs_20.npy / ort_outputs_20.npy / ort_noopt_outputs_20.npy   same, stacked
  meta.json                   output scale/zero point, op histogram, torch vs
                              ORT differences in output quantization steps,
                              top-1 agreement, timings
The ort_* files exist only when tools/ort is installed.

Usage: /usr/bin/python3 tools/models/make_quantized.py [--out DIR]
         [--models resnet18,mobilenet_v2,mobilenet_v2_x0_25]
         [--engines qnnpack,onednn] [--no-ort]
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
import numpy as np  # noqa: E402

SEED = 20261130
MODELS = {
    # name: (constructor in torchvision.models.quantization ("q:") or in
    # torchvision.models (plain float definitions FX quantizes by tracing), kwargs, input H=W)
    "resnet18": ("q:resnet18", {}, 224),
    "mobilenet_v2": ("q:mobilenet_v2", {}, 224),
    "mobilenet_v2_x0_25": ("q:mobilenet_v2", {"width_mult": 0.25, "num_classes": 100}, 64),
    # mobile / grouped-convolution networks: grouped convolutions (regnet,
    # resnext), squeeze-excite with Sigmoid / HardSigmoid gates, HardSwish,
    # SiLU, channel shuffle and Split (shufflenet)
    "regnet_y_400mf": ("regnet_y_400mf", {}, 224),
    "regnet_x_400mf": ("regnet_x_400mf", {}, 224),
    "resnext50_32x4d": ("resnext50_32x4d", {}, 224),
    "mobilenet_v3_large": ("mobilenet_v3_large", {}, 224),
    "mobilenet_v3_small": ("mobilenet_v3_small", {}, 224),
    "mnasnet0_5": ("mnasnet0_5", {}, 224),
    "efficientnet_b0": ("efficientnet_b0", {}, 224),
    "shufflenet_v2": ("q:shufflenet_v2_x1_0", {}, 224),
    # small enough for the default test suite: every block kind of
    # mobilenet_v3 (HardSwish, squeeze-excite) at 96x96, 100 classes
    "mobilenet_v3_small_96": ("mobilenet_v3_small", {"num_classes": 100}, 96),
    # regnet_y's grouped convolutions and Sigmoid squeeze-excite, 64x64
    "regnet_y_400mf_64": ("regnet_y_400mf", {"num_classes": 100}, 64),
}
ENGINES = ("qnnpack", "onednn")
N_SETS = 20
CALIB_BATCHES = 4
CALIB_BATCH = 8


def const_value(model, name):
    """Value of a tensor that is an initializer or a Constant node's output."""
    from onnx import numpy_helper
    for t in model.graph.initializer:
        if t.name == name:
            return numpy_helper.to_array(t)
    for n in model.graph.node:
        if n.op_type == "Constant" and n.output[0] == name:
            for a in n.attribute:
                if a.name == "value":
                    return numpy_helper.to_array(a.t)
    return None


def output_quant(model):
    """(scale, zero_point) of the DequantizeLinear that makes graph output 0."""
    out = model.graph.output[0].name
    for n in model.graph.node:
        if out in n.output and n.op_type == "DequantizeLinear":
            s = const_value(model, n.input[1])
            z = const_value(model, n.input[2]) if len(n.input) > 2 else np.zeros((), np.uint8)
            return float(np.asarray(s).reshape(-1)[0]), int(np.asarray(z).reshape(-1)[0])
    return None, None


def weight_quant_axes(model):
    """Count DequantizeLinear nodes on int8 weights by per-tensor / per-axis."""
    per_tensor = per_axis = 0
    for n in model.graph.node:
        if n.op_type != "DequantizeLinear":
            continue
        v = const_value(model, n.input[0])
        if v is None or v.dtype != np.int8:
            continue
        s = const_value(model, n.input[1])
        if s is not None and np.asarray(s).size > 1:
            per_axis += 1
        else:
            per_tensor += 1
    return {"int8_weights_per_tensor": per_tensor, "int8_weights_per_axis": per_axis}


def compare(ref, got, scale):
    """Differences in output quantization steps and top-1 agreement.
    Quantized logits often tie; a top-1 'match' accepts any index that holds
    the maximum in both arrays."""
    ref = ref.reshape(-1, ref.shape[-1]).astype(np.float64)
    got = got.reshape(-1, got.shape[-1]).astype(np.float64)
    steps = np.abs(ref - got) / scale
    top1 = 0
    for r, g in zip(ref, got):
        top1 += int(bool(set(np.flatnonzero(r == r.max())) & set(np.flatnonzero(g == g.max()))))
    return {"max_abs": float(np.abs(ref - got).max()), "max_steps": float(steps.max()),
            "frac_within_3_steps": float(np.mean(steps <= 3 + 1e-3)),
            "top1_match": top1, "sets": int(ref.shape[0])}


def fx_traceable(ctor):
    """torchvision's shufflenet unpacks x.size() and x.chunk() into tuples,
    which FX cannot trace ("Proxy object cannot be iterated"); the same
    block indexing them instead traces (and exports) the same graph."""
    if not ctor.startswith("shufflenet"):
        return
    import torch
    import torchvision.models.shufflenetv2 as sv2

    def channel_shuffle(x, groups: int):
        n, c, h, w = x.size(0), x.size(1), x.size(2), x.size(3)
        x = x.view(n, groups, c // groups, h, w)
        x = torch.transpose(x, 1, 2).contiguous()
        return x.view(n, c, h, w)

    def forward(self, x):
        if self.stride == 1:
            halves = x.chunk(2, dim=1)
            out = torch.cat((halves[0], self.branch2(halves[1])), dim=1)
        else:
            out = torch.cat((self.branch1(x), self.branch2(x)), dim=1)
        return channel_shuffle(out, 2)

    def qforward(self, x):  # the quantizable block concatenates with FloatFunctional
        if self.stride == 1:
            halves = x.chunk(2, dim=1)
            out = self.cat.cat([halves[0], self.branch2(halves[1])], dim=1)
        else:
            out = self.cat.cat([self.branch1(x), self.branch2(x)], dim=1)
        return channel_shuffle(out, 2)

    import torchvision.models.quantization.shufflenetv2 as qsv2
    sv2.channel_shuffle = channel_shuffle
    sv2.InvertedResidual.forward = forward
    qsv2.QuantizableInvertedResidual.forward = qforward


def export_one(name, engine, out_root, use_ort, torch, onnx):
    from torch.ao.quantization import get_default_qconfig_mapping
    from torch.ao.quantization.quantize_fx import prepare_fx, convert_fx
    import torchvision
    ctor, kwargs, hw = MODELS[name]
    ns = torchvision.models
    if ctor.startswith("q:"):
        ns, ctor = torchvision.models.quantization, ctor[2:]
        kwargs = dict(kwargs, quantize=False)
    torch.backends.quantized.engine = engine
    t = common.Timer()
    torch.manual_seed(SEED)
    rng = np.random.default_rng(SEED)

    def batch(n):
        return torch.from_numpy(rng.standard_normal((n, 3, hw, hw), dtype=np.float32))

    fx_traceable(ctor)
    model = getattr(ns, ctor)(weights=None, **kwargs)
    model.eval()
    common.reestimate_batchnorm(model, lambda i: batch(CALIB_BATCH))
    x = rng.standard_normal((1, 3, hw, hw), dtype=np.float32)
    xs = rng.standard_normal((N_SETS, 1, 3, hw, hw), dtype=np.float32)
    with torch.no_grad():
        yf = model(torch.from_numpy(x)).numpy()
    pm = prepare_fx(model, get_default_qconfig_mapping(engine), (torch.from_numpy(x),))
    with torch.no_grad():
        for _ in range(CALIB_BATCHES):
            pm(batch(CALIB_BATCH))
    qm = convert_fx(pm)
    with torch.no_grad():
        y = qm(torch.from_numpy(x)).numpy()
        ys = np.stack([qm(torch.from_numpy(xi)).numpy() for xi in xs])
    t_quant = t.lap()

    d = os.path.join(out_root, f"{name}_{engine}")
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, "model.onnx")
    tmp = path + ".tmp"
    torch.onnx.export(qm, (torch.from_numpy(x),), tmp, opset_version=13,
                      input_names=["input"], output_names=["output"])
    os.replace(tmp, path)
    t_export = t.lap()
    m = onnx.load(path)
    onnx.checker.check_model(m, full_check=True)
    scale, zp = output_quant(m)
    files = {"input_0.npy": x, "output_0.npy": y, "float_output_0.npy": yf,
             "inputs_20.npy": xs, "outputs_20.npy": ys}
    for f, arr in files.items():
        common.save_npy(os.path.join(d, f), arr)
    meta = {
        "name": name, "engine": engine, "opset": 13, "seed": SEED,
        "torchvision_ctor": f"{ns.__name__}.{ctor}", "ctor_kwargs": kwargs,
        "torch": torch.__version__, "onnx": onnx.__version__,
        "input_shape": list(x.shape), "output_shape": list(y.shape),
        "calibration": f"{CALIB_BATCHES} batches of {CALIB_BATCH} standard-normal images",
        "model_bytes": os.path.getsize(path), "nodes": len(m.graph.node),
        "ops": common.op_histogram(m), "output_scale": scale, "output_zero_point": zp,
        **weight_quant_axes(m),
        "output_std": float(y.std()), "output_absmax": float(np.abs(y).max()),
        "torch_int8_vs_float": compare(yf, y, scale),
        "seconds_quantize": round(t_quant, 3), "seconds_export": round(t_export, 3),
    }
    note = "ORT not installed"
    if use_ort and common.ort_available():
        tmpd = os.path.join(d, ".ort")
        for opt, tag in (("all", "ort"), ("disabled", "ort_noopt")):
            o1 = common.run_ort(path, [os.path.join(d, "input_0.npy")], tmpd, opt=opt)[0]
            o20 = common.run_ort(path, [os.path.join(d, "inputs_20.npy")], tmpd, opt=opt,
                                 batch=True)[0]
            common.save_npy(os.path.join(d, f"{tag}_output_0.npy"), o1)
            common.save_npy(os.path.join(d, f"{tag}_outputs_20.npy"), o20)
            meta[f"torch_vs_{tag}_20"] = compare(ys, o20, scale)
            meta[f"torch_vs_{tag}_input0"] = compare(y, o1, scale)
        meta["ort_vs_ort_noopt_20"] = compare(
            np.load(os.path.join(d, "ort_noopt_outputs_20.npy")),
            np.load(os.path.join(d, "ort_outputs_20.npy")), scale)
        common.remove_tree(tmpd)
        c = meta["torch_vs_ort_20"]
        note = (f"torch vs ORT: max {c['max_steps']:.0f} steps, "
                f"{100 * c['frac_within_3_steps']:.1f}% within 3, top-1 {c['top1_match']}/{c['sets']}")
    meta["seconds_ort"] = round(t.lap(), 3)
    common.write_json(os.path.join(d, "meta.json"), meta)
    common.log(f"{name}_{engine}: {meta['model_bytes'] / 1e6:.2f} MB, {meta['nodes']} nodes, "
               f"out scale {scale:.4g} zp {zp}, {note}; quantize {t_quant:.1f}s "
               f"export {t_export:.1f}s")
    return meta


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=common.DEFAULT_OUT)
    ap.add_argument("--models", default="resnet18,mobilenet_v2,mobilenet_v2_x0_25")
    ap.add_argument("--engines", default=",".join(ENGINES))
    ap.add_argument("--no-ort", action="store_true")
    a = ap.parse_args()
    import warnings
    warnings.filterwarnings("ignore")
    import torch
    import onnx
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    avail = torch.backends.quantized.supported_engines
    total = common.Timer()
    for name in [s for s in a.models.split(",") if s]:
        if name not in MODELS:
            raise SystemExit(f"make_quantized: unknown model {name} (known: {', '.join(MODELS)})")
        for engine in [s for s in a.engines.split(",") if s]:
            if engine not in avail:
                raise SystemExit(f"make_quantized: engine {engine} not in this torch "
                                 f"(has {', '.join(avail)})")
            export_one(name, engine, a.out, not a.no_ort, torch, onnx)
    common.log(f"make_quantized: done in {total.lap():.1f}s -> {a.out}")


if __name__ == "__main__":
    main()
