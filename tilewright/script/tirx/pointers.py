"""``T.address_of(A[i])``: the address of a buffer element (an ``ADDRESS_OF`` call)."""

from __future__ import annotations

from tilewright.ir import BufferLoad, Call
from tilewright.ir.intrinsics import ADDRESS_OF


def address_of(element: object) -> Call:
    """``T.address_of(A_1[i])``: a handle to element ``i``. Example: ``T.address_of(S[0])``."""
    if not isinstance(element, BufferLoad):
        raise TypeError(f"T.address_of takes a buffer element such as A[i], got {element!r}")
    return ADDRESS_OF.call(element)
