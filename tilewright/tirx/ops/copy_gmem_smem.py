"""The ``gmem_smem`` variant of ``copy``: vectorized global <-> shared copies over a synthesized
``[outer, threads, vec]`` partition.

Input: a ``copy`` between a global and a shared region (neither a register), run by a full
execution scope on CUDA. Output: a serial loop of ``outer`` rounds in which each thread moves
one naturally aligned ``vec``-element vector with ``tw.cuda.copy_bytes``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tilewright.ir import For, ForKind, LetStmt, PrimExpr, Stmt, Var, op, substitute
from tilewright.ir.dtype import int32
from tilewright.ir.intrinsics import COPY_BYTES, address_of, copy_bytes
from tilewright.ir.tile import EXEC_SCOPES, TileOp
from tilewright.layout import LayoutError, TileLayout, align
from tilewright.layout import offset_arith as oa
from tilewright.layout.offset_arith import Offset
from tilewright.layout.shard import MEMORY
from tilewright.tirx.dispatch import Check, ExecContext, check_all
from tilewright.tirx.operand import Operand, is_multiple
from tilewright.tirx.ops.copy_checks import (
    all_threads_active,
    copy_operands,
    divides_thread_count,
    scope_allowed,
    valid_copy,
)

GMEM_SMEM_PAIRS = (("global", "shared"), ("shared", "global"))
VECTOR_BITS = (128, 64, 32, 16, 8)
# One vector transfer: (dst pointer, src pointer, bytes) -> the statement moving it.
Transfer = Callable[[PrimExpr, PrimExpr, int], Stmt]


@dataclass(frozen=True)
class GmemSmemPlan:
    """The partition of one copy: ``parts = [outer, threads, vec]`` and both sides' layouts
    regrouped to it, global side first in canonical (stride-descending) order."""

    outer: int
    threads: int
    vec: int
    global_side: Operand
    shared_side: Operand
    global_parts: TileLayout
    shared_parts: TileLayout

    @property
    def parts(self) -> list[int]:
        """``[outer, threads, vec]``."""
        return [self.outer, self.threads, self.vec]

    @property
    def vec_bytes(self) -> int:
        """Bytes moved by one vector transfer."""
        return (
            self.vec * self.global_side.buffer.dtype.bits * self.global_side.buffer.dtype.lanes // 8
        )


def is_gmem_smem(op: TileOp, ctx: ExecContext) -> Check:
    """The ``gmem_smem`` predicate: ``(True, None)`` or ``(False, reason)``."""
    if not ctx.supports(COPY_BYTES):
        where = f"target {ctx.target}" if ctx.target is not None else "no target"
        return False, f"{where} has no {COPY_BYTES.name} (16-byte copies)"
    if ctx.scope not in EXEC_SCOPES:
        return False, f"unsupported exec_scope {ctx.scope}"
    ok, reason = check_all(
        lambda: all_threads_active(ctx),
        lambda: valid_copy(op),
        lambda: scope_allowed(op, GMEM_SMEM_PAIRS),
        lambda: divides_thread_count(op, ctx),
    )
    if not ok:
        return False, reason
    try:
        plan_gmem_smem(op, ctx)
    except LayoutError as err:
        return False, f"no [outer, threads, vec] partition: {err}"
    return True, None


def plan_gmem_smem(op: TileOp, ctx: ExecContext) -> GmemSmemPlan:
    """The widest-vector partition of a valid global/shared copy (``LayoutError`` if none).

    Example: a 32x32 float32 copy by a warp gives ``outer=8, threads=32, vec=4``.
    """
    dst, src = copy_operands(op)
    g, s = (src, dst) if src.memory == "global" else (dst, src)
    g_aligned, s_aligned = align(g.tile, s.tile)
    dtype = g.buffer.dtype
    element_bits = dtype.bits * dtype.lanes
    chunk = s.swizzle.chunk_elems() if s.swizzle is not None else None
    size, threads = g.size(), ctx.threads
    failure: LayoutError | None = None
    for bits in VECTOR_BITS:
        if bits % element_bits:
            continue
        vec = bits // element_bits
        if chunk is not None and vec > chunk:
            continue
        if size % (threads * vec):
            continue
        parts = [size // (threads * vec), threads, vec]
        try:
            g_parts, s_parts = g_aligned.regroup(parts), s_aligned.regroup(parts)
        except LayoutError as err:
            failure = err
            continue
        if _vector_aligned(g_parts, parts, vec, g.base) and _vector_aligned(
            s_parts, parts, vec, s.base
        ):
            return GmemSmemPlan(parts[0], threads, vec, g, s, g_parts, s_parts)
    raise failure or LayoutError(
        f"no vector of {element_bits}-bit elements fits {size} elements over {threads} threads"
    )


def _vector_aligned(layout: TileLayout, parts: list[int], vec: int, base: Offset) -> bool:
    """True when the ``vec`` group is one contiguous run and every other stride and the base
    offset are multiples of ``vec`` (so each vector pointer is naturally aligned)."""
    outer, threads, inner = layout.group(parts)
    if vec > 1 and (len(inner.shard) != 1 or inner.shard[0].stride != 1):
        return False
    if vec > 1 and any(not sh.is_memory for sh in inner.shard):
        return False
    others = outer.shard + threads.shard
    strides_ok = all(sh.stride % vec == 0 for sh in others if sh.extent > 1)
    return strides_ok and is_multiple(base, vec)


def emit_gmem_smem(op: TileOp, ctx: ExecContext) -> Stmt:
    """The serial loop of vector copies (see the module docstring); notes ``vec``, ``outer``.

    Example (32x32 float32, a warp)::

        for f in range(8):
            s_lin = f * 128 + tid * 4
            g_lin = f * 128 + tid * 4
            T.evaluate(T.cuda.copy_bytes(T.address_of(A_smem_1[s_lin]), ..., 16))
    """
    plan = plan_gmem_smem(op, ctx)
    ctx.notes.update(vec=plan.vec, outer=plan.outer, vec_bytes=plan.vec_bytes)
    return vector_loop(op, ctx, plan, copy_bytes)


def vector_loop(op: TileOp, ctx: ExecContext, plan: GmemSmemPlan, transfer: Transfer) -> Stmt:
    """The loop of ``plan``'s rounds, one ``transfer(dst_ptr, src_ptr, vec_bytes)`` a thread a
    round: ``copy_bytes`` for ``gmem_smem``, ``cp.async`` for ``copy_async``'s ``cp_async``.

    Example: ``vector_loop(op, ctx, plan_gmem_smem(op, ctx), copy_bytes)``.
    """
    f = Var("f", int32)
    coords = (f, ctx.thread_index, 0)
    g, s = plan.global_side, plan.shared_side
    s_lin_value = _based(s, plan.shared_parts.apply(*coords, shape=plan.parts)[MEMORY])
    g_lin_value = _based(g, plan.global_parts.apply(*coords, shape=plan.parts)[MEMORY])
    s_lin, g_lin = Var("s_lin", int32), Var("g_lin", int32)
    s_off = s_lin
    lets: list[tuple[Var, Offset]] = [(s_lin, s_lin_value), (g_lin, g_lin_value)]
    if s.swizzle is not None:
        s_off = Var("s_off", int32)
        lets.append((s_off, s.swizzle.apply(s_lin)))
    s_ptr = address_of(ctx.flat(s.buffer), s_off)
    g_ptr = address_of(ctx.flat(g.buffer), g_lin)
    global_is_src = op.args[1] is g.region
    body: Stmt = (
        transfer(s_ptr, g_ptr, plan.vec_bytes)
        if global_is_src
        else transfer(g_ptr, s_ptr, plan.vec_bytes)
    )
    for var, value in reversed(lets):
        body = LetStmt(var, _expr(value), body)
    if plan.outer == 1:
        return substitute(body, {f: 0})
    return For(f, _expr(0), _expr(plan.outer), ForKind.SERIAL, body)


def _based(side: Operand, offset: Offset) -> Offset:
    return oa.add(side.base, offset)


def _expr(value: Offset) -> PrimExpr:
    return op.convert(value)
