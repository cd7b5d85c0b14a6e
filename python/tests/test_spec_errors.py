"""Spec strings and the mapping of C errors onto Python exceptions."""
import pytest

import ctosa


def test_spec_fields():
    s = ctosa.Spec("TOSA-1.0+INT+int16")
    assert str(s) == s.canonical == "TOSA-1.0+INT+int16"
    assert s.version == "1.0"
    assert s.profiles == ("INT",)
    assert s.extensions == ("int16",)
    assert not s.u55
    both = ctosa.Spec("TOSA-1.0+FP+INT")
    assert set(both.profiles) == {"INT", "FP"}
    assert ctosa.Spec(both) == both and hash(ctosa.Spec(str(both))) == hash(both)


def test_spec_canonicalises():
    a = ctosa.Spec("TOSA-1.0+int16+INT")
    assert a.canonical == "TOSA-1.0+INT+int16"


def test_bad_spec_raises_spec_error_with_c_message():
    with pytest.raises(ctosa.SpecError) as ei:
        ctosa.Spec("TOSA-1.0+INTT")
    e = ei.value
    assert isinstance(e, ctosa.UsageError) and isinstance(e, ctosa.Error)
    assert e.code == 1 and e.code_name == "USAGE"
    assert "INTT" in e.message and "did you mean INT" in e.message


def test_target():
    s = ctosa.Spec.from_target("ethos-u55-128")
    assert s.u55 and "INT" in s.profiles
    with pytest.raises(ctosa.SpecError):
        ctosa.Spec.from_target("no-such-npu")


def test_read_errors_carry_file_and_offset(tmp_path):
    p = tmp_path / "bad.tosa"
    p.write_bytes(b"\x10\x00\x00\x00TOSA" + b"\xff" * 24)
    with pytest.raises(ctosa.ParseError) as ei:
        ctosa.read(p)
    e = ei.value
    assert e.code_name == "FORMAT" and e.file == str(p)
    assert str(p) in e.message and e.offset is not None
    with pytest.raises(ctosa.FileError) as ei:
        ctosa.read(tmp_path / "missing.tosa")
    assert "missing.tosa" in ei.value.message and ei.value.code_name == "IO"


def test_lower_errors(tmp_path):
    with pytest.raises(ctosa.FileError):
        ctosa.lower(tmp_path / "none.onnx", "TOSA-1.0+FP")
    with pytest.raises(ctosa.ParseError) as ei:
        ctosa.lower(b"\x0f\xff\xff not a model", "TOSA-1.0+FP")
    assert "byte" in ei.value.message
    with pytest.raises(ctosa.SpecError):
        ctosa.lower(tmp_path / "none.onnx", "TOSA-2.0")
