"""Elementwise tile primitives: ``cast``, ``add``, ``sub``, ``mul``, ``maximum``, ``minimum``,
``relu``, ``gelu``, ``exp`` (what an epilogue applies to an accumulator: bias, activation,
conversion).

Input: ``Tx.<scope>.<op>(dst, a[, b])`` as a ``TileOp``. Every input is a buffer region or
(the second input of a binary op) a scalar; a region's extents equal ``dst``'s or are 1 where
it is broadcast (a bias row ``bias[0:1, 0:N]`` over an ``M x N`` tile). Inputs are converted
to ``dst``'s dtype, then combined: ``dst = a + b``, ``max(a, b)``, ``max(a, 0)`` (``relu``),
``a * (1 + erf(a / sqrt 2)) / 2`` (``gelu``), ``exp(a)``; ``cast`` only converts. Output,
through ``dispatch``:

- ``register`` (20): ``dst`` is a register operand spread over the scope's threads (a wgmma
  or mma.sync accumulator, say); each thread walks its own registers; a register input must
  have ``dst``'s layout (the same registers), other inputs are read at the element's position;
- ``scalar`` (0): no operand is spread over threads; each thread handles elements
  ``e * threads + tid``.

Example::

    Tx.wg.add(acc[0:64, 0:256], acc[0:64, 0:256], bias[0:1, n0 : n0 + 256])
    Tx.wg.relu(acc[0:64, 0:256], acc[0:64, 0:256])
    Tx.wg.cast(acc16[0:64, 0:256], acc[0:64, 0:256])
"""

from __future__ import annotations

import math
from collections.abc import Callable

from tilewright.ir import BufferRegion, PrimExpr, Stmt, op
from tilewright.ir.tile import TileOp
from tilewright.layout import LayoutError
from tilewright.layout import offset_arith as oa
from tilewright.layout.offset_arith import Offset
from tilewright.layout.shard import MEMORY
from tilewright.tirx.dispatch import Check, ExecContext, Variant
from tilewright.tirx.operand import Operand, operand
from tilewright.tirx.ops.copy import SCOPE_AXES
from tilewright.tirx.ops.elementwise import load, register_walk, store, strided_loop

UNARY = ("cast", "relu", "gelu", "exp")
BINARY = ("add", "sub", "mul", "maximum", "minimum")


def _combine(name: str, a: PrimExpr, b: PrimExpr | None) -> PrimExpr:
    """``dst``'s value from the converted inputs."""
    binary = {
        "add": op.add,
        "sub": op.sub,
        "mul": op.mul,
        "maximum": op.max_value,
        "minimum": op.min_value,
    }
    if name in binary:
        assert b is not None  # a binary op has its second input
        return binary[name](a, b)
    if name == "relu":
        return op.max_value(a, op.convert(0, a.dtype))
    if name == "gelu":
        erf = op.math_call("erf", op.mul(a, op.convert(1 / math.sqrt(2), a.dtype)))
        return op.mul(op.mul(op.convert(0.5, a.dtype), a), op.add(op.convert(1, a.dtype), erf))
    if name == "exp":
        return op.math_call("exp", a)
    return a  # cast: the conversion alone


def _operands(op_: TileOp) -> tuple[Operand, list[Operand | PrimExpr]] | str:
    """(dst, inputs) or the reason the op is malformed."""
    arity = 1 if op_.op in UNARY else 2
    if len(op_.args) != arity + 1 or not isinstance(op_.args[0], BufferRegion):
        return f"{op_.op} takes a destination region and {arity} input(s)"
    try:
        dst = operand(op_.args[0])
        inputs: list[Operand | PrimExpr] = []
        for position, arg in enumerate(op_.args[1:]):
            if isinstance(arg, BufferRegion):
                inputs.append(operand(arg))
            elif isinstance(arg, PrimExpr) and position == 1:
                inputs.append(arg)
            else:
                return f"input {position} of {op_.op} must be a buffer region"
    except LayoutError as err:
        return f"invalid {op_.op}: {err}"
    for side in inputs:
        if isinstance(side, Operand) and not _broadcasts(side, dst):
            return (
                f"{side.buffer.name}'s region {list(side.extents)} neither matches "
                f"{dst.buffer.name}'s {list(dst.extents)} nor broadcasts to it (extent 1)"
            )
    return dst, inputs


def _accepted(op_: TileOp) -> tuple[Operand, list[Operand | PrimExpr]]:
    """The operands of an op a variant's check accepted."""
    parsed = _operands(op_)
    assert not isinstance(parsed, str)  # the variant's check returned this reason otherwise
    return parsed


