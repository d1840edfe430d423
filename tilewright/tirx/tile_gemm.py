"""A GEMM written with tile primitives: ``Tx.cta.copy`` into 128-byte-swizzled shared tiles,
``Tx.warpgroup.gemm`` (the ``wgmma`` variant) and ``Tx.warpgroup.copy`` of the fragment.

``C = A @ B.T`` in float32: A is ``m x k`` and B is ``n x k`` (both K-major, row-major in
global memory), C is ``m x n``. Each CTA computes a 128 x 128 tile with two warpgroups
(256 threads); for each 64-wide k tile all threads copy A's 128 x 64 and B's 128 x 64 tiles
into shared memory, fence them for the async proxy and meet at a barrier, then warpgroup
``wg`` multiplies rows ``64 wg`` to ``64 wg + 63`` into its accumulator; at the end each
warpgroup stores its 64 x 128 fragment. No pipelining: the simplest correct tile program
(``hopper_gemm`` is the fast one).

Example::

    func = tile_gemm(256, 256, 128)
    f = tw.build(func, target="cuda")     # sm_90a: wgmma appears
    f(a, b, c)                             # c = a @ b.T
"""

from __future__ import annotations

from typing import no_type_check

from tilewright.ir import PrimFunc
from tilewright.layout import ComposeLayout, wgmma_accumulator_layout
from tilewright.script import tirx as T
from tilewright.script.tirx import tile as Tx

BLOCK = 128  # the CTA's tile of C
HALF = 64  # rows a warpgroup multiplies
BLOCK_K = 64  # one 128-byte swizzle row of float16


def check_gemm_tiles(
    name: str, sizes: tuple[int, int, int], tile: tuple[int, int, int], dtype: str
) -> None:
    """Refuse (``ValueError``, naming the kernel) a problem that is not a whole number of
    tiles, or inputs that are not float16 or bfloat16.

    Example::

        >>> check_gemm_tiles("tile_gemm", (256, 128, 64), (128, 128, 64), "float16")
    """
    if any(size % t for size, t in zip(sizes, tile)):
        raise ValueError(
            f"{name}: {' x '.join(map(str, sizes))} is not a multiple of the "
            f"{' x '.join(map(str, tile))} tile"
        )
    if dtype not in ("float16", "bfloat16"):
        raise ValueError(f"{name}: dtype must be float16 or bfloat16, got {dtype!r}")


def tile_gemm(m: int, n: int, k: int, dtype: str = "float16") -> PrimFunc:
    """The kernel as a ``PrimFunc`` (module docstring); ``m``, ``n`` multiples of 128, ``k``
    of 64, ``dtype`` float16 or bfloat16.

    Example: ``tile_gemm(128, 128, 64)`` is one CTA and one k tile.
    """
    check_gemm_tiles("tile_gemm", (m, n, k), (BLOCK, BLOCK, BLOCK_K), dtype)
    swizzled = ComposeLayout.swizzled_rows(BLOCK, BLOCK_K)
    acc_layout = wgmma_accumulator_layout(HALF, BLOCK)
    k_tiles = k // BLOCK_K

    @T.prim_func
    @no_type_check
    def main(A_ptr: T.handle, B_ptr: T.handle, C_ptr: T.handle):
        A = T.match_buffer(A_ptr, (m, k), dtype)
        B = T.match_buffer(B_ptr, (n, k), dtype)
        C = T.match_buffer(C_ptr, (m, n), "float32")
        T.device_entry()
        bx, by = T.cta_id([m // BLOCK, n // BLOCK])
        wg = T.warpgroup_id([2])
        T.thread_id([256])
        As = T.alloc_buffer(
            (BLOCK, BLOCK_K), dtype, scope="shared.dyn", align=1024, layout=swizzled
        )
        Bs = T.alloc_buffer(
            (BLOCK, BLOCK_K), dtype, scope="shared.dyn", align=1024, layout=swizzled
        )
        acc = T.alloc_buffer((HALF, BLOCK), "float32", scope="local", layout=acc_layout)
        for kt in range(k_tiles):
            Tx.cta.copy(
                As[0:BLOCK, 0:BLOCK_K],
                A[bx * BLOCK : bx * BLOCK + BLOCK, kt * BLOCK_K : kt * BLOCK_K + BLOCK_K],
            )
            Tx.cta.copy(
                Bs[0:BLOCK, 0:BLOCK_K],
                B[by * BLOCK : by * BLOCK + BLOCK, kt * BLOCK_K : kt * BLOCK_K + BLOCK_K],
            )
            T.cuda.fence_proxy_async()
            T.cuda.cta_sync()
            Tx.wg.gemm(
                acc[0:HALF, 0:BLOCK],
                As[wg * HALF : wg * HALF + HALF, 0:BLOCK_K],
                Bs[0:BLOCK, 0:BLOCK_K],
                accum=kt > 0,
            )
            T.cuda.cta_sync()  # every warpgroup is done reading before the next copies
        Tx.wg.copy(
            C[
                bx * BLOCK + wg * HALF : bx * BLOCK + wg * HALF + HALF,
                by * BLOCK : by * BLOCK + BLOCK,
            ],
            acc[0:HALF, 0:BLOCK],
        )

    return main
