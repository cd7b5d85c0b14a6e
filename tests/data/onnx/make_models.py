#!/usr/bin/python3
"""Generates the small ONNX models that tests/test_onnx_model.c reads.

Run with Debian's python3 (python3-onnx 1.12):  /usr/bin/python3 make_models.py
The outputs are committed; re-running must give identical files.

Values are simple formulas (documented next to each tensor) so that the C
test can check every decoded element without a sidecar file. Fields that
onnx 1.12 does not know (FunctionProto.attribute_proto / overload,
NodeProto.overload, dtypes above 16) are written with a small wire encoder.
"""
import os
import struct
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))


# ------------------------------------------------------------ wire helpers
def varint(v):
    v &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field_len(num, payload):
    return varint(num << 3 | 2) + varint(len(payload)) + payload


def field_varint(num, v):
    return varint(num << 3) + varint(v)


def save(model_or_bytes, name):
    data = model_or_bytes if isinstance(model_or_bytes, bytes) else model_or_bytes.SerializeToString()
    path = os.path.join(HERE, name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


# ------------------------------------------------------------ conv_net.onnx
def conv_net():
    # W[i] = (i % 7) * 0.25 - 0.5 (raw_data); B[i] = i * 0.5 (float_data);
    # shape = [-1, 128] (int64_data); gemm weight G[i] = i * 0.001 (raw_data)
    w = ((np.arange(4 * 3 * 3 * 3) % 7) * 0.25 - 0.5).astype(np.float32).reshape(4, 3, 3, 3)
    b = helper.make_tensor("B", TensorProto.FLOAT, [4], [i * 0.5 for i in range(4)])
    shape = helper.make_tensor("shape", TensorProto.INT64, [2], [-1, 64])
    g = (np.arange(64 * 10) * 0.001).astype(np.float32).reshape(64, 10)
    nodes = [
        helper.make_node("Conv", ["x", "W", "B"], ["c"], name="conv1", pads=[1, 1, 1, 1],
                         strides=[1, 1], kernel_shape=[3, 3]),
        helper.make_node("Relu", ["c"], ["r"], name="relu1"),
        helper.make_node("MaxPool", ["r"], ["p"], name="pool1", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Reshape", ["p", "shape"], ["f"], name="flatten"),
        helper.make_node("MatMul", ["f", "G"], ["y"], name="fc"),
    ]
    graph = helper.make_graph(
        nodes, "convnet",
        [vi("x", TensorProto.FLOAT, ["N", 3, 8, 8])],
        [vi("y", TensorProto.FLOAT, ["N", 10])],
        initializer=[numpy_helper.from_array(w, "W"), b, shape, numpy_helper.from_array(g, "G")],
        value_info=[vi("c", TensorProto.FLOAT, ["N", 4, 8, 8]), vi("p", TensorProto.FLOAT, [None, 4, 4, 4])],
    )
    m = helper.make_model(graph, producer_name="ctosa-tests", producer_version="1.0",
                          opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("ai.onnx.ml", 3)])
    m.ir_version = 8
    m.model_version = 7
    m.domain = "org.ctosa.test"
    helper.set_model_props(m, {"author": "ctosa", "purpose": "tests"})
    onnx.checker.check_model(m)
    save(m, "conv_net.onnx")


# ------------------------------------------------ external/model.onnx (+bad)
def external():
    # E1[i] = i * 1.5 (float32 [3,4]), E2[i] = 100 - i (int64 [5]), both in
    # external/weights/data.bin; E1 at offset 0, E2 after it (aligned).
    e1 = (np.arange(12) * 1.5).astype(np.float32).reshape(3, 4)
    e2 = (100 - np.arange(5)).astype(np.int64)
    os.makedirs(os.path.join(HERE, "external", "weights"), exist_ok=True)
    blob = e1.tobytes() + bytes(16) + e2.tobytes()  # E2 at offset 64
    with open(os.path.join(HERE, "external", "weights", "data.bin"), "wb") as f:
        f.write(blob)

    def ext_tensor(name, dt, dims, location, offset, length):
        t = TensorProto()
        t.name = name
        t.data_type = dt
        t.dims.extend(dims)
        t.data_location = TensorProto.EXTERNAL
        for k, v in (("location", location), ("offset", offset), ("length", length)):
            if v is not None:
                e = t.external_data.add()
                e.key = k
                e.value = str(v)
        return t

    def model(tensors, name):
        nodes = [helper.make_node("Identity", [t.name], ["out_" + t.name]) for t in tensors]
        graph = helper.make_graph(nodes, "ext", [],
                                  [vi("out_" + t.name, t.data_type, list(t.dims)) for t in tensors],
                                  initializer=tensors)
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
        m.ir_version = 8
        save(m, os.path.join("external", name))

    model([ext_tensor("E1", TensorProto.FLOAT, [3, 4], "weights/data.bin", 0, 48),
           ext_tensor("E2", TensorProto.INT64, [5], "weights/data.bin", 64, 40)], "model.onnx")
    model([ext_tensor("abs", TensorProto.FLOAT, [1], "/etc/hostname", 0, 4)], "bad_abs.onnx")
    model([ext_tensor("dotdot", TensorProto.FLOAT, [1], "weights/../../conv_net.onnx", 0, 4)],
          "bad_dotdot.onnx")
    model([ext_tensor("eof", TensorProto.FLOAT, [12], "weights/data.bin", 80, 48)], "bad_eof.onnx")
    model([ext_tensor("bigoff", TensorProto.FLOAT, [1], "weights/data.bin", 1 << 40, 4)],
          "bad_offset.onnx")
    model([ext_tensor("size", TensorProto.FLOAT, [4], "weights/data.bin", 0, 12)], "bad_size.onnx")
    model([ext_tensor("missing", TensorProto.FLOAT, [1], "weights/nope.bin", 0, 4)], "bad_missing.onnx")
    # The test makes link.bin a symlink to a file outside the folder.
    model([ext_tensor("link", TensorProto.FLOAT, [1], "link.bin", 0, 4)], "bad_link.onnx")


# ---------------------------------------------------- control_flow.onnx
def control_flow():
    then_g = helper.make_graph([helper.make_node("Add", ["a", "b"], ["t_out"], name="then_add")], "then_body",
                               [], [vi("t_out", TensorProto.FLOAT, [2])])
    else_g = helper.make_graph([helper.make_node("Sub", ["a", "b"], ["e_out"], name="else_sub")], "else_body",
                               [], [vi("e_out", TensorProto.FLOAT, [2])])
    # Loop body: (iter, cond, acc) -> (cond, acc + a); with a nested If.
    inner_then = helper.make_graph([helper.make_node("Identity", ["acc"], ["it"])], "inner_then", [],
                                   [vi("it", TensorProto.FLOAT, [2])])
    inner_else = helper.make_graph([helper.make_node("Neg", ["acc"], ["ie"])], "inner_else", [],
                                   [vi("ie", TensorProto.FLOAT, [2])])
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"], name="body_cond"),
         helper.make_node("If", ["cond_in"], ["sel"], name="body_if", then_branch=inner_then,
                          else_branch=inner_else),
         helper.make_node("Add", ["sel", "a"], ["acc_out"], name="body_add")],
        "loop_body",
        [vi("iter", TensorProto.INT64, []), vi("cond_in", TensorProto.BOOL, []), vi("acc", TensorProto.FLOAT, [2])],
        [vi("cond_out", TensorProto.BOOL, []), vi("acc_out", TensorProto.FLOAT, [2])])
    scan_body = helper.make_graph(
        [helper.make_node("Add", ["s", "xi"], ["s_next"]), helper.make_node("Identity", ["s_next"], ["yi"])],
        "scan_body", [vi("s", TensorProto.FLOAT, [2]), vi("xi", TensorProto.FLOAT, [2])],
        [vi("s_next", TensorProto.FLOAT, [2]), vi("yi", TensorProto.FLOAT, [2])])
    nodes = [
        helper.make_node("If", ["c"], ["if_out"], name="if1", then_branch=then_g, else_branch=else_g),
        helper.make_node("Loop", ["trip", "", "a"], ["loop_out"], name="loop1", body=body),
        helper.make_node("Scan", ["a", "seq"], ["scan_s", "scan_y"], name="scan1", body=scan_body,
                         num_scan_inputs=1),
    ]
    graph = helper.make_graph(
        nodes, "control",
        [vi("c", TensorProto.BOOL, []), vi("a", TensorProto.FLOAT, [2]), vi("b", TensorProto.FLOAT, [2]),
         vi("trip", TensorProto.INT64, []), vi("seq", TensorProto.FLOAT, ["T", 2])],
        [vi("if_out", TensorProto.FLOAT, [2]), vi("loop_out", TensorProto.FLOAT, [2]),
         vi("scan_s", TensorProto.FLOAT, [2]), vi("scan_y", TensorProto.FLOAT, ["T", 2])])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 16)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    save(m, "control_flow.onnx")


