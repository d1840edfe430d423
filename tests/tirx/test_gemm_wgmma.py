"""What ``Tx.warpgroup.gemm``'s ``wgmma`` variant emits: the IR (descriptors, k steps, m64
blocks, fence / commit / wait), the CUDA of the tile-layer GEMM built for sm_90a, and a CPU
model of the emitted wgmmas (PTX's descriptor rules) checked against ``A @ B.T``.

The evaluator in tests/evaluator has no wgmma (nor descriptors), so the numbers here come
from ``wgmma_model``; the GPU run is ``benchmarks/gpu_tile_gemm.py``."""

from __future__ import annotations

import re

import numpy as np
import pytest
from gemm_kernels import gemm_kernel, interleaved, swizzled
from wgmma_model import run_wgmmas, store_through, value, wgmma_calls

import tilewright as tw
from tilewright.codegen.artifacts import device_artifact
from tilewright.codegen.cuda import generate_cuda
from tilewright.ir import BufferStore, Call, Evaluate, For, post_order_visit
from tilewright.ir import intrinsics_hopper as hopper
from tilewright.layout import wgmma_accumulator_layout, wgmma_fragment_coord
from tilewright.runtime.cuda_runtime import nvrtc
from tilewright.tirx.tile_gemm import tile_gemm
from tilewright.tirx.transform import LowerTIRx

SEQUENCE = (
    hopper.WGMMA_FENCE,
    hopper.WGMMA_MMA_ASYNC,
    hopper.WGMMA_COMMIT_GROUP,
    hopper.WGMMA_WAIT_GROUP,
)


def lowered(kernel):
    lower = LowerTIRx("cuda")
    return lower(kernel)["main"], lower.decisions


def sequence(func):
    """The Hopper statements in order, consecutive wgmmas counted: [(name, count), ...]."""
    found = []

    def visit(node):
        if isinstance(node, Evaluate) and isinstance(node.value, Call):
            for intrinsic in SEQUENCE:
                if intrinsic.matches(node):
                    found.append(intrinsic.name.split(".")[-1])

    post_order_visit(func.body, visit)
    runs = []
    for name in found:
        if runs and runs[-1][0] == name:
            runs[-1][1] += 1
        else:
            runs.append([name, 1])
    return [tuple(r) for r in runs]


def test_gemm_emits_fence_wgmmas_commit_and_wait():
    func, _ = lowered(gemm_kernel())
    assert sequence(func) == [
        ("wgmma_fence", 1),
        ("wgmma_mma_async", 4),
        ("wgmma_commit_group", 1),
        ("wgmma_wait_group", 1),
    ]
    waits = []
    post_order_visit(
        func.body,
        lambda n: (
            waits.append(n) if hopper.WGMMA_WAIT_GROUP.matches(n) and isinstance(n, Call) else None
        ),
    )
    assert [w.args[0].value for w in waits] == [0]


def test_gemm_async_leaves_the_group_in_flight():
    func, _ = lowered(gemm_kernel(op="gemm_async"))
    assert [name for name, _ in sequence(func)] == [
        "wgmma_fence",
        "wgmma_mma_async",
        "wgmma_commit_group",
    ]


def _descriptor_fields(call):
    return tuple(
        (str(d.args[0].args[0].indices[0]), *(x.value for x in d.args[1:]))
        for d in (call.args[2], call.args[3])
    )


def test_descriptors_step_32_bytes_along_k_in_128_byte_swizzled_rows():
    func, _ = lowered(gemm_kernel())
    calls = wgmma_calls(func)
    assert [_descriptor_fields(c) for c in calls] == [
        ((str(k), 16, 1024, 128), (str(k), 16, 1024, 128)) for k in (0, 16, 32, 48)
    ]
    assert {(c.args[0].value, c.args[1].value) for c in calls} == {(128, "f16")}
    # accum=True: every wgmma keeps D; the registers start at the accumulator's first.
    assert [value(c.args[6], {}) for c in calls] == [1, 1, 1, 1]
    assert {str(c.args[4].args[0]) for c in calls} == {"acc_1[0]"}


