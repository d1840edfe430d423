"""``Tx.warp.gemm``'s ``mma_sync`` variant (sm_80+): dispatch and each reason it declines, the
emitted ldmatrix / mma.sync statements, a CPU model of them (PTX's fragment rules, in
``mma_sync_model``) checked against ``A @ B.T``, the m16n8 fragment layout, and the example
kernel ``tile_gemm_mma`` (IR, CUDA, NVRTC for sm_80 and sm_90, model end to end).

The GPU run is ``benchmarks/gpu_tile_gemm_mma.py``."""

from __future__ import annotations

import numpy as np
import pytest
from gemm_kernels import gemm_kernel, interleaved
from mma_sync_model import WarpModel, mma_kernel, mma_statements, smem_layout, store_through
from wgmma_model import value

import tilewright as tw
from tilewright.codegen.artifacts import device_artifact
from tilewright.codegen.cuda import generate_cuda
from tilewright.ir import BufferStore, For, intrinsics, post_order_visit
from tilewright.layout import ComposeLayout, LayoutError, S, SwizzleLayout, TileLayout
from tilewright.layout.fragment import mma_accumulator_layout, mma_fragment_coord
from tilewright.runtime.cuda_runtime import nvrtc
from tilewright.tirx import DispatchError
from tilewright.tirx.tile_gemm_mma import tile_gemm_mma
from tilewright.tirx.transform import LowerTIRx

SM80 = "cuda -arch=sm_80"


def lowered(kernel, target=SM80):
    lower = LowerTIRx(target)
    return lower(kernel)["main"], lower.decisions


@pytest.mark.parametrize(
    ("kwargs", "notes"),
    [
        ({}, {"m": 32, "n": 32, "k": 32, "k_steps": 2, "m_blocks": 2, "n_tiles": 4}),
        ({"m": 16, "n": 8, "k": 16}, {"k_steps": 1, "m_blocks": 1, "n_tiles": 1}),
        ({"n": 24, "k": 64}, {"k_steps": 4, "n_tiles": 3}),
        ({"dtype": "bfloat16"}, {"k_steps": 2}),
        ({"transA": True, "transB": True}, {"transA": True, "transB": True}),
        ({"a_layout": TileLayout(S[32, 32])}, {"k_steps": 2}),
        ({"a_layout": interleaved(32, 32)}, {"k_steps": 2}),
        ({"threads": 128}, {"m_blocks": 2}),
    ],
)
def test_mma_sync_accepts(kwargs, notes):
    _, (decision,) = lowered(mma_kernel(**kwargs))
    assert decision.variant == "mma_sync"
    assert {key: decision.notes[key] for key in notes} == notes


@pytest.mark.parametrize("target", [SM80, "cuda -arch=sm_86", "cuda -arch=sm_89", "cuda"])
def test_every_arch_from_sm_80_is_accepted(target):
    assert lowered(mma_kernel(), target)[1][0].variant == "mma_sync"


def test_wgmma_still_wins_on_a_warpgroup_of_sm_90a():
    assert lowered(gemm_kernel(), "cuda")[1][0].variant == "wgmma"


