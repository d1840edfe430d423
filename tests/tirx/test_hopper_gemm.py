"""The raw Hopper GEMM (TMA, mbarriers, wgmma, warp specialisation): its lowered kernel and
CUDA, built for sm_90a, taking A and Bt as tensors whose TMA maps are kernel parameters; it
runs on the H200 in benchmarks/gpu_hopper_gemm.py."""

from __future__ import annotations

import re

import pytest

import tilewright as tw
from tilewright.artifact import TENSOR_MAP, TensorMapParam
from tilewright.runtime.cuda_runtime import nvrtc
from tilewright.tirx.hopper_gemm import hopper_gemm


def _source(**kwargs) -> tw.artifact.Artifact:
    from tilewright.codegen.artifacts import device_artifact
    from tilewright.codegen.cuda import generate_cuda

    func = hopper_gemm(512, 512, 1024, **kwargs)
    return device_artifact(tw.lower(func, "cuda"), generate_cuda, "cuda", "cuda")


def test_the_kernel_is_warp_specialised_and_pipelined() -> None:
    artifact = _source()
    text = artifact.source
    assert artifact.arch == "sm_90a"
    # One barrier, before the roles split: the rest is ordered by mbarriers.
    assert text.count("__syncthreads()") == 1
    assert "if (tx < 128) {" in text and "setmaxnreg.dec.sync.aligned.u32 40" in text
    assert "setmaxnreg.inc.sync.aligned.u32 232" in text
    assert text.count("cp.async.bulk.tensor.2d.shared::cluster.global") == 2
    assert text.count("wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16") == 4
    # 4 stages of 128 x 64 float16 tiles of A and of Bt, 1024-byte aligned, then 8 barriers.
    assert "half* Bs = (half*)(tw_dyn_shared + 65536);" in text
    (kernel,) = artifact.kernels.values()
    assert kernel.dyn_shared_bytes == 131072 + 64
    # Stage ring: producers wait for the stage to empty (parity of the previous round).
    assert "(kt / 4 + 1) % 2" in text and "kt_1 / 4 % 2" in text
    # The descriptors step 16 elements (32 bytes) along k inside the swizzled rows.
    offsets = re.findall(r"tw_wgmma_descriptor\(\(Bs \+ kt_1 % 4 \* 8192 \+ (\d+)\)", text)
    assert offsets == ["16", "32", "48"]


def test_the_operands_are_tensors_whose_tma_maps_are_kernel_parameters() -> None:
    """A and Bt are ordinary tensors: the kernel takes their maps by value (encoded on the
    host at launch, boxes of block_m and block_n rows of 64 elements, 128-byte swizzles)."""
    artifact = _source()
    (sig,) = artifact.functions
    assert [(p.name, p.dtype, p.shape) for p in sig.params] == [
        ("A", "float16", (512, 1024)),
        ("Bt", "float16", (512, 1024)),
        ("C", "float16", (512, 512)),
    ]
    (kernel,) = artifact.kernels.values()
    assert kernel.params == (None, TENSOR_MAP, TENSOR_MAP)
    assert kernel.tensor_maps == (
        TensorMapParam(1, "A", "float16", (128, 64), 128),
        TensorMapParam(2, "Bt", "float16", (128, 64), 128),
    )
    text = artifact.source
    assert (
        "main_kernel(half* __restrict__ C, const __grid_constant__ tw_tensor_map A_tmap, "
        "const __grid_constant__ tw_tensor_map Bt_tmap)"
    ) in text
    assert text.count("(unsigned long long)(&A_tmap)") == 1
    assert text.count("(unsigned long long)(&Bt_tmap)") == 1


def test_bfloat16_and_a_wider_tile() -> None:
    artifact = _source(in_dtype="bfloat16", out_dtype="float32", block_n=256)
    text = artifact.source
    assert text.count("wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16") == 4
    (kernel,) = artifact.kernels.values()
    assert [(m.param, m.dtype, m.box) for m in kernel.tensor_maps] == [
        ("A", "bfloat16", (128, 64)),
        ("Bt", "bfloat16", (256, 64)),
    ]


@pytest.mark.skipif(nvrtc.nvrtc_version() is None, reason="needs NVRTC")
def test_it_compiles_for_sm_90a() -> None:
    artifact = tw.build_artifact(hopper_gemm(256, 256, 256), target="cuda")
    assert artifact.format == "cubin" and artifact.arch == "sm_90a"


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        ((500, 512, 512), {}, "not a multiple of the 128 x 128 x 64 tile"),
        ((512, 512, 512), {"block_m": 64}, "block_m is 128"),
        ((512, 512, 512), {"block_n": 100}, "multiple of 8 up to 256"),
        ((512, 512, 512), {"block_n": 256, "stages": 5}, "5 stages of 48 KB .* do not fit"),
        ((512, 512, 512), {"stages": 1}, "at least 2 stages"),
        ((512, 512, 512), {"in_dtype": "float32"}, "float16 or bfloat16, not float32"),
    ],
)
def test_sizes_it_cannot_take_are_refused(args, kwargs, message) -> None:
    with pytest.raises(ValueError, match=message):
        hopper_gemm(*args, **kwargs)


@pytest.mark.parametrize(
    ("tiles_m", "tiles_n", "group"), [(32, 16, 8), (5, 3, 2), (7, 4, 3), (4, 4, 9)]
)
def test_grouped_tiles_visit_every_tile_once(tiles_m: int, tiles_n: int, group: int) -> None:
    from tilewright.tirx.hopper_gemm import grouped_tile

    seen = [grouped_tile(t, tiles_m, tiles_n, group) for t in range(tiles_m * tiles_n)]
    assert sorted(seen) == [(i, j) for i in range(tiles_m) for j in range(tiles_n)]
    # Inside a full group, consecutive tiles walk down the group's rows first.
    if tiles_m >= group > 1:
        assert seen[1] == (1, 0)


def test_persistent_ctas_continue_the_ring_across_tiles() -> None:
    """Fewer CTAs than tiles: each loops over its tiles, the ring's step (and so the stage
    and the mbarrier parity) counting on across them; the last stage of a tile is released
    before the next tile's copies need it; C is stored two elements at a time."""
    from tilewright.codegen.artifacts import device_artifact
    from tilewright.codegen.cuda import generate_cuda

    func = hopper_gemm(512, 512, 512, grid=5, group_m=3, stages=3)
    text = device_artifact(tw.lower(func, "cuda"), generate_cuda, "cuda", "cuda").source
    assert "for (int r = 0; r < 4; ++r) {" in text and "if (r * 5 + bx < 16) {" in text
    assert "&empty[(r * 8 + kt) % 3]), (unsigned)(((r * 8 + kt) / 3 + 1) % 2)" in text
    assert "&full[(r_1 * 8 + kt_1) % 3]), (unsigned)((r_1 * 8 + kt_1) / 3 % 2)" in text
    assert "&empty[(r_1 * 8 + kt_1 + 2) % 3]" in text  # the previous step's stage
    assert "&empty[(r_1 * 8 + 1) % 3]" in text  # the tile's last stage, (r * 8 + 7) % 3
    assert text.count("= __floats2half2_rn(acc[") == 32


def test_float32_output_pairs_read_an_aligned_register_array() -> None:
    """With C in float32 the epilogue stores float2 pairs read straight from the accumulator
    array: it is declared 16-byte aligned, so the pairs stay aligned in local memory too."""
    text = _source(out_dtype="float32").source
    assert "__align__(16) float acc[64];" in text
    assert "= *(float2*)(acc + 2);" in text
