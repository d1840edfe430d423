"""Caching: stage a buffer through a copy in another storage scope (``cache_read``,
``cache_write``), change an allocated buffer's scope (``set_scope``) and pad its rows
(``storage_align``)."""

from __future__ import annotations

from tilewright.arith.analyzer import Analyzer
from tilewright.ir import op
from tilewright.ir.buffer import Buffer, BufferRegion, decl_buffer
from tilewright.ir.expr import IntImm, PrimExpr, Range, Var
from tilewright.ir.function import PrimFunc
from tilewright.ir.functor import Mutator
from tilewright.ir.stmt import (
    Block,
    BlockRealize,
    BufferStore,
    For,
    ForKind,
    IterKind,
    IterVar,
    Stmt,
    attrs,
    seq,
)
from tilewright.schedule.dataflow import (
    ScopeBlock,
    body_items,
    check_reduction_in_scope,
    check_single_writer,
    contains,
    param_buffers,
    scope_blocks,
    scope_path,
)
from tilewright.schedule.error import ScheduleError
from tilewright.schedule.legality import check_storage_scope
from tilewright.schedule.region import access_regions, clip, interval_range, relax_region
from tilewright.schedule.tree import Path, Site, rebuild, update, walk


class SwapBuffers(Mutator):
    """Replaces buffers by others everywhere in a tree (loads, stores, regions)."""

    def __init__(self, table: dict[Buffer, Buffer]) -> None:
        super().__init__()
        self.buffer_map = dict(table)


def swap(tree: Stmt, table: dict[Buffer, Buffer]) -> Stmt:
    new = SwapBuffers(table).visit(tree)
    assert isinstance(new, Stmt)
    return new


def _buffer(primitive: str, site: Site, regions: tuple[BufferRegion, ...], index: int, kind: str):
    block = site.node
    assert isinstance(block, Block)
    if not isinstance(index, int) or not 0 <= index < len(regions):
        raise ScheduleError(
            primitive,
            "buffer-index",
            f"block {block.name!r} {kind} {len(regions)} buffer(s); index {index!r} is out of "
            "range",
            site.func,
            block,
        )
    return regions[index].buffer


def _unique_name(func: PrimFunc, base: str) -> str:
    names = {p[-1].name for p in walk(func.body) if isinstance(p[-1], Block)}
    names |= {b.name for b in _all_buffers(func)}
    name, k = base, 0
    while name in names:
        k += 1
        name = f"{base}_{k}"
    return name


def _all_buffers(func: PrimFunc) -> list[Buffer]:
    found = [b for _, b in func.buffer_map]
    for path in walk(func.body):
        if isinstance(path[-1], Block):
            found.extend(path[-1].alloc_buffers)
    return found


def _copy_nest(name: str, src: Buffer, dst: Buffer, region: list[Range], anchor: Path) -> Stmt:
    """``for ax..: with T.block(name): v.. = region.min + ax..; dst[v..] = src[v..]``, guarded
    by a predicate where the region may leave the buffer (its writer had one)."""
    ana = Analyzer()
    for s in anchor:
        if isinstance(s, For):
            ana.bind(s.loop_var, Range(s.min, s.extent))
        elif isinstance(s, Block):
            for iv in s.iter_vars:
                ana.bind(iv.var, iv.dom)
    conditions: list[PrimExpr] = []
    loops: list[tuple[Var, PrimExpr]] = []
    iter_vars: list[IterVar] = []
    values: list[PrimExpr] = []
    for d, (rng, extent) in enumerate(zip(region, src.shape)):
        var = Var(f"v{d}", extent.dtype)
        iter_vars.append(IterVar(var, Range(IntImm(0, extent.dtype), extent), IterKind.SPATIAL))
        unit = isinstance(rng.extent, IntImm) and rng.extent.value == 1
        if unit:
            value = rng.min
        else:
            loop_var = Var(f"ax{len(loops)}", extent.dtype)
            loops.append((loop_var, rng.extent))
            zero = isinstance(rng.min, IntImm) and rng.min.value == 0
            value = loop_var if zero else op.add(rng.min, loop_var)
        values.append(value)
        if not ana.can_prove(op.ge(rng.min, 0)):
            conditions.append(op.ge(value, 0))
        if not ana.can_prove(op.le(op.add(rng.min, rng.extent), extent)):
            conditions.append(op.lt(value, extent))
    index = tuple(iv.var for iv in iter_vars)
    point = tuple(Range(v, IntImm(1, v.dtype)) for v in index)
    block = Block(
        name,
        tuple(iter_vars),
        (BufferRegion(src, point),),
        (BufferRegion(dst, point),),
        BufferStore(dst, src.load(index), index),
    )
    predicate: PrimExpr = IntImm(1, _bool())
    for cond in conditions:
        predicate = cond if isinstance(predicate, IntImm) else op.logical_and(predicate, cond)
    stmt: Stmt = BlockRealize(tuple(values), predicate, block)
    for var, extent in reversed(loops):
        stmt = For(var, IntImm(0, var.dtype), extent, ForKind.SERIAL, stmt)
    return stmt


