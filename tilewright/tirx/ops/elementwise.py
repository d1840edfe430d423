"""Per-element emission shared by the scalar variants of ``copy`` and ``fill``.

Input: the operands of a tile op and its ``ExecContext``. Output: a serial loop in which each
thread of the scope handles elements ``e * threads + tid`` of the region (guarded when the
count does not divide), and the loop nests of the register variants, which walk the
elements a register layout gives the running thread.
"""

from __future__ import annotations

from collections.abc import Callable

from tilewright.arith import simplify
from tilewright.ir import (
    BufferLoad,
    BufferStore,
    For,
    ForKind,
    IfThenElse,
    PrimExpr,
    Stmt,
    Var,
    op,
)
from tilewright.ir.dtype import int32
from tilewright.layout import offset_arith as oa
from tilewright.layout.offset_arith import Offset
from tilewright.layout.shard import MEMORY, product
from tilewright.tirx.dispatch import ExecContext
from tilewright.tirx.operand import Operand


def load(side: Operand, ctx: ExecContext, linear: Offset) -> BufferLoad:
    """The element of ``side`` at memory offset ``linear`` (swizzled if the layout is)."""
    return BufferLoad(ctx.flat(side.buffer), (storage_index(side, linear),))


def store(side: Operand, ctx: ExecContext, linear: Offset, value: PrimExpr) -> BufferStore:
    """``side[linear] = value`` through the flat view of its buffer."""
    return BufferStore(ctx.flat(side.buffer), value, (storage_index(side, linear),))


def storage_index(side: Operand, linear: Offset) -> PrimExpr:
    """The flat index of memory offset ``linear``: simplified, then swizzled if need be."""
    if isinstance(linear, PrimExpr):
        linear = oa.as_offset(simplify(linear))
    return op.convert(side.offset(linear))


def strided_loop(
    size: int, ctx: ExecContext, body: Callable[[Offset], Stmt], name: str = "e"
) -> Stmt:
    """``for e in range(ceil(size / threads))`` over index ``e * threads + tid`` (guarded).

    Example: 1024 elements over 32 threads give ``for e in range(32)`` with index
    ``e * 32 + tid``.
    """
    threads = ctx.threads
    rounds = -(-size // threads)
    e = Var(name, int32)
    # One round: index with the constant 0, so no `0 * threads` is left behind.
    round_index: Offset = e if rounds > 1 else 0
    index = oa.add(oa.mul(round_index, threads), ctx.thread_index if threads > 1 else 0)
    stmt = body(index)
    if size % threads:
        stmt = IfThenElse(op.lt(index, size), stmt)
    if rounds == 1:
        return stmt
    return For(e, op.convert(0), op.convert(rounds), ForKind.SERIAL, stmt)


def thread_coordinate(axis: str, ctx: ExecContext) -> Offset:
    """The running thread's position on hardware axis ``axis`` within the scope."""
    tid = ctx.thread_index if ctx.threads > 1 else 0
    if axis == "laneid":
        return oa.floormod(tid, 32)
    if axis == "warpid":
        return oa.floordiv(tid, 32)
    return tid


def register_walk(reg: Operand, ctx: ExecContext, body: Callable[[Offset, Offset], Stmt]) -> Stmt:
    """Loops over the register elements of the running thread; ``body(logical, reg_offset)``.

    ``logical`` is the element's row-major position in the region, ``reg_offset`` its memory
    offset in the register buffer. Thread-axis shards fix their coordinate from the thread.
    """
    shards = reg.tile.shard
    weights = [product([s.extent for s in shards[i + 1 :]]) for i in range(len(shards))]
    logical: Offset = 0
    memory: Offset = reg.base
    loops: list[tuple[Var, int]] = []
    for position, (shard, weight) in enumerate(zip(shards, weights)):
        if shard.extent == 1:
            continue
        if shard.axis == MEMORY:
            var = Var(f"r{position}", int32)
            loops.append((var, shard.extent))
            coord: Offset = var
            memory = oa.add(memory, oa.mul(var, shard.stride))
        else:
            coord = oa.floormod(
                oa.floordiv(thread_coordinate(shard.axis, ctx), shard.stride), shard.extent
            )
        logical = oa.add(logical, oa.mul(coord, weight))
    stmt = body(logical, memory)
    for var, extent in reversed(loops):
        stmt = For(var, op.convert(0), op.convert(extent), ForKind.SERIAL, stmt)
    return stmt
