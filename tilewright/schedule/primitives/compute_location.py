"""Compute location: move a producer block under a loop of its consumers (``compute_at``), or
a consumer block under a loop of its producers (``reverse_compute_at``), computing in each
iteration only the region that iteration needs."""

from __future__ import annotations

import itertools
import math

from tilewright.arith.analyzer import Analyzer
from tilewright.arith.int_set import IntervalSet, eval_set
from tilewright.arith.iter_map import NotAffine, is_affine, normalize
from tilewright.ir import op
from tilewright.ir.buffer import Buffer, BufferRegion
from tilewright.ir.expr import IntImm, PrimExpr, Range, Var
from tilewright.ir.function import PrimFunc
from tilewright.ir.functor import collect_vars, substitute
from tilewright.ir.stmt import Block, BlockRealize, For, ForKind, IterKind, Stmt, seq
from tilewright.schedule.dataflow import (
    ScopeBlock,
    body_items,
    check_reduction_in_scope,
    check_single_writer,
    consumers_of,
    contains,
    find,
    param_buffers,
    producers_of,
    remove,
    scope_blocks,
)
from tilewright.schedule.error import ScheduleError
from tilewright.schedule.primitives.access_inverse import instances_touching
from tilewright.schedule.region import access_regions, clip, relax_region, relaxed_domain
from tilewright.schedule.tree import Site, loop_domain, update


def compute_at(
    block_site: Site, loop_site: Site, preserve_unit_loops: bool, index: int | None = None
) -> PrimFunc:
    """Move the producer block to the start of ``loop``'s body (before its first consumer),
    computing per iteration the region its consumers under the loop read.

    Example::

        A_shared block at the root, C under i_1  ->  for ax0 in range(130): A_shared ... C
    """
    return _move("compute_at", block_site, loop_site, preserve_unit_loops, False, index)


def reverse_compute_at(
    block_site: Site, loop_site: Site, preserve_unit_loops: bool, index: int | None = None
) -> PrimFunc:
    """Move the consumer block to the end of ``loop``'s body (after its last producer),
    computing per iteration the region its producers under the loop wrote.

    Example::

        C_local copy after the matmul nest  ->  for ax0, ax1 in T.grid(8, 8): C_local ...
    """
    return _move("reverse_compute_at", block_site, loop_site, preserve_unit_loops, True, index)


def _move(
    primitive: str,
    block_site: Site,
    loop_site: Site,
    preserve: bool,
    reverse: bool,
    position: int | None = None,
) -> PrimFunc:
    func = block_site.func
    block = block_site.node
    assert isinstance(block, Block)
    realize = block_site.path[-2]
    assert isinstance(realize, BlockRealize)
    loop = loop_site.loop
    k = block_site.scope_index()
    if k < 0:
        raise ScheduleError(primitive, "root-block", "the root block cannot move", func, block)
    scope = block_site.path[: k + 1]
    if loop_site.scope_index() != k or loop_site.path[k] is not scope[-1]:
        raise ScheduleError(
            primitive,
            "same-scope",
            f"loop {loop.loop_var.name!r} is not in the scope of block {block.name!r}",
            func,
            loop,
        )
    if any(s is loop for s in block_site.path):
        raise ScheduleError(
            primitive,
            "location",
            f"block {block.name!r} is already under loop {loop.loop_var.name!r}",
            func,
            loop,
        )
    for iv in block.iter_vars:
        if iv.kind not in (IterKind.SPATIAL, IterKind.REDUCE):
            raise ScheduleError(
                primitive,
                "block-iter-kind",
                f"block {block.name!r} has the {iv.kind.value} iterator {iv.var.name!r}",
                func,
                block,
            )
    if block.init is not None:
        # TVM: a moved block is complete or a reduction, whose bindings are affine (a complete
        # block's bindings are rebuilt, so any binding goes).
        reason = is_affine(
            realize.iter_values, loop_domain(block_site.enclosing_loops()), realize.predicate
        )
        if reason is not None:
            raise ScheduleError(
                primitive,
                "affine-binding",
                f"block {block.name!r} is a reduction whose binding is not affine: {reason}",
                func,
                block,
            )
    blocks = scope_blocks(scope)
    scope_loops = {s.loop_var for s in block_site.path[k:] if isinstance(s, For)}
    check_reduction_in_scope(primitive, block_site, realize, scope_loops)
    check_single_writer(primitive, block_site, blocks, block)
    if not reverse:
        outputs = {r.buffer for r in block.writes} & param_buffers(func)
        if outputs:
            raise ScheduleError(
                primitive,
                "output-block",
                f"block {block.name!r} writes the function's output "
                f"{sorted(b.name for b in outputs)[0]!r}; only a consumer can pull it in",
                func,
                block,
            )
    related = producers_of(blocks, block) if reverse else consumers_of(blocks, block)
    role = "producer" if reverse else "consumer"
    if not related:
        raise ScheduleError(
            primitive,
            "location",
            f"block {block.name!r} has no {role} under loop {loop.loop_var.name!r}",
            func,
            loop,
        )
    for other in related:
        if not other.under(loop):
            raise ScheduleError(
                primitive,
                "location",
                f"the {role} {other.block.name!r} of block {block.name!r} is not under loop "
                f"{loop.loop_var.name!r}",
                func,
                other.block,
            )
    items = body_items(loop)
    holding = [i for i, item in enumerate(items) if any(contains(item, o.realize) for o in related)]
    index = holding[-1] + 1 if reverse else holding[0]
    if position is not None:
        index = _position(
            primitive, block_site, blocks, block, loop, items, holding, reverse, position
        )
    _check_flow(primitive, block_site, blocks, block, loop, items, index, reverse)

    outer = [*loop_site.enclosing_loops(), loop]
    ana = Analyzer()
    for f in outer:
        ana.bind(f.loop_var, Range(f.min, f.extent))
    ranges = _iter_ranges(block, related, loop, outer, ana, reverse)
    if reverse:
        _check_cover(primitive, block_site, block, related, loop, outer, ranges, ana)
        _check_dense(primitive, block_site, block, related, loop, outer, ana)
    nest = _nest(realize, ranges, preserve, ana)
    new_loop = update(loop, body=seq(*items[:index], nest, *items[index:]))
    moved = loop_site.replaced(new_loop)
    body = remove(moved.body, realize)
    assert body is not None
    return moved.with_body(body)


