#!/usr/bin/python3
"""Float torchvision networks for `ctosa quantize`, with torch FX's default
post-training quantization of the same weights on the same data as the
baseline to beat (docs/quantize.md, "Measured").

For every network: random weights (fixed seed), BatchNorm statistics
re-estimated on random data (else a random-weight network's activations
vanish), float export at opset 13, 16 calibration and 8 evaluation inputs
(standard normal), and 40 more evaluation inputs from a second seed (so
that figures on 48 held-out inputs are not sampling noise). The FX
baseline is prepare_fx with get_default_qconfig_mapping("qnnpack")
calibrated on the same 16 inputs, convert_fx and exported as QDQ at opset
13.

Writes OUT/<net>/:
  float.onnx              the float model (input "input", output "output")
  calib.npy               [16, 1, 3, H, W] calibration inputs
  eval.npy                [8, 1, 3, H, W] evaluation inputs
  eval_more.npy           [40, 1, 3, H, W] more evaluation inputs (seed SEED + 1)
  fx.onnx                 torch FX's QDQ model (omitted with --no-fx)
  meta.json               shapes, node counts, timings

Usage: /usr/bin/python3 tools/models/make_quantize_corpus.py [--out DIR]
         [--models resnet18,...] [--small] [--no-fx] [--seed N]
--small makes the two models the default test suite quantizes, into
tests/models/quantize/ (committed): mobilenet_v3_small at width 0.5, 64x64,
10 classes, and a hand-built graph with MaxPool, Concat, x*Sigmoid(x) and
Sin (which TOSA's INT profile cannot run).
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
import numpy as np  # noqa: E402

SEED = 20261201
N_CALIB = 16
N_EVAL = 8
N_EVAL_MORE = 40


def eval_more(shape, n=N_EVAL_MORE):
    """The extra evaluation inputs: their own generator, so that the
    calibration and first evaluation inputs stay what they were."""
    return np.random.default_rng(SEED + 1).standard_normal((n, 1) + tuple(shape[-3:]), dtype=np.float32)


# name: (torchvision.models constructor ("q:" in torchvision.models.quantization,
# float until FX converts it), kwargs, input H=W)
MODELS = {
    "resnet18": ("resnet18", {}, 224),
    "mobilenet_v2": ("mobilenet_v2", {}, 224),
    "mobilenet_v3_small": ("mobilenet_v3_small", {}, 224),
    "mobilenet_v3_large": ("mobilenet_v3_large", {}, 224),
    "efficientnet_b0": ("efficientnet_b0", {}, 224),
    "regnet_x_400mf": ("regnet_x_400mf", {}, 224),
    # the quantizable definition: FX cannot trace the plain one's channel shuffle
    "shufflenet_v2": ("q:shufflenet_v2_x1_0", {}, 224),
    "squeezenet1_1": ("squeezenet1_1", {}, 224),
    "mobilenet_v3_small_64": ("mobilenet_v3_small", {"num_classes": 10}, 64),
    # committed for the default test suite (tests/models/quantize/)
    "mobilenet_v3_small_x0_5_64": ("mobilenet_v3_small", {"num_classes": 10, "width_mult": 0.5}, 64),
}
SMALL = "mobilenet_v3_small_x0_5_64"


def make_tiny(out_root, onnx):
    """A hand-built graph with what the networks above lack: MaxPool and a
    Concat of two branches (shared parameters), x * Sigmoid(x), and Sin,
    which TOSA's INT profile cannot run (it must stay float)."""
    from onnx import helper, numpy_helper, TensorProto
    rng = np.random.default_rng(SEED)

    def w(name, *shape):
        return numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32) * 0.3, name)

    inits = [w("c0w", 8, 3, 3, 3), w("c0b", 8), w("c1w", 4, 8, 1, 1), w("c1b", 4), w("c2w", 4, 8, 3, 3),
             w("c2b", 4), w("fcw", 5, 8), w("fcb", 5)]
    nodes = [
        helper.make_node("Conv", ["x", "c0w", "c0b"], ["c0"], name="conv0", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c0"], ["r0"], name="relu0"),
        helper.make_node("MaxPool", ["r0"], ["p0"], name="pool0", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["p0", "c1w", "c1b"], ["c1"], name="conv1"),
        helper.make_node("Conv", ["p0", "c2w", "c2b"], ["c2"], name="conv2", pads=[1, 1, 1, 1]),
        helper.make_node("Concat", ["c1", "c2"], ["cat"], name="concat", axis=1),
        helper.make_node("Sigmoid", ["cat"], ["sg"], name="sigmoid"),
        helper.make_node("Mul", ["cat", "sg"], ["silu"], name="silu"),
        helper.make_node("Sin", ["silu"], ["sin"], name="sin"),
        helper.make_node("GlobalAveragePool", ["sin"], ["gap"], name="gap"),
        helper.make_node("Flatten", ["gap"], ["flat"], name="flatten"),
        helper.make_node("Gemm", ["flat", "fcw", "fcb"], ["y"], name="fc", transB=1),
    ]
    g = helper.make_graph(nodes, "tiny_concat_sin",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 5])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], producer_name="ctosa-tests")
    m.ir_version = 7
    onnx.checker.check_model(m, full_check=True)
    d = os.path.join(out_root, "tiny_concat_sin")
    os.makedirs(d, exist_ok=True)
    onnx.save(m, os.path.join(d, "float.onnx"))
    common.save_npy(os.path.join(d, "calib.npy"), rng.standard_normal((8, 1, 3, 16, 16), dtype=np.float32))
    common.save_npy(os.path.join(d, "eval.npy"), rng.standard_normal((4, 1, 3, 16, 16), dtype=np.float32))
    common.log("tiny_concat_sin: written")


