"""Differential GPU fuzzing: random thread-bound schedules (block/thread binding, local and
shared caches with cooperative fetch, vectorize, unroll, decompose_reduction) of small programs,
built for OpenCL and run on PoCL, and run in the evaluator, which checks them for races, must
compute what numpy computes."""

from __future__ import annotations

import random

import numpy as np
import pytest
from evaluator import run, run_module
from gpu_fuzz_schedules import GPU_CORPUS, draw_schedule
from schedule_checks import check_well_formed

import tilewright as tw
from tilewright import config
from tilewright.runtime import opencl_runtime
from tilewright.schedule import Schedule

CASES = max(1, config.get().fuzz_cases // 10)  # 20 by default

# Cases past the default 20 that hit a known library bug (none at present).
KNOWN: dict[int, str] = {}

# PoCL 3.1 (LLVM 15) loses the store after the loop in this valid kernel (local size 4):
# C stays NaN where every work-item with t < 2 should write 10. So the schedule drawer keeps
# every thread busy when a shared cache sits inside the reduction loop.
#   __kernel void k(__global float* A, __global float* C) {
#     __local float S[4];
#     int t = (int)get_local_id(0);
#     float acc = 0.0f;
#     for (int k = 0; k < 2; ++k) {
#       barrier(CLK_LOCAL_MEM_FENCE);
#       S[t] = A[k * 4 + t];
#       barrier(CLK_LOCAL_MEM_FENCE);
#       for (int j = 0; j < 2; ++j) {
#         if (t < 2) {
#           acc = acc + S[j];
#         }
#       }
#     }
#     if (t < 2) {
#       C[t] = acc;
#     }
#   }
#
# PoCL 3.1 also reads a private array wrongly through vload2 after a loop holding barriers:
# with global and local size (3, 8), A = arange(8), this kernel writes zeros to C where
# scalar stores of acc write 0, 1, 2, ... (and vload4 / vstore4 fetches into shared memory
# go wrong in such loops too). So kernels with a barrier in a loop are drawn without vectors.
#   __kernel void k(__global float* A, __global float* C) {
#     __local float S[8];
#     int y = (int)get_local_id(1);
#     int x = (int)get_local_id(0);
#     float acc[2];
#     for (int j = 0; j < 2; ++j) {
#       acc[j] = 0.0f;
#     }
#     for (int k = 0; k < 2; ++k) {
#       barrier(CLK_LOCAL_MEM_FENCE);
#       if (y * 3 + x < 8) {
#         S[y * 3 + x] = A[y * 3 + x] + (float)k;
#       }
#       barrier(CLK_LOCAL_MEM_FENCE);
#       for (int j = 0; j < 2; ++j) {
#         acc[j] = acc[j] + S[y] * (float)(x * 2 + j);
#       }
#     }
#     vstore2(vload2(0, acc), 0, C + (y * 6 + x * 2));
#   }


@pytest.fixture(autouse=True)
def _need_opencl() -> None:
    if not opencl_runtime.available():
        if config.get().ci:
            pytest.fail("no OpenCL platform: CI installs PoCL (pocl-opencl-icd)")
        pytest.skip("no OpenCL platform")


def _seed(case: int) -> int:
    return 104729 * case + 11


@pytest.mark.parametrize(
    "case",
    [
        pytest.param(c, marks=pytest.mark.xfail(strict=True, reason=KNOWN[c])) if c in KNOWN else c
        for c in range(CASES)
    ],
)
def test_random_gpu_schedule_matches_numpy_on_opencl(case: int) -> None:
    seed = _seed(case)
    program = GPU_CORPUS[case % len(GPU_CORPUS)]
    sch = Schedule(program.func)
    try:
        drawn = draw_schedule(sch, program, random.Random(seed))
    finally:
        # Shown by pytest when the case fails: enough to replay it by hand.
        print(f"program={program.name} seed={seed}\n{sch.trace}")
    print(drawn)
    check_well_formed(sch.mod["main"])

    lowered = tw.lower(sch.mod, "opencl")
    rt_mod = tw.build_lowered(lowered, target="opencl")
    source = rt_mod.imported_modules[0].get_source()
    if drawn.crosses_threads:
        assert "barrier(" in source, source

    inputs = program.inputs(np.random.default_rng(seed))
    arrays = [*inputs[:-1], np.full_like(inputs[-1], np.nan)]
    args = [tw.nd.array(a, tw.opencl(0)) for a in arrays]
    rt_mod["main"](*args)
    # The evaluator runs the same kernel thread by thread and raises DataRace on a race,
    # which PoCL (running work-items one after another) would hide.
    evaluated = run_module(lowered, "main", *arrays)
    want = program.reference(*arrays)
    for arg, got, expected in zip(args, evaluated, want):
        message = f"seed={seed}\n{sch.trace}"
        np.testing.assert_allclose(arg.numpy(), expected, rtol=1e-4, atol=1e-4, err_msg=message)
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4, err_msg=message)


