"""The ``gemm`` and ``gemm_async`` tile primitives, their ``wgmma`` variant (Hopper) and their
variant table (``mma_sync``, sm_80 and newer, is in ``gemm_mma_sync``).

Input: ``Tx.warpgroup.gemm(C, A, B, transA, transB, accum)`` as a ``TileOp`` (args ``C, A,
B, accum``; ``transA`` / ``transB`` attributes), computing ``C[m, n] (+)= sum_k A[m, k] *
B[n, k]`` with TVM TIRx's convention (``transA=False``: A is K-major, ``M x K``;
``transB=False``: B is K-major, ``N x K``). Output, through ``dispatch``: the ``wgmma``
statement sequence

    tw.cuda.wgmma_fence()
    wgmma_mma_async(N, "f16", desc(A, block b, k step s), desc(B, k step s), acc, offset_b,
                    scale_d = (s > 0) or accum, 0, 0)       # for b < M / 64, s < K / 16
    tw.cuda.wgmma_commit_group()
    tw.cuda.wgmma_wait_group(0)                             # gemm only, not gemm_async

With A in registers (a ``local`` region in ``wgmma_accumulator_layout(M, K)``'s layout, 16-bit:
what a previous gemm's accumulator becomes after ``Tx.wg.cast``, as in attention's P @ V)
each call is ``wgmma_mma_async_rs(N, "f16", A's registers, offset_b + 8 s, desc(B), ...)``.

On a warp, ``mma_sync`` (priority 30, below ``wgmma``'s 40) emits ``ldmatrix`` and
``mma.sync.m16n8k16``; it declines ``gemm_async`` (mma.sync is synchronous). Elsewhere the
``DispatchError`` lists why each variant declined.
"""

from __future__ import annotations

from tilewright.ir import BufferRegion, IntImm, PrimExpr, SeqStmt, Stmt, StringImm, op
from tilewright.ir import intrinsics_hopper as hopper
from tilewright.ir.dtype import DataType, int32
from tilewright.ir.intrinsics import address_of
from tilewright.ir.tile import WARPGROUP_SIZE, TileOp
from tilewright.layout import LayoutError
from tilewright.layout import offset_arith as oa
from tilewright.layout.fragment import WGMMA_M, WGMMA_N_MAX
from tilewright.tirx.dispatch import Check, ExecContext, Variant, check_all
from tilewright.tirx.operand import Operand, operand
from tilewright.tirx.ops.copy_checks import all_threads_active
from tilewright.tirx.ops.gemm_checks import types_and_memories
from tilewright.tirx.ops.gemm_mma_sync import emit_mma_sync, is_mma_sync, no_async_mma_sync
from tilewright.tirx.ops.wgmma_operands import (
    AccumulatorPlan,
    SmemPlan,
    matrix_extents,
    plan_accumulator,
    plan_smem,
)

K_STEP = 16  # wgmma m64nNk16 with 16-bit inputs
A_STEP_REGISTERS = 8  # 16-bit elements of A a thread holds per k step (4 32-bit registers)
AB_TYPES = {"float16": "f16", "bfloat16": "bf16"}
WGMMA_ARCHS = ("sm_90", "sm_90a")  # sm_90 builds as sm_90a once wgmma appears


def gemm_operands(op_: TileOp) -> tuple[Operand, Operand, Operand, PrimExpr]:
    """``(C, A, B, accum)`` of a gemm op (``LayoutError`` when a layout cannot be sliced)."""
    c, a, b, accum = op_.args
    assert isinstance(c, BufferRegion) and isinstance(a, BufferRegion)
    assert isinstance(b, BufferRegion) and isinstance(accum, PrimExpr)
    return operand(c), operand(a), operand(b), accum


def _valid_gemm(op_: TileOp) -> Check:
    args = op_.args
    regions = all(isinstance(x, BufferRegion) for x in args[:3])
    if len(args) != 4 or not regions or not isinstance(args[3], PrimExpr):
        return False, f"{op_.op} takes three buffer regions (C, A, B) and accum"
    return True, None


