"""Schedule + block → the schedule with the block inlined where that is allowed and pays.

``AutoInline`` inlines an elementwise block into its consumers (``compute_inline``) or, when
that is refused, into its single producer (``reverse_compute_inline``), under TVM's
conditions; ``InlineConstantScalars`` inlines blocks that only write a constant scalar.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Callable, Sequence

from tilewright.ir import (
    Block,
    BlockRealize,
    BufferRegion,
    Call,
    IfThenElse,
    IntImm,
    Select,
    Var,
    intrinsics,
    pre_order_visit,
)
from tilewright.ir.expr import Add, PrimExpr, Sub
from tilewright.meta_schedule.analysis import annotation, is_output_block, is_spatial
from tilewright.meta_schedule.schedule_rule.reduction_loops import is_spatial_prim_func
from tilewright.meta_schedule.schedule_rule.rule import ScheduleRule
from tilewright.schedule import BlockRV, Schedule, ScheduleError
from tilewright.schedule.dataflow import consumers_of, producers_of, scope_blocks, scope_path

# Block annotations TVM's rule reads.
INLINE_RULE = "meta_schedule.inline_rule"  # "disable": never inline this block
AUTO_TENSORIZE = "meta_schedule.auto_tensorize"  # a producer kept for tensorization


class AutoInline(ScheduleRule):
    """Inline spatial blocks into their consumers or their producer.

    Args:
        into_producer: allow ``reverse_compute_inline`` into the block's single producer.
        into_consumer: allow ``compute_inline`` into the block's consumers.
        inline_const_tensor: inline a block that reads nothing whatever the other conditions.
        disallow_if_then_else: keep blocks with a branch (``if_then_else``, ``Select``, an
            ``if`` or a ``T.where``).
        require_injective: keep blocks where a read index maps to no write index or two read
            indices map to the same one.
        require_ordered: keep blocks whose read indices use the write indices out of order.
        disallow_op: TVM op names (``"tir.exp"``); keep blocks that call one of them.

    The conditions on branches, ops and index patterns do not apply in a function whose
    blocks are all spatial.

    Example::

        rule = AutoInline(into_producer=False, into_consumer=True, inline_const_tensor=True,
                          disallow_if_then_else=True, require_injective=True,
                          require_ordered=True, disallow_op=["tir.exp"])
    """

    def __init__(
        self,
        into_producer: bool,
        into_consumer: bool,
        inline_const_tensor: bool,
        disallow_if_then_else: bool,
        require_injective: bool,
        require_ordered: bool,
        disallow_op: Sequence[str] | None = None,
    ) -> None:
        self.into_producer = bool(into_producer)
        self.into_consumer = bool(into_consumer)
        self.inline_const_tensor = bool(inline_const_tensor)
        self.disallow_if_then_else = bool(disallow_if_then_else)
        self.require_injective = bool(require_injective)
        self.require_ordered = bool(require_ordered)
        self.disallow_op = tuple(_intrinsic(name) for name in disallow_op or ())

    def apply(self, sch: Schedule, block: BlockRV) -> list[Schedule]:
        self._inline(sch, block)
        return [sch]

    def _inline(self, sch: Schedule, block: BlockRV) -> None:
        # A refused primitive changes nothing, so trying one is TVM's CanComputeInline.
        site = sch.state.block_ref_site(block, "AutoInline")
        if site.scope_index() < 0:
            return  # the root block
        node = site.block
        if len(node.writes) != 1:
            return
        blocks = scope_blocks(scope_path(site))
        consumers = consumers_of(blocks, node)
        constant = self.inline_const_tensor and not node.reads and consumers
        if constant and _try(sch.compute_inline, block):
            return
        if not is_spatial_prim_func(site.func) and not self._allowed(sch, block, node):
            return
        if annotation(node, INLINE_RULE) == "disable":
            return
        if self.into_consumer and consumers and _try(sch.compute_inline, block):
            return
        if self.into_producer:
            producers = producers_of(blocks, node)
            if (
                len(producers) == 1
                and _is_complete(producers[0].block)
                and annotation(producers[0].block, AUTO_TENSORIZE) is None
            ):
                _try(sch.reverse_compute_inline, block)

    def _allowed(self, sch: Schedule, block: BlockRV, node: Block) -> bool:
        """The conditions on ops, branches and index patterns."""
        realize = sch.get_realize(block)
        if self.disallow_op and _calls(realize, self.disallow_op):
            return False
        if self.disallow_if_then_else and _has_branch(realize):
            return False
        if self.require_injective or self.require_ordered:
            for read in node.reads:
                _, injective, ordered = read_write_pattern(read, node.writes[0])
                if self.require_injective and not injective:
                    return False
                if self.require_ordered and not ordered:
                    return False
        return True


class InlineConstantScalars(ScheduleRule):
    """Inline blocks that read nothing and write one scalar (a 0-d or one-element buffer
    that is not a parameter), such as ``compile_engine_const[()] = 59``.

    Example::

        space = PostOrderApply(sch_rules=[InlineConstantScalars()], postprocs=[],
                               mutator_probs={})
    """

    def apply(self, sch: Schedule, block: BlockRV) -> list[Schedule]:
        site = sch.state.block_ref_site(block, "InlineConstantScalars")
        node = site.block
        if site.scope_index() < 0 or node.reads or len(node.writes) != 1:
            return [sch]
        shape = node.writes[0].buffer.shape
        if not all(isinstance(s, IntImm) and s.value == 1 for s in shape):
            return [sch]
        if is_output_block(sch, block):
            return [sch]
        with contextlib.suppress(ScheduleError):
            sch.compute_inline(block)
        return [sch]


def read_write_pattern(read: BufferRegion, write: BufferRegion) -> tuple[bool, bool, bool]:
    """How the read indices map to the write indices (TVM's ``AnalyzeReadWritePattern``):
    ``(exists, injective, ordered)``.

    Each write index must be a block iterator; each read index a constant, or a write
    index plus or minus a constant (else the pattern does not exist and all three are
    False). Injective: no write index used twice; ordered: the write indices used appear
    in increasing order. ``A[i, j] = B[j, i]`` is injective but not ordered;
    ``A[i, j] = B[i, i]`` is ordered but not injective.
    """
    position: dict[Var, int] = {}
    for k, r in enumerate(write.region):
        if not isinstance(r.extent, IntImm) or not isinstance(r.min, Var):
            return False, False, False
        position[r.min] = k
    mapped: list[int] = []
    for r in read.region:
        if not isinstance(r.extent, IntImm):
            return False, False, False
        if isinstance(r.min, IntImm):
            continue
        var = _shifted_var(r.min)
        if var is None or var not in position:
            return False, False, False
        mapped.append(position[var])
    injective = len(set(mapped)) == len(mapped)
    ordered = all(a <= b for a, b in itertools.pairwise(mapped))
    return True, injective, ordered


def _shifted_var(expr: PrimExpr) -> Var | None:
    """``v`` of an index ``v``, ``v + c``, ``c + v`` or ``v - c`` (constant ``c``)."""
    if isinstance(expr, Var):
        return expr
    if isinstance(expr, Add | Sub) and isinstance(expr.a, Var) and isinstance(expr.b, IntImm):
        return expr.a
    if isinstance(expr, Add) and isinstance(expr.a, IntImm) and isinstance(expr.b, Var):
        return expr.b
    return None


def _intrinsic(name: str) -> intrinsics.Intrinsic:
    try:
        return intrinsics.lookup(str(name))
    except KeyError as err:
        raise ValueError(f"AutoInline: disallow_op {name!r} names no intrinsic: {err}") from None


def _try(primitive: Callable[[BlockRV], None], block: BlockRV) -> bool:
    """Apply an inlining primitive; False when it refuses (and so changed nothing)."""
    try:
        primitive(block)
    except ScheduleError:
        return False
    return True


def _is_complete(block: Block) -> bool:
    """A producer that may take its consumer: spatial, and not reading what it writes."""
    writes = {r.buffer for r in block.writes}
    return (
        is_spatial(block)
        and block.init is None
        and not any(r.buffer in writes for r in block.reads)
    )


def _calls(realize: BlockRealize, ops: tuple[intrinsics.Intrinsic, ...]) -> bool:
    found = False

    def visit(node: object) -> bool:
        nonlocal found
        if isinstance(node, Call) and intrinsics.lookup_or_none(node.op) in ops:
            found = True
        return not found

    pre_order_visit(realize, visit)
    return found


def _has_branch(realize: BlockRealize) -> bool:
    """A predicate other than true, an ``if``, a ``Select`` or an ``if_then_else`` call
    anywhere in the block (TVM's ``HasIfThenElse``)."""
    found = False

    def visit(node: object) -> bool:
        nonlocal found
        if isinstance(node, BlockRealize):
            p = node.predicate
            found = found or not (isinstance(p, IntImm) and p.value == 1)
        elif isinstance(node, IfThenElse | Select) or intrinsics.IF_THEN_ELSE.matches(node):
            found = True
        return not found

    pre_order_visit(realize, visit)
    return found


__all__ = ["AutoInline", "InlineConstantScalars", "read_write_pattern"]
