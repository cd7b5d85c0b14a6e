#!/usr/bin/python3
"""Make the float networks bench/bench_ort.sh times against ONNX Runtime.

Random weights from fixed seeds, nothing downloaded (Debian's python3-torch
1.13 and python3-torchvision 0.14). Each network goes to OUT/<name>/:
  model.onnx     exported with torch.onnx.export (opset 13, or 17 where the
                 network has LayerNorm, so it stays one LayerNormalization)
  input_0.npy    a random input (float32; int64 token ids for gpt2_decoder)

Usage: /usr/bin/python3 bench/make_networks.py [--out DIR] [--only a,b,...] [--list]
Default OUT is build-models/bench at the top of the repository (ignored by
git; the models are generated, never committed). Existing model.onnx files
are kept unless --force.

The set covers the families the interpreter must keep up on: CNNs of every
family (plain, residual, depthwise, grouped, squeeze-excite, inception,
channel shuffle), large fully-connected layers (AlexNet, VGG), segmentation
(DeepLabV3 with dilated convolutions and bilinear RESIZE), 1-D and 3-D
convolutions, transformers (ViT-style encoder, GPT-2-style decoder with a
causal mask), a diffusion-style UNet block (GroupNorm, SiLU, attention) and a
YOLO-style detection neck (SiLU, nearest upsampling, concatenation).
"""
import argparse
import math
import os
import sys

import numpy as np

SEED = 20261201


def tv_models():
    import torchvision
    return torchvision.models


def reestimate_bn(torch, model, shape):
    """BatchNorm statistics from random batches, so activations keep a
    sensible scale through deep networks (random init would make them
    vanish or explode)."""
    bns = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    if not bns:
        model.eval()
        return
    for m in bns:
        m.reset_running_stats()
        m.momentum = None
    model.train()
    g = torch.Generator().manual_seed(SEED + 1)
    with torch.no_grad():
        for _ in range(2):
            model(torch.randn((2,) + tuple(shape[1:]), generator=g))
    model.eval()


def cnn(name, hw=224, **kw):
    def make(torch):
        m = getattr(tv_models(), name)(weights=None, **kw)
        shape = (1, 3, hw, hw)
        reestimate_bn(torch, m, shape)
        return m, [np.random.default_rng(SEED).standard_normal(shape, dtype=np.float32)], 13
    return make


def deeplab(torch):
    m = tv_models().segmentation.deeplabv3_mobilenet_v3_large(weights=None, weights_backbone=None,
                                                               num_classes=21, aux_loss=False)

    class Out(torch.nn.Module):  # the dict output -> one tensor
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, x):
            return self.m(x)["out"]
    shape = (1, 3, 256, 256)
    w = Out(m)
    reestimate_bn(torch, w, shape)
    return w, [np.random.default_rng(SEED).standard_normal(shape, dtype=np.float32)], 13


