"""permuted_layout: a shared tile whose copy block carries the annotation is stored XOR-swizzled
(expected script; the annotation replays from the trace; the GPU evaluator with its race
detector; NVRTC), every access follows the layout (vector stores, scalar loads, cp.async
destinations, ldmatrix lane addresses), and what cannot be swizzled is refused."""

# ruff: noqa: E501 - expected scripts keep one statement per line

from __future__ import annotations

import numpy as np
import pytest
from evaluator import run_module
from tirx.expr_eval import evaluate

import tilewright as tw
from tilewright.codegen import codegen_cuda
from tilewright.ir import PrimFunc, Var, assert_structural_equal
from tilewright.ir.dtype import int32
from tilewright.meta_schedule.testing.tensor_core import mma_matmul, schedule_mma
from tilewright.runtime.cuda_runtime.nvrtc import compile_cuda, nvrtc_version
from tilewright.schedule import Trace
from tilewright.script import from_source
from tilewright.script import tir as T
from tilewright.tir import Schedule
from tilewright.transform.permuted_layout import PermutedLayoutError, swizzled


def _parse(text: str) -> PrimFunc:
    return from_source("from tilewright.script import tir as T\n" + text)  # type: ignore[return-value]


TRANSPOSE = _parse("""
@T.prim_func
def main(A: T.Buffer((64, 64), "float16"), B: T.Buffer((64, 64), "float16")):
    for i, j in T.grid(64, 64):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vj, vi] * T.float16(2)
""")


def _staged(columns: int, *, permuted: object = 1, align: bool = False) -> Schedule:
    """B = 2 A^T through a shared tile of A's 64 rows by ``columns`` (32: rows of 64 bytes,
    two to a line; 64: rows of 128 bytes), copied 8 elements a lane and read by columns."""
    sch = Schedule(TRANSPOSE)
    block = sch.get_block("B")
    i, j = sch.get_loops(block)
    bx, inner = sch.split(i, [None, columns])
    sch.bind(bx, "blockIdx.x")
    _, tx = sch.split(sch.fuse(inner, j), [None, 128])
    sch.bind(tx, "threadIdx.x")
    tile = sch.cache_read(block, 0, "shared")
    sch.compute_at(tile, bx)
    _, ttx, lanes = sch.split(sch.fuse(*sch.get_loops(tile)[-2:]), [None, 128, 8])
    sch.bind(ttx, "threadIdx.x")
    sch.vectorize(lanes)
    if permuted:
        sch.annotate(tile, "permuted_layout", permuted)
    if align:
        sch.storage_align(tile, 0, axis=-2, factor=32, offset=8)
    return sch


