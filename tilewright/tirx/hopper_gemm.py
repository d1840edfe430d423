"""A warp-specialised Hopper GEMM written with the raw Hopper intrinsics: TMA loads completing
on mbarriers, a multi-stage shared-memory ring with 128-byte swizzles, and ``wgmma`` reading
both operands from shared memory through descriptors. It is the reference the tile layer's
``Tx.copy_async`` (TMA) and ``Tx.gemm`` (wgmma) variants lower to (issue 14), and what
``benchmarks/gpu_hopper_gemm.py`` measures.

``C = A @ B.T``: A is M x K and Bt is N x K, both row-major (K contiguous, the layout wgmma
reads without transposing), C is M x N. Each CTA computes a ``block_m x block_n`` tile with
three warpgroups: warpgroup 0 is the producer (one elected thread issues the TMA copies of
each k tile into the next free stage), warpgroups 1 and 2 are consumers (each multiplies
``block_m / 2`` rows, ``m64nNk16`` wgmmas over the stage, then frees it). Stage ``s`` is full
when ``full[s]`` completes (the copies' bytes arrived) and empty when ``empty[s]`` completes
(both consumers arrived).

The copies read A and Bt through TMA tensor maps (``tw.cuda.tensor_map``) with boxes
``(block_m, 64)`` and ``(block_n, 64)`` and 128-byte swizzles: the lowering makes them
``__grid_constant__`` kernel parameters, and the runtime encodes them on the host from the
tensors the caller passes.

Example::

    func = hopper_gemm(4096, 4096, 4096)
    f = tw.build(func, target="cuda")          # sm_90a
    f(a, bt, c)                                 # torch tensors (or NDArray) on the GPU
"""

from __future__ import annotations

from typing import Any, no_type_check

from tilewright.ir import PrimExpr, PrimFunc
from tilewright.script import tir as T

# wgmma's k step (16 elements) and the tile's k extent (64 elements: one 128-byte row).
K_STEP = 16
BLOCK_K = 64
SWIZZLE_ROW_BYTES = 128
SWIZZLE_ATOM_BYTES = 1024  # 8 rows of 128 bytes: the descriptor's stride between row groups
SHARED_BYTES = 227 * 1024  # the most dynamic shared memory a block may have on sm_90


def grouped_tile(t: Any, tiles_m: int, tiles_n: int, group: int) -> tuple[Any, Any]:
    """Row and column of tile ``t`` when tiles are visited in groups of ``group`` rows of
    tiles (the last group may have fewer), column by column inside a group: the CTAs that
    run together share rows of A and columns of B in L2. ``t`` is an int or an expression.

    Example::

        >>> [grouped_tile(t, 3, 2, 2) for t in range(6)]
        [(0, 0), (1, 0), (0, 1), (1, 1), (2, 0), (2, 1)]
    """
    span = group * tiles_n
    first = t // span * group
    left = tiles_m - first
    rows = T.min(group, left) if isinstance(left, PrimExpr) else min(group, left)
    return first + t % span % rows, t % span // rows


