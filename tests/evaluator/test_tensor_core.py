"""The evaluator on tensor-core kernels: the hand ``mma.sync`` GEMM schedule lowered for an
H200 against numpy, and ``ldmatrix``, ``mma_fill`` and ``mma_store`` on hand-made tiles against
the PTX ISA's fragment layouts, their regions and the race detector."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import tilewright as tw
from evaluator import DataRace, SharedMemoryRace, run_kernel, run_module
from evaluator.barriers import without_barriers
from tilewright.ir import (
    For,
    ForKind,
    IRModule,
    PrimFunc,
    intrinsics,
    post_order_visit,
)
from tilewright.meta_schedule.testing.tensor_core import mma_matmul, schedule_mma
from tilewright.schedule import Schedule
from tilewright.schedule.tensor_intrin_cuda import ldmatrix_32x8_to_shared_16x16_layout
from tilewright.script import from_source
from tilewright.transform.inject_thread_sync import is_sync

LANES = np.arange(32)[:, None]


def _lowered(shape: tuple[int, int, int], in_dtype: str, out_dtype: str, **options) -> IRModule:
    sch = Schedule(mma_matmul(*shape, in_dtype, out_dtype))
    schedule_mma(sch, in_dtype=in_dtype, out_dtype=out_dtype, **options)
    return tw.lower(sch.mod, "nvidia/h200")


def _inputs(shape: tuple[int, int, int], in_dtype: str) -> tuple[np.ndarray, np.ndarray]:
    n, m, k = shape
    rng = np.random.default_rng(0)
    dtype = ml_dtypes.bfloat16 if in_dtype == "bfloat16" else np.dtype(in_dtype)
    return rng.standard_normal((n, k)).astype(dtype), rng.standard_normal((k, m)).astype(dtype)


ONE_WARP = {"warps_m": 1, "frags_m": 2}


@pytest.mark.parametrize(
    ("shape", "in_dtype", "out_dtype", "options"),
    [
        pytest.param((32, 32, 32), "float16", "float32", ONE_WARP, id="f16-f32"),
        pytest.param((32, 32, 32), "float16", "float16", ONE_WARP, id="f16-f16"),
        pytest.param(
            (32, 64, 32),
            "float16",
            "float32",
            {"warps_m": 2, "frags_m": 1, "stages": 2},
            id="f16-f32-two-warps-cp-async",
        ),
        pytest.param(
            (32, 32, 32), "bfloat16", "float32", {**ONE_WARP, "stages": 2}, id="bf16-f32-cp-async"
        ),
        pytest.param(
            (32, 32, 64),
            "float16",
            "float32",
            {**ONE_WARP, "k_frags": 2, "stages": 2, "fragment_stages": 2},
            id="f16-f32-fragment-pipeline",
        ),
    ],
)
def test_the_lowered_mma_schedule_computes_the_matmul(shape, in_dtype, out_dtype, options):
    options = {"warps_n": 1, "frags_n": 2, "k_frags": 1, "stages": 1, **options}
    lowered = _lowered(shape, in_dtype, out_dtype, **options)
    script = lowered.script()
    for intrinsic in ("ptx_ldmatrix", "ptx_mma", "mma_fill", "mma_store"):
        assert intrinsic in script
    assert ("tw.cuda.cp_async" in script) == (options["stages"] > 1)
    a, b = _inputs(shape, in_dtype)
    c = run_module(lowered, "main", a, b, np.full(shape[:2], np.nan, out_dtype))[2]
    expected = a.astype("float32") @ b.astype("float32")
    tolerance = 1e-5 if out_dtype == "float32" else 1e-2
    scale = np.abs(expected).max()
    np.testing.assert_allclose(c.astype("float32"), expected, rtol=0, atol=tolerance * scale)


@pytest.mark.parametrize("dropped", [0, 1])
def test_ldmatrix_reads_race_with_the_fetch_without_its_barriers(dropped):
    # The loop over k opens with a barrier (the fetch waits for the last step's ldmatrix
    # readers) and has one between the fetch and the ldmatrix (the readers wait for it).
    lowered = _lowered((32, 32, 32), "float16", "float32", warps_m=1, warps_n=1, frags_m=2,
                       frags_n=2, k_frags=1, stages=1)  # fmt: skip
    broken = without_barriers(lowered, {dropped})
    a, b = _inputs((32, 32, 32), "float16")
    pattern = r"^[AB]_shared\[\d+\]: read/write race: thread \(\d+, 0, 0\) .* reads it"
    with pytest.raises(SharedMemoryRace, match=pattern):
        run_module(broken, "main", a, b, np.zeros((32, 32), "float32"))


# -- ldmatrix on a hand-made tile --------------------------------------------------------------
def _ldmatrix_kernel(trans: bool, last: int = 255) -> PrimFunc:
    """One warp loads the row-major 16x16 tile S with ``ldmatrix.x4``: lane t gives the address
    of row t % 16, columns 8 (t // 16) .. +8 (matrices: top left, bottom left, top right,
    bottom right); O[t] is what lane t receives. The region named ends at S_shared[last]."""
    return from_source(f"""
