"""ctosa.lower on real models, against the C CLI's own outputs."""
import json

import numpy as np
import pytest

import ctosa
from conftest import model_path, run_cli

SMALL_CNN = ("examples", "models", "small_cnn.onnx")


def assert_same_output(py, cli):
    """Integer outputs must be identical; float outputs may differ in the
    last bits when the package and the CLI were compiled with different
    optimisation levels (vectorised sums run in another order)."""
    assert py.dtype == cli.dtype and py.shape == cli.shape
    if py.dtype.kind == "f":
        np.testing.assert_allclose(py, cli, rtol=1e-4, atol=2e-5)
    else:
        np.testing.assert_array_equal(py, cli)


def test_small_cnn_matches_cli(ctosa_bin, tmp_path):
    model = model_path(*SMALL_CNN)
    spec = ctosa.Spec("TOSA-1.0+FP")
    r = ctosa.lower(model, spec, output_dir=tmp_path / "py")
    run_cli(ctosa_bin, "lower", model, "--spec", "TOSA-1.0+FP", "-o", tmp_path / "cli", "-q")
    cli_report = json.loads((tmp_path / "cli" / "small_cnn.report.json").read_text())
    assert r.report == cli_report
    assert r.report == json.loads((tmp_path / "py" / "small_cnn.report.json").read_text())
    assert r.nodes_total == r.nodes_delegated == 9 and r.fallback == []
    (p,) = r.partitions
    assert p.file == "small_cnn.part0.tosa"
    assert p.tosa == (tmp_path / "cli" / p.file).read_bytes()
    assert [i.name for i in p.inputs] == ["input"] and p.inputs[0].dtype == "float32"
    assert p.inputs[0].shape == (1, 3, 32, 32) and p.inputs[0].scale is None
    assert p.op_counts["CONV2D"] == 2 and len(p.nodes) == 9
    assert ctosa.check(p.graph, spec) == []
    # run vs the checked-in reference and vs `ctosa run`
    x = np.load(model_path("examples", "models", "small_cnn.input_0.npy"))
    ref = np.load(model_path("examples", "models", "small_cnn.output_0.npy"))
    out = p.run({"input": x})["output"]
    np.testing.assert_allclose(out, ref, atol=1e-5)
    np.save(tmp_path / "x.npy", x)
    run_cli(ctosa_bin, "run", tmp_path / "cli" / p.file, "--input", "input=%s" % (tmp_path / "x.npy"),
            "--output", "output=%s" % (tmp_path / "y.npy"), "-q")
    assert_same_output(out, np.load(tmp_path / "y.npy"))


def test_partition_graphs_are_read_only_and_keep_the_result_alive():
    r = ctosa.lower(model_path(*SMALL_CNN), "TOSA-1.0+FP")
    g = r.partitions[0].graph
    del r
    with pytest.raises(ctosa.UsageError) as ei:
        g.regions[0].blocks[0].add_tensor("t", "fp32", (1,))
    assert "read-only" in ei.value.message
    assert len(g.serialize()) > 1000  # the result's graph is still valid


def test_model_bytes_and_fallback_reasons():
    with open(model_path(*SMALL_CNN), "rb") as f:
        data = f.read()
    r = ctosa.lower(data, "TOSA-1.0+INT")
    assert r.partitions == [] and len(r.fallback) == 9
    f0 = r.fallback[0]
    assert f0.node == "conv1" and f0.op_type == "Conv" and f0.code == "not_in_spec"
    assert "PRO-FP" in f0.reason
    assert r.report["fallback"][0]["code"] == "not_in_spec"


@pytest.mark.parametrize("name", ["mobilenet_v2_x0_25_op13", "mobilenet_v2_x0_25_qnnpack",
                                  "transformer_encoder_op17", "llm_tiny_int8"])
def test_real_models_match_cli(ctosa_bin, tmp_path, name):
    model = model_path("tests", "models", name, "model.onnx")
    spec = "TOSA-1.0+FP+INT+int16"
    r = ctosa.lower(model, spec)
    run_cli(ctosa_bin, "lower", model, "--spec", spec, "-o", tmp_path, "-q")
    assert r.report == json.loads((tmp_path / "model.report.json").read_text())
    assert r.partitions, "nothing delegated"
    for p in r.partitions:
        assert p.tosa == (tmp_path / p.file).read_bytes()
    if len(r.partitions) != 1 or r.fallback:
        return
    p = r.partitions[0]
    x = np.load(model_path("tests", "models", name, "input_0.npy"))
    (inp,) = p.inputs
    out = p.run({inp.name: x})
    np.save(tmp_path / "x.npy", x)
    (o,) = p.outputs
    run_cli(ctosa_bin, "run", tmp_path / p.file, "--input", "%s=%s" % (inp.name, tmp_path / "x.npy"),
            "--output", "%s=%s" % (o.name, tmp_path / "y.npy"), "-q")
    assert_same_output(out[o.name], np.load(tmp_path / "y.npy"))