def audio_conv1d(torch):
    """M5-style raw-waveform classifier: strided and plain Conv1d, BatchNorm,
    ReLU, MaxPool1d, global average, Linear."""
    nn = torch.nn

    class M5(nn.Module):
        def __init__(self, ch=128, classes=35):
            super().__init__()
            layers, cin = [], 1
            for i, (k, s, c) in enumerate([(80, 4, ch), (3, 1, ch), (3, 1, 2 * ch), (3, 1, 2 * ch)]):
                layers += [nn.Conv1d(cin, c, k, stride=s, padding=k // 2), nn.BatchNorm1d(c), nn.ReLU(),
                           nn.MaxPool1d(4 if i < 3 else 2)]
                cin = c
            self.f = nn.Sequential(*layers)
            self.fc = nn.Linear(cin, classes)

        def forward(self, x):
            return self.fc(self.f(x).mean(dim=2))
    shape = (1, 1, 16000)
    m = M5()
    reestimate_bn(torch, m, shape)
    return m, [np.random.default_rng(SEED).standard_normal(shape, dtype=np.float32)], 13


def video_conv3d(torch):
    """C3D-style clip classifier: Conv3d 3x3x3, BatchNorm3d, ReLU, MaxPool3d."""
    nn = torch.nn

    def blk(a, b, pool):
        return [nn.Conv3d(a, b, 3, padding=1), nn.BatchNorm3d(b), nn.ReLU(), nn.MaxPool3d(pool)]
    m = nn.Sequential(*blk(3, 32, (1, 2, 2)), *blk(32, 64, 2), *blk(64, 128, 2), *blk(128, 128, 2),
                      nn.AdaptiveAvgPool3d(1), nn.Flatten(), nn.Linear(128, 101))
    shape = (1, 3, 16, 64, 64)
    reestimate_bn(torch, m, shape)
    return m, [np.random.default_rng(SEED).standard_normal(shape, dtype=np.float32)], 13


def vit(torch):
    """ViT-Tiny-shaped encoder: 16x16 patches of a 224 image, 197 tokens,
    width 192, 3 heads, 6 layers, GELU MLP, pre-norm LayerNorm."""
    nn = torch.nn

    class ViT(nn.Module):
        def __init__(self, d=192, heads=3, layers=6, classes=1000):
            super().__init__()
            self.patch = nn.Conv2d(3, d, 16, stride=16)
            self.cls = nn.Parameter(torch.randn(1, 1, d) * 0.02)
            self.pos = nn.Parameter(torch.randn(1, 197, d) * 0.02)
            el = nn.TransformerEncoderLayer(d, heads, 4 * d, dropout=0.0, activation="gelu",
                                            batch_first=True, norm_first=True)
            self.enc = nn.TransformerEncoder(el, layers, enable_nested_tensor=False)
            self.norm = nn.LayerNorm(d)
            self.head = nn.Linear(d, classes)

        def forward(self, x):
            t = self.patch(x).flatten(2).transpose(1, 2)
            t = torch.cat([self.cls.expand(t.shape[0], -1, -1), t], dim=1) + self.pos
            return self.head(self.norm(self.enc(t))[:, 0])
    m = ViT().eval()
    return m, [np.random.default_rng(SEED).standard_normal((1, 3, 224, 224), dtype=np.float32)], 17


def gpt2(torch):
    """GPT-2-style decoder: token + position embeddings, 4 pre-norm blocks of
    causal self-attention (explicit Q/K/V MATMULs and softmax) and a GELU MLP,
    width 256, 4 heads, 128 tokens, 8192-word tied output projection."""
    nn = torch.nn

    class Block(nn.Module):
        def __init__(self, d, h):
            super().__init__()
            self.h = h
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.fc, self.out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

        def forward(self, x, mask):
            b, t, d = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
            q, k, v = (z.reshape(b, t, self.h, d // self.h).transpose(1, 2) for z in (q, k, v))
            a = (q @ k.transpose(2, 3)) * (1.0 / math.sqrt(d // self.h)) + mask
            y = (a.softmax(-1) @ v).transpose(1, 2).reshape(b, t, d)
            x = x + self.proj(y)
            return x + self.out(nn.functional.gelu(self.fc(self.ln2(x))))

    class GPT(nn.Module):
        def __init__(self, vocab=8192, d=256, h=4, layers=4, t=128):
            super().__init__()
            self.wte, self.wpe = nn.Embedding(vocab, d), nn.Embedding(t, d)
            self.blocks = nn.ModuleList([Block(d, h) for _ in range(layers)])
            self.ln = nn.LayerNorm(d)
            self.register_buffer("mask", torch.triu(torch.full((t, t), -1e4), 1))
            self.register_buffer("posi", torch.arange(t).unsqueeze(0))

        def forward(self, ids):
            x = self.wte(ids) + self.wpe(self.posi)
            for b in self.blocks:
                x = b(x, self.mask)
            return self.ln(x) @ self.wte.weight.t()
    m = GPT().eval()
    ids = np.random.default_rng(SEED).integers(0, 8192, (1, 128), dtype=np.int64)
    return m, [ids], 17


def unet_block(torch):
    """Diffusion-UNet-style middle block at 32x32, 128 channels: two ResNet
    blocks (GroupNorm(32), SiLU, 3x3 conv) around a spatial self-attention
    block (GroupNorm, 1x1 Q/K/V, softmax over 1024 positions)."""
    nn = torch.nn

    class Res(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.n1, self.n2 = nn.GroupNorm(32, c), nn.GroupNorm(32, c)
            self.c1, self.c2 = nn.Conv2d(c, c, 3, padding=1), nn.Conv2d(c, c, 3, padding=1)

        def forward(self, x):
            h = self.c1(nn.functional.silu(self.n1(x)))
            return x + self.c2(nn.functional.silu(self.n2(h)))

    class Attn(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.n = nn.GroupNorm(32, c)
            self.qkv, self.o = nn.Conv2d(c, 3 * c, 1), nn.Conv2d(c, c, 1)

        def forward(self, x):
            b, c, hh, ww = x.shape
            q, k, v = self.qkv(self.n(x)).reshape(b, 3, c, hh * ww).unbind(1)
            a = (q.transpose(1, 2) @ k * (c ** -0.5)).softmax(-1)
            return x + self.o((v @ a.transpose(1, 2)).reshape(b, c, hh, ww))

    class Mid(nn.Module):
        def __init__(self, c=128):
            super().__init__()
            self.r1, self.a, self.r2 = Res(c), Attn(c), Res(c)

        def forward(self, x):
            return self.r2(self.a(self.r1(x)))
    m = Mid().eval()
    return m, [np.random.default_rng(SEED).standard_normal((1, 128, 32, 32), dtype=np.float32)], 13


def yolo_neck(torch):
    """YOLO-style backbone and FPN neck at 320x320: strided 3x3 Conv-BN-SiLU
    stages, nearest 2x upsampling and concatenation, three 1x1 heads."""
    nn = torch.nn

    def cbs(a, b, k=3, s=1):
        return nn.Sequential(nn.Conv2d(a, b, k, s, k // 2, bias=False), nn.BatchNorm2d(b), nn.SiLU())

    class Y(nn.Module):
        def __init__(self, na=3 * 85):
            super().__init__()
            self.s1 = nn.Sequential(cbs(3, 16, 3, 2), cbs(16, 32, 3, 2), cbs(32, 32), cbs(32, 64, 3, 2))
            self.s2 = nn.Sequential(cbs(64, 64), cbs(64, 128, 3, 2))
            self.s3 = nn.Sequential(cbs(128, 128), cbs(128, 256, 3, 2))
            self.l3, self.l2 = cbs(256, 128, 1), cbs(128, 64, 1)
            self.m2, self.m1 = cbs(256, 128), cbs(128, 64)
            self.up = nn.Upsample(scale_factor=2, mode="nearest")
            self.h1, self.h2, self.h3 = nn.Conv2d(64, na, 1), nn.Conv2d(128, na, 1), nn.Conv2d(256, na, 1)

        def forward(self, x):
            p1 = self.s1(x)
            p2 = self.s2(p1)
            p3 = self.s3(p2)
            u2 = self.m2(torch.cat([self.up(self.l3(p3)), p2], 1))
            u1 = self.m1(torch.cat([self.up(self.l2(u2)), p1], 1))
            return (self.h1(u1).flatten(2), self.h2(u2).flatten(2), self.h3(p3).flatten(2))
    shape = (1, 3, 320, 320)
    m = Y()
    reestimate_bn(torch, m, shape)
    return m, [np.random.default_rng(SEED).standard_normal(shape, dtype=np.float32)], 13


NETWORKS = {
    "resnet18": cnn("resnet18"),
    "mobilenet_v2": cnn("mobilenet_v2"),
    "mobilenet_v3_large": cnn("mobilenet_v3_large"),
    "squeezenet1_1": cnn("squeezenet1_1"),
    "alexnet": cnn("alexnet"),
    "vgg11": cnn("vgg11"),
    "shufflenet_v2": cnn("shufflenet_v2_x1_0"),
    "efficientnet_b0": cnn("efficientnet_b0"),
    "regnet_x_400mf": cnn("regnet_x_400mf"),
    "googlenet": cnn("googlenet", aux_logits=False, init_weights=True),
    "deeplabv3_mbv3": deeplab,
    "conv1d_audio": audio_conv1d,
    "conv3d_video": video_conv3d,
    "vit_tiny": vit,
    "gpt2_decoder": gpt2,
    "unet_block": unet_block,
    "yolo_neck": yolo_neck,
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--out", default=os.path.join(here, "..", "build-models", "bench"))
    ap.add_argument("--only", default="")
    ap.add_argument("--force", action="store_true")
    ap.add_argument("--list", action="store_true")
    a = ap.parse_args()
    if a.list:
        print("\n".join(NETWORKS))
        return 0
    names = [n for n in a.only.split(",") if n] or list(NETWORKS)
    for n in names:
        if n not in NETWORKS:
            print(f"make_networks: unknown network '{n}' (known: {', '.join(NETWORKS)})", file=sys.stderr)
            return 2
    import torch
    torch.set_num_threads(1)
    for n in names:
        d = os.path.join(a.out, n)
        path = os.path.join(d, "model.onnx")
        if os.path.exists(path) and not a.force:
            continue
        os.makedirs(d, exist_ok=True)
        torch.manual_seed(SEED)
        model, inputs, opset = NETWORKS[n](torch)
        model.eval()
        args = tuple(torch.from_numpy(x) for x in inputs)
        with torch.no_grad():
            outs = model(*args)
        n_out = len(outs) if isinstance(outs, tuple) else 1
        tmp = path + ".tmp"
        # Exported with autograd on: under no_grad torch 1.13 takes the fused
        # transformer fast path, which has no ONNX export.
        torch.onnx.export(model, args, tmp, opset_version=opset,
                          input_names=[f"input_{i}" for i in range(len(inputs))],
                          output_names=[f"output_{i}" for i in range(n_out)], do_constant_folding=True)
        os.replace(tmp, path)
        for i, x in enumerate(inputs):
            np.save(os.path.join(d, f"input_{i}.npy"), x)
        print(f"make_networks: {n}: {os.path.getsize(path) / 1e6:.1f} MB", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
