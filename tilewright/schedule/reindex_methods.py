"""The ``Schedule`` methods of the reindexing cache primitives (reindex,
reindex_cache_read/write, cache_inplace, cache_index), mixed into ``Schedule`` (each method
checks, rewrites, commits and records, as in ``block_methods``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from tilewright.ir.buffer import Buffer
from tilewright.schedule.block_methods import _buffer_index, _int, _scope
from tilewright.schedule.error import ScheduleError
from tilewright.schedule.index_map import IndexMap, as_index_map
from tilewright.schedule.instruction import InstructionKind, register_kinds
from tilewright.schedule.mixin import ScheduleMixin
from tilewright.schedule.primitives import cache_index as cache_index_
from tilewright.schedule.primitives import cache_inplace as cache_inplace_
from tilewright.schedule.primitives import reindex as reindex_
from tilewright.schedule.primitives import reindex_cache
from tilewright.schedule.reference import BlockRV

if TYPE_CHECKING:
    from tilewright.schedule.tree import Site

BlockArg = BlockRV | str
IndexMapArg = IndexMap | str | Callable[..., object]

register_kinds(
    InstructionKind("reindex", ("block",), ("buffer",), "one"),
    InstructionKind(
        "reindex_cache_read",
        ("block",),
        ("read_buffer_index", "storage_scope", "index_map"),
        "one",
    ),
    InstructionKind(
        "reindex_cache_write",
        ("block",),
        ("write_buffer_index", "storage_scope", "index_map"),
        "one",
    ),
    InstructionKind("cache_inplace", ("block",), ("read_buffer_index", "storage_scope"), "many"),
    InstructionKind("cache_index", ("block",), ("storage_scope", "cse_thresh"), "many"),
)


class ReindexMethods(ScheduleMixin):
    """Mixed into ``Schedule``."""

    def reindex(
        self, block: BlockArg, buffer: tuple[str, int] | list[object] | str | Buffer
    ) -> BlockRV:
        """Stage a buffer the block reads (writes) through ``<buffer>_reindex``, indexed by
        the block iterators its accesses use: a new block copies it in right before the
        block's loop nest (out right after it). ``buffer`` is ``("read", i)`` or
        ``("write", i)``, the buffer's name (a written buffer first) or the ``Buffer``.

        Example::

            sch.reindex("B", ("read", 0))   # A_reindex[v0, v1] = A[v1, v0]; B reads A_reindex
        """
        target, site = self._block(block, "reindex")
        kind, index = _buffer_kind(site, buffer)
        func, name = reindex_.reindex(site, kind, index)
        self._state.commit(site.func_name, func)
        ref = self._state.block_ref_named(site.func_name, name)
        self._record("reindex", (target,), ([kind, index],), (ref,))
        return ref

    def reindex_cache_read(
        self,
        block: BlockArg,
        read_buffer_index: int | str | Buffer,
        storage_scope: str,
        index_map: IndexMapArg,
    ) -> BlockRV:
        """Copy the point the block reads of its ``read_buffer_index``-th buffer into
        ``<buffer>_<scope>`` at ``index_map`` of the block's iterators, in a new block over
        the block's loops placed right before it (after the buffer's producer).

        Example::

            sch.reindex_cache_read("C", 0, "shared", lambda i, j, k: (k, i))
            # A_shared[vk, vi] = A[vi, vk]; C reads A_shared[vk, vi]
        """
        target, site = self._block(block, "reindex_cache_read")
        index = _buffer_index(
            "reindex_cache_read", "read_buffer_index", site, read_buffer_index, True
        )
        scope = _scope("reindex_cache_read", storage_scope)
        mapping = _index_map("reindex_cache_read", site, index_map)
        func, name = reindex_cache.reindex_cache_read(site, index, scope, mapping)
        self._state.commit(site.func_name, func)
        ref = self._state.block_ref_named(site.func_name, name)
        self._record("reindex_cache_read", (target,), (index, scope, mapping), (ref,))
        return ref

    def reindex_cache_write(
        self,
        block: BlockArg,
        write_buffer_index: int | str | Buffer,
        storage_scope: str,
        index_map: IndexMapArg,
    ) -> BlockRV:
        """Make the block write its ``write_buffer_index``-th buffer into ``<buffer>_<scope>``
        at ``index_map`` of its iterators, copied back by a new block over the block's loops
        (before the buffer's first consumer, or at the end of the scope).

        Example::

            sch.reindex_cache_write("C", 0, "local", lambda i, j, k: (j, i))
            # C writes C_local[vj, vi]; C[vi, vj] = C_local[vj, vi]
        """
        target, site = self._block(block, "reindex_cache_write")
        index = _buffer_index(
            "reindex_cache_write", "write_buffer_index", site, write_buffer_index, False
        )
        scope = _scope("reindex_cache_write", storage_scope)
        mapping = _index_map("reindex_cache_write", site, index_map)
        func, name = reindex_cache.reindex_cache_write(site, index, scope, mapping)
        self._state.commit(site.func_name, func)
        ref = self._state.block_ref_named(site.func_name, name)
        self._record("reindex_cache_write", (target,), (index, scope, mapping), (ref,))
        return ref

    def cache_inplace(
        self, block: BlockArg, read_buffer_index: int | str | Buffer, storage_scope: str
    ) -> list[BlockRV]:
        """Stage a buffer the block both reads and writes through ``<buffer>_<scope>``:
        copied in right before the block and back right after it. Returns the two new
        blocks (the copy in, the copy back).

        Example::

            read, write = sch.cache_inplace("ext_call", 0, "local")
        """
        target, site = self._block(block, "cache_inplace")
        index = _buffer_index("cache_inplace", "read_buffer_index", site, read_buffer_index, True)
        scope = _scope("cache_inplace", storage_scope)
        func, names = cache_inplace_.cache_inplace(site, index, scope)
        self._state.commit(site.func_name, func)
        refs = [self._state.block_ref_named(site.func_name, n) for n in names]
        self._record("cache_inplace", (target,), (index, scope), refs)
        return refs

    def cache_index(
        self, block: BlockArg, storage_scope: str, cse_thresh: int = 0
    ) -> list[BlockRV]:
        """Precompute the index expressions of the block's stores (pure expressions of its
        iterators; with ``cse_thresh`` > 0 only those occurring at least that often) into
        buffers ``index_var_<k>`` of ``storage_scope``, filled by blocks ``index_<k>`` placed
        before the block's loop nest. Returns those blocks.

        Example::

            sch.cache_index("A", "global")
            # index_var_0[v0, v1] = v0 // 4 + v1 // 4; A reads A[.., index_var_0[vi, vj], ..]
        """
        target, site = self._block(block, "cache_index")
        scope = _scope("cache_index", storage_scope)
        thresh = _int("cache_index", "cse_thresh", cse_thresh)
        if thresh < 0:
            raise ScheduleError("cache_index", "argument", f"cse_thresh {thresh} is negative")
        func, names = cache_index_.cache_index(site, scope, thresh)
        self._state.commit(site.func_name, func)
        refs = [self._state.block_ref_named(site.func_name, n) for n in names]
        self._record("cache_index", (target,), (scope, thresh), refs)
        return refs


def _buffer_kind(site: Site, buffer: object) -> tuple[str, int]:
    """``("read" | "write", index)`` of a buffer as TVM's ``reindex`` accepts it: such a pair
    (a list from a JSON trace too), the buffer's name (its writes preferred, as TVM's lookup
    by name keeps the last match) or the ``Buffer`` (its reads first)."""
    block = site.block
    if isinstance(buffer, tuple | list) and len(buffer) == 2 and buffer[0] in ("read", "write"):
        return str(buffer[0]), _int("reindex", "buffer index", buffer[1])
    if not isinstance(buffer, str | Buffer):
        raise ScheduleError(
            "reindex",
            "argument",
            f'buffer {buffer!r} is not ("read" | "write", index), a name or a Buffer',
        )
    found = [
        (kind, k)
        for kind, regions in (("read", block.reads), ("write", block.writes))
        for k, region in enumerate(regions)
        if region.buffer is buffer or region.buffer.name == buffer
    ]
    if not found:
        label = buffer if isinstance(buffer, str) else buffer.name
        raise ScheduleError(
            "reindex",
            "buffer-index",
            f"block {block.name!r} does not access buffer {label!r}",
            site.func,
            block,
        )
    return found[-1] if isinstance(buffer, str) else found[0]


def _index_map(primitive: str, site: Site, value: object) -> IndexMap:
    """``value`` as a map of the block's iterators."""
    arity = len(site.block.iter_vars)
    try:
        mapping = as_index_map(value, arity)  # type: ignore[arg-type]  # checked below
    except (TypeError, ValueError) as err:
        raise ScheduleError(primitive, "argument", str(err)) from None
    if len(mapping.initial_indices) != arity:
        raise ScheduleError(
            primitive,
            "argument",
            f"index map {mapping} takes {len(mapping.initial_indices)} indices; block "
            f"{site.block.name!r} has {arity} iterators",
            site.func,
            site.block,
        )
    return mapping
