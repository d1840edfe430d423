"""Inlining: substitute an elementwise producer into its consumers (``compute_inline``) or an
elementwise consumer into its producer (``reverse_compute_inline``)."""

from __future__ import annotations

import math

from tilewright.arith.analyzer import Analyzer
from tilewright.arith.int_set import eval_set
from tilewright.arith.iter_map import detect_iter_map
from tilewright.arith.region import block_access_regions
from tilewright.ir import op
from tilewright.ir.buffer import Buffer
from tilewright.ir.expr import BufferLoad, FloorDiv, FloorMod, IntImm, PrimExpr, Range, Var
from tilewright.ir.function import PrimFunc
from tilewright.ir.functor import Mutator, Visitor, collect_vars, post_order_visit, substitute
from tilewright.ir.stmt import Block, BlockRealize, BufferStore, IterKind, Stmt
from tilewright.ir.structural import structural_equal
from tilewright.schedule.dataflow import (
    ScopeBlock,
    check_single_writer,
    find,
    param_buffers,
    remove,
    scope_blocks,
    scope_path,
)
from tilewright.schedule.error import ScheduleError, register_rules
from tilewright.schedule.primitives.block_layout import _inverse  # the iter-map inverse
from tilewright.schedule.primitives.caching import rebuild_at
from tilewright.schedule.tree import Site, rebuild, update, walk

register_rules(
    {
        "opaque-access": (
            "an inlined buffer is accessed only by loads and stores, not viewed through "
            "T.match_buffer"
        )
    }
)


def _store(primitive: str, site: Site, block: Block, role: str) -> BufferStore:
    """The block's body as one store, for a spatial block without init."""
    problem = None
    if block.init is not None:
        problem = "is a reduction (it has an init)"
    elif any(iv.kind is not IterKind.SPATIAL for iv in block.iter_vars):
        problem = "has non-spatial iterators"
    elif not isinstance(block.body, BufferStore):
        problem = "is not a single buffer store"
    elif block.alloc_buffers or block.match_buffers:
        problem = "allocates or matches buffers"
    if problem is not None:
        raise ScheduleError(
            primitive,
            "inline-body",
            f"the {role} block {block.name!r} {problem}",
            site.func,
            block,
        )
    assert isinstance(block.body, BufferStore)
    return block.body


def _distinct_vars(indices: tuple[PrimExpr, ...], block: Block) -> list[Var] | None:
    own = {iv.var for iv in block.iter_vars}
    if not all(isinstance(i, Var) and i in own for i in indices):
        return None
    found = [i for i in indices if isinstance(i, Var)]
    return found if len(set(found)) == len(found) else None


def _unit_predicate(realize: BlockRealize) -> bool:
    p = realize.predicate
    return isinstance(p, IntImm) and p.value == 1


class _Loads(Visitor):
    def __init__(self, buffer: Buffer) -> None:
        self.buffer = buffer
        self.found: list[BufferLoad] = []

    def visit_BufferLoad(self, node: BufferLoad) -> None:
        self.generic_visit(node)
        if node.buffer is self.buffer:
            self.found.append(node)


class _Inline(Mutator):
    """Replaces each load of ``buffer`` by ``value`` with ``index_vars`` bound to the load's
    indices; recomputes the reads of the blocks it changes."""

    def __init__(self, buffer: Buffer, index_vars: list[Var], value: PrimExpr) -> None:
        super().__init__()
        self.buffer = buffer
        self.index_vars = index_vars
        self.value = value

    def visit_BufferLoad(self, node: BufferLoad) -> PrimExpr:
        new = self.generic_visit(node)
        assert isinstance(new, BufferLoad)
        if new.buffer is not self.buffer:
            return new
        return substitute(self.value, dict(zip(self.index_vars, new.indices)))

    def visit_Block(self, node: Block) -> Block:
        new = self.generic_visit(node)
        assert isinstance(new, Block)
        if new is node or all(r.buffer is not self.buffer for r in node.reads):
            return new
        reads, _ = block_access_regions(new)
        return update(new, reads=reads)


def _used(stmt: Stmt, buffer: Buffer) -> bool:
    found = _Loads(buffer)
    found.visit(stmt)
    if found.found:
        return True
    return any(isinstance(p[-1], BufferStore) and p[-1].buffer is buffer for p in walk(stmt))


