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
    Evaluate,
    For,
    ForKind,
    IfThenElse,
    PrimExpr,
    Stmt,
    Var,
    op,
    substitute,
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


def register_walk(
    reg: Operand,
    ctx: ExecContext,
    body: Callable[[Offset, Offset], Stmt],
    vector: int = 1,
) -> Stmt:
    """Loops over the register elements of the running thread; ``body(logical, reg_offset)``.

    ``logical`` is the element's row-major position in the region, ``reg_offset`` its memory
    offset in the register buffer. Thread-axis shards fix their coordinate from the thread.
    The loops are unrolled: a register array stays in registers only when every index is a
    constant (a wgmma accumulator that a rolled loop indexes would go to local memory).
    With ``vector`` > 1 (it must divide the innermost shard, a memory one) that shard's loop
    is split and its inner ``vector`` elements become a vectorized loop: one access of
    ``vector`` elements where the addresses allow (``register_vector`` chooses it).
    """
    shards = reg.tile.shard
    weights = [product([s.extent for s in shards[i + 1 :]]) for i in range(len(shards))]
    innermost = max(i for i, s in enumerate(shards) if s.extent != 1) if reg.size() > 1 else -1
    logical: Offset = 0
    memory: Offset = reg.base
    loops: list[tuple[Var, int, ForKind]] = []
    for position, (shard, weight) in enumerate(zip(shards, weights)):
        if shard.extent == 1:
            continue
        if shard.axis == MEMORY:
            var = Var(f"r{position}", int32)
            coord: Offset = var
            if position == innermost and vector > 1:
                lane = Var(f"v{position}", int32)
                if shard.extent > vector:
                    loops.append((var, shard.extent // vector, ForKind.UNROLLED))
                    coord = oa.add(oa.mul(var, vector), lane)
                else:
                    coord = lane
                loops.append((lane, vector, ForKind.VECTORIZED))
            else:
                loops.append((var, shard.extent, ForKind.UNROLLED))
            memory = oa.add(memory, oa.mul(coord, shard.stride))
        else:
            coord = oa.floormod(
                oa.floordiv(thread_coordinate(shard.axis, ctx), shard.stride), shard.extent
            )
        logical = oa.add(logical, oa.mul(coord, weight))
    stmt = body(logical, memory)
    for var, extent, kind in reversed(loops):
        stmt = For(var, op.convert(0), op.convert(extent), kind, stmt)
    return stmt


def register_vector(reg: Operand, other: Operand, ctx: ExecContext) -> int:
    """How many register elements one access of a register copy can move (1: one by one).

    The innermost shard of ``reg``'s layout must be a memory one of stride 1 (consecutive
    registers); the same elements must be consecutive in ``other`` (its innermost region
    extent contiguous, inside one swizzle chunk) and start at a multiple of the width, which
    is the largest power of two that divides both innermost extents, at most 16 bytes.

    Example: a wgmma accumulator (pairs of columns a thread) copied to a row-major float32
    tile gives 2 (``float2`` stores).
    """
    shards = [s for s in reg.tile.shard if s.extent != 1]
    if not shards or shards[-1].axis != MEMORY or shards[-1].stride != 1:
        return 1
    others = [s for s in other.tile.shard if s.extent != 1]
    if not others or others[-1].axis != MEMORY or others[-1].stride != 1:
        return 1
    limit = 16 // reg.buffer.dtype.bytes
    if other.swizzle is not None:
        limit = min(limit, 1 << other.swizzle.per_element)
    width = 1
    while (
        width * 2 <= limit
        and shards[-1].extent % (width * 2) == 0
        and others[-1].extent % (width * 2) == 0
    ):
        width *= 2
    while width > 1 and not _aligned(reg, other, ctx, width):
        width //= 2
    return width


def _aligned(reg: Operand, other: Operand, ctx: ExecContext, width: int) -> bool:
    """Every group of ``width`` elements starts at a multiple of ``width`` on both sides."""
    from tilewright.tirx.operand import is_multiple

    starts: list[Offset] = []

    def record(logical: Offset, reg_offset: Offset) -> Stmt:
        starts.extend((reg_offset, other.element_offset(logical)[MEMORY]))
        return Evaluate(op.convert(0))

    nest = register_walk(reg, ctx, record, vector=width)
    lanes = [
        node.loop_var
        for node in _loops(nest)
        if node.kind is ForKind.VECTORIZED  # the group's lane: 0 at its start
    ]
    zero = {lane: op.convert(0) for lane in lanes}
    return all(
        is_multiple(oa.as_offset(simplify(substitute(op.convert(v), zero))), width) for v in starts
    )


def _loops(stmt: Stmt) -> list[For]:
    found = []
    while isinstance(stmt, For):
        found.append(stmt)
        stmt = stmt.body
    return found
