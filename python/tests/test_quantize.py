"""ctosa.quantize(): the Python form of `ctosa quantize` (docs/quantize.md)."""
import json
import os

import numpy as np
import pytest

import ctosa

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TINY = os.path.join(REPO, "tests", "models", "quantize", "tiny_concat_sin")


def test_quantize_arrays_and_paths(tmp_path):
    calib = np.load(os.path.join(TINY, "calib.npy"))
    r = ctosa.quantize(os.path.join(TINY, "float.onnx"), {"x": calib}, tmp_path / "a")
    assert os.path.exists(r.qdq_path) and r.qdq_path.endswith("float.qdq.onnx")
    assert r.report["activations"] == "int8" and r.report["method"] == "mse"
    assert r.report["bias_correction"] == "float"
    assert r.sqnr["y"] > 20
    assert [f["op_type"] for f in r.float_nodes] == ["Sin"]
    # the same samples from the file give the same model
    r2 = ctosa.quantize(os.path.join(TINY, "float.onnx"), {"x": os.path.join(TINY, "calib.npy")}, tmp_path / "b")
    assert open(r.qdq_path, "rb").read() == open(r2.qdq_path, "rb").read()
    # the QDQ model lowers: Sin and the boundaries stay on the CPU
    low = ctosa.lower(r.qdq_path, "TOSA-1.0+INT")
    assert sorted({f.op_type for f in low.fallback}) == ["DequantizeLinear", "QuantizeLinear", "Sin"]


def test_quantize_int16_and_methods(tmp_path):
    calib = np.load(os.path.join(TINY, "calib.npy"))
    r = ctosa.quantize(os.path.join(TINY, "float.onnx"), {"x": calib}, tmp_path, activations="int16",
                       method="percentile", percentile=99.9, stem="t16")
    assert r.report["spec"] == "TOSA-1.0+INT+int16" and r.report["percentile"] == 99.9
    assert os.path.basename(r.qdq_path) == "t16.qdq.onnx"
    assert all(t["zero_point"] == 0 for t in r.report["tensors"] if "scale" in t)
    with open(r.report_path) as f:
        assert json.load(f)["outputs"] == r.report["outputs"]


def test_quantize_errors(tmp_path):
    m = os.path.join(TINY, "float.onnx")
    with pytest.raises(ctosa.UsageError):
        ctosa.quantize(m, {"x": np.zeros((2, 1, 3, 16, 16), np.float32)}, tmp_path, activations="int4")
    with pytest.raises(ctosa.Error) as ei:
        ctosa.quantize(m, {"x": np.zeros((2, 1, 3, 8, 8), np.float32)}, tmp_path / "bad")
    assert "calibration" in str(ei.value) and "[N,1,3,16,16]" in str(ei.value)
    assert not os.path.exists(tmp_path / "bad" / "float.qdq.onnx")
    with pytest.raises(ctosa.UsageError):
        ctosa.quantize(m, {"x": np.zeros((2, 1, 3, 16, 16), np.float32)}, tmp_path, method="entropy")
    with pytest.raises(ctosa.UsageError):
        ctosa.quantize(m, {"x": np.zeros((2, 1, 3, 16, 16), np.float32)}, tmp_path, bias_correction="half")


def test_quantize_bias_modes(tmp_path):
    calib = np.load(os.path.join(TINY, "calib.npy"))
    m = os.path.join(TINY, "float.onnx")
    r = {b: ctosa.quantize(m, {"x": calib}, tmp_path / str(b), bias_correction=b)
         for b in ("sequential", False)}
    assert r["sequential"].report["bias_correction"] == "sequential"
    assert r[False].report["bias_correction"] == "off"
    # sequential correction matches the calibration samples' means at least
    # as well as no correction
    assert r["sequential"].sqnr["y"] >= r[False].sqnr["y"] - 0.05, (r["sequential"].sqnr, r[False].sqnr)


def test_quantize_range_search(tmp_path):
    calib = np.load(os.path.join(TINY, "calib.npy"))
    m = os.path.join(TINY, "float.onnx")
    plain = ctosa.quantize(m, {"x": calib}, tmp_path / "a")
    r = ctosa.quantize(m, {"x": calib}, tmp_path / "b", range_search=True)
    assert "range_search" not in plain.report
    s = r.report["range_search"]
    assert s["changed"] >= 1 and s["sqnr_db_after"] >= s["sqnr_db_before"], s
    # the search starts from the default model
    assert abs(s["sqnr_db_before"] - plain.sqnr["y"]) < 1e-6, (s, plain.sqnr)
    changed = [a["name"] for a, b in zip(plain.report["tensors"], r.report["tensors"])
               if a.get("range") != b.get("range")]
    assert len(changed) >= s["changed"], (changed, s)


