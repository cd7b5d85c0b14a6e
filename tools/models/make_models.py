#!/usr/bin/python3
"""Export the fp32 real-network corpus used to test `ctosa lower`.

Networks (random weights, fixed seeds, nothing downloaded):
  resnet18, mobilenet_v2, squeezenet1_1  torchvision 0.14, 1x3x224x224 input,
                                         BatchNorm statistics re-estimated on
                                         random data so outputs are not degenerate
  mobilenet_v2_x0_25                     mobilenet_v2 width 0.25, 100 classes,
                                         1x3x64x64 (small enough to commit)
  transformer_encoder                    torch.nn.TransformerEncoderLayer,
                                         d_model 64, 4 heads, ff 256, batch_first,
                                         input 1x16x64, dropout 0

For every network and opset it writes OUT/<name>_op<opset>/:
  model.onnx         the exported model (weights inline)
  input_0.npy        the random input (float32)
  output_0.npy       torch's output for it (float32)
  ort_output_0.npy   ONNX Runtime's output (only when tools/ort is installed)
  meta.json          sizes, op histogram, max |torch - ort|, timings

Usage: /usr/bin/python3 tools/models/make_models.py [--out DIR]
         [--models a,b,...] [--opsets 13,17] [--no-ort]
Default OUT is build-models/ at the top of the repo. The committed copies in
tests/models/ were made with --out tests/models --models transformer_encoder.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
import numpy as np  # noqa: E402

SEED = 20261129
CNNS = ("resnet18", "mobilenet_v2", "squeezenet1_1", "mobilenet_v2_x0_25")
# name -> (torchvision constructor, kwargs, input H=W). mobilenet_v2_x0_25 is
# not one of the acceptance networks: a 0.25-width, 100-class, 64x64 mobilenet_v2
# small enough to commit, for fast tests of the same graph structure.
CNN_SPECS = {"resnet18": ("resnet18", {}, 224), "mobilenet_v2": ("mobilenet_v2", {}, 224),
             "squeezenet1_1": ("squeezenet1_1", {}, 224),
             "mobilenet_v2_x0_25": ("mobilenet_v2", {"width_mult": 0.25, "num_classes": 100}, 64)}
ALL = CNNS + ("transformer_encoder",)
# Opsets exported when --opsets is not given: CNNs look the same at 13 and 17;
# the transformer gets LayerNormalization only from opset 17 on.
DEFAULT_OPSETS = {"resnet18": (13,), "mobilenet_v2": (13,), "squeezenet1_1": (13,),
                  "mobilenet_v2_x0_25": (13,),
                  "transformer_encoder": (13, 17)}


def build(name, torch):
    """Return (module in eval mode, input array, description)."""
    torch.manual_seed(SEED)
    rng = np.random.default_rng(SEED)
    if name in CNNS:
        import torchvision
        ctor, kwargs, hw = CNN_SPECS[name]
        model = getattr(torchvision.models, ctor)(weights=None, **kwargs)
        brng = np.random.default_rng(SEED + 1)
        nbn = common.reestimate_batchnorm(
            model, lambda i: torch.from_numpy(
                brng.standard_normal((8, 3, hw, hw), dtype=np.float32)))
        x = rng.standard_normal((1, 3, hw, hw), dtype=np.float32)
        return model, x, f"torchvision {name}, random weights, {nbn} BatchNorms re-estimated"
    if name == "transformer_encoder":
        model = torch.nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=256,
                                                 dropout=0.0, batch_first=True)
        model.eval()
        x = rng.standard_normal((1, 16, 64), dtype=np.float32)
        return model, x, "nn.TransformerEncoderLayer d_model=64 nhead=4 ff=256 relu post-norm"
    raise SystemExit(f"make_models: unknown model {name} (known: {', '.join(ALL)})")


def export_one(name, opset, out_root, use_ort, torch, onnx):
    t = common.Timer()
    model, x, desc = build(name, torch)
    t_build = t.lap()
    d = os.path.join(out_root, f"{name}_op{opset}")
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, "model.onnx")
    xt = torch.from_numpy(x)
    with torch.no_grad():
        y = model(xt).numpy()
    # Exported with autograd on: in eval mode under no_grad, 1.13's
    # TransformerEncoderLayer takes its fused fast path
    # (aten::_transformer_encoder_layer_fwd), which has no ONNX symbolic.
    tmp = path + ".tmp"
    torch.onnx.export(model, (xt,), tmp, opset_version=opset,
                      input_names=["input"], output_names=["output"],
                      do_constant_folding=True)
    os.replace(tmp, path)
    t_export = t.lap()
    m = onnx.load(path)
    onnx.checker.check_model(m, full_check=True)
    common.save_npy(os.path.join(d, "input_0.npy"), x)
    common.save_npy(os.path.join(d, "output_0.npy"), y)
    meta = {
        "name": name, "opset": opset, "description": desc, "seed": SEED,
        "torch": torch.__version__, "onnx": onnx.__version__,
        "input_shape": list(x.shape), "output_shape": list(y.shape),
        "model_bytes": os.path.getsize(path), "nodes": len(m.graph.node),
        "ops": common.op_histogram(m),
        "output_std": float(y.std()), "output_absmax": float(np.abs(y).max()),
        "seconds_build": round(t_build, 3), "seconds_export": round(t_export, 3),
    }
    ort_note = "ORT not installed"
    if use_ort:
        outs = common.run_ort(path, [os.path.join(d, "input_0.npy")],
                              os.path.join(d, ".ort"))
        if outs is not None:
            common.save_npy(os.path.join(d, "ort_output_0.npy"), outs[0])
            meta["max_abs_diff_torch_ort"] = common.max_abs_diff(y, outs[0])
            ort_note = f"|torch-ort| {meta['max_abs_diff_torch_ort']:.2e}"
        common.remove_tree(os.path.join(d, ".ort"))
    meta["seconds_ort"] = round(t.lap(), 3)
    common.write_json(os.path.join(d, "meta.json"), meta)
    common.log(f"{name}_op{opset}: {meta['model_bytes'] / 1e6:.2f} MB, {meta['nodes']} nodes, "
               f"out std {meta['output_std']:.3g}, {ort_note}, "
               f"build {t_build:.2f}s export {t_export:.2f}s")
    return meta


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=common.DEFAULT_OUT)
    ap.add_argument("--models", default=",".join(ALL))
    ap.add_argument("--opsets", default=None, help="comma list; default per model")
    ap.add_argument("--no-ort", action="store_true", help="skip ONNX Runtime outputs")
    a = ap.parse_args()
    import torch
    import onnx
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    total = common.Timer()
    for name in [s for s in a.models.split(",") if s]:
        if name not in ALL:
            raise SystemExit(f"make_models: unknown model {name} (known: {', '.join(ALL)})")
        opsets = ([int(s) for s in a.opsets.split(",")] if a.opsets
                  else DEFAULT_OPSETS[name])
        for opset in opsets:
            export_one(name, opset, a.out, not a.no_ort, torch, onnx)
    common.log(f"make_models: done in {total.lap():.1f}s -> {a.out}")


if __name__ == "__main__":
    main()
