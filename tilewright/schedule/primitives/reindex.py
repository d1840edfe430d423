"""Reindexing: ``reindex`` stages a buffer that a block reads (or writes) through a buffer
indexed by the block's own iterators, copied in right before the block's loop nest (or out
right after it). Also what the other reindexing primitives (``reindex_cache``,
``cache_inplace``, ``cache_index``) share: the indices a leaf block accesses a buffer at,
copy blocks whose regions are inferred as the parser infers them, and splicing a new stage
and the rewritten block into a scope at once."""

from __future__ import annotations

from collections.abc import Sequence

from tilewright.arith.analyzer import Analyzer
from tilewright.arith.region import block_access_regions
from tilewright.ir.buffer import Buffer, BufferRegion, decl_buffer
from tilewright.ir.dtype import dtype
from tilewright.ir.expr import BufferLoad, IntImm, PrimExpr, Range, Var
from tilewright.ir.function import PrimFunc
from tilewright.ir.functor import Mutator, Visitor, bound_vars, collect_vars, substitute
from tilewright.ir.stmt import (
    Block,
    BlockRealize,
    BufferStore,
    For,
    ForKind,
    IterKind,
    IterVar,
    SeqStmt,
    Stmt,
    seq,
)
from tilewright.ir.structural import structural_equal
from tilewright.schedule.dataflow import body_items
from tilewright.schedule.error import ScheduleError, register_rules
from tilewright.schedule.primitives.caching import _buffer, _unique_name
from tilewright.schedule.tree import Path, Site, rebuild, update, walk

register_rules(
    {
        "reindex-access": (
            "reindexing needs a leaf block that accesses the buffer only through loads and "
            "stores, all at the same indices, written with the block's iterators (no variable "
            "bound inside the block, no opaque use of the buffer's data or a view of it)"
        ),
    }
)


class _Accesses(Visitor):
    """The index tuples of the loads and stores of one buffer, and whether its data is used
    any other way."""

    def __init__(self, buffer: Buffer) -> None:
        self.buffer = buffer
        self.found: list[tuple[PrimExpr, ...]] = []
        self.opaque = False

    def visit_Buffer(self, node: Buffer) -> None:
        return  # a buffer's own fields (its data variable) are no use of it

    def visit_BufferLoad(self, node: BufferLoad) -> None:
        self.visit(node.indices)
        if node.buffer is self.buffer:
            self.found.append(node.indices)

    def visit_BufferStore(self, node: BufferStore) -> None:
        self.visit(node.value)
        self.visit(node.indices)
        if node.buffer is self.buffer:
            self.found.append(node.indices)

    def visit_Var(self, node: Var) -> None:
        if node is self.buffer.data:
            self.opaque = True


def access_indices(primitive: str, site: Site, buffer: Buffer) -> tuple[PrimExpr, ...]:
    """The one index tuple at which the block (a leaf) loads and stores ``buffer``.

    Example: ``B[vi, vj] = A[vj, vi] * 2`` gives ``(vj, vi)`` for ``A``.
    """
    block = site.block

    def refuse(why: str) -> ScheduleError:
        detail = f"block {block.name!r} {why}"
        return ScheduleError(primitive, "reindex-access", detail, site.func, block)

    inner = [p[-1] for p in walk(block) if isinstance(p[-1], BlockRealize)]
    if inner:
        raise refuse(f"holds block {inner[0].block.name!r}: it is not a leaf block")
    if any(m.source.buffer is buffer for m in block.match_buffers):
        raise refuse(f"matches a view of buffer {buffer.name!r}")
    walker = _Accesses(buffer)
    if block.init is not None:
        walker.visit(block.init)
    walker.visit(block.body)
    if walker.opaque:
        raise refuse(f"uses the data of buffer {buffer.name!r} other than by loads and stores")
    if not walker.found:
        raise refuse(f"has no load or store of buffer {buffer.name!r}")
    first = walker.found[0]
    for other in walker.found[1:]:
        if not structural_equal(first, other, map_free_vars=False):
            raise refuse(
                f"accesses buffer {buffer.name!r} at different indices "
                f"{_text(first)} and {_text(other)}"
            )
    local = set(bound_vars(block.body)) | (
        set(bound_vars(block.init)) if block.init is not None else set()
    )
    stray = [v for v in collect_vars(first) if v in local]
    if stray:
        raise refuse(
            f"indexes buffer {buffer.name!r} with {stray[0].name!r}, bound inside the block"
        )
    return first


def _text(indices: tuple[PrimExpr, ...]) -> str:
    from tilewright.ir.printer import script

    return "[" + ", ".join(script(i) for i in indices) + "]"


