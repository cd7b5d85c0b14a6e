#!/usr/bin/python3
"""Measure `ctosa quantize` on the networks of make_quantize_corpus.py:
SQNR against the float model with ONNX Runtime on the 8 evaluation inputs
(not the calibration ones) and on those and the 40 of eval_more.npy (48,
made here when the corpus predates it), for ctosa's QDQ model and for torch FX's
default recipe on the same weights, and how the QDQ model lowers under the
target (partitions, nodes delegated; every node but the boundary
QuantizeLinear / DequantizeLinear should be in one partition).

Usage: /usr/bin/python3 tools/models/eval_quantize.py [--corpus DIR]
         [--ctosa build/ctosa] [--models a,b] [--activations int8|int16]
         [--extra "ARGS"] [--json FILE]
(--extra="--int16 8" or --extra="--int16 auto --equalize": mixed
precision; the rows then give the int16 tensors chosen and the share of
MACs run twice.)
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
import make_quantize_corpus  # noqa: E402
import numpy as np  # noqa: E402


def sqnr(ref, got):
    ref = np.asarray(ref, np.float64)
    got = np.asarray(got, np.float64)
    noise = np.sum((ref - got) ** 2)
    return float("inf") if noise == 0 else float(10 * np.log10(np.sum(ref ** 2) / noise))


def ort(model, inputs, tmp):
    return common.run_ort(model, [inputs], tmp, opt="disabled", batch=True)[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", default=os.path.join(common.DEFAULT_OUT, "quantize"))
    ap.add_argument("--ctosa", default=os.path.join(common.REPO, "build", "ctosa"))
    ap.add_argument("--models", default="")
    ap.add_argument("--activations", default="int8")
    ap.add_argument("--extra", default="")
    ap.add_argument("--json", default="")
    a = ap.parse_args()
    if not common.ort_available():
        raise SystemExit("eval_quantize: tools/ort is not installed")
    names = [m for m in a.models.split(",") if m] or sorted(
        d for d in os.listdir(a.corpus) if os.path.exists(os.path.join(a.corpus, d, "float.onnx")))
    spec = "TOSA-1.0+INT+int16" if a.activations == "int16" else "TOSA-1.0+INT"
    rows = []
    for name in names:
        d = os.path.join(a.corpus, name)
        with tempfile.TemporaryDirectory() as tmp:
            t = common.Timer()
            cmd = [a.ctosa, "quantize", os.path.join(d, "float.onnx"), "--calibration",
                   "input=" + os.path.join(d, "calib.npy"), "--activations", a.activations, "-o", tmp, "-q"]
            cmd += a.extra.split()
            r = subprocess.run(cmd, capture_output=True, text=True)
            secs = t.lap()
            if r.returncode != 0:
                rows.append({"model": name, "error": r.stderr.strip()})
                common.log(f"{name}: quantize failed: {r.stderr.strip()}")
                continue
            qdq = os.path.join(tmp, "float.qdq.onnx")
            rep = json.load(open(os.path.join(tmp, "float.quant.json")))
            ev = os.path.join(d, "eval.npy")
            more = os.path.join(d, "eval_more.npy")
            if not os.path.exists(more):
                common.save_npy(more, make_quantize_corpus.eval_more(np.load(ev).shape))
            n8 = np.load(ev).shape[0]
            ev48 = os.path.join(tmp, "eval48.npy")
            common.save_npy(ev48, np.concatenate([np.load(ev), np.load(more)]))
            yf = ort(os.path.join(d, "float.onnx"), ev48, os.path.join(tmp, "o1"))
            yq = ort(qdq, ev48, os.path.join(tmp, "o2"))
            row = {"model": name, "activations": a.activations, "sqnr_ctosa": sqnr(yf[:n8], yq[:n8]),
                   "sqnr_ctosa_48": sqnr(yf, yq),
                   "sqnr_calib_report": rep["outputs"][0]["sqnr_db"], "seconds": round(secs, 1),
                   "float_nodes": len(rep["float_nodes"])}
            if "int16" in rep:  # --int16 N: how many, and the MACs run twice
                h = rep["int16"]
                row["int16_tensors"] = len(h["tensors"])
                row["int16_macs_pct"] = 100 * h["macs_int16_inputs"] / h["macs_model"] if h["macs_model"] else 0
            fx = os.path.join(d, "fx.onnx")
            if os.path.exists(fx):
                yx = ort(fx, ev48, os.path.join(tmp, "o3"))
                row["sqnr_fx"] = sqnr(yf[:n8], yx[:n8])
                row["sqnr_fx_48"] = sqnr(yf, yx)
            lo = subprocess.run([a.ctosa, "lower", qdq, "--spec", spec, "-o", os.path.join(tmp, "low"), "-q"],
                                capture_output=True, text=True)
            if lo.returncode == 0:
                lr = json.load(open(os.path.join(tmp, "low", "float.qdq.report.json")))
                fb = [f["op_type"] for f in lr["fallback"]]
                row.update({"partitions": len(lr["partitions"]), "nodes_delegated": lr["nodes_delegated"],
                            "nodes_total": lr["nodes_total"], "fallback": fb})
            rows.append(row)
            common.log(json.dumps(row))
    if a.json:
        common.write_json(a.json, rows)
    print("| network | ctosa SQNR dB (8) | torch FX (8) | ctosa (48) | torch FX (48) | partitions | delegated "
          "| fallback |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        if "error" in r:
            print(f"| {r['model']} | error | | | | | | {r['error'][:60]} |")
            continue
        fx = f"{r['sqnr_fx']:.2f}" if "sqnr_fx" in r else "-"
        fx48 = f"{r['sqnr_fx_48']:.2f}" if "sqnr_fx_48" in r else "-"
        print(f"| {r['model']} | {r['sqnr_ctosa']:.2f} | {fx} | {r['sqnr_ctosa_48']:.2f} | {fx48} | "
              f"{r.get('partitions', '?')} | "
              f"{r.get('nodes_delegated', '?')}/{r.get('nodes_total', '?')} | {' '.join(r.get('fallback', []))} |")


if __name__ == "__main__":
    main()
