"""The ``Schedule`` methods of the buffer-layout primitives (unsafe_set_dtype,
transform_block_layout, set_axis_separator, padding, rolling buffers, buffer-access
signatures), mixed into ``Schedule`` (each method checks, rewrites, commits and records, as
in ``block_methods``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from tilewright.ir.buffer import Buffer
from tilewright.ir.dtype import dtype as as_dtype
from tilewright.schedule.block_methods import _buffer_index, _int
from tilewright.schedule.error import ScheduleError
from tilewright.schedule.index_map import IndexMap, as_index_map
from tilewright.schedule.instruction import InstructionKind, register_kinds
from tilewright.schedule.mixin import ScheduleMixin
from tilewright.schedule.primitives import axis_separator, block_layout, buffer_access, set_dtype
from tilewright.schedule.primitives import padding as padding_
from tilewright.schedule.primitives import rolling_buffer as rolling
from tilewright.schedule.primitives.layout import buffer_spec
from tilewright.schedule.reference import BlockRV, LoopRV

BlockArg = BlockRV | str

register_kinds(
    InstructionKind("unsafe_set_dtype", ("block",), ("buffer_index", "dtype")),
    InstructionKind("transform_block_layout", ("block",), ("index_map",)),
    InstructionKind("set_axis_separator", ("block",), ("buffer", "axis_separators")),
    InstructionKind("decompose_padding", ("block", "loop"), (), "one"),
    InstructionKind("pad_einsum", ("block",), ("padding",)),
    InstructionKind("rolling_buffer", ("block",), ("write_buffer_index",)),
    InstructionKind("unsafe_hide_buffer_access", ("block",), ("buf_type", "buf_index_array")),
    InstructionKind(
        "annotate_buffer_access", ("block",), ("buffer_index", "buf_type", "gen_new_ranges")
    ),
)


class BufferMethods(ScheduleMixin):
    """Mixed into ``Schedule``."""

    def unsafe_set_dtype(
        self, block: BlockArg, buffer_index: int | str | Buffer, dtype: str
    ) -> None:
        """Store the block's ``buffer_index``-th written buffer (allocated in the function)
        as ``dtype``: stores into it cast to ``dtype``, loads from it cast back. Unsafe: the
        precision of what the buffer keeps changes.

        Example::

            sch.unsafe_set_dtype("B", 0, "float16")   # B[vi] = T.Cast("float16", ...)
        """
        target, site = self._block(block, "unsafe_set_dtype")
        index = _buffer_index("unsafe_set_dtype", "buffer_index", site, buffer_index, False)
        try:
            new = as_dtype(dtype)
        except (TypeError, ValueError) as err:
            raise ScheduleError("unsafe_set_dtype", "argument", f"dtype {dtype!r}: {err}") from None
        self._state.commit(site.func_name, set_dtype.unsafe_set_dtype(site, index, new))
        self._record("unsafe_set_dtype", (target,), (index, str(new)))

    def transform_block_layout(
        self, block: BlockArg, index_map: IndexMap | str | Callable[..., object]
    ) -> None:
        """Re-tile the block's iteration space by ``index_map`` (one argument per iterator):
        the block gets one iterator per result, the loops above it are regenerated. The block
        must have trivial bindings and the map must be one to one onto a box.

        Example::

            sch.transform_block_layout("B", lambda i, j: (i * 16 + j,))
        """
        target, site = self._block(block, "transform_block_layout")
        mapping = as_index_map(index_map, len(site.block.iter_vars))
        func = block_layout.transform_block_layout(site, mapping)
        self._state.commit(site.func_name, func)
        self._record("transform_block_layout", (target,), (mapping,))

    def set_axis_separator(
        self,
        block: BlockArg,
        buffer: tuple[str, int] | list | int | str | Buffer,
        axis_separators: Sequence[int] | None,
    ) -> None:
        """Record axis separators on a buffer of the block (``("read", i)``/``("write", i)``,
        a write index, its name or the ``Buffer``). Lowering refuses them: the backends
        address flat memory only.

        Example::

            sch.set_axis_separator("B", ("write", 0), [1])
        """
        target, site = self._block(block, "set_axis_separator")
        if isinstance(buffer, int) and not isinstance(buffer, bool):
            buffer = ("write", buffer)
        kind, index = buffer_spec(site, buffer)
        separators = [
            _int("set_axis_separator", "axis separator", a) for a in axis_separators or ()
        ]
        func = axis_separator.set_axis_separator(site, kind, index, separators)
        self._state.commit(site.func_name, func)
        self._record("set_axis_separator", (target,), ([kind, index], separators))

    def decompose_padding(self, block: BlockArg, loop: LoopRV) -> BlockRV:
        """Split a padded copy ``P[...] = T.if_then_else(in_bounds, A[...], pad)`` into a
        block ``<name>_pad_const`` filling ``P`` with ``pad`` (before ``loop``, under copies
        of the loops from ``loop`` down) and the block itself, now copying the in-bounds
        region only. Returns the fill block.

        Example::

            fill = sch.decompose_padding("P", sch.get_loops("P")[0])
        """
        target, site = self._block(block, "decompose_padding")
        loop_site = self._state.loop_site(loop, "decompose_padding")
        func, name = padding_.decompose_padding(site, loop_site)
        self._state.commit(site.func_name, func)
        ref = self._state.block_ref_named(site.func_name, name)
        self._record("decompose_padding", (target, loop), (), (ref,))
        return ref

    def pad_einsum(self, block: BlockArg, padding: Sequence[int]) -> None:
        """Pad the iteration space of an einsum block by ``padding`` (one amount per
        iterator): its buffers become ``<name>_padded``, their producers fill the padding
        with zeros and their consumers read the original region.

        Example::

            sch.pad_einsum("C_shared", [0, 1, 1])   # 127 -> 128 for j and k
        """
        if not isinstance(padding, list | tuple):
            raise ScheduleError("pad_einsum", "argument", f"padding {padding!r} is not a list")
        target, site = self._block(block, "pad_einsum")
        given = [_int("pad_einsum", "padding", p) for p in padding]
        self._state.commit(site.func_name, padding_.pad_einsum(site, given))
        self._record("pad_einsum", (target,), (given,))

    def rolling_buffer(self, block: BlockArg, write_buffer_index: int | str | Buffer) -> None:
        """Keep only the sliding window of the block's ``write_buffer_index``-th buffer that
        the consumers under the same loop still need, indexed modulo its extent.

        Example::

            sch.rolling_buffer("B", 0)   # B: (10, 10) -> (6, 10); B[v0 % 6, v1]
        """
        target, site = self._block(block, "rolling_buffer")
        index = _buffer_index(
            "rolling_buffer", "write_buffer_index", site, write_buffer_index, False
        )
        self._state.commit(site.func_name, rolling.rolling_buffer(site, index))
        self._record("rolling_buffer", (target,), (index,))

    def unsafe_hide_buffer_access(
        self, block: BlockArg, buf_type: str, buf_index_array: Sequence[int]
    ) -> None:
        """Drop the listed read (``buf_type="read"``) or write regions from the block's
        signature; its body is unchanged (unsafe: analyses no longer see those accesses).

        Example::

            sch.unsafe_hide_buffer_access("C", "read", [1])
        """
        target, site = self._block(block, "unsafe_hide_buffer_access")
        kind = buffer_access.check_buffer_type("unsafe_hide_buffer_access", buf_type)
        indices = [_int("unsafe_hide_buffer_access", "buffer index", i) for i in buf_index_array]
        func = buffer_access.unsafe_hide_buffer_access(site, kind, indices)
        self._state.commit(site.func_name, func)
        self._record("unsafe_hide_buffer_access", (target,), (kind, indices))

    def annotate_buffer_access(
        self,
        block: BlockArg,
        buffer_index: int,
        buf_type: str,
        gen_new_ranges: IndexMap | str | Callable[..., object],
    ) -> None:
        """Declare the region of the block's ``buffer_index``-th read (or write) buffer as
        ``gen_new_ranges(*iterators)`` (one ``(start, stop)`` pair per dimension) and mark
        the block (``explicit_read_region``/``explicit_write_region``) to keep it.

        Example::

            sch.annotate_buffer_access("B", 0, "read", lambda vi: ((vi - 1, vi + 2),))
        """
        target, site = self._block(block, "annotate_buffer_access")
        kind = buffer_access.check_buffer_type("annotate_buffer_access", buf_type)
        index = _int("annotate_buffer_access", "buffer_index", buffer_index)
        regions = site.block.reads if kind == "read" else site.block.writes
        ndim = regions[index].buffer.ndim if 0 <= index < len(regions) else 0
        ranges = buffer_access.access_map("annotate_buffer_access", site, gen_new_ranges, ndim)
        func = buffer_access.annotate_buffer_access(site, index, kind, ranges)
        self._state.commit(site.func_name, func)
        self._record("annotate_buffer_access", (target,), (index, kind, ranges))
