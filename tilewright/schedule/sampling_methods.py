"""The ``Schedule`` methods that sample: tile sizes, categorical choices, compute locations.

A sampling instruction is recorded in the trace with its decision. Replaying the trace
with the same decisions rebuilds the same module; replaying it with another decision (given
through ``decision=`` or a trace's ``with_decision``) explores the design space.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from tilewright.ir import Block, BlockRealize, For, ForKind, IterKind, Stmt
from tilewright.ir.expr import IntImm
from tilewright.ir.functor import collect_vars
from tilewright.schedule.dataflow import consumers_of, scope_blocks, scope_path
from tilewright.schedule.error import ScheduleError
from tilewright.schedule.mixin import ScheduleMixin
from tilewright.schedule.primitives import compute_location, get, inline
from tilewright.schedule.primitives import sampling as sampling_
from tilewright.schedule.reference import BlockRV, ExprRV, LoopRV
from tilewright.schedule.tree import Path, Site, children

BlockArg = BlockRV | str

ROOT, INLINE = -1, -2  # compute-location decisions that are no loop


class SamplingMethods(ScheduleMixin):
    """Mixed into ``Schedule``: random choices drawn from the schedule's own generator."""

    def seed(self, seed: int) -> None:
        """Reseed the schedule's generator: the same seed draws the same decisions."""
        self._rng = random.Random(seed)

    def fork_seed(self) -> int:
        """A new seed drawn from this schedule's generator (for a schedule derived from it)."""
        return self._rng.randrange(1, 2**31 - 1)

    def sample_perfect_tile(
        self,
        loop: LoopRV,
        n: int,
        max_innermost_factor: int = 16,
        decision: list[int] | None = None,
    ) -> list[ExprRV | None]:
        """Draw ``n`` tile sizes whose product is the loop's extent, outermost first.

        On a loop of symbolic extent nothing is drawn: as in TVM the result is ``[None, 1,
        ..., 1]`` (``split`` infers the ``None``) and the decision ``[-1, 1, ..., 1]``.

        Args:
            loop: a loop.
            n: how many factors.
            max_innermost_factor: bound on the innermost factor (0 or less: none).
            decision: the factors to use instead of drawing them.

        Example::

            i_tiles = sch.sample_perfect_tile(i, n=4, max_innermost_factor=16)
            i0, i1, i2, i3 = sch.split(i, i_tiles)   # e.g. [8, 2, 4, 16] for 1024
        """
        site = self._state.loop_site(loop, "sample_perfect_tile")
        extent = site.loop.extent
        name = site.loop.loop_var.name
        count = _positive("sample_perfect_tile", "n", n)
        bound = int(max_innermost_factor)
        if not isinstance(extent, IntImm):
            return self._symbolic_tile(loop, site, count, bound, decision)
        if decision is None:
            factors = sampling_.sample_perfect_tile(self._rng, extent.value, count, bound)
        else:
            factors = sampling_.check_perfect_tile(decision, extent.value, count, bound, name)
        refs: list[ExprRV | None] = [self._state.expr_ref(f) for f in factors]
        self._record("sample_perfect_tile", (loop,), (count, bound), refs, factors)
        return refs

    def _symbolic_tile(
        self, loop: LoopRV, site: Site, count: int, bound: int, decision: object
    ) -> list[ExprRV | None]:
        fixed = [-1] + [1] * (count - 1)
        if decision is not None and (
            not isinstance(decision, list | tuple) or list(decision) != fixed
        ):
            raise ScheduleError(
                "sample_perfect_tile",
                "decision",
                f"decision {decision!r} for loop {site.loop.loop_var.name} of symbolic extent "
                f"{site.loop.extent}: such a loop takes only {fixed}",
                site.func,
                site.loop,
            )
        refs: list[ExprRV | None] = [None, *(self._state.expr_ref(1) for _ in fixed[1:])]
        self._record("sample_perfect_tile", (loop,), (count, bound), refs, fixed)
        return refs

    def sample_categorical(
        self,
        candidates: Sequence[int],
        probs: Sequence[float],
        decision: int | None = None,
    ) -> ExprRV:
        """Draw one of ``candidates`` with probabilities ``probs``; the decision is its index.

        Example::

            unroll = sch.sample_categorical([0, 16, 64, 512], [0.25] * 4)
            sch.annotate(block, "meta_schedule.unroll_explicit", unroll)
        """
        values = [_integer("sample_categorical", "candidate", c) for c in candidates]
        weights = [float(p) for p in probs]
        if not values or len(weights) != len(values) or min(weights) < 0 or sum(weights) <= 0:
            raise ScheduleError(
                "sample_categorical",
                "argument",
                f"{len(values)} candidates need as many non-negative probabilities, not {weights}",
            )
        if decision is None:
            index = sampling_.sample_categorical(self._rng, weights)
        else:
            index = sampling_.check_categorical(decision, len(values))
        ref = self._state.expr_ref(values[index])
        self._record("sample_categorical", (), (values, weights), (ref,), index)
        return ref

    def sample_compute_location(self, block: BlockArg, decision: int | None = None) -> LoopRV:
        """Draw a loop the block may be computed at (``compute_at``), or stay at the root
        (decision -1) or be inlined (-2, where ``compute_inline`` accepts it).

        A decision ``i >= 0`` is the ``i``-th loop above the block's first consumer.

        Example::

            loc = sch.sample_compute_location(sch.get_block("B"))
            sch.compute_at(sch.get_block("B"), loc)
        """
        target = self._target(block)
        site = self._state.block_ref_site(target, "sample_compute_location")
        candidates = self._location_candidates(site)
        if decision is None:
            # The first legal one of a random permutation: uniform over the legal ones,
            # without trying compute_at on every loop.
            order = list(candidates)
            self._rng.shuffle(order)
            for chosen in order:
                loop = self._legal(site, candidates, chosen)
                if loop is not False:
                    break
        else:
            legal = (
                self._legal(site, candidates, decision)
                if isinstance(decision, int) and not isinstance(decision, bool)
                else False
            )
            if legal is False:
                choices = sorted(self._compute_locations(site))
                raise ScheduleError(
                    "sample_compute_location",
                    "decision",
                    f"block {site.block.name!r} cannot be computed at location {decision!r}; "
                    f"its locations are {choices}",
                    site.func,
                    site.block,
                )
            chosen, loop = int(decision), legal
        if isinstance(loop, Site):
            ref = self._state.loop_ref(site.func_name, loop.loop)
        else:  # root is always legal, so the search above always ends on a location
            ref = self._state.mark_ref("root" if chosen == ROOT else "inline")
        self._record("sample_compute_location", (target,), (), (ref,), chosen)
        return ref

    def _location_candidates(self, site: Site) -> dict[int, Site | None]:
        """Every location to consider, legal or not: -2 (inline), -1 (root), and the loops
        above the block's first consumer that TVM offers (by their index there): those
        that hold every consumer, less unit loops, data-parallel loops after a loop that
        is not, and the loops that are not data-parallel after the last one that is."""
        found: dict[int, Site | None] = {INLINE: None, ROOT: None}
        consumers = consumers_of(scope_blocks(scope_path(site)), site.block)
        if consumers:
            first = self._state.block_site(site.func_name, consumers[0].block.name, "sample")
            loops = get.get_loops(first)
            index = self._state.index(site.func_name)
            for i in offered_loops(loops, [c.path[:-1] for c in consumers]):
                found[i] = Site(site.func_name, index.func, index.loops[loops[i].loop_var])
        return found

    def _legal(
        self, site: Site, candidates: dict[int, Site | None], location: int
    ) -> Site | bool | None:
        """The loop of a legal location (None for root and inline), False if illegal."""
        if location not in candidates:
            return False
        try:
            if location == INLINE:
                inline.compute_inline(site)
            elif location >= 0:
                loop_site = candidates[location]
                assert loop_site is not None
                compute_location.compute_at(site, loop_site, True)
        except ScheduleError:
            return False
        return candidates[location]

    def _compute_locations(self, site: Site) -> dict[int, Site | None]:
        """Every legal location of the block: -2 (inline), -1 (root), and the index of each
        loop above its first consumer that ``compute_at`` accepts."""
        candidates = self._location_candidates(site)
        found: dict[int, Site | None] = {}
        for location in candidates:
            legal = self._legal(site, candidates, location)
            if legal is not False:
                found[location] = None if isinstance(legal, bool) else legal
        return found