def _bool():
    from tilewright.ir.dtype import dtype

    return dtype("bool")


def _region_at(
    blocks: list[ScopeBlock], buffer: Buffer, anchor: Stmt, writes: bool
) -> list[Range] | None:
    """The region of ``buffer`` the blocks access below ``anchor``, their loops relaxed."""
    regions = []
    dom: dict[Var, Range] = {}
    for b in blocks:
        found = access_regions(b.realize, buffer, reads=not writes)
        start = next(i for i, s in enumerate(b.path) if s is anchor)
        for s in b.path[start + 1 :]:
            if isinstance(s, For):
                dom[s.loop_var] = Range(s.min, s.extent)
        regions.extend(found)
    ana = Analyzer()
    relaxed = relax_region(regions, dom, ana)
    if relaxed is None:
        return None
    whole = [Range(IntImm(0, s.dtype), s) for s in buffer.shape]
    ranges = [interval_range(clip(r, d, ana), ana) for r, d in zip(relaxed, whole)]
    bounded = [r for r in ranges if r is not None and isinstance(r.extent, IntImm)]
    if len(bounded) != len(ranges):
        return [Range(IntImm(0, s.dtype), s) for s in buffer.shape]
    return bounded


def _anchor(scope: Path, writer: ScopeBlock, readers: list[ScopeBlock]) -> Path:
    """The path to the deepest loop (or the scope block) above the writer and every reader."""
    best = scope
    if not readers:
        return best
    for k in range(len(scope), len(writer.path) - 1):
        node = writer.path[k]
        if isinstance(node, For) and all(r.under(node) for r in readers):
            best = writer.path[: k + 1]
    return best


def _insert(
    func: PrimFunc, anchor: Path, nest: Stmt, after: Stmt | None, readers: list[ScopeBlock]
) -> PrimFunc:
    """``nest`` into the body of the loop or block at the end of ``anchor``: after the item
    holding ``after`` (at the start when None)."""
    node = anchor[-1]
    assert isinstance(node, For | Block)
    items = body_items(node)
    index = 0
    if after is not None:
        index = next(i for i, item in enumerate(items) if contains(item, after)) + 1
    for r in readers:
        if any(contains(item, r.realize) for item in items[:index]):
            raise ScheduleError(
                "cache_write",
                "data-flow",
                f"block {r.block.name!r} reads the buffer in the same loop nest as its writer",
                func,
                r.block,
            )
    new_node = update(node, body=seq(*items[:index], nest, *items[index:]))
    return func.with_body(rebuild(anchor, new_node))


