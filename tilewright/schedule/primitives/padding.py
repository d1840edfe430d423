"""``decompose_padding``: a padded copy split into a fill and an in-bounds copy.

A block ``P[...] = T.if_then_else(cond, A[...], pad)`` whose ``cond`` bounds its iterators
(``lo <= v``, ``v < hi`` and the like, joined by ``and``) becomes two blocks: a block
``<name>_pad_const`` writing ``pad`` everywhere the block writes, under copies of the loops
from the given loop down, and the block itself, which now copies ``A[...]`` over the
in-bounds box only. An iterator bound to a loop of its own under that loop gets a shorter
loop and domain (the body reads ``v + lo``); any other is guarded by a ``T.where``.
``pad_einsum`` lives in ``pad_einsum.py``; ``pad_einsum`` re-exports here for the facade.
"""

from __future__ import annotations

from tilewright.arith.analyzer import Analyzer
from tilewright.ir import op
from tilewright.ir.buffer import BufferRegion
from tilewright.ir.dtype import bool_
from tilewright.ir.expr import GE, GT, LE, LT, And, BufferLoad, Call, IntImm, PrimExpr, Range, Var
from tilewright.ir.function import PrimFunc
from tilewright.ir.functor import Mutator, collect_vars, substitute
from tilewright.ir.stmt import Block, BlockRealize, BufferStore, For, IterKind, Stmt, seq
from tilewright.schedule.error import ScheduleError, register_rules
from tilewright.schedule.primitives.caching import _unique_name
from tilewright.schedule.primitives.pad_einsum import pad_einsum
from tilewright.schedule.tree import Site, rebuild, update

__all__ = ["decompose_padding", "pad_einsum"]

register_rules(
    {
        "padding-pattern": (
            "decompose_padding needs a spatial block without init storing "
            "T.if_then_else(cond, value, pad) once, cond a conjunction of bounds of single "
            "iterators by constants and pad free of iterators and buffer loads"
        ),
        "pad-location": (
            "decompose_padding needs a loop above the block in its scope, the loops from it "
            "down holding nothing but the block"
        ),
    }
)


def decompose_padding(site: Site, loop_site: Site) -> tuple[PrimFunc, str]:
    """Split the padded copy into ``<name>_pad_const`` (before ``loop``) and the in-bounds
    copy; returns the function and the fill block's name.

    Example::

        y[vi] = T.if_then_else(6 <= vi and vi < 134, x[vi - 6], 0)   # vi in range(140)
        # -> block_pad_const: y[vi] = 0 (140 iterations)
        #    block: vi = T.axis.spatial(128, i); y[vi + 6] = x[vi]
    """
    block = site.block
    realize = site.path[-2]
    assert isinstance(realize, BlockRealize)
    chain = _chain(site, loop_site)
    store, cond, value, pad = _pattern(site)
    bounds = _bounds(site, cond)
    loops = [s for s in chain if isinstance(s, For)]
    owned = _owned_loops(realize, loops)

    analyzer = Analyzer()
    table: dict[Var, PrimExpr] = {}
    new_extent: dict[Var, PrimExpr] = {}
    new_ivs = []
    guards: list[PrimExpr] = []
    for iv, binding in zip(block.iter_vars, realize.iter_values):
        lo, hi = bounds.get(iv.var, (None, None))
        dmin, dext = iv.dom.min.value, iv.dom.extent.value  # type: ignore[attr-defined]
        low = dmin if lo is None else max(lo, dmin)
        high = dmin + dext if hi is None else min(hi, dmin + dext)
        if high <= low:
            raise _pattern_error(site, f"iterator {iv.var.name!r} has no in-bounds value")
        if (low, high) == (dmin, dmin + dext):
            new_ivs.append(iv)
            continue
        loop = owned.get(iv.var)
        if loop is not None and dmin == 0:
            extent = IntImm(high - low, iv.dom.extent.dtype)
            new_extent[loop.loop_var] = extent
            var = Var(iv.var.name, iv.var.dtype)
            new_ivs.append(update(iv, var=var, dom=Range(IntImm(0, extent.dtype), extent)))
            table[iv.var] = op.add(var, low) if low else var
            continue
        new_ivs.append(iv)
        if low > dmin:
            guards.append(op.le(IntImm(low, binding.dtype), binding))
        if high < dmin + dext:
            guards.append(op.lt(binding, IntImm(high, binding.dtype)))

    name = _unique_name(site.func, f"{block.name}_pad_const")
    fill = _fill(block, store, pad, name)
    copy_store = BufferStore(store.buffer, value, store.indices)
    copy_block = update(
        block,
        iter_vars=tuple(new_ivs),
        reads=tuple(_region(r, table, analyzer) for r in block.reads),
        writes=tuple(_region(r, table, analyzer) for r in block.writes),
        body=_Simplify(analyzer).visit(substitute(copy_store, table)),
    )
    predicate = realize.predicate
    for guard in guards:
        predicate = guard if _true(predicate) else op.logical_and(predicate, guard)
    copy = update(realize, block=copy_block, predicate=predicate)

    # The fill runs under fresh copies of the loops from `loop` down.
    fresh = {f.loop_var: Var(f.loop_var.name, f.loop_var.dtype) for f in loops}
    fill_stmt: Stmt = substitute(update(realize, block=fill), fresh)
    copy_stmt: Stmt = copy
    for f in reversed(loops):
        fill_stmt = update(f, loop_var=fresh[f.loop_var], body=fill_stmt)
        copy_stmt = update(f, extent=new_extent.get(f.loop_var, f.extent), body=copy_stmt)
    anchor = loop_site.path
    return site.func.with_body(rebuild(anchor, seq(fill_stmt, copy_stmt))), name


