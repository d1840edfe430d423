"""The ``copy_async`` tile primitive: its variant table and the ``cp_async`` variant (sm_80+).

Input: ``Tx.<scope>.copy_async(dst, src, mbar=None)`` as a ``TileOp`` (args ``dst, src`` and,
when given, the mbarrier element). Output, through ``dispatch``: the statement that *issues*
the copy; completing it is the caller's part:

- ``tma`` (``copy_async_tma.py``): one thread, global <-> shared through a TMA tensor map;
  a load completes on the caller's mbarrier, a store in a bulk group.
- ``cp_async``: the threads of a warp, warpgroup or CTA split a global -> shared copy like
  ``copy``'s ``gmem_smem`` variant (the same ``[outer, threads, vec]`` partition) and issue one
  ``cp.async`` of 4, 8 or 16 bytes a vector, then ``tw.cuda.cp_async_commit_group()``; the
  caller waits with ``T.cuda.cp_async_wait_group(n)`` and a barrier before reading.

Example (cp_async, a warp, 32 x 32 float32)::

    for f in range(8):
        s_lin = f * 128 + lane * 4
        g_lin = f * 128 + lane * 4
        T.evaluate(T.call_intrin("int32", "tw.cuda.cp_async", T.address_of(S_1[s_lin]),
                                 T.address_of(A_1[g_lin]), 16))
    T.evaluate(T.call_intrin("int32", "tw.cuda.cp_async_commit_group"))
"""

from __future__ import annotations

from tilewright.ir import IntImm, PrimExpr, SeqStmt, Stmt
from tilewright.ir.dtype import int32
from tilewright.ir.intrinsics import CP_ASYNC, CP_ASYNC_COMMIT
from tilewright.ir.tile import TileOp
from tilewright.layout import LayoutError
from tilewright.tirx.dispatch import Check, ExecContext, Variant, check_all
from tilewright.tirx.ops.copy_async_tma import (
    copy_regions,
    emit_tma,
    is_tma,
    mbar_of,
    sm_version,
    valid_copy_async,
)
from tilewright.tirx.ops.copy_checks import (
    all_threads_active,
    divides_thread_count,
    scope_allowed,
)
from tilewright.tirx.ops.copy_gmem_smem import GmemSmemPlan, plan_gmem_smem, vector_loop

CP_ASYNC_SM = 80
CP_ASYNC_SCOPES = ("warp", "warpgroup", "cta")
CP_ASYNC_BYTES = (4, 8, 16)


def _target(ctx: ExecContext) -> Check:
    version = sm_version(ctx)
    if not ctx.supports(CP_ASYNC) or version is None or version < CP_ASYNC_SM:
        return False, f"target {ctx.target} has no cp.async ({CP_ASYNC.name}: CUDA sm_80 or newer)"
    return True, None


def _scope(ctx: ExecContext) -> Check:
    if ctx.scope not in CP_ASYNC_SCOPES:
        return False, (
            f"cp_async splits the copy over a warp, warpgroup or CTA, not the {ctx.scope} scope "
            "(one thread issues TMA copies instead)"
        )
    return all_threads_active(ctx)


def _no_mbar(op_: TileOp) -> Check:
    if mbar_of(op_) is not None:
        return False, (
            "cp_async completes in commit groups (T.cuda.cp_async_wait_group), not on an "
            "mbarrier: drop mbar="
        )
    return True, None


def plan_cp_async(op_: TileOp, ctx: ExecContext) -> GmemSmemPlan:
    """``gmem_smem``'s partition of the copy, its vectors 4, 8 or 16 bytes (``LayoutError``
    otherwise). Example: a 64 x 64 float16 copy by 128 threads gives ``vec=8, outer=4``."""
    plan = plan_gmem_smem(copy_regions(op_), ctx)
    if plan.vec_bytes not in CP_ASYNC_BYTES:
        raise LayoutError(
            f"the widest vector both layouts allow is {plan.vec_bytes} bytes; cp.async moves "
            "4, 8 or 16"
        )
    return plan


def _plan(op_: TileOp, ctx: ExecContext) -> Check:
    try:
        plan_cp_async(op_, ctx)
    except LayoutError as err:
        return False, f"no [outer, threads, vec] partition: {err}"
    return True, None


def is_cp_async(op_: TileOp, ctx: ExecContext) -> Check:
    """The ``cp_async`` predicate: sm_80+, a full warp, warpgroup or CTA, global -> shared,
    no mbarrier, and ``gmem_smem``'s partition with 4-, 8- or 16-byte vectors."""
    ok, reason = valid_copy_async(op_)
    if not ok:
        return False, reason
    regions = copy_regions(op_)
    return check_all(
        lambda: _target(ctx),
        lambda: _scope(ctx),
        lambda: scope_allowed(regions, (("global", "shared"),)),
        lambda: _no_mbar(op_),
        lambda: divides_thread_count(regions, ctx),
        lambda: _plan(op_, ctx),
    )


def _cp_async(dst: PrimExpr, src: PrimExpr, nbytes: int) -> Stmt:
    return CP_ASYNC.stmt(dst, src, IntImm(nbytes, int32))


def emit_cp_async(op_: TileOp, ctx: ExecContext) -> Stmt:
    """The vector loop of ``cp.async`` copies, then one commit (see the module docstring)."""
    plan = plan_cp_async(op_, ctx)
    ctx.notes.update(vec=plan.vec, outer=plan.outer, vec_bytes=plan.vec_bytes)
    loop = vector_loop(copy_regions(op_), ctx, plan, _cp_async)
    return SeqStmt((loop, CP_ASYNC_COMMIT.stmt()))


COPY_ASYNC_VARIANTS: tuple[Variant, ...] = (
    Variant("cp_async", 20, is_cp_async, emit_cp_async),
    Variant("tma", 10, is_tma, emit_tma),
)
