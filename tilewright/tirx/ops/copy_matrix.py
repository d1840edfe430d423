"""The ``stmatrix`` and ``ldmatrix`` variants of ``copy``: 16-bit registers to or from
shared memory, 8 x 8 matrices at a time.

Input: ``Tx.warp.copy(dst, src)`` or ``Tx.warpgroup.copy(...)`` as a ``TileOp``, one side a
shared region whose 8-element rows are contiguous 16-byte runs (row-major, padded or with a
swizzle of 16-byte chunks), the other a ``local`` 16-bit region whose layout gives each 8 x 8
matrix of the region to one warp the way the instructions distribute it: lane ``t`` holds
row ``t / 4``, columns ``2 (t % 4)`` and ``+1`` in two consecutive registers (one 32-bit
register). The wgmma accumulator layout and the mma.sync m16n8 one are such layouts (cast to
16 bits first: ``Tx.wg.cast``). Output, through ``dispatch``, per group of 1, 2 or 4 matrices
whose registers follow each other::

    tw.cuda.stmatrix(4, 0, tvm_access_ptr(S, <lane's row address>, 8, 2), frag, r)    # sm_90
    ptx_ldmatrix(0, 4, ".b16", frag, r, tvm_access_ptr(S, 0, size, 1), <row address>)  # sm_75

where lane ``t`` addresses row ``t % 8`` of the group's matrix ``t / 8``. One instruction
moves 512 bytes a warp, against 32 four-byte accesses of the ``register`` variant, and with a
swizzled shared tile its rows hit distinct banks. ``stmatrix`` is the staging step of an
epilogue that ends with a TMA store (``Tx.thread.copy_async(C[...], S[...])``).

Example::

    Tx.wg.cast(acc16[0:64, 0:64], acc[0:64, 0:64])     # float32 accumulator -> float16
    Tx.wg.copy(Cs[0:64, 0:64], acc16[0:64, 0:64])      # dispatches to stmatrix
    Tx.warp.copy(frag[0:16, 0:16], As[0:16, 0:16])     # an m16n8 layout: ldmatrix
"""

from __future__ import annotations

from dataclasses import dataclass

from tilewright.ir import Evaluate, IntImm, PrimExpr, SeqStmt, Stmt, StringImm, intrinsics, op
from tilewright.ir import intrinsics_hopper as hopper
from tilewright.ir.dtype import int32
from tilewright.ir.intrinsics import ACCESS_PTR, Intrinsic
from tilewright.ir.tile import TileOp
from tilewright.layout import LayoutError
from tilewright.layout import offset_arith as oa
from tilewright.layout.shard import MEMORY
from tilewright.tirx.dispatch import Check, ExecContext, check_all
from tilewright.tirx.operand import THREAD_AXES, Operand, is_multiple
from tilewright.tirx.ops.copy_async_tma import sm_version
from tilewright.tirx.ops.copy_checks import copy_operands, valid_copy
from tilewright.tirx.ops.mma_operands import LdmatrixPlan, plan_ldmatrix, whole_storage

MATRIX = 8  # an 8 x 8 matrix of 16-bit elements
LANES = 32
READ, WRITE = 1, 2  # tvm_access_ptr's masks: the callee reads, writes


@dataclass(frozen=True)
class MatrixGroup:
    """One ``stmatrix.x{count}``: the matrices' first registers start at ``register`` (16-bit
    elements from the register region's base, 2 a matrix), matrix ``q`` is the 8 x 8 block at
    logical rows ``8 rows[q]``, columns ``8 cols[q]`` of warp 0's part of the region."""

    count: int
    register: int
    rows: tuple[int, ...]
    cols: tuple[int, ...]


@dataclass(frozen=True)
class MatrixPlan:
    """The matrices every warp stores (warp ``w``'s rows are warp 0's plus ``w * warp_rows``)
    and the shared side's addressing."""

    groups: tuple[MatrixGroup, ...]
    warp_rows: int
    shared: LdmatrixPlan


