"""Two tile kernels built on ``Tx.<scope>.copy_async``: a TMA copy (Hopper) and a cp.async
copy (sm_80+), each staging a tile of ``A`` in shared memory and writing it to ``B``.

``tma_copy(m, n)``: each CTA (128 threads) has thread 0 issue one TMA load of its 128 x 64
float16 tile of ``A`` into a 128-byte-swizzled ``shared.dyn`` buffer, completing on an
mbarrier that thread 0 armed with the tile's 16384 bytes just before; every thread waits on
it (parity 0) and the CTA copies the tile to ``B`` with ``Tx.cta.copy`` (reading through the
swizzle).

``cp_async_copy(m, n)``: each CTA (128 threads) issues its 64 x 64 tile of ``A`` as 16-byte
cp.async copies into a 128-byte-swizzled shared tile, waits for the group, and copies it to
``B``.

Example::

    f = tw.build(tma_copy(256, 128), target="cuda")     # sm_90
    f(a, b)                                               # b == a, bit for bit
"""

from __future__ import annotations

from typing import no_type_check

from tilewright.ir import PrimFunc
from tilewright.layout import ComposeLayout
from tilewright.script import tirx as T
from tilewright.script.tirx import tile as Tx

TMA_ROWS, TMA_COLS = 128, 64  # one 128-byte swizzle row of float16 a tile row
CP_ROWS, CP_COLS = 64, 64


def _check(m: int, n: int, rows: int, cols: int, name: str) -> None:
    if m % rows or n % cols:
        raise ValueError(f"{name}: {m} x {n} is not a multiple of the {rows} x {cols} tile")


def tma_copy(m: int, n: int) -> PrimFunc:
    """``B = A`` (``m x n`` float16) through TMA loads into shared memory (module docstring);
    ``m`` a multiple of 128, ``n`` of 64.

    Example: ``tma_copy(128, 64)`` is one CTA and one TMA load.
    """
    _check(m, n, TMA_ROWS, TMA_COLS, "tma_copy")
    layout = ComposeLayout.swizzled_rows(TMA_ROWS, TMA_COLS)

    @T.prim_func
    @no_type_check
    def main(A: T.Buffer((m, n), "float16"), B: T.Buffer((m, n), "float16")):
        T.device_entry()
        bx, by = T.cta_id([m // TMA_ROWS, n // TMA_COLS])
        tid = T.thread_id([128])
        As = T.alloc_buffer(
            (TMA_ROWS, TMA_COLS), "float16", scope="shared.dyn", align=1024, layout=layout
        )
        bar = T.alloc_buffer((1,), "uint64", scope="shared.dyn", align=8)
        if tid == 0:
            T.cuda.mbarrier_init(bar[0], 1)
            T.cuda.fence_mbarrier_init()
        T.cuda.cta_sync()
        if tid == 0:
            T.cuda.mbarrier_arrive_expect_tx(
                bar[0], T.cuda.region_bytes(As[0:TMA_ROWS, 0:TMA_COLS])
            )
            Tx.thread.copy_async(
                As[0:TMA_ROWS, 0:TMA_COLS],
                A[
                    bx * TMA_ROWS : bx * TMA_ROWS + TMA_ROWS,
                    by * TMA_COLS : by * TMA_COLS + TMA_COLS,
                ],
                mbar=bar[0],
            )
        T.cuda.mbarrier_wait(bar[0], 0)
        Tx.cta.copy(
            B[bx * TMA_ROWS : bx * TMA_ROWS + TMA_ROWS, by * TMA_COLS : by * TMA_COLS + TMA_COLS],
            As[0:TMA_ROWS, 0:TMA_COLS],
        )

    return main


def cp_async_copy(m: int, n: int) -> PrimFunc:
    """``B = A`` (``m x n`` float16) through cp.async copies into shared memory (module
    docstring); ``m`` and ``n`` multiples of 64.

    Example: ``cp_async_copy(64, 64)`` is one CTA of 128 threads, 4 rounds of 16 bytes each.
    """
    _check(m, n, CP_ROWS, CP_COLS, "cp_async_copy")
    layout = ComposeLayout.swizzled_rows(CP_ROWS, CP_COLS)

    @T.prim_func
    @no_type_check
    def main(A: T.Buffer((m, n), "float16"), B: T.Buffer((m, n), "float16")):
        T.device_entry()
        bx, by = T.cta_id([m // CP_ROWS, n // CP_COLS])
        T.thread_id([128])
        As = T.alloc_buffer(
            (CP_ROWS, CP_COLS), "float16", scope="shared.dyn", align=1024, layout=layout
        )
        Tx.cta.copy_async(
            As[0:CP_ROWS, 0:CP_COLS],
            A[bx * CP_ROWS : bx * CP_ROWS + CP_ROWS, by * CP_COLS : by * CP_COLS + CP_COLS],
        )
        T.cuda.cp_async_wait_group(0)
        T.cuda.cta_sync()
        Tx.cta.copy(
            B[bx * CP_ROWS : bx * CP_ROWS + CP_ROWS, by * CP_COLS : by * CP_COLS + CP_COLS],
            As[0:CP_ROWS, 0:CP_COLS],
        )

    return main
