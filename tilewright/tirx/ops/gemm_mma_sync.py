"""The ``mma_sync`` variant of ``gemm``: one warp, ``ldmatrix`` + ``mma.sync.m16n8k16`` (sm_80+).

Input: ``Tx.warp.gemm(C, A, B, transA, transB, accum)`` as a ``TileOp`` computing ``C[m, n]
(+)= sum_k A[m, k] * B[n, k]`` (TVM TIRx's convention: ``transA=False``: A is an ``M x K``
region, ``True``: ``K x M``; ``transB=False``: B is ``N x K``, ``True``: ``K x N``), A and B
float16 or bfloat16 in shared memory, C a float32 ``local`` buffer in
``mma_accumulator_layout``. Output, through ``dispatch``: two ``uint32`` register arrays for
one k step's fragments (``A_frag``: 4 registers per m16 block, ``B_frag``: 2 per n8 tile) and

    mma_fill(4, C, tile)                                 # accum False (under `if not accum`)
    for s < K / 16:                                      # unrolled
        ptx_ldmatrix(transA, 4, A_frag + 4 i, A at (16 i, 16 s) per lane)     # i < M / 16
        ptx_ldmatrix(transB, 4 or 2, B_frag + 2 j, B at (8 j, 16 s) per lane) # j < N / 8, by 2
        ptx_mma("m16n8k16", "row", "col", A_frag + 4 i, B_frag + 2 j, C tile (i, j))

A K-major operand is read with plain ``ldmatrix`` (each lane points at one 16-byte row of
K), an MN-major one with ``ldmatrix.trans``. ``gemm_async`` has no ``mma_sync`` form: the
instruction is synchronous, so the variant declines it and names ``Tx.warp.gemm``.

Example::

    Tx.warp.gemm(acc[0:32, 0:32], As[w * 32 : w * 32 + 32, 0:64], Bs[0:32, 0:64], accum=kt > 0)
"""

from __future__ import annotations

from tilewright.ir import (
    Allocate,
    BufferRegion,
    Evaluate,
    IfThenElse,
    IntImm,
    PrimExpr,
    SeqStmt,
    Stmt,
    StringImm,
    decl_buffer,
    intrinsics,
    op,
)
from tilewright.ir.dtype import float32, int32
from tilewright.ir.tile import TileOp
from tilewright.layout import LayoutError
from tilewright.layout.fragment import MMA_K, MMA_M, MMA_N
from tilewright.tirx.dispatch import Check, ExecContext, check_all
from tilewright.tirx.operand import Operand, operand
from tilewright.tirx.ops.copy_checks import all_threads_active
from tilewright.tirx.ops.gemm_checks import types_and_memories
from tilewright.tirx.ops.mma_operands import (
    LdmatrixPlan,
    MmaAccumulatorPlan,
    plan_ldmatrix,
    plan_mma_accumulator,
    whole_storage,
)
from tilewright.tirx.ops.wgmma_operands import matrix_extents

MIN_ARCH = 80  # mma.sync.aligned.m16n8k16 with f16/bf16 inputs: sm_80 and newer
PTX_TYPES = {"float16": "fp16", "bfloat16": "bf16"}
FLOAT32 = float32
A_REGISTERS, B_REGISTERS = 4, 2  # 32-bit fragment registers of one m16 x k16 / k16 x n8


def arch_number(arch: str) -> int | None:
    """The compute capability of an ``sm_XY[a]`` arch as ``XY`` (None when it has none).

    Example: ``arch_number("sm_90a") == 90``; ``arch_number("") is None``.
    """
    digits = "".join(c for c in arch if c.isdigit())
    return int(digits) if digits else None


def _operands(op_: TileOp) -> tuple[Operand, Operand, Operand]:
    c, a, b, _ = op_.args
    assert isinstance(c, BufferRegion) and isinstance(a, BufferRegion)
    assert isinstance(b, BufferRegion)
    return operand(c), operand(a), operand(b)


def _valid(op_: TileOp) -> Check:
    args = op_.args
    regions = all(isinstance(x, BufferRegion) for x in args[:3])
    if len(args) != 4 or not regions or not isinstance(args[3], PrimExpr):
        return False, f"{op_.op} takes three buffer regions (C, A, B) and accum"
    return True, None


def _target(ctx: ExecContext) -> Check:
    target = ctx.target
    if target is None or not (
        ctx.supports(intrinsics.PTX_MMA) and ctx.supports(intrinsics.PTX_LDMATRIX)
    ):
        return False, (
            f"target {target} does not spell ptx_mma and ptx_ldmatrix (mma.sync is CUDA's, "
            "sm_80 and newer)"
        )
    number = arch_number(target.arch)
    if number is None or number < MIN_ARCH:
        return False, (
            f"target arch {target.arch or '(none)'} has no mma.sync m16n8k16 for float16 / "
            "bfloat16 (needs sm_80 or newer)"
        )
    return True, None