def top_item(site: Site) -> int:
    """The index in ``site.path`` of the statement of the scope's body that holds the block."""
    k = site.scope_index() + 1
    return k + 1 if isinstance(site.path[k], SeqStmt) else k


def check_loop_chain(primitive: str, site: Site) -> None:
    """The block's loops up to its scope each hold only the next one (and the innermost only
    the block): the block's nest can be staged as a whole."""
    path = site.path
    for k in range(top_item(site), len(path) - 2):
        node, child = path[k], path[k + 1]
        if not (isinstance(node, For) and node.body is child):
            what = f"loop {node.loop_var.name!r}" if isinstance(node, For) else "a statement"
            raise ScheduleError(
                primitive,
                "loop-chain",
                f"{what} above block {site.block.name!r} holds more than its loop nest",
                site.func,
                node,
            )


def copy_block(
    name: str,
    iter_vars: Sequence[IterVar],
    values: Sequence[PrimExpr],
    store: BufferStore,
    loops: Sequence[tuple[Var, PrimExpr, PrimExpr]],
    predicate: PrimExpr | None = None,
) -> Stmt:
    """``for var in range(min, min + extent): with T.block(name): ... store`` (loops outermost
    first); the block's regions are inferred as the parser infers them."""
    bare = Block(name, tuple(iter_vars), (), (), store)
    reads, writes = block_access_regions(bare)
    block = update(bare, reads=reads, writes=writes)
    cond = predicate if predicate is not None else IntImm(1, dtype("bool"))
    stmt: Stmt = BlockRealize(tuple(values), cond, block)
    for var, start, extent in reversed(loops):
        stmt = For(var, start, extent, ForKind.SERIAL, stmt)
    return stmt


def replace_regions(
    regions: tuple[BufferRegion, ...], old: Buffer, new: BufferRegion
) -> tuple[BufferRegion, ...]:
    """``regions`` with the region of ``old`` replaced by ``new``."""
    return tuple(new if r.buffer is old else r for r in regions)


def point(buffer: Buffer, indices: Sequence[PrimExpr]) -> BufferRegion:
    return BufferRegion(buffer, tuple(Range(i, IntImm(1, i.dtype)) for i in indices))


class Reaccess(Mutator):
    """Loads and stores of ``old`` become accesses of ``new`` at ``indices``."""

    def __init__(self, old: Buffer, new: Buffer, indices: tuple[PrimExpr, ...]) -> None:
        super().__init__()
        self.old, self.new, self.indices = old, new, indices

    def visit_BufferLoad(self, node: BufferLoad) -> PrimExpr:
        if node.buffer is self.old:
            return BufferLoad(self.new, self.indices)
        return self.generic_visit(node)

    def visit_BufferStore(self, node: BufferStore) -> Stmt:
        if node.buffer is self.old:
            return BufferStore(self.new, self.visit(node.value), self.indices)
        return self.generic_visit(node)


def splice(
    site: Site,
    owner: int,
    new_block: Stmt,
    stage: Stmt,
    position: int,
    alloc: Sequence[Buffer],
) -> PrimFunc:
    """The function with the block replaced by ``new_block``, ``stage`` inserted at
    ``position`` among the body statements of ``site.path[owner]`` (a loop or block above
    the block, at or below its scope), and ``alloc`` allocated in the scope block."""
    path = site.path
    node = path[owner]
    assert isinstance(node, For | Block)
    items = body_items(node)
    k = owner + 2 if isinstance(path[owner + 1], SeqStmt) else owner + 1
    index = next(i for i, s in enumerate(items) if s is path[k])
    items[index] = rebuild(path[k:], new_block)
    items.insert(position, stage)
    return in_scope(site, owner, update(node, body=seq(*items)), alloc)


def in_scope(site: Site, at: int, new: Stmt, alloc: Sequence[Buffer]) -> PrimFunc:
    """The function with ``site.path[at]`` (at or below the block's scope) replaced by
    ``new`` and ``alloc`` allocated in the scope block."""
    scope = site.scope_index()
    new_scope = rebuild(site.path[scope : at + 1], new)
    assert isinstance(new_scope, Block)
    new_scope = update(new_scope, alloc_buffers=(*new_scope.alloc_buffers, *alloc))
    return site.func.with_body(rebuild(site.path[: scope + 1], new_scope))


def fresh_name(func: PrimFunc, base: str, taken: set[str]) -> str:
    """A name from ``base`` that no block or buffer of ``func`` has, nor one in ``taken``
    (names chosen already for the same rewrite); it is added to ``taken``."""
    name, k = _unique_name(func, base), 0
    while name in taken:
        k += 1
        name = _unique_name(func, f"{base}_{k}")
    taken.add(name)
    return name