def offered_loops(loops: list[For], consumer_paths: list[Path]) -> list[int]:
    """The indices of ``loops`` (the loops above a block's first consumer, outermost first)
    that ``sample_compute_location`` offers, as TVM's ``CollectComputeLocation`` does.

    Only loops that hold every consumer count (down to the consumers' deepest common
    loop); among them unit loops are skipped, a data-parallel loop after one that is not
    ends the list, and so does a loop that is not data-parallel after the last one that is
    (a matmul's trailing ``k`` loop is never offered).

    Example::

        >>> offered_loops([i, j, k], [path_to_matmul_C])   # i, j data-parallel; k reduces
        [0, 1]
    """
    boundary = _deepest_common_loop(consumer_paths)
    ends = [k for k, loop in enumerate(loops) if loop is boundary]
    if not ends:
        return []
    kinds = [_iter_type(loop) for loop in loops[: ends[0] + 1]]
    last_spatial = max((k for k, kind in enumerate(kinds) if kind == "S"), default=-1)
    offered: list[int] = []
    seen_other = False
    for k, kind in enumerate(kinds):
        extent = loops[k].extent
        if isinstance(extent, IntImm) and extent.value == 1:
            continue
        if kind == "S" and seen_other:
            break
        if kind != "S":
            seen_other = True
            if k > last_spatial:
                break
        offered.append(k)
    return offered


