#!/usr/bin/python3
"""Measure `ctosa quantize` on the networks of make_quantize_corpus.py:
SQNR against the float model with ONNX Runtime on the 8 evaluation inputs
(not the calibration ones), for ctosa's QDQ model and for torch FX's
default recipe on the same weights, and how the QDQ model lowers under the
target (partitions, nodes delegated; every node but the boundary
QuantizeLinear / DequantizeLinear should be in one partition).

Usage: /usr/bin/python3 tools/models/eval_quantize.py [--corpus DIR]
         [--ctosa build/ctosa] [--models a,b] [--activations int8|int16]
         [--extra "ARGS"] [--json FILE]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
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
            yf = ort(os.path.join(d, "float.onnx"), ev, os.path.join(tmp, "o1"))
            yq = ort(qdq, ev, os.path.join(tmp, "o2"))
            row = {"model": name, "activations": a.activations, "sqnr_ctosa": sqnr(yf, yq),
                   "sqnr_calib_report": rep["outputs"][0]["sqnr_db"], "seconds": round(secs, 1),
                   "float_nodes": len(rep["float_nodes"])}
            fx = os.path.join(d, "fx.onnx")
            if os.path.exists(fx):
                row["sqnr_fx"] = sqnr(yf, ort(fx, ev, os.path.join(tmp, "o3")))
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
    print("| network | ctosa SQNR dB | torch FX SQNR dB | partitions | delegated | fallback |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        if "error" in r:
            print(f"| {r['model']} | error | | | | {r['error'][:60]} |")
            continue
        fx = f"{r['sqnr_fx']:.2f}" if "sqnr_fx" in r else "-"
        print(f"| {r['model']} | {r['sqnr_ctosa']:.2f} | {fx} | {r.get('partitions', '?')} | "
              f"{r.get('nodes_delegated', '?')}/{r.get('nodes_total', '?')} | {' '.join(r.get('fallback', []))} |")


if __name__ == "__main__":
    main()
