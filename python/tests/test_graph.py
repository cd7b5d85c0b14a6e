"""The builder: zero-copy constants, attributes, serialization, reading
back (numpy views of the mapping), running, checking."""
import gc
import os

import numpy as np
import pytest

import ctosa


def small_graph(w):
    g = ctosa.TosaGraph()
    b = g.add_region("main").add_block("main")
    b.add_tensor("x", "fp32", (1, 16))
    b.add_input("x")
    b.add_const("w", w)
    b.add_tensor("y", "fp32", (1, 16))
    b.add_op("ADD", ["x", "w"], ["y"])
    b.add_output("y")
    return g


def test_constants_are_borrowed_not_copied():
    w = np.arange(16, dtype=np.float32).reshape(1, 16)
    g = small_graph(w)
    t = g.regions[0].blocks[0].tensor("w")
    assert t.dtype == "fp32" and t.shape == (1, 16) and t.data_kind == "memory"
    assert g.borrowed_buffers == 1
    assert np.shares_memory(t.data, w)
    assert t.raw.address == w.__array_interface__["data"][0]
    # The graph serializes the array's current bytes: proof it kept no copy.
    w[0, 3] = 100.0
    back = ctosa.read(g.serialize())
    assert back.regions[0].blocks[0].tensor("w").data[0, 3] == 100.0


def test_graph_keeps_array_alive():
    g = small_graph(np.full((1, 16), 7, np.float32))  # no other reference to the array
    gc.collect()
    assert np.all(g.regions[0].blocks[0].tensor("w").data == 7)
    out = ctosa.run(g, {"x": np.ones((1, 16), np.float32)})
    assert np.all(out["y"] == 8)


def test_round_trip_build_serialize_read_run(tmp_path):
    w = np.linspace(-1, 1, 16, dtype=np.float32).reshape(1, 16)
    g = small_graph(w)
    data = g.serialize()
    assert isinstance(data, bytes) and data[4:8] == b"TOSA"
    p = tmp_path / "g.tosa"
    g.write(p)
    assert p.read_bytes() == data
    mv = g.serialize(copy=False)
    assert bytes(mv) == data
    g2 = ctosa.read(p)
    b2 = g2.regions[0].blocks[0]
    assert [op.op for op in b2.ops] == ["CONST", "ADD"]
    assert b2.inputs == ("x",) and b2.outputs == ("y",)
    assert g2.file_info["from_file"] and g2.file_info["file_size"] == len(data)
    np.testing.assert_array_equal(b2.tensor("w").data, w)
    x = np.random.default_rng(1).standard_normal((1, 16)).astype(np.float32)
    for graph in (g, g2, p, data):
        out = ctosa.run(graph, {"x": x})
        np.testing.assert_array_equal(out["y"], x + w)
    # the read graph re-serializes to the same bytes
    assert g2.serialize() == data


def test_read_views_are_zero_copy_and_keep_the_mapping(tmp_path):
    w = np.arange(4096, dtype=np.int32)
    g = ctosa.TosaGraph()
    b = g.add_region("main").add_block("main")
    b.add_const("w", w)
    b.add_tensor("o", "int32", (4096,))
    b.add_op("IDENTITY", ["w"], ["o"])
    b.add_output("o")
    p = tmp_path / "c.tosa"
    g.write(p)
    g2 = ctosa.read(p)
    t = g2.regions[0].blocks[0].tensor("w")
    a1, a2 = t.data, t.data
    assert np.shares_memory(a1, a2)
    assert not a1.flags.writeable
    # base chain ends at a DataView of this graph, over the file mapping
    base = a1
    while isinstance(base, np.ndarray):
        base = base.base
    assert isinstance(base, ctosa.DataView) and base.graph is g2
    assert base.address == a1.__array_interface__["data"][0]
    # the view outlives the graph object and the file name
    del g2, t, base, a2
    gc.collect()
    os.unlink(p)
    np.testing.assert_array_equal(a1, w)