# ---------------------------------------------------------- attrs.onnx
def map_type(key, value):
    t = onnx.TypeProto()
    t.map_type.key_type = key
    t.map_type.value_type.CopyFrom(value)
    return t


def attrs():
    sub = helper.make_graph([helper.make_node("Relu", ["gi"], ["go"])], "attr_graph",
                            [vi("gi", TensorProto.FLOAT, [1])], [vi("go", TensorProto.FLOAT, [1])])
    sp = helper.make_sparse_tensor(helper.make_tensor("sv", TensorProto.FLOAT, [2], [5.0, 6.0]),
                                   helper.make_tensor("si", TensorProto.INT64, [2], [1, 3]), [4])
    tp = helper.make_tensor_type_proto(TensorProto.INT8, [2, "K"])
    tps = [tp, helper.make_sequence_type_proto(helper.make_tensor_type_proto(TensorProto.FLOAT, None))]
    a = [
        helper.make_attribute("a_float", 1.5),
        helper.make_attribute("a_int", -7),
        helper.make_attribute("a_string", b"hello"),
        helper.make_attribute("a_tensor", helper.make_tensor("at", TensorProto.INT32, [3], [1, -2, 3])),
        helper.make_attribute("a_graph", sub),
        helper.make_attribute("a_floats", [0.5, -1.0, 2.25]),
        helper.make_attribute("a_ints", [1, -2, 3000000000]),
        helper.make_attribute("a_strings", [b"x", b"yz", b""]),
        helper.make_attribute("a_tensors", [helper.make_tensor("t0", TensorProto.FLOAT, [1], [9.0]),
                                            helper.make_tensor("t1", TensorProto.INT64, [2], [4, 5])]),
        helper.make_attribute("a_graphs", [sub, sub]),
        helper.make_attribute("a_sparse", sp),
        helper.make_attribute("a_sparses", [sp, sp]),
        helper.make_attribute("a_tp", tp),
        helper.make_attribute("a_tps", tps),
    ]
    node = helper.make_node("Everything", ["x"], ["y"], name="every", domain="org.ctosa.test")
    node.attribute.extend(a)
    graph = helper.make_graph(
        [node], "attrs",
        [vi("x", TensorProto.FLOAT, [1])],
        [vi("y", TensorProto.FLOAT, [1])],
        value_info=[
            helper.make_value_info("seq_v", helper.make_sequence_type_proto(
                helper.make_tensor_type_proto(TensorProto.FLOAT, ["S", 3]))),
            helper.make_value_info("opt_v", helper.make_optional_type_proto(
                helper.make_tensor_type_proto(TensorProto.INT64, [4]))),
            helper.make_value_info("map_v", map_type(
                TensorProto.STRING, helper.make_tensor_type_proto(TensorProto.FLOAT, [])))])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 16),
                                                helper.make_opsetid("org.ctosa.test", 1)])
    m.ir_version = 8
    save(m, "attrs.onnx")