def _target_has_wgmma(ctx: ExecContext) -> Check:
    target = ctx.target
    if target is None or not ctx.supports(hopper.WGMMA_MMA_ASYNC):
        return False, (
            f"target {target} does not spell {hopper.WGMMA_MMA_ASYNC.name} (wgmma is CUDA sm_90a's)"
        )
    if target.arch not in WGMMA_ARCHS:
        return False, f"target arch {target.arch} has no wgmma (needs sm_90a)"
    return True, None


def _warpgroup_scope(ctx: ExecContext) -> Check:
    if ctx.scope != "warpgroup":
        return False, (
            f"wgmma runs on a warpgroup (Tx.warpgroup / Tx.wg), not the {ctx.scope} scope"
        )
    return all_threads_active(ctx)


def _k_major(op_: TileOp) -> Check:
    for key, operand_name, shape in (("transA", "A", "M x K"), ("transB", "B", "N x K")):
        if op_.attr(key):
            return False, (
                f"{key}=True ({operand_name} MN-major) is not supported yet: give "
                f"{operand_name} K-major, as an {shape} region"
            )
    return True, None


def _dtypes_and_memory(op_: TileOp) -> Check:
    c, a, b, _ = gemm_operands(op_)
    return types_and_memories(
        c,
        a,
        b,
        engine="wgmma",
        reads="reads A from shared memory or registers and B from shared memory",
        a_in_registers=True,
    )


def _shapes(op_: TileOp) -> Check:
    c, a, b, _ = gemm_operands(op_)
    (cm, cn), (am, ak), (bn, bk) = (matrix_extents(x, n) for x, n in ((c, "C"), (a, "A"), (b, "B")))
    if (am, bn, bk) != (cm, cn, ak):
        return False, (
            f"shapes do not match: C is {cm} x {cn}, A {am} x {ak}, B {bn} x {bk} (want C M x "
            "N, A M x K, B N x K)"
        )
    if cm % WGMMA_M:
        return False, f"M = {cm} is not a multiple of {WGMMA_M} (wgmma blocks are m64)"
    if cn % 8 or not 8 <= cn <= WGMMA_N_MAX:
        return False, f"N = {cn} is not a multiple of 8 from 8 to {WGMMA_N_MAX}"
    if ak % K_STEP:
        return False, f"K = {ak} is not a multiple of {K_STEP} (wgmma's k step)"
    return True, None


def _layouts(op_: TileOp) -> Check:
    try:
        _plans(op_)
    except LayoutError as err:
        return False, str(err)
    return True, None


def _plans(op_: TileOp) -> tuple[AccumulatorPlan, SmemPlan | AccumulatorPlan, SmemPlan]:
    """C's registers, A's descriptor fields (shared) or registers (local), B's fields."""
    c, a, b, _ = gemm_operands(op_)
    a_plan = plan_accumulator(a, "A") if a.memory == "local" else plan_smem(a, "A")
    return plan_accumulator(c), a_plan, plan_smem(b, "B")


def is_wgmma(op_: TileOp, ctx: ExecContext) -> Check:
    """The ``wgmma`` predicate: sm_90a, a full warpgroup, K-major float16/bfloat16 A and B in
    shared memory with layouts a descriptor expresses (or A in registers in the fragment
    layout), a float32 fragment-layout C."""
    ok, reason = _valid_gemm(op_)
    if not ok:
        return False, reason
    try:
        return check_all(
            lambda: _target_has_wgmma(ctx),
            lambda: _warpgroup_scope(ctx),
            lambda: _k_major(op_),
            lambda: _dtypes_and_memory(op_),
            lambda: _shapes(op_),
            lambda: _layouts(op_),
        )
    except LayoutError as err:
        return False, f"invalid {op_.op}: {err}"