def plan_matrix_copy(
    reg: Operand, shared: Operand, warps: int, instruction: str = "stmatrix"
) -> MatrixPlan:
    """How ``stmatrix`` stores register region ``reg`` (spread over ``warps`` warps) into
    shared region ``shared``, or ``ldmatrix`` loads it from there (the same distribution);
    ``LayoutError`` saying which element breaks which rule.

    Example: for ``acc16[0:64, 0:64]`` in ``wgmma_accumulator_layout(64, 64)`` (4 warps) the
    plan has 4 groups of 4 matrices (rows 0 and 8 of the warp, two 8-column blocks) and
    ``warp_rows`` 16.
    """
    name = f"register operand {reg.buffer.name}"
    if reg.buffer.dtype.bits * reg.buffer.dtype.lanes != 16:
        raise LayoutError(f"{name}: {instruction} moves 16-bit elements, not {reg.buffer.dtype}")
    target = plan_ldmatrix(shared, "shared", instruction)
    rows, cols = target.rows, target.cols
    if rows % MATRIX or cols % MATRIX:
        raise LayoutError(f"{name}: the region {rows} x {cols} is not made of 8 x 8 matrices")
    if not is_multiple(reg.base, 2):
        raise LayoutError(
            f"{name}: the region starts at register {reg.base}, not provably even "
            f"({instruction} moves two 16-bit elements a 32-bit register)"
        )
    by_warp: dict[int, list[tuple[int, int, int]]] = {}
    for a in range(rows // MATRIX):
        for b in range(cols // MATRIX):
            warp, register = _matrix(reg, rows, cols, a, b, instruction)
            by_warp.setdefault(warp, []).append((register, a, b))
    if sorted(by_warp) != list(range(warps)):
        raise LayoutError(
            f"{name}: its matrices are held by warps {sorted(by_warp)}, not by each of the "
            f"scope's {warps} warps"
        )
    reference = sorted(by_warp[0])
    warp_rows = 0
    for warp in range(1, warps):
        mine = sorted(by_warp[warp])
        shifts = {a - a0 for (_, a, _), (_, a0, _) in zip(mine, reference)}
        if warp == 1 and len(shifts) == 1:
            warp_rows = MATRIX * next(iter(shifts))
        same = [(r, b) for r, _, b in mine] == [(r, b) for r, _, b in reference]
        if not same or shifts != {warp * warp_rows // MATRIX}:
            raise LayoutError(
                f"{name}: warp {warp} does not hold warp 0's matrices in the same registers, "
                f"{warp} x {warp_rows} rows further down (every warp stores the same registers)"
            )
    return MatrixPlan(_groups(reference), warp_rows, target)


def _matrix(
    reg: Operand, rows: int, cols: int, a: int, b: int, instruction: str
) -> tuple[int, int]:
    """``(warp, register)`` of 8 x 8 matrix ``(a, b)``: it must be laid out as the
    instructions distribute it (``LayoutError`` otherwise); ``register`` is its pair of lane
    0, from the base."""
    warp: object = None
    register = -1
    for lane in range(LANES):
        for p in (0, 1):
            row, col = MATRIX * a + lane // 4, MATRIX * b + 2 * (lane % 4) + p
            where = reg.tile.apply(row, col, shape=[rows, cols])
            others = [axis for axis in THREAD_AXES[2:] if where.get(axis, 0)]
            memory = where[MEMORY]
            if not isinstance(memory, int) or others or where.get("laneid", 0) != lane:
                raise LayoutError(
                    f"register operand {reg.buffer.name}: element ({row}, {col}) is not in "
                    f"lane {lane}; {instruction} moves row r, columns 2c and 2c + 1 of an "
                    "8 x 8 matrix in lane 4r + c"
                )
            if warp is None:
                warp, register = where.get("warpid", 0), memory
            if not isinstance(warp, int):
                raise LayoutError(
                    f"register operand {reg.buffer.name}: element ({row}, {col}) is on warp "
                    f"{warp}, not a constant"
                )
            good = where.get("warpid", 0) == warp and memory == register + p
            if not good or (memory - p) % 2:
                raise LayoutError(
                    f"register operand {reg.buffer.name}: element ({row}, {col}) is not in "
                    "the same 32-bit register of every lane as the rest of its 8 x 8 matrix "
                    f"({instruction} moves a matrix in one register of each lane)"
                )
    assert isinstance(warp, int)
    return warp, register


def _groups(matrices: list[tuple[int, int, int]]) -> tuple[MatrixGroup, ...]:
    """``(register, a, b)`` sorted by register into groups of 4, 2 or 1 matrices whose
    registers follow each other and whose positions are affine in the matrix index's bits
    (so that a lane computes its row address without a table)."""
    groups = []
    i = 0
    while i < len(matrices):
        for count in (4, 2, 1):
            part = matrices[i : i + count]
            if len(part) == count and _consecutive(part) and _affine(part):
                groups.append(
                    MatrixGroup(
                        count,
                        part[0][0],
                        tuple(a for _, a, _ in part),
                        tuple(b for _, _, b in part),
                    )
                )
                i += count
                break
    return tuple(groups)


def _consecutive(part: list[tuple[int, int, int]]) -> bool:
    return all(r == part[0][0] + 2 * q for q, (r, _, _) in enumerate(part))


def _affine(part: list[tuple[int, int, int]]) -> bool:
    if len(part) < 4:
        return True
    (_, a0, b0), (_, a1, b1), (_, a2, b2), (_, a3, b3) = part
    return a3 - a0 == (a1 - a0) + (a2 - a0) and b3 - b0 == (b1 - b0) + (b2 - b0)


@dataclass(frozen=True)
class _Form:
    """One direction: its instruction, whether it stores, the intrinsic and the oldest sm."""

    name: str
    store: bool
    intrinsic: Intrinsic
    sm: int


STORE = _Form("stmatrix", True, hopper.STMATRIX, 90)
LOAD = _Form("ldmatrix", False, intrinsics.PTX_LDMATRIX, 75)


def _sides(op_: TileOp, form: _Form) -> tuple[Operand, Operand]:
    """``(shared, registers)`` of the copy."""
    dst, src = copy_operands(op_)
    return (dst, src) if form.store else (src, dst)


def _memories(op_: TileOp, form: _Form) -> Check:
    shared, reg = _sides(op_, form)
    if shared.memory != "shared" or reg.memory != "local":
        direction = "registers to shared memory" if form.store else "shared memory to registers"
        dst, src = copy_operands(op_)
        return False, (
            f"{form.name} copies {direction}, not {src.memory} ({src.buffer.name}) -> "
            f"{dst.memory} ({dst.buffer.name})"
        )
    if not reg.thread_axes():
        return False, f"register buffer {reg.buffer.name} has no thread partition in its layout"
    return True, None


def _target(ctx: ExecContext, form: _Form) -> Check:
    version = sm_version(ctx)
    if not ctx.supports(form.intrinsic) or version is None or version < form.sm:
        return False, f"target {ctx.target} has no {form.name} (CUDA sm_{form.sm} or newer)"
    return True, None


def _scope(ctx: ExecContext, form: _Form) -> Check:
    if ctx.scope not in ("warp", "warpgroup"):
        return False, f"{form.name} runs on a warp or a warpgroup, not the {ctx.scope} scope"
    if ctx.narrowed_by is not None:
        return False, f"the enclosing `if {ctx.narrowed_by}` narrows the {ctx.scope} scope"
    return True, None


def _plan(op_: TileOp, ctx: ExecContext, form: _Form) -> Check:
    shared, reg = _sides(op_, form)
    try:
        plan_matrix_copy(reg, shared, ctx.threads // LANES, form.name)
    except LayoutError as err:
        return False, str(err)
    return True, None


def _accepts(op_: TileOp, ctx: ExecContext, form: _Form) -> Check:
    ok, reason = valid_copy(op_)
    if not ok:
        return False, reason
    return check_all(
        lambda: _target(ctx, form),
        lambda: _scope(ctx, form),
        lambda: _memories(op_, form),
        lambda: _plan(op_, ctx, form),
    )


def is_stmatrix(op_: TileOp, ctx: ExecContext) -> Check:
    """16-bit registers laid out in 8 x 8 matrices to a shared region with 16-byte rows, on a
    warp or a warpgroup of sm_90 or newer."""
    return _accepts(op_, ctx, STORE)


def is_ldmatrix(op_: TileOp, ctx: ExecContext) -> Check:
    """A shared region with 16-byte rows to 16-bit registers laid out in 8 x 8 matrices, on
    a warp or a warpgroup of sm_75 or newer."""
    return _accepts(op_, ctx, LOAD)


def emit_stmatrix(op_: TileOp, ctx: ExecContext) -> Stmt:
    """One ``stmatrix.x{count}`` per group of the plan (module docstring)."""
    return _emit(op_, ctx, STORE)


def emit_ldmatrix(op_: TileOp, ctx: ExecContext) -> Stmt:
    """One ``ldmatrix.x{count}`` per group of the plan (module docstring)."""
    return _emit(op_, ctx, LOAD)


def _emit(op_: TileOp, ctx: ExecContext, form: _Form) -> Stmt:
    shared_side, reg = _sides(op_, form)
    plan = plan_matrix_copy(reg, shared_side, ctx.threads // LANES, form.name)
    tid = ctx.thread_index
    lane = op.floormod(tid, LANES) if ctx.threads > LANES else tid
    warp = op.floordiv(tid, LANES) if ctx.threads > LANES else op.convert(0)
    q = op.floordiv(lane, MATRIX)
    shared = ctx.flat(shared_side.buffer)
    storage = whole_storage(shared)
    reg_storage = whole_storage(ctx.flat(reg.buffer))
    extent = IntImm(int(shared.shape[0].value), int32)  # type: ignore[attr-defined]
    body: list[Stmt] = []
    for group in plan.groups:
        row = _pick(group.rows, q, group.count)
        col = _pick(group.cols, q, group.count)
        first = op.add(op.mul(row, MATRIX), op.floormod(lane, MATRIX))
        address = plan.shared.address(
            op.add(first, op.mul(warp, plan.warp_rows)), op.mul(col, MATRIX)
        )
        register = op.convert(oa.add(reg.base, group.register))
        count = IntImm(group.count, int32)
        if form.store:
            pointer = ACCESS_PTR.call(storage, address, extent, IntImm(WRITE, int32))
            body.append(
                hopper.STMATRIX.stmt(count, IntImm(0, int32), pointer, reg_storage, register)
            )
        else:
            # The whole buffer, read only (mask 1): the barrier planner sees a shared read.
            pointer = ACCESS_PTR.call(storage, IntImm(0, int32), extent, IntImm(READ, int32))
            call = intrinsics.PTX_LDMATRIX.call(
                op.const(False),
                count,
                StringImm(".b16"),
                reg_storage,
                register,
                pointer,
                address,
                dtype=reg.buffer.dtype,
            )
            body.append(Evaluate(call))
    ctx.notes.update(
        register=reg.buffer.name, matrices=sum(g.count for g in plan.groups), groups=len(body)
    )
    return body[0] if len(body) == 1 else SeqStmt(tuple(body))


def _pick(values: tuple[int, ...], q: PrimExpr, count: int) -> PrimExpr:
    """``values[q]`` for the lane's matrix ``q`` (``values`` affine in ``q``'s two bits)."""
    if count == 1:
        return op.convert(values[0])
    low = op.floormod(q, 2)
    result = op.add(values[0], op.mul(low, values[1] - values[0]))
    if count == 4:
        high = op.floormod(op.floordiv(q, 2), 2)
        result = op.add(result, op.mul(high, values[2] - values[0]))
    return result