@T.prim_func
def staged_32_lowered(A: T.Buffer((4096,), "float16"), B: T.Buffer((4096,), "float16")):
    T.func_attr({"dyn_shared_memory_bytes": 0, "global_symbol": "main_kernel", "target_kind": "cuda", "thread_extent": {"blockIdx.x": 2, "threadIdx.x": 128}, "tir.is_kernel": True})  # fmt: skip
    for i_0 in T.thread_binding(2, thread="blockIdx.x"):
        A_shared = T.decl_buffer((2048,), "float16", scope="shared")
        for ax0_ax1_fused_0 in range(2):
            for ax0_ax1_fused_1 in T.thread_binding(128, thread="threadIdx.x"):
                # 8 lanes of row r into chunk c ^ (r // 2 % 8); the kilobyte offset stays outside
                A_shared[T.Ramp(ax0_ax1_fused_0 * 1024 + T.bitwise_xor(ax0_ax1_fused_1 * 8, ax0_ax1_fused_1 * 8 // 64 % 8 * 8), 1, 8)] = A[T.Ramp(ax0_ax1_fused_0 * 2048 + ax0_ax1_fused_1 // 4 * 64 + i_0 * 32 + ax0_ax1_fused_1 % 4 * 8, 1, 8)]  # fmt: skip
        T.evaluate(T.call_intrin("int32", "tw.sync_threads"))
        for i_1_j_fused_0 in range(16):
            for i_1_j_fused_1 in T.thread_binding(128, thread="threadIdx.x"):
                B[i_0 * 2048 + i_1_j_fused_0 * 128 + i_1_j_fused_1] = A_shared[T.bitwise_xor(i_1_j_fused_1 % 64 * 32 + i_1_j_fused_0 * 2 + i_1_j_fused_1 // 64, (i_1_j_fused_1 % 64 * 32 + i_1_j_fused_0 * 2 + i_1_j_fused_1 // 64) // 64 % 8 * 8)] * T.float16(2.0)  # fmt: skip


def test_the_tile_is_swizzled_in_every_access() -> None:
    lowered = tw.lower(_staged(32).mod, "cuda")["main_kernel"]
    assert_structural_equal(lowered.with_attr("global_symbol", "main_kernel"), staged_32_lowered)


@pytest.mark.parametrize("columns", [32, 64])
@pytest.mark.parametrize("permuted", [1, "g2s_A"])  # TVM's scripts also name the tile
def test_the_annotation_replays_and_the_kernel_computes_the_same(
    columns: int, permuted: object
) -> None:
    sch = _staged(columns, permuted=permuted)
    replayed = Schedule(TRANSPOSE)
    Trace.from_json(sch.trace.as_json()).apply_to_schedule(replayed)
    assert_structural_equal(replayed.mod, sch.mod)
    a = np.random.default_rng(columns).standard_normal((64, 64)).astype(np.float16)
    for mod in (sch.mod, _staged(columns, permuted=0).mod):
        got = run_module(tw.lower(mod, "cuda"), "main", a, np.zeros_like(a))[1]
        np.testing.assert_array_equal(got, a.T * np.float16(2))


@pytest.mark.parametrize("row", [16, 32, 64, 128, 256])  # float16 rows of 32 to 512 bytes
def test_swizzled_permutes_chunks_inside_each_kilobyte(row: int) -> None:
    index = Var("i", int32)
    expr = swizzled(index, max(row, 64), 8)  # plan_permuted_layout's key
    moved = [evaluate(expr, {index: v}) for v in range(8 * max(row, 64))]
    assert sorted(moved) == list(range(len(moved)))
    # whole 16-byte chunks move, and only inside their kilobyte
    assert all(m % 8 == v % 8 and m // 512 == v // 512 for v, m in enumerate(moved))
    # the same chunk of 8 consecutive rows (one ldmatrix phase) lands in 8 bank groups
    for chunk in range(row // 8):
        starts = [moved[row * r + 8 * chunk] for r in range(8)]
        assert len({m % 64 // 8 for m in starts}) == 8


def _tensor_core(**kwargs) -> Schedule:
    config = dict(warps_m=1, warps_n=2, frags_m=2, frags_n=2, k_frags=2, stages=2)
    config.update(kwargs)
    return schedule_mma(Schedule(mma_matmul(64, 64, 64)), permuted=True, **config)


@pytest.mark.parametrize(
    "config",
    [
        {},  # A's rows of 64 bytes (two to a line), B's of 128, a 2-stage cp.async pipeline
        {"warps_m": 1, "warps_n": 1, "frags_n": 4, "k_frags": 4, "stages": 3},  # 128 and 128
        {"k_frags": 1, "stages": 1},  # rows of 32 bytes, plain vector stores
    ],
)
def test_the_tensor_core_gemm_with_swizzled_tiles_computes_a_times_b(config: dict) -> None:
    sch = _tensor_core(**config)
    rng = np.random.default_rng(1)
    a, b = (rng.standard_normal((64, 64)).astype(np.float16) for _ in range(2))
    c = np.full((64, 64), np.nan, np.float32)
    got = run_module(tw.lower(sch.mod, "cuda"), "main", a, b, c)[2]
    want = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * float(np.abs(want).max()))


def test_cp_async_and_ldmatrix_addresses_are_swizzled_and_rows_unpadded() -> None:
    text = codegen_cuda(tw.lower(_tensor_core().mod, "cuda"))
    copies = [line for line in text.splitlines() if "cp.async.cg.shared.global" in line]
    loads = [line for line in text.splitlines() if "ldmatrix.sync" in line]
    assert copies and loads
    assert all(" ^ " in line for line in copies + loads)
    assert "* 72" not in text and "* 136" not in text  # no padded row strides
    if nvrtc_version() is None:
        if tw.config.get().ci:
            pytest.fail("NVRTC is not available to compile CUDA")
        pytest.skip("NVRTC is not installed")
    for arch in ("sm_80", "sm_90"):
        assert compile_cuda(text, arch, ["main_kernel"], "nvrtc")[:4] == b"\x7fELF"


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: _staged(32, align=True), "pad or swizzle, not both"),
        (lambda: _rows_of(24), "rows of 48 bytes"),
        (lambda: _local_tile(), "only shared memory is swizzled, not local"),
    ],
)
def test_what_cannot_be_swizzled_is_refused(make, message: str) -> None:
    with pytest.raises(PermutedLayoutError, match=message):
        tw.lower(make().mod, "cuda")


def _rows_of(columns: int) -> Schedule:
    func = _parse(f"""
@T.prim_func
def main(A: T.Buffer((64, {columns}), "float16"), B: T.Buffer((64, {columns}), "float16")):
    for i, j in T.grid(64, {columns}):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj]
""")
    sch = Schedule(func)
    block = sch.get_block("B")
    i, _ = sch.get_loops(block)
    sch.bind(i, "threadIdx.x")
    tile = sch.cache_read(block, 0, "shared")
    sch.annotate(tile, "permuted_layout", 1)
    return sch


def _local_tile() -> Schedule:
    sch = _rows_of(64)
    block = sch.get_block("B")
    tile = sch.cache_read(block, 0, "local")
    sch.annotate(tile, "permuted_layout", 1)
    return sch
