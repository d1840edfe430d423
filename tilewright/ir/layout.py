"""``Layout``: the type of ``Buffer.layout``, and what every layout answers.

Input: nothing (an abstract base). Output: the interface the IR, the printer and the passes rely
on; the algebra itself (``TileLayout``, ``SwizzleLayout``, ``ComposeLayout``, built with
``S[...]``) lives in ``tilewright.layout``, after ``tilewright.arith``.
"""

from __future__ import annotations

from abc import ABCMeta, abstractmethod

from tilewright.ir.node import Node


class Layout(Node, metaclass=ABCMeta):
    """A map from a tile's logical coordinates to memory offsets (and hardware-axis offsets).

    Subclasses are immutable IR nodes, so a layout sits in ``Buffer.layout`` and takes part in
    structural equality and hashing. A buffer with a layout of ``shape`` stores ``cosize()``
    elements, flat.

    Example::

        >>> from tilewright.layout import S, TileLayout
        >>> layout = TileLayout(S[(4, 8) : (1, 4)])     # a Layout
        >>> layout.shape, layout.size(), layout.storage_shape
        ((4, 8), 32, (32,))
    """

    __slots__ = ()

    @property
    @abstractmethod
    def shape(self) -> tuple[int, ...]:
        """The logical shape the layout indexes."""

    def size(self) -> int:
        """The number of logical elements (the product of ``shape``)."""
        result = 1
        for extent in self.shape:
            result *= extent
        return result

    @abstractmethod
    def cosize(self) -> int:
        """The span of memory offsets: the elements of storage the layout needs."""

    @property
    def storage_shape(self) -> tuple[int, ...]:
        """The flat storage an allocation with this layout needs: ``(cosize(),)``."""
        return (self.cosize(),)

    @abstractmethod
    def script(self) -> str:
        """The layout as script text, e.g. ``T.TileLayout(S[(32, 32) : (32, 1)])``."""