def _broadcasts(side: Operand, dst: Operand) -> bool:
    mine, theirs = _trimmed(side.extents, len(dst.extents)), dst.extents
    return mine is not None and all(a in (b, 1) for a, b in zip(mine, theirs))


def _trimmed(extents: tuple[int, ...], rank: int) -> tuple[int, ...] | None:
    """``extents`` as ``rank`` dimensions: leading 1s dropped or added (``[1, N]`` and
    ``[N]`` both broadcast a row)."""
    while len(extents) > rank and extents[0] == 1:
        extents = extents[1:]
    if len(extents) > rank:
        return None
    return (1,) * (rank - len(extents)) + extents


def _element(side: Operand, dst: Operand, logical: Offset) -> Offset:
    """The memory offset in ``side`` of the input element for ``dst``'s element ``logical``
    (a row-major position in ``dst``'s region), broadcast dimensions pinned to 0."""
    extents = _trimmed(side.extents, len(dst.extents))
    assert extents is not None  # _operands checked it
    index: Offset = 0
    stride = 1
    for axis in reversed(range(len(dst.extents))):
        inner = math.prod(dst.extents[axis + 1 :])
        coord = oa.floormod(oa.floordiv(logical, inner), dst.extents[axis])
        if extents[axis] != 1:
            index = oa.add(index, oa.mul(coord, stride))
        stride *= extents[axis]
    return side.element_offset(index)[MEMORY]


def _value(
    op_: TileOp,
    dst: Operand,
    inputs: list[Operand | PrimExpr],
    read: Callable[[Operand], PrimExpr],
) -> PrimExpr:
    dtype = dst.buffer.dtype
    values = [op.cast(read(side) if isinstance(side, Operand) else side, dtype) for side in inputs]
    return _combine(op_.op, values[0], values[1] if len(values) > 1 else None)


def is_register(op_: TileOp, ctx: ExecContext) -> Check:
    """``dst`` in registers spread over the scope's threads; register inputs share its layout."""
    parsed = _operands(op_)
    if isinstance(parsed, str):
        return False, parsed
    dst, inputs = parsed
    axes = dst.thread_axes()
    if dst.memory != "local" or not axes:
        return False, f"{dst.buffer.name} is not a register operand spread over threads"
    bad = [a for a in axes if a not in SCOPE_AXES[ctx.scope]]
    if bad:
        return False, f"register layout axes {bad} do not belong to the {ctx.scope} scope"
    if ctx.narrowed_by is not None:
        return False, f"the enclosing `if {ctx.narrowed_by}` narrows the {ctx.scope} scope"
    for side in inputs:
        if isinstance(side, Operand) and side.thread_axes() and repr(side.tile) != repr(dst.tile):
            return False, (
                f"register input {side.buffer.name} has another layout than "
                f"{dst.buffer.name} (each thread must hold the same elements)"
            )
    return True, None


def emit_register(op_: TileOp, ctx: ExecContext) -> Stmt:
    """Each thread computes the elements of its own registers."""
    dst, inputs = _accepted(op_)

    def body(logical: Offset, reg_offset: Offset) -> Stmt:
        def read(side: Operand) -> PrimExpr:
            if side.thread_axes():  # the same registers: the same offset from its base
                return load(side, ctx, oa.add(side.base, oa.add(reg_offset, oa.mul(dst.base, -1))))
            return load(side, ctx, _element(side, dst, logical))

        return store(dst, ctx, reg_offset, _value(op_, dst, inputs, read))

    ctx.notes.update(register=dst.buffer.name)
    return register_walk(dst, ctx, body)


def is_scalar(op_: TileOp, ctx: ExecContext) -> Check:
    """No operand spread over threads: any memory, any scope."""
    parsed = _operands(op_)
    if isinstance(parsed, str):
        return False, parsed
    dst, inputs = parsed
    for side in (dst, *inputs):
        if isinstance(side, Operand) and side.thread_axes():
            return False, (
                f"{side.buffer.name}'s layout places elements on threads; use the register variant"
            )
    return True, None


def emit_scalar(op_: TileOp, ctx: ExecContext) -> Stmt:
    """Each thread computes elements ``e * threads + tid``."""
    dst, inputs = _accepted(op_)

    def body(index: Offset) -> Stmt:
        def read(side: Operand) -> PrimExpr:
            return load(side, ctx, _element(side, dst, index))

        target = dst.element_offset(index)[MEMORY]
        return store(dst, ctx, target, _value(op_, dst, inputs, read))

    ctx.notes.update(rounds=-(-dst.size() // ctx.threads))
    return strided_loop(dst.size(), ctx, body)


ELEMENTWISE_VARIANTS: tuple[Variant, ...] = (
    Variant("register", 20, is_register, emit_register),
    Variant("scalar", 0, is_scalar, emit_scalar),
)