# -------------------------------------------------------- dtypes.onnx
def raw_tensor(name, dt, dims, data):
    t = TensorProto()
    t.name = name
    t.data_type = dt
    t.dims.extend(dims)
    t.raw_data = data
    return t


def dtypes():
    inits = []
    # f16_typed[i] = i - 2 (float16 bit patterns in int32_data)
    inits.append(helper.make_tensor("f16_typed", TensorProto.FLOAT16, [5], np.arange(5) - 2.0))
    # f16_raw[i] = i * 0.5
    inits.append(numpy_helper.from_array((np.arange(4) * 0.5).astype(np.float16), "f16_raw"))
    # bf16 bit patterns 0x3f80 (1.0), 0xc000 (-2.0) in int32_data
    t = TensorProto(); t.name = "bf16_typed"; t.data_type = TensorProto.BFLOAT16; t.dims.append(2)
    t.int32_data.extend([0x3F80, 0xC000]); inits.append(t)
    # f8e4m3fn: raw bytes 0x38 (1.0), 0xC0 (-2.0); typed: same in int32_data
    inits.append(raw_tensor("f8_raw", 17, [2], bytes([0x38, 0xC0])))
    t = TensorProto(); t.name = "f8_typed"; t.data_type = 17; t.dims.append(2)
    t.int32_data.extend([0x38, 0xC0]); inits.append(t)
    for dt, nm in ((18, "f8e4m3fnuz"), (19, "f8e5m2"), (20, "f8e5m2fnuz"), (24, "f8e8m0")):
        inits.append(raw_tensor(nm, dt, [3], bytes([1, 2, 3])))
    # int4 [5] = 1,-2,3,-4,5 packed low nibble first (raw); same via int32_data
    nib = [1, -2, 3, -4, 5]
    packed = bytes([(nib[0] & 15) | (nib[1] & 15) << 4, (nib[2] & 15) | (nib[3] & 15) << 4, nib[4] & 15])
    inits.append(raw_tensor("i4_raw", 22, [5], packed))
    t = TensorProto(); t.name = "i4_typed"; t.data_type = 22; t.dims.append(5)
    t.int32_data.extend(list(packed)); inits.append(t)
    inits.append(raw_tensor("u4_raw", 21, [3], bytes([0x21, 0x03])))
    inits.append(raw_tensor("f4_raw", 23, [2], bytes([0x21])))
    inits.append(raw_tensor("u2_raw", 25, [5], bytes([0b11100100, 0b01])))
    inits.append(raw_tensor("i2_raw", 26, [4], bytes([0b11100100])))
    # bool [4] = 1,0,1,1 (int32_data)
    inits.append(helper.make_tensor("bool_typed", TensorProto.BOOL, [4], [True, False, True, True]))
    # int8 [3] = -1, 2, -128 (int32_data); uint8 [2] = 255, 7; int16 [2] = -300, 300; uint16 [1] = 65535
    inits.append(helper.make_tensor("i8_typed", TensorProto.INT8, [3], [-1, 2, -128]))
    inits.append(helper.make_tensor("u8_typed", TensorProto.UINT8, [2], [255, 7]))
    inits.append(helper.make_tensor("i16_typed", TensorProto.INT16, [2], [-300, 300]))
    inits.append(helper.make_tensor("u16_typed", TensorProto.UINT16, [1], [65535]))
    inits.append(helper.make_tensor("i32_typed", TensorProto.INT32, [2, 2], [-5, 6, -7, 2147483647]))
    inits.append(helper.make_tensor("i64_typed", TensorProto.INT64, [3], [-1, 1 << 40, -(1 << 62)]))
    inits.append(helper.make_tensor("u32_typed", TensorProto.UINT32, [2], [4294967295, 1]))
    inits.append(helper.make_tensor("u64_typed", TensorProto.UINT64, [2], [18446744073709551615, 2]))
    inits.append(helper.make_tensor("f64_typed", TensorProto.DOUBLE, [2], [1.25, -3.5]))
    inits.append(helper.make_tensor("c64_typed", TensorProto.COMPLEX64, [2], [1 + 2j, 3 - 4j]))
    inits.append(helper.make_tensor("c128_typed", TensorProto.COMPLEX128, [1], [0.5 - 0.25j]))
    inits.append(helper.make_tensor("str_typed", TensorProto.STRING, [3], [b"ab", b"", b"cde"]))
    inits.append(helper.make_tensor("f32_scalar", TensorProto.FLOAT, [], [42.0]))
    inits.append(helper.make_tensor("empty", TensorProto.FLOAT, [0, 3], []))
    sp = helper.make_sparse_tensor(helper.make_tensor("sp_values", TensorProto.FLOAT, [3], [1.0, 2.0, 3.0]),
                                   helper.make_tensor("sp_indices", TensorProto.INT64, [3], [0, 5, 11]), [3, 4])
    graph = helper.make_graph([helper.make_node("Identity", ["f32_scalar"], ["out"])], "dtypes", [],
                              [vi("out", TensorProto.FLOAT, [])], initializer=inits)
    graph.sparse_initializer.extend([sp])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    save(m, "dtypes.onnx")


