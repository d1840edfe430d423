"""Reindexing caches: ``reindex_cache_read`` / ``reindex_cache_write`` stage the single point
a block reads (writes) of a buffer through a cache of another storage scope whose layout is
an index map of the block's iterators, copied by a block over the block's own loops."""

from __future__ import annotations

from collections.abc import Callable

from tilewright.arith.analyzer import Analyzer
from tilewright.arith.int_set import eval_set
from tilewright.ir.buffer import Buffer, BufferRegion, decl_buffer
from tilewright.ir.expr import IntImm, PrimExpr, Var
from tilewright.ir.function import PrimFunc
from tilewright.ir.functor import collect_vars, substitute
from tilewright.ir.stmt import Block, BlockRealize, BufferStore, For, IterKind, IterVar, Stmt
from tilewright.schedule.dataflow import (
    body_items,
    check_reduction_in_scope,
    check_single_writer,
    scope_blocks,
    scope_path,
)
from tilewright.schedule.error import ScheduleError, register_rules
from tilewright.schedule.index_map import IndexMap
from tilewright.schedule.legality import check_storage_scope
from tilewright.schedule.primitives.caching import _buffer, _unique_name
from tilewright.schedule.primitives.reindex import (
    Reaccess,
    access_indices,
    check_flow,
    common_owner,
    copy_block,
    point,
    replace_regions,
    splice,
)
from tilewright.schedule.tree import Site

register_rules(
    {
        "single-point": (
            "reindex_cache_read and reindex_cache_write need the block to access the buffer "
            "at a single point (a region of extent 1 in every dimension)"
        ),
        "reindex-iters": (
            "a block iterator appears in the cache's indices (the index map of the block's "
            "iterators) exactly when it appears in the buffer's indices"
        ),
        "reindex-map": (
            "the index map sends the block's iterator domains to non-negative indices with "
            "constant bounds (the cache's shape)"
        ),
    }
)

Indices = tuple[PrimExpr, ...]


def reindex_cache_read(
    site: Site, index: int, scope: str, index_map: IndexMap
) -> tuple[PrimFunc, str]:
    """Copy the point the block reads of its ``index``-th read buffer into a new buffer
    ``<name>_<scope>`` at ``index_map(iterators)``; the copy block runs over the block's
    loops below its producer's (or at the start of the scope). Returns the function and
    the copy block's name.

    Example::

        sch.reindex_cache_read(block_C, 0, "shared", lambda i, j, k: (k, i))
        # for i, k: with T.block("A_shared"): A_shared[vk, vi] = A[vi, vk]
        # C reads A_shared[vk, vi]
    """
    primitive = "reindex_cache_read"
    block = site.block
    check_storage_scope(primitive, site, scope)
    buffer = _buffer(primitive, site, block.reads, index, "reads")
    check_flow(primitive, site, "read", buffer)
    old = _single_point(primitive, site, block.reads[index])
    access_indices(primitive, site, buffer)
    new, shape = _mapped(primitive, site, index_map)
    included = _check_iters(primitive, site, old, new)
    blocks = scope_blocks(scope_path(site))
    writers = [b for b in blocks if buffer in b.writes]
    if len(writers) > 1:
        raise ScheduleError(
            primitive,
            "single-writer",
            f"buffer {buffer.name!r} has {len(writers)} writers in the scope of block "
            f"{block.name!r}",
            site.func,
            block,
        )
    owner, position = site.scope_index(), 0
    if writers:
        owner, mine, theirs = common_owner(primitive, site, writers[0].path)
        if theirs > mine:
            raise ScheduleError(
                primitive,
                "data-flow",
                f"block {block.name!r} reads buffer {buffer.name!r} before block "
                f"{writers[0].block.name!r} writes it",
                site.func,
                block,
            )
        position = mine
    name = _unique_name(site.func, f"{buffer.name}_{scope}")
    cache = decl_buffer(shape, buffer.dtype, name, scope)
    stage = _stage(
        site, owner, included, name, lambda sub: BufferStore(cache, buffer.load(sub(old)), sub(new))
    )
    return splice(site, owner, _rewrite(block, buffer, cache, new), stage, position, [cache]), name


def reindex_cache_write(
    site: Site, index: int, scope: str, index_map: IndexMap
) -> tuple[PrimFunc, str]:
    """Make the block write the point it writes of its ``index``-th written buffer into a
    new buffer ``<name>_<scope>`` at ``index_map(iterators)``, copied back by a block over
    the block's loops, placed before the buffer's first later reader (at the end of the
    scope when there is none). Returns the function and the copy block's name.

    Example::

        sch.reindex_cache_write(block_C, 0, "local", lambda i, j, k: (j, i))
        # C writes C_local[vj, vi]; for i, j: C[v0, v1] = C_local[v1, v0]
    """
    primitive = "reindex_cache_write"
    block = site.block
    check_storage_scope(primitive, site, scope)
    buffer = _buffer(primitive, site, block.writes, index, "writes")
    spath = scope_path(site)
    blocks = scope_blocks(spath)
    check_single_writer(primitive, site, blocks, block)
    me = next(k for k, b in enumerate(blocks) if b.block is block)
    loops = {s.loop_var for s in blocks[me].path[len(spath) :] if isinstance(s, For)}
    check_reduction_in_scope(primitive, site, blocks[me].realize, loops)
    check_flow(primitive, site, "write", buffer)
    old = _single_point(primitive, site, block.writes[index])
    access_indices(primitive, site, buffer)
    new, shape = _mapped(primitive, site, index_map)
    included = _check_iters(primitive, site, old, new)
    readers = [b for b in blocks[me + 1 :] if buffer in b.reads]
    owner = site.scope_index()
    scope_block = site.path[owner]
    assert isinstance(scope_block, Block)
    position = len(body_items(scope_block))
    if readers:
        owner, _, position = common_owner(primitive, site, readers[0].path)
    name = _unique_name(site.func, f"{buffer.name}_{scope}")
    cache = decl_buffer(shape, buffer.dtype, name, scope)
    stage = _stage(
        site, owner, included, name, lambda sub: BufferStore(buffer, cache.load(sub(new)), sub(old))
    )
    return splice(site, owner, _rewrite(block, buffer, cache, new), stage, position, [cache]), name


