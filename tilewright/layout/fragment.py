"""The register fragments of tensor-core accumulators, as ``TileLayout``s over threads: Hopper's
``wgmma`` (below) and ``mma.sync`` m16n8 (sm_80+, ``mma_accumulator_layout``).

``wgmma.mma_async.m64nNk16`` with float32 accumulators leaves a 64 x N tile spread over the
128 threads of a warpgroup: thread ``t`` (warp ``w = t // 32``, lane ``l = t % 32``) holds
``N / 2`` registers; register ``i`` is the element

    row = w * 16 + (i // 2 % 2) * 8 + l // 4
    col = (i // 4) * 8 + (l % 4) * 2 + i % 2

(PTX ISA, "wgmma 64N register fragment D"). An M x N accumulator (M a multiple of 64) stacks
``M / 64`` such tiles, block ``b`` in registers ``[b * N / 2, (b + 1) * N / 2)``.

Example::

    >>> wgmma_accumulator_layout(64, 16)
    S[(1, 4, 2, 8, 2, 4, 2) : (8, 1@warpid, 2, 4@laneid, 4, 1@laneid, 1)]
    >>> wgmma_fragment_coord(thread=37, register=5, n=16)
    (17, 11)
"""

from __future__ import annotations

from tilewright.layout.grouping import LayoutError
from tilewright.layout.shard import Iter
from tilewright.layout.tile_layout import TileLayout

WGMMA_M = 64  # rows of one wgmma accumulator block
WGMMA_N_MAX = 256


def wgmma_accumulator_layout(m: int, n: int) -> TileLayout:
    """The layout of an ``m x n`` float32 wgmma accumulator over a warpgroup's registers.

    Its logical shape is ``(m, n)`` (row-major coordinates); ``warpid`` (0-3, the warp in the
    warpgroup) and ``laneid`` say which thread holds an element, the memory offset which of
    its ``m * n / 128`` registers. Use it as the ``layout=`` of a ``scope="local"`` buffer
    that ``Tx.warpgroup.gemm`` accumulates into and ``Tx.warpgroup.copy`` stores.

    Example::

        acc = T.alloc_buffer((64, 128), "float32", scope="local",
                             layout=wgmma_accumulator_layout(64, 128))
    """
    if m < WGMMA_M or m % WGMMA_M or n < 8 or n % 8 or n > WGMMA_N_MAX:
        raise LayoutError(
            f"wgmma accumulator {m} x {n}: m must be a multiple of 64 and n a multiple of 8 "
            f"from 8 to {WGMMA_N_MAX}"
        )
    return TileLayout(
        (
            Iter(m // WGMMA_M, n // 2),  # m64 block: the next n / 2 registers
            Iter(4, 1, "warpid"),  # 16 rows a warp
            Iter(2, 2),  # rows +8: registers 2, 3 of each group of 4
            Iter(8, 4, "laneid"),  # row within 8: lane // 4
            Iter(n // 8, 4),  # 8-column group: registers 4j .. 4j + 3
            Iter(4, 1, "laneid"),  # column pair: lane % 4
            Iter(2, 1),  # the pair's two columns: consecutive registers
        )
    )


def wgmma_fragment_coord(thread: int, register: int, n: int) -> tuple[int, int]:
    """``(row, col)`` of register ``register`` of warpgroup thread ``thread`` (0-127) in an
    m x ``n`` accumulator (rows of later m64 blocks follow: register ``b * n / 2 + i``).

    Example: ``wgmma_fragment_coord(0, 0, 128) == (0, 0)``; thread 4, register 2: ``(9, 0)``.
    """
    if not 0 <= thread < 128:
        raise ValueError(f"a warpgroup thread is 0 to 127, got {thread}")
    block, i = divmod(register, n // 2)
    warp, lane = divmod(thread, 32)
    row = block * WGMMA_M + warp * 16 + (i // 2 % 2) * 8 + lane // 4
    col = (i // 4) * 8 + (lane % 4) * 2 + i % 2
    return row, col


# -- mma.sync m16n8k16 (sm_80 and newer): one warp's fragments ------------------------------

MMA_M, MMA_N, MMA_K = 16, 8, 16  # mma.sync.aligned.m16n8k16 with 16-bit inputs


def mma_accumulator_layout(m: int, n: int) -> TileLayout:
    """The layout of an ``m x n`` float32 ``mma.sync`` m16n8 accumulator over a warp's lanes.

    The m16n8 tile ``(i, j)`` (rows ``16 i`` to ``16 i + 15``, columns ``8 j`` to ``8 j + 7``)
    is registers ``[4 (i n / 8 + j), 4 (i n / 8 + j) + 4)`` of every lane; lane ``l`` holds
    register ``r`` of a tile as the element

        row = 8 (r // 2) + l // 4        col = 2 (l % 4) + r % 2

    (PTX ISA, "mma.m16n8k16 fragment C/D"). Declare a ``scope="local"`` float32 buffer with it
    for ``Tx.warp.gemm`` (the ``mma_sync`` variant) and store it with ``Tx.warp.copy``.

    Example::

        >>> mma_accumulator_layout(16, 16)
        S[(1, 2, 8, 2, 4, 2) : (8, 2, 4@laneid, 4, 1@laneid, 1)]

        acc = T.alloc_buffer((32, 32), "float32", scope="local",
                             layout=mma_accumulator_layout(32, 32))
    """
    if m < MMA_M or m % MMA_M or n < MMA_N or n % MMA_N:
        raise LayoutError(
            f"mma accumulator {m} x {n}: m must be a multiple of {MMA_M} and n of {MMA_N}"
        )
    return TileLayout(
        (
            Iter(m // MMA_M, n // 2),  # m16 block: the next n / 2 registers
            Iter(2, 2),  # rows +8: registers 2, 3 of each tile
            Iter(8, 4, "laneid"),  # row within 8: lane // 4
            Iter(n // MMA_N, 4),  # n8 tile: 4 registers each
            Iter(4, 1, "laneid"),  # column pair: lane % 4
            Iter(2, 1),  # the pair's two columns: consecutive registers
        )
    )


def mma_fragment_coord(lane: int, register: int, n: int) -> tuple[int, int]:
    """``(row, col)`` of register ``register`` of lane ``lane`` (0-31) in the ``m x n``
    accumulator of ``mma_accumulator_layout(m, n)``.

    Example: ``mma_fragment_coord(5, 2, 16) == (9, 2)``; lane 0, register 4: ``(0, 8)``.
    """
    if not 0 <= lane < 32:
        raise ValueError(f"a warp lane is 0 to 31, got {lane}")
    tile, i = divmod(register, 4)
    block, column_tile = divmod(tile, n // MMA_N)
    row = block * MMA_M + (i // 2) * 8 + lane // 4
    col = column_tile * MMA_N + (lane % 4) * 2 + i % 2
    return row, col
