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
)
from tilewright.schedule.dataflow import (
    ScopeBlock,
    check_reduction_in_scope,
    check_single_writer,
    param_buffers,
    scope_blocks,
    scope_path,
)
from tilewright.schedule.error import ScheduleError
from tilewright.schedule.legality import check_storage_scope
from tilewright.schedule.primitives.cache_location import (
    Spot,
    cache_spot,
    check_order,
    insert_at,
    shift_into,
)
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


def _copy_nest(
    name: str,
    src: Buffer,
    dst: Buffer,
    region: list[Range],
    anchor: Path,
    original: Buffer,
    compact: bool = False,
) -> Stmt:
    """``for ax..: with T.block(name): dst[..] = src[..]`` over ``region`` of the original
    buffer (a loop for every dimension, one-iteration loops kept, as TVM writes it), guarded
    by a predicate where the region may leave the buffer (its writer had one). A full-shape
    cache is indexed like the original; a ``compact`` one from the region's start.
    ``original`` is the program's buffer (``src`` or ``dst``)."""
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
    src_index: list[PrimExpr] = []
    dst_index: list[PrimExpr] = []
    for d, (rng, extent) in enumerate(zip(region, original.shape)):
        loop_var = Var(f"ax{d}", rng.extent.dtype)
        loops.append((loop_var, rng.extent))
        zero = isinstance(rng.min, IntImm) and rng.min.value == 0
        at = loop_var if zero else op.add(rng.min, loop_var)
        var = Var(f"v{d}", extent.dtype)
        if compact:
            iter_vars.append(
                IterVar(var, Range(IntImm(0, rng.extent.dtype), rng.extent), IterKind.SPATIAL)
            )
            values.append(loop_var)
            shifted = var if zero else op.add(rng.min, var)
            src_index.append(shifted if src is original else var)
            dst_index.append(shifted if dst is original else var)
        else:
            iter_vars.append(IterVar(var, Range(IntImm(0, extent.dtype), extent), IterKind.SPATIAL))
            values.append(at)
            src_index.append(var)
            dst_index.append(var)
        if not ana.can_prove(op.ge(rng.min, 0)):
            conditions.append(op.ge(at, 0))
        if not ana.can_prove(op.le(op.add(rng.min, rng.extent), extent)):
            conditions.append(op.lt(at, extent))
    block = Block(
        name,
        tuple(iter_vars),
        (BufferRegion(src, tuple(Range(i, IntImm(1, i.dtype)) for i in src_index)),),
        (BufferRegion(dst, tuple(Range(i, IntImm(1, i.dtype)) for i in dst_index)),),
        BufferStore(dst, src.load(tuple(src_index)), tuple(dst_index)),
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
    func = site.func
    if writers:
        spot = cache_spot("cache_read", func, spath, writers[0], readers)
        region = _region_at(writers, buffer, spot.owner[-1], writes=True)
    else:
        # As in TVM: an input of the scope is copied at the start of the scope block, the
        # region the scope block declares it reads (the whole buffer at the function's root).
        spot = Spot(spath, 0)
        region = _declared_region(spath, buffer)
    assert region is not None
    cache, start = _cache_buffer(buffer, name, scope, region, spot.compact)
    if spot.compact:
        _check_covered("cache_read", func, spath, readers, buffer, region)
    nest = _copy_nest(name, buffer, cache, region, spot.owner, buffer, spot.compact)
    body = func.body
    for r in readers:
        new = (
            shift_into("cache_read", func, r.realize, buffer, cache, start, r.block)
            if spot.compact
            else swap(r.realize, {buffer: cache})
        )
        body = rebuild_at(body, r.realize, new)
    func = insert_at(
        func.with_body(body), _refind(func.with_body(body), spot.owner), spot.index, nest
    )
    func = _allocate(func, spath, cache)
    writer = writers[0].block if writers else None
    check_order("cache_read", func, _refind(func, spath), name, writer, [r.block for r in readers])
    return func, name


def _declared_region(spath: Path, buffer: Buffer) -> list[Range]:
    """The union of the regions of ``buffer`` the scope block declares it reads (the whole
    buffer where it declares none)."""
    scope_block = spath[-1]
    assert isinstance(scope_block, Block)
    declared = [r for r in scope_block.reads if r.buffer is buffer]
    whole = [Range(IntImm(0, s.dtype), s) for s in buffer.shape]
    if not declared:
        return whole
    ana = Analyzer()
    relaxed = relax_region(declared, {}, ana)
    assert relaxed is not None
    ranges = [interval_range(r, ana) for r in relaxed]
    return [r if r is not None else w for r, w in zip(ranges, whole)]


def _cache_buffer(
    buffer: Buffer, name: str, scope: str, region: list[Range], compact: bool
) -> tuple[Buffer, tuple[PrimExpr, ...]]:
    """The cache (the buffer's shape, or the region's for a compact one) and the index its
    element 0 stands for."""
    if not compact:
        zeros = tuple(IntImm(0, s.dtype) for s in buffer.shape)
        return decl_buffer(buffer.shape, buffer.dtype, name, scope), zeros
    shape = [r.extent for r in region]
    return decl_buffer(shape, buffer.dtype, name, scope), tuple(r.min for r in region)


def _check_covered(
    primitive: str,
    func: PrimFunc,
    spath: Path,
    blocks: list[ScopeBlock],
    buffer: Buffer,
    region: list[Range],
) -> None:
    """A compact cache must hold every element its readers (or writer) reach."""
    whole = all(
        isinstance(r.min, IntImm) and r.min.value == 0 and Analyzer().can_prove(op.eq(r.extent, s))
        for r, s in zip(region, buffer.shape)
    )
    if whole:
        return
    ana = Analyzer()
    for b, writes in [(b, w) for b in blocks for w in (False, True)]:
        got = _region_at([b], buffer, spath[-1], writes=writes)
        if got is not None:
            inside = all(
                ana.can_prove(op.ge(g.min, r.min))
                and ana.can_prove(op.le(op.add(g.min, g.extent), op.add(r.min, r.extent)))
                for g, r in zip(got, region)
            )
            if not inside:
                raise ScheduleError(
                    primitive,
                    "region-cover",
                    f"block {b.block.name!r} reaches buffer {buffer.name!r} outside the "
                    "region the copy holds",
                    func,
                    b.block,
                )


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
    func = site.func
    spot = cache_spot("cache_write", func, spath, me, readers)
    region = _region_at([me], buffer, spot.owner[-1], writes=True)
    assert region is not None
    cache, start = _cache_buffer(buffer, name, scope, region, spot.compact)
    if spot.compact:
        _check_covered("cache_write", func, spath, [me], buffer, region)
        new = shift_into("cache_write", func, me.realize, buffer, cache, start, block)
    else:
        new = swap(me.realize, {buffer: cache})
    nest = _copy_nest(name, cache, buffer, region, spot.owner, buffer, spot.compact)
    func = func.with_body(rebuild_at(func.body, me.realize, new))
    func = insert_at(func, _refind(func, spot.owner), spot.index, nest)
    func = _allocate(func, spath, cache)
    check_order("cache_write", func, _refind(func, spath), name, block, [r.block for r in readers])
    return func, name


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
