"""Scalar kernel arguments for CUDA launches: each dtype becomes the C type of the kernel's
parameter (host side only: no GPU needed)."""

from __future__ import annotations

import ctypes

import ml_dtypes
import numpy as np
import pytest

from tilewright.runtime.cuda_runtime import driver
from tilewright.runtime.cuda_runtime.module import _ctype


@pytest.mark.parametrize(
    ("dtype", "value", "ctype", "bits"),
    [
        ("float16", 1.5, ctypes.c_uint16, np.array(1.5, np.float16).view(np.uint16)),
        ("bfloat16", -2.0, ctypes.c_uint16, np.array(-2.0, ml_dtypes.bfloat16).view(np.uint16)),
        ("float8_e4m3fn", 1.5, ctypes.c_uint8, 0x3C),  # sign 0, exponent 0111, mantissa 100
        ("float8_e5m2", -2.0, ctypes.c_uint8, 0xC0),  # sign 1, exponent 10000, mantissa 00
    ],
)
def test_low_precision_floats_pass_their_bits(
    dtype: str, value: float, ctype: type, bits: int
) -> None:
    arg = _ctype(value, dtype, "k")
    assert isinstance(arg, ctype) and arg.value == int(bits)


def test_plain_dtypes_and_an_unknown_one() -> None:
    assert isinstance(_ctype(3, "int32", "k"), ctypes.c_int32)
    assert _ctype(0.5, "float32", "k").value == 0.5
    with pytest.raises(driver.CUDAError, match=r"kernel k: no CUDA argument type for dtype int4"):
        _ctype(1, "int4", "k")
