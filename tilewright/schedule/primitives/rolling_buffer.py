"""``rolling_buffer``: an intermediate buffer folded to the window its consumers need.

The producer and consumers of the buffer sit under common loops (``compute_at`` cascades).
Along some dimension, the region the producer writes per iteration of such a loop ``l`` is a
window ``[a * l + c, a * l + c + E)`` that slides by ``a < E``: consecutive windows overlap
by ``E - a``. The buffer keeps only ``E`` elements along the dimension of the outermost such
loop (indexed modulo ``E``), and the producer skips what the previous iteration already
computed: for each dimension with such an overlap, ``T.where(l < 1 or E - a <= offset)``
where ``offset`` is the element's place in its window. As in TVM, recomputing an element
must give what the skipped computation gave (true of pure producers and idempotent updates
such as ``max``; a producer accumulating without an init would differ).
"""

from __future__ import annotations

from dataclasses import dataclass

from tilewright.arith.analyzer import Analyzer
from tilewright.ir import op
from tilewright.ir.buffer import Buffer, BufferRegion
from tilewright.ir.expr import BufferLoad, IntImm, PrimExpr, Range
from tilewright.ir.function import PrimFunc
from tilewright.ir.functor import Mutator, collect_vars, substitute
from tilewright.ir.stmt import BlockRealize, BufferStore, For, ForKind
from tilewright.schedule.dataflow import ScopeBlock, scope_blocks, scope_path
from tilewright.schedule.error import ScheduleError, register_rules
from tilewright.schedule.primitives.caching import _allocated, _buffer
from tilewright.schedule.primitives.set_dtype import refuse_views
from tilewright.schedule.region import access_regions, interval_range, relax_region
from tilewright.schedule.tree import Site, loop_domain

register_rules(
    {
        "rolling-buffer": (
            "rolling_buffer needs a buffer written by the block alone and read after it, under "
            "common serial loops from 0; along some dimension the producer's region per "
            "iteration of such a loop is a window of constant extent sliding by a smaller "
            "positive stride, written one element at a time, and every consumer reads within "
            "the current window"
        ),
    }
)


@dataclass(frozen=True)
class _Slide:
    """Dimension ``dim``'s window ``[stride * loop + base, ... + extent)``."""

    dim: int
    loop: For
    stride: int
    base: PrimExpr
    extent: int

    def start(self) -> PrimExpr:
        return op.add(op.mul(self.loop.loop_var, self.stride), self.base)


def rolling_buffer(site: Site, index: int) -> PrimFunc:
    """Fold the block's ``index``-th written buffer to the window its consumers need.

    Example::

        sch.rolling_buffer(block_B, 0)
        # B: (10, 10) -> (6, 10); B[v0 % 6, v1] = ...; T.where(i0 < 1 or 2 <= ax0)
    """
    block = site.block
    buffer = _buffer("rolling_buffer", site, block.writes, index, "writes")
    _allocated("rolling_buffer", site, buffer)
    refuse_views("rolling_buffer", site, buffer)
    blocks = scope_blocks(scope_path(site))
    writers = [b for b in blocks if buffer in b.writes]
    if len(writers) != 1 or writers[0].block is not block:
        names = ", ".join(repr(b.block.name) for b in writers)
        raise _fail(site, f"buffer {buffer.name!r} is written by {names}, not by the block alone")
    producer = writers[0]
    readers = [b for b in blocks if buffer in b.reads and b.block is not block]
    if not readers:
        raise _fail(site, f"no block of the scope reads buffer {buffer.name!r}")
    order = [b.block for b in blocks]
    if any(order.index(r.block) < order.index(block) for r in readers):
        raise _fail(site, f"a consumer of {buffer.name!r} runs before the block")
    depth, outer = _common_loops(site, [producer, *readers])
    analyzer = Analyzer()
    for loop in outer:
        analyzer.bind(loop.loop_var, Range(loop.min, loop.extent))
    slides = _slides(site, buffer, producer, depth, outer, analyzer)
    rolled = min(slides, key=lambda s: outer.index(s.loop))
    if rolled.loop.kind is not ForKind.SERIAL or not _is(rolled.loop.min, 0):
        raise _fail(site, f"loop {rolled.loop.loop_var.name!r} is not a serial loop from 0")
    for reader in readers:
        _check_window(site, buffer, reader, depth, rolled, analyzer)
    predicate = _guards(site, buffer, producer, slides, analyzer)
    shape = list(buffer.shape)
    shape[rolled.dim] = IntImm(rolled.extent, shape[rolled.dim].dtype)
    new = buffer.replace(shape=tuple(shape))
    realize = producer.realize
    if not _is(realize.predicate, 1):
        predicate = op.logical_and(realize.predicate, predicate)
    guarded = _Guard(realize, predicate).visit(site.func.body)
    body = _Fold(buffer, new, rolled.dim, rolled.extent).visit(guarded)
    return site.func.with_body(body)


def _is(value: PrimExpr, k: int) -> bool:
    return isinstance(value, IntImm) and value.value == k


def _fail(site: Site, detail: str) -> ScheduleError:
    return ScheduleError("rolling_buffer", "rolling-buffer", detail, site.func, site.block)


def _common_loops(site: Site, users: list[ScopeBlock]) -> tuple[int, list[For]]:
    """The length of the paths' common prefix and the loops in it (outermost first)."""
    depth = min(len(u.path) for u in users)
    for k in range(depth):
        if any(u.path[k] is not users[0].path[k] for u in users):
            depth = k
            break
    start = site.scope_index() + 1
    loops = [s for s in users[0].path[start:depth] if isinstance(s, For)]
    if not loops:
        raise _fail(site, "no loop holds both the block and its consumers (compute_at first)")
    return depth, loops