# ------------------------------------------------------- function.onnx
def function():
    # local.ScaledAdd(x, y; alpha) = x * alpha + y, alpha defaults to 2.0
    # (attribute_proto, written by hand: onnx 1.12 does not know the field).
    alpha = helper.make_node("Constant", [], ["alpha"])
    ref = onnx.AttributeProto()
    ref.name = "value_float"
    ref.ref_attr_name = "alpha"
    ref.type = onnx.AttributeProto.FLOAT
    alpha.attribute.extend([ref])
    body = [alpha,
            helper.make_node("Mul", ["x", "alpha"], ["xa"]),
            helper.make_node("Add", ["xa", "y"], ["z"])]
    fn = helper.make_function("local", "ScaledAdd", ["x", "y"], ["z"], body,
                              [helper.make_opsetid("", 13)])
    fn_bytes = fn.SerializeToString() + field_len(11, helper.make_attribute("alpha", 2.0).SerializeToString())
    # Double(x) = ScaledAdd(x, x) with alpha 1 (a function calling a function)
    fn2 = helper.make_function("local", "Double", ["x"], ["y"],
                               [helper.make_node("ScaledAdd", ["x", "x"], ["y"], domain="local", alpha=1.0)],
                               [helper.make_opsetid("", 13), helper.make_opsetid("local", 1)])
    # Double overload "v2" (IR 10 overloads, written by hand): y = x + x
    fn3 = helper.make_function("local", "Double", ["x"], ["y"], [helper.make_node("Add", ["x", "x"], ["y"])],
                               [helper.make_opsetid("", 13)])
    fn3_bytes = fn3.SerializeToString() + field_len(13, b"v2")
    call4 = onnx.NodeProto()
    call4.ParseFromString(helper.make_node("Double", ["out"], ["out2"], name="call4", domain="local")
                          .SerializeToString() + field_len(8, b"v2"))
    nodes = [helper.make_node("ScaledAdd", ["a", "b"], ["s"], name="call1", domain="local", alpha=3.0),
             helper.make_node("ScaledAdd", ["s", "b"], ["t"], name="call2", domain="local"),
             helper.make_node("Double", ["t"], ["u"], name="call3", domain="local"),
             helper.make_node("Relu", ["u"], ["out"], name="relu"),
             call4]
    graph = helper.make_graph(nodes, "fn", [vi("a", TensorProto.FLOAT, [2]), vi("b", TensorProto.FLOAT, [2])],
                              [vi("out2", TensorProto.FLOAT, [2])])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("local", 1)])
    m.ir_version = 10
    data = (m.SerializeToString() + field_len(25, fn_bytes) + field_len(25, fn2.SerializeToString()) +
            field_len(25, fn3_bytes))
    save(data, "function.onnx")


