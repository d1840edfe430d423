"""Argument checks shared by the ``T`` functions: values to expressions, with clear errors."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import ParamSpec, TypeVar, cast

from tilewright.ir import op
from tilewright.ir.buffer import Buffer, BufferRegion
from tilewright.ir.dtype import DataType, dtype
from tilewright.ir.expr import Add, BufferLoad, IntImm, PrimExpr, Range
from tilewright.ir.stmt import AttrValue
from tilewright.ir.structural import structural_equal
from tilewright.script.parser.frames import DTypeConstructor

_P = ParamSpec("_P")
_R = TypeVar("_R")


def dtype_forward(func: Callable[..., _R]) -> Callable[..., _R]:
    """``func`` that also takes its leading dtype as ``dtype=``, as TVM's call builtins do.

    Example::

        >>> call_extern = dtype_forward(call_extern)
        >>> call_extern("fmaxf", x, y, dtype="float32")  # == call_extern("float32", "fmaxf", x, y)
    """

    @functools.wraps(func)
    def forward(*values: object, **kwargs: object) -> _R:
        if "dtype" in kwargs:
            values = (kwargs.pop("dtype"), *values)
        return func(*values, **kwargs)

    return forward


def dtype_ignored(func: Callable[_P, _R]) -> Callable[..., _R]:
    """``func`` that accepts and drops ``dtype=``, as TVM's builtins whose result dtype is
    fixed (``T.tvm_access_ptr``, ``T.call_packed``, ...) do.

    Example::

        >>> tvm_access_ptr = dtype_ignored(tvm_access_ptr)
        >>> tvm_access_ptr(T.type_annotation("float32"), A.data, 0, 4, 1, dtype="handle")
    """

    @functools.wraps(func)
    def drop(*values: object, **kwargs: object) -> _R:
        kwargs.pop("dtype", None)
        return func(*values, **kwargs)  # type: ignore[arg-type]  # func's own check names it

    return drop


def _describe(value: object) -> str:
    if isinstance(value, Buffer):
        return f"buffer {value.name}"
    return f"{type(value).__name__} {value!r}" if not isinstance(value, PrimExpr) else "expr"


def expr(value: object, where: str) -> PrimExpr:
    """``value`` as an expression; ``TypeError`` naming ``where`` for anything else."""
    if isinstance(value, PrimExpr):
        return value
    if isinstance(value, bool | int | float):
        return op.convert(value)
    raise TypeError(f"{where}: expected an expression or a number, found {_describe(value)}")


def int_expr(value: object, where: str) -> PrimExpr:
    """An integer-typed expression (extents, indices, lanes)."""
    result = expr(value, where)
    if not result.dtype.is_integer:
        raise TypeError(f"{where}: expected an integer, found {result.dtype} value")
    return result


def int_value(value: object, where: str) -> int:
    """A Python integer (lanes, alignment): an ``int`` or an ``IntImm``."""
    if isinstance(value, IntImm):
        return value.value
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise TypeError(f"{where}: expected a constant integer, found {_describe(value)}")


def dtype_of(value: object, where: str) -> DataType:
    """A dtype from a string, a ``DataType`` or a ``T.float32``-style constructor."""
    if isinstance(value, DTypeConstructor):
        return value.type
    if isinstance(value, str | DataType):
        try:
            return dtype(value)
        except ValueError as err:
            raise TypeError(f"{where}: {err}") from None
    raise TypeError(f'{where}: expected a dtype such as "float32", found {_describe(value)}')


def shape_of(value: object, where: str) -> tuple[PrimExpr, ...]:
    """A shape: one extent or a tuple/list of them."""
    items = value if isinstance(value, Sequence) and not isinstance(value, str) else (value,)
    return tuple(int_expr(v, f"{where} shape") for v in items)


def region(value: object, where: str) -> BufferRegion:
    """A buffer region from ``A[i, j]`` (a load: one element each) or ``A[i : i + 4]``."""
    if isinstance(value, BufferRegion):
        return value
    if isinstance(value, BufferLoad):
        ranges = tuple(Range(i, IntImm(1, i.dtype)) for i in value.indices)
        return BufferRegion(value.buffer, ranges)
    if isinstance(value, Buffer):
        return BufferRegion.full(value)
    raise TypeError(
        f"{where}: expected a buffer region such as A[i, 0:4], found {_describe(value)}"
    )


def regions(values: Sequence[object], where: str) -> tuple[BufferRegion, ...]:
    """Regions from arguments; a single list argument (the 2022 spelling) is flattened."""
    flat: list[object] = []
    for v in values:
        flat.extend(v if isinstance(v, list | tuple) else [v])
    return tuple(region(v, where) for v in flat)


def attr_dict(value: object, where: str) -> dict[str, AttrValue]:
    if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
        raise TypeError(f"{where}: expected a dict with string keys, found {_describe(value)}")
    # The values are the script's own, unchecked: attrs() freezes lists and dicts, and the
    # printer shows any other value as it is.
    return cast("dict[str, AttrValue]", value)


def span(start: PrimExpr, stop: PrimExpr) -> PrimExpr:
    """``stop - start`` as a reader means it: ``v * 2 + 3`` after ``v * 2`` is 3, ``n``
    after 0 is ``n`` (so that printed ranges and slices read back to the same extents)."""
    if isinstance(stop, Add) and structural_equal(stop.a, start):
        return stop.b
    if isinstance(start, IntImm) and start.value == 0 and stop.dtype == start.dtype:
        return stop
    return op.sub(stop, start)


def region_of(buffer: Buffer, items: Sequence[object]) -> BufferRegion:
    """The region ``buffer[items]`` where items are indices and ``start:stop`` slices."""
    ranges = []
    for dim, item in enumerate(items):
        if isinstance(item, slice):
            if item.step not in (None, 1):
                raise TypeError(f"buffer {buffer.name}: a region slice takes no step")
            start = int_expr(0 if item.start is None else item.start, f"buffer {buffer.name}")
            stop = (
                buffer.shape[dim]
                if item.stop is None
                else int_expr(item.stop, f"buffer {buffer.name}")
            )
            ranges.append(Range(start, span(start, stop)))
        else:
            index = int_expr(item, f"buffer {buffer.name} index")
            ranges.append(Range(index, IntImm(1, index.dtype)))
    return BufferRegion(buffer, tuple(ranges))