def _position(
    primitive: str,
    site: Site,
    blocks: list[ScopeBlock],
    block: Block,
    loop: For,
    items: list[Stmt],
    holding: list[int],
    reverse: bool,
    position: int,
) -> int:
    """TVM's ``index``: -1 the last legal insertion point among the loop body's statements,
    -2 the first, k >= 0 the k-th (refused unless legal)."""
    candidates = range(holding[-1] + 1, len(items) + 1) if reverse else range(0, holding[0] + 1)
    legal = []
    for k in candidates:
        try:
            _check_flow(primitive, site, blocks, block, loop, items, k, reverse)
        except ScheduleError:
            continue
        legal.append(k)
    if position in (-1, -2) and legal:
        return legal[-1] if position == -1 else legal[0]
    if position in legal:
        return position
    raise ScheduleError(
        primitive,
        "location",
        f"index {position} is not a legal place for block {block.name!r} among the "
        f"{len(items)} statements of loop {loop.loop_var.name!r} (legal: {legal}, or -1 / -2)",
        site.func,
        loop,
    )


def _check_flow(
    primitive: str,
    site: Site,
    blocks: list[ScopeBlock],
    block: Block,
    loop: For,
    items: list[Stmt],
    index: int,
    reverse: bool,
) -> None:
    """Blocks the move crosses do not touch what the block writes nor write what it reads;
    under the loop, the block's producers stay before it and its consumers after it."""
    reads = {r.buffer for r in block.reads}
    writes = {r.buffer for r in block.writes}
    me = find(blocks, block)
    inside = [k for k, b in enumerate(blocks) if b.under(loop)]
    lo, hi = inside[0], inside[-1] + 1
    if (not reverse and me > lo) or (reverse and me < hi):
        where = "after" if not reverse else "before"
        raise ScheduleError(
            primitive,
            "data-flow",
            f"block {block.name!r} runs {where} loop {loop.loop_var.name!r} (it must move "
            f"{'down' if not reverse else 'up'} the program, not back)",
            site.func,
            block,
        )
    crossed = blocks[me + 1 : lo] if not reverse else blocks[hi:me]
    for other in crossed:
        _refuse_if(primitive, site, block, other, ((other.reads | other.writes) & writes))
        _refuse_if(primitive, site, block, other, other.writes & reads)
    for other in blocks[lo:hi]:
        position = next(i for i, item in enumerate(items) if contains(item, other.realize))
        before = position < index
        if reverse:
            clash = (other.reads | other.writes) & writes
            if before:
                clash = other.writes & writes
        else:
            clash = other.writes & (reads | writes)
            if before:
                clash = other.writes & writes
        _refuse_if(primitive, site, block, other, clash)


