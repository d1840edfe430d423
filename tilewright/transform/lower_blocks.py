"""PrimFunc with blocks → loop nest: bindings substituted, predicates as ifs, allocations placed."""

from __future__ import annotations

from tilewright.ir import (
    Allocate,
    Block,
    BlockRealize,
    Buffer,
    BufferLoad,
    BufferRegion,
    BufferStore,
    IfThenElse,
    IntImm,
    MatchBufferRegion,
    Mutator,
    PrimExpr,
    PrimFunc,
    Range,
    Stmt,
    Var,
    intrinsics,
    op,
    substitute,
)
from tilewright.ir.dtype import bool_, int32
from tilewright.transform.flatten_buffers import element_strides
from tilewright.transform.lower_buffer_realize import lower_buffer_realize


def lower_blocks(func: PrimFunc) -> PrimFunc:
    """Replace every block by its body, written over the loop variables around it.

    For each ``BlockRealize``: block iterators are replaced by their bindings; a predicate
    (``T.where``) becomes an ``IfThenElse`` around the body; each ``alloc_buffer`` becomes an
    ``Allocate`` around it, at the block's position (the root block's at function level);
    ``match_buffer`` views are resolved into accesses of the source buffer. Reads, writes and
    block annotations are dropped. TVM's stage IR goes first: a ``T.realize`` of a whole
    buffer becomes an ``Allocate`` and ``T.prefetch`` is dropped (``lower_buffer_realize``).
    Run ``lower_init_block`` first.

    Args:
        func: the function to lower.

    Example::

        # before                                         # after
        for i_0, i_1 in T.grid(2, 8):                    for i_0, i_1 in T.grid(2, 8):
            with T.block("C"):                               if i_0 * 8 + i_1 < 14:
                vi = T.axis.spatial(14, i_0 * 8 + i_1)           C[i_0 * 8 + i_1] = A[i_0 * 8 + i_1]
                T.where(i_0 * 8 + i_1 < 14)
                C[vi] = A[vi]
    """
    func = lower_buffer_realize(func)
    return func.with_body(_BlockLowerer().visit(func.body))


class _BlockLowerer(Mutator):
    def visit_BlockRealize(self, realize: BlockRealize) -> Stmt:
        return self.visit(_inline_block(realize.block, realize.iter_values, realize.predicate))

    def visit_Block(self, block: Block) -> Stmt:
        # A block outside any BlockRealize: only an opaque one has a meaning.
        if block.iter_vars:
            raise ValueError(f"block {block.name!r} has iterators but no bindings (BlockRealize)")
        return self.visit(_inline_block(block, (), IntImm(1, bool_)))


def _inline_block(block: Block, values: tuple[PrimExpr, ...], predicate: PrimExpr) -> Stmt:
    if block.init is not None:
        raise ValueError(
            f"block {block.name!r} still has an init statement; run lower_init_block first"
        )
    if len(values) != len(block.iter_vars):
        raise ValueError(
            f"block {block.name!r} has {len(block.iter_vars)} iterators but {len(values)} bindings"
        )
    body = block.body
    # Match buffers name regions through the block's iterators: resolve before substituting.
    for match in reversed(block.match_buffers):
        body = _resolve_match_buffer(block, match, body)
    if not (isinstance(predicate, IntImm) and predicate.value):
        body = IfThenElse(predicate, body)
    # The storage of an allocated buffer used as a value (``B.access_ptr(...)``, ``B.data``
    # handed to an intrinsic) names the whole buffer, as a match buffer's names its region.
    if block.alloc_buffers:
        body = _StorageAsRegion({b.data: _whole(b) for b in block.alloc_buffers}).visit(body)
    for buffer in reversed(block.alloc_buffers):
        body = Allocate(buffer, body)
    mapping = {iv.var: value for iv, value in zip(block.iter_vars, values)}
    return substitute(body, mapping)


class _StorageAsRegion(Mutator):
    """Replaces uses of storage variables as values; buffers themselves keep theirs."""

    def __init__(self, regions: dict[Var, PrimExpr]) -> None:
        super().__init__()
        self.regions = regions

    def visit_Var(self, var: Var) -> PrimExpr:
        return self.regions.get(var, var)

    def visit_Buffer(self, buffer: Buffer) -> Buffer:
        return buffer


