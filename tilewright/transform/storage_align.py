"""``storage_align`` requests (block annotation ``buffer_dim_align``) → buffer strides.

``sch.storage_align(block, buffer_index, axis, factor, offset)`` asks that dimension ``axis``
of a buffer the block writes have a stride of ``factor * k + offset`` elements: a shared tile
of 16 x 16 floats read down its columns hits one bank 16 times; with a row stride of 17 it
hits 16 banks. The request is made on a block, but the stride can only be chosen once the
allocation has its final (compacted) shape, after the blocks are gone. So the lowering
carries it across in two steps:

- ``collect_storage_align`` (before ``lower_blocks``) moves each request into the function
  attribute ``tw.buffer_dim_align`` as ``(data variable, dimensions, axis, factor, offset)``;
- ``apply_storage_align`` (after ``compact_buffer_allocation``) gives each requested
  allocation explicit strides, rounding each requested dimension's row-major stride up to
  the next ``factor * k + offset`` (outer strides grow with it), and drops the attribute.

Example::

    sch.storage_align(A_shared, 0, axis=0, factor=32, offset=1)
    # lowered: A_shared = alloc((16, 16), strides=(33, 1)); A_shared[i, j] -> A_shared[i * 33 + j]
"""

from __future__ import annotations

from tilewright.ir import (
    Allocate,
    Block,
    Buffer,
    BufferLoad,
    BufferStore,
    IntImm,
    Mutator,
    PrimExpr,
    PrimFunc,
    Stmt,
    Var,
    pre_order_visit,
)

ATTR = "tw.buffer_dim_align"

Request = tuple[Var, int, int, int, int]  # (data variable, dimensions, axis, factor, offset)


def collect_storage_align(func: PrimFunc) -> PrimFunc:
    """Record every block's ``buffer_dim_align`` annotation on the function (see the module)."""
    requests: list[Request] = []

    def visit(node: object) -> bool:
        if isinstance(node, Block):
            entries = dict(node.annotations).get("buffer_dim_align", ())
            assert isinstance(entries, tuple)  # storage_align writes a tuple of entries
            for index, axis, factor, offset in entries:
                buffer = node.writes[int(index)].buffer
                ndim = len(buffer.shape)
                requests.append((buffer.data, ndim, int(axis) % ndim, int(factor), int(offset)))
        return True

    pre_order_visit(func.body, visit)
    return func.with_attr(ATTR, tuple(requests)) if requests else func


def apply_storage_align(func: PrimFunc) -> PrimFunc:
    """Give each allocation recorded by ``collect_storage_align`` its aligned strides."""
    recorded = func.attr(ATTR)
    if not recorded:
        return func
    assert isinstance(recorded, tuple)  # collect_storage_align's tuple of requests
    requests: dict[Var, tuple[int, dict[int, tuple[int, int]]]] = {}
    for data, ndim, axis, factor, offset in recorded:
        entry = requests.setdefault(data, (int(ndim), {}))
        entry[1][int(axis)] = (int(factor), int(offset))
    body = _Align(requests).visit(func.body)
    attrs = tuple((k, v) for k, v in func.attrs if k != ATTR)
    return func.replace(body=body, attrs=attrs)


def aligned_strides(shape: tuple[int, ...], axes: dict[int, tuple[int, int]]) -> tuple[int, ...]:
    """Row-major strides of ``shape`` with dimension ``axis``'s stride rounded up to
    ``factor * k + offset`` for each ``axis: (factor, offset)``.

    Example::

        >>> aligned_strides((16, 16), {0: (32, 1)})
        (33, 1)
    """
    strides = [1] * len(shape)
    stride = 1
    for axis in reversed(range(len(shape))):
        if axis in axes:
            factor, offset = axes[axis]
            stride += (offset - stride) % factor
        strides[axis] = stride
        stride *= shape[axis]
    return tuple(strides)


class _Align(Mutator):
    def __init__(self, requests: dict[Var, tuple[int, dict[int, tuple[int, int]]]]) -> None:
        super().__init__()
        self.requests = requests
        self.aligned: dict[Var, Buffer] = {}

    def _buffer(self, buffer: Buffer) -> Buffer:
        if buffer.data in self.aligned:
            return self.aligned[buffer.data]
        return buffer

    def visit_Allocate(self, alloc: Allocate) -> Stmt:
        request = self.requests.get(alloc.buffer.data)
        shape = [s.value if isinstance(s, IntImm) else None for s in alloc.buffer.shape]
        if request is not None and None not in shape and not alloc.buffer.strides:
            # lower_vthread may have added leading dimensions (one per virtual thread axis).
            lead = len(shape) - request[0]
            axes = {axis + lead: v for axis, v in request[1].items()} if lead >= 0 else {}
            strides = aligned_strides(tuple(s for s in shape if s is not None), axes)
            dtype = alloc.buffer.shape[0].dtype
            new = alloc.buffer.replace(strides=tuple(IntImm(s, dtype) for s in strides))
            self.aligned[alloc.buffer.data] = new
        body = self.visit(alloc.body)
        return alloc.replace(buffer=self._buffer(alloc.buffer), body=body)

    def visit_BufferLoad(self, load: BufferLoad) -> PrimExpr:
        indices = self.visit(load.indices)
        return load.replace(buffer=self._buffer(load.buffer), indices=indices)

    def visit_BufferStore(self, store: BufferStore) -> Stmt:
        value = self.visit(store.value)
        indices = self.visit(store.indices)
        return store.replace(buffer=self._buffer(store.buffer), value=value, indices=indices)
