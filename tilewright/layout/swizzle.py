"""Shared-memory swizzles and their composition with tile layouts.

Input: an element offset (int or PrimExpr). Output: the offset with a field of "row" bits XORed
into the 16-byte chunk index, as the 32/64/128-byte swizzle modes of Hopper TMA and wgmma
expect. ``ComposeLayout(swizzle, tile)`` applies the tile layout, then the swizzle to ``"m"``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NoReturn

from tilewright.ir.layout import Layout
from tilewright.ir.node import node
from tilewright.layout import offset_arith as oa
from tilewright.layout.grouping import LayoutError
from tilewright.layout.offset_arith import Offset
from tilewright.layout.shard import MEMORY
from tilewright.layout.tile_layout import TileLayout

CHUNK_BYTES = 16
ROW_CHUNKS_LOG2 = 3  # a swizzle row is 8 chunks of 16 bytes: all 32 four-byte banks
SWIZZLE_BITS = {32: 1, 64: 2, 128: 3}


@node
class SwizzleLayout(Layout):
    """An XOR swizzle of element offsets, in CUTLASS's (bits, base, shift) terms.

    Offset bits ``[base, base + bits)`` (the 16-byte chunk index when ``base`` is the log2 of
    elements per chunk) are XORed with bits ``[base + shift, base + shift + bits)`` (the row
    index). Fields: ``per_element`` = base, ``swizzle_len`` = bits, ``atom_len`` = shift.

    Example::

        >>> sw = SwizzleLayout.from_bytes(128, element_bits=16)   # (3, 3, 3)
        >>> sw.apply(1 * 64 + 0 * 8)      # row 1, chunk 0 -> chunk 1
        72
    """

    per_element: int
    swizzle_len: int
    atom_len: int = ROW_CHUNKS_LOG2

    def __post_init__(self) -> None:
        for name in ("per_element", "swizzle_len", "atom_len"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise LayoutError(f"SwizzleLayout.{name} must be a non-negative int, got {value!r}")
        if self.atom_len < self.swizzle_len:
            raise LayoutError(
                f"SwizzleLayout: atom_len (shift) {self.atom_len} must be at least swizzle_len "
                f"(bits) {self.swizzle_len}, or the XORed bit fields overlap"
            )

    @staticmethod
    def from_bytes(swizzle_bytes: int, element_bits: int) -> SwizzleLayout:
        """The 32-, 64- or 128-byte shared-memory swizzle for elements of ``element_bits``.

        Example: ``SwizzleLayout.from_bytes(128, 32)`` is ``SwizzleLayout(2, 3, 3)``.
        """
        if swizzle_bytes not in SWIZZLE_BITS:
            raise LayoutError(f"swizzle mode must be 32, 64 or 128 bytes, got {swizzle_bytes!r}")
        if element_bits not in (8, 16, 32, 64):
            raise LayoutError(f"swizzled elements must be 8, 16, 32 or 64 bits, got {element_bits}")
        per_element = (CHUNK_BYTES * 8 // element_bits).bit_length() - 1
        return SwizzleLayout(per_element, SWIZZLE_BITS[swizzle_bytes], ROW_CHUNKS_LOG2)

    @staticmethod
    def from_bits_base_shift(bits: int, base: int, shift: int) -> SwizzleLayout:
        """The swizzle written in TVM/CUTLASS's ``(bits, base, shift)`` order."""
        return SwizzleLayout(base, bits, shift)

    @property
    def bits(self) -> int:
        return self.swizzle_len

    @property
    def base(self) -> int:
        return self.per_element

    @property
    def shift(self) -> int:
        return self.atom_len

    def chunk_elems(self) -> int:
        """Elements per swizzled chunk (16 bytes for the standard modes): caps copy vectors."""
        return 1 << self.per_element

    def atom_size(self) -> int:
        """Elements in one swizzle atom; the permutation repeats every atom."""
        return 1 << (self.per_element + self.swizzle_len + self.atom_len)

    @property
    def shape(self) -> tuple[int, ...]:
        """One atom, ``(atom_size(),)``: the swizzle permutes the offsets of each atom."""
        return (self.atom_size(),)

    def cosize(self) -> int:
        """An atom's span: the swizzle keeps every offset inside its atom."""
        return self.atom_size()

    def swizzle_bytes(self, element_bits: int) -> int:
        """The mode in bytes (32, 64, 128) for elements of ``element_bits``."""
        return (1 << (self.swizzle_len + self.per_element)) * element_bits // 8

    def apply(self, offset: object) -> Offset:
        """The swizzled element offset; an expression gets a ``bitwise_xor`` intrinsic call.

        Example: ``SwizzleLayout(3, 3, 3).apply(64 + 8 + 5) == 64 + 0 + 5``.
        """
        value = oa.as_offset(offset)
        row = oa.floormod(
            oa.floordiv(value, 1 << (self.per_element + self.atom_len)), 1 << self.bits
        )
        return oa.bitwise_xor(value, oa.mul(row, 1 << self.per_element))

    __call__ = apply

    def __repr__(self) -> str:
        return f"SwizzleLayout({self.per_element}, {self.swizzle_len}, {self.atom_len})"

    def script(self) -> str:
        """Script text: ``T.SwizzleLayout(3, 3, 3)``."""
        return f"T.{self!r}"