def test_binds_and_shapes(tmp_path):
    # small_cnn with its input frozen: everything becomes constant
    x = np.load(model_path("examples", "models", "small_cnn.input_0.npy"))
    r = ctosa.lower(model_path(*SMALL_CNN), "TOSA-1.0+FP", binds={"input": x})
    assert all(i.name != "input" for p in r.partitions for i in p.inputs)
    np.save(tmp_path / "x.npy", x)
    r2 = ctosa.lower(model_path(*SMALL_CNN), "TOSA-1.0+FP", binds={"input": tmp_path / "x.npy"})
    assert r2.report == r.report
    with pytest.raises(ctosa.Error) as ei:
        ctosa.lower(model_path(*SMALL_CNN), "TOSA-1.0+FP", binds={"nope": x})
    assert "nope" in ei.value.message


def test_plugin_custom_ops(example_plugin, tmp_path):
    d = ("tests", "data", "lower", "custom")
    model = model_path(*d, "swish_split.onnx")
    r = ctosa.lower(model, "TOSA-1.0+FP", plugins=[example_plugin])
    assert r.custom_ops and r.custom_ops[0]["operator_name"]
    assert r.report["custom_ops"]
    (p,) = r.partitions
    x = np.load(model_path(*d, "swish_split_in.npy"))
    out = p.run({p.inputs[0].name: x}, plugins=[example_plugin])
    refs = [np.load(model_path(*d, "swish_split_out%d.npy" % i)) for i in range(2)]
    for o, ref in zip(p.outputs, refs):
        np.testing.assert_allclose(out[o.name], ref, rtol=1e-5, atol=1e-6)
    # without the plugin the node is not lowered
    r0 = ctosa.lower(model, "TOSA-1.0+FP")
    assert any(f.code == "unregistered_custom_op" for f in r0.fallback)
    with pytest.raises(ctosa.FileError):
        ctosa.CustomOps().load_plugin(tmp_path / "nope.so")