def reindex(site: Site, kind: str, index: int) -> tuple[PrimFunc, str]:
    """Stage the block's ``index``-th read (``kind="read"``) or written buffer through a new
    buffer ``<name>_reindex`` indexed by the block iterators its accesses use (in the
    block's order); returns the function and the new block's name.

    Example::

        sch.reindex(block_B, ("read", 0))
        # for i, j: with T.block("A_reindex"): A_reindex[v0, v1] = A[v1, v0]
        # for i, j: with T.block("B"): B[vi, vj] = A_reindex[vi, vj] * 2.0
    """
    block = site.block
    regions = block.reads if kind == "read" else block.writes
    buffer = _buffer("reindex", site, regions, index, f"{kind}s")
    indices = access_indices("reindex", site, buffer)
    check_flow("reindex", site, kind, buffer)
    check_loop_chain("reindex", site)
    ana = Analyzer()
    for iv in block.iter_vars:
        ana.bind(iv.var, iv.dom)
    simplified = tuple(ana.simplify(i) for i in indices)
    used = set(collect_vars(simplified))
    kept = [iv for iv in block.iter_vars if iv.var in used]

    name = _unique_name(site.func, f"{buffer.name}_reindex")
    shape = [ana.simplify(iv.dom.min + iv.dom.extent) for iv in kept]
    new = decl_buffer(shape, buffer.dtype, name, buffer.scope)
    fresh = {iv.var: Var(f"v{k}", iv.var.dtype) for k, iv in enumerate(kept)}
    new_vars = [IterVar(fresh[iv.var], iv.dom, IterKind.SPATIAL) for iv in kept]
    loops = [(Var(f"ax{k}", iv.var.dtype), iv.dom.min, iv.dom.extent) for k, iv in enumerate(kept)]
    mine = tuple(fresh[iv.var] for iv in kept)
    theirs = tuple(substitute(i, fresh) for i in simplified)
    if kind == "read":
        store = BufferStore(new, BufferLoad(buffer, theirs), mine)
    else:
        store = BufferStore(buffer, BufferLoad(new, mine), theirs)
    stage = copy_block(name, new_vars, [v for v, _, _ in loops], store, loops)

    own = tuple(iv.var for iv in kept)
    region = point(new, own)
    rewritten = Reaccess(buffer, new, own).visit(block)
    assert isinstance(rewritten, Block)  # the mutator rewrites accesses, not the block itself
    rewritten = update(
        rewritten,
        reads=replace_regions(rewritten.reads, buffer, region),
        writes=replace_regions(rewritten.writes, buffer, region),
    )
    scope = site.scope_index()
    node = site.path[scope]
    assert isinstance(node, Block)
    top = site.path[top_item(site)]
    position = next(i for i, s in enumerate(body_items(node)) if s is top)
    position += 0 if kind == "read" else 1
    return splice(site, scope, rewritten, stage, position, [new]), name


def check_flow(primitive: str, site: Site, kind: str, buffer: Buffer) -> None:
    """A staged input is not also written by the block, and a staged output is not read by
    a block without an init (which would read the old values): the copy would hide one access
    from the other."""
    block = site.block
    if kind == "read" and any(w.buffer is buffer for w in block.writes):
        what = "writes"
    elif kind == "write" and block.init is None and any(r.buffer is buffer for r in block.reads):
        what = "reads"
    else:
        return
    raise ScheduleError(
        primitive,
        "data-flow",
        f"block {block.name!r} also {what} buffer {buffer.name!r}, so a copy of it would "
        "change what the block computes",
        site.func,
        block,
    )


def common_owner(primitive: str, site: Site, other: Path) -> tuple[int, int, int]:
    """Where a stage goes between the block and another block of its scope: the index in
    ``site.path`` of their innermost common loop or block, and the positions in its body of
    the statements holding the block and the other block."""
    path = site.path
    depth = 0
    while depth < min(len(path), len(other)) and path[depth] is other[depth]:
        depth += 1
    owner = depth - 1
    if isinstance(path[owner], SeqStmt):
        owner -= 1
    node = path[owner]
    if not isinstance(node, For | Block) or owner < site.scope_index():
        raise ScheduleError(
            primitive,
            "data-flow",
            f"block {site.block.name!r} and the block it exchanges data with are not in one "
            "sequence of a loop or block",
            site.func,
            site.block,
        )
    items = body_items(node)
    k = owner + 2 if isinstance(path[owner + 1], SeqStmt) else owner + 1
    mine = next(i for i, s in enumerate(items) if s is path[k])
    theirs = next(i for i, s in enumerate(items) if s is other[k])
    return owner, mine, theirs