def _refuse_if(primitive: str, site: Site, block: Block, other: ScopeBlock, clash: set) -> None:
    if clash:
        name = sorted(b.name for b in clash)[0]
        raise ScheduleError(
            primitive,
            "data-flow",
            f"moving block {block.name!r} past block {other.block.name!r} would change what "
            f"one of them sees of buffer {name!r}",
            site.func,
            block,
        )


def _required(
    related: list[ScopeBlock],
    buffer: Buffer,
    loop: For,
    outer: list[For],
    ana: Analyzer,
    reads: bool,
) -> list[IntervalSet] | None:
    regions: list[BufferRegion] = []
    dom: dict[Var, Range] = {}
    for other in related:
        found = access_regions(other.realize, buffer, reads=reads)
        if not found:
            continue
        dom.update(relaxed_domain(outer, _loops_under(other, loop), buffer.scope))
        regions.extend(found)
    return relax_region(regions, dom, ana)


def _loops_under(other: ScopeBlock, loop: For) -> list[For]:
    """The loops between ``loop`` and the block ``other``."""
    start = next(i for i, s in enumerate(other.path) if s is loop)
    return [s for s in other.path[start + 1 :] if isinstance(s, For)]


def _iter_ranges(
    block: Block,
    related: list[ScopeBlock],
    loop: For,
    outer: list[For],
    ana: Analyzer,
    reverse: bool,
) -> list[Range]:
    """Each iterator's range for one iteration of the loop: from the region the related
    blocks need (or wrote) through the block's own access, else its whole domain."""
    own = block.reads if reverse else block.writes
    dom = {iv.var: iv.dom for iv in block.iter_vars}
    found: dict[Var, IntervalSet] = {}
    for decl in own:
        required = _required(related, decl.buffer, loop, outer, ana, reads=not reverse)
        if required is None:
            continue
        for var, piece in instances_touching(decl, dom, required, ana, reverse).items():
            found[var] = found[var].union(piece, ana) if var in found else piece
    ranges = []
    for iv in block.iter_vars:
        found_piece = found.get(iv.var)
        clipped = None if found_piece is None else clip(found_piece, iv.dom, ana)
        rng = iv.dom
        if clipped is not None and clipped.min_value is not None and clipped.max_value is not None:
            start = clipped.min_value
            extent = ana.simplify(op.add(op.sub(clipped.max_value, start), 1))
            if not isinstance(extent, IntImm):
                # An extent that varies with the outer loops ((360 * c + 359) // 16 - 360 * c
                # // 16 + 1: 23, then 22): its largest value, as TVM takes the bound, from a
                # start that is linear in them (c * 45 // 2 over c < 2 is c * 22); a start
                # such as c * 8 // 9 would make the binding non-affine: whole domain then.
                linear = _linear(start, outer, ana)
                largest = _largest(extent, outer, ana)
                if linear is not None and largest is not None:
                    start, extent = linear, largest
            if isinstance(extent, IntImm) and extent.value > 0:
                rng = Range(start, extent)
        ranges.append(rng)
    return ranges


def _linear(expr: PrimExpr, outer: list[For], ana: Analyzer) -> PrimExpr | None:
    """``expr`` of one outer loop ``t`` (constant range) as ``a + b * t`` where its values
    over that range are linear, else None."""
    used = set(collect_vars(expr))
    loops = [f for f in outer if f.loop_var in used]
    if len(loops) != 1 or len(used) != 1:
        return None
    (f,) = loops
    if not (isinstance(f.min, IntImm) and isinstance(f.extent, IntImm)) or f.extent.value > 4096:
        return None
    values = []
    for t in range(f.min.value, f.min.value + f.extent.value):
        value = ana.simplify(substitute(expr, {f.loop_var: op.const(t, f.loop_var.dtype)}))
        if not isinstance(value, IntImm):
            return None
        values.append(value.value)
    step = values[1] - values[0] if len(values) > 1 else 0
    if any(b - a != step for a, b in itertools.pairwise(values)):
        return None
    offset = op.sub(f.loop_var, f.min) if f.min.value else f.loop_var
    return ana.simplify(op.add(op.mul(offset, step), values[0]))


