"""Variant dispatch of tile primitives: pick the best applicable implementation, or explain.

Input: a ``TileOp``, the ``ExecContext`` it runs in and the variant table of its primitive.
Output: the chosen ``Variant`` and the statement its emitter builds. Each variant's predicate
answers ``(ok, reason)``; a forced ``dispatch="name"`` that declines, or an op that no variant
accepts, raises ``DispatchError`` listing the reasons.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from tilewright.backend import backend_for
from tilewright.ir import Buffer, PrimExpr, Stmt
from tilewright.ir.intrinsics import Intrinsic
from tilewright.ir.tile import TileOp
from tilewright.target import Target
from tilewright.tirx.operand import flat_view


class DispatchError(ValueError):
    """No variant of a tile primitive accepts the op, or the forced one declines."""


@dataclass(frozen=True)
class ExecContext:
    """Where a tile op runs: the target, its execution scope and that scope's threads.

    ``threads`` is the scope's thread count (1, 32, 128 or the CTA's), ``thread_index`` the
    index of the running thread within the scope, ``cta_threads`` the kernel's threads per
    CTA, ``narrowed_by`` the text of an enclosing ``if`` on a thread index (None when all
    threads of the scope are active).

    Example::

        ExecContext(Target("cuda"), "warp", 32, lane, cta_threads=32)
    """

    target: Target | None
    scope: str
    threads: int
    thread_index: PrimExpr | int
    cta_threads: int
    narrowed_by: str | None = None
    notes: dict[str, object] = field(default_factory=dict, compare=False)
    views: dict[Buffer, Buffer] = field(default_factory=dict, compare=False)

    def flat(self, buffer: Buffer) -> Buffer:
        """The 1-D view of ``buffer``'s storage (one per buffer, shared by every access)."""
        view = self.views.get(buffer)
        if view is None:
            view = self.views[buffer] = flat_view(buffer)
        return view

    def supports(self, intrinsic: Intrinsic) -> bool:
        """Whether the target's backend spells ``intrinsic`` (False without a target).

        Example: ``ctx.supports(intrinsics.COPY_BYTES)`` decides whether 16-byte copies exist.
        """
        return self.target is not None and backend_for(self.target).supports(intrinsic)


Check = tuple[bool, str | None]
Predicate = Callable[[TileOp, ExecContext], Check]
Emitter = Callable[[TileOp, ExecContext], Stmt]


@dataclass(frozen=True)
class Variant:
    """One implementation of a tile primitive: higher ``priority`` is tried first."""

    name: str
    priority: int
    predicate: Predicate
    emitter: Emitter


@dataclass(frozen=True)
class Decision:
    """What dispatch chose for one op, and the variant's notes (``vec``, ``outer``, ...)."""

    op: TileOp
    variant: str
    notes: dict[str, object]


def check_all(*checks: Callable[[], Check]) -> Check:
    """The first failing check's ``(False, reason)``, else ``(True, None)``."""
    for check in checks:
        ok, reason = check()
        if not ok:
            return False, reason
    return True, None


def dispatch(op: TileOp, ctx: ExecContext, variants: Sequence[Variant]) -> tuple[Variant, Stmt]:
    """The statement implementing ``op``: the forced variant, else the best that accepts it.

    Args:
        op: the tile op; its ``dispatch`` attribute, when set, names the variant to use.
        ctx: the execution context of the op.
        variants: the primitive's variant table.

    Example::

        >>> variant, stmt = dispatch(copy_op, ctx, COPY_VARIANTS)
        >>> variant.name
        'gmem_smem'
    """
    forced = op.attr("dispatch")
    where = f"Tx.{op.scope}.{op.op}({describe_args(op)})"
    if forced is not None:
        chosen = [v for v in variants if v.name == forced]
        if not chosen:
            names = ", ".join(v.name for v in variants)
            raise DispatchError(f"{where}: no variant named {forced!r}; variants are {names}")
        ok, reason = chosen[0].predicate(op, ctx)
        if not ok:
            raise DispatchError(f"{where}: dispatch={forced!r} does not apply: {reason}")
        return chosen[0], chosen[0].emitter(op, ctx)
    reasons = []
    for variant in sorted(variants, key=lambda v: -v.priority):
        ok, reason = variant.predicate(op, ctx)
        if ok:
            return variant, variant.emitter(op, ctx)
        reasons.append(f"  {variant.name}: {reason}")
    raise DispatchError(f"{where}: no variant applies:\n" + "\n".join(reasons))


def describe_args(op: TileOp) -> str:
    """The op's arguments as script text (for messages)."""
    from tilewright.ir.printer import script

    return ", ".join(script(a) for a in op.args)