# (kwargs, target, the reason's text)
REFUSALS = [
    ({}, "c", "does not spell ptx_mma and ptx_ldmatrix"),
    ({}, "cuda -arch=sm_75", "target arch sm_75 has no mma.sync m16n8k16"),
    ({"scope": "warpgroup", "threads": 128}, SM80, "runs on one warp (Tx.warp), not the warpgroup"),
    ({"narrow": True}, SM80, "narrowed by the enclosing `if tid < 16`"),
    ({"dtype": "float32"}, SM80, "must both be float16 or bfloat16, got float32"),
    ({"c_dtype": "float16"}, SM80, "C acc must be a float32 accumulator, got float16"),
    ({"a_scope": "global"}, SM80, "mma.sync loads A and B from shared memory with ldmatrix"),
    ({"c_scope": "shared", "c_layout": None}, SM80, "mma.sync accumulates in registers"),
    ({"c_layout": None}, SM80, "is not the mma m16n8 fragment layout"),
    (
        {"c_layout": TileLayout(S[(32, 32) : (1, 32)])},
        SM80,
        "declare it with layout=mma_accumulator_layout(32, 32)",
    ),
    ({"m": 24, "c_layout": None}, SM80, "M = 24 is not a multiple of 16 (mma.sync is m16n8k16)"),
    ({"n": 12, "c_layout": None}, SM80, "N = 12 is not a multiple of 8"),
    ({"k": 8, "a_layout": TileLayout(S[32, 8])}, SM80, "K = 8 is not a multiple of 16"),
    ({"c_shape": (32, 16)}, SM80, "shapes do not match: C is 32 x 16, A 32 x 32, B 32 x 32"),
    (
        {"a_layout": TileLayout(S[(32, 32) : (1, 32)])},
        SM80,
        "does not keep 8 consecutive elements of its last dimension contiguous",
    ),
    (
        {"a_layout": TileLayout(S[(32, 32) : (36, 1)])},
        SM80,
        "puts 16-byte rows 36 elements apart",
    ),
    (
        {"a_layout": ComposeLayout(SwizzleLayout(2, 3, 3), TileLayout(S[32, 32]))},
        SM80,
        "moves 4-element chunks, which splits ldmatrix's 16-byte rows",
    ),
    ({"op": "gemm_async"}, SM80, "mma.sync is synchronous"),
]


@pytest.mark.parametrize(("kwargs", "target", "reason"), REFUSALS)
def test_mma_sync_declines_with_a_reason(kwargs, target, reason):
    with pytest.raises(DispatchError) as info:
        LowerTIRx(target)(mma_kernel(**kwargs))
    message = str(info.value)
    assert "no variant applies" in message and "  mma_sync: " in message
    assert reason in message, message


def test_region_off_a_16_byte_boundary_is_refused():
    kernel = mma_kernel(a_layout=TileLayout(S[32, 32]))
    text = kernel.script().replace("As[0:32, 0:32]", "As[0:32, 4:20]")
    text = text.replace("Bs[0:32, 0:32]", "Bs[0:32, 0:16]")
    with pytest.raises(DispatchError, match="not on a 16-byte boundary"):
        LowerTIRx(SM80)(tw.script.from_source(text))


def _calls(func, intrinsic):
    found = []
    post_order_visit(func.body, lambda n: found.append(n) if intrinsic.matches(n) else None)
    return [n for n in found if not hasattr(n, "value")]


def test_ldmatrix_and_mma_counts_and_fragments():
    func, _ = lowered(mma_kernel(n=24, k=48, accum=False))
    loads = _calls(func, intrinsics.PTX_LDMATRIX)
    # Per k step: 2 x4 for A's m16 blocks, one x4 (n tiles 0, 1) and one x2 (tile 2) for B.
    assert [c.args[1].value for c in loads] == [4, 4, 4, 2] * 3
    assert {c.args[0].value for c in loads} == {False}
    mmas = _calls(func, intrinsics.PTX_MMA)
    assert len(mmas) == 3 * 2 * 3
    assert [c.args[11].value for c in mmas[:6]] == [0, 4, 8, 12, 16, 20]
    (fill,) = _calls(func, intrinsics.MMA_FILL)
    assert fill.args[0].value == 24