def cache_read(
    site: Site, index: int, scope: str, consumers: list[Site] | None
) -> tuple[PrimFunc, str]:
    """Copy the block's ``index``-th read buffer into a new buffer of ``scope`` and make its
    consumers read the copy; returns the function and the copy block's name.

    Example::

        sch.cache_read(block_C, 0, "shared")   # A_shared[v0] = A[v0]; C reads A_shared
    """
    block = site.node
    assert isinstance(block, Block)
    check_storage_scope("cache_read", site, scope)
    buffer = _buffer("cache_read", site, block.reads, index, "reads")
    spath = scope_path(site)
    blocks = scope_blocks(spath)
    writers = [b for b in blocks if buffer in b.writes]
    if consumers is None:
        readers = [b for b in blocks if buffer in b.reads and buffer not in b.writes]
    else:
        readers = []
        for c in consumers:
            match = [b for b in blocks if b.block is c.node]
            if not match:
                raise ScheduleError(
                    "cache_read",
                    "same-scope",
                    f"consumer block {c.block.name!r} is not in the scope of block {block.name!r}",
                    site.func,
                    c.node,
                )
            readers.extend(match)
    order = {id(b.block): k for k, b in enumerate(blocks)}
    for r in readers:
        if buffer not in r.reads:
            raise ScheduleError(
                "cache_read",
                "argument",
                f"consumer block {r.block.name!r} does not read buffer {buffer.name!r}",
                site.func,
                r.block,
            )
        if writers and order[id(r.block)] < order[id(writers[0].block)]:
            raise ScheduleError(
                "cache_read",
                "data-flow",
                f"block {r.block.name!r} reads buffer {buffer.name!r} before block "
                f"{writers[0].block.name!r} writes it",
                site.func,
                r.block,
            )
        if buffer in r.writes:
            raise ScheduleError(
                "cache_read",
                "data-flow",
                f"block {r.block.name!r} both reads and writes buffer {buffer.name!r}",
                site.func,
                r.block,
            )
    if len(writers) > 1:
        raise ScheduleError(
            "cache_read",
            "single-writer",
            f"buffer {buffer.name!r} has {len(writers)} writers in the scope",
            site.func,
            block,
        )
    name = _unique_name(site.func, f"{buffer.name}_{scope}")
    cache = decl_buffer(buffer.shape, buffer.dtype, name, scope)
    if writers:
        anchor = _anchor(spath, writers[0], readers)
        region = _region_at(writers, buffer, anchor[-1], writes=True)
        after: Stmt | None = writers[0].realize
    else:
        # As in TVM: an input of the scope is copied at the start of the scope block, the
        # region the scope block declares it reads (the whole buffer at the function's root).
        anchor, after = spath, None
        scope_block = spath[-1]
        assert isinstance(scope_block, Block)
        declared = [r for r in scope_block.reads if r.buffer is buffer]
        region = (
            list(declared[0].region)
            if declared
            else [Range(IntImm(0, s.dtype), s) for s in buffer.shape]
        )
    assert region is not None
    nest = _copy_nest(name, buffer, cache, region, anchor)
    func = site.func
    body = func.body
    for r in readers:
        body = rebuild_at(body, r.realize, swap(r.realize, {buffer: cache}))
    func = func.with_body(body)
    func = _insert(func, _refind(func, anchor), nest, after, [])
    return _allocate(func, spath, cache), name


def cache_write(site: Site, index: int, scope: str) -> tuple[PrimFunc, str]:
    """Make the block write its ``index``-th output into a new buffer of ``scope``, copied
    back by a new block right after it; returns the function and the copy block's name.

    Example::

        sch.cache_write(block_C, 0, "local")   # C computes C_local; C[v0, v1] = C_local[v0, v1]
    """
    block = site.node
    assert isinstance(block, Block)
    check_storage_scope("cache_write", site, scope)
    buffer = _buffer("cache_write", site, block.writes, index, "writes")
    spath = scope_path(site)
    blocks = scope_blocks(spath)
    check_single_writer("cache_write", site, blocks, block)
    if block.init is None and any(r.buffer is buffer for r in block.reads):
        # TVM redirects the block's loads to the cache too and so reads it before anything
        # was stored there; cache_inplace stages both directions.
        raise ScheduleError(
            "cache_write",
            "data-flow",
            f"block {block.name!r} reads buffer {buffer.name!r}, which it updates in place "
            "(and has no init): its cache would be read before it is written; use "
            "cache_inplace",
            site.func,
            block,
        )
    me = next(b for b in blocks if b.block is block)
    scope_loops = {s.loop_var for s in me.path[len(spath) :] if isinstance(s, For)}
    check_reduction_in_scope("cache_write", site, me.realize, scope_loops)
    readers = [b for b in blocks if buffer in b.reads and b.block is not block]
    name = _unique_name(site.func, f"{buffer.name}_{scope}")
    cache = decl_buffer(buffer.shape, buffer.dtype, name, scope)
    anchor = _anchor(spath, me, readers)
    region = _region_at([me], buffer, anchor[-1], writes=True)
    assert region is not None
    nest = _copy_nest(name, cache, buffer, region, anchor)
    func = site.func
    func = func.with_body(rebuild_at(func.body, me.realize, swap(me.realize, {buffer: cache})))
    new_realize = _find_block(func, block.name)
    func = _insert(func, _refind(func, anchor), nest, new_realize, readers)
    return _allocate(func, spath, cache), name


