"""``transform_block_layout``: a block's iteration space re-tiled by an index map.

The map takes the block's iterators (in order) to new ones; it must map the iteration box
one to one onto a new box (permutations, splits, fusions: checked with the affine iterator
maps). The block gets one iterator per new index, its body reads the old iterators back
through the inverse map, and the loops above it are regenerated, one per new iterator, with
trivial bindings. The block must have trivial bindings itself: each iterator bound to the
loop of the same position above it, those loops holding nothing else.
"""

from __future__ import annotations

from collections import Counter, defaultdict

from tilewright.arith.analyzer import Analyzer
from tilewright.arith.iter_map import Extent, IterMark, IterSum, detect_iter_map
from tilewright.ir import op
from tilewright.ir.buffer import BufferRegion
from tilewright.ir.dtype import bool_, int32
from tilewright.ir.expr import IntImm, PrimExpr, Range, Var
from tilewright.ir.function import PrimFunc
from tilewright.ir.functor import collect_vars, substitute
from tilewright.ir.stmt import Block, BlockRealize, For, ForKind, IterKind, IterVar, Stmt
from tilewright.schedule.error import ScheduleError, register_rules
from tilewright.schedule.index_map import IndexMap
from tilewright.schedule.tree import Site, rebuild, update

register_rules(
    {
        "trivial-binding": (
            "the block's iterators are bound one to one, in order, to the serial loops from 0 "
            "directly above it (extents equal to the domains, no predicate), and those loops "
            "hold nothing else"
        ),
        "block-index-map": (
            "the index map takes one index per block iterator and maps the iteration box one "
            "to one onto a box (each new index one dimension from 0), never mixing spatial "
            "and reduction iterators in one new index"
        ),
    }
)


def trivial_loops(primitive: str, site: Site) -> list[For]:
    """The loops bound one to one to the block's iterators, outermost first (else the
    rule ``trivial-binding``)."""
    block = site.block
    realize = site.path[-2]
    assert isinstance(realize, BlockRealize)
    loops = site.enclosing_loops()

    def fail(detail: str) -> ScheduleError:
        return ScheduleError(
            primitive, "trivial-binding", f"block {block.name!r}: {detail}", site.func, block
        )

    if not (isinstance(realize.predicate, IntImm) and realize.predicate.value == 1):
        raise fail("it has a predicate")
    if len(loops) != len(block.iter_vars):
        raise fail(f"{len(loops)} loops above it for {len(block.iter_vars)} iterators")
    start = site.path.index(loops[0]) if loops else len(site.path) - 2
    chain = site.path[start:-1]
    if any(not isinstance(s, For | BlockRealize) for s in chain):
        raise fail("the loops above it hold other statements")
    for loop, iv, value in zip(loops, block.iter_vars, realize.iter_values):
        name = loop.loop_var.name
        if value is not loop.loop_var:
            raise fail(f"iterator {iv.var.name!r} is not bound to loop {name!r}")
        if loop.kind is not ForKind.SERIAL or loop.annotations or loop.thread_tag:
            raise fail(f"loop {name!r} is not a plain serial loop")
        if not (_is(loop.min, 0) and _is(iv.dom.min, 0) and _same(loop.extent, iv.dom.extent)):
            raise fail(f"loop {name!r} does not run over the domain of {iv.var.name!r} from 0")
    return loops


def _is(value: PrimExpr, k: int) -> bool:
    return isinstance(value, IntImm) and value.value == k


def _same(a: PrimExpr, b: PrimExpr) -> bool:
    return isinstance(a, IntImm) and isinstance(b, IntImm) and a.value == b.value


def transform_block_layout(site: Site, index_map: IndexMap) -> PrimFunc:
    """The block iterating over the space ``index_map`` makes of its iterators.

    Example::

        sch.transform_block_layout(block_B, lambda i, j: (i * 16 + j,))
        # for ax0 in range(256): v0 = T.axis.spatial(256, ax0); B[v0 // 16, v0 % 16] = ...
    """
    block = site.block
    loops = trivial_loops("transform_block_layout", site)
    extents, new_vars, inverse = invert(site, index_map, [iv.dom.extent for iv in block.iter_vars])
    kinds = _kinds(site, index_map)
    new_ivs = tuple(
        IterVar(v, Range(IntImm(0, int32), IntImm(e, int32)), kind)
        for v, e, kind in zip(new_vars, extents, kinds)
    )
    analyzer = Analyzer()
    for iv in new_ivs:
        analyzer.bind(iv.var, iv.dom)
    table: dict[Var, PrimExpr] = {}
    for old_var, iv in zip(index_map.initial_indices, block.iter_vars):
        table[iv.var] = analyzer.simplify(inverse.get(old_var, IntImm(0, int32)))
    new_block = update(
        _substituted(block, table, analyzer),
        iter_vars=new_ivs,
    )
    loop_vars = [Var(f"ax{k}", int32) for k in range(len(new_ivs))]
    stmt: Stmt = BlockRealize(tuple(loop_vars), IntImm(1, bool_), new_block)
    for var, iv in reversed(list(zip(loop_vars, new_ivs))):
        stmt = For(var, IntImm(0, int32), iv.dom.extent, ForKind.SERIAL, stmt)
    anchor = site.path.index(loops[0]) if loops else len(site.path) - 2
    return site.func.with_body(rebuild(site.path[: anchor + 1], stmt))


