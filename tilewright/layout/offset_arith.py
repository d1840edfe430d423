"""Offsets that are Python ints or tilewright PrimExprs: arithmetic that folds the trivial cases.

Layouts compute memory and hardware-axis offsets from coordinates that may be loop variables;
these helpers build IR with ``tilewright.ir`` operators but never emit ``* 1``, ``+ 0``,
``// 1`` or ``% 1``, so the offsets read the way a person would write them.
"""

from __future__ import annotations

from tilewright.ir import IntImm, PrimExpr, intrinsics, op

Offset = int | PrimExpr


def as_offset(value: object) -> Offset:
    """``value`` as an int when it is a constant, else the expression itself.

    Example: ``as_offset(IntImm(3, int32)) == 3``.
    """
    if isinstance(value, bool):
        raise TypeError(f"a coordinate must be an integer or an integer expression, got {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, IntImm):
        return value.value
    if isinstance(value, PrimExpr):
        if not (value.dtype.is_int or value.dtype.is_uint) or value.dtype.lanes != 1:
            raise TypeError(f"a coordinate must be a scalar integer expression, got {value.dtype}")
        return value
    raise TypeError(
        f"a coordinate must be an integer or an integer expression, got {type(value).__name__}"
    )


def add(a: Offset, b: Offset) -> Offset:
    """``a + b``, dropping a zero side. Example: ``add(x, 0) is x``."""
    if isinstance(a, int) and isinstance(b, int):
        return a + b
    if isinstance(b, int) and b == 0:
        return a
    if isinstance(a, int) and a == 0:
        return b
    return as_offset(op.add(a, b))


def mul(a: Offset, c: int) -> Offset:
    """``a * c`` for an int ``c``, folding ``c`` of 0 and 1. Example: ``mul(x, 1) is x``."""
    if isinstance(a, int):
        return a * c
    if c == 0:
        return 0
    if c == 1:
        return a
    return op.mul(a, c)


def floordiv(a: Offset, c: int) -> Offset:
    """``a // c`` for a positive int ``c``, folding ``c == 1``."""
    if isinstance(a, int):
        return a // c
    if c == 1:
        return a
    return op.floordiv(a, c)


def floormod(a: Offset, c: int) -> Offset:
    """``a % c`` for a positive int ``c``, folding ``c == 1`` to 0."""
    if isinstance(a, int):
        return a % c
    if c == 1:
        return 0
    return op.floormod(a, c)


def bitwise_xor(a: Offset, b: Offset) -> Offset:
    """``a ^ b``; an expression becomes the ``bitwise_xor`` intrinsic call."""
    if isinstance(a, int) and isinstance(b, int):
        return a ^ b
    if isinstance(b, int) and b == 0:
        return a
    if isinstance(a, int) and a == 0:
        return b
    return intrinsics.BITWISE_XOR.call(*_unified(a, b))


def _unified(a: Offset, b: Offset) -> tuple[PrimExpr, PrimExpr]:
    if isinstance(a, PrimExpr):
        return a, op.convert(b, a.dtype) if isinstance(b, int) else b
    assert isinstance(b, PrimExpr)
    return op.convert(a, b.dtype), b