def rebuild_at(root: Stmt, old: Stmt, new: Stmt) -> Stmt:
    """``root`` with the statement ``old`` (by identity) replaced by ``new``."""
    for path in walk(root):
        if path[-1] is old:
            return rebuild(path, new)
    raise ValueError("statement not found")


def _find_block(func: PrimFunc, name: str) -> BlockRealize:
    for path in walk(func.body):
        if isinstance(path[-1], BlockRealize) and path[-1].block.name == name:
            return path[-1]
    raise ValueError(name)


def _refind(func: PrimFunc, old: Path) -> Path:
    """The path in ``func`` to the loop or block that ``old`` ended at (same loop variable
    or block name)."""
    target = old[-1]
    for path in walk(func.body):
        node = path[-1]
        if isinstance(target, For) and isinstance(node, For) and node.loop_var is target.loop_var:
            return path
        if isinstance(target, Block) and isinstance(node, Block) and node.name == target.name:
            return path
    raise ValueError("anchor not found")


def _allocate(func: PrimFunc, spath: Path, buffer: Buffer) -> PrimFunc:
    path = _refind(func, spath)
    scope = path[-1]
    assert isinstance(scope, Block)
    new = update(scope, alloc_buffers=(*scope.alloc_buffers, buffer))
    return func.with_body(rebuild(path, new))


def _allocated(primitive: str, site: Site, buffer: Buffer) -> None:
    if buffer in param_buffers(site.func):
        raise ScheduleError(
            primitive,
            "param-buffer",
            f"buffer {buffer.name!r} is a parameter of the function, not allocated in it",
            site.func,
            site.node,
        )


def set_scope(site: Site, index: int, scope: str) -> PrimFunc:
    """Give the block's ``index``-th written buffer (allocated in the function) ``scope``.

    Example::

        sch.set_scope(block_B, 0, "shared")   # B = T.alloc_buffer((128,), scope="shared")
    """
    block = site.node
    assert isinstance(block, Block)
    check_storage_scope("set_scope", site, scope)
    buffer = _buffer("set_scope", site, block.writes, index, "writes")
    _allocated("set_scope", site, buffer)
    new = buffer.replace(scope=scope)
    body = swap(site.func.body, {buffer: new})
    return site.func.with_body(body)


def storage_align(site: Site, index: int, axis: int, factor: int, offset: int) -> PrimFunc:
    """Ask for the ``axis`` stride of the block's ``index``-th written buffer to be
    ``factor * k + offset`` (annotation ``buffer_dim_align``, applied when lowering).

    Example::

        sch.storage_align(block_A_shared, 0, axis=0, factor=32, offset=1)
    """
    block = site.node
    assert isinstance(block, Block)
    buffer = _buffer("storage_align", site, block.writes, index, "writes")
    _allocated("storage_align", site, buffer)
    ndim = len(buffer.shape)
    if not -ndim <= axis < ndim:
        raise ScheduleError(
            "storage_align",
            "argument",
            f"axis {axis} is out of range for buffer {buffer.name!r} of {ndim} dimensions",
            site.func,
            block,
        )
    if factor <= 0 or not 0 <= offset < factor:
        raise ScheduleError(
            "storage_align",
            "argument",
            f"factor {factor} must be positive and offset {offset} in [0, factor)",
            site.func,
            block,
        )
    entry = (index, axis % ndim, factor, offset)
    table = dict(block.annotations)
    old = table.get("buffer_dim_align", ())
    assert isinstance(old, tuple)  # attrs() freezes a list of entries into a tuple
    kept = tuple(e for e in old if tuple(e[:2]) != entry[:2])
    table["buffer_dim_align"] = (*kept, entry)
    return site.replaced(update(block, annotations=attrs(table)))