def _matmul_with_a_shared_scalar() -> Schedule:
    program = next(p for p in GPU_CORPUS if p.name == "matmul")
    sch = Schedule(program.func)
    block = sch.get_block("C")
    i, j, k = sch.get_loops(block)
    sch.bind(i, "blockIdx.x")
    sch.bind(j, "threadIdx.x")
    cache = sch.cache_read(block, 0, "shared")
    sch.compute_at(cache, k)  # one element A[i, k] per iteration, read by all 12 threads
    _, tx = sch.split(sch.add_unit_loop(cache), [None, 12])
    sch.bind(tx, "threadIdx.x")
    return sch


def test_barrier_after_a_fetch_that_one_thread_makes() -> None:
    sch = _matmul_with_a_shared_scalar()
    rt_mod = tw.build(sch.mod, target="opencl")
    source = rt_mod.imported_modules[0].get_source()
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((8, 10), "float32"), rng.standard_normal((10, 12), "float32")
    args = [tw.nd.array(x, tw.opencl(0)) for x in (a, b, np.full((8, 12), np.nan, "float32"))]
    rt_mod["main"](*args)
    np.testing.assert_allclose(args[2].numpy(), a @ b, rtol=1e-4, atol=1e-4)
    assert "barrier(" in source, source


def test_the_shared_scalar_schedule_is_right_with_every_thread_fetching() -> None:
    # The same schedule without the thread guard: each thread writes the element it reads.
    program = next(p for p in GPU_CORPUS if p.name == "matmul")
    sch = Schedule(program.func)
    block = sch.get_block("C")
    i, j, k = sch.get_loops(block)
    sch.bind(i, "blockIdx.x")
    sch.bind(j, "threadIdx.x")
    sch.compute_at(sch.cache_read(block, 0, "shared"), k)
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((8, 10), "float32"), rng.standard_normal((10, 12), "float32")
    args = [tw.nd.array(x, tw.opencl(0)) for x in (a, b, np.full((8, 12), np.nan, "float32"))]
    tw.build(sch.mod, target="opencl")["main"](*args)
    np.testing.assert_allclose(args[2].numpy(), a @ b, rtol=1e-4, atol=1e-4)


def test_decompose_reduction_of_a_reduction_split_unevenly() -> None:
    program = next(p for p in GPU_CORPUS if p.name == "row_sum")
    sch = Schedule(program.func)
    _, k = sch.get_loops("B")
    k0, _ = sch.split(k, [None, 4])  # 10 by 4: T.where(k_0 * 4 + k_1 < 10)
    sch.decompose_reduction("B", k0)
    # The init keeps no conjunct over reduction loops: it runs once per row.
    assert "T.where" not in sch.mod.script().split('T.block("B_init")')[1].split("T.block")[0]
    a = np.random.default_rng(0).standard_normal((6, 10)).astype("float32")
    np.testing.assert_allclose(
        run(sch.mod["main"], a, np.zeros(6, "float32"))[1], a.sum(1), rtol=1e-5, atol=1e-6
    )
