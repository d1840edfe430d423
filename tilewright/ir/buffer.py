"""Buffers (named, shaped, typed storage) and the regions of them that statements touch."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from tilewright.ir.dtype import DataType, dtype, handle, int32
from tilewright.ir.expr import BufferLoad, IntImm, PrimExpr, Ramp, Range, Var
from tilewright.ir.layout import Layout
from tilewright.ir.node import Node, node
from tilewright.ir.op import Operand, convert

if TYPE_CHECKING:
    from tilewright.ir.stmt import AttrValue, BufferStore

DEFAULT_ALIGN = 64


@node
class Buffer(Node):
    """A multi-dimensional view of memory.

    ``data`` is the handle variable of the storage; ``strides`` is empty for a compact
    row-major buffer; ``scope`` is the storage scope (``global``, ``shared``, ``local``, ...);
    ``layout`` (a tile layout such as ``TileLayout(S[32, 32])``) maps indices to storage offsets.
    Identity matters: two loads refer to the same buffer only if they hold the same object.

    Example::

        >>> A = decl_buffer((4, 8), "float32", "A")
        >>> A[1, 2]          # a BufferLoad
    """

    name: str
    shape: tuple[PrimExpr, ...]
    dtype: DataType
    data: Var
    strides: tuple[PrimExpr, ...] = ()
    elem_offset: PrimExpr = IntImm(0, int32)
    scope: str = "global"
    align: int = DEFAULT_ALIGN
    offset_factor: int = 1
    layout: Layout | None = None
    axis_separators: tuple[int, ...] = ()  # TVM's: groups of dims flattened apart
    # TVM's ``T.alloc_buffer(..., annotations={...})``: hints for passes, sorted by key.
    annotations: tuple[tuple[str, AttrValue], ...] = ()

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __getitem__(self, indices: object) -> PrimExpr | BufferRegion:
        """``A[i, j]`` loads an element; ``A[i : i + 3, j]`` is a region."""
        items = indices if isinstance(indices, tuple) else (indices,)
        if any(isinstance(i, slice) for i in items):
            return BufferRegion.from_indices(self, items)
        return BufferLoad(self, tuple(convert(i) for i in items))

    def load(self, indices: Sequence[PrimExpr | int]) -> BufferLoad:
        return BufferLoad(self, tuple(convert(i) for i in indices))

    def access_ptr(
        self,
        access_mask: str | int = "rw",
        ptr_type: str = "handle",
        content_lanes: int = 1,
        offset: PrimExpr | int = 0,
        extent: PrimExpr | int | None = None,
    ) -> PrimExpr:
        """The address of the buffer's first element (plus ``offset`` elements), as TVM's
        ``Buffer.access_ptr``: for handing the buffer to an external function
        (``T.call_extern(..., A.access_ptr("r"))``). ``access_mask`` ("r", "w", "rw" or
        1 | 2) says how the callee uses it; ``extent`` how many elements it touches (by
        default, as in TVM, those from ``offset`` to the end of the buffer).

        Example: ``B.access_ptr("w", offset=4, extent=2)`` is the address of ``B``'s
        element 4 for a callee that writes two elements.
        """
        from tilewright.ir import intrinsics

        mask = access_mask if isinstance(access_mask, int) else (
            (1 if "r" in access_mask else 0) | (2 if "w" in access_mask else 0)
        )  # fmt: skip
        if mask not in (1, 2, 3) or content_lanes < 1:
            raise ValueError(f"access_ptr: access mask {access_mask!r} is not r, w or rw")
        no_offset = isinstance(offset, int) and offset == 0
        first = convert(self.elem_offset)
        start = first if no_offset else first + convert(offset)
        if extent is None:
            if self.strides and len(self.strides) == len(self.shape):
                size = convert(self.strides[0]) * self.shape[0]
            else:
                size = convert(1)
                for dim in self.shape:
                    size = size * dim
            extent = size if no_offset else size - convert(offset)
        return intrinsics.ACCESS_PTR.call(
            self.data, start, convert(extent), convert(mask), dtype=None
        )

    def vload(self, begin: Sequence[PrimExpr | int], dtype: str | None = None) -> BufferLoad:
        """TVM's ``A.vload([i, j], "float32x4")``: the lanes from ``begin`` along the last
        dimension (a ``Ramp`` index), or one element without a vector dtype."""
        indices = [convert(i) for i in begin]
        lanes = DataType.parse(dtype).lanes if dtype is not None else 1
        if lanes > 1 and indices:
            indices[-1] = Ramp(indices[-1], convert(1, indices[-1].dtype), lanes)
        return BufferLoad(self, tuple(indices))

    def vstore(self, begin: Sequence[PrimExpr | int], value: PrimExpr) -> BufferStore:
        """TVM's ``A.vstore([i, j], value)``: store ``value``'s lanes from ``begin`` (a
        ``BufferStore``)."""
        from tilewright.ir.stmt import BufferStore

        indices = [convert(i) for i in begin]
        lanes = value.dtype.lanes
        if lanes > 1 and indices:
            indices[-1] = Ramp(indices[-1], convert(1, indices[-1].dtype), lanes)
        return BufferStore(self, value, tuple(indices))

    def with_shape(self, shape: Sequence[PrimExpr | int]) -> Buffer:
        return self.replace(shape=tuple(convert(s) for s in shape))


def decl_buffer(
    shape: Sequence[PrimExpr | int] | PrimExpr | int,
    dtype_: str | DataType = "float32",
    name: str = "buffer",
    scope: str = "global",
    *,
    data: Var | None = None,
    strides: Sequence[PrimExpr | int] = (),
    elem_offset: PrimExpr | int = 0,
    align: int = DEFAULT_ALIGN,
    offset_factor: int = 1,
    layout: Layout | None = None,
    axis_separators: Sequence[int] = (),
    annotations: dict[str, AttrValue] | tuple[tuple[str, AttrValue], ...] = (),
) -> Buffer:
    """A new buffer with a fresh data variable unless ``data`` is given."""
    from tilewright.ir.stmt import attrs

    dims = shape if isinstance(shape, Sequence) else (shape,)
    return Buffer(
        name=name,
        shape=tuple(convert(s) for s in dims),
        dtype=dtype(dtype_),
        data=data if data is not None else Var(name, handle),
        strides=tuple(convert(s) for s in strides),
        elem_offset=convert(elem_offset),
        scope=scope,
        align=align,
        offset_factor=offset_factor,
        layout=layout,
        axis_separators=tuple(int(a) for a in axis_separators),
        annotations=attrs(annotations),
    )


@node
class BufferRegion(Node):
    """A rectangular region of a buffer: one ``Range`` per dimension."""

    buffer: Buffer
    region: tuple[Range, ...]

    @staticmethod
    def full(buffer: Buffer) -> BufferRegion:
        """The whole buffer."""
        return BufferRegion(buffer, tuple(Range(IntImm(0, s.dtype), s) for s in buffer.shape))

    @staticmethod
    def from_indices(buffer: Buffer, items: Sequence[Operand | slice]) -> BufferRegion:
        """A region from indices and slices, as written in ``A[vi : vi + 3, 0]``."""
        ranges = []
        for dim, item in enumerate(items):
            if isinstance(item, slice):
                if item.step not in (None, 1):
                    raise ValueError(f"buffer {buffer.name}: region slices take no step")
                start = convert(0 if item.start is None else item.start)
                stop = buffer.shape[dim] if item.stop is None else convert(item.stop)
                ranges.append(Range(start, _extent(start, stop)))
            else:
                index = convert(item)
                ranges.append(Range(index, IntImm(1, index.dtype)))
        return BufferRegion(buffer, tuple(ranges))


def _extent(start: PrimExpr, stop: PrimExpr) -> PrimExpr:
    # A slice `vi : vi + 3` has extent 3, not `vi + 3 - vi`.
    from tilewright.ir.expr import Add

    if isinstance(stop, Add) and stop.a is start:
        return stop.b
    return stop - start