def test_python_custom_ops():
    d = ("tests", "data", "lower", "custom")
    model = model_path(*d, "swish_split.onnx")
    seen = []

    def swish_infer(node, inputs):
        seen.append(node)
        if node.attrs["beta"] <= 0:
            raise ValueError("beta must be positive")
        return [(inputs[0].dtype, inputs[0].shape)]

    def swish_kernel(inputs, attrs):
        x = inputs[0]
        return [x / (1 + np.exp(-np.float32(attrs["beta"]) * x))]

    def split_infer(node, inputs):
        *lead, last = inputs[0].shape
        if last % 2:
            raise ValueError("odd last axis %d" % last)
        return [(inputs[0].dtype, (*lead, last // 2))] * 2

    def split_kernel(inputs, attrs):
        h = inputs[0].shape[-1] // 2
        return [inputs[0][..., :h], inputs[0][..., h:]]

    ops = ctosa.CustomOps()
    ops.add("com.example", "MySwish", swish_infer, swish_kernel)
    ops.add("com.example", "SplitHalf", split_infer, split_kernel)
    r = ctosa.lower(model, "TOSA-1.0+FP", custom_ops=ops)
    assert r.fallback == [] and len(r.partitions) == 1
    assert seen and seen[0].op_type == "MySwish" and seen[0].attrs["beta"] == pytest.approx(1.5)
    assert {c["operator_name"] for c in r.custom_ops} == {"MySwish", "SplitHalf"}
    p = r.partitions[0]
    x = np.load(model_path(*d, "swish_split_in.npy"))
    out = ctosa.Interpreter(p.graph, custom_ops=ops).run({p.inputs[0].name: x})
    for o, i in zip(p.outputs, range(2)):
        ref = np.load(model_path(*d, "swish_split_out%d.npy" % i))
        np.testing.assert_allclose(out[o.name], ref, rtol=1e-5, atol=1e-6)
    # a refusing infer: the node falls back with the exception's text
    r2 = ctosa.lower(model_path(*d, "split_odd.onnx"), "TOSA-1.0+FP", custom_ops=ops)
    (fb,) = [f for f in r2.fallback if f.op_type == "SplitHalf"]
    assert fb.code == "custom_op_rejected" and "odd last axis 5" in fb.reason
    # a failing kernel: the run raises with the text
    bad = ctosa.CustomOps()
    bad.add("com.example", "MySwish", swish_infer, lambda i, a: 1 / 0)
    bad.add("com.example", "SplitHalf", split_infer, split_kernel)
    r3 = ctosa.lower(model, "TOSA-1.0+FP", custom_ops=bad)
    with pytest.raises(ctosa.Error) as ei:
        ctosa.run(r3.partitions[0].graph, {p.inputs[0].name: x}, custom_ops=bad)
    assert "ZeroDivisionError" in ei.value.message


def test_shapes_and_needs_constant():
    d = ("tests", "data", "lower", "framework")
    r = ctosa.lower(model_path(*d, "dynamic.onnx"), "TOSA-1.0+FP")
    (f,) = [f for f in r.fallback if f.node == "relu"]
    assert f.code == "dynamic_shape" and "--shape" in f.reason
    r = ctosa.lower(model_path(*d, "dynamic.onnx"), "TOSA-1.0+FP", shapes={"x": (2, 4)})
    assert r.nodes_delegated == 1 and r.partitions[0].inputs[0].shape == (2, 4)
    # needs_constant names the input to bind; binding it (array) delegates everything
    r = ctosa.lower(model_path(*d, "needs_const.onnx"), "TOSA-1.0+FP")
    nc = [f for f in r.fallback if f.code == "needs_constant"]
    assert nc and nc[0].input
    value = np.load(model_path(*d, "needs_const_shape.npy"))
    r = ctosa.lower(model_path(*d, "needs_const.onnx"), "TOSA-1.0+FP", binds={nc[0].input: value})
    assert r.fallback == [] and r.nodes_delegated == r.nodes_total


def test_streamed_weights_read_like_the_written_file():
    """Large weights of a lowering result are not in memory (file ranges of
    the model or chunked transposes); Tensor.data must still give exactly
    the bytes that the serialized partition holds."""
    model = model_path("tests", "models", "mobilenet_v2_x0_25_op13", "model.onnx")
    r = ctosa.lower(model, "TOSA-1.0+FP")
    (p,) = r.partitions
    back = ctosa.read(p.tosa)
    written = {t.name: t for reg in back.regions for b in reg.blocks for t in b.tensors}
    kinds = {}
    for reg in p.graph.regions:
        for b in reg.blocks:
            for t in b.tensors:
                if t.data_kind == "none":
                    continue
                kinds[t.data_kind] = kinds.get(t.data_kind, 0) + 1
                np.testing.assert_array_equal(t.data, written[t.name].data, err_msg=t.name)
    assert kinds.get("memory", 0) > 0
    assert kinds.get("file", 0) + kinds.get("generated", 0) > 0, kinds


def test_requant_modes():
    model = model_path("tests", "models", "mobilenet_v2_x0_25_onednn", "model.onnx")
    plain = ctosa.lower(model, "TOSA-1.0+INT")
    ort = ctosa.lower(model, "TOSA-1.0+INT", requant="ort")
    assert plain.nodes_delegated == ort.nodes_delegated
    n_plain = sum(plain.partitions[0].op_counts.values())
    n_ort = sum(ort.partitions[0].op_counts.values())
    assert n_ort > 2 * n_plain and "SELECT" in ort.partitions[0].op_counts
    # the default graph has SELECTs only where exact means round half to even
    assert ort.partitions[0].op_counts["SELECT"] > plain.partitions[0].op_counts.get("SELECT", 0)
    with pytest.raises(ctosa.UsageError):
        ctosa.lower(model, "TOSA-1.0+INT", requant="fast")


def test_model_bytes_lowered_in_memory(tmp_path):
    """Bytes with no output folder are lowered from memory (the report names
    "<model bytes>"), with the same partitions as the file; with an output
    folder they go through a file named after the stem."""
    path = model_path("tests", "models", "mobilenet_v2_x0_25_op13", "model.onnx")
    with open(path, "rb") as f:
        data = f.read()
    by_path = ctosa.lower(path, "TOSA-1.0+FP")
    for kind in (bytes, bytearray, memoryview):
        r = ctosa.lower(kind(data), "TOSA-1.0+FP")
        assert r.report["model"] == "<model bytes>"
        assert [p.tosa for p in r.partitions] == [p.tosa for p in by_path.partitions]
        assert r.fallback == [] and by_path.fallback == []
    r = ctosa.lower(data, "TOSA-1.0+FP", output_dir=tmp_path, stem="m")
    assert r.partitions[0].tosa == (tmp_path / "m.part0.tosa").read_bytes()
    assert r.report["model"].endswith("m.onnx")


def test_errors_for_model_bytes_name_the_bytes():
    with open(model_path(*SMALL_CNN), "rb") as f:
        data = f.read()
    with pytest.raises(ctosa.Error) as ei:
        ctosa.lower(data[: len(data) // 2], "TOSA-1.0+FP")
    assert "<model bytes>" in ei.value.message and "ctosa-py-" not in ei.value.message
