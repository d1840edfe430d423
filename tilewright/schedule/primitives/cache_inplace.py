"""``cache_inplace``: stage a buffer that a block both reads and writes through a copy in
another storage scope, copied in right before the block and back right after it."""

from __future__ import annotations

from tilewright.ir.buffer import decl_buffer
from tilewright.ir.expr import Range
from tilewright.ir.function import PrimFunc
from tilewright.ir.functor import substitute
from tilewright.ir.stmt import BlockRealize, SeqStmt, Stmt, seq
from tilewright.ir.structural import structural_equal
from tilewright.schedule.error import ScheduleError, register_rules
from tilewright.schedule.legality import check_storage_scope
from tilewright.schedule.primitives.caching import _buffer, _copy_nest, swap
from tilewright.schedule.primitives.reindex import fresh_name, in_scope
from tilewright.schedule.tree import Site, update, with_child

register_rules(
    {
        "inplace-buffer": (
            "cache_inplace needs a buffer that the block both reads and writes, over the same "
            "region"
        ),
    }
)


def cache_inplace(site: Site, index: int, scope: str) -> tuple[PrimFunc, list[str]]:
    """Make the block read and write a new buffer ``<name>_<scope>`` in place of its
    ``index``-th read buffer, which it also writes: a block copies the region it accesses in
    right before it, another copies it back right after it (named ``<name>_<scope>_1``).
    Returns the function and the two copy blocks' names.

    Example::

        sch.cache_inplace(block_B, 0, "local")
        # A_local[v0] = A[v0]; B: A_local[vi] = A_local[vi] * 2.0; A[v0] = A_local[v0]
    """
    primitive = "cache_inplace"
    block = site.block
    check_storage_scope(primitive, site, scope)
    buffer = _buffer(primitive, site, block.reads, index, "reads")
    read = block.reads[index]
    written = [w for w in block.writes if w.buffer is buffer]
    if not written:
        raise ScheduleError(
            primitive,
            "inplace-buffer",
            f"block {block.name!r} reads buffer {buffer.name!r} but does not write it",
            site.func,
            block,
        )
    if not structural_equal(read.region, written[0].region, map_free_vars=False):
        raise ScheduleError(
            primitive,
            "inplace-buffer",
            f"block {block.name!r} reads {read.script()} but writes {written[0].script()}",
            site.func,
            block,
        )
    realize = site.path[-2]
    assert isinstance(realize, BlockRealize)
    binding = dict(zip((iv.var for iv in block.iter_vars), realize.iter_values))
    region = [Range(substitute(r.min, binding), substitute(r.extent, binding)) for r in read.region]
    taken: set[str] = set()
    names = [fresh_name(site.func, f"{buffer.name}_{scope}", taken) for _ in range(2)]
    cache = decl_buffer(buffer.shape, buffer.dtype, names[0], scope)
    anchor = site.path[:-2]
    copy_in = _copy_nest(names[0], buffer, cache, region, anchor, buffer)
    copy_out = _copy_nest(names[1], cache, buffer, region, anchor, buffer)
    new_block = substitute(swap(block, {buffer: cache}), {buffer.data: cache.data})
    staged = (copy_in, update(realize, block=new_block), copy_out)
    parent = site.path[-3]
    new_parent: Stmt
    if isinstance(parent, SeqStmt):
        k = next(i for i, s in enumerate(parent.seq) if s is realize)
        new_parent = seq(*parent.seq[:k], *staged, *parent.seq[k + 1 :])
    else:
        new_parent = with_child(parent, realize, seq(*staged))
    return in_scope(site, len(site.path) - 3, new_parent, [cache]), names