def _drop_allocation(body: Stmt, buffer: Buffer) -> Stmt:
    """``body`` without ``buffer``'s allocation once nothing uses it."""
    for path in walk(body):
        node = path[-1]
        if isinstance(node, Block) and buffer in node.alloc_buffers:
            if _used(node.body, buffer) or (node.init is not None and _used(node.init, buffer)):
                return body
            kept = tuple(b for b in node.alloc_buffers if b is not buffer)
            return rebuild(path, update(node, alloc_buffers=kept))
    return body


def _check_output(primitive: str, site: Site, buffer: Buffer, block: Block) -> None:
    if buffer in param_buffers(site.func):
        raise ScheduleError(
            primitive,
            "output-block",
            f"buffer {buffer.name!r} is a parameter of the function; inlining would remove "
            "its writes",
            site.func,
            block,
        )


def _check_no_view(primitive: str, site: Site, buffer: Buffer) -> None:
    """No block views ``buffer`` through ``T.match_buffer``: loads through the view are not
    loads of ``buffer``, so inlining could not replace them (TVM: an opaque access)."""
    for path in walk(site.func.body):
        node = path[-1]
        if not isinstance(node, Block):
            continue
        for match in node.match_buffers:
            if match.source.buffer is buffer:
                raise ScheduleError(
                    primitive,
                    "opaque-access",
                    f"block {node.name!r} views buffer {buffer.name!r} as "
                    f"{match.buffer.name!r} through T.match_buffer",
                    site.func,
                    node,
                )


def _check_crossed(
    primitive: str,
    site: Site,
    moved: Block,
    blocks: list[ScopeBlock],
    lo: int,
    hi: int,
    inputs_only: bool = False,
) -> None:
    """The blocks strictly between positions ``lo`` and ``hi`` write nothing ``moved``
    reads and (unless ``inputs_only``) touch nothing it writes: its computation moves
    across them."""
    reads = {r.buffer for r in moved.reads}
    writes = set() if inputs_only else {r.buffer for r in moved.writes}
    for other in blocks[lo + 1 : hi]:
        clash = (other.writes & reads) | ((other.reads | other.writes) & writes)
        if clash:
            raise ScheduleError(
                primitive,
                "data-flow",
                f"block {other.block.name!r} between the producer and its consumer accesses "
                f"buffer {sorted(b.name for b in clash)[0]!r}",
                site.func,
                other.block,
            )


def compute_inline(site: Site) -> PrimFunc:
    """Replace every load of the block's output by the block's expression and remove it.

    Example::

        B[vi] = A[vi] * 2; C[vi] = B[vi] + 1   ->   C[vi] = A[vi] * 2 + 1
    """
    block = site.node
    assert isinstance(block, Block)
    realize = site.path[-2]
    assert isinstance(realize, BlockRealize)
    store = _store("compute_inline", site, block, "producer")
    index_vars = _distinct_vars(store.indices, block)
    loads = _Loads(store.buffer)
    loads.visit(store.value)
    if (
        index_vars is None
        or loads.found
        or set(collect_vars(store.value)) - set(index_vars) & {iv.var for iv in block.iter_vars}
    ):
        raise ScheduleError(
            "compute_inline",
            "inline-body",
            f"block {block.name!r} must store to distinct iterators, e.g. B[vi, vj] = f(vi, vj),"
            " with a value that uses only them and does not read the stored buffer",
            site.func,
            block,
        )
    buffer = store.buffer
    _check_output("compute_inline", site, buffer, block)
    _check_no_view("compute_inline", site, buffer)
    blocks = scope_blocks(scope_path(site))
    check_single_writer("compute_inline", site, blocks, block)
    me = find(blocks, block)
    readers = [k for k, b in enumerate(blocks) if buffer in b.reads]
    if readers:
        _check_crossed("compute_inline", site, block, blocks, me, max(readers), True)
    body = remove(site.func.body, realize)
    assert body is not None
    body = _Inline(buffer, index_vars, store.value).visit(body)
    return site.func.with_body(_drop_allocation(body, buffer))