def _largest(expr: PrimExpr, outer: list[For], ana: Analyzer) -> IntImm | None:
    """The largest value of ``expr`` over the outer loops it uses, counted point by point
    (interval bounds lose the correlation between ``(360 * c + 359) // 16`` and ``c * 45 //
    2``); None past 4096 points or for a loop of symbolic extent."""
    used = set(collect_vars(expr))
    loops = [f for f in outer if f.loop_var in used]
    if len(loops) != len(used):
        return None
    sizes = [
        (f.min.value, f.extent.value)
        for f in loops
        if isinstance(f.min, IntImm) and isinstance(f.extent, IntImm)
    ]
    if len(sizes) != len(loops) or math.prod(n for _, n in sizes) > 4096:
        return None
    best: IntImm | None = None
    for point in itertools.product(*(range(lo, lo + n) for lo, n in sizes)):
        values = {f.loop_var: op.const(p, f.loop_var.dtype) for f, p in zip(loops, point)}
        value = ana.simplify(substitute(expr, values))
        if not isinstance(value, IntImm):
            return None
        best = value if best is None or value.value > best.value else best
    return best


def _check_cover(
    primitive: str,
    site: Site,
    block: Block,
    related: list[ScopeBlock],
    loop: For,
    outer: list[For],
    ranges: list[Range],
    ana: Analyzer,
) -> None:
    """Reverse compute-at: what the consumer reads per iteration was written by then."""
    dom = {iv.var: r for iv, r in zip(block.iter_vars, ranges)}
    for decl in block.reads:
        written = _required(related, decl.buffer, loop, outer, ana, reads=False)
        if written is None:
            continue
        for dim, (rng, have) in enumerate(zip(decl.region, written)):
            low = eval_set(rng.min, dom, ana).min_value
            high = eval_set(op.add(rng.min, rng.extent - 1), dom, ana).max_value
            ok = (
                low is not None
                and high is not None
                and have.min_value is not None
                and have.max_value is not None
                and ana.can_prove(op.le(high, have.max_value))
            )
            if (
                ok
                and low is not None
                and have.min_value is not None
                and not ana.can_prove(op.ge(low, have.min_value))
            ):
                ok = _slides(written, dim, loop, outer, ana)
                if ok and decl.buffer not in param_buffers(site.func):
                    # Lowering allocates the buffer where all its accesses meet, inside the
                    # loop, and sizes it for one iteration: the earlier elements are gone.
                    raise ScheduleError(
                        primitive,
                        "region-cover",
                        f"block {block.name!r} reads buffer {decl.buffer.name!r} below what "
                        f"one iteration of loop {loop.loop_var.name!r} writes; only a "
                        "parameter buffer keeps the earlier iterations' elements (an "
                        "allocated one is allocated per iteration once lowered)",
                        site.func,
                        block,
                    )
            if not ok:
                raise ScheduleError(
                    primitive,
                    "region-cover",
                    f"block {block.name!r} reads buffer {decl.buffer.name!r} beyond the region "
                    f"its producers write in one iteration of loop {loop.loop_var.name!r}",
                    site.func,
                    block,
                )


def _slides(
    written: list[IntervalSet], dim: int, loop: For, outer: list[For], ana: Analyzer
) -> bool:
    """Whether a consumer may read, along ``dim``, below what one iteration of ``loop``
    writes: the producers write that dimension in program order, one contiguous ascending
    run of ``W`` elements per iteration (the start is ``W`` times the fused index of the
    serial loops it uses, ``loop`` innermost), and the other dimensions stay put across
    those iterations, so what lies below was written by the iterations before."""
    have = written[dim]
    if have.min_value is None or have.max_value is None:
        return False
    width = ana.simplify(op.add(op.sub(have.max_value, have.min_value), 1))
    if not isinstance(width, IntImm):
        return False
    try:
        total = normalize(have.min_value, loop_domain(outer))
    except NotAffine:
        return False
    chain = sorted(total.args, key=lambda a: a.scale)
    loops = {f.loop_var: f for f in outer}
    expected = width.value
    for k, split in enumerate(chain):
        var = split.mark.source
        if not isinstance(var, Var) or var not in loops or split.lower_factor != 1:
            return False
        if split.scale != expected or (k == 0 and var is not loop.loop_var):
            return False
        if loops[var].kind not in (ForKind.SERIAL, ForKind.UNROLLED):
            return False
        expected *= split.extent if isinstance(split.extent, int) else 0
    if not chain:
        return False
    first = min(outer.index(loops[s.mark.source]) for s in chain)  # type: ignore[index]
    moving = {f.loop_var for f in outer[first:]}
    return all(
        not (set(collect_vars((other.min_value, other.max_value))) & moving)
        for d, other in enumerate(written)
        if d != dim
    )


