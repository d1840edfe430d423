"""The ``Schedule`` methods of the loop and block-iterator primitives (reorder_block_iter_var,
merge, loop_partition, sample_partitioned_tile) and of the symbol-table queries remove_rv and
get_sref, mixed into ``Schedule`` (each method checks, rewrites, commits and records, as in
``block_methods``)."""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from dataclasses import dataclass

from tilewright.ir.expr import IntImm, PrimExpr
from tilewright.ir.stmt import Block, For
from tilewright.schedule.error import ScheduleError, register_rules
from tilewright.schedule.instruction import InstructionKind, register_kinds
from tilewright.schedule.mixin import ScheduleMixin
from tilewright.schedule.primitives import block_iters, loop_partition, merge, partitioned_tile
from tilewright.schedule.reference import BlockRV, ExprRV, LoopRV, rvs_in
from tilewright.schedule.tree import Path

BlockArg = BlockRV | str

register_kinds(
    InstructionKind("reorder_block_iter_var", ("block",), ("new_order",)),
    InstructionKind("merge", ("*loops",), (), "one"),
    InstructionKind("loop_partition", ("loop", "factors"), ("preserve_unit_iters",), "many"),
    InstructionKind(
        "sample_partitioned_tile",
        ("loop",),
        ("n", "partition_pos", "innerpart_factor"),
        "many",
        sampling=True,
    ),
)

register_rules(
    {
        "iter-permutation": (
            "reorder_block_iter_var needs a permutation of 0 .. n-1 for a block of n iterators"
        ),
        "innerpart-factor": "sample_partitioned_tile's innerpart_factor divides the loop's extent",
    }
)


@dataclass(frozen=True, repr=False)
class StmtSRef:
    """What ``Schedule.get_sref`` returns in place of TVM's ``StmtSRef``: a snapshot of where
    a block or loop is in the module as it is now (tilewright keeps no sref tree; references
    resolve through the schedule state instead).

    Attributes:
        stmt: the ``Block`` or ``For`` itself (TVM's ``sref.stmt``).
        parent: the sref of the innermost loop or block around it (None for a root block).
        func_name: the function holding it.
    """

    stmt: Block | For
    parent: StmtSRef | None
    func_name: str

    def __repr__(self) -> str:
        node = self.stmt
        what = f"block {node.name!r}" if isinstance(node, Block) else f"loop {node.loop_var.name!r}"
        return f"StmtSRef({what} of {self.func_name!r})"


def _sref(func_name: str, path: Path) -> StmtSRef | None:
    sref = None
    for node in path:
        if isinstance(node, Block | For):
            sref = StmtSRef(node, sref, func_name)
    return sref


def _int(primitive: str, name: str, value: object) -> int:
    if isinstance(value, IntImm):
        return value.value
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ScheduleError(primitive, "argument", f"{name} {value!r} is not an integer")
    return int(value)


