"""Graph.to_mlir / Graph.write_mlir: the upstream MLIR tosa dialect text
(docs/mlir.md), the same text the C API and `ctosa dump --format mlir` give."""
import os
import shutil
import subprocess

import numpy as np

import ctosa


def small_graph(w):
    g = ctosa.TosaGraph()
    b = g.add_region("main").add_block("main")
    b.add_tensor("x", "fp32", (1, 4))
    b.add_input("x")
    b.add_const("w", w)
    b.add_tensor("y", "fp32", (1, 4))
    b.add_op("ADD", ["x", "w"], ["y"])
    b.add_output("y")
    return g


def test_to_mlir_is_exact_generic_text(tmp_path):
    w = np.array([[1.0, -2.0, 0.5, 3.0]], dtype=np.float32)
    g = small_graph(w)
    text = g.to_mlir(source_name="small.tosa")
    assert "func.func @main(%arg0: tensor<1x4xf32>) -> (tensor<1x4xf32>)" in text
    assert '"tosa.add"(%arg0, %0) : (tensor<1x4xf32>, tensor<1x4xf32>) -> tensor<1x4xf32>' in text
    # the constant's bytes, exactly, in hex
    assert 'dense<"0x' + w.tobytes().hex().upper() + '">' in text
    assert 'loc("small.tosa":1:0)' in text
    path = tmp_path / "small.mlir"
    g.write_mlir(str(path), source_name="small.tosa")
    assert path.read_text() == text
    mlir_opt = "/usr/lib/llvm-22/bin/mlir-opt"
    if os.access(mlir_opt, os.X_OK):
        subprocess.run([mlir_opt, str(path), "-o", os.devnull], check=True)


def test_write_mlir_error_leaves_no_file(tmp_path):
    g = ctosa.TosaGraph()
    b = g.add_region("main").add_block("main")
    b.add_tensor("y", "fp32", (2,))
    b.add_output("y")  # nothing defines y
    path = tmp_path / "bad.mlir"
    try:
        g.write_mlir(str(path))
        raised = False
    except ctosa.Error as e:
        raised = True
        assert "'y'" in str(e)
    assert raised and not path.exists()
    assert os.listdir(tmp_path) == []