def _chain(site: Site, loop_site: Site) -> tuple[Stmt, ...]:
    """The statements from the loop down to the block's realize (``pad-location``)."""
    loop = loop_site.loop
    path = site.path
    k = next((i for i, s in enumerate(path) if s is loop), None)
    fail = None
    if k is None or k < site.scope_index():
        fail = f"loop {loop.loop_var.name!r} is not above block {site.block.name!r} in its scope"
    elif any(not isinstance(s, For | BlockRealize) for s in path[k:-1]):
        fail = (
            f"the loops from {loop.loop_var.name!r} down hold more than block {site.block.name!r}"
        )
    if fail is not None:
        raise ScheduleError("decompose_padding", "pad-location", fail, site.func, loop)
    assert k is not None
    return path[k:-1]


def _owned_loops(realize: BlockRealize, loops: list[For]) -> dict[Var, For]:
    """Iterators bound to exactly a loop of ``loops`` from 0 over their domain, that loop
    used by no other binding: they can get a shorter loop."""
    found: dict[Var, For] = {}
    by_var = {f.loop_var: f for f in loops}
    for iv, binding in zip(realize.block.iter_vars, realize.iter_values):
        loop = by_var.get(binding) if isinstance(binding, Var) else None
        if loop is None or not (isinstance(loop.min, IntImm) and loop.min.value == 0):
            continue
        others = [v for v in realize.iter_values if v is not binding]
        if binding in collect_vars((others, realize.predicate)):
            continue
        if isinstance(loop.extent, IntImm) and loop.extent.value == iv.dom.extent.value:  # type: ignore[attr-defined]
            found[iv.var] = loop
    return found


def _pattern(site: Site) -> tuple[BufferStore, PrimExpr, PrimExpr, PrimExpr]:
    block = site.block
    store = block.body
    if block.init is not None or not isinstance(store, BufferStore):
        raise _pattern_error(site, "its body is not one store (or it has an init)")
    if any(iv.kind is not IterKind.SPATIAL for iv in block.iter_vars):
        raise _pattern_error(site, "it has non-spatial iterators")
    call = store.value
    if not (isinstance(call, Call) and call.op.removeprefix("tir.") == "if_then_else"):
        raise _pattern_error(site, "the stored value is not T.if_then_else(cond, value, pad)")
    cond, value, pad = call.args
    loads: list[object] = []
    _Collect(loads).visit(pad)
    iters = {iv.var for iv in block.iter_vars}
    if loads or iters & set(collect_vars(pad)):
        raise _pattern_error(site, f"the pad value {pad} reads buffers or iterators")
    return store, cond, value, pad