def test_read_from_memory_pins_the_buffer():
    w = np.arange(64, dtype=np.int8)
    g = ctosa.TosaGraph()
    b = g.add_region("main").add_block("main")
    b.add_const("w", w)
    b.add_output("w")
    buf = bytearray(g.serialize())
    g2 = ctosa.read(buf)
    d = g2.regions[0].blocks[0].tensor("w").data
    start = np.frombuffer(buf, np.uint8).__array_interface__["data"][0]
    addr = d.__array_interface__["data"][0]
    assert start <= addr < start + len(buf)  # a view into the caller's buffer
    with pytest.raises(BufferError):
        buf.append(0)  # pinned while the graph lives


def test_attributes_and_validation():
    g = ctosa.TosaGraph()
    b = g.add_region("main").add_block("main")
    b.add_tensor("x", "int8", (1, 8, 8, 4))
    b.add_tensor("y", "int8", (1, 4, 4, 4))
    op = b.add_op("MAX_POOL2D", ["x"], ["y"], kernel=[2, 2], stride=(2, 2), pad=[0, 0, 0, 0],
                  nan_mode="PROPAGATE", location="pool1")
    assert op.attrs == {"kernel": (2, 2), "stride": (2, 2), "pad": (0, 0, 0, 0), "nan_mode": "PROPAGATE"}
    assert op.location == "pool1"
    with pytest.raises(ctosa.UsageError) as ei:
        b.add_op("MAX_POOL2D", ["x"], ["y"], kernal=[2, 2])
    assert "kernal" in ei.value.message and "kernel" in ei.value.message
    with pytest.raises(ctosa.UsageError) as ei:
        b.add_op("MAX_POOL2D", ["x"], ["y"], nan_mode="SOMETIMES")
    assert "PROPAGATE" in ei.value.message
    with pytest.raises(ctosa.UsageError):
        b.add_op("NO_SUCH_OP", ["x"], ["y"])
    with pytest.raises(ctosa.UsageError):
        b.add_tensor("x", "int8", (1,))  # duplicate name
    assert "kernel" in ctosa.OPERATORS["MAX_POOL2D"][1]
    # attributes survive a round trip
    b.add_input("x")
    b.add_output("y")
    op2 = ctosa.read(g.serialize()).regions[0].blocks[0].ops[0]
    assert op2.attrs == op.attrs and op2.location == "pool1"


def test_clamp_bytes_and_rescale_enums():
    g = ctosa.TosaGraph()
    b = g.add_region("main").add_block("main")
    b.add_tensor("x", "fp32", (4,))
    b.add_tensor("y", "fp32", (4,))
    b.add_op("CLAMP", ["x"], ["y"], min_val=np.float32(0).tobytes(), max_val=np.array([6], np.float32),
             nan_mode="PROPAGATE")
    b.add_input("x")
    b.add_output("y")
    out = ctosa.run(g, {"x": np.array([-1, 2, 7, 5], np.float32)})
    np.testing.assert_array_equal(out["y"], [0, 2, 6, 5])
    assert ctosa.check(g, "TOSA-1.0+FP") == []


def test_data_must_match_dtype():
    g = ctosa.TosaGraph()
    b = g.add_region("main").add_block("main")
    with pytest.raises(ctosa.UsageError) as ei:
        b.add_tensor("w", "fp32", (4,), data=np.zeros(4, np.float64))
    assert "32 bytes" in ei.value.message and "16 bytes" in ei.value.message
    with pytest.raises(ctosa.UsageError):
        b.add_tensor("v", "int8", (4,), data=np.zeros(8, np.int8)[::2])  # not contiguous
    t = b.add_tensor("c", "int8", (4,), data=np.arange(4, dtype=np.int8), copy=True)
    assert g.borrowed_buffers == 0 and t.data.tolist() == [0, 1, 2, 3]