def reverse_compute_inline(site: Site) -> PrimFunc:
    """Fold the block, an elementwise consumer of one producer's buffer, into that producer,
    which then writes the block's output directly; the block and the buffer go.

    As in TVM, the consumer may read the buffer through any one-to-one affine map of its
    iterators (``B[vi * 16 + vj, vk]``): each consumer iterator is recovered from the
    producer's store indices, and a producer that computes more than the consumer reads gets
    a ``T.where`` keeping only the elements the consumer read.

    Example::

        B[vi] = A[vi] * 2; C[vi] = B[vi] + 1   ->   C[vi] = A[vi] * 2 + 1 (in block B)
    """
    block = site.node
    assert isinstance(block, Block)
    realize = site.path[-2]
    assert isinstance(realize, BlockRealize)
    store = _store("reverse_compute_inline", site, block, "consumer")
    blocks = scope_blocks(scope_path(site))
    me = find(blocks, block)
    producers = [b for b in blocks if b.block is not block and b.writes & block_reads(block)]
    if len(producers) != 1 or len(producers[0].writes & block_reads(block)) != 1:
        raise ScheduleError(
            "reverse_compute_inline",
            "single-producer",
            f"block {block.name!r} must read the output of exactly one producer, not "
            f"{len(producers)}",
            site.func,
            block,
        )
    producer = producers[0]
    (buffer,) = tuple(producer.writes & block_reads(block))
    pstore = _store("reverse_compute_inline", site, producer.block, "producer")
    loads = _Loads(buffer)
    loads.visit(store.value)
    indices = tuple(loads.found[0].indices) if loads.found else ()
    same = bool(loads.found) and all(
        structural_equal(tuple(ld.indices), indices) for ld in loads.found
    )
    if not same or not _unit_predicate(realize) or pstore.buffer is not buffer:
        raise _body_error(site, block, buffer, "at one index tuple, with no predicate")
    mapping, guard = _invert_load(site, block, buffer, indices, producer.block, pstore)
    _check_output("reverse_compute_inline", site, buffer, block)
    others = [b for b in blocks if buffer in b.reads and b.block is not block]
    if others:
        raise ScheduleError(
            "reverse_compute_inline",
            "single-consumer",
            f"block {others[0].block.name!r} also reads buffer {buffer.name!r}",
            site.func,
            block,
        )
    check_single_writer("reverse_compute_inline", site, blocks, producer.block)
    _check_crossed("reverse_compute_inline", site, block, blocks, find(blocks, producer.block), me)
    ana = Analyzer()
    for iv in producer.block.iter_vars:
        ana.bind(iv.var, iv.dom)
    value = _Inline(buffer, [], pstore.value).visit(store.value)
    new_store = BufferStore(
        store.buffer,
        substitute(value, mapping),
        tuple(ana.simplify(substitute(i, mapping)) for i in store.indices),
    )
    new_block = update(producer.block, body=new_store)
    reads, writes = block_access_regions(new_block)
    new_block = update(new_block, reads=reads, writes=writes)
    old = producer.realize
    new_realize = update(old, block=new_block)
    if guard is not None:
        bindings = dict(zip((iv.var for iv in producer.block.iter_vars), old.iter_values))
        condition = substitute(guard, bindings)
        predicate = condition if _unit_predicate(old) else op.logical_and(old.predicate, condition)
        new_realize = update(new_realize, predicate=predicate)
    body = remove(site.func.body, realize)
    assert body is not None
    body = rebuild_at(body, old, new_realize)
    return site.func.with_body(_drop_allocation(body, buffer))


def _body_error(site: Site, block: Block, buffer: Buffer, how: str) -> ScheduleError:
    return ScheduleError(
        "reverse_compute_inline",
        "inline-body",
        f"block {block.name!r} must read {buffer.name!r} {how} (e.g. C[vi, vj] = "
        "f(B[vi, vj]) or C[vi, vj, vk] = f(B[vi * 16 + vj, vk])): the indices must be a "
        "bijective affine map of its iterators",
        site.func,
        block,
    )


