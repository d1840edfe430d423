"""Data types: parse dtype strings such as ``"float32"`` or ``"int8x4"`` into ``DataType``."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from typing import Any

_CODES = ("int", "uint", "float", "bfloat", "bool", "handle", "void")
# The 8-bit float formats, each its own type code (TVM's and ml_dtypes' names): e<exponent
# bits>m<mantissa bits>; "fn" has no infinities, "fnuz" no negative zero either.
FLOAT8_CODES = ("float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz")
_FLOAT8 = re.compile(r"^(float8_e4m3fn|float8_e5m2|float8_e4m3fnuz|float8_e5m2fnuz)(?:x(\d+))?$")
_PATTERN = re.compile(r"^(int|uint|float|bfloat|bool|handle|void)(\d*)(?:x(\d+))?$")
_DEFAULT_BITS = {
    "int": 32,
    "uint": 32,
    "float": 32,
    "bfloat": 16,
    "bool": 1,
    "handle": 64,
    "void": 0,
}


@dataclass(frozen=True, slots=True)
class DataType:
    """A scalar or vector element type: a type code, a bit width and a lane count.

    Example::

        >>> DataType.parse("float32x4")
        DataType('float32x4')
        >>> DataType.parse("int8").bits
        8
    """

    code: str
    bits: int
    lanes: int = 1

    @staticmethod
    def parse(text: str | DataType) -> DataType:
        """The ``DataType`` for ``text``; ``ValueError`` names an unknown spelling."""
        if isinstance(text, DataType):
            return text
        return _parse(text)

    @property
    def is_int(self) -> bool:
        return self.code == "int"

    @property
    def is_uint(self) -> bool:
        return self.code == "uint"

    @property
    def is_integer(self) -> bool:
        """True for signed and unsigned integers (not bool)."""
        return self.code in ("int", "uint")

    @property
    def is_float(self) -> bool:
        """True for float16/32/64, bfloat16 and the 8-bit float formats."""
        return self.code in ("float", "bfloat") or self.code in FLOAT8_CODES

    @property
    def is_float8(self) -> bool:
        """True for the 8-bit float formats (``float8_e4m3fn``, ``float8_e5m2``, ...), each a
        type code of its own (targets store them as bytes and compute in a wider float)."""
        return self.code in FLOAT8_CODES

    @property
    def is_bool(self) -> bool:
        return self.code == "bool"

    @property
    def is_handle(self) -> bool:
        return self.code == "handle"

    @property
    def is_void(self) -> bool:
        return self.code == "void"

    @property
    def is_vector(self) -> bool:
        return self.lanes > 1

    @property
    def element(self) -> DataType:
        """The scalar type of one lane."""
        return DataType(self.code, self.bits, 1)

    @property
    def bytes(self) -> int:
        """Storage size of one value of this type, all lanes, in bytes (bool takes one byte)."""
        return max(self.bits, 8) // 8 * self.lanes

    def with_lanes(self, lanes: int) -> DataType:
        return DataType(self.code, self.bits, lanes)

    def __str__(self) -> str:
        named = self.code in ("bool", "handle", "void") or self.is_float8
        base = self.code if named else f"{self.code}{self.bits}"
        return base if self.lanes == 1 else f"{base}x{self.lanes}"

    def __repr__(self) -> str:
        return f"DataType({str(self)!r})"


@cache
def _parse(text: str) -> DataType:
    eight = _FLOAT8.match(text)
    if eight is not None:
        return DataType(eight.group(1), 8, int(eight.group(2)) if eight.group(2) else 1)
    match = _PATTERN.match(text)
    if match is None:
        names = ", ".join((*_CODES, *FLOAT8_CODES))
        raise ValueError(f"unknown dtype {text!r}; expected one of {names} (with bits)")
    code, bits, lanes = match.group(1), match.group(2), match.group(3)
    width = int(bits) if bits else _DEFAULT_BITS[code]
    valid = {
        "int": (8, 16, 32, 64),
        "uint": (8, 16, 32, 64),
        "float": (8, 16, 32, 64),
        "bfloat": (16,),
        "bool": (1, 8),
        "handle": (64,),
        "void": (0,),
    }[code]
    if width not in valid:
        raise ValueError(f"unknown dtype {text!r}: {code} takes widths {valid}")
    if code == "bool":
        width = 1
    return DataType(code, width, int(lanes) if lanes else 1)


def dtype(value: str | DataType) -> DataType:
    """Shorthand for ``DataType.parse``."""
    return DataType.parse(value)


int32 = DataType("int", 32)
int64 = DataType("int", 64)
float32 = DataType("float", 32)
bool_ = DataType("bool", 1)
handle = DataType("handle", 64)
void = DataType("void", 0)


def numpy_scalar_type(name: str | DataType) -> Any:
    """The numpy scalar type of a dtype, ``bfloat16`` and the 8-bit floats from ml_dtypes.

    ml_dtypes is imported here, on first need, not with tilewright: its import costs more
    than half a second, paid again by every builder and runner process.

    Example::

        >>> numpy_scalar_type("bfloat16")
        <class 'ml_dtypes.bfloat16'>
    """
    import numpy as np

    element = str(DataType.parse(name).element)
    if element == "bfloat16" or element in FLOAT8_CODES:
        import ml_dtypes

        return getattr(ml_dtypes, element)
    return np.dtype(element).type