def _single_point(primitive: str, site: Site, region: BufferRegion) -> Indices:
    if all(isinstance(r.extent, IntImm) and r.extent.value == 1 for r in region.region):
        return tuple(r.min for r in region.region)
    raise ScheduleError(
        primitive,
        "single-point",
        f"block {site.block.name!r} accesses a region of buffer {region.buffer.name!r} that "
        "is not a single point",
        site.func,
        site.block,
    )


def _mapped(primitive: str, site: Site, index_map: IndexMap) -> tuple[Indices, list[PrimExpr]]:
    """The cache's indices (the map of the block's iterators) and its shape (one past the
    largest index over the iterators' domains)."""
    block = site.block
    ana = Analyzer()
    new = tuple(ana.simplify(e) for e in index_map.map_indices([iv.var for iv in block.iter_vars]))
    domains = {iv.var: iv.dom for iv in block.iter_vars}
    shape: list[PrimExpr] = []
    for e in new:
        bounds = eval_set(e, domains, ana)
        low, high = bounds.min_value, bounds.max_value
        if not (isinstance(low, IntImm) and low.value >= 0 and isinstance(high, IntImm)):
            raise ScheduleError(
                primitive,
                "reindex-map",
                f"index map {index_map} gives block {block.name!r} the index {e.script()} "
                f"ranging over {bounds}",
                site.func,
                block,
            )
        shape.append(IntImm(high.value + 1, e.dtype))
    return new, shape


def _check_iters(primitive: str, site: Site, old: Indices, new: Indices) -> list[int]:
    """The positions of the iterators the indices use (the same in both)."""
    in_old, in_new = set(collect_vars(old)), set(collect_vars(new))
    used: list[int] = []
    for k, iv in enumerate(site.block.iter_vars):
        if (iv.var in in_old) != (iv.var in in_new):
            where, other = ("new", "old") if iv.var in in_new else ("old", "new")
            raise ScheduleError(
                primitive,
                "reindex-iters",
                f"iterator {iv.var.name!r} of block {site.block.name!r} appears in the {where} "
                f"indices {_text(new if where == 'new' else old)} but not in the {other} "
                f"indices {_text(old if where == 'new' else new)}",
                site.func,
                site.block,
            )
        if iv.var in in_new:
            used.append(k)
    return used


def _text(indices: Indices) -> str:
    return "[" + ", ".join(i.script() for i in indices) + "]"


def _stage(
    site: Site,
    owner: int,
    included: list[int],
    name: str,
    store: Callable[[Callable[[Indices], Indices]], BufferStore],
) -> Stmt:
    """The copy block over the block's iterators ``included`` and the loops between
    ``site.path[owner]`` and the block that drive them (fresh copies of both)."""
    realize = site.path[-2]
    assert isinstance(realize, BlockRealize)
    block = site.block
    values = [realize.iter_values[k] for k in included]
    predicate = realize.predicate
    trivial = isinstance(predicate, IntImm) and predicate.value == 1
    used = set(collect_vars(tuple(values))) | (set() if trivial else set(collect_vars(predicate)))
    below = [s for s in site.path[owner + 1 : -2] if isinstance(s, For)]
    copied = [f for f in below if f.loop_var in used]
    table: dict[Var, PrimExpr] = {
        f.loop_var: Var(f.loop_var.name, f.loop_var.dtype) for f in copied
    }
    iter_vars = []
    for k in included:
        iv = block.iter_vars[k]
        var = Var(iv.var.name, iv.var.dtype)
        table[iv.var] = var
        iter_vars.append(IterVar(var, iv.dom, IterKind.SPATIAL))
    loops = []
    for f in copied:
        loop_var = table[f.loop_var]
        assert isinstance(loop_var, Var)
        loops.append((loop_var, substitute(f.min, table), substitute(f.extent, table)))
    new_values = [substitute(v, table) for v in values]

    def sub(indices: Indices) -> Indices:
        return tuple(substitute(i, table) for i in indices)

    cond = None if trivial else substitute(predicate, table)
    return copy_block(name, iter_vars, new_values, store(sub), loops, cond)


def _rewrite(block: Block, old: Buffer, cache: Buffer, indices: Indices) -> Block:
    """The block accessing ``cache`` at ``indices`` where it accessed ``old``."""
    new = Reaccess(old, cache, indices).visit(block)
    assert isinstance(new, Block)  # the mutator rewrites accesses, not the block itself
    region = point(cache, indices)
    return new.replace(
        reads=replace_regions(new.reads, old, region),
        writes=replace_regions(new.writes, old, region),
    )
