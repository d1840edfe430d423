import pytest

from tilewright.ir import DataType, dtype


@pytest.mark.parametrize(
    ("text", "code", "bits", "lanes"),
    [
        ("float32", "float", 32, 1),
        ("float16x8", "float", 16, 8),
        ("bfloat16", "bfloat", 16, 1),
        ("int8", "int", 8, 1),
        ("uint64", "uint", 64, 1),
        ("bool", "bool", 1, 1),
        ("int32x4", "int", 32, 4),
        ("handle", "handle", 64, 1),
    ],
)
def test_parse_and_print(text, code, bits, lanes):
    dt = dtype(text)
    assert (dt.code, dt.bits, dt.lanes) == (code, bits, lanes)
    assert str(dt) == text
    assert DataType.parse(dt) is dt


def test_properties():
    assert dtype("float16x4").element == dtype("float16")
    assert dtype("float16x4").bytes == 8
    assert dtype("bool").bytes == 1
    assert dtype("int8").is_integer and not dtype("bool").is_integer
    assert dtype("bfloat16").is_float
    assert dtype("int32").with_lanes(4) == dtype("int32x4")


@pytest.mark.parametrize("bad", ["float", "float31", "int7", "complex64", "bfloat32", ""])
def test_unknown_dtype_is_a_clear_error(bad):
    if bad == "float":  # a bare code takes its default width
        assert dtype(bad) == dtype("float32")
        return
    with pytest.raises(ValueError, match="dtype"):
        dtype(bad)