# ------------------------------------------------- function_in_if.onnx
def function_in_if():
    # local.Twice(x) = x + x, called inside an If branch.
    fn = helper.make_function("local", "Twice", ["x"], ["y"], [helper.make_node("Add", ["x", "x"], ["y"])],
                              [helper.make_opsetid("", 13)])
    then_g = helper.make_graph([helper.make_node("Twice", ["a"], ["t_out"], name="in_then", domain="local")],
                               "then_body", [], [vi("t_out", TensorProto.FLOAT, [2])])
    else_g = helper.make_graph([helper.make_node("Identity", ["a"], ["e_out"], name="in_else")], "else_body", [],
                               [vi("e_out", TensorProto.FLOAT, [2])])
    graph = helper.make_graph([helper.make_node("If", ["c"], ["out"], name="if1", then_branch=then_g,
                                                else_branch=else_g)], "fn_if",
                              [vi("c", TensorProto.BOOL, []), vi("a", TensorProto.FLOAT, [2])],
                              [vi("out", TensorProto.FLOAT, [2])])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("local", 1)])
    m.ir_version = 8
    m.functions.extend([fn])
    save(m, "function_in_if.onnx")


# ------------------------------------------------------ recursive.onnx
def recursive():
    # local.Rec calls itself: inlining must stop at the depth limit.
    fn = helper.make_function("local", "Rec", ["x"], ["y"], [helper.make_node("Rec", ["x"], ["y"], domain="local")],
                              [helper.make_opsetid("local", 1)])
    graph = helper.make_graph([helper.make_node("Rec", ["a"], ["b"], name="rec", domain="local")], "rec",
                              [vi("a", TensorProto.FLOAT, [1])], [vi("b", TensorProto.FLOAT, [1])])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("local", 1)])
    m.ir_version = 8
    m.functions.extend([fn])
    save(m, "recursive.onnx")