def _descriptor(ctx: ExecContext, plan: SmemPlan, row: int, k: int) -> PrimExpr:
    pointer = address_of(ctx.flat(plan.side.buffer), op.convert(plan.start(row, k)))
    fields = (plan.leading_bytes, plan.stride_bytes, plan.swizzle_bytes)
    return hopper.WGMMA_DESCRIPTOR.call(
        pointer, *(IntImm(f, int32) for f in fields), dtype=DataType("uint", 64)
    )


def _scale_d(accum: PrimExpr, step: int) -> PrimExpr:
    if step > 0:
        return IntImm(1, int32)
    if isinstance(accum, IntImm):
        return IntImm(int(bool(accum.value)), int32)
    return op.if_then_else(accum, IntImm(1, int32), IntImm(0, int32))


def _wgmma_calls(op_: TileOp, ctx: ExecContext) -> list[Stmt]:
    acc, a, b = _plans(op_)
    accum = op_.args[3]
    assert isinstance(accum, PrimExpr)
    ab = AB_TYPES[str(a.side.buffer.dtype)]
    k = a.n if isinstance(a, AccumulatorPlan) else a.k
    steps = k // K_STEP
    registers = address_of(ctx.flat(acc.side.buffer), op.convert(0))
    calls: list[Stmt] = [hopper.WGMMA_FENCE.stmt()]
    for block, offset in enumerate(acc.offsets):
        for step in range(steps):
            desc_b = _descriptor(ctx, b, 0, step * K_STEP)
            scale_d = _scale_d(accum, step)
            n = IntImm(acc.n, int32)
            if isinstance(a, AccumulatorPlan):  # A's k step: 8 registers of 16 bits
                a_registers = address_of(ctx.flat(a.side.buffer), op.convert(0))
                a_offset = op.convert(oa.add(a.offsets[block], A_STEP_REGISTERS * step))
                calls.append(
                    hopper.WGMMA_MMA_ASYNC_RS.stmt(
                        n,
                        StringImm(ab),
                        a_registers,
                        a_offset,
                        desc_b,
                        registers,
                        op.convert(offset),
                        scale_d,
                    )
                )
                continue
            calls.append(
                hopper.WGMMA_MMA_ASYNC.stmt(
                    n,
                    StringImm(ab),
                    _descriptor(ctx, a, block * WGMMA_M, step * K_STEP),
                    desc_b,
                    registers,
                    op.convert(offset),
                    scale_d,
                    IntImm(0, int32),
                    IntImm(0, int32),
                )
            )
    calls.append(hopper.WGMMA_COMMIT_GROUP.stmt())
    ctx.notes.update(
        m=acc.m,
        n=acc.n,
        k=k,
        k_steps=steps,
        m_blocks=len(acc.offsets),
        a="registers" if isinstance(a, AccumulatorPlan) else "shared",
        swizzle_a=0 if isinstance(a, AccumulatorPlan) else a.swizzle_bytes,
        swizzle_b=b.swizzle_bytes,
        threads=WARPGROUP_SIZE,
    )
    return calls


def emit_wgmma(op_: TileOp, ctx: ExecContext) -> Stmt:
    """fence, the wgmmas over m64 blocks and k16 steps, commit, ``wait_group(0)``."""
    return SeqStmt((*_wgmma_calls(op_, ctx), hopper.WGMMA_WAIT_GROUP.stmt(IntImm(0, int32))))


def emit_wgmma_async(op_: TileOp, ctx: ExecContext) -> Stmt:
    """fence, the wgmmas, commit: the group stays in flight (``T.cuda.wgmma_wait_group``)."""
    return SeqStmt(tuple(_wgmma_calls(op_, ctx)))


GEMM_VARIANTS: tuple[Variant, ...] = (
    Variant("wgmma", 40, is_wgmma, emit_wgmma),
    Variant("mma_sync", 30, is_mma_sync, emit_mma_sync),
)
GEMM_ASYNC_VARIANTS: tuple[Variant, ...] = (
    Variant("wgmma", 40, is_wgmma, emit_wgmma_async),
    Variant("mma_sync", 30, no_async_mma_sync, emit_mma_sync),
)
