"""The intrinsic calls the tile layer emits: addresses, byte copies and the CTA barrier.

Input: flat buffers and element offsets. Output: ``Call`` nodes the GPU code generators print:

- ``tw.address_of(buf[i])`` (handle): the address of element ``i`` of the 1-D buffer ``buf``.
- ``tw.cuda.copy_bytes(dst, src, n)`` (int32, evaluated): copy ``n`` (1, 2, 4, 8 or 16)
  naturally aligned bytes from address ``src`` to address ``dst`` as one vector transfer.
- ``tw.cuda.cta_sync()`` (int32, evaluated): the script's CTA barrier; ``LowerTIRx`` turns
  it into ``tw.sync_threads()``, the GPU pipeline's barrier.
"""

from __future__ import annotations

from tilewright.ir import Buffer, BufferLoad, Call, Evaluate, IntImm, PrimExpr, op
from tilewright.ir.dtype import handle, int32

ADDRESS_OF = "tw.address_of"
COPY_BYTES = "tw.cuda.copy_bytes"
CTA_SYNC = "tw.cuda.cta_sync"
SYNC_THREADS = "tw.sync_threads"
COPY_WIDTHS = (16, 8, 4, 2, 1)


def address_of(buffer: Buffer, index: PrimExpr | int) -> Call:
    """``&buffer[index]`` of a 1-D buffer. Example: ``address_of(A_1, f * 128)``."""
    return Call(handle, ADDRESS_OF, (BufferLoad(buffer, (op.convert(index),)),))


def copy_bytes(dst: PrimExpr, src: PrimExpr, nbytes: int) -> Evaluate:
    """The statement copying ``nbytes`` from address ``src`` to ``dst`` as one transfer.

    Example: ``copy_bytes(address_of(S, i), address_of(A, i), 16)``.
    """
    if nbytes not in COPY_WIDTHS:
        raise ValueError(f"copy_bytes moves 1, 2, 4, 8 or 16 bytes, got {nbytes}")
    return Evaluate(Call(int32, COPY_BYTES, (dst, src, IntImm(nbytes, int32))))


def cta_sync() -> Call:
    """The script-level CTA barrier call (``T.cuda.cta_sync()``)."""
    return Call(int32, CTA_SYNC, ())


def sync_threads() -> Evaluate:
    """The GPU pipeline's barrier statement, ``tw.sync_threads()`` (``__syncthreads()``)."""
    return Evaluate(Call(int32, SYNC_THREADS, ()))
