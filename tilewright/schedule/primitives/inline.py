"""Inlining: substitute an elementwise producer into its consumers (``compute_inline``) or an
elementwise consumer into its producer (``reverse_compute_inline``)."""

from __future__ import annotations

from tilewright.arith.region import block_access_regions
from tilewright.ir.buffer import Buffer
from tilewright.ir.expr import BufferLoad, IntImm, PrimExpr, Range, Var
from tilewright.ir.function import PrimFunc
from tilewright.ir.functor import Mutator, Visitor, collect_vars, substitute
from tilewright.ir.stmt import Block, BlockRealize, BufferStore, IterKind, Stmt
from tilewright.schedule.dataflow import (
    ScopeBlock,
    check_single_writer,
    find,
    param_buffers,
    remove,
    scope_blocks,
    scope_path,
)
from tilewright.schedule.error import ScheduleError
from tilewright.schedule.primitives.caching import rebuild_at
from tilewright.schedule.tree import Site, rebuild, update, walk


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
    index_vars = _distinct_vars(loads.found[0].indices, block) if loads.found else None
    same = (
        all(tuple(ld.indices) == tuple(loads.found[0].indices) for ld in loads.found)
        and index_vars is not None
    )
    if (
        not same
        or set(collect_vars((store.indices, store.value)))
        & {iv.var for iv in block.iter_vars} - set(index_vars or ())
        or not _unit_predicate(realize)
        or pstore.buffer is not buffer
    ):
        raise ScheduleError(
            "reverse_compute_inline",
            "inline-body",
            f"block {block.name!r} must read {buffer.name!r} at its iterators only "
            "(e.g. C[vi, vj] = f(B[vi, vj])), with no predicate",
            site.func,
            block,
        )
    assert index_vars is not None
    _check_same_domain(site, block, index_vars, producer.block, pstore)
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
    mapping = dict(zip(index_vars, pstore.indices))
    value = _Inline(buffer, [], pstore.value).visit(store.value)
    new_store = BufferStore(
        store.buffer,
        substitute(value, mapping),
        tuple(substitute(i, mapping) for i in store.indices),
    )
    new_block = update(producer.block, body=new_store)
    reads, writes = block_access_regions(new_block)
    new_block = update(new_block, reads=reads, writes=writes)
    body = remove(site.func.body, realize)
    assert body is not None
    body = rebuild_at(body, producer.block, new_block)
    return site.func.with_body(_drop_allocation(body, buffer))


def _check_same_domain(
    site: Site, block: Block, index_vars: list[Var], producer: Block, pstore: BufferStore
) -> None:
    """The consumer runs exactly once per element the producer stores: the producer stores
    at distinct iterators whose domains equal the consumer's iterators reading them."""
    stored = _distinct_vars(pstore.indices, producer)
    domains = {iv.var: iv.dom for iv in (*block.iter_vars, *producer.iter_vars)}
    same = stored is not None and all(
        _same_range(domains[c], domains[p]) for c, p in zip(index_vars, stored)
    )
    if not same:
        raise ScheduleError(
            "reverse_compute_inline",
            "inline-body",
            f"block {producer.name!r} must store at distinct "
            f"iterators over the domains of block {block.name!r}'s iterators",
            site.func,
            block,
        )


def _same_range(a: Range, b: Range) -> bool:
    return all(
        isinstance(x, IntImm) and isinstance(y, IntImm) and x.value == y.value
        for x, y in ((a.min, b.min), (a.extent, b.extent))
    )


def block_reads(block: Block) -> set[Buffer]:
    return {r.buffer for r in block.reads}