def _substituted(block: Block, table: dict[Var, PrimExpr], analyzer: Analyzer) -> Block:
    def region(r: BufferRegion) -> BufferRegion:
        ranges = tuple(
            Range(analyzer.simplify(substitute(x.min, table)), analyzer.simplify(x.extent))
            for x in r.region
        )
        return BufferRegion(r.buffer, ranges)

    return update(
        block,
        reads=tuple(region(r) for r in block.reads),
        writes=tuple(region(r) for r in block.writes),
        body=substitute(block.body, table),
        init=None if block.init is None else substitute(block.init, table),
        match_buffers=tuple(substitute(m, table) for m in block.match_buffers),
    )


def invert(
    site: Site, index_map: IndexMap, extents: list[PrimExpr]
) -> tuple[list[int], list[Var], dict[Var, PrimExpr]]:
    """The extents of the new indices, a variable for each (``v0``, ``v1``, ...) and each old
    index as a function of those, when ``index_map`` maps the box of ``extents`` one to one
    onto a box (else ``block-index-map``)."""
    block = site.block
    dims: list[int] = []
    for extent in extents:
        if not isinstance(extent, IntImm):
            raise _fail(site, f"block {block.name!r} has the symbolic extent {extent}")
        dims.append(extent.value)
    if len(index_map.initial_indices) != len(dims):
        raise _fail(
            site,
            f"index map {index_map} takes {len(index_map.initial_indices)} indices; block "
            f"{block.name!r} has {len(dims)} iterators",
        )
    dom = {
        v: Range(IntImm(0, int32), IntImm(e, int32))
        for v, e in zip(index_map.initial_indices, dims)
    }
    result = detect_iter_map(index_map.final_indices, dom, check_level="bijective")
    if not result:
        reason = "; ".join(result.errors) if result.errors else "not affine"
        raise _fail(
            site, f"index map {index_map} does not map the iteration box {tuple(dims)} one to "
            f"one onto a box ({reason})"
        )  # fmt: skip
    new_extents: list[int] = []
    for expr, total in zip(index_map.final_indices, result.indices):
        size = _const(total.args[0].extent) if len(total.args) == 1 else None
        if size is None or total.args[0].scale != 1 or _const(total.base) != 0:
            raise _fail(site, f"index map {index_map}: {expr} is not one dimension counted from 0")
        new_extents.append(size)
    new_vars = [Var(f"v{k}", int32) for k in range(len(new_extents))]
    return new_extents, new_vars, _inverse(list(result.indices), new_vars)


def _const(value: object) -> int | None:
    if isinstance(value, int):
        return value
    return value.value if isinstance(value, IntImm) else None


def _inverse(results: list[IterSum], new_vars: list[Var]) -> dict[Var, PrimExpr]:
    """Each loop variable of the marks of ``results`` as a sum of its pieces: a mark's value
    is the sum of its pieces times their lower factors; a fused mark hands each of its splits
    the digit ``value // scale % extent``."""
    pieces: dict[IterMark, list[tuple[PrimExpr, Extent]]] = defaultdict(list)
    for total, var in zip(results, new_vars):
        split = total.args[0]
        pieces[split.mark].append((var, split.lower_factor))
    parents: Counter[IterMark] = Counter()
    seen: set[IterMark] = set()
    stack = list(pieces)
    while stack:
        mark = stack.pop()
        if mark in seen:
            continue
        seen.add(mark)
        if isinstance(mark.source, IterSum):
            for s in mark.source.args:
                parents[s.mark] += 1
                stack.append(s.mark)
    ready = [m for m in seen if parents[m] == 0]
    values: dict[Var, PrimExpr] = {}
    while ready:
        mark = ready.pop()
        value: PrimExpr = IntImm(0, int32)
        for piece, factor in pieces[mark]:
            value = op.add(value, op.mul(piece, factor))
        if isinstance(mark.source, Var):
            values[mark.source] = value
            continue
        for s in mark.source.args:
            digit = op.floormod(op.floordiv(value, s.scale), s.extent)
            pieces[s.mark].append((digit, s.lower_factor))
            parents[s.mark] -= 1
            if parents[s.mark] == 0:
                ready.append(s.mark)
    return values


def _kinds(site: Site, index_map: IndexMap) -> list[IterKind]:
    block = site.block
    kind_of = {v: iv.kind for v, iv in zip(index_map.initial_indices, block.iter_vars)}
    kinds = []
    for expr in index_map.final_indices:
        used = {kind_of[v] for v in collect_vars(expr) if v in kind_of}
        if len(used) > 1 or not used <= {IterKind.SPATIAL, IterKind.REDUCE}:
            raise _fail(
                site,
                f"index map {index_map}: {expr} mixes iterators of kinds "
                f"{sorted(k.value for k in used)}",
            )
        kinds.append(used.pop() if used else IterKind.SPATIAL)
    return kinds


def _fail(site: Site, message: str) -> ScheduleError:
    return ScheduleError("transform_block_layout", "block-index-map", message, site.func, site.node)