# ------------------------------------------------- deep_if.onnx, big.onnx
def deep_if(depth, name):
    g = helper.make_graph([helper.make_node("Identity", ["v"], ["o0"])], "leaf", [], [vi("o0", TensorProto.FLOAT, [1])])
    for i in range(depth):
        leaf = helper.make_graph([helper.make_node("Identity", ["v"], ["e%d" % i])], "else%d" % i, [],
                                 [vi("e%d" % i, TensorProto.FLOAT, [1])])
        g = helper.make_graph([helper.make_node("If", ["c"], ["o%d" % (i + 1)], then_branch=g, else_branch=leaf)],
                              "level%d" % i, [], [vi("o%d" % (i + 1), TensorProto.FLOAT, [1])])
    graph = helper.make_graph(g.node, "deep", [vi("c", TensorProto.BOOL, []), vi("v", TensorProto.FLOAT, [1])],
                              list(g.output))
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    save(m, name)


def big(n):
    nodes = []
    prev = "x"
    for i in range(n):
        op = ("Relu", "Sigmoid", "Neg")[i % 3]
        nodes.append(helper.make_node(op, [prev], ["v%d" % i], name="n%d" % i))
        prev = "v%d" % i
    graph = helper.make_graph(nodes, "big", [vi("x", TensorProto.FLOAT, [1, 8])], [vi(prev, TensorProto.FLOAT, [1, 8])])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    save(m, "big.onnx")


# ------------------------------------------------------ tensors/*.pb
def tensor_files():
    d = os.path.join(HERE, "tensors")
    os.makedirs(d, exist_ok=True)

    def put(t, name):
        with open(os.path.join(d, name), "wb") as f:
            f.write(t.SerializeToString())

    # f32_raw[i] = i * 0.5, shape [2, 3, 4]
    put(numpy_helper.from_array((np.arange(24) * 0.5).astype(np.float32).reshape(2, 3, 4), "x"), "f32_raw.pb")
    put(helper.make_tensor("y", TensorProto.FLOAT, [3], [1.0, -2.0, 3.5]), "f32_typed.pb")
    put(helper.make_tensor("z", TensorProto.INT64, [2, 2], [1, -1, 1 << 33, 0]), "i64_typed.pb")
    put(helper.make_tensor("h", TensorProto.FLOAT16, [2], [1.0, -2.0]), "f16_typed.pb")
    put(helper.make_tensor("s", TensorProto.STRING, [2], [b"hello", b"w"]), "str.pb")
    put(numpy_helper.from_array(np.array([True, False, True]), "b"), "bool_raw.pb")
    # external data beside the tensor file: ext.bin holds 8 bytes of padding then int32 [7, 8, 9]
    with open(os.path.join(d, "ext.bin"), "wb") as f:
        f.write(bytes(8) + np.array([7, 8, 9], dtype=np.int32).tobytes())
    t = TensorProto(); t.name = "e"; t.data_type = TensorProto.INT32; t.dims.append(3)
    t.data_location = TensorProto.EXTERNAL
    for k, v in (("location", "ext.bin"), ("offset", "8"), ("length", "12")):
        e = t.external_data.add(); e.key = k; e.value = v
    put(t, "ext.pb")


def main():
    conv_net()
    external()
    control_flow()
    attrs()
    dtypes()
    function()
    recursive()
    function_in_if()
    deep_if(6, "nested_if.onnx")
    deep_if(40, "deep_if.onnx")  # deeper than the default limit (32)
    big(4000)
    tensor_files()
    print("wrote models to", HERE)


if __name__ == "__main__":
    sys.exit(main())
