"""``unsafe_set_dtype``: an allocated intermediate buffer stored in another data type.

Stores into the buffer cast their value to the new type and loads from it cast back to the
old one, so every expression keeps its type; only the precision of what is kept in the buffer
changes (hence "unsafe": ``float32 -> float16`` rounds, ``float32 -> float64`` does not).
"""

from __future__ import annotations

from tilewright.ir import op
from tilewright.ir.buffer import Buffer
from tilewright.ir.dtype import DataType
from tilewright.ir.expr import BufferLoad, PrimExpr
from tilewright.ir.function import PrimFunc
from tilewright.ir.functor import Mutator
from tilewright.ir.stmt import Block, BufferStore
from tilewright.schedule.error import ScheduleError, register_rules
from tilewright.schedule.primitives.caching import _allocated, _buffer
from tilewright.schedule.tree import Site, walk

register_rules(
    {
        "buffer-view": (
            "a buffer viewed through match_buffer cannot change its data type or separators "
            "under the view"
        ),
    }
)


def unsafe_set_dtype(site: Site, index: int, dtype: DataType) -> PrimFunc:
    """Store the block's ``index``-th written buffer (allocated in the function) as ``dtype``.

    Example::

        sch.unsafe_set_dtype(block_B, 0, "float16")
        # B = T.alloc_buffer((128,), "float16")
        # B[vi] = T.Cast("float16", A[vi] * T.float32(2))
        # C[vi] = T.Cast("float32", B[vi]) + T.float32(1)
    """
    block = site.block
    buffer = _buffer("unsafe_set_dtype", site, block.writes, index, "writes")
    _allocated("unsafe_set_dtype", site, buffer)
    refuse_views("unsafe_set_dtype", site, buffer)
    if buffer.dtype == dtype:
        return site.func
    new = buffer.replace(dtype=dtype)
    return site.func.with_body(_Recast(buffer, new).visit(site.func.body))


def refuse_views(primitive: str, site: Site, buffer: Buffer) -> None:
    """Raise ``buffer-view`` when a block views ``buffer`` through ``match_buffer``."""
    for path in walk(site.func.body):
        node = path[-1]
        if isinstance(node, Block) and any(m.source.buffer is buffer for m in node.match_buffers):
            raise ScheduleError(
                primitive,
                "buffer-view",
                f"block {node.name!r} views buffer {buffer.name!r} through match_buffer",
                site.func,
                node,
            )


class _Recast(Mutator):
    """Points every access of ``old`` at ``new``: stores cast to the new type, loads back."""

    def __init__(self, old: Buffer, new: Buffer) -> None:
        super().__init__()
        self.old = old
        self.new = new
        self.buffer_map[old] = new

    def visit_BufferLoad(self, node: BufferLoad) -> PrimExpr:
        if node.buffer is not self.old:
            return self.generic_visit(node)
        load = BufferLoad(self.new, self.visit(node.indices))
        return op.cast(load, node.dtype)

    def visit_BufferStore(self, node: BufferStore) -> BufferStore:
        if node.buffer is not self.old:
            return self.generic_visit(node)
        value = self.visit(node.value)
        target = self.new.dtype.with_lanes(value.dtype.lanes)
        return node.replace(
            buffer=self.new, value=op.cast(value, target), indices=self.visit(node.indices)
        )
