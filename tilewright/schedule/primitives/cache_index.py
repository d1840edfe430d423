"""``cache_index``: precompute the pure expressions of a block's iterators that its stores
compute (index arithmetic, above all) into buffers, filled by blocks placed before the
block's loop nest; the block then loads them.

Candidates are found as TVM's common-subexpression tools find them: the largest eligible
sub-expressions of each store (pure, not a variable or constant, no memory access), counted
up to simplification; one occurring fewer than ``cse_thresh`` times hands its count down to
its own largest eligible parts. Those of the store's value that reach the threshold are
cached, the most complex first.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from tilewright.arith.analyzer import Analyzer
from tilewright.arith.int_set import eval_set
from tilewright.ir import intrinsics
from tilewright.ir.buffer import Buffer, decl_buffer
from tilewright.ir.expr import (
    BufferLoad,
    Call,
    FloatImm,
    IntImm,
    Let,
    PrimExpr,
    Range,
    StringImm,
    Var,
)
from tilewright.ir.function import PrimFunc
from tilewright.ir.functor import Mutator, collect_vars, substitute
from tilewright.ir.stmt import Block, BlockRealize, BufferStore, For, IterKind, IterVar, Stmt, seq
from tilewright.ir.structural import structural_equal
from tilewright.schedule.dataflow import body_items
from tilewright.schedule.error import ScheduleError, register_rules
from tilewright.schedule.legality import check_storage_scope
from tilewright.schedule.primitives.reindex import copy_block, fresh_name, point, splice, top_item
from tilewright.schedule.tree import Site, children

register_rules(
    {
        "cache-index": (
            "cache_index precomputes expressions of block iterators bound to loops between the "
            "block and its scope, whose ranges are constant and whose bindings are not negative"
        ),
    }
)


@dataclass
class _Entry:
    expr: PrimExpr
    norm: PrimExpr
    count: int


def cache_index(site: Site, scope: str, cse_thresh: int) -> tuple[PrimFunc, list[str]]:
    """Precompute the candidate expressions of the block's stores into buffers
    ``index_var_<k>`` of ``scope`` (indexed by the iterators each uses), filled by blocks
    ``index_<k>`` before the block's loop nest; returns the function and those blocks'
    names (none, and the function unchanged, when nothing qualifies).

    Example::

        sch.cache_index(block_A, "global")
        # index_var_0[v0, v1] = v0 // 4 + v1 // 4
        # B[n, c, vi, vj] = A[n, c, index_var_0[vi, vj], index_var_1[vj]]
    """
    check_storage_scope("cache_index", site, scope)
    block = site.block
    if site.scope_index() < 0:
        raise ScheduleError(
            "cache_index", "root-block", "the root block has no scope to fill index buffers in"
        )
    iterators = {iv.var for iv in block.iter_vars}
    stores = _own_stores(block)
    chosen: list[PrimExpr] = []
    for store in stores:
        for expr in _candidates(store, iterators, cse_thresh):
            if not any(_same(expr, c) for c in chosen):
                chosen.append(expr)
        chosen.sort(key=_complexity, reverse=True)
    if not chosen:
        return site.func, []

    realize = site.path[-2]
    assert isinstance(realize, BlockRealize)
    binding = dict(zip((iv.var for iv in block.iter_vars), realize.iter_values))
    loops = {s.loop_var: s for s in site.path[site.scope_index() : -2] if isinstance(s, For)}
    stages: list[Stmt] = []
    buffers: list[Buffer] = []
    names: list[str] = []
    loads: list[tuple[PrimExpr, BufferLoad]] = []
    taken: set[str] = set()
    for k, expr in enumerate(chosen):
        own = collect_vars(expr)
        shape = [_extent(site, v, binding[v], loops) for v in own]
        buffer = decl_buffer(
            shape, expr.dtype, fresh_name(site.func, f"index_var_{k}", taken), scope
        )
        name = fresh_name(site.func, f"index_{k}", taken)
        used = collect_vars(tuple(binding[v] for v in own))
        fresh_loops = {v: Var(f"ax{j}", v.dtype) for j, v in enumerate(used)}
        fresh = {v: Var(f"v{i}", v.dtype) for i, v in enumerate(own)}
        iter_vars = [
            IterVar(fresh[v], Range(IntImm(0, v.dtype), s), IterKind.SPATIAL)
            for v, s in zip(own, shape)
        ]
        values = [substitute(binding[v], fresh_loops) for v in own]
        index = tuple(fresh[v] for v in own)
        store = BufferStore(buffer, substitute(expr, fresh), index)
        nest = [(fresh_loops[v], loops[v].min, loops[v].extent) for v in used]
        stages.append(copy_block(name, iter_vars, values, store, nest))
        buffers.append(buffer)
        names.append(name)
        loads.append((expr, BufferLoad(buffer, tuple(own))))

    new_block = _Replace(loads).visit(block)
    assert isinstance(new_block, Block)  # the mutator rewrites stores, not the block itself
    new_block = new_block.replace(
        reads=(*new_block.reads, *(point(load.buffer, load.indices) for _, load in loads))
    )
    scope_index = site.scope_index()
    scope_block = site.path[scope_index]
    assert isinstance(scope_block, Block)
    top = site.path[top_item(site)]
    position = next(i for i, s in enumerate(body_items(scope_block)) if s is top)
    return splice(site, scope_index, new_block, seq(*stages), position, buffers), names


def _own_stores(block: Block) -> list[BufferStore]:
    """The stores of the block itself (init first), not of the blocks nested in it."""
    found: list[BufferStore] = []

    def visit(stmt: Stmt) -> None:
        if isinstance(stmt, BufferStore):
            found.append(stmt)
        elif not isinstance(stmt, BlockRealize):
            for child in children(stmt):
                visit(child)

    for part in (block.init, block.body):
        if part is not None:
            visit(part)
    return found


def _extent(site: Site, var: Var, value: PrimExpr, loops: dict[Var, For]) -> PrimExpr:
    """One past the largest value the binding of iterator ``var`` takes."""

    def refuse(why: str) -> ScheduleError:
        return ScheduleError(
            "cache_index",
            "cache-index",
            f"iterator {var.name!r} of block {site.block.name!r} is bound to {value.script()}, "
            f"{why}",
            site.func,
            site.block,
        )

    domains: dict[Var, Range] = {}
    for v in collect_vars(value):
        loop = loops.get(v)
        if loop is None:
            raise refuse(f"which uses {v.name!r}, not a loop between the block and its scope")
        if not (isinstance(loop.min, IntImm) and isinstance(loop.extent, IntImm)):
            raise refuse(f"over loop {v.name!r} of a range that is not constant")
        domains[v] = Range(loop.min, loop.extent)
    bounds = eval_set(value, domains, Analyzer())
    low, high = bounds.min_value, bounds.max_value
    if not (isinstance(low, IntImm) and low.value >= 0 and isinstance(high, IntImm)):
        raise refuse(f"ranging over {bounds}")
    return IntImm(high.value + 1, var.dtype)


def _candidates(store: BufferStore, iterators: set[Var], thresh: int) -> list[PrimExpr]:
    """The expressions of one store to cache, in post-order of its value."""
    ana = Analyzer()
    table: list[_Entry] = []

    def add(expr: PrimExpr, count: int) -> None:
        norm = ana.simplify(expr)
        for entry in table:
            if structural_equal(entry.norm, norm, map_free_vars=False):
                entry.count += count
                return
        table.append(_Entry(expr, norm, count))

    for expr in (store.value, *store.indices):
        for found in _largest(expr, iterators):
            add(found, 1)
    k = 0
    while k < len(table):  # the table grows while it is read, as TVM's does
        entry = table[k]
        if entry.count < thresh:
            for child in _subexprs(entry.expr):
                for found in _largest(child, iterators):
                    add(found, entry.count)
        k += 1
    kept = [e for e in table if e.count >= thresh]
    result: list[PrimExpr] = []
    for node in _post_order(store.value):
        if isinstance(node, Var | IntImm | FloatImm | StringImm):
            continue
        norm = ana.simplify(node)
        for entry in kept:
            same = structural_equal(entry.norm, norm, map_free_vars=False)
            if same and all(r is not entry.expr for r in result):
                result.append(entry.expr)
    return result


def _eligible(expr: PrimExpr, iterators: set[Var]) -> bool:
    """A pure scalar computation of the block's iterators, worth a buffer."""
    if isinstance(expr, Var | IntImm | FloatImm | StringImm):
        return False
    kind = expr.dtype
    if kind.is_vector or not (kind.is_integer or kind.is_float):
        return False
    found = list(collect_vars(expr))
    if not found or any(v not in iterators for v in found):
        return False
    for node in _post_order(expr):
        if isinstance(node, BufferLoad | Let) or node.dtype.is_vector:
            return False
        if isinstance(node, Call):
            intrinsic = intrinsics.lookup_or_none(node.op)
            if intrinsic is None or intrinsic.effect is not intrinsics.Effect.PURE:
                return False
    return True


