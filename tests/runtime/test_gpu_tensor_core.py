"""Tensor-core GEMMs (``mma.sync`` + ``ldmatrix`` + ``cp.async``) run on the GPU and match numpy.

The hand schedule of ``tilewright.meta_schedule.testing.tensor_core`` in the configurations
the benchmark measures (small sizes): shared-memory pipelines of 1 to 3 stages, register
fragments double-buffered or not, the compute-first order, nested pipelines, float16 and
bfloat16 inputs, float32 and float16 accumulation.
"""

from __future__ import annotations

import numpy as np
import pytest

import tilewright as tw
from tilewright.meta_schedule.testing.tensor_core import mma_matmul, schedule_mma
from tilewright.runtime.cuda_runtime import device_count
from tilewright.schedule import Schedule

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(device_count() == 0, reason="needs a CUDA GPU"),
]

W4 = dict(warps_m=2, warps_n=2, frags_m=4, frags_n=4)
CONFIGS = [
    dict(warps_m=1, warps_n=1, frags_m=1, frags_n=1, k_frags=1, stages=1),
    dict(warps_m=2, warps_n=2, frags_m=2, frags_n=2, k_frags=2, stages=2),
    dict(warps_m=2, warps_n=2, frags_m=4, frags_n=4, k_frags=4, stages=3, fragment_stages=2),
    dict(warps_m=2, warps_n=4, frags_m=2, frags_n=2, k_frags=2, stages=3, compute_first=True),
    # Shared tiles XOR-swizzled (permuted_layout): rows of 128 bytes, and of 64 / 32 bytes.
    dict(warps_m=2, warps_n=2, frags_m=4, frags_n=4, k_frags=4, stages=3, permuted=True),
    dict(warps_m=1, warps_n=2, frags_m=2, frags_n=1, k_frags=2, stages=2, permuted=True),
    dict(warps_m=2, warps_n=1, frags_m=1, frags_n=1, k_frags=1, stages=1, permuted=True),
    # Nested pipelines (the next tile's first fragments before this tile's last mma).
    dict(W4, k_frags=4, stages=3, fragment_stages=2, nested=True, permuted=True),
    dict(W4, warps_m=4, frags_m=2, k_frags=2, stages=4, fragment_stages=2, nested=True),
]


def _inputs(n: int, dtype: str) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((n, n)), rng.standard_normal((n, n))
    if dtype == "bfloat16":
        ml_dtypes = pytest.importorskip("ml_dtypes")
        return a.astype(ml_dtypes.bfloat16), b.astype(ml_dtypes.bfloat16)
    return a.astype(np.float16), b.astype(np.float16)


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: "-".join(f"{v}" for v in c.values()))
@pytest.mark.parametrize(
    "in_dtype, out_dtype",
    [("float16", "float32"), ("bfloat16", "float32"), ("float16", "float16")],
)
def test_mma_gemm_matches_numpy(config, in_dtype, out_dtype):
    n = 256
    sch = schedule_mma(
        Schedule(mma_matmul(n, n, n, in_dtype, out_dtype)),
        in_dtype=in_dtype,
        out_dtype=out_dtype,
        **config,
    )
    a, b = _inputs(n, in_dtype)
    c = np.full((n, n), np.nan, dtype=out_dtype)
    args = [tw.nd.array(x, tw.cuda(0)) for x in (a, b, c)]
    tw.build(sch.mod, target="cuda")["main"](*args)
    want = a.astype(np.float64) @ b.astype(np.float64)
    got = args[2].numpy().astype(np.float64)
    tolerance = 5e-2 if out_dtype == "float16" else 1e-3
    assert np.abs(got - want).max() / np.abs(want).max() < tolerance
