"""The ``Schedule`` methods of the block primitives (caching, compute location, inlining,
reductions, blockize, producer/consumer queries), kept apart from the loop methods."""

from __future__ import annotations

import numbers
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from tilewright.arith.simplify import simplify
from tilewright.ir.buffer import Buffer
from tilewright.ir.expr import PrimExpr, Var
from tilewright.ir.functor import substitute
from tilewright.ir.stmt import Block
from tilewright.schedule.dataflow import consumers_of, producers_of, scope_blocks, scope_path
from tilewright.schedule.error import ScheduleError
from tilewright.schedule.index_map import IndexMap, as_index_map
from tilewright.schedule.mixin import ScheduleMixin
from tilewright.schedule.primitives import blockize as blockize_
from tilewright.schedule.primitives import (
    caching,
    compute_location,
    inline,
    layout,
    layout_padding,
    layout_symbolic,
    reduction,
)
from tilewright.schedule.primitives import tensorize as tensorize_
from tilewright.schedule.primitives.blockize_blocks import blockize_blocks
from tilewright.schedule.reference import BlockRV, LoopRV, rvs_in
from tilewright.schedule.tensor_intrin import TensorIntrin

if TYPE_CHECKING:
    from tilewright.schedule.tree import Site

BlockArg = BlockRV | str