def _warp_scope(ctx: ExecContext) -> Check:
    if ctx.scope != "warp":
        return False, f"mma_sync runs on one warp (Tx.warp), not the {ctx.scope} scope"
    return all_threads_active(ctx)


def _dtypes_and_memory(op_: TileOp) -> Check:
    c, a, b = _operands(op_)
    return types_and_memories(
        c, a, b, engine="mma.sync", reads="loads A and B from shared memory with ldmatrix"
    )


def _mnk(op_: TileOp) -> tuple[int, int, int]:
    """``(M, N, K)``, checking that C, A and B agree (``ValueError`` with the shapes)."""
    c, a, b = _operands(op_)
    (cm, cn), a_ext, b_ext = (matrix_extents(x, n) for x, n in ((c, "C"), (a, "A"), (b, "B")))
    am, ak = reversed(a_ext) if op_.attr("transA") else a_ext
    bn, bk = reversed(b_ext) if op_.attr("transB") else b_ext
    if (am, bn, bk) != (cm, cn, ak):
        want = (
            "K x M" if op_.attr("transA") else "M x K",
            "K x N" if op_.attr("transB") else "N x K",
        )
        raise ValueError(
            f"shapes do not match: C is {cm} x {cn}, A {a_ext[0]} x {a_ext[1]}, B {b_ext[0]} x "
            f"{b_ext[1]} (want C M x N, A {want[0]}, B {want[1]})"
        )
    return cm, cn, ak


def _shapes(op_: TileOp) -> Check:
    try:
        m, n, k = _mnk(op_)
    except ValueError as err:
        return False, str(err)
    for what, value, step in (("M", m, MMA_M), ("N", n, MMA_N), ("K", k, MMA_K)):
        if value % step:
            return False, f"{what} = {value} is not a multiple of {step} (mma.sync is m16n8k16)"
    return True, None


def _plans(op_: TileOp) -> tuple[MmaAccumulatorPlan, LdmatrixPlan, LdmatrixPlan]:
    c, a, b = _operands(op_)
    return plan_mma_accumulator(c), plan_ldmatrix(a, "A"), plan_ldmatrix(b, "B")


def _layouts(op_: TileOp) -> Check:
    try:
        _plans(op_)
    except LayoutError as err:
        return False, str(err)
    return True, None


def is_mma_sync(op_: TileOp, ctx: ExecContext) -> Check:
    """The ``mma_sync`` predicate: CUDA sm_80+, a whole warp, float16/bfloat16 A and B in
    shared memory whose rows ldmatrix can read, a float32 C in the m16n8 fragment layout,
    M, N, K multiples of 16, 8, 16."""
    ok, reason = _valid(op_)
    if not ok:
        return False, reason
    try:
        return check_all(
            lambda: _target(ctx),
            lambda: _warp_scope(ctx),
            lambda: _dtypes_and_memory(op_),
            lambda: _shapes(op_),
            lambda: _layouts(op_),
        )
    except LayoutError as err:
        return False, f"invalid {op_.op}: {err}"


def no_async_mma_sync(op_: TileOp, ctx: ExecContext) -> Check:
    """``gemm_async`` has no ``mma_sync`` form: it always declines, naming ``Tx.warp.gemm``."""
    return False, (
        "mma.sync is synchronous: it completes before the next instruction, so there is "
        "nothing to leave in flight; use Tx.warp.gemm"
    )


def _i32(value: int) -> PrimExpr:
    return IntImm(value, int32)


def _ldmatrix(
    plan: LdmatrixPlan,
    ctx: ExecContext,
    frag: PrimExpr,
    frag_offset: int,
    count: int,
    trans: bool,
    place: tuple[PrimExpr, PrimExpr],
) -> Stmt:
    """One ``ldmatrix.x{count}``: the lane points at stored element ``place``."""
    # The whole buffer, read only (mask 1): the barrier planner sees a shared read.
    flat = ctx.flat(plan.side.buffer)
    smem = intrinsics.ACCESS_PTR.call(whole_storage(flat), _i32(0), flat.shape[0], _i32(1))
    call = intrinsics.PTX_LDMATRIX.call(
        op.const(trans),
        _i32(count),
        StringImm(".b16"),
        frag,
        _i32(frag_offset),
        smem,
        plan.address(*place),
        dtype=plan.side.buffer.dtype,
    )
    return Evaluate(call)


def _matrix_place(
    lane: PrimExpr, outer: PrimExpr, k: PrimExpr, transposed: bool
) -> tuple[PrimExpr, PrimExpr]:
    """The stored ``(row, col)`` a lane points at: row ``lane % 8`` of the 8 x 8 matrix at
    logical ``(outer, k)`` (rows of M or N, K contiguous), or of its transpose."""
    r = op.floormod(lane, 8)
    return (op.add(outer, r), k) if not transposed else (op.add(k, r), outer)


