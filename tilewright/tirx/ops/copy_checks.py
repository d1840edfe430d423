"""The checks ``copy`` variants share: operands, validity, memory pairs, scope, divisibility.

Input: a ``copy`` ``TileOp`` (``dst``, ``src`` regions) and its ``ExecContext``. Output:
``(ok, reason)`` pairs whose reasons are the texts dispatch errors show.
"""

from __future__ import annotations

from collections.abc import Sequence

from tilewright.ir import BufferRegion
from tilewright.ir.tile import TileOp
from tilewright.layout import LayoutError
from tilewright.tirx.dispatch import Check, ExecContext
from tilewright.tirx.operand import Operand, operand


def copy_operands(op: TileOp) -> tuple[Operand, Operand]:
    """``(dst, src)`` operands of a copy (``LayoutError`` if a layout cannot be sliced)."""
    dst, src = op.args[0], op.args[1]
    assert isinstance(dst, BufferRegion) and isinstance(src, BufferRegion)
    return operand(dst), operand(src)


def valid_copy(op: TileOp) -> Check:
    """Two regions with layouts, equal dtype and equal non-unit extents."""
    if len(op.args) != 2 or not all(isinstance(a, BufferRegion) for a in op.args):
        return False, "copy takes two buffer regions (dst, src)"
    try:
        dst, src = copy_operands(op)
        dst_ext, src_ext = dst.extents, src.extents
    except LayoutError as err:
        return False, f"invalid copy: {err}"
    if dst.buffer.dtype != src.buffer.dtype:
        return False, (
            f"dtype mismatch: {dst.buffer.name} is {dst.buffer.dtype}, "
            f"{src.buffer.name} is {src.buffer.dtype}"
        )
    if [e for e in dst_ext if e != 1] != [e for e in src_ext if e != 1]:
        return False, f"extent mismatch: dst {list(dst_ext)} vs src {list(src_ext)}"
    return True, None


def scope_allowed(op: TileOp, pairs: Sequence[tuple[str, str]]) -> Check:
    """The (src, dst) memory classes are one of ``pairs``; a register operand is named."""
    dst, src = copy_operands(op)
    for side in (src, dst):
        if side.memory == "local":
            return False, (
                f"a register operand: {side.buffer.name} is in scope {side.buffer.scope!r}; "
                "this variant copies between global and shared memory only"
            )
    if (src.memory, dst.memory) not in tuple(pairs):
        return False, (
            f"memory pair {src.memory} -> {dst.memory} ({src.buffer.name} -> "
            f"{dst.buffer.name}) is not one of " + ", ".join(f"{a} -> {b}" for a, b in pairs)
        )
    return True, None


def divides_thread_count(op: TileOp, ctx: ExecContext) -> Check:
    """The region's element count is a multiple of the scope's thread count."""
    dst = op.args[0]
    assert isinstance(dst, BufferRegion)  # valid_copy ran first
    size = operand(dst).size()
    if size % ctx.threads:
        return False, (
            f"element count {size} is not divisible by the thread count {ctx.threads} of the "
            f"{ctx.scope} scope"
        )
    return True, None


def all_threads_active(ctx: ExecContext) -> Check:
    """Every thread of the scope runs the op: none narrowed by an enclosing ``if``."""
    if ctx.narrowed_by is not None:
        return False, (
            f"not all threads of the {ctx.scope} scope are active: narrowed by the enclosing "
            f"`if {ctx.narrowed_by}`"
        )
    if ctx.cta_threads % ctx.threads:
        return False, (
            f"not all threads of the {ctx.scope} scope are active: it needs {ctx.threads} "
            f"threads but the CTA has {ctx.cta_threads}"
        )
    return True, None