def make_one(name, out_root, with_fx, torch, onnx, n_calib=N_CALIB, n_eval=N_EVAL):
    import torchvision
    ctor, kwargs, hw = MODELS[name]
    ns = torchvision.models
    if ctor.startswith("q:"):
        ns, ctor = torchvision.models.quantization, ctor[2:]
        kwargs = dict(kwargs, quantize=False)
    t = common.Timer()
    torch.manual_seed(SEED)
    rng = np.random.default_rng(SEED)
    model = getattr(ns, ctor)(weights=None, **kwargs)
    model.eval()
    common.reestimate_batchnorm(
        model, lambda i: torch.from_numpy(rng.standard_normal((8, 3, hw, hw), dtype=np.float32)))
    calib = rng.standard_normal((n_calib, 1, 3, hw, hw), dtype=np.float32)
    ev = rng.standard_normal((n_eval, 1, 3, hw, hw), dtype=np.float32)
    d = os.path.join(out_root, name)
    os.makedirs(d, exist_ok=True)
    x0 = torch.from_numpy(calib[0])
    path = os.path.join(d, "float.onnx")
    torch.onnx.export(model, (x0,), path + ".tmp", opset_version=13,
                      input_names=["input"], output_names=["output"])
    os.replace(path + ".tmp", path)
    common.save_npy(os.path.join(d, "calib.npy"), calib)
    common.save_npy(os.path.join(d, "eval.npy"), ev)
    if n_eval == N_EVAL:
        common.save_npy(os.path.join(d, "eval_more.npy"), eval_more(ev.shape))
    meta = {"name": name, "ctor": f"{ns.__name__}.{ctor}", "kwargs": kwargs, "seed": SEED,
            "input_shape": [1, 3, hw, hw], "calib": n_calib, "eval": n_eval,
            "float_nodes": len(onnx.load(path).graph.node), "seconds_float": round(t.lap(), 2)}
    if with_fx:
        from torch.ao.quantization import get_default_qconfig_mapping
        from torch.ao.quantization.quantize_fx import prepare_fx, convert_fx
        import copy
        torch.backends.quantized.engine = "qnnpack"
        try:
            pm = prepare_fx(copy.deepcopy(model), get_default_qconfig_mapping("qnnpack"), (x0,))
        except Exception as ex:  # shufflenet's channel shuffle: FX cannot trace it
            meta["fx_error"] = f"{type(ex).__name__}: {str(ex).splitlines()[0]}"
            common.write_json(os.path.join(d, "meta.json"), meta)
            common.log(f"{name}: {meta}")
            return
        with torch.no_grad():
            for x in calib:
                pm(torch.from_numpy(x))
        qm = convert_fx(pm)
        fx = os.path.join(d, "fx.onnx")
        try:
            torch.onnx.export(qm, (x0,), fx + ".tmp", opset_version=13,
                              input_names=["input"], output_names=["output"])
        except Exception as ex:  # squeezenet: torch 1.13 cannot export a quantized Concat
            meta["fx_error"] = f"{type(ex).__name__}: {str(ex).splitlines()[0]}"
            common.write_json(os.path.join(d, "meta.json"), meta)
            common.log(f"{name}: {meta}")
            return
        os.replace(fx + ".tmp", fx)
        meta["fx_nodes"] = len(onnx.load(fx).graph.node)
        meta["seconds_fx"] = round(t.lap(), 2)
    common.write_json(os.path.join(d, "meta.json"), meta)
    common.log(f"{name}: {meta}")


def main():
    global SEED
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(common.DEFAULT_OUT, "quantize"))
    ap.add_argument("--models", default=",".join(m for m in MODELS if not m.endswith("_64")))
    ap.add_argument("--small", action="store_true")
    ap.add_argument("--no-fx", action="store_true")
    ap.add_argument("--seed", type=int, default=SEED,
                    help="weights and inputs (another seed: networks the defaults were not tuned on)")
    a = ap.parse_args()
    SEED = a.seed
    import warnings
    warnings.filterwarnings("ignore")
    import torch
    import onnx
    torch.set_num_threads(1)
    if a.small:
        # committed: tests/models/quantize (8 calibration, 4 evaluation inputs)
        out = os.path.join(common.REPO, "tests", "models", "quantize") if a.out == ap.get_default("out") else a.out
        make_one(SMALL, out, False, torch, onnx, n_calib=8, n_eval=4)
        make_tiny(out, onnx)
        return
    for name in [s for s in a.models.split(",") if s]:
        if name not in MODELS:
            raise SystemExit(f"make_quantize_corpus: unknown model {name} (known: {', '.join(MODELS)})")
        make_one(name, a.out, not a.no_fx, torch, onnx)


if __name__ == "__main__":
    main()