def _largest(expr: PrimExpr, iterators: set[Var]) -> Iterator[PrimExpr]:
    """The largest eligible sub-expressions of ``expr``, left to right."""
    if _eligible(expr, iterators):
        yield expr
        return
    for child in _subexprs(expr):
        yield from _largest(child, iterators)


def _subexprs(expr: PrimExpr) -> list[PrimExpr]:
    return [c for c in expr.children() if isinstance(c, PrimExpr)]


def _post_order(expr: PrimExpr) -> Iterator[PrimExpr]:
    for child in _subexprs(expr):
        yield from _post_order(child)
    yield expr


def _complexity(expr: PrimExpr) -> int:
    return sum(1 for _ in _post_order(expr))


def _same(a: PrimExpr, b: PrimExpr) -> bool:
    ana = Analyzer()
    return structural_equal(ana.simplify(a), ana.simplify(b), map_free_vars=False)


class _Replace(Mutator):
    """In stores, each expression equal (up to simplification) to a cached one becomes a
    load of its buffer, the larger expressions first."""

    def __init__(self, loads: list[tuple[PrimExpr, BufferLoad]]) -> None:
        super().__init__()
        self.loads = loads
        self.ana = Analyzer()

    def visit_BlockRealize(self, node: BlockRealize) -> Stmt:
        return node  # a nested block's stores are its own

    def visit_BufferStore(self, node: BufferStore) -> Stmt:
        new: Stmt = node
        for expr, load in self.loads:
            new = _Swap(self.ana.simplify(expr), load, self.ana).visit(new)
        return new


class _Swap(Mutator):
    def __init__(self, norm: PrimExpr, load: BufferLoad, ana: Analyzer) -> None:
        super().__init__()
        self.norm, self.load, self.ana = norm, load, ana

    def visit_PrimExpr(self, node: PrimExpr) -> PrimExpr:
        leaf = isinstance(node, Var | IntImm | FloatImm | StringImm | BufferLoad)
        if not leaf and structural_equal(self.ana.simplify(node), self.norm, map_free_vars=False):
            return self.load
        return self.generic_visit(node)
