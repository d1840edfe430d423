"""The ``copy`` tile primitive: its variant table, register variants and scalar fallback.

Input: ``Tx.<scope>.copy(dst, src)`` as a ``TileOp``. Output, through ``dispatch``: the
``gmem_smem`` vector loop (CUDA, global <-> shared), ``stmatrix`` / ``ldmatrix`` (16-bit
registers in 8 x 8 matrices to / from shared memory, ``copy_matrix.py``), a ``register``
loop (global or shared to or from a ``local`` buffer whose layout spreads it over the
scope's threads) or the ``scalar`` loop of element copies (any scope, any target).
"""

from __future__ import annotations

from tilewright.ir import Stmt
from tilewright.ir.tile import TileOp
from tilewright.layout.offset_arith import Offset
from tilewright.layout.shard import MEMORY
from tilewright.tirx.dispatch import Check, ExecContext, Variant, check_all
from tilewright.tirx.ops.copy_checks import copy_operands, valid_copy
from tilewright.tirx.ops.copy_gmem_smem import emit_gmem_smem, is_gmem_smem
from tilewright.tirx.ops.copy_matrix import emit_ldmatrix, emit_stmatrix, is_ldmatrix, is_stmatrix
from tilewright.tirx.ops.elementwise import (
    load,
    register_vector,
    register_walk,
    store,
    strided_loop,
)

SCOPE_AXES = {
    "thread": (),
    "warp": ("laneid",),
    "warpgroup": ("laneid", "warpid", "tid"),
    "cta": ("laneid", "warpid", "tid", "tx"),
}


def is_register(op_: TileOp, ctx: ExecContext) -> Check:
    """Global or shared to or from a ``local`` buffer spread over the scope's threads."""
    ok, reason = valid_copy(op_)
    if not ok:
        return False, reason
    dst, src = copy_operands(op_)
    regs = [side for side in (dst, src) if side.memory == "local"]
    if len(regs) != 1:
        return False, "needs exactly one register (local) operand"
    other = src if regs[0] is dst else dst
    if other.memory not in ("global", "shared") or other.thread_axes():
        return False, f"the other operand {other.buffer.name} must be global or shared memory"
    axes = regs[0].thread_axes()
    if not axes:
        return False, (
            f"register buffer {regs[0].buffer.name} has no thread partition in its layout "
            "(no laneid/warpid/tid axis)"
        )
    allowed = SCOPE_AXES[ctx.scope]
    bad = [a for a in axes if a not in allowed]
    if bad:
        return False, f"register layout axes {bad} do not belong to the {ctx.scope} scope"
    return check_all(lambda: _full_scope(ctx))


def _full_scope(ctx: ExecContext) -> Check:
    if ctx.narrowed_by is not None:
        return False, f"the enclosing `if {ctx.narrowed_by}` narrows the {ctx.scope} scope"
    return True, None


def emit_register(op_: TileOp, ctx: ExecContext) -> Stmt:
    """Each thread copies the elements its register layout gives it: groups of consecutive
    registers that are consecutive and aligned in the other operand too move as one vector
    access (up to 16 bytes, ``register_vector``), the rest one by one."""
    dst, src = copy_operands(op_)
    reg_is_dst = dst.memory == "local"
    reg, other = (dst, src) if reg_is_dst else (src, dst)
    vector = register_vector(reg, other, ctx)

    def body(logical: Offset, reg_offset: Offset) -> Stmt:
        other_offset = other.element_offset(logical)[MEMORY]
        if reg_is_dst:
            return store(reg, ctx, reg_offset, load(other, ctx, other_offset))
        return store(other, ctx, other_offset, load(reg, ctx, reg_offset))

    ctx.notes.update(register=reg.buffer.name, vec=vector)
    return register_walk(reg, ctx, body, vector)


def is_scalar(op_: TileOp, ctx: ExecContext) -> Check:
    """Any valid copy whose operands are not spread over threads."""
    ok, reason = valid_copy(op_)
    if not ok:
        return False, reason
    for side in copy_operands(op_):
        if side.thread_axes():
            return False, (
                f"{side.buffer.name}'s layout places elements on threads "
                f"({', '.join(side.thread_axes())}); use a register variant"
            )
    return True, None


def emit_scalar(op_: TileOp, ctx: ExecContext) -> Stmt:
    """Each thread copies elements ``e * threads + tid``, one element per store."""
    dst, src = copy_operands(op_)

    def body(index: Offset) -> Stmt:
        d = dst.element_offset(index)[MEMORY]
        s = src.element_offset(index)[MEMORY]
        return store(dst, ctx, d, load(src, ctx, s))

    ctx.notes.update(rounds=-(-dst.size() // ctx.threads))
    return strided_loop(dst.size(), ctx, body)


COPY_VARIANTS: tuple[Variant, ...] = (
    Variant("gmem_smem", 30, is_gmem_smem, emit_gmem_smem),
    Variant("stmatrix", 25, is_stmatrix, emit_stmatrix),
    Variant("ldmatrix", 25, is_ldmatrix, emit_ldmatrix),
    Variant("register", 20, is_register, emit_register),
    Variant("scalar", 0, is_scalar, emit_scalar),
)