def _window(
    buffer: Buffer, user: ScopeBlock, depth: int, reads: bool, analyzer: Analyzer
) -> list[Range | None]:
    """Per dimension, the region ``user`` accesses in one iteration of the common loops."""
    inner = [s for s in user.path[depth:-1] if isinstance(s, For)]
    regions = access_regions(user.realize, buffer, reads=reads)
    relaxed = relax_region(regions, loop_domain(inner), analyzer) or []
    return [interval_range(d, analyzer) for d in relaxed]


def _slides(
    site: Site,
    buffer: Buffer,
    producer: ScopeBlock,
    depth: int,
    outer: list[For],
    analyzer: Analyzer,
) -> list[_Slide]:
    by_var = {f.loop_var: f for f in outer}
    found = []
    for dim, rng in enumerate(_window(buffer, producer, depth, False, analyzer)):
        if rng is None or not isinstance(rng.extent, IntImm):
            continue
        used = set(collect_vars(rng.min))
        if len(used) != 1 or next(iter(used)) not in by_var:
            continue
        loop = by_var[next(iter(used))]
        base = analyzer.simplify(substitute(rng.min, {loop.loop_var: 0}))
        stride = analyzer.simplify(op.sub(substitute(rng.min, {loop.loop_var: 1}), base))
        if not isinstance(base, IntImm) or not isinstance(stride, IntImm):
            continue
        slide = _Slide(dim, loop, stride.value, base, rng.extent.value)
        if 0 < slide.stride < slide.extent and analyzer.can_prove_equal(rng.min, slide.start()):
            found.append(slide)
    if not found:
        raise _fail(
            site,
            f"no dimension of {buffer.name!r} is written in windows that overlap between "
            "iterations of a loop holding the block and its consumers",
        )
    return found


def _check_window(
    site: Site, buffer: Buffer, reader: ScopeBlock, depth: int, rolled: _Slide, analyzer: Analyzer
) -> None:
    rng = _window(buffer, reader, depth, True, analyzer)[rolled.dim]
    start = rolled.start()
    inside = rng is not None and (
        analyzer.can_prove(op.ge(rng.min, start))
        and analyzer.can_prove(op.le(op.add(rng.min, rng.extent), op.add(start, rolled.extent)))
    )
    if not inside:
        raise _fail(
            site,
            f"block {reader.block.name!r} reads {buffer.name!r} outside the window "
            f"[{start}, {start} + {rolled.extent}) of dimension {rolled.dim}",
        )


def _guards(
    site: Site, buffer: Buffer, producer: ScopeBlock, slides: list[_Slide], analyzer: Analyzer
) -> PrimExpr:
    """``l < 1 or overlap <= offset`` for each sliding dimension, joined by ``and``."""
    (region,) = access_regions(producer.realize, buffer, reads=False)
    result: PrimExpr | None = None
    for slide in sorted(slides, key=lambda s: s.dim):
        rng = region.region[slide.dim]
        if not _is(rng.extent, 1):
            raise _fail(site, f"the block writes more than one element of dimension {slide.dim}")
        offset = analyzer.simplify(op.sub(rng.min, slide.start()))
        first = op.lt(slide.loop.loop_var, 1)
        overlap = IntImm(slide.extent - slide.stride, offset.dtype)
        guard = op.logical_or(first, op.le(overlap, offset))
        result = guard if result is None else op.logical_and(result, guard)
    assert result is not None  # _slides found at least one
    return result


class _Guard(Mutator):
    """Gives the producer's realize the new predicate."""

    def __init__(self, realize: BlockRealize, predicate: PrimExpr) -> None:
        super().__init__()
        self.realize = realize
        self.predicate = predicate

    def visit_BlockRealize(self, node: BlockRealize) -> BlockRealize:
        if node is self.realize:
            return node.replace(predicate=self.predicate)
        return self.generic_visit(node)


class _Fold(Mutator):
    """Every access of ``old`` on ``new``, dimension ``dim`` taken modulo ``extent``."""

    def __init__(self, old: Buffer, new: Buffer, dim: int, extent: int) -> None:
        super().__init__()
        self.old, self.new, self.dim, self.extent = old, new, dim, extent
        self.buffer_map[old] = new

    def _fold(self, indices: tuple[PrimExpr, ...]) -> tuple[PrimExpr, ...]:
        items = list(self.visit(indices))
        items[self.dim] = op.floormod(items[self.dim], self.extent)
        return tuple(items)

    def visit_BufferLoad(self, node: BufferLoad) -> PrimExpr:
        if node.buffer is not self.old:
            return self.generic_visit(node)
        return BufferLoad(self.new, self._fold(node.indices))

    def visit_BufferStore(self, node: BufferStore) -> BufferStore:
        if node.buffer is not self.old:
            return self.generic_visit(node)
        value = self.visit(node.value)
        return node.replace(buffer=self.new, value=value, indices=self._fold(node.indices))

    def visit_BufferRegion(self, node: BufferRegion) -> BufferRegion:
        if node.buffer is not self.old:
            return self.generic_visit(node)
        ranges = list(self.visit(node.region))
        rng = ranges[self.dim]
        if _is(rng.extent, 1):
            ranges[self.dim] = Range(op.floormod(rng.min, self.extent), rng.extent)
        else:
            zero = IntImm(0, rng.min.dtype)
            ranges[self.dim] = Range(zero, IntImm(self.extent, rng.extent.dtype))
        return BufferRegion(self.new, tuple(ranges))
