"""The ``fill`` tile primitive: store one value into every element of a region.

Input: ``Tx.<scope>.fill(region, value)`` as a ``TileOp``. Output, through ``dispatch``: the
``vectorized`` variant (a contiguous region: each thread stores 16-byte ramps of broadcast
values) or the ``scalar`` loop (one element per store, any layout without thread axes).
"""

from __future__ import annotations

from tilewright.ir import (
    Broadcast,
    BufferRegion,
    BufferStore,
    For,
    ForKind,
    PrimExpr,
    Ramp,
    Stmt,
    Var,
    op,
)
from tilewright.ir.dtype import int32
from tilewright.ir.tile import TileOp
from tilewright.layout import LayoutError
from tilewright.layout import offset_arith as oa
from tilewright.layout.shard import MEMORY
from tilewright.tirx.dispatch import Check, ExecContext, Variant
from tilewright.tirx.operand import Operand, is_multiple, operand
from tilewright.tirx.ops.elementwise import store, strided_loop

VECTOR_BYTES = 16


def _target(op_: TileOp) -> tuple[Operand | None, str | None]:
    if len(op_.args) != 2 or not isinstance(op_.args[0], BufferRegion):
        return None, "fill takes a buffer region and a value"
    if not isinstance(op_.args[1], PrimExpr):
        return None, "fill's value must be a scalar expression"
    try:
        side = operand(op_.args[0])
    except LayoutError as err:
        return None, f"invalid fill: {err}"
    if side.thread_axes():
        return None, f"{side.buffer.name}'s layout places elements on threads"
    return side, None


def _value(op_: TileOp, side: Operand) -> PrimExpr:
    value = op_.args[1]
    assert isinstance(value, PrimExpr)  # _target checked it
    return op.cast(value, side.buffer.dtype)


def _vector_width(side: Operand, ctx: ExecContext) -> int | None:
    dtype = side.buffer.dtype
    vec = VECTOR_BYTES * 8 // (dtype.bits * dtype.lanes)
    if side.swizzle is not None:
        vec = min(vec, side.swizzle.chunk_elems())
    shards = side.tile.canonicalize().shard
    contiguous = len(shards) == 1 and shards[0].stride == 1 and shards[0].is_memory
    while vec > 1:
        if contiguous and side.size() % (vec * ctx.threads) == 0 and is_multiple(side.base, vec):
            return vec
        vec //= 2
    return None


def is_vectorized(op_: TileOp, ctx: ExecContext) -> Check:
    """A contiguous region whose size splits into 16-byte (or narrower) vectors per thread."""
    side, reason = _target(op_)
    if side is None:
        return False, reason
    if ctx.narrowed_by is not None:
        return False, f"the enclosing `if {ctx.narrowed_by}` narrows the {ctx.scope} scope"
    if _vector_width(side, ctx) is None:
        return False, (
            f"region of {side.buffer.name} is not one contiguous run divisible into vectors "
            f"over {ctx.threads} threads"
        )
    return True, None


def emit_vectorized(op_: TileOp, ctx: ExecContext) -> Stmt:
    """``for f in range(outer): buf[ramp(base + (f * threads + tid) * vec, 1, vec)] = value``."""
    side, _ = _target(op_)
    assert side is not None
    vec = _vector_width(side, ctx)
    assert vec is not None
    outer = side.size() // (vec * ctx.threads)
    ctx.notes.update(vec=vec, outer=outer)
    f = Var("f", int32)
    tid = ctx.thread_index if ctx.threads > 1 else 0
    round_index = f if outer > 1 else 0
    start = oa.add(side.base, oa.add(oa.mul(round_index, ctx.threads * vec), oa.mul(tid, vec)))
    # Inside one swizzle chunk the swizzle moves the whole vector together.
    index = Ramp(op.convert(side.offset(start)), op.convert(1), vec)
    body: Stmt = BufferStore(ctx.flat(side.buffer), Broadcast(_value(op_, side), vec), (index,))
    if outer == 1:
        return body
    return For(f, op.convert(0), op.convert(outer), ForKind.SERIAL, body)


def is_scalar_fill(op_: TileOp, ctx: ExecContext) -> Check:
    """Any region whose layout does not place elements on threads."""
    side, reason = _target(op_)
    return (side is not None), reason


def emit_scalar_fill(op_: TileOp, ctx: ExecContext) -> Stmt:
    """Each thread stores elements ``e * threads + tid`` one by one."""
    side, _ = _target(op_)
    assert side is not None
    value = _value(op_, side)
    return strided_loop(
        side.size(), ctx, lambda i: store(side, ctx, side.element_offset(i)[MEMORY], value)
    )


FILL_VARIANTS: tuple[Variant, ...] = (
    Variant("vectorized", 10, is_vectorized, emit_vectorized),
    Variant("scalar", 0, is_scalar_fill, emit_scalar_fill),
)
