"""ctosa.Model / ctosa.verify: the partitioned-model runtime from Python."""
import os

import numpy as np
import pytest

import ctosa

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
RDATA = os.path.join(ROOT, "tests", "data", "runtime")
QDATA = os.path.join(ROOT, "tests", "data", "lower", "quant", "add_requant_u8")


def test_model_runs_partitions_and_cpu_nodes(tmp_path):
    ctosa.lower(os.path.join(RDATA, "float_mid.onnx"), "TOSA-1.0+FP", output_dir=tmp_path)
    m = ctosa.Model(tmp_path / "float_mid.partitioned.onnx")
    assert [t.name for t in m.inputs] == ["x"] and m.inputs[0].dtype == "float32"
    kinds = [s[0] for s in m.steps]
    assert kinds.count(True) == 2 and kinds.count(False) == 2
    x = np.load(os.path.join(RDATA, "float_mid_in.npy"))
    y = m.run({"x": x})["y"]
    assert y.shape == (1, 10) and y.dtype == np.float32
    assert abs(float(y.sum()) - 1.0) < 1e-5
    # the same through the whole-CPU path (every node on the host executor)
    ctosa.lower(os.path.join(RDATA, "float_mid.onnx"), "TOSA-1.0+INT", output_dir=tmp_path / "int")
    y2 = ctosa.Model(tmp_path / "int" / "float_mid.partitioned.onnx").run({"x": x})["y"]
    assert np.abs(y2 - y).max() < 1e-6
    # the plain loops (their exactness is checked in test_graph): the same within rounding
    y3 = ctosa.Model(tmp_path / "float_mid.partitioned.onnx", reference=True).run({"x": x})["y"]
    assert np.abs(y3 - y).max() < 1e-6
    with pytest.raises(ctosa.UsageError, match="no value given"):
        m.run({})
    with pytest.raises(ctosa.UsageError, match="not an input"):
        m.run({"x": x, "z": x})


def test_model_uint8_interface(tmp_path):
    ctosa.lower(os.path.join(QDATA, "model.onnx"), "TOSA-1.0+INT", output_dir=tmp_path)
    m = ctosa.Model(tmp_path / "model.partitioned.onnx")
    assert m.inputs[0].dtype == "uint8" and m.outputs[0].dtype == "uint8" and m.outputs[0].scale > 0
    out = m.run({m.inputs[0].name: np.load(os.path.join(QDATA, "input_0.npy"))})
    y = out[m.outputs[0].name]
    assert y.dtype == np.uint8
    assert np.abs(y.astype(int) - np.load(os.path.join(QDATA, "ref_output_0.npy")).astype(int)).max() <= 1


def test_model_unsupported_node_at_load(tmp_path):
    ctosa.lower(os.path.join(RDATA, "unique_mid.onnx"), "TOSA-1.0+FP", output_dir=tmp_path)
    with pytest.raises(ctosa.UnsupportedError, match="node 'unique' \\(Unique\\) cannot run"):
        ctosa.Model(tmp_path / "unique_mid.partitioned.onnx")


def test_model_data_dependent_shapes(tmp_path):
    # NonZero, TopK with a computed k and an If around NonMaxSuppression:
    # the output's shape changes from run to run
    ctosa.lower(os.path.join(RDATA, "detect_mid.onnx"), "TOSA-1.0+FP", output_dir=tmp_path)
    m = ctosa.Model(tmp_path / "detect_mid.partitioned.onnx")
    for name in ("detect", "detect_none", "detect"):
        y = m.run({"x": np.load(os.path.join(RDATA, name + "_in.npy"))})
        for i, out in enumerate(("out_boxes", "out_scores", "pooled")):
            exp = np.load(os.path.join(RDATA, "%s_out%d.npy" % (name, i)))
            assert y[out].shape == exp.shape
            np.testing.assert_allclose(y[out], exp, rtol=1e-5, atol=1e-6)
    assert y["out_boxes"].shape[0] > 0


def test_verify(tmp_path):
    x = np.load(os.path.join(RDATA, "float_mid_in.npy"))
    ctosa.lower(os.path.join(RDATA, "float_mid.onnx"), "TOSA-1.0+FP", output_dir=tmp_path / "ref")
    ref = ctosa.Model(tmp_path / "ref" / "float_mid.partitioned.onnx").run({"x": x})["y"]
    r = ctosa.verify(os.path.join(RDATA, "float_mid.onnx"), "TOSA-1.0+INT", {"x": x}, {"y": ref})
    assert r.passed and r.outputs[0]["kind"] == "float" and r.outputs[0]["top1"] == 1
    bad = ref.copy()
    bad[0, 0] += 0.5
    r = ctosa.verify(os.path.join(RDATA, "float_mid.onnx"), "TOSA-1.0+FP", {"x": x}, {"y": bad}, rtol=1e-4)
    assert not r.passed and "relative error" in r.outputs[0]["why"]
    with pytest.raises(ctosa.UsageError, match="not an output"):
        ctosa.verify(os.path.join(RDATA, "float_mid.onnx"), "TOSA-1.0+FP", {"x": x}, {"nope": ref})