def test_int4_pack_round_trip():
    v = np.array([-8, -1, 0, 3, 7], np.int8)
    packed = ctosa.pack_int4(v)
    assert packed.tolist() == [0xF8, 0x30, 0x07]
    np.testing.assert_array_equal(ctosa.unpack_int4(packed, 5), v)
    g = ctosa.TosaGraph()
    b = g.add_region("main").add_block("main")
    t = b.add_tensor("w", "int4", (5,), data=packed)
    assert t.nbytes == 3 and t.data.dtype == np.uint8


def test_check_reports_each_violation_with_its_operator():
    g = small_graph(np.zeros((1, 16), np.float32))
    v = ctosa.check(g, "TOSA-1.0+INT")
    assert [(x.op_index, x.op, x.name) for x in v] == [(0, "CONST", "w"), (1, "ADD", "y")]
    assert all("PRO-FP" in x.message for x in v)
    assert ctosa.check(g, ctosa.Spec("TOSA-1.0+FP")) == []


def test_read_graphs_can_be_extended():
    g = ctosa.read(small_graph(np.zeros((1, 16), np.float32)).serialize())
    b = g.regions[0].blocks[0]
    b.add_tensor("z", "fp32", (1, 16))
    b.add_op("ADD", ["y", "y"], ["z"])
    b.add_output("z")
    out = ctosa.run(g, {"x": np.ones((1, 16), np.float32)})
    assert np.all(out["z"] == 2) and list(out) == ["y", "z"]
    with pytest.raises(TypeError):
        ctosa.run(object(), {})


def test_run_errors():
    g = small_graph(np.zeros((1, 16), np.float32))
    with pytest.raises(ctosa.UsageError) as ei:
        ctosa.run(g, {"nope": np.zeros(1)})
    assert "nope" in ei.value.message and "x" in ei.value.message
    with pytest.raises(ctosa.UsageError):
        ctosa.run(g, {})
    with pytest.raises(ctosa.Error) as ei:
        ctosa.run(g, {"x": np.zeros((2, 16), np.float32)})
    assert "x" in ei.value.message


def test_interpreter_runs_repeatedly():
    w = np.arange(16, dtype=np.float32).reshape(1, 16)
    it = ctosa.Interpreter(small_graph(w), threads=1)
    assert it.inputs == [("x", "fp32", (1, 16))] and it.outputs == [("y", "fp32", (1, 16))]
    for k in range(3):
        x = np.full((1, 16), k, np.float32)
        np.testing.assert_array_equal(it.run({"x": x})["y"], x + w)
    with pytest.raises(ctosa.UsageError):
        it.run({})


def test_reference_loops():
    """reference=True runs the plain loops: EXP in double, rounded once, so
    every element is the correctly rounded float; the fast vector path is
    only within 2 ulp of it (and agrees on many)."""
    g = ctosa.TosaGraph()
    b = g.add_region("main").add_block("main")
    b.add_tensor("x", "fp32", (4096,))
    b.add_tensor("y", "fp32", (4096,))
    b.add_op("EXP", ["x"], ["y"])
    b.add_input("x")
    b.add_output("y")
    x = np.linspace(-80.0, 80.0, 4096, dtype=np.float32)
    exact = np.exp(x.astype(np.float64)).astype(np.float32)
    ulp = np.spacing(exact)
    y = ctosa.run(g, {"x": x}, reference=True)["y"]
    np.testing.assert_array_equal(y, exact)
    np.testing.assert_array_equal(ctosa.Interpreter(g, reference=True).run({"x": x})["y"], exact)
    fast = ctosa.run(g, {"x": x})["y"]
    assert np.all(np.abs(fast.astype(np.float64) - exact) <= 2 * ulp)