from tilewright.script import tir as T
@T.prim_func
def main(S: T.Buffer((256,), "float16"), O: T.Buffer((256,), "float16")):
    for tx in T.thread_binding(32, thread="threadIdx.x"):
        S_shared = T.decl_buffer((256,), "float16", scope="shared")
        R = T.decl_buffer((8,), "float16", scope="local")
        for i in range(8):
            S_shared[tx * 8 + i] = S[tx * 8 + i]
        T.evaluate(T.call_intrin("int32", "tw.sync_threads"))
        T.evaluate(T.call_intrin(
            "float16", "ptx_ldmatrix", T.bool({trans}), 4, ".b16",
            T.call_intrin("handle", "tw.region_data", R[0], R[7]), 0,
            T.call_intrin(
                "handle", "tvm_access_ptr",
                T.call_intrin("handle", "tw.region_data", S_shared[0], S_shared[{last}]),
                0, 256, 1,
            ),
            tx % 16 * 16 + tx // 16 * 8,
        ))
        for i in range(8):
            O[tx * 8 + i] = R[i]
""")


def _ptx_ldmatrix_x4(tile: np.ndarray, trans: bool) -> np.ndarray:
    """What each lane receives (32 x 8), from the PTX ISA: register q holds two elements of
    matrix q, at (row t // 4, columns 2 (t % 4), +1), or with .trans (rows 2 (t % 4), +1,
    column t // 4)."""
    got = np.zeros((32, 8), tile.dtype)
    for t in range(32):
        for q, (row0, col0) in enumerate([(0, 0), (8, 0), (0, 8), (8, 8)]):
            for i in (0, 1):
                if trans:
                    got[t, 2 * q + i] = tile[row0 + 2 * (t % 4) + i, col0 + t // 4]
                else:
                    got[t, 2 * q + i] = tile[row0 + t // 4, col0 + 2 * (t % 4) + i]
    return got


@pytest.mark.parametrize("trans", [False, True])
def test_ldmatrix_gives_each_lane_its_elements_as_the_ptx_isa_says(trans):
    tile = np.arange(256).astype("float16").reshape(16, 16)
    result = run_kernel(_ldmatrix_kernel(trans), tile.reshape(-1), np.zeros(256, "float16"))
    got = result.arrays[1].reshape(32, 8)
    np.testing.assert_array_equal(got, _ptx_ldmatrix_x4(tile, trans))
    r = np.arange(8)[None, :]
    g, q = LANES // 4, LANES % 4
    if trans:  # registers 0-3 and 4-7: mma.m16n8k16's B fragments of columns 0-7 and 8-15
        k, n = 2 * q + r % 2 + 8 * (r % 4 // 2), g + 8 * (r // 4)
    else:  # mma.m16n8k16's A fragment, and the library's layout of it
        k, n = g + 8 * (r // 2 % 2), 2 * q + r % 2 + 8 * (r // 4)
        rows, cols = ldmatrix_32x8_to_shared_16x16_layout(LANES, r)
        np.testing.assert_array_equal(got, tile[rows, cols])
    np.testing.assert_array_equal(got, tile[k, n])
    assert result.effects[intrinsics.PTX_LDMATRIX] == 32


def test_ldmatrix_outside_the_region_its_pointer_names_is_an_error():
    tile = np.zeros(256, "float16")
    message = r"^S_shared: elements 248\.\.255 outside the region 0\.\.247$"
    with pytest.raises(IndexError, match=message):
        run_kernel(_ldmatrix_kernel(False, last=247), tile, np.zeros(256, "float16"))


# -- mma_fill and mma_store ------------------------------------------------------------------
def _store_kernel(warps: int) -> PrimFunc:
    """Each warp zeroes an accumulator tile, adds 8 t + r to lane t's register r and stores
    the tile to columns 0-15 of C, 16 rows of 32."""
    return from_source(f"""
from tilewright.script import tir as T
@T.prim_func
def main(C: T.Buffer((512,), "float32")):
    for ty in T.thread_binding({warps}, thread="threadIdx.y"):
        for tx in T.thread_binding(32, thread="threadIdx.x"):
            R = T.decl_buffer((8,), "float32", scope="local")
            T.evaluate(T.call_intrin(
                "float32", "mma_fill", 8, T.call_intrin("handle", "tw.region_data", R[0], R[7]), 0
            ))
            for i in range(8):
                R[i] = R[i] + T.Cast("float32", tx * 8 + i)
            T.evaluate(T.call_intrin(
                "float32", "mma_store", 16, 16,
                T.call_intrin(
                    "handle", "tvm_access_ptr",
                    T.call_intrin("handle", "tw.region_data", C[0], C[495]), 0, 256, 2,
                ),
                T.call_intrin("handle", "tw.region_data", R[0], R[7]), 0, 32,
            ))
""")


def test_mma_store_puts_each_lane_register_at_its_accumulator_place():
    result = run_kernel(_store_kernel(1), np.full(512, np.nan, "float32"))
    c = result.arrays[0].reshape(16, 32)
    # The PTX accumulator fragment: register r of lane t (group g, index q in the group) is
    # row g + 8 (r // 2), column 2 q + r % 2 of the left 16x8 half, then of the right one.
    expected = np.zeros((16, 16), "float32")
    for t in range(32):
        for r in range(8):
            expected[t // 4 + 8 * (r % 4 // 2), 2 * (t % 4) + r % 2 + 8 * (r // 4)] = 8 * t + r
    np.testing.assert_array_equal(c[:, :16], expected)
    assert np.isnan(c[:, 16:]).all()
    assert result.effects[intrinsics.MMA_STORE] == 32


def test_two_warps_storing_one_tile_race():
    message = (
        r"^C\[0\]: write/write race: thread \(0, 0, 0\) of block \(0, 0, 0\) and thread "
        r"\(0, 1, 0\) both write it with no barrier between them$"
    )
    with pytest.raises(DataRace, match=message):
        run_kernel(_store_kernel(2), np.zeros(512, "float32"))


def _steady_loop(kernel: PrimFunc) -> For:
    """The pipelined k loop: the serial loop whose body holds the ldmatrix reads."""
    loops: list[For] = []

    def visit(node: object) -> None:
        if isinstance(node, For) and node.kind is ForKind.SERIAL and "ptx_ldmatrix" in str(node):
            loops.append(node)

    post_order_visit(kernel.body, visit)
    return loops[-1]  # post-order: the outermost such loop comes last


def test_a_compute_first_pipeline_needs_one_barrier_a_step_and_has_no_race():
    # Three shared buffers, compute of tile k before the fetch of tile k + 2: the barrier after
    # the wait orders both the reads of tile k (its copies landed) and the fetch into the
    # buffer tile k - 1 used (all threads finished reading it). The fetch and the compute of
    # one step touch different versions ((k + 2) % 3 against k % 3), so need none between.
    shape = (32, 64, 128)
    options = dict(warps_m=1, warps_n=2, frags_m=2, frags_n=1, k_frags=1, stages=3)
    lowered = _lowered(shape, "float16", "float32", compute_first=True, **options)
    loop = _steady_loop(lowered["main_kernel"])
    count = [0]
    post_order_visit(loop.body, lambda n: count.__setitem__(0, count[0] + is_sync(n)))
    assert count[0] == 1
    a, b = _inputs(shape, "float16")
    c = run_module(lowered, "main", a, b, np.full(shape[:2], np.nan, "float32"))[2]
    expected = a.astype("float32") @ b.astype("float32")
    np.testing.assert_allclose(c, expected, rtol=0, atol=1e-5 * np.abs(expected).max())
    # The fetch as written first keeps its barrier before the fetch.
    lowered = _lowered(shape, "float16", "float32", **options)
    count = [0]
    post_order_visit(
        _steady_loop(lowered["main_kernel"]).body,
        lambda n: count.__setitem__(0, count[0] + is_sync(n)),
    )
    assert count[0] == 2