def test_transposed_operands_use_ldmatrix_trans():
    func, _ = lowered(mma_kernel(transA=True, transB=False))
    loads = _calls(func, intrinsics.PTX_LDMATRIX)
    assert [bool(c.args[0].value) for c in loads[:4]] == [True, True, False, False]


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"accum": False},
        {"m": 16, "n": 8, "k": 16},
        {"n": 24, "k": 64},
        {"dtype": "bfloat16"},
        {"transA": True},
        {"transB": True},
        {"transA": True, "transB": True, "n": 40},
        {"a_layout": TileLayout(S[32, 32])},
        {"a_layout": interleaved(32, 32)},
        {"m": 64, "n": 16, "k": 128},
    ],
    ids=[
        "default",
        "overwrite",
        "m16n8k16",
        "x2-tail",
        "bf16",
        "transA",
        "transB",
        "both-trans",
        "row-major",
        "core-matrices",
        "k128",
    ],
)
def test_model_of_the_emitted_mmas_computes_a_times_b_transposed(kwargs):
    kernel = mma_kernel(**kwargs)
    func, _ = lowered(kernel)
    m, n, k = kwargs.get("m", 32), kwargs.get("n", 32), kwargs.get("k", 32)
    rng = np.random.default_rng(3)
    a = rng.integers(-4, 5, (m, k)).astype(np.float64)
    b = rng.integers(-4, 5, (n, k)).astype(np.float64)
    buffers = _allocations(kernel)
    stored_a = a.T if kwargs.get("transA") else a
    stored_b = b.T if kwargs.get("transB") else b
    storage = {
        f"{name}_1": store_through(buffers[name].layout, x, buffers[name].layout.cosize())
        for name, x in (("As", stored_a), ("Bs", stored_b))
    }
    acc = {"acc_1": np.full((32, m * n // 32), 7.0)}  # accum: the old value stays
    envs = [{"threadIdx_x": lane, "tid": lane} for lane in range(32)]
    WarpModel(storage, acc).run(mma_statements(func.body), envs)
    keep = 7.0 if kwargs.get("accum", True) else 0.0
    np.testing.assert_array_equal(_gather(acc["acc_1"], m, n), a @ b.T + keep)


def test_model_of_a_c_sub_region():
    """C rows 16-31 of a 32 x 16 fragment buffer: registers from 8 on (the tiles' offsets)."""
    func, _ = lowered(mma_kernel(m=16, n=16, c_shape=(32, 16), c_rows=(16, 32), accum=False))
    rng = np.random.default_rng(4)
    a = rng.integers(-4, 5, (16, 32)).astype(np.float64)
    b = rng.integers(-4, 5, (16, 32)).astype(np.float64)
    storage = {
        "As_1": store_through(smem_layout(16, 32), a, 512),
        "Bs_1": store_through(smem_layout(16, 32), b, 512),
    }
    acc = {"acc_1": np.full((32, 16), 5.0)}
    envs = [{"threadIdx_x": lane, "tid": lane} for lane in range(32)]
    WarpModel(storage, acc).run(mma_statements(func.body), envs)
    full = _gather(acc["acc_1"], 32, 16)
    np.testing.assert_array_equal(full[:16], np.full((16, 16), 5.0))
    np.testing.assert_array_equal(full[16:], a @ b.T)


def _allocations(kernel):
    found = []
    post_order_visit(kernel.body, lambda n: found.extend(getattr(n, "alloc_buffers", ())))
    return {buf.name: buf for buf in found}


def _gather(acc, m, n):
    out = np.full((m, n), np.nan)
    for lane in range(32):
        for register in range(acc.shape[1]):
            row, col = mma_fragment_coord(lane, register, n)
            out[row, col] = acc[lane, register]
    return out


def test_fragment_layout_matches_the_ptx_fragment():
    layout = mma_accumulator_layout(48, 24)
    for lane in range(32):
        for register in range(48 * 24 // 32):
            row, col = mma_fragment_coord(lane, register, 24)
            got = layout.apply(row, col, shape=(48, 24))
            assert (got["m"], got["laneid"]) == (register, lane)
    with pytest.raises(LayoutError, match="m must be a multiple of 16 and n of 8"):
        mma_accumulator_layout(24, 8)


# -- the example kernel ------------------------------------------------------------------


def test_the_example_lowers_to_copies_mmas_and_a_fragment_store():
    _, decisions = lowered(tile_gemm_mma(128, 128, 128))
    assert [d.variant for d in decisions] == ["gmem_smem", "gmem_smem", "mma_sync", "register"]
    notes = decisions[2].notes
    assert (notes["k_steps"], notes["m_blocks"], notes["n_tiles"]) == (4, 2, 4)


def _cuda(func, target=SM80):
    return device_artifact(tw.lower(func, target), generate_cuda, "cuda", "cuda").source


def test_the_example_cuda_has_the_ldmatrix_and_mma_sync_counts():
    text = _cuda(tile_gemm_mma(128, 128, 128))
    # Per k tile and warp: 4 k steps x (2 ldmatrix.x4 for A + 2 for B), 4 x 2 x 4 mma.sync.
    assert text.count("ldmatrix.sync.aligned.m8n8.x4.shared.b16") == 16
    assert text.count("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32") == 32
    assert text.count("__syncthreads();") == 2  # the two cta_syncs, nothing added
    assert "float acc_1[32];" in text and "unsigned int As_frag[8];" in text
    bf16 = _cuda(tile_gemm_mma(64, 64, 64, "bfloat16"), "cuda")
    assert bf16.count("m16n8k16.row.col.f32.bf16.bf16.f32") == 32


@pytest.mark.skipif(nvrtc.nvrtc_version() is None, reason="needs NVRTC")
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_the_example_compiles_with_nvrtc(arch, dtype):
    text = _cuda(tile_gemm_mma(128, 64, 128, dtype), f"cuda -arch={arch}")
    cubin = nvrtc.compile_cuda(text, arch, ["main_kernel"])
    assert cubin[:4] == b"\x7fELF"


def test_the_example_model_end_to_end():
    """Four warps, two k tiles (the first overwrites), then the epilogue's stores."""
    m = n = 64
    k = 128
    func, _ = lowered(tile_gemm_mma(m, n, k))
    rng = np.random.default_rng(5)
    a = rng.integers(-3, 4, (m, k)).astype(np.float64)
    b = rng.integers(-3, 4, (n, k)).astype(np.float64)
    layout = ComposeLayout(SwizzleLayout.from_bytes(128, 16), TileLayout(S[64, 64]))
    statements = mma_statements(func.body)
    c = np.full((m, n), np.nan)
    for w in range(4):
        acc = {"acc_1": np.full((32, 32), np.nan)}
        for kt in range(2):
            tile = slice(kt * 64, kt * 64 + 64)
            storage = {
                "As_1": store_through(layout, a[:, tile], 4096),
                "Bs_1": store_through(layout, b[:, tile], 4096),
            }
            envs = [{"threadIdx_x": 32 * w + i, "w": w, "kt": kt} for i in range(32)]
            WarpModel(storage, acc).run(statements, envs)
        _epilogue(func, acc["acc_1"], c, w)
    np.testing.assert_array_equal(c, a @ b.T)


def _epilogue(func, acc, c, w):
    """Run the lowered fragment store of warp ``w`` (bx = by = 0) into ``c``."""
    stores, loops = [], []
    post_order_visit(func.body, lambda n: stores.append(n) if isinstance(n, BufferStore) else None)
    post_order_visit(func.body, lambda n: loops.append(n) if isinstance(n, For) else None)
    (store,) = [s for s in stores if s.buffer.name == "C_1"]
    # register loops (r<i>) and, where the copy is vectorized, its lanes (v<i>)
    registers = [f for f in loops if f.loop_var.name[:1] in "rv" and f.loop_var.name[1:].isdigit()]
    for lane in range(32):
        for point in np.ndindex(*(f.extent.value for f in registers)):
            env = {"bx": 0, "by": 0, "w": w, "threadIdx_x": 32 * w + lane}
            env.update({f.loop_var.name: int(i) for f, i in zip(registers, point)})
            c.flat[value(store.indices[0], env)] = acc[lane, value(store.value.indices[0], env)]


def test_the_example_refuses_sizes_it_cannot_tile():
    with pytest.raises(ValueError, match="not a multiple of the 64 x 64 x 64 tile"):
        tile_gemm_mma(100, 64, 64)
    with pytest.raises(ValueError, match="float16 or bfloat16"):
        tile_gemm_mma(64, 64, 64, "float32")