def _check_dense(
    primitive: str,
    site: Site,
    block: Block,
    related: list[ScopeBlock],
    loop: For,
    outer: list[For],
    ana: Analyzer,
) -> None:
    """Reverse compute-at: the producers write every element of the box the consumer will read
    in one iteration. A strided tile (rows ``{0..3} + {64..67}``) has a box of 68 rows; read
    whole, it takes 60 rows from other iterations, which a thread-local or compacted buffer
    does not hold. Counted, not proven: the points the producers' loops can write at most
    (constant extents only) against the box's size."""
    for decl in block.reads:
        buffer = decl.buffer
        box = _required(related, buffer, loop, outer, ana, reads=False)
        volume = _volume(box, ana)
        if volume is None:
            continue
        points = 0
        for other in related:
            dom = relaxed_domain(outer, _loops_under(other, loop), buffer.scope)
            for region in access_regions(other.realize, buffer, reads=False):
                count = _points(region, dom)
                if count is None:
                    return
                points += count
        if points < volume:
            raise ScheduleError(
                primitive,
                "region-cover",
                f"block {block.name!r} would read the whole box of buffer {buffer.name!r} "
                f"({volume} elements) that its producers write into in one iteration of loop "
                f"{loop.loop_var.name!r}, but they write at most {points} of them there (a "
                "strided tile: the rest would come from other iterations); bind the loops "
                "that stride the tile to vthread outside the loop, or move the block under a "
                "deeper loop",
                site.func,
                block,
            )


def _volume(box: list[IntervalSet] | None, ana: Analyzer) -> int | None:
    if box is None:
        return None
    volume = 1
    for dim in box:
        if dim.min_value is None or dim.max_value is None:
            return None
        extent = ana.simplify(op.add(op.sub(dim.max_value, dim.min_value), 1))
        if not isinstance(extent, IntImm):
            return None
        volume *= extent.value
    return volume


def _points(region: BufferRegion, dom: dict[Var, Range]) -> int | None:
    """At most how many elements ``region`` covers as the loops of ``dom`` run."""
    count = 1
    used: set[Var] = set()
    for rng in region.region:
        if not isinstance(rng.extent, IntImm):
            return None
        count *= rng.extent.value
        used.update(collect_vars(rng.min))
    for var, rng in dom.items():
        if var in used:
            if not isinstance(rng.extent, IntImm):
                return None
            count *= rng.extent.value
    return count


def _nest(realize: BlockRealize, ranges: list[Range], preserve: bool, ana: Analyzer) -> Stmt:
    """The block over new loops ``ax0, ax1, ...`` that run its iterators over ``ranges``."""
    block = realize.block
    loops: list[tuple[Var, PrimExpr]] = []
    values: list[PrimExpr] = []
    conditions: list[PrimExpr] = []
    for iv, rng in zip(block.iter_vars, ranges):
        unit = isinstance(rng.extent, IntImm) and rng.extent.value == 1
        if unit and not preserve:
            value = rng.min
        else:
            var = Var(f"ax{len(loops)}", iv.var.dtype)
            loops.append((var, rng.extent))
            zero = isinstance(rng.min, IntImm) and rng.min.value == 0
            value = var if zero else op.add(rng.min, var)
        values.append(value)
        dom = iv.dom
        if not ana.can_prove(op.ge(rng.min, dom.min)):
            conditions.append(op.ge(value, dom.min))
        end = ana.simplify(op.add(dom.min, dom.extent))
        if not ana.can_prove(op.le(op.add(rng.min, rng.extent), end)):
            conditions.append(op.lt(value, end))
    predicate: PrimExpr = IntImm(1, realize.predicate.dtype)
    for cond in conditions:
        is_true = isinstance(predicate, IntImm) and predicate.value == 1
        predicate = cond if is_true else op.logical_and(predicate, cond)
    stmt: Stmt = update(realize, iter_values=tuple(values), predicate=predicate)
    for var, extent in reversed(loops):
        stmt = For(var, IntImm(0, var.dtype), extent, ForKind.SERIAL, stmt)
    return stmt
