#!/usr/bin/python3
"""Re-check a generated or committed model corpus: every folder with a
model.onnx and input_0.npy is run again through ONNX Runtime (tools/ort) and
compared with the reference files stored beside it.

  fp32 models (make_models.py)   ORT(all) vs output_0.npy (torch): <= 1e-4
                                 ORT(all) vs ort_output_0.npy: <= 1e-6
  QDQ models (make_quantized.py) ORT(all) and ORT(disabled) vs the stored
                                 ort_*output_0.npy: <= 1 output step (ORT
                                 itself is deterministic here; the slack is
                                 for other ORT builds), torch vs ORT printed
  LLMs (make_llm.py)             llm_reference.py and ORT(basic) vs
                                 output_0.npy: <= 1e-4
Usage: /usr/bin/python3 tools/models/verify_corpus.py [DIR ...]
       (default: tests/models). Exit 0 all ok, 1 a mismatch, 77 ORT missing.
"""
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
import numpy as np  # noqa: E402


def check_dir(d, tmp):
    meta_path = os.path.join(d, "meta.json")
    meta = json.load(open(meta_path)) if os.path.exists(meta_path) else {}
    model = os.path.join(d, "model.onnx")
    inp = [os.path.join(d, "input_0.npy")]
    problems = []

    def expect(what, a, b, tol):
        diff = common.max_abs_diff(a, b)
        ok = diff <= tol
        if not ok:
            problems.append(f"{what}: max |diff| {diff:.3g} > {tol:g}")
        return f"{what} {diff:.2g}"

    notes = []
    if "config" in meta:  # LLM
        import llm_reference
        ref = np.load(os.path.join(d, "output_0.npy"))
        got = llm_reference.reference_logits(model, np.load(inp[0]))
        notes.append(expect("numpy-ref vs stored", got, ref, 1e-4))
        o = common.run_ort(model, inp, tmp, opt="basic")[0]
        notes.append(expect("ORT(basic) vs ref", o, ref, 1e-4))
    elif "engine" in meta:  # QDQ
        step = meta["output_scale"]
        for opt, tag in (("all", "ort"), ("disabled", "ort_noopt")):
            o = common.run_ort(model, inp, tmp, opt=opt)[0]
            notes.append(expect(f"ORT({opt}) vs stored", o,
                                np.load(os.path.join(d, f"{tag}_output_0.npy")), step * 1.001))
        t = np.load(os.path.join(d, "output_0.npy"))
        notes.append(f"torch vs ORT {common.max_abs_diff(t, o) / step:.0f} steps")
    else:  # fp32 torch export
        o = common.run_ort(model, inp, tmp, opt="all")[0]
        notes.append(expect("ORT vs torch", o, np.load(os.path.join(d, "output_0.npy")), 1e-4))
        stored = os.path.join(d, "ort_output_0.npy")
        if os.path.exists(stored):
            notes.append(expect("ORT vs stored ORT", o, np.load(stored), 1e-6))
    return problems, notes


def main():
    dirs = sys.argv[1:] or [os.path.join(common.REPO, "tests", "models")]
    if not common.ort_available():
        common.log("verify_corpus: ONNX Runtime not installed (npm install --ignore-scripts "
                   "in tools/ort): skipped")
        return 77
    bad = 0
    n = 0
    with tempfile.TemporaryDirectory() as tmp:
        for root in dirs:
            for name in sorted(os.listdir(root)):
                d = os.path.join(root, name)
                if not os.path.isfile(os.path.join(d, "model.onnx")) or \
                        not os.path.isfile(os.path.join(d, "input_0.npy")):
                    continue
                n += 1
                try:
                    problems, notes = check_dir(d, tmp)
                except Exception as e:  # report and go on with the next model
                    problems, notes = [f"{type(e).__name__}: {e}"], []
                status = "FAIL" if problems else "ok"
                common.log(f"{status:4} {d}: " + "; ".join(notes + problems))
                bad += bool(problems)
    common.log(f"verify_corpus: {n - bad}/{n} models ok")
    return 1 if bad or n == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