def _invert_load(
    site: Site,
    block: Block,
    buffer: Buffer,
    indices: tuple[PrimExpr, ...],
    producer: Block,
    pstore: BufferStore,
) -> tuple[dict[Var, PrimExpr], PrimExpr | None]:
    """Each consumer iterator as an expression of the producer's store indices (the load's
    indices, a one-to-one affine map of the consumer's iterators, inverted), and the condition
    on the producer's iterators under which the element it stores is one the consumer read
    (None when always)."""
    dom = {iv.var: iv.dom for iv in block.iter_vars}
    result = detect_iter_map(indices, dom, check_level="bijective")
    padded = _padded_domain(indices, dom) if not result else {}
    if padded:
        # Injective but not dividing (B[vi // 16, vi % 16] over vi < 127): invert over the
        # padded domain (vi < 128) and keep only the producer's elements inside the real one.
        retry = detect_iter_map(indices, {**dom, **padded}, check_level="bijective")
        result = retry if retry else result
    if not result:
        raise _body_error(site, block, buffer, f"one to one ({'; '.join(result.errors)})")
    ana = Analyzer()
    pdom = {iv.var: iv.dom for iv in producer.iter_vars}
    for var, rng in pdom.items():
        ana.bind(var, rng)
    holders: list[Var] = []
    shifted: dict[Var, PrimExpr] = {}
    conditions: list[PrimExpr] = []
    dims = []
    for total, index in zip(result.indices, pstore.indices):
        base = _expr(total.base, index)
        if not total.args:
            conditions.append(op.eq(index, base))
            continue
        split = total.args[0]
        if len(total.args) != 1 or split.scale != 1:
            raise _body_error(site, block, buffer, "densely (a strided index has no inverse)")
        holder = Var(f"ph_{len(holders)}", index.dtype)
        holders.append(holder)
        dims.append(total)
        shifted[holder] = op.sub(index, base)
        extent = _expr(split.extent, index)
        conditions.append(op.ge(index, base))
        conditions.append(op.lt(index, op.add(base, extent)))
        _check_cover(site, block, buffer, producer, index, (base, extent), pdom, ana)
    inverse = _inverse(dims, holders)
    mapping: dict[Var, PrimExpr] = {}
    for iv in block.iter_vars:
        value = inverse.get(iv.var)
        if value is None:
            if not (isinstance(iv.dom.extent, IntImm) and iv.dom.extent.value == 1):
                raise _body_error(site, block, buffer, f"using iterator {iv.var.name!r}")
            value = iv.dom.min
        else:
            value = op.add(substitute(value, shifted), iv.dom.min)
        mapping[iv.var] = ana.simplify(value)
        if result and iv.var in padded:
            conditions.append(op.lt(mapping[iv.var], op.add(iv.dom.min, iv.dom.extent)))
    guard: PrimExpr | None = None
    for cond in (ana.simplify(c) for c in conditions):
        if not (isinstance(cond, IntImm) and cond.value == 1):
            guard = cond if guard is None else op.logical_and(guard, cond)
    return mapping, guard


def _padded_domain(indices: tuple[PrimExpr, ...], dom: dict[Var, Range]) -> dict[Var, Range]:
    """The iterators under a constant ``//`` or ``%`` in ``indices`` whose extent that divisor
    (the lcm of all of them) does not divide, each with its extent rounded up to a multiple."""
    divisors: list[int] = []
    inside: set[Var] = set()

    def note(node: object) -> None:
        if isinstance(node, FloorDiv | FloorMod) and isinstance(node.b, IntImm):
            divisors.append(node.b.value)
            inside.update(collect_vars(node.a))

    post_order_visit(indices, note)
    if not divisors or any(d <= 0 for d in divisors):
        return {}
    unit = math.lcm(*divisors)
    padded: dict[Var, Range] = {}
    for var in inside & set(dom):
        rng = dom[var]
        if not (isinstance(rng.extent, IntImm) and isinstance(rng.min, IntImm)):
            continue
        extent = rng.extent.value
        if extent % unit:
            padded[var] = Range(rng.min, op.const(-(-extent // unit) * unit, rng.extent.dtype))
    return padded


def _expr(value: int | PrimExpr, like: PrimExpr) -> PrimExpr:
    return value if isinstance(value, PrimExpr) else op.const(value, like.dtype)


def _check_cover(
    site: Site,
    block: Block,
    buffer: Buffer,
    producer: Block,
    index: PrimExpr,
    window: tuple[PrimExpr, PrimExpr],
    pdom: dict[Var, Range],
    ana: Analyzer,
) -> None:
    """The producer stores every element the consumer reads along this dimension, the
    ``(base, extent)`` window (refused only when provably not, as TVM does)."""
    base, extent = window
    span = eval_set(index, pdom, ana)
    low, high = span.min_value, span.max_value
    short = (low is not None and ana.can_prove(op.gt(low, base))) or (
        high is not None and ana.can_prove(op.lt(high, op.sub(op.add(base, extent), 1)))
    )
    if short:
        raise ScheduleError(
            "reverse_compute_inline",
            "inline-body",
            f"block {producer.name!r} stores {buffer.name!r} at {index} over [{low}, {high}], "
            f"less than block {block.name!r} reads; the iter domains of the inlined block "
            "should be covered by the producer block",
            site.func,
            block,
        )


def block_reads(block: Block) -> set[Buffer]:
    return {r.buffer for r in block.reads}
