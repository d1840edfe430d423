"""merge: sibling loop nests of the same extents become one nest running their bodies in turn,
as a pure function; refused when a block would then see a different value."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from tilewright.arith.analyzer import Analyzer
from tilewright.ir import op
from tilewright.ir.buffer import Buffer
from tilewright.ir.expr import PrimExpr, Range, Var
from tilewright.ir.function import PrimFunc
from tilewright.ir.functor import substitute
from tilewright.ir.stmt import BlockRealize, For, ForKind, SeqStmt, Stmt, seq
from tilewright.schedule.error import ScheduleError, register_rules
from tilewright.schedule.legality import check_distinct, check_plain_loop
from tilewright.schedule.region import access_regions, relax_region
from tilewright.schedule.tree import Site, children

register_rules(
    {
        "merge-extents": (
            "merged loops lie at the same depth below their common parent and have the same "
            "extents level by level"
        ),
    }
)


@dataclass(frozen=True)
class _Nest:
    """One loop given to merge: the loops from the child of the common parent down to it."""

    site: Site
    chain: tuple[For, ...]
    position: int  # the index of chain[0] in the common parent's sequence


def merge(sites: list[Site]) -> tuple[PrimFunc, Var]:
    """Merge loops that head sibling loop nests of the same extents: the nests from their
    common parent down to each loop become one nest of new loops ``<name>_m`` (named after
    the first loop's nest) whose innermost loop runs the loops' bodies in program order, at
    the place of the last nest.

    Returns the new function and the innermost merged loop's variable.

    Example (``merge(i_B, i_C)``)::

        for i in range(128):              for i_m in range(128):
            B ...                  ->         B ...
        for i in range(128):                  C ...
            C ...
    """
    if len(sites) < 2:
        raise ScheduleError("merge", "argument", "merge needs at least two loops")
    check_distinct("merge", sites)
    nests = _nests(sites)
    first = nests[0]
    depth = len(first.chain)
    for nest in nests[1:]:
        _check_extents(first, nest, depth)
    ordered = sorted(nests, key=lambda n: n.position)
    merged = [Var(f"{f.loop_var.name}_m", f.loop_var.dtype) for f in first.chain]
    parent_path = first.site.path[: len(first.site.path) - depth]
    parent = parent_path[-1]
    assert isinstance(parent, SeqStmt)  # checked by _nests
    _check_crossed(first.site, ordered, parent)
    _check_dependences(first.site, ordered, merged)
    bodies = []
    for nest in ordered:
        mapping = {f.loop_var: op.cast(m, f.loop_var.dtype) for f, m in zip(nest.chain, merged)}
        bodies.append(substitute(nest.chain[-1].body, mapping))
    new: Stmt = seq(*bodies)
    for f, m in reversed(list(zip(first.chain, merged))):
        new = For(m, op.const(0, m.dtype), op.cast(f.extent, m.dtype), ForKind.SERIAL, new)
    heads = {id(n.chain[0]) for n in nests}
    last = ordered[-1].chain[0]
    items = [new if s is last else s for s in parent.seq if s is last or id(s) not in heads]
    return first.site.at(parent_path).replaced(seq(*items)), merged[-1]


def _nests(sites: list[Site]) -> list[_Nest]:
    """Each loop's nest below the loops' common parent, which must be a sequence."""
    common = 0
    shortest = min(len(s.path) for s in sites)
    while common < shortest and all(s.path[common] is sites[0].path[common] for s in sites):
        common += 1
    func = sites[0].func
    for site in sites:
        if len(site.path) == common:
            raise ScheduleError(
                "merge",
                "loop-chain",
                f"loop {site.loop.loop_var.name!r} encloses another loop given to merge",
                func,
                site.node,
            )
    parent = sites[0].path[common - 1]
    if not isinstance(parent, SeqStmt):
        raise ScheduleError(
            "merge",
            "loop-chain",
            f"the loops are not in one sequence of statements: their common parent is a "
            f"{type(parent).__name__}",
            func,
            sites[0].node,
        )
    nests = []
    for site in sites:
        below = site.path[common:]
        for k, node in enumerate(below):
            if not isinstance(node, For):
                raise ScheduleError(
                    "merge",
                    "loop-chain",
                    f"a {type(node).__name__} lies between loop {site.loop.loop_var.name!r} "
                    "and the sequence holding the loops to merge",
                    func,
                    site.node,
                )
            check_plain_loop("merge", site.at(site.path[: common + k + 1]))
        chain = tuple(f for f in below if isinstance(f, For))
        position = next(k for k, s in enumerate(parent.seq) if s is chain[0])
        nests.append(_Nest(site, chain, position))
    return nests


def _check_extents(first: _Nest, nest: _Nest, depth: int) -> None:
    name = nest.site.loop.loop_var.name
    base = first.site.loop.loop_var.name
    if len(nest.chain) != depth:
        raise ScheduleError(
            "merge",
            "merge-extents",
            f"loop {name!r} lies {len(nest.chain)} loops below the loops' common parent, "
            f"loop {base!r} {depth}",
            nest.site.func,
            nest.site.node,
        )
    analyzer = Analyzer()
    for mine, theirs in zip(first.chain, nest.chain):
        if not analyzer.can_prove_equal(mine.extent, theirs.extent):
            raise ScheduleError(
                "merge",
                "merge-extents",
                f"loop {theirs.loop_var.name!r} has the extent {theirs.extent}, loop "
                f"{mine.loop_var.name!r} {mine.extent}",
                nest.site.func,
                theirs,
            )


def _blocks(
    stmt: Stmt, loops: tuple[For, ...] = ()
) -> Iterator[tuple[tuple[For, ...], BlockRealize]]:
    """The outermost block realizes under ``stmt``, each with the loops between."""
    if isinstance(stmt, BlockRealize):
        yield loops, stmt
        return
    inner = (*loops, stmt) if isinstance(stmt, For) else loops
    for child in children(stmt):
        yield from _blocks(child, inner)


def _buffers(realize: BlockRealize) -> tuple[set[Buffer], set[Buffer]]:
    block = realize.block
    return {r.buffer for r in block.reads}, {r.buffer for r in block.writes}


def _conflicts(a: BlockRealize, b: BlockRealize) -> set[Buffer]:
    """Buffers one of the blocks writes and the other accesses."""
    a_reads, a_writes = _buffers(a)
    b_reads, b_writes = _buffers(b)
    return (a_writes & (b_reads | b_writes)) | (a_reads & b_writes)


def _check_crossed(site: Site, ordered: list[_Nest], parent: SeqStmt) -> None:
    """The nests before the last one move past the statements between them and it."""
    heads = {id(n.chain[0]) for n in ordered}
    last = ordered[-1].position
    for nest in ordered[:-1]:
        crossed = [s for s in parent.seq[nest.position + 1 : last] if id(s) not in heads]
        for _, mine in _blocks(nest.chain[0]):
            for stmt in crossed:
                for _, other in _blocks(stmt):
                    clash = _conflicts(mine, other)
                    if clash:
                        raise ScheduleError(
                            "merge",
                            "data-flow",
                            f"block {mine.block.name!r} would move past block "
                            f"{other.block.name!r}, and one of them writes buffer "
                            f"{sorted(b.name for b in clash)[0]!r} that the other accesses",
                            site.func,
                            mine.block,
                        )


def _check_dependences(site: Site, ordered: list[_Nest], merged: list[Var]) -> None:
    """Merged, a block of an earlier nest at iteration ``m`` runs after a block of a later
    nest at every iteration ``m' < m``: they may not touch a common element then."""
    extents = [f.extent for f in ordered[0].chain]
    for a, early in enumerate(ordered):
        for late in ordered[a + 1 :]:
            for x_loops, x in _blocks(early.chain[-1].body):
                for y_loops, y in _blocks(late.chain[-1].body):
                    for buffer in _conflicts(x, y):
                        for level in range(len(merged)):
                            if not _disjoint(
                                buffer,
                                (early, x_loops, x),
                                (late, y_loops, y),
                                merged,
                                extents,
                                level,
                            ):
                                raise ScheduleError(
                                    "merge",
                                    "data-flow",
                                    f"merged, block {y.block.name!r} would access buffer "
                                    f"{buffer.name!r} at an earlier iteration of loop "
                                    f"{merged[level].name!r} before block {x.block.name!r} "
                                    "accesses the same element at a later one",
                                    site.func,
                                    y.block,
                                )


def _disjoint(
    buffer: Buffer,
    x: tuple[_Nest, tuple[For, ...], BlockRealize],
    y: tuple[_Nest, tuple[For, ...], BlockRealize],
    merged: list[Var],
    extents: list[PrimExpr],
    level: int,
) -> bool:
    """Whether ``x`` at merged iteration ``m`` and ``y`` at every ``m'`` that agrees with
    ``m`` above ``level`` and is smaller at ``level`` access disjoint parts of ``buffer``."""
    analyzer = Analyzer()
    gap = Var("gap", merged[level].dtype)
    for var, extent in zip(merged[: level + 1], extents):
        analyzer.bind(var, Range(op.const(0, var.dtype), extent))
    analyzer.bind(gap, Range(op.const(0, gap.dtype), extents[level]))
    boxes = []
    for side, (nest, loops, realize) in enumerate((x, y)):
        mapping: dict[Var, PrimExpr] = {}
        dom: dict[Var, Range] = {f.loop_var: Range(f.min, f.extent) for f in loops}
        for k, (f, m) in enumerate(zip(nest.chain, merged)):
            if k > level:
                dom[f.loop_var] = Range(f.min, f.extent)
            elif k == level and side == 1:
                mapping[f.loop_var] = op.cast(op.sub(op.sub(m, 1), gap), f.loop_var.dtype)
            else:
                mapping[f.loop_var] = op.cast(m, f.loop_var.dtype)
        regions = [
            substitute(r, mapping)
            for reads in (True, False)
            for r in access_regions(realize, buffer, reads=reads)
        ]
        box = relax_region(regions, dom, analyzer)
        if box is None:
            return True
        boxes.append(box)
    for one, other in zip(*boxes):
        for low, high in ((one, other), (other, one)):
            if low.max_value is None or high.min_value is None:
                continue
            if analyzer.can_prove(op.lt(low.max_value, high.min_value)):
                return True
    return False