def _zero_fill(acc: MmaAccumulatorPlan, ctx: ExecContext) -> Stmt:
    """``mma_fill`` of C's registers: one call when its tiles are contiguous, else per tile."""
    data = whole_storage(ctx.flat(acc.side.buffer))
    relative = sorted(r for row in acc.relative for r in row)
    count = len(relative) * 4
    if relative == list(range(0, count, 4)):
        runs = [(acc.base, count)]
    else:
        runs = [
            (acc.offset(i, j), 4) for i, row in enumerate(acc.relative) for j in range(len(row))
        ]
    fills = [
        Evaluate(intrinsics.MMA_FILL.call(_i32(size), data, op.convert(start), dtype=FLOAT32))
        for start, size in runs
    ]
    return fills[0] if len(fills) == 1 else SeqStmt(tuple(fills))


def _mma(
    ptx: str,
    a: tuple[PrimExpr, PrimExpr],
    b: tuple[PrimExpr, PrimExpr],
    c: tuple[PrimExpr, PrimExpr],
) -> Stmt:
    """One ``mma.sync.aligned.m16n8k16.row.col.f32.{ptx}.{ptx}.f32``: ``c += a * b`` on the
    (storage, register offset) fragments."""
    shape = ("m16n8k16", "row", "col", ptx, ptx, "fp32")
    call = intrinsics.PTX_MMA.call(
        *(StringImm(s) for s in shape), *a, *b, *c, op.const(False), dtype=FLOAT32
    )
    return Evaluate(call)


def emit_mma_sync(op_: TileOp, ctx: ExecContext) -> Stmt:
    """The fragment arrays, C's zero fill unless ``accum``, then per k16 step the ldmatrix
    loads of A and B and the ``(M / 16) x (N / 8)`` mma.sync calls (module docstring)."""
    acc, a, b = _plans(op_)
    trans_a, trans_b = bool(op_.attr("transA")), bool(op_.attr("transB"))
    accum = op_.args[3]
    assert isinstance(accum, PrimExpr)
    m, n, k = _mnk(op_)
    blocks, tiles, steps = m // MMA_M, n // MMA_N, k // MMA_K
    lane = op.convert(ctx.thread_index)
    a_frag = decl_buffer((blocks * A_REGISTERS,), "uint32", f"{a.side.buffer.name}_frag", "local")
    b_frag = decl_buffer((tiles * B_REGISTERS,), "uint32", f"{b.side.buffer.name}_frag", "local")
    c_data = whole_storage(ctx.flat(acc.side.buffer))
    ptx = PTX_TYPES[str(a.side.buffer.dtype)]
    body: list[Stmt] = []
    if isinstance(accum, IntImm):
        body += [] if accum.value else [_zero_fill(acc, ctx)]
    else:  # accum=kt > 0: overwrite on the first k tile
        body.append(IfThenElse(op.logical_not(accum), _zero_fill(acc, ctx)))
    q = op.floordiv(lane, 8)  # the matrix this lane addresses (x4)
    q2 = op.floordiv(op.floormod(lane, 16), 8)  # x2: lanes 16-31 repeat 0-15 (unused)
    for step in range(steps):
        k0 = step * MMA_K
        for i in range(blocks):
            # Matrices: (rows +0, k +0), (rows +8, k +0), (rows +0, k +8), (rows +8, k +8).
            outer = op.add(i * MMA_M, op.mul(op.floormod(q, 2), 8))
            kk = op.add(k0, op.mul(op.floordiv(q, 2), 8))
            place = _matrix_place(lane, outer, kk, trans_a)
            body.append(
                _ldmatrix(a, ctx, whole_storage(a_frag), i * A_REGISTERS, 4, trans_a, place)
            )
        for j in range(0, tiles, 2):
            count = 4 if j + 1 < tiles else 2
            sel = q if count == 4 else q2
            # Matrices: (n tile j, k +0), (j, k +8), (j + 1, k +0), (j + 1, k +8).
            outer = op.add(j * MMA_N, op.mul(op.floordiv(sel, 2), 8))
            kk = op.add(k0, op.mul(op.floormod(sel, 2), 8))
            place = _matrix_place(lane, outer, kk, trans_b)
            body.append(
                _ldmatrix(b, ctx, whole_storage(b_frag), j * B_REGISTERS, count, trans_b, place)
            )
        for i in range(blocks):
            for j in range(tiles):
                a_regs = (whole_storage(a_frag), _i32(i * A_REGISTERS))
                b_regs = (whole_storage(b_frag), _i32(j * B_REGISTERS))
                c_regs = (c_data, op.convert(acc.offset(i, j)))
                body.append(_mma(ptx, a_regs, b_regs, c_regs))
    ctx.notes.update(
        m=m, n=n, k=k, k_steps=steps, m_blocks=blocks, n_tiles=tiles, transA=trans_a, transB=trans_b
    )
    return Allocate(a_frag, Allocate(b_frag, SeqStmt(tuple(body))))
