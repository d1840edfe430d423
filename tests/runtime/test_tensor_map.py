"""TMA tensor maps: the hardware's rules checked before any driver call, and the driver's
arguments (innermost dimension first, strides in bytes)."""

from __future__ import annotations

import pytest

from tilewright.runtime.cuda_runtime import driver
from tilewright.runtime.cuda_runtime.tensor_map import (
    TensorMapError,
    TensorMapSpec,
    encode_arguments,
    encode_tiled,
)


def test_encode_arguments_count_dimensions_innermost_first() -> None:
    spec = TensorMapSpec("float16", shape=(4096, 2048), box=(128, 64), swizzle=128)
    assert spec.box_bytes == 128 * 64 * 2
    args = encode_arguments(spec, 0x7000)
    assert args[:7] == (
        "CU_TENSOR_MAP_DATA_TYPE_FLOAT16",
        2,
        0x7000,
        [2048, 4096],
        [4096],
        [64, 128],
        [1, 1],
    )
    assert args[8] == "CU_TENSOR_MAP_SWIZZLE_128B"


def test_strided_and_three_dimensional_tensors() -> None:
    spec = TensorMapSpec("float32", shape=(4, 64, 32), box=(1, 16, 32), strides=(4096, 64, 1))
    args = encode_arguments(spec, 0)
    assert args[3] == [32, 64, 4] and args[4] == [256, 16384] and args[5] == [32, 16, 1]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"dtype": "complex64"}, "no TMA element type for complex64"),
        ({"box": (64,)}, "has not 2 dimensions"),
        ({"box": (300, 64)}, "box dimension 0 is 300"),
        ({"box": (64, 4)}, "rows are 8 bytes, not a multiple of 16"),
        ({"shape": (128, 100)}, "dimension 0's stride is 200 bytes"),
        ({"swizzle": 16}, "swizzle 16"),
        ({"box": (64, 128), "swizzle": 128}, "256 bytes, wider than the 128-byte swizzle"),
        ({"strides": (128, 2)}, "the last 1"),
    ],
)
def test_what_the_hardware_cannot_describe_is_refused(kwargs: dict, message: str) -> None:
    base = {"dtype": "float16", "shape": (128, 128), "box": (64, 64)}
    with pytest.raises(TensorMapError, match=message):
        TensorMapSpec(**{**base, **kwargs})


def test_encode_calls_the_driver_with_its_enum_values(monkeypatch) -> None:
    calls = []

    class Map:
        opaque = tuple(range(16))

    monkeypatch.setattr(driver, "enum", lambda kind, member: f"{kind}.{member}")
    monkeypatch.setattr(driver, "scalar", lambda kind, value: (kind, value))
    monkeypatch.setattr(driver, "call", lambda name, *args: calls.append((name, args)) or (Map(),))
    raw = encode_tiled(TensorMapSpec("bfloat16", shape=(64, 64), box=(64, 64)), 4096)
    assert len(raw) == 128 and raw[8] == 1  # the words in order, little-endian
    ((name, args),) = calls
    assert name == "cuTensorMapEncodeTiled"
    assert args[0] == "CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_BFLOAT16"
    assert args[8] == "CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_NONE"
    assert args[3] == [("cuuint64_t", 64), ("cuuint64_t", 64)]
    assert args[5] == [("cuuint32_t", 64), ("cuuint32_t", 64)]


def test_the_binding_accepts_the_arguments_as_converted(monkeypatch) -> None:
    """The real cuda-bindings function converts every argument: the arrays go element by
    element as its integer types (plain ints are refused with a TypeError before the call).
    Without a driver the call itself then fails to find libcuda; that is not a TypeError."""
    bindings = pytest.importorskip("cuda.bindings.driver")
    monkeypatch.setattr(driver, "_driver", lambda: bindings)
    spec = TensorMapSpec("float16", shape=(256, 128), box=(64, 64), swizzle=128)
    try:
        raw = encode_tiled(spec, 0x10000)
    except TypeError:
        raise
    except Exception as err:  # no driver here, or the driver refused the fake address
        assert "Cannot convert" not in str(err)
    else:
        assert len(raw) == 128
