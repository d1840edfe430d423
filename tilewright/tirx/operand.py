"""The operands of tile primitives: a buffer region with its layout sliced to the region.

Input: a ``BufferRegion`` whose buffer may carry a ``TileLayout`` or a swizzled
``ComposeLayout`` (buffers without one are row-major, or follow their explicit strides).
Output: an ``Operand`` with the region's tile layout, the memory offset of its first element,
the swizzle (if any) and the memory class (``global``, ``shared``, ``local``) that dispatch
predicates test.
"""

from __future__ import annotations

from dataclasses import dataclass

from tilewright.arith import simplify
from tilewright.ir import Buffer, BufferRegion, IntImm, PrimExpr, decl_buffer, op
from tilewright.layout import ComposeLayout, Iter, LayoutError, SwizzleLayout, TileLayout
from tilewright.layout import offset_arith as oa
from tilewright.layout.offset_arith import Offset
from tilewright.layout.shard import MEMORY

THREAD_AXES = ("laneid", "warpid", "tid", "tx")


def memory_class(scope: str) -> str:
    """``global``, ``shared`` (any ``shared*`` scope) or ``local`` (registers) for a scope.

    Example: ``memory_class("shared.dyn") == "shared"``.
    """
    if scope.startswith("shared"):
        return "shared"
    if scope in ("local", "register") or scope.startswith("local"):
        return "local"
    return scope


def buffer_layout(buffer: Buffer) -> TileLayout | ComposeLayout:
    """The layout of ``buffer``: its own, else row-major (or its strides) over its shape.

    Example: ``buffer_layout(decl_buffer((4, 8)))`` is ``S[(4, 8) : (8, 1)]``.
    """
    if isinstance(buffer.layout, TileLayout | ComposeLayout):
        return buffer.layout
    if buffer.layout is not None:
        raise LayoutError(f"buffer {buffer.name}: unsupported layout {buffer.layout!r}")
    shape = constant_shape(buffer)
    if buffer.strides:
        strides = [_const(s, f"buffer {buffer.name} stride") for s in buffer.strides]
    else:
        strides, running = [], 1
        for extent in reversed(shape):
            strides.insert(0, running)
            running *= extent
    return TileLayout(tuple(Iter(e, s) for e, s in zip(shape, strides)))


def constant_shape(buffer: Buffer) -> tuple[int, ...]:
    """The buffer's shape as ints; a ``LayoutError`` names a symbolic extent."""
    return tuple(_const(e, f"buffer {buffer.name} extent") for e in buffer.shape)


def storage_size(buffer: Buffer) -> int:
    """Elements of storage ``buffer`` needs: its layout's span (whole swizzle atoms included)."""
    return buffer_layout(buffer).cosize()


def flat_view(buffer: Buffer) -> Buffer:
    """A 1-D buffer over ``buffer``'s storage (same data variable), without a layout.

    Example: ``flat_view(A)`` of a 32x32 ``A`` is ``A_1`` of shape ``(1024,)``.
    """
    return decl_buffer(
        (storage_size(buffer),),
        buffer.dtype,
        f"{buffer.name}_1",
        buffer.scope,
        data=buffer.data,
        align=buffer.align,
    )


def _const(value: PrimExpr, what: str) -> int:
    if isinstance(value, IntImm):
        return value.value
    raise LayoutError(f"{what} {value} is not a constant; tile primitives need constant shapes")


@dataclass(frozen=True)
class Operand:
    """A region of a buffer as a tile primitive sees it.

    ``tile`` is the layout of the region alone (one shard group per buffer dimension, the
    region's extents), ``base`` the memory offset of its first element before any swizzle.
    """

    region: BufferRegion
    tile: TileLayout
    base: Offset
    swizzle: SwizzleLayout | None

    @property
    def buffer(self) -> Buffer:
        """The region's buffer."""
        return self.region.buffer

    @property
    def memory(self) -> str:
        """``global``, ``shared`` or ``local``."""
        return memory_class(self.buffer.scope)

    @property
    def extents(self) -> tuple[int, ...]:
        """The region's extents (constants)."""
        return tuple(
            _const(r.extent, f"region extent of {self.buffer.name}") for r in self.region.region
        )

    def size(self) -> int:
        """Elements in the region."""
        return self.tile.size()

    def thread_axes(self) -> tuple[str, ...]:
        """The hardware thread axes the region's layout places elements on."""
        return tuple(a for a in self.tile.axes() if a in THREAD_AXES)

    def offset(self, linear: Offset) -> Offset:
        """The storage offset of memory offset ``linear`` (swizzled when the layout is)."""
        return linear if self.swizzle is None else self.swizzle.apply(linear)

    def element_offset(self, index: Offset) -> dict[str, Offset]:
        """Offsets (per axis, memory already based) of the ``index``-th region element."""
        result = self.tile.apply(index, shape=[self.size()])
        result[MEMORY] = oa.add(self.base, result[MEMORY])
        return result


def operand(region: BufferRegion) -> Operand:
    """The ``Operand`` of ``region``; ``LayoutError`` when the layout cannot be sliced to it.

    Example::

        >>> operand(A[0:32, 0:32]).tile
        S[(32, 32) : (32, 1)]
    """
    buffer = region.buffer
    layout = buffer_layout(buffer)
    swizzle = layout.swizzle if isinstance(layout, ComposeLayout) else None
    tile = layout.tile if isinstance(layout, ComposeLayout) else layout
    shape = constant_shape(buffer)
    tile_shape = shape if tile.size() == _product(shape) else None
    if tile_shape is None:
        raise LayoutError(
            f"buffer {buffer.name}: layout {tile!r} has {tile.size()} elements but the buffer "
            f"shape {list(shape)} has {_product(shape)}"
        )
    sliced, base = tile.slice(region.region, shape=tile_shape)
    if not (isinstance(buffer.elem_offset, IntImm) and buffer.elem_offset.value == 0):
        base = oa.add(oa.as_offset(buffer.elem_offset), base)
    if isinstance(base, PrimExpr):
        base = oa.as_offset(simplify(base))  # `bx * 16 * 64` reads as `bx * 1024`
    return Operand(region, sliced, base, swizzle)


def is_multiple(value: Offset, factor: int) -> bool:
    """True when ``value`` (an int or expression) is provably a multiple of ``factor``."""
    if factor == 1:
        return True
    if isinstance(value, int):
        return value % factor == 0
    rest = simplify(op.floormod(value, factor))
    return isinstance(rest, IntImm) and rest.value == 0


def _product(values: tuple[int, ...]) -> int:
    result = 1
    for v in values:
        result *= v
    return result