def _bounds(site: Site, cond: PrimExpr) -> dict[Var, tuple[int | None, int | None]]:
    """``{v: (lo, hi)}``: ``cond`` as ``lo <= v < hi`` per iterator (either side open)."""
    iters = {iv.var for iv in site.block.iter_vars}
    found: dict[Var, tuple[int | None, int | None]] = {}
    stack = [cond]
    while stack:
        term = stack.pop()
        if isinstance(term, And):
            stack += [term.a, term.b]
            continue
        bound = _bound(term, iters)
        if bound is None:
            raise _pattern_error(site, f"the condition {term} does not bound one iterator")
        var, lo, hi = bound
        old_lo, old_hi = found.get(var, (None, None))
        lo = lo if old_lo is None else old_lo if lo is None else max(lo, old_lo)
        hi = hi if old_hi is None else old_hi if hi is None else min(hi, old_hi)
        found[var] = (lo, hi)
    return found


def _bound(term: PrimExpr, iters: set[Var]) -> tuple[Var, int | None, int | None] | None:
    if not isinstance(term, LT | LE | GT | GE):
        return None
    a, b = term.a, term.b
    flipped = isinstance(a, IntImm) and isinstance(b, Var)
    if flipped:
        a, b = b, a
    if not (isinstance(a, Var) and a in iters and isinstance(b, IntImm)):
        return None
    c = b.value
    # Read as `a OP c` (swapped when the constant came first).
    upper = isinstance(term, LT | LE) != flipped
    strict = isinstance(term, LT | GT)
    if upper:
        return a, None, c if strict else c + 1
    return a, c + 1 if strict else c, None


def _fill(block: Block, store: BufferStore, pad: PrimExpr, name: str) -> Block:
    """The block storing ``pad`` wherever ``block`` stores, over its own iterators."""
    value = op.cast(pad, store.buffer.dtype)
    fresh = {iv.var: Var(iv.var.name, iv.var.dtype) for iv in block.iter_vars}
    return update(
        block,
        name=name,
        iter_vars=tuple(update(iv, var=fresh[iv.var]) for iv in block.iter_vars),
        reads=(),
        writes=tuple(substitute(w, fresh) for w in block.writes),
        body=substitute(BufferStore(store.buffer, value, store.indices), fresh),
        annotations=(),
    )


def _region(region: BufferRegion, table: dict[Var, PrimExpr], analyzer: Analyzer) -> BufferRegion:
    ranges = tuple(
        Range(
            analyzer.simplify(substitute(r.min, table)),
            analyzer.simplify(substitute(r.extent, table)),
        )
        for r in region.region
    )
    return BufferRegion(region.buffer, ranges)


def _true(expr: PrimExpr) -> bool:
    return isinstance(expr, IntImm) and expr.value == 1 and expr.dtype == bool_


def _pattern_error(site: Site, detail: str) -> ScheduleError:
    return ScheduleError(
        "decompose_padding",
        "padding-pattern",
        f"block {site.block.name!r}: {detail}",
        site.func,
        site.block,
    )


class _Collect(Mutator):
    def __init__(self, found: list[object]) -> None:
        super().__init__()
        self.found = found

    def visit_BufferLoad(self, node: BufferLoad) -> PrimExpr:
        self.found.append(node)
        return node


class _Simplify(Mutator):
    """Simplifies the indices of loads and stores (``x[vi + 6 - 6]`` -> ``x[vi]``)."""

    def __init__(self, analyzer: Analyzer) -> None:
        super().__init__()
        self.analyzer = analyzer

    def visit_BufferLoad(self, node: BufferLoad) -> PrimExpr:
        return node.replace(indices=tuple(self.analyzer.simplify(i) for i in node.indices))

    def visit_BufferStore(self, node: BufferStore) -> BufferStore:
        value = self.visit(node.value)
        indices = tuple(self.analyzer.simplify(i) for i in node.indices)
        return node.replace(value=value, indices=indices)