class IterMethods(ScheduleMixin):
    """Mixed into ``Schedule``."""

    def reorder_block_iter_var(self, block: BlockArg, new_order: Sequence[int]) -> None:
        """Put the block's iterators (and their bindings) in ``new_order``: iterator ``k``
        becomes the block's ``new_order[k]``-th one; the computation is unchanged.

        Args:
            block: the block (or its name).
            new_order: a permutation of ``0 .. n-1`` for a block of ``n`` iterators.

        Example::

            sch.reorder_block_iter_var(sch.get_block("C"), [2, 1, 0])
            # vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            #   -> vk, vj, vi = T.axis.remap("RSS", [k, j, i])
        """
        target = self._target(block)
        site = self._state.block_ref_site(target, "reorder_block_iter_var")
        if isinstance(new_order, str) or not isinstance(new_order, Sequence):
            raise ScheduleError(
                "reorder_block_iter_var", "argument", f"new_order {new_order!r} is not a list"
            )
        order = [_int("reorder_block_iter_var", "index", k) for k in new_order]
        self._state.commit(site.func_name, block_iters.reorder_block_iter_var(site, order))
        self._record("reorder_block_iter_var", (target,), (order,))

    def merge(self, *loops: LoopRV | Sequence[LoopRV]) -> LoopRV:
        """Merge loops heading sibling loop nests of the same extents (each nest a chain of
        single-child loops starting at 0 without annotations, from the loops' common parent
        down to the loop) into one nest of loops ``<name>_m``; its innermost loop runs the
        loops' bodies in program order, at the place of the last nest. Refused when a block
        would then read or overwrite an element at a different time (rule ``data-flow``).

        Returns the innermost merged loop.

        Example::

            i_b, _ = sch.get_loops(sch.get_block("B"))
            i_c, _ = sch.get_loops(sch.get_block("C"))
            i_m = sch.merge(i_b, i_c)   # for i_m in range(128): for j ...: B; for j ...: C
        """
        given = _flatten(loops)
        sites = [self._state.loop_site(r, "merge") for r in given]
        func, var = merge.merge(sites)  # refuses fewer than two loops
        self._state.commit(sites[0].func_name, func)
        ref = self._state.loop_ref(sites[0].func_name, var)
        self._record("merge", (tuple(given),), (), (ref,))
        return ref

    def loop_partition(
        self,
        loop: LoopRV,
        factors: Sequence[int | IntImm | ExprRV | None],
        preserve_unit_iters: bool = True,
    ) -> list[LoopRV]:
        """Cut ``loop`` into consecutive sibling loops ``<i>0, <i>1, ...`` over ranges of its
        iterations, each running a copy of the loop's body (TVM's layout: a block
        ``<b>_<i>_common`` holds one block ``<b>_<i><k>_partition`` a loop; the blocks of
        copy ``k`` are renamed ``<name>_<i><k>``; ``<b>`` is the first block's name).

        Args:
            loop: a loop of constant range without annotations or thread binding.
            factors: the partitions' lengths from the loop's start, positive; one may be
                ``None`` (what the others leave); without ``None`` they sum to less than the
                extent and a last partition takes the rest. ``ExprRV``s from sampling work.
            preserve_unit_iters: keep a partition loop of extent 1 in the block bindings
                (False: bind its one value instead).

        Returns the partition loops, in order.

        Example::

            i0, i1, i2 = sch.loop_partition(i, [2, 64])   # ranges [0, 2), [2, 66), [66, 128)
        """
        site = self._state.loop_site(loop, "loop_partition")
        if isinstance(factors, str) or not isinstance(factors, Sequence):
            raise ScheduleError(
                "loop_partition", "partition-factors", f"factors {factors!r} is not a list"
            )
        given = tuple(
            f if _sampled_or_none(f) else _int("loop_partition", "factor", f) for f in factors
        )
        values = [self._expr(f, "loop_partition") if isinstance(f, PrimExpr) else f for f in given]
        func, new_vars = loop_partition.loop_partition(site, values, bool(preserve_unit_iters))
        self._state.commit(site.func_name, func)
        refs = [self._state.loop_ref(site.func_name, v) for v in new_vars]
        self._record("loop_partition", (loop, given), (bool(preserve_unit_iters),), refs)
        return refs

    def sample_partitioned_tile(
        self,
        loop: LoopRV,
        n: int,
        partition_pos: int = 0,
        innerpart_factor: int = 1,
        decision: list[int] | None = None,
    ) -> list[ExprRV]:
        """Draw ``n`` tile sizes whose product is the loop's extent, outermost first, such
        that the sizes from ``partition_pos`` on multiply to a multiple of
        ``innerpart_factor`` (so the inner part can hold that many lanes or threads).

        Args:
            loop: a loop of constant extent, a multiple of ``innerpart_factor``.
            n: how many sizes (at least 2 unless ``partition_pos`` is 0 and
                ``innerpart_factor`` 1, a plain perfect tile).
            partition_pos: where the inner part starts, ``0 <= partition_pos < n``.
            innerpart_factor: what the inner part's product is a multiple of.
            decision: the sizes to use instead of drawing them.

        Example::

            tiles = sch.sample_partitioned_tile(j, n=3, partition_pos=1, innerpart_factor=8)
            j0, j1, j2 = sch.split(j, tiles)   # e.g. [2, 4, 8] for 64: 4 * 8 % 8 == 0
        """
        primitive = "sample_partitioned_tile"
        site = self._state.loop_site(loop, primitive)
        extent = site.loop.extent
        name = site.loop.loop_var.name
        if not isinstance(extent, IntImm):
            raise ScheduleError(
                primitive,
                "constant-extent",
                f"loop {name} has the symbolic extent {extent}",
                site.func,
                site.loop,
            )
        count = _int(primitive, "n", n)
        pos = _int(primitive, "partition_pos", partition_pos)
        factor = _int(primitive, "innerpart_factor", innerpart_factor)
        trivial = pos == 0 and factor == 1
        if count < (1 if trivial else 2) or not 0 <= pos < count or factor < 1:
            raise ScheduleError(
                primitive,
                "argument",
                f"n={count}, partition_pos={pos}, innerpart_factor={factor}: need n >= 2 (1 "
                "for a plain tile), 0 <= partition_pos < n and innerpart_factor >= 1",
            )
        if extent.value % factor != 0:
            raise ScheduleError(
                primitive,
                "innerpart-factor",
                f"innerpart_factor {factor} does not divide the extent {extent.value} of "
                f"loop {name}",
                site.func,
                site.loop,
            )
        if decision is None:
            factors = partitioned_tile.sample_partitioned_tile(
                self._rng, extent.value, count, pos, factor
            )
        else:
            factors = partitioned_tile.check_partitioned_tile(
                decision, extent.value, count, pos, factor, name
            )
        refs = [self._state.expr_ref(f) for f in factors]
        self._record(primitive, (loop,), (count, pos, factor), refs, factors)
        return refs

    def remove_rv(self, rand_var: BlockRV | LoopRV | ExprRV) -> None:
        """Drop a reference from the schedule's symbol table: using it afterwards raises
        ``ScheduleError`` (rule ``stale-reference``, "removed by remove_rv"). The IR and the
        trace are unchanged (as in TVM, removing is no instruction).

        Example::

            sch.remove_rv(block)
            sch.get_loops(block)   # ScheduleError: BlockRV(#3) was removed ... by remove_rv
        """
        state = self._state
        if isinstance(rand_var, ExprRV) and rand_var in state.exprs:
            del state.exprs[rand_var]
        elif isinstance(rand_var, BlockRV | LoopRV) and rand_var in state.refs:
            del state.refs[rand_var]
        elif isinstance(rand_var, BlockRV | LoopRV | ExprRV):
            raise ScheduleError("remove_rv", "stale-reference", state.unknown(rand_var))
        else:
            raise ScheduleError(
                "remove_rv", "argument", f"expected a BlockRV, LoopRV or ExprRV, got {rand_var!r}"
            )
        state.removed.add(rand_var)

    def get_sref(self, rand_var_or_stmt: BlockRV | LoopRV | Block | For) -> StmtSRef:
        """Where a block or loop (a reference, or the ``Block``/``For`` node itself) is in the
        module now, as a ``StmtSRef`` snapshot: ``.stmt`` is the node, ``.parent`` the sref of
        the loop or block around it. Tilewright has no sref tree, so the snapshot does not
        follow later primitives: call ``get_sref`` (or ``get``) again after one.

        Example::

            sref = sch.get_sref(sch.get_block("C"))
            sref.stmt.name, sref.parent.stmt.loop_var.name   # ("C", "k")
        """
        given = rand_var_or_stmt
        if isinstance(given, BlockRV | LoopRV):
            site = self._state.any_site(given, "get_sref")
            sref = _sref(site.func_name, site.path)
            assert sref is not None
            return sref
        if not isinstance(given, Block | For):
            raise ScheduleError(
                "get_sref", "argument", f"expected a BlockRV, LoopRV, Block or For, got {given!r}"
            )
        for func_name in self._state.mod:
            index = self._state.index(func_name)
            found = (
                index.blocks.get(given.name)
                if isinstance(given, Block)
                else index.loops.get(given.loop_var)
            )
            if found is not None and found[-1] is given:
                sref = _sref(func_name, found)
                assert sref is not None
                return sref
        what = (
            f"block {given.name!r}" if isinstance(given, Block) else f"loop {given.loop_var.name!r}"
        )
        raise ScheduleError(
            "get_sref",
            "stale-reference",
            f"{what} is not in the module as scheduled now (a primitive replaced it)",
        )


def _flatten(loops: Sequence[object]) -> list[LoopRV]:
    if len(loops) == 1 and isinstance(loops[0], list | tuple):
        return list(loops[0])
    return list(loops)  # type: ignore[arg-type]  # the primitive checks each one


def _sampled_or_none(value: object) -> bool:
    """None, an ``ExprRV`` or an expression of them (such as ``v0 * v1``)."""
    return value is None or (isinstance(value, PrimExpr) and bool(rvs_in(value)))
