"""Nested software pipelines: an inner pipelined loop's prologue, loop and epilogue become
statements of the outer pipeline (expected script; the annotations replay from the trace; C
computes the same), register buffers keep the inner pipeline's versions where the step order
or constant versions keep the stages apart, and the tensor-core GEMM nested this way keeps one
barrier a k tile (GPU evaluator with its race detector; NVRTC)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pytest
from evaluator import run_module

import tilewright as tw
from tilewright.codegen import codegen_cuda
from tilewright.ir import IRModule, assert_structural_equal
from tilewright.meta_schedule.testing.tensor_core import mma_matmul, schedule_mma
from tilewright.runtime.cuda_runtime.nvrtc import compile_cuda, nvrtc_version
from tilewright.schedule import ScheduleError
from tilewright.script import tir as T
from tilewright.target import Target
from tilewright.tir import Schedule
from tilewright.transform.inject_software_pipeline import (
    SoftwarePipelineError,
    inject_software_pipeline,
)
from tilewright.transform.pipeline import cpu_stages, gpu_stages, lower_module
from tilewright.transform.simplify import simplify

sys.path.insert(0, str(Path(__file__).parents[1] / "schedule"))
from schedule_checks import check_schedule


@T.prim_func
def row_sums(A: T.Buffer((4, 64), "float32"), C: T.Buffer((4,), "float32")):
    for i, k in T.grid(4, 64):
        with T.block("C"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                C[vi] = T.float32(0)
            C[vi] = C[vi] + A[vi, vk] * T.float32(2)


def _nested(order: list[int] | None = (1, 2, 0, 3)) -> Schedule:
    """Tiles of 16 columns of A fetched to a ``global`` buffer (outer loop k_0), each column
    of a tile to a ``local`` one (inner loop k_1, stages [0, 1]); the outer body counts the
    fetch, the inner prologue, the inner loop and the inner epilogue."""
    sch = Schedule(row_sums)
    block = sch.get_block("C")
    _, k = sch.get_loops(block)
    k0, k1 = sch.split(k, [None, 16])
    sch.reorder(k0, k1, sch.get_loops(block)[0])
    sch.compute_at(sch.cache_read(block, 0, "global"), k0)
    sch.compute_at(sch.cache_read(block, 0, "local"), k1)
    sch.decompose_reduction(block, k0)
    sch.annotate(k1, "software_pipeline_stage", [0, 1])
    sch.annotate(k0, "software_pipeline_stage", [0, 0, 1, 1])
    if order is not None:
        sch.annotate(k0, "software_pipeline_order", list(order))
    return sch


@T.prim_func
def row_sums_nested(A: T.Buffer((4, 64), "float32"), C: T.Buffer((4,), "float32")):
    for i_init in range(4):
        C[i_init] = T.float32(0)
    A_global = T.decl_buffer((2, 4, 16), "float32")
    A_global_local = T.decl_buffer((2, 4, 1), "float32", scope="local")
    # Tile 0 and its first column.
    for ax0, ax1 in T.grid(4, 16):
        A_global[0, ax0, ax1] = A[ax0, ax1]
    for ax0 in range(4):
        A_global_local[0, ax0, 0] = A_global[0, ax0, 0]
    for k_0 in range(3):
        # Columns 1..15 of tile k_0 fetched one ahead of the sums of columns 0..14,
        for k_1 in range(15):
            for ax0 in range(4):
                A_global_local[(k_1 + 1) % 2, ax0, 0] = A_global[k_0 % 2, ax0, k_1 + 1]
            for i in range(4):
                C[i] = C[i] + A_global_local[k_1 % 2, i, 0] * T.float32(2)
        # then tile k_0 + 1 and its first column (version 0: column 15 is in version 1),
        for ax0, ax1 in T.grid(4, 16):
            A_global[(k_0 + 1) % 2, ax0, ax1] = A[ax0, k_0 * 16 + ax1 + 16]
        for ax0 in range(4):
            A_global_local[0, ax0, 0] = A_global[(k_0 + 1) % 2, ax0, 0]
        # then the sum of column 15 of tile k_0.
        for i in range(4):
            C[i] = C[i] + A_global_local[1, i, 0] * T.float32(2)
    for k_1 in range(15):
        for ax0 in range(4):
            A_global_local[(k_1 + 1) % 2, ax0, 0] = A_global[1, ax0, k_1 + 1]
        for i in range(4):
            C[i] = C[i] + A_global_local[k_1 % 2, i, 0] * T.float32(2)
    for i in range(4):
        C[i] = C[i] + A_global_local[1, i, 0] * T.float32(2)


def _before_pipeline(mod: IRModule) -> IRModule:
    stages = cpu_stages(Target("c"))
    return lower_module(mod, stages[: [s.name for s in stages].index("inject_software_pipeline")])


def test_the_inner_pipeline_steps_are_statements_of_the_outer_one() -> None:
    got = simplify(inject_software_pipeline(_before_pipeline(_nested().mod)["main"]))
    want = simplify(row_sums_nested).replace(attrs=got.attrs)
    assert_structural_equal(got, want)


def test_the_nested_annotations_replay_and_compute_the_same_in_c() -> None:
    for sch in (_nested(), _nested(order=None)):
        check_schedule(sch, row_sums)  # replays, parses back, computes what row_sums does
        a = np.random.default_rng(0).standard_normal((4, 64)).astype("float32")
        c = np.full(4, np.nan, "float32")
        tw.build(sch.mod, target="c")["main"](a, c)
        np.testing.assert_allclose(c, (a * 2).sum(axis=1), rtol=1e-5)


def test_a_register_buffer_read_after_the_next_write_gets_versions() -> None:
    # In the written order the inner loop (stage 1) runs after the next tile's first
    # column (stage 0) overwrote version 0: the column buffer needs an outer version too.
    lowered = lower_module(_nested(order=None).mod, list(cpu_stages(Target("c"))))
    assert 'A_global_local = T.decl_buffer((16,), "float32", scope="local")' in lowered.script()
    lowered = lower_module(_nested().mod, list(cpu_stages(Target("c"))))
    assert 'A_global_local = T.decl_buffer((8,), "float32", scope="local")' in lowered.script()


def test_an_outer_stage_list_of_neither_length_is_refused() -> None:
    sch = _nested(order=None)
    k0 = sch.get_loops(sch.get_block("A_global"))[0]
    sch.annotate(k0, "software_pipeline_stage", [0, 0, 1])
    with pytest.raises(SoftwarePipelineError, match=r"each of the 2 \(or, the inner pipelines' "
                       r"steps counted, 4\) statements"):  # fmt: skip
        tw.lower(sch.mod, "c")


W4 = dict(warps_m=2, warps_n=2, frags_m=1, frags_n=1, k_frags=4, stages=3, fragment_stages=2)


def _nested_gemm(n: int = 64, k: int = 256, **config) -> Schedule:
    options = {**W4, "nested": True, **config}
    return schedule_mma(Schedule(mma_matmul(n, n, k)), **options)


def test_the_nested_gemm_has_one_barrier_a_k_tile_and_compiles() -> None:
    # 8 k tiles: the loop runs 6 times, so the versions stay remainders (k_0 % 3), which
    # the barrier pass tells apart (with 2 iterations the simplifier drops the % 3).
    mod = _nested_gemm(k=512).mod
    source = codegen_cuda(lower_module(mod, list(gpu_stages(Target("cuda")))))
    loop = source[source.index("for (int kk_0_0 = 0;") :]
    loop = loop[: loop.index("\n  }\n")]
    # Steps 0-2 of tile k (each: the next step's fragments, then its mma), the fetch of
    # tile k + 2, the wait for tile k + 1 and its one barrier, tile k + 1's first fragments,
    # then the mma of step 3.
    assert loop.count("__syncthreads();") == 1
    assert loop.count("cp.async.wait_group 1;") == 1
    events = re.findall(r"(mma\.sync|ldmatrix|cp\.async\.cg|wait_group)", loop)
    assert events[-1] == "mma.sync" and events.index("wait_group") > events.index("cp.async.cg")
    after_wait = events[events.index("wait_group") + 1 :]
    assert after_wait[: after_wait.index("mma.sync")] == ["ldmatrix"] * 2
    if nvrtc_version() is None:
        pytest.skip("NVRTC is not installed")
    for arch in ("sm_80", "sm_90"):
        compile_cuda(source, arch, ["main_kernel"], "nvrtc")


@pytest.mark.parametrize(
    "config",
    [
        {},
        {"permuted": True, "frags_n": 2, "k_frags": 2},
        # One fragment a k tile: no inner loop, a no-op counted in its place.
        {"k_frags": 1, "stages": 4},
    ],
)
def test_the_nested_gemm_matches_numpy_in_the_race_checking_evaluator(config) -> None:
    rng = np.random.default_rng(3)
    a = rng.standard_normal((64, 256)).astype(np.float16)
    b = rng.standard_normal((256, 64)).astype(np.float16)
    sch = _nested_gemm(**config)
    c = np.full((64, 64), np.nan, "float32")
    got = run_module(tw.lower(sch.mod, "cuda"), "main", a, b, c)[2]
    want = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * np.abs(want).max())


def test_nesting_needs_a_fetch_pipeline_and_two_fragment_stages() -> None:
    with pytest.raises(ScheduleError, match="stages > 1 and fragment_stages 2"):
        _nested_gemm(fragment_stages=1)
