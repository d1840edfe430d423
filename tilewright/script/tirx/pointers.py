"""``T.address_of(A[i])``: the address of a buffer element (a ``tw.address_of`` call)."""

from __future__ import annotations

from tilewright.ir import BufferLoad, Call
from tilewright.ir.dtype import handle
from tilewright.tirx.intrinsics import ADDRESS_OF


def address_of(element: object) -> Call:
    """``T.address_of(A_1[i])``: a handle to element ``i``. Example: ``T.address_of(S[0])``."""
    if not isinstance(element, BufferLoad):
        raise TypeError(f"T.address_of takes a buffer element such as A[i], got {element!r}")
    return Call(handle, ADDRESS_OF, (element,))