def _deepest_common_loop(paths: list[Path]) -> For | None:
    """The innermost loop or block enclosing every path's end, if it is a loop."""
    common: list[Stmt] = []
    for nodes in zip(*paths):
        if any(n is not nodes[0] for n in nodes):
            break
        common.append(nodes[0])
    owners = [n for n in common if isinstance(n, For | Block)]
    return owners[-1] if owners and isinstance(owners[-1], For) else None


def _iter_type(loop: For) -> str:
    """TVM's loop iterator type: ``S`` (data-parallel) when the loop drives only spatial
    iterators of the blocks directly under it, or none, and runs serially or bound to a
    thread; ``R`` when it drives only reduction iterators; ``O`` otherwise."""
    kinds: set[IterKind] = set()
    stack: list[Stmt] = [loop.body]
    while stack:
        node = stack.pop()
        if isinstance(node, BlockRealize):
            for iv, value in zip(node.block.iter_vars, node.iter_values):
                if any(v is loop.loop_var for v in collect_vars(value)):
                    kinds.add(iv.kind)
            continue  # a nested block's iterators belong to its own loops
        stack.extend(children(node))
    if kinds - {IterKind.SPATIAL, IterKind.REDUCE} or len(kinds) == 2:
        return "O"
    if kinds == {IterKind.REDUCE}:
        return "R"
    if loop.kind in (ForKind.PARALLEL, ForKind.VECTORIZED, ForKind.UNROLLED):
        return "O"
    return "S"


def _integer(primitive: str, name: str, value: object) -> int:
    if isinstance(value, IntImm):
        return value.value
    if isinstance(value, bool) or not isinstance(value, int):
        raise ScheduleError(primitive, "argument", f"{name} {value!r} is not an integer")
    return value


def _positive(primitive: str, name: str, value: object) -> int:
    number = _integer(primitive, name, value)
    if number < 1:
        raise ScheduleError(primitive, "argument", f"{name} {value!r} is not positive")
    return number