def test_two_m64_blocks_and_the_first_k_step_overwrites():
    func, _ = lowered(gemm_kernel(m=128, n=64, k=32, accum=False))
    calls = wgmma_calls(func)
    assert len(calls) == 4  # 2 m64 blocks x 2 k steps
    # A's second block starts 64 rows (64 x 32 elements) on; C's registers 32 (n / 2) on.
    a_starts = [c.args[2].args[0].args[0].indices[0].value for c in calls]
    assert a_starts == [0, 16, 2048, 2048 + 16]
    assert [c.args[5].value for c in calls] == [0, 0, 32, 32]
    assert [value(c.args[6], {}) for c in calls] == [0, 1, 0, 1]
    # 64-byte rows (k = 32): a 64-byte swizzle, 8-row groups 512 bytes apart.
    assert {_descriptor_fields(c)[0][1:] for c in calls} == {(16, 512, 64)}


def test_k_atoms_and_core_matrices_set_start_addresses_and_lbo():
    func, _ = lowered(gemm_kernel(a_layout=swizzled(64, 64, 64)))
    a = [_descriptor_fields(c)[0] for c in wgmma_calls(func)]
    # Two 64-byte atom columns of 64 x 32: the second starts 64 * 32 elements on.
    assert a == [(str(s), 16, 512, 64) for s in (0, 16, 2048, 2048 + 16)]
    func, _ = lowered(gemm_kernel(a_layout=interleaved(64, 64)))
    a = [_descriptor_fields(c)[0] for c in wgmma_calls(func)]
    # 8 x 8 core matrices: K-adjacent ones 128 bytes apart (LBO), row groups 1024 (SBO).
    assert a == [(str(s), 128, 1024, 0) for s in (0, 128, 256, 384)]


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"m": 128, "n": 64, "k": 32, "accum": False},
        {"n": 8, "k": 16},
        {"a_layout": swizzled(64, 64, 64)},
        {"a_layout": swizzled(64, 64, 32)},
        {"a_layout": interleaved(64, 64)},
        {"n": 256, "k": 32},
    ],
    ids=["128B", "two-blocks", "n8", "64B-k-atoms", "32B-k-atoms", "core-matrices", "n256"],
)
def test_model_of_the_emitted_wgmmas_computes_a_times_b_transposed(kwargs):
    kernel = gemm_kernel(**kwargs)
    func, _ = lowered(kernel)
    m, n, k = kwargs.get("m", 64), kwargs.get("n", 128), kwargs.get("k", 64)
    rng = np.random.default_rng(1)
    a = rng.integers(-4, 5, (m, k)).astype(np.float64)
    b = rng.integers(-4, 5, (n, k)).astype(np.float64)
    buffers = {buf.name: buf for buf in _allocations(kernel)}
    storage = {
        f"{name}_1": store_through(buffers[name].layout, x, buffers[name].layout.cosize())
        for name, x in (("As", a), ("Bs", b))
    }
    acc = np.full((128, m * n // 128), 7.0)  # accum: the old value stays
    run_wgmmas(wgmma_calls(func), storage, acc, {})
    got = _gather(acc, m, n)
    keep = 7.0 if kwargs.get("accum", True) else 0.0
    np.testing.assert_array_equal(got, a @ b.T + keep)


def _allocations(kernel):
    found = []
    post_order_visit(kernel.body, lambda n: found.extend(getattr(n, "alloc_buffers", ())))
    return found


def _gather(acc, m, n):
    out = np.full((m, n), np.nan)
    for t in range(128):
        for register in range(acc.shape[1]):
            row, col = wgmma_fragment_coord(t, register, n)
            out[row, col] = acc[t, register]
    return out


def test_the_tile_gemm_lowers_to_copies_wgmmas_and_a_fragment_store():
    _, decisions = lowered(tile_gemm(256, 256, 128))
    assert [d.variant for d in decisions] == ["gmem_smem", "gmem_smem", "wgmma", "register"]
    assert decisions[2].notes["k_steps"] == 4 and decisions[2].notes["m_blocks"] == 1


def test_tile_gemm_model_end_to_end():
    """Both warpgroups, two k tiles (the first overwrites), then the epilogue's stores."""
    m = n = 128
    k = 128
    func, _ = lowered(tile_gemm(m, n, k))
    rng = np.random.default_rng(2)
    a = rng.integers(-3, 4, (m, k)).astype(np.float64)
    b = rng.integers(-3, 4, (n, k)).astype(np.float64)
    layout = swizzled(128, 64)
    calls = wgmma_calls(func)
    c = np.full((m, n), np.nan)
    for wg in range(2):
        acc = np.full((128, 64), np.nan)
        for kt in range(2):
            tile = slice(kt * 64, kt * 64 + 64)
            storage = {
                "As_1": store_through(layout, a[:, tile], 8192),
                "Bs_1": store_through(layout, b[:, tile], 8192),
            }
            run_wgmmas(calls, storage, acc, {"wg": wg, "kt": kt})
        _epilogue(func, acc, c, wg)
    np.testing.assert_array_equal(c, a @ b.T)


def _epilogue(func, acc, c, wg):
    """Run the lowered fragment store of warpgroup ``wg`` (bx = by = 0) into ``c``."""
    stores, loops = [], []
    post_order_visit(func.body, lambda n: stores.append(n) if isinstance(n, BufferStore) else None)
    post_order_visit(func.body, lambda n: loops.append(n) if isinstance(n, For) else None)
    (store,) = [s for s in stores if s.buffer.name == "C_1"]
    # register loops (r<i>) and, where the copy is vectorized, its lanes (v<i>)
    registers = [f for f in loops if f.loop_var.name[:1] in "rv" and f.loop_var.name[1:].isdigit()]
    for t in range(128):
        tx = wg * 128 + t
        for point in np.ndindex(*(f.extent.value for f in registers)):
            env = {"bx": 0, "by": 0, "wg": wg, "threadIdx_x": tx}
            env.update({f.loop_var.name: int(i) for f, i in zip(registers, point)})
            index = value(store.indices[0], env)
            c.flat[index] = acc[t, value(store.value.indices[0], env)]


def test_tile_gemm_cuda_builds_for_sm_90a():
    artifact = device_artifact(
        tw.lower(tile_gemm(256, 256, 128), "cuda"), generate_cuda, "cuda", "cuda"
    )
    text = artifact.source
    assert artifact.arch == "sm_90a"
    assert text.count("wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16") == 4
    assert text.count("wgmma.fence.sync.aligned") == 1
    assert text.count("wgmma.commit_group.sync.aligned") == 1
    assert text.count("wgmma.wait_group.sync.aligned 0") == 1
    # Writers fence their shared stores for the async proxy, then meet.
    assert re.search(r"fence\.proxy\.async\.shared::cta;.*\n\s*__syncthreads\(\);", text)
    starts = re.findall(
        r"tw_wgmma_descriptor\(&As_1\[wg \* 4096( \+ \d+)?\], 16, 1024, 1ull\)", text
    )
    assert starts == ["", " + 16", " + 32", " + 48"]
    assert "const int wg = threadIdx_x / 128;" in text
    assert "float acc_1[64];" in text


def test_tile_gemm_bfloat16_uses_bf16_wgmmas():
    artifact = device_artifact(
        tw.lower(tile_gemm(128, 128, 64, "bfloat16"), "cuda"), generate_cuda, "cuda", "cuda"
    )
    assert artifact.source.count("m64n128k16.f32.bf16.bf16") == 4


@pytest.mark.skipif(nvrtc.nvrtc_version() is None, reason="needs NVRTC")
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_tile_gemm_compiles_with_nvrtc_for_sm_90a(dtype):
    artifact = tw.build_artifact(tile_gemm(128, 256, 192, dtype), target="cuda")
    assert artifact.format == "cubin" and artifact.arch == "sm_90a"
    assert artifact.binary[:4] == b"\x7fELF"


def test_fragment_layout_matches_the_ptx_fragment():
    layout = wgmma_accumulator_layout(128, 64)
    for t in range(128):
        for register in range(64):
            row, col = wgmma_fragment_coord(t, register, 64)
            got = layout.apply(row, col, shape=(128, 64))
            assert (got["m"], got["warpid"], got["laneid"]) == (register, t // 32, t % 32)


def test_tile_gemm_refuses_sizes_it_cannot_tile():
    with pytest.raises(ValueError, match="not a multiple of the 128 x 128 x 64 tile"):
        tile_gemm(100, 128, 64)
    with pytest.raises(ValueError, match="float16 or bfloat16"):
        tile_gemm(128, 128, 64, "float32")