def hopper_gemm(
    m: int,
    n: int,
    k: int,
    *,
    block_m: int = 128,
    block_n: int = 128,
    stages: int = 4,
    in_dtype: str = "float16",
    out_dtype: str = "float16",
    grid: int = 132,
    group_m: int = 8,
) -> PrimFunc:
    """The GEMM as a ``PrimFunc`` (module docstring); the sizes must divide the problem.

    Args:
        m, n, k: the problem (C is m x n; the reduction is k long).
        block_m, block_n: a CTA's tile of C (block_m is 128: two consumer warpgroups).
        stages: k tiles in flight in the shared-memory ring.
        in_dtype, out_dtype: A's and B's element type (float16 or bfloat16); C's.
        grid: CTAs, each looping over the tiles ``bx, bx + grid, ...`` (persistent: one
            per SM, 132 on an H200, keeps the ring full across tiles).
        group_m: tiles are visited in groups of ``group_m`` rows of tiles, column by
            column inside a group, so that the CTAs running together share rows of A and
            columns of B in L2.
    """
    if block_m != 128 or block_n % 8 or not 8 <= block_n <= 256:
        raise ValueError(
            "hopper_gemm: block_m is 128 (two consumer warpgroups of 64 rows) and block_n a "
            "multiple of 8 up to 256"
        )
    if m % block_m or n % block_n or k % BLOCK_K:
        raise ValueError(
            f"hopper_gemm: {m} x {n} x {k} is not a multiple of the {block_m} x {block_n} x "
            f"{BLOCK_K} tile (tails are not written yet)"
        )
    if grid < 1 or group_m < 1:
        raise ValueError(f"hopper_gemm: grid ({grid}) and group_m ({group_m}) must be positive")
    if in_dtype not in ("float16", "bfloat16"):
        raise ValueError(f"hopper_gemm: the inputs are float16 or bfloat16, not {in_dtype}")
    ab = {"float16": "f16", "bfloat16": "bf16"}[in_dtype]
    a_tile, b_tile = block_m * BLOCK_K, block_n * BLOCK_K  # elements of one stage
    tx_bytes = (a_tile + b_tile) * 2
    if stages < 2 or stages * tx_bytes + 16 * stages > SHARED_BYTES:
        raise ValueError(
            f"hopper_gemm: {stages} stages of {tx_bytes // 1024} KB (a {block_m} x {block_n} "
            f"tile) do not fit the {SHARED_BYTES // 1024} KB of shared memory a block may have "
            "(at least 2 stages)"
        )
    k_tiles = k // BLOCK_K
    tiles_m, tiles_n = m // block_m, n // block_n
    tiles = tiles_m * tiles_n
    grid = min(grid, tiles)
    rounds = -(-tiles // grid)  # tiles a CTA visits, at most
    group = min(group_m, tiles_m)
    acc_count = block_n // 2
    half = block_m // 2

    @T.prim_func
    @no_type_check
    def main(
        A: T.Buffer((m, k), in_dtype),
        Bt: T.Buffer((n, k), in_dtype),
        C: T.Buffer((m, n), out_dtype),
    ):
        for bx in T.thread_binding(grid, thread="blockIdx.x"):
            for tx in T.thread_binding(384, thread="threadIdx.x"):
                with T.block("gemm"):
                    T.reads(A[0:m, 0:k], Bt[0:n, 0:k])
                    T.writes(C[0:m, 0:n])
                    As = T.alloc_buffer(
                        (stages * a_tile,), in_dtype, scope="shared.dyn", align=1024
                    )
                    Bs = T.alloc_buffer(
                        (stages * b_tile,), in_dtype, scope="shared.dyn", align=1024
                    )
                    full = T.alloc_buffer((stages,), "uint64", scope="shared.dyn", align=8)
                    empty = T.alloc_buffer((stages,), "uint64", scope="shared.dyn", align=8)
                    acc = T.alloc_buffer((acc_count,), "float32", scope="local")
                    if tx == 0:
                        for s in range(stages):
                            T.evaluate(
                                T.call_intrin(
                                    "int32", "tw.cuda.mbarrier_init", T.address_of(full[s]), 1
                                )
                            )
                            T.evaluate(
                                T.call_intrin(
                                    "int32", "tw.cuda.mbarrier_init", T.address_of(empty[s]), 2
                                )
                            )
                        T.evaluate(T.call_intrin("int32", "tw.cuda.fence_mbarrier_init"))
                    T.evaluate(T.call_intrin("int32", "tw.sync_threads"))
                    if tx < 128:
                        # The producer: one thread issues every copy.
                        T.evaluate(T.call_intrin("int32", "tw.cuda.setmaxnreg", 0, 40))
                        if tx == 0:
                            for r in range(rounds):
                                if r * grid + bx < tiles:
                                    tm = T.meta_var(
                                        grouped_tile(r * grid + bx, tiles_m, tiles_n, group)[0]
                                    )
                                    tn = T.meta_var(
                                        grouped_tile(r * grid + bx, tiles_m, tiles_n, group)[1]
                                    )
                                    for kt in range(k_tiles):
                                        # Step g of the ring: stage g % stages, round
                                        # g // stages.
                                        g = T.meta_var(r * k_tiles + kt)
                                        T.evaluate(
                                            T.call_intrin(
                                                "int32",
                                                "tw.cuda.mbarrier_wait",
                                                T.address_of(empty[g % stages]),
                                                (g // stages + 1) % 2,
                                            )
                                        )
                                        T.evaluate(
                                            T.call_intrin(
                                                "int32",
                                                "tw.cuda.mbarrier_arrive_expect_tx",
                                                T.address_of(full[g % stages]),
                                                tx_bytes,
                                            )
                                        )
                                        T.evaluate(
                                            T.call_intrin(
                                                "int32",
                                                "tw.cuda.tma_load",
                                                As.access_ptr("w", offset=g % stages * a_tile),
                                                T.call_intrin(
                                                    "handle",
                                                    "tw.cuda.tensor_map",
                                                    A.data,
                                                    block_m,
                                                    BLOCK_K,
                                                    SWIZZLE_ROW_BYTES,
                                                ),
                                                T.address_of(full[g % stages]),
                                                kt * BLOCK_K,
                                                tm * block_m,
                                            )
                                        )
                                        T.evaluate(
                                            T.call_intrin(
                                                "int32",
                                                "tw.cuda.tma_load",
                                                Bs.access_ptr("w", offset=g % stages * b_tile),
                                                T.call_intrin(
                                                    "handle",
                                                    "tw.cuda.tensor_map",
                                                    Bt.data,
                                                    block_n,
                                                    BLOCK_K,
                                                    SWIZZLE_ROW_BYTES,
                                                ),
                                                T.address_of(full[g % stages]),
                                                kt * BLOCK_K,
                                                tn * block_n,
                                            )
                                        )
                    else:
                        # Consumers: warpgroup 1 rows [0, 64), warpgroup 2 rows [64, 128).
                        T.evaluate(T.call_intrin("int32", "tw.cuda.setmaxnreg", 1, 232))
                        for r in range(rounds):
                            if r * grid + bx < tiles:
                                tm = T.meta_var(
                                    grouped_tile(r * grid + bx, tiles_m, tiles_n, group)[0]
                                )
                                tn = T.meta_var(
                                    grouped_tile(r * grid + bx, tiles_m, tiles_n, group)[1]
                                )
                                for kt in range(k_tiles):
                                    g = T.meta_var(r * k_tiles + kt)
                                    T.evaluate(
                                        T.call_intrin(
                                            "int32",
                                            "tw.cuda.mbarrier_wait",
                                            T.address_of(full[g % stages]),
                                            g // stages % 2,
                                        )
                                    )
                                    T.evaluate(T.call_intrin("int32", "tw.cuda.wgmma_fence"))
                                    for kk in T.unroll(BLOCK_K // K_STEP):
                                        T.evaluate(
                                            T.call_intrin(
                                                "int32",
                                                "tw.cuda.wgmma_mma_async",
                                                block_n,
                                                ab,
                                                T.call_intrin(
                                                    "uint64",
                                                    "tw.cuda.wgmma_descriptor",
                                                    As.access_ptr(
                                                        "r",
                                                        offset=g % stages * a_tile
                                                        + (tx // 128 - 1) * half * BLOCK_K
                                                        + kk * K_STEP,
                                                    ),
                                                    16,
                                                    SWIZZLE_ATOM_BYTES,
                                                    SWIZZLE_ROW_BYTES,
                                                ),
                                                T.call_intrin(
                                                    "uint64",
                                                    "tw.cuda.wgmma_descriptor",
                                                    Bs.access_ptr(
                                                        "r",
                                                        offset=g % stages * b_tile + kk * K_STEP,
                                                    ),
                                                    16,
                                                    SWIZZLE_ATOM_BYTES,
                                                    SWIZZLE_ROW_BYTES,
                                                ),
                                                T.address_of(acc[0]),
                                                0,
                                                # The tile's first product overwrites.
                                                T.if_then_else(kt + kk > 0, 1, 0),
                                                0,
                                                0,
                                            )
                                        )
                                    T.evaluate(T.call_intrin("int32", "tw.cuda.wgmma_commit_group"))
                                    # One group stays in flight: when the previous step's
                                    # group is done, its stage is free.
                                    T.evaluate(
                                        T.call_intrin("int32", "tw.cuda.wgmma_wait_group", 1)
                                    )
                                    if kt > 0 and tx % 128 == 0:
                                        T.evaluate(
                                            T.call_intrin(
                                                "int32",
                                                "tw.cuda.mbarrier_arrive",
                                                T.address_of(empty[(g + stages - 1) % stages]),
                                            )
                                        )
                                T.evaluate(T.call_intrin("int32", "tw.cuda.wgmma_wait_group", 0))
                                if tx % 128 == 0:
                                    T.evaluate(
                                        T.call_intrin(
                                            "int32",
                                            "tw.cuda.mbarrier_arrive",
                                            T.address_of(
                                                empty[(r * k_tiles + k_tiles - 1) % stages]
                                            ),
                                        )
                                    )
                                # The accumulator's fragment layout: pairs of adjacent
                                # columns, stored two elements at a time.
                                for p in T.unroll(acc_count // 2):
                                    for v in T.vectorized(2):
                                        row = T.meta_var(
                                            tx % 128 // 32 * 16 + tx % 32 // 4 + p % 2 * 8
                                        )
                                        col = T.meta_var(p // 2 * 8 + tx % 4 * 2 + v)
                                        C[
                                            tm * block_m + (tx // 128 - 1) * half + row,
                                            tn * block_n + col,
                                        ] = T.cast(acc[p * 2 + v], out_dtype)

    return main
