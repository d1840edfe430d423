"""PrimFunc with N-d buffer accesses → every load, store and allocation on a 1-D buffer."""

from __future__ import annotations

from collections.abc import Sequence

from tilewright.ir import (
    Allocate,
    Block,
    Buffer,
    BufferLoad,
    BufferStore,
    Call,
    DeclBuffer,
    IntImm,
    Mutator,
    PrimExpr,
    PrimFunc,
    Ramp,
    intrinsics,
    op,
)
from tilewright.ir.dtype import int32 as _INT32


def flatten_buffers(func: PrimFunc) -> PrimFunc:
    """Rewrite every ``BufferLoad``, ``BufferStore`` and ``Allocate`` onto a 1-D buffer.

    The flat buffer shares the original's ``data`` variable, so both name the same storage;
    an index tuple becomes one row-major offset (explicit ``strides`` when the buffer has
    them) plus ``elem_offset``; a lowered match buffer's offset (``tw.region_offset``) becomes
    its first element's flat index. A ``Ramp`` index stays a ramp, scaled by its dimension's
    stride. ``buffer_map`` keeps the N-d buffers: the runtime checks arguments against them.

    Args:
        func: a function without blocks (run ``lower_blocks`` first).

    Example::

        # before                          # after
        C[i, j] = A[i, j] + 1.0           C_1[i * 16 + j] = A_1[i * 16 + j] + 1.0
    """
    return func.with_body(_RegionOffsets().visit(_Flattener().visit(func.body)))


class _RegionOffsets(Mutator):
    """``tw.region_offset(first, last)`` of a flat buffer → the first element's index (a
    lowered match buffer's ``elem_offset``, or a difference of two: its strides)."""

    def visit_Call(self, call: Call) -> PrimExpr:
        call = self.generic_visit(call)
        if intrinsics.REGION_OFFSET.matches(call):
            first = call.args[0]
            if isinstance(first, BufferLoad) and len(first.indices) == 1:
                return first.indices[0]
        return call


def element_strides(buffer: Buffer) -> tuple[PrimExpr, ...]:
    """The distance in elements between neighbours along each dimension of ``buffer``.

    Explicit ``strides`` when the buffer has them, row-major products of the shape otherwise.

    Example::

        >>> element_strides(decl_buffer((4, 8, 2), "float32"))   # (16, 2, 1)
    """
    if buffer.strides:
        if len(buffer.strides) != buffer.ndim:
            raise ValueError(
                f"buffer {buffer.name}: {len(buffer.strides)} strides for {buffer.ndim} dimensions"
            )
        return buffer.strides
    strides: list[PrimExpr] = []
    stride: PrimExpr = IntImm(1, buffer.shape[-1].dtype) if buffer.shape else IntImm(1, _INT32)
    for extent in reversed(buffer.shape):
        strides.append(stride)
        stride = _mul(stride, extent)
    return tuple(reversed(strides))


def flat_index(buffer: Buffer, indices: Sequence[PrimExpr]) -> PrimExpr:
    """The 1-D element offset of ``buffer[indices]``, ``elem_offset`` included.

    Example::

        >>> flat_index(decl_buffer((4, 8), "float32"), (i, j))   # i * 8 + j
    """
    if len(indices) != buffer.ndim:
        raise ValueError(
            f"buffer {buffer.name} has {buffer.ndim} dimensions but is indexed with "
            f"{len(indices)} indices"
        )
    strides = element_strides(buffer)
    scalar: PrimExpr | None = None
    ramp: Ramp | None = None
    vectors = [i for i in indices if i.dtype.lanes > 1]
    for index, stride in zip(indices, strides):
        if len(vectors) == 1 and isinstance(index, Ramp):
            ramp = Ramp(_mul(index.base, stride), _mul(index.stride, stride), index.lanes)
            continue
        term = _mul(index, stride)
        scalar = term if scalar is None else _add(scalar, term)
    if not _is_zero(buffer.elem_offset):
        scalar = buffer.elem_offset if scalar is None else _add(scalar, buffer.elem_offset)
    if ramp is not None:
        base = ramp.base if scalar is None else _add(scalar, ramp.base)
        return Ramp(base, ramp.stride, ramp.lanes)
    return scalar if scalar is not None else IntImm(0, _INT32)


