"""A GEMM written with tile primitives for sm_80 and newer: ``Tx.cta.copy`` into swizzled
shared tiles, ``Tx.warp.gemm`` (the ``mma_sync`` variant: ldmatrix + mma.sync m16n8k16) and
``Tx.warp.copy`` of each warp's m16n8 fragments.

``C = A @ B.T`` in float32: A is ``m x k`` and B is ``n x k`` (both K-major, row-major in
global memory), C is ``m x n``. Each CTA of 4 warps (128 threads) computes a 64 x 64 tile; for
each 64-wide k tile all threads copy A's and B's 64 x 64 tiles into shared memory (rows of 128
bytes under the 128-byte swizzle, so that ldmatrix's 8 rows hit distinct banks) and meet at a
barrier; warp ``w`` then multiplies rows ``32 (w // 2)`` on of A by rows ``32 (w % 2)`` on of B
into its 32 x 32 accumulator (32 float32 registers a lane), and all meet again before the next
copies. At the end each warp stores its fragment. No pipelining: the simplest correct tile
program on the tensor cores of an A100 or H100 without wgmma.

Example::

    func = tile_gemm_mma(128, 128, 128)
    f = tw.build(func, target="cuda -arch=sm_80")
    f(a, b, c)                             # c = a @ b.T
"""

from __future__ import annotations

from typing import no_type_check

from tilewright.ir import PrimFunc
from tilewright.layout import ComposeLayout
from tilewright.layout.fragment import mma_accumulator_layout
from tilewright.script import tirx as T
from tilewright.script.tirx import tile as Tx
from tilewright.tirx.tile_gemm import check_gemm_tiles

BLOCK = 64  # the CTA's tile of C
WARP_TILE = 32  # each of the 2 x 2 warps' tile of C
BLOCK_K = 64  # one 128-byte swizzle row of float16


def tile_gemm_mma(m: int, n: int, k: int, dtype: str = "float16") -> PrimFunc:
    """The kernel as a ``PrimFunc`` (module docstring); ``m``, ``n``, ``k`` multiples of 64,
    ``dtype`` float16 or bfloat16.

    Example: ``tile_gemm_mma(64, 64, 64)`` is one CTA and one k tile.
    """
    check_gemm_tiles("tile_gemm_mma", (m, n, k), (BLOCK, BLOCK, BLOCK_K), dtype)
    swizzled = ComposeLayout.swizzled_rows(BLOCK, BLOCK_K)
    acc_layout = mma_accumulator_layout(WARP_TILE, WARP_TILE)
    k_tiles = k // BLOCK_K

    @T.prim_func
    @no_type_check
    def main(A_ptr: T.handle, B_ptr: T.handle, C_ptr: T.handle):
        A = T.match_buffer(A_ptr, (m, k), dtype)
        B = T.match_buffer(B_ptr, (n, k), dtype)
        C = T.match_buffer(C_ptr, (m, n), "float32")
        T.device_entry()
        bx, by = T.cta_id([m // BLOCK, n // BLOCK])
        w = T.warp_id([4])
        As = T.alloc_buffer((BLOCK, BLOCK_K), dtype, scope="shared", align=128, layout=swizzled)
        Bs = T.alloc_buffer((BLOCK, BLOCK_K), dtype, scope="shared", align=128, layout=swizzled)
        acc = T.alloc_buffer((WARP_TILE, WARP_TILE), "float32", scope="local", layout=acc_layout)
        for kt in range(k_tiles):
            Tx.cta.copy(
                As[0:BLOCK, 0:BLOCK_K],
                A[bx * BLOCK : bx * BLOCK + BLOCK, kt * BLOCK_K : kt * BLOCK_K + BLOCK_K],
            )
            Tx.cta.copy(
                Bs[0:BLOCK, 0:BLOCK_K],
                B[by * BLOCK : by * BLOCK + BLOCK, kt * BLOCK_K : kt * BLOCK_K + BLOCK_K],
            )
            T.cuda.cta_sync()
            Tx.warp.gemm(
                acc[0:WARP_TILE, 0:WARP_TILE],
                As[w // 2 * WARP_TILE : w // 2 * WARP_TILE + WARP_TILE, 0:BLOCK_K],
                Bs[w % 2 * WARP_TILE : w % 2 * WARP_TILE + WARP_TILE, 0:BLOCK_K],
                accum=kt > 0,
            )
            T.cuda.cta_sync()  # every warp is done reading before the next copies
        Tx.warp.copy(
            C[
                bx * BLOCK + w // 2 * WARP_TILE : bx * BLOCK + w // 2 * WARP_TILE + WARP_TILE,
                by * BLOCK + w % 2 * WARP_TILE : by * BLOCK + w % 2 * WARP_TILE + WARP_TILE,
            ],
            acc[0:WARP_TILE, 0:WARP_TILE],
        )

    return main