def _whole(buffer: Buffer) -> PrimExpr:
    """``tw.region_data`` of every element of ``buffer``."""
    first = BufferLoad(buffer, tuple(IntImm(0, int32) for _ in buffer.shape))
    last = BufferLoad(buffer, tuple(op.sub(extent, 1) for extent in buffer.shape))
    return intrinsics.REGION_DATA.call(first, last)


def _resolve_match_buffer(block: Block, match: MatchBufferRegion, body: Stmt) -> Stmt:
    view, source = match.buffer, match.source
    lead = len(source.region) - view.ndim
    if lead < 0:
        raise ValueError(
            f"block {block.name!r}: match_buffer {view.name} has {view.ndim} dimensions but "
            f"its source region of {source.buffer.name} has only {len(source.region)}"
        )
    for r in source.region[:lead]:
        if isinstance(r.extent, IntImm) and r.extent.value != 1:
            raise ValueError(
                f"block {block.name!r}: match_buffer {view.name} drops a dimension of "
                f"{source.buffer.name} whose extent is {r.extent.value}, not 1"
            )
    # Symbolic shape, strides and offset of the view take their values from the source.
    strides = element_strides(source.buffer)
    # The view's storage and offset name the region by its first and last elements, so that
    # the passes that place, shrink, version and flatten the source buffer keep them right.
    first = BufferLoad(source.buffer, tuple(r.min for r in source.region))
    last = BufferLoad(
        source.buffer, tuple(op.sub(op.add(r.min, r.extent), 1) for r in source.region)
    )
    bound: dict[Var, PrimExpr] = {view.data: intrinsics.REGION_DATA.call(first, last)}
    for dim, extent in enumerate(view.shape):
        if isinstance(extent, Var):
            bound[extent] = source.region[lead + dim].extent
    for dim, stride in enumerate(view.strides):
        if isinstance(stride, Var):
            bound[stride] = _region_stride(source, lead + dim, first, strides)
    if isinstance(view.elem_offset, Var):
        bound[view.elem_offset] = intrinsics.REGION_OFFSET.call(first, last)
    resolved = _MatchResolver(view, source, lead).visit(body)
    return substitute(resolved, bound)


def _region_stride(
    source: BufferRegion, dim: int, first: BufferLoad, strides: tuple[PrimExpr, ...]
) -> PrimExpr:
    """The stride of dimension ``dim``: the distance from the region's first element to its
    neighbour along ``dim`` (offsets that stay right when later passes shrink, pad or flatten
    the buffer); a dimension of one element keeps the buffer's stride as it is now."""
    extent = source.region[dim].extent
    if isinstance(extent, IntImm) and extent.value < 2:
        return strides[dim]
    step = list(first.indices)
    step[dim] = op.add(step[dim], 1)
    after = BufferLoad(first.buffer, tuple(step))
    return op.sub(
        intrinsics.REGION_OFFSET.call(after, after), intrinsics.REGION_OFFSET.call(first, first)
    )


class _MatchResolver(Mutator):
    """Rewrites accesses of a match buffer as accesses of its source region."""

    def __init__(self, view: Buffer, source: BufferRegion, lead: int) -> None:
        super().__init__()
        self.view = view
        self.source = source
        self.lead = lead

    def indices(self, indices: tuple[PrimExpr, ...]) -> tuple[PrimExpr, ...]:
        region = self.source.region
        if len(indices) != self.view.ndim:
            raise ValueError(
                f"match_buffer {self.view.name} has {self.view.ndim} dimensions but is "
                f"indexed with {len(indices)} indices"
            )
        head = tuple(r.min for r in region[: self.lead])
        return head + tuple(
            op.add(r.min, i) for r, i in zip(region[self.lead :], indices, strict=True)
        )

    def visit_BufferLoad(self, load: BufferLoad) -> PrimExpr:
        load = self.generic_visit(load)
        if load.buffer is not self.view:
            return load
        return BufferLoad(self.source.buffer, self.indices(load.indices))

    def visit_BufferStore(self, store: BufferStore) -> Stmt:
        store = self.generic_visit(store)
        if store.buffer is not self.view:
            return store
        return BufferStore(self.source.buffer, store.value, self.indices(store.indices))

    def visit_BufferRegion(self, region: BufferRegion) -> BufferRegion:
        region = self.generic_visit(region)
        if region.buffer is not self.view:
            return region
        outer = self.source.region
        ranges = tuple(outer[: self.lead]) + tuple(
            Range(op.add(o.min, r.min), r.extent)
            for o, r in zip(outer[self.lead :], region.region, strict=True)
        )
        return BufferRegion(self.source.buffer, ranges)
