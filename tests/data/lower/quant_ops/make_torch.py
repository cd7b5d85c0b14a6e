#!/usr/bin/python3
"""A torch 1.13 FX-quantized (qnnpack, quint8) model exported to QDQ ONNX at
opset 13 the way tools/models/make_quantized.py does it, with the patterns
of the second quantized layer that torch exports: nearest and bilinear
upsampling (uint8 Resize), Sigmoid (fixed 1/256 output: TABLE), Add, Pad.
torch 1.13 cannot export quantized ConvTranspose2d or matmul to ONNX, and
FX leaves softmax / layer_norm in float, so those are not here.
Writes torch_upsample/: model.onnx, inputs_20.npy (20 float32 inputs stacked
[20, 1, 3, 8, 8]), torch_outputs_20.npy (torch's quantized kernels,
dequantized), and when tools/ort is installed ort_outputs_20.npy (ONNX
Runtime, all optimisations: fused integer kernels) and
ort_noopt_outputs_20.npy (optimisations disabled: the float QDQ semantics).
Run with Debian's python3:
    /usr/bin/python3 tests/data/lower/quant_ops/make_torch.py
"""
import os
import sys
import tempfile
import numpy as np
import torch
from torch.ao.quantization import get_default_qconfig_mapping
from torch.ao.quantization.quantize_fx import convert_fx, prepare_fx

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "..", "tools", "models"))
import common  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "torch_upsample")
torch.manual_seed(20261129)


class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.conv2 = torch.nn.Conv2d(8, 4, 1)

    def forward(self, x):
        y = torch.relu(self.conv(x))
        n = torch.nn.functional.interpolate(y, scale_factor=2, mode="nearest")
        b = torch.nn.functional.interpolate(y, scale_factor=2, mode="bilinear", align_corners=False)
        z = self.conv2(n + b)
        return torch.sigmoid(z)


def main():
    torch.backends.quantized.engine = "qnnpack"
    m = M().eval()
    x = torch.randn(1, 3, 8, 8)
    qm = prepare_fx(m, get_default_qconfig_mapping("qnnpack"), (x,))
    with torch.no_grad():
        for _ in range(8):
            qm(torch.randn(4, 3, 8, 8))
        qm = convert_fx(qm)
        xs = torch.randn(20, 1, 3, 8, 8)
        ys = torch.stack([qm(xs[k]) for k in range(20)])
    os.makedirs(OUT, exist_ok=True)
    model = os.path.join(OUT, "model.onnx")
    torch.onnx.export(qm, (xs[0],), model, opset_version=13)
    np.save(os.path.join(OUT, "inputs_20.npy"), xs.numpy())
    np.save(os.path.join(OUT, "torch_outputs_20.npy"), ys.numpy())
    with tempfile.TemporaryDirectory() as tmp:
        for opt, fname in (("all", "ort_outputs_20.npy"), ("disabled", "ort_noopt_outputs_20.npy")):
            outs = common.run_ort(model, [os.path.join(OUT, "inputs_20.npy")], os.path.join(tmp, opt), opt=opt,
                                  batch=True)
            if outs is not None:
                np.save(os.path.join(OUT, fname), outs[0].astype(np.float32))

main()