def flat_buffer(buffer: Buffer) -> Buffer:
    """The 1-D buffer over the same storage as ``buffer``, sized to hold every element."""
    if buffer.axis_separators:
        # TVM flattens each group of dimensions apart into a multi-dimensional physical
        # buffer (textures); every backend here addresses flat memory only.
        raise ValueError(
            f"buffer {buffer.name!r} has axis_separators={list(buffer.axis_separators)}: "
            "multi-dimensional physical buffers are not supported by flatten_buffers (every "
            "tilewright backend addresses flat memory); drop set_axis_separator to lower it"
        )
    if buffer.ndim == 1 and not buffer.strides and _is_zero(buffer.elem_offset):
        return buffer
    return buffer.replace(
        shape=(_flat_extent(buffer),), strides=(), elem_offset=IntImm(0, _INT32), layout=None
    )


def _flat_extent(buffer: Buffer) -> PrimExpr:
    if not buffer.shape:
        return IntImm(1, _INT32)
    if buffer.strides:
        # Padded layouts (storage_align) put the outermost stride past the last row.
        return _mul(buffer.shape[0], element_strides(buffer)[0])
    extent = buffer.shape[0]
    for dim in buffer.shape[1:]:
        extent = _mul(extent, dim)
    return extent


def _is_zero(expr: PrimExpr) -> bool:
    return isinstance(expr, IntImm) and expr.value == 0


def _is_one(expr: PrimExpr) -> bool:
    return isinstance(expr, IntImm) and expr.value == 1


def _mul(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    # Skip the multiplications by one that unit strides would add; the simplifier runs later
    # but the flattened IR should read well on its own.
    if _is_one(b) and b.dtype == a.dtype.element:
        return a
    if _is_one(a) and a.dtype == b.dtype.element:
        return b
    return op.mul(a, b)


def _add(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    return op.add(a, b)


class _Flattener(Mutator):
    def __init__(self) -> None:
        super().__init__()
        self.flat: dict[Buffer, Buffer] = {}

    def flatten(self, buffer: Buffer) -> Buffer:
        if buffer not in self.flat:
            self.flat[buffer] = flat_buffer(buffer)
        return self.flat[buffer]

    def visit_Block(self, block: Block) -> Block:
        # Block read/write regions are N-d by nature; flattening under them would mix forms.
        raise ValueError(f"block {block.name!r} is still present; run lower_blocks first")

    def visit_BufferLoad(self, load: BufferLoad) -> PrimExpr:
        indices: tuple[PrimExpr, ...] = self.visit(load.indices)
        flat = self.flatten(load.buffer)
        if flat is load.buffer and len(indices) == 1:
            return load.replace(indices=indices)
        return BufferLoad(flat, (flat_index(load.buffer, indices),))

    def visit_BufferStore(self, store: BufferStore) -> BufferStore:
        value = self.visit(store.value)
        indices: tuple[PrimExpr, ...] = self.visit(store.indices)
        flat = self.flatten(store.buffer)
        if flat is store.buffer and len(indices) == 1:
            return store.replace(value=value, indices=indices)
        return BufferStore(flat, value, (flat_index(store.buffer, indices),))

    def visit_Allocate(self, alloc: Allocate) -> Allocate:
        body = self.visit(alloc.body)
        return alloc.replace(buffer=self.flatten(alloc.buffer), body=body)

    def visit_DeclBuffer(self, decl: DeclBuffer) -> DeclBuffer:
        body = self.visit(decl.body)
        return decl.replace(buffer=self.flatten(decl.buffer), body=body)