def test_quantize_int16_tensors(tmp_path):
    calib = np.load(os.path.join(TINY, "calib.npy"))
    m = os.path.join(TINY, "float.onnx")
    r = ctosa.quantize(m, {"x": calib}, tmp_path, int16=1)
    h = r.report["int16"]
    assert h["candidates"] >= 1 and h["runs"] >= h["candidates"] + 1 and len(h["tensors"]) <= 1, h
    t = {x["name"]: x for x in r.report["tensors"]}
    assert all(t[n]["dtype"] == "int16" and t[n]["zero_point"] == 0 for n in h["tensors"]), h
    assert sum(x.get("dtype") == "int16" for x in r.report["tensors"]) == len(h["tensors"])


def test_quantize_int16_auto(tmp_path):
    """int16="auto": int16 tensors chosen within a MAC budget (`--int16 auto`)."""
    d = os.path.join(REPO, "tests", "models", "quantize", "mobilenet_v3_small_x0_5_64")
    m, calib = os.path.join(d, "float.onnx"), os.path.join(d, "calib.npy")
    plain = ctosa.quantize(m, {"input": calib}, tmp_path / "a", max_samples=4)
    r = ctosa.quantize(m, {"input": calib}, tmp_path / "b", int16="auto", max_samples=4)
    b = ctosa.quantize(m, {"input": calib}, tmp_path / "c", int16_budget=3, max_samples=4)
    assert "int16" not in plain.report
    for x, pct in ((r.report["int16"], 25), (b.report["int16"], 3)):
        assert x["mode"] == "budget" and x["budget_pct"] == pct, x
        assert len(x["tensors"]) >= 1 and 0 <= x["macs_twice_pct"] <= pct * (1 + 1e-9), x
    h = r.report["int16"]
    assert h["sqnr_db_after"] > h["sqnr_db_before"], h
    assert r.report["lowered"]["partitions"] == 1
    # a count with a budget: at most that many
    one = ctosa.quantize(m, {"input": calib}, tmp_path / "d", int16=1, int16_budget=25, max_samples=4)
    assert len(one.report["int16"]["tensors"]) == 1 and one.report["int16"]["mode"] == "budget"
    # int16=N alone is the count mode, int16=0 pure int8
    two = ctosa.quantize(m, {"input": calib}, tmp_path / "e", int16=2, max_samples=4)
    assert two.report["int16"]["mode"] == "count"
    assert "int16" not in ctosa.quantize(m, {"input": calib}, tmp_path / "f", int16=0, max_samples=4).report
    with pytest.raises(ctosa.UsageError):
        ctosa.quantize(m, {"input": calib}, tmp_path / "g", int16="most")
    with pytest.raises(ctosa.UsageError):
        ctosa.quantize(m, {"input": calib}, tmp_path / "h", int16_budget=150)


def test_quantize_equalize(tmp_path):
    calib = np.load(os.path.join(TINY, "calib.npy"))
    m = os.path.join(TINY, "float.onnx")
    plain = ctosa.quantize(m, {"x": calib}, tmp_path / "a")
    r = ctosa.quantize(m, {"x": calib}, tmp_path / "b", equalize=True)
    assert plain.equalized_path is None and "equalize" not in plain.report
    # conv0 -> Relu -> MaxPool -> conv1 and conv2: one pair with two readers
    e = r.report["equalize"]
    assert e["pairs"] == 1 and e["channels"] > 0 and e["model"] == "float.equalized.onnx", e
    assert os.path.exists(r.equalized_path) and r.equalized_path.endswith("float.equalized.onnx")
    # the tensor between the pair is scaled channel by channel, the output is not
    t0 = {t["name"]: t for t in plain.report["tensors"]}
    t1 = {t["name"]: t for t in r.report["tensors"]}
    assert abs(t1["r0"]["max"] - t0["r0"]["max"]) > 1e-3 * t0["r0"]["max"], (t0["r0"], t1["r0"])
    assert abs(t1["y"]["max"] - t0["y"]["max"]) <= 1e-4 * abs(t0["y"]["max"]), (t0["y"], t1["y"])
    r2 = ctosa.quantize(m, {"x": calib}, tmp_path / "c", equalize=True)
    assert open(r.qdq_path, "rb").read() == open(r2.qdq_path, "rb").read()