def _int(primitive: str, name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ScheduleError(primitive, "argument", f"{name} {value!r} is not an integer")
    return int(value)


def _buffer_index(primitive: str, name: str, site: Site, value: object, reads: bool) -> int:
    """The index among the block's reads (or writes) of a buffer given as TVM accepts it:
    the index, the buffer's name, or the ``Buffer``."""
    if not isinstance(value, str | Buffer):
        return _int(primitive, name, value)
    block = site.node
    assert isinstance(block, Block)  # a block reference's site
    regions = block.reads if reads else block.writes
    found = [k for k, r in enumerate(regions) if r.buffer is value or r.buffer.name == value]
    if len(found) != 1:
        label = value if isinstance(value, str) else value.name
        what = "does not" if not found else "more than once"
        raise ScheduleError(
            primitive,
            "buffer-index",
            f"block {block.name!r} {what} {'read' if reads else 'write'} buffer {label!r}"
            + ("" if not found else " (give the index)"),
            site.func,
            block,
        )
    return found[0]


def _scope(primitive: str, value: object) -> str:
    if not isinstance(value, str) or not value:
        raise ScheduleError(primitive, "argument", f"storage scope {value!r} is not a string")
    return value


class BlockMethods(ScheduleMixin):
    """Mixed into ``Schedule``: every method checks, rewrites, commits and records."""

    def _block(self, block: BlockArg, primitive: str) -> tuple[BlockRV, Site]:
        target = self._target(block)
        return target, self._state.block_ref_site(target, primitive)

    # ---- queries -------------------------------------------------------------------------
    def get_producers(self, block: BlockArg) -> list[BlockRV]:
        """The blocks of the block's scope that write a buffer it reads, in program order.

        Example::

            (producer,) = sch.get_producers(sch.get_block("C"))
        """
        target, site = self._block(block, "get_producers")
        found = producers_of(scope_blocks(scope_path(site)), site.block)
        refs = [self._state.block_ref(site.func_name, b.block) for b in found]
        self._record("get_producers", (target,), (), refs)
        return refs

    def get_consumers(self, block: BlockArg) -> list[BlockRV]:
        """The blocks of the block's scope that read a buffer it writes, in program order.

        Example::

            (consumer,) = sch.get_consumers(sch.get_block("B"))
        """
        target, site = self._block(block, "get_consumers")
        found = consumers_of(scope_blocks(scope_path(site)), site.block)
        refs = [self._state.block_ref(site.func_name, b.block) for b in found]
        self._record("get_consumers", (target,), (), refs)
        return refs

    def get_output_blocks(self, scope_block: BlockArg) -> list[BlockRV]:
        """The blocks directly in ``scope_block``'s scope that write a buffer the scope does
        not allocate (TVM's output blocks), in program order.

        Example::

            outputs = sch.get_output_blocks("root")   # the blocks writing the parameters
        """
        target, site = self._block(scope_block, "get_output_blocks")
        scope = site.node
        assert isinstance(scope, Block)  # a block reference's site
        owned = set(scope.alloc_buffers)
        found = [
            b for b in scope_blocks(site.path) if any(w.buffer not in owned for w in b.block.writes)
        ]
        refs = [self._state.block_ref(site.func_name, b.block) for b in found]
        self._record("get_output_blocks", (target,), (), refs)
        return refs

    # ---- caching -------------------------------------------------------------------------
    def cache_read(
        self,
        block: BlockArg,
        read_buffer_index: int | str | Buffer,
        storage_scope: str,
        consumer_blocks: Sequence[BlockArg] | None = None,
    ) -> BlockRV:
        """Stage the block's ``read_buffer_index``-th read buffer through a copy in
        ``storage_scope``; its consumers (or ``consumer_blocks``) read the copy.

        As in TVM, the copy goes right before the first consumer, in the innermost loop (or
        block) holding both it and the buffer's writer, and covers what the writer writes
        there; an input of the scope is copied at the scope's start. A copy placed directly
        in a block holds only the copied region, indexed from its start.

        Example::

            A_shared = sch.cache_read(block_C, read_buffer_index=0, storage_scope="shared")
        """
        target, site = self._block(block, "cache_read")
        index = _buffer_index("cache_read", "read_buffer_index", site, read_buffer_index, True)
        scope = _scope("cache_read", storage_scope)
        consumers = None
        refs: list[BlockRV] | None = None
        if consumer_blocks is not None:
            refs = [self._target(c) for c in consumer_blocks]
            consumers = [self._state.block_ref_site(r, "cache_read") for r in refs]
        func, name = caching.cache_read(site, index, scope, consumers)
        self._state.commit(site.func_name, func)
        ref = self._state.block_ref_named(site.func_name, name)
        self._record("cache_read", (target, refs), (index, scope), (ref,))
        return ref

    def cache_write(
        self, block: BlockArg, write_buffer_index: int | str | Buffer, storage_scope: str
    ) -> BlockRV:
        """Make the block write its ``write_buffer_index``-th output into a copy in
        ``storage_scope``, written back by a new block: before the first block that reads
        the output, in the innermost loop holding both (at the end of the scope when nothing
        reads it), as TVM places it.

        Example::

            C_local = sch.cache_write(block_C, 0, "local")
        """
        target, site = self._block(block, "cache_write")
        index = _buffer_index("cache_write", "write_buffer_index", site, write_buffer_index, False)
        scope = _scope("cache_write", storage_scope)
        func, name = caching.cache_write(site, index, scope)
        self._state.commit(site.func_name, func)
        ref = self._state.block_ref_named(site.func_name, name)
        self._record("cache_write", (target,), (index, scope), (ref,))
        return ref

    def set_scope(
        self, block: BlockArg, buffer_index: int | str | Buffer, storage_scope: str
    ) -> None:
        """Set the storage scope of the block's ``buffer_index``-th written buffer.

        Example::

            sch.set_scope(block_B, 0, "shared")
        """
        target, site = self._block(block, "set_scope")
        index = _buffer_index("set_scope", "buffer_index", site, buffer_index, reads=False)
        scope = _scope("set_scope", storage_scope)
        self._state.commit(site.func_name, caching.set_scope(site, index, scope))
        self._record("set_scope", (target,), (index, scope))

    def storage_align(
        self, block: BlockArg, buffer_index: int | str | Buffer, axis: int, factor: int, offset: int
    ) -> None:
        """Ask that dimension ``axis`` of the block's ``buffer_index``-th written buffer have a
        stride of ``factor * k + offset`` (to avoid shared-memory bank conflicts).

        Example::

            sch.storage_align(A_shared, 0, axis=0, factor=32, offset=1)
        """
        target, site = self._block(block, "storage_align")
        index = _buffer_index("storage_align", "buffer_index", site, buffer_index, reads=False)
        dim = _int("storage_align", "axis", axis)
        scale = _int("storage_align", "factor", factor)
        off = _int("storage_align", "offset", offset)
        self._state.commit(site.func_name, caching.storage_align(site, index, dim, scale, off))
        self._record("storage_align", (target,), (index, dim, scale, off))

    def transform_layout(
        self,
        block: BlockArg,
        buffer: tuple[str, int] | list | str | Buffer,
        index_map: IndexMap | str | Callable[..., object],
        pad_value: object = None,
        *,
        assume_injective_transform: bool = False,
    ) -> None:
        """Store ``buffer`` (``("read", i)`` / ``("write", i)`` of the block, its name or the
        ``Buffer``; allocated in the function or a parameter, whose shape in the signature
        changes) in the layout ``index_map`` gives: every access ``B[i, k]`` becomes
        ``B[index_map(i, k)]``. The map is one to one on the buffer's shape: permutations,
        splits, fusions, XOR swizzles (proved by evaluation, or taken on trust with
        ``assume_injective_transform``). A split that does not divide leaves padding, which
        needs ``pad_value`` (a constant, or a function of the new indices) that the producer
        writes there.

        Example::

            sch.transform_layout(A_shared, ("write", 0), lambda i, k: (i, k ^ (i % 8)))
            sch.transform_layout("B", "B", lambda i: (i // 4, i % 4), pad_value=0.0)
        """
        target, site = self._block(block, "transform_layout")
        kind, index = layout.buffer_spec(site, buffer)
        node = site.node
        assert isinstance(node, Block)  # a block reference's site
        old = (node.reads if kind == "read" else node.writes)[index].buffer
        symbols = layout_symbolic.function_symbols(site.func)
        dtype = layout.index_dtype(old)
        mapping = self._sampled_values(as_index_map(index_map, len(old.shape), symbols, dtype))
        pad = layout_padding.normalize_pad_value(old, pad_value, len(mapping.final_indices))
        assume = bool(assume_injective_transform)
        func = layout.transform_layout(site, kind, index, mapping, pad, assume)
        self._state.commit(site.func_name, func)
        self._record("transform_layout", (target,), ([kind, index], mapping, pad, assume))

    def _sampled_values(self, mapping: IndexMap) -> IndexMap:
        """``mapping`` with each ``ExprRV`` it uses (``lambda i: (i // (v0 * v1), ...)``)
        replaced by its value; the map is recorded so, replaying the values taken."""
        rvs = rvs_in(mapping.final_indices)
        if not rvs:
            return mapping
        values: dict[Var, PrimExpr | int] = {rv: self._expr(rv, "transform_layout") for rv in rvs}
        final = [simplify(substitute(e, values)) for e in mapping.final_indices]
        return IndexMap(mapping.initial_indices, final)

    # ---- compute location ----------------------------------------------------------------
    def compute_at(
        self,
        block: BlockArg,
        loop: LoopRV,
        preserve_unit_loops: bool = False,
        index: int | None = None,
    ) -> None:
        """Move a producer block under ``loop``, before its first consumer there, computing
        per iteration the region its consumers under the loop read. ``index`` (TVM's): the
        position among the loop body's statements, ``-1`` the last legal one (the default
        here), ``-2`` the first.

        Example::

            sch.compute_at(A_shared, i1)   # for ax0 in range(130): A_shared[...] = A[...]
        """
        self._move_at("compute_at", block, loop, preserve_unit_loops, index)

    def reverse_compute_at(
        self,
        block: BlockArg,
        loop: LoopRV,
        preserve_unit_loops: bool = False,
        index: int | None = None,
    ) -> None:
        """Move a consumer block under ``loop``, after its last producer there (the first
        legal position; ``index=-1``, TVM's default, takes the last, ``-2`` the first, ``k``
        the k-th), computing per iteration the region its producers under the loop wrote.

        Example::

            sch.reverse_compute_at(C_local, j1)
        """
        self._move_at("reverse_compute_at", block, loop, preserve_unit_loops, index)

    def _move_at(
        self, primitive: str, block: BlockArg, loop: LoopRV, preserve: bool, index: int | None
    ) -> None:
        position = None if index is None else _int(primitive, "index", index)
        if self._state.mark_of(loop) is not None:
            self._at_mark(primitive, block, loop, preserve)
            return
        target, site = self._block(block, primitive)
        loop_site = self._state.loop_site(loop, primitive)
        move = (
            compute_location.compute_at
            if primitive == "compute_at"
            else compute_location.reverse_compute_at
        )
        func = move(site, loop_site, bool(preserve), position)
        self._state.commit(site.func_name, func)
        self._record(primitive, (target, loop), (bool(preserve), position))

    def _at_mark(self, primitive: str, block: BlockArg, mark: LoopRV, preserve: bool) -> None:
        """``compute_at`` to a sampled location that is no loop: ``root`` leaves the block
        where it is; ``inline`` inlines it (``compute_inline`` / ``reverse_compute_inline``)."""
        target, site = self._block(block, primitive)
        if self._state.mark_of(mark) == "inline":
            if primitive == "compute_at":
                func = inline.compute_inline(site)
            else:
                func = inline.reverse_compute_inline(site)
            self._state.commit(site.func_name, func)
        self._record(primitive, (target, mark), (bool(preserve), None))

    # ---- inlining ------------------------------------------------------------------------
    def compute_inline(self, block: BlockArg) -> None:
        """Inline an elementwise producer into its consumers and remove it.

        Example::

            sch.compute_inline(sch.get_block("B"))   # C[vi] = A[vi] * 2 + 1
        """
        target, site = self._block(block, "compute_inline")
        self._state.commit(site.func_name, inline.compute_inline(site))
        self._record("compute_inline", (target,), ())

    def reverse_compute_inline(self, block: BlockArg) -> None:
        """Inline an elementwise consumer into its single producer and remove it.

        Example::

            sch.reverse_compute_inline(sch.get_block("C"))   # B computes C directly
        """
        target, site = self._block(block, "reverse_compute_inline")
        self._state.commit(site.func_name, inline.reverse_compute_inline(site))
        self._record("reverse_compute_inline", (target,), ())

    # ---- reductions ----------------------------------------------------------------------
    def decompose_reduction(self, block: BlockArg, loop: LoopRV) -> BlockRV:
        """Split a reduction block's init into a block ``<name>_init`` before ``loop``; the
        block (renamed ``<name>_update``; references follow it) keeps the updates.

        Example::

            C_init = sch.decompose_reduction(block_C, k0)
        """
        target, site = self._block(block, "decompose_reduction")
        loop_site = self._state.loop_site(loop, "decompose_reduction")
        func, init_name, update_name = reduction.decompose_reduction(site, loop_site)
        self._state.commit(site.func_name, func)
        self._state.rename_block(site.func_name, site.block.name, update_name)
        ref = self._state.block_ref_named(site.func_name, init_name)
        self._record("decompose_reduction", (target, loop), (), (ref,))
        return ref

    def rfactor(self, loop: LoopRV, factor_axis: int) -> BlockRV:
        """Factor the reduction over ``loop`` into a buffer ``<name>_rf`` of partial results
        (a new axis at ``factor_axis``), reduced by the original block afterwards.

        Example::

            B_rf = sch.rfactor(k1, 0)   # B_rf[vk1, vi] partial sums; B[vi] sums B_rf
        """
        loop_site = self._state.loop_site(loop, "rfactor")
        axis = _int("rfactor", "factor_axis", factor_axis)
        func, name = reduction.rfactor(loop_site, axis)
        self._state.commit(loop_site.func_name, func)
        ref = self._state.block_ref_named(loop_site.func_name, name)
        self._record("rfactor", (loop,), (axis,), (ref,))
        return ref

    # ---- blockize ------------------------------------------------------------------------
    def tensorize(
        self, block_or_loop: BlockArg | LoopRV, tensor_intrin: str, preserve_unit_iters: bool = True
    ) -> None:
        """Compute the block (or the loop, blockized first) with the registered tensor
        intrinsic ``tensor_intrin``: its body must match the intrinsic's description, and
        becomes the intrinsic's implementation over the matched buffer regions.

        Example::

            TensorIntrin.register("my.dot4", dot4_desc, dot4_impl)
            sch.tensorize(k_1, "my.dot4")
        """
        intrin = TensorIntrin.get(str(tensor_intrin))
        assert intrin is not None  # get raises for an unknown name
        # A refusal leaves the schedule as it was: the blockize of a loop is undone too.
        state, count = self._state.copy(), len(self._insts)
        try:
            if isinstance(block_or_loop, LoopRV):
                block_or_loop = self.blockize(block_or_loop, preserve_unit_iters)
            target, site = self._block(block_or_loop, "tensorize")
            func = tensorize_.tensorize(site, intrin)
        except ScheduleError:
            self._state, self._insts[count:] = state, []
            raise
        self._state.commit(site.func_name, func)
        self._record("tensorize", (target,), (intrin.name, bool(preserve_unit_iters)))

    def blockize(
        self, target: LoopRV | Sequence[BlockArg], preserve_unit_iters: bool = True
    ) -> BlockRV:
        """Wrap the subtree of ``target`` (a loop), or the blocks ``target`` lists
        (consecutive statements under one loop), into a new outer block whose iterators are
        the outer parts of the blocks' bindings.

        Example::

            outer = sch.blockize(i1)   # with T.block("C_o"): ... with T.block("C"): ...
            outer = sch.blockize([b1, b2])   # with T.block("outer_B_C_"): ...
        """
        recorded: LoopRV | list[BlockRV]
        if isinstance(target, list | tuple):
            recorded = [self._target(b) for b in target]
            sites = [self._state.block_ref_site(b, "blockize") for b in recorded]
            if len({s.func_name for s in sites}) > 1:
                raise ScheduleError("blockize", "argument", "the blocks are in different functions")
            func, name = blockize_blocks(sites, bool(preserve_unit_iters))
            site = sites[0]
        elif not isinstance(target, LoopRV):
            raise ScheduleError(
                "blockize", "argument", f"expected a LoopRV or a list of blocks, got {target!r}"
            )
        else:
            recorded = target
            site = self._state.loop_site(target, "blockize")
            func, name = blockize_.blockize(site, bool(preserve_unit_iters))
        self._state.commit(site.func_name, func)
        ref = self._state.block_ref_named(site.func_name, name)
        self._record("blockize", (recorded,), (bool(preserve_unit_iters),), (ref,))
        return ref