def test_input_dtype_conversion():
    g = ctosa.TosaGraph()
    b = g.add_region("main").add_block("main")
    b.add_tensor("x", "int8", (4,))
    b.add_tensor("y", "int8", (4,))
    b.add_op("IDENTITY", ["x"], ["y"])
    b.add_input("x")
    b.add_output("y")
    out = ctosa.run(g, {"x": [1, -2, 3, 127]})  # a list, cast to int8
    assert out["y"].dtype == np.int8 and out["y"].tolist() == [1, -2, 3, 127]
    with pytest.raises(ctosa.UsageError):
        ctosa.run(g, {"x": np.zeros(4, np.float32)})  # float -> int8 is refused


@pytest.mark.parametrize("dtype,values", [("bf16", [1.5, -2.25, 1.00390625, 1.01171875]),
                                          ("fp16", [1.5, -2.25, 65504.0, 0.0]),
                                          ("bool", [True, False, True, True]),
                                          ("int16", [1, -2, 32767, -32768])])
def test_host_encodings_through_cast(dtype, values):
    g = ctosa.TosaGraph()
    b = g.add_region("main").add_block("main")
    b.add_tensor("x", dtype, (4,))
    out_dt = "int32" if dtype in ("bool", "int16") else "fp32"
    b.add_tensor("y", out_dt, (4,))
    b.add_op("CAST", ["x"], ["y"])
    b.add_input("x")
    b.add_output("y")
    y = ctosa.run(g, {"x": np.array(values)})["y"]
    want = np.array(values, dtype=np.float32 if out_dt == "fp32" else np.int32)
    if dtype == "bf16":  # float input rounded to bf16, to nearest even at the ties
        want = np.array([1.5, -2.25, 1.0, 1.015625], np.float32)
    np.testing.assert_array_equal(y, want)


def control_flow_graph(blocks_form):
    """z = COND_IF(c, x) with then x + x and else |x|, the sub-graphs as
    regions (the form ctosa writes) or as blocks of the main region (the
    form Arm's conformance generator writes)."""
    g = ctosa.TosaGraph()
    main_r = g.add_region("main")
    b = main_r.add_block("main")
    b.add_tensor("c", "bool", (1,))
    b.add_tensor("x", "fp32", (3,))
    b.add_tensor("z", "fp32", (3,))
    b.add_input("c")
    b.add_input("x")
    b.add_op("COND_IF", ["c", "x"], ["z"], then_graph="THEN_BLOCK", else_graph="ELSE_BLOCK")
    b.add_output("z")
    for name, op, ins in (("THEN_BLOCK", "ADD", ["a", "a"]), ("ELSE_BLOCK", "ABS", ["a"])):
        r = main_r if blocks_form else g.add_region(name)
        s = r.add_block(name)
        s.add_tensor("a", "fp32", (3,))
        s.add_tensor("r", "fp32", (3,))
        s.add_input("a")
        s.add_op(op, ins, ["r"])
        s.add_output("r")
    return g


def test_control_flow_blocks_and_regions_forms():
    x = np.array([-1.5, 2.0, -3.0], np.float32)
    results, mlir = {}, {}
    for blocks_form in (False, True):
        g = control_flow_graph(blocks_form)
        assert ctosa.check(g, "TOSA-1.0+FP+cf") == []
        back = ctosa.read(g.serialize())
        assert len(back.regions) == (1 if blocks_form else 3)
        assert ctosa.check(back, "TOSA-1.0+FP+cf") == []
        then_b = back.called("THEN_BLOCK", back.regions[0])
        assert then_b.name == "THEN_BLOCK" and [op.op for op in then_b.ops] == ["ADD"]
        for c in (True, False):
            results[blocks_form, c] = ctosa.run(back, {"c": np.array([c]), "x": x})["z"]
        mlir[blocks_form] = back.to_mlir()
    for c, want in ((True, x + x), (False, np.abs(x))):
        np.testing.assert_array_equal(results[False, c], want)
        np.testing.assert_array_equal(results[True, c], want)
    assert mlir[False] == mlir[True] and '"tosa.cond_if"' in mlir[True]
    with pytest.raises(KeyError):
        control_flow_graph(True).called("NO_SUCH_BLOCK")
