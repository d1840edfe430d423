"""The Hopper and tile-layer kernels on the GPU at small sizes (so that ``scripts/gpu-check``
runs them under compute-sanitizer too): the warp-specialised TMA + wgmma GEMM with CTAs that
loop over several tiles, the tile-layer GEMMs (``Tx.wg.gemm`` on wgmma, ``Tx.warp.gemm`` on
mma.sync) and the ``copy_async`` copies (TMA, cp.async). Each result is checked against
numpy (float64 products; copies bit for bit)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import tilewright as tw
from tilewright.runtime.cuda_runtime import device_count

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(device_count() == 0, reason="needs a CUDA GPU"),
]


def _half(shape: tuple[int, ...], dtype: str, seed: int) -> np.ndarray:
    values = np.random.default_rng(seed).uniform(-0.5, 0.5, shape)
    if dtype == "bfloat16":
        ml_dtypes = pytest.importorskip("ml_dtypes")
        return values.astype(ml_dtypes.bfloat16)
    return values.astype(np.float16)


def _run(func: object, *arrays: np.ndarray) -> list[np.ndarray]:
    args = [tw.nd.array(a, tw.cuda(0)) for a in arrays]
    tw.build(func, target="cuda")(*args)
    return [a.numpy() for a in args]


def _relative_error(got: np.ndarray, want: np.ndarray) -> float:
    return float(np.abs(got.astype(np.float64) - want).max() / np.abs(want).max())


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize(("block_n", "stages"), [(128, 4), (256, 3)])
def test_hopper_gemm_with_ctas_looping_over_tiles(dtype: str, block_n: int, stages: int) -> None:
    from tilewright.tirx.hopper_gemm import hopper_gemm

    m, n, k = 256, 512, 320  # 2 x (4 or 2) tiles over 3 CTAs; 5 k tiles round a 3- or 4-ring
    func = hopper_gemm(m, n, k, block_n=block_n, stages=stages, in_dtype=dtype,
                       out_dtype="float32", grid=3, group_m=2)  # fmt: skip
    a, bt = _half((m, k), dtype, 0), _half((n, k), dtype, 1)
    c = np.full((m, n), np.nan, np.float32)
    *_, got = _run(func, a, bt, c)
    want = a.astype(np.float64) @ bt.astype(np.float64).T
    assert _relative_error(got, want) < 1e-5


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("a_in", ["shared", "registers"])
def test_tile_layer_wgmma_gemm(dtype: str, a_in: str) -> None:
    from tirx.gemm_kernels import registers_gemm

    from tilewright.tirx.tile_gemm import tile_gemm

    # A from shared memory (tile_gemm) or, in the fragment layout, from registers (_rs).
    m, n, k = (256, 128, 192) if a_in == "shared" else (128, 64, 32)
    make = tile_gemm if a_in == "shared" else registers_gemm
    a, b = _half((m, k), dtype, 2), _half((n, k), dtype, 3)
    c = np.full((m, n), np.nan, np.float32)
    *_, got = _run(make(m, n, k, dtype), a, b, c)
    assert _relative_error(got, a.astype(np.float64) @ b.astype(np.float64).T) < 1e-5


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_tile_layer_mma_sync_gemm(dtype: str) -> None:
    from tilewright.tirx.tile_gemm_mma import tile_gemm_mma

    m, n, k = 128, 64, 192
    a, b = _half((m, k), dtype, 4), _half((n, k), dtype, 5)
    c = np.full((m, n), np.nan, np.float32)
    *_, got = _run(tile_gemm_mma(m, n, k, dtype), a, b, c)
    assert _relative_error(got, a.astype(np.float64) @ b.astype(np.float64).T) < 1e-5


@pytest.mark.parametrize("kernel", ["tma_copy", "cp_async_copy"])
def test_copy_async_moves_tiles_bit_for_bit(kernel: str) -> None:
    from tilewright.tirx import tile_copy_async

    m, n = 256, 128
    a = _half((m, n), "float16", 6)
    b = np.zeros((m, n), np.float16)
    _, got = _run(getattr(tile_copy_async, kernel)(m, n), a, b)
    np.testing.assert_array_equal(got.view(np.uint16), a.view(np.uint16))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize(
    ("m", "n", "k", "kwargs"),
    [
        # Tails in every dimension, 3 CTAs looping over 2 x 3 tiles, a 2-stage ring.
        (200, 300, 200, {"block_n": 128, "stages": 2, "grid": 3, "group_m": 2}),
        # The default 128 x 256 tile, an odd n (single-element stores) and 7 k tiles.
        (300, 301, 424, {"grid": 2}),
        # Smaller than one tile: the boxes shrink to the tensor.
        (72, 40, 64, {"block_n": 64, "stages": 3}),
        # A float32 bias row, an odd n: the last column tile's bias reads are guarded.
        (200, 301, 200, {"block_n": 128, "stages": 2, "grid": 3, "bias": True}),
    ],
)
def test_tile_layer_warp_specialised_gemm_with_tails(
    dtype: str, m: int, n: int, k: int, kwargs: dict
) -> None:
    from tilewright.tirx.tile_hopper_gemm import tile_hopper_gemm

    func = tile_hopper_gemm(m, n, k, in_dtype=dtype, out_dtype="float32", **kwargs)
    a, bt = _half((m, k), dtype, 7), _half((n, k), dtype, 8)
    c = np.full((m, n), np.nan, np.float32)
    want = a.astype(np.float64) @ bt.astype(np.float64).T
    if kwargs.get("bias"):
        bias = np.random.default_rng(13).standard_normal(n).astype(np.float32)
        *_, got, _ = _run(func, a, bt, c, bias)
        want = want + bias
    else:
        *_, got = _run(func, a, bt, c)
    assert not np.isnan(got).any()  # every element stored
    assert _relative_error(got, want) < 1e-5


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize(
    ("m", "n", "k", "kwargs"),
    [
        # Tails in M, N and K; 3 CTAs over 2 x 3 tiles: staging tiles reused across tiles.
        (200, 328, 200, {"block_n": 128, "stages": 2, "grid": 3, "group_m": 2}),
        # 3 chunks a tile (block_n 192): a tile's last and the next one's first share one.
        (264, 520, 136, {"block_n": 192, "stages": 3, "grid": 2}),
        # Fewer rows than a warpgroup's 64: the store boxes shrink to C; GELU before.
        (40, 64, 64, {"block_n": 64, "stages": 2, "activation": "gelu"}),
        # A bias row (its last column tile guarded: 328 = 2 x 128 + 72), then ReLU.
        (200, 328, 200, {"block_n": 128, "stages": 2, "bias": True, "activation": "relu"}),
    ],
)
def test_tile_layer_gemm_tma_store_epilogue(dtype: str, m: int, n: int, k: int, kwargs) -> None:
    from tilewright.tirx.tile_hopper_gemm import tile_hopper_gemm

    func = tile_hopper_gemm(m, n, k, in_dtype=dtype, out_dtype=dtype, epilogue="tma", **kwargs)
    a, bt = _half((m, k), dtype, 9), _half((n, k), dtype, 10)
    c = np.full((m, n), np.nan, a.dtype)
    want = a.astype(np.float64) @ bt.astype(np.float64).T
    if kwargs.get("bias"):
        bias = (_half((1, n), dtype, 12) * 8).reshape(n)
        *_, got, _ = _run(func, a, bt, c, bias)
        want = want + bias.astype(np.float64)
    else:
        *_, got = _run(func, a, bt, c)
    if kwargs.get("activation") == "relu":
        want = np.maximum(want, 0)
    if kwargs.get("activation") == "gelu":
        want = want * (1 + np.vectorize(math.erf)(want / math.sqrt(2))) / 2
    assert not np.isnan(got.astype(np.float64)).any()  # every element stored
    assert _relative_error(got, want) < 1e-2  # C rounded to 16 bits


def test_elementwise_epilogue_on_an_accumulator_layout() -> None:
    from tirx.epilogue_kernels import bias_relu_epilogue

    rng = np.random.default_rng(11)
    a = rng.standard_normal((64, 16)).astype(np.float32)
    bias = rng.standard_normal(16).astype(np.float16)
    c = np.full((64, 16), np.nan, np.float16)
    *_, got = _run(bias_relu_epilogue, a, bias, c)
    want = np.maximum(a + bias.astype(np.float32), 0).astype(np.float16)
    np.testing.assert_array_equal(got, want)
