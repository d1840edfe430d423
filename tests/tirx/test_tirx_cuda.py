"""The seed page's round trip built for CUDA: the generated kernel, compiled for sm_90 here,
and run on the GPU (B == A) by scripts/gpu-check."""

from __future__ import annotations

import numpy as np
import pytest
from test_lower_tirx import round_trip_kernel

import tilewright as tw
from tilewright.layout import ComposeLayout, S, SwizzleLayout, TileLayout
from tilewright.runtime.cuda_runtime import device_count
from tilewright.runtime.cuda_runtime.nvrtc import nvcc_version, nvrtc_version

needs_compiler = pytest.mark.skipif(
    nvrtc_version() is None and nvcc_version() is None and not tw.config.get().ci,
    reason="no NVRTC or nvcc",
)
on_gpu = pytest.mark.skipif(device_count() == 0, reason="needs a CUDA GPU")

CASES = [("float32", 4, 8), ("float16", 8, 4), ("uint8", 16, 2)]


def layout(shape, dtype, swizzled):
    tile = TileLayout(S[shape])
    if not swizzled:
        return tile
    return ComposeLayout(SwizzleLayout.from_bytes(128, np.dtype(dtype).itemsize * 8), tile)


@needs_compiler
@pytest.mark.parametrize(("dtype", "vec", "outer"), CASES)
def test_page_program_compiles_to_16_byte_copies(dtype, vec, outer):
    shape = (32, 32)
    rt_mod = tw.build(round_trip_kernel(shape, dtype, layout(shape, dtype, False)), "cuda")
    source = rt_mod.imported_modules[0].get_source()
    # Two loops of `outer` rounds, one 16-byte copy each: shared <- global, then global <- shared.
    assert source.count(f"for (int f = 0; f < {outer}; ++f)") == 1
    assert source.count("*(uint4*)(") == 2
    assert f"thread_id * {vec}" in source or f"lane_id * {vec}" in source
    assert source.count("__syncthreads();") == 1
    assert "__shared__ __align__(" in source  # 16-byte copies need aligned shared storage
    assert rt_mod.imported_modules[0].cubin[:4] == b"\x7fELF"


@pytest.mark.gpu
@on_gpu
@pytest.mark.parametrize("swizzled", [False, True], ids=["plain", "swizzled"])
@pytest.mark.parametrize("dtype", [c[0] for c in CASES])
def test_page_round_trip_on_gpu(dtype, swizzled):
    shape = (32, 32)
    rt_mod = tw.build(round_trip_kernel(shape, dtype, layout(shape, dtype, swizzled)), "cuda")
    rng = np.random.default_rng(3)
    a_np = rng.integers(0, 200, size=shape).astype(dtype)
    a = tw.nd.array(a_np, tw.cuda(0))
    b = tw.nd.array(np.zeros(shape, dtype), tw.cuda(0))
    rt_mod["main"](a, b)
    np.testing.assert_array_equal(b.numpy(), a_np)