@node
class ComposeLayout(Layout):
    """A tile layout followed by a swizzle of its memory offset.

    Example::

        >>> layout = ComposeLayout(SwizzleLayout.from_bytes(128, 16), TileLayout(S[64, 64]))
        >>> layout.apply(1, 0)["m"]      # row 1, chunk 0 lands in chunk 1
        72
    """

    swizzle: SwizzleLayout
    tile: TileLayout

    @staticmethod
    def swizzled_rows(
        rows: int, cols: int, *, element_bits: int = 16, swizzle_bytes: int = 128
    ) -> ComposeLayout:
        """A row-major ``rows x cols`` tile under the ``swizzle_bytes`` swizzle: the shared
        layout TMA writes and wgmma / ldmatrix read without bank conflicts when a row is one
        swizzle row (``cols * element_bits / 8 == swizzle_bytes``).

        Example::

            >>> ComposeLayout.swizzled_rows(128, 64).apply(1, 0)["m"]   # row 1, chunk 1
            72
        """
        from tilewright.layout.builder import S

        return ComposeLayout(
            SwizzleLayout.from_bytes(swizzle_bytes, element_bits), TileLayout(S[rows, cols].shard)
        )

    def __post_init__(self) -> None:
        if not isinstance(self.swizzle, SwizzleLayout):
            raise TypeError(
                f"ComposeLayout's first part must be a SwizzleLayout, got {self.swizzle!r}"
            )
        if not isinstance(self.tile, TileLayout):
            raise TypeError(f"ComposeLayout's second part must be a TileLayout, got {self.tile!r}")

    @property
    def shape(self) -> tuple[int, ...]:
        return self.tile.shape

    def cosize(self) -> int:
        """The tile's memory span rounded up to whole swizzle atoms (the swizzle stays inside)."""
        atom = self.swizzle.atom_size()
        return -(-self.tile.cosize() // atom) * atom

    def chunk_elems(self) -> int:
        return self.swizzle.chunk_elems()

    def is_bijective(self) -> bool:
        """True when the tile is compact and fills whole swizzle atoms (or lies in one chunk)."""
        span = self.tile.cosize()
        return self.tile.is_bijective() and (
            span % self.swizzle.atom_size() == 0 or span <= self.swizzle.chunk_elems()
        )

    def apply(self, *coords: object, shape: Sequence[int] | None = None) -> dict[str, Offset]:
        """``tile.apply`` with the memory offset swizzled."""
        result = self.tile.apply(*coords, shape=shape)
        result[MEMORY] = self.swizzle.apply(result[MEMORY])
        return result

    def canonicalize(self) -> ComposeLayout:
        return ComposeLayout(self.swizzle, self.tile.canonicalize())

    def regroup(self, shape: Sequence[int]) -> ComposeLayout:
        return ComposeLayout(self.swizzle, self.tile.regroup(shape))

    def with_shape(self, shape: Sequence[int]) -> ComposeLayout:
        return self.regroup(shape)

    def slice(self, region: Sequence[object], shape: Sequence[int] | None = None) -> NoReturn:
        raise LayoutError(
            "a swizzled layout has no sub-tile layout of its own: slice its .tile and swizzle "
            "base + offset with its .swizzle"
        )

    def __repr__(self) -> str:
        return f"ComposeLayout({self.swizzle!r}, {self.tile!r})"

    def script(self) -> str:
        return f"T.ComposeLayout({self.swizzle.script()}, {self.tile.script()})"
