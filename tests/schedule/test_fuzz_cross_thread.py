"""Differential fuzzing of cross-thread reductions: random row sums and maxima reduced over one
or two thread axes (32 to 1024 threads, uneven splits, rows on another thread axis), built for
OpenCL and run on PoCL, and for CUDA on the GPU (gpu-marked), must compute what numpy does.

``TILEWRIGHT_FUZZ_CASES`` scales the count (the default 200 draws 8 cases on PoCL, 40 on the
GPU)."""

from __future__ import annotations

import random

import numpy as np
import pytest
from cross_thread_schedules import draw
from evaluator import run_module

import tilewright as tw
from tilewright import config
from tilewright.runtime import opencl_runtime
from tilewright.runtime.cuda_runtime import device_count
from tilewright.target import Target

CASES = max(1, config.get().fuzz_cases // 25)
GPU_CASES = max(1, config.get().fuzz_cases // 5)
# PoCL runs work-groups of up to 4096 work-items; the opencl kind's default limit is 256.
OPENCL = Target("opencl -max_num_threads=1024")


def _seed(case: int) -> int:
    return 7919 * case + 5


def _run(case: int, target: Target | str, device) -> None:
    seed = _seed(case)
    drawn = draw(random.Random(seed))
    print(f"seed={seed}: {drawn.text}\n{drawn.sch.trace}")  # shown when the case fails
    a = drawn.inputs(seed)
    args = [tw.nd.array(x, device) for x in (a, np.full(drawn.rows, np.nan, "float32"))]
    tw.build(drawn.sch.mod, target)["main"](*args)
    np.testing.assert_allclose(
        args[1].numpy(), drawn.reference(a), rtol=1e-4, atol=1e-4, err_msg=drawn.text
    )


@pytest.mark.parametrize("case", range(CASES))
def test_random_cross_thread_reduction_matches_numpy_on_opencl(case: int) -> None:
    if not opencl_runtime.available():
        if config.get().ci:
            pytest.fail("no OpenCL platform: CI installs PoCL (pocl-opencl-icd)")
        pytest.skip("no OpenCL platform")
    _run(case, OPENCL, tw.opencl(0))


@pytest.mark.parametrize("case", range(CASES))
def test_random_cross_thread_reduction_lowered_for_cuda_matches_numpy(case: int) -> None:
    # The CUDA lowering (shuffles) on the lockstep evaluator, for what CI has no GPU to run.
    seed = _seed(case)
    drawn = draw(random.Random(seed), max_threads=256)
    a = drawn.inputs(seed)
    got = run_module(tw.lower(drawn.sch.mod, "cuda"), "main", a, np.zeros(drawn.rows, "float32"))
    np.testing.assert_allclose(got[1], drawn.reference(a), rtol=1e-4, atol=1e-4, err_msg=drawn.text)


@pytest.mark.gpu
@pytest.mark.skipif(device_count() == 0, reason="needs a CUDA GPU")
@pytest.mark.parametrize("case", range(GPU_CASES))
def test_random_cross_thread_reduction_matches_numpy_on_cuda(case: int) -> None:
    _run(case, "cuda", tw.cuda(0))


@pytest.mark.gpu
@pytest.mark.skipif(device_count() == 0, reason="needs a CUDA GPU")
def test_the_row_sum_of_the_issue_is_right_on_cuda() -> None:
    # 64 x 128, rows to blockIdx.x, the reduction to threadIdx.x: all 64 rows were wrong.
    from cross_thread_schedules import reduction

    from tilewright.schedule import Schedule

    sch = Schedule(reduction(64, 128, "sum"))
    i, k = sch.get_loops("B")
    sch.bind(i, "blockIdx.x")
    sch.bind(k, "threadIdx.x")
    a = np.random.default_rng(0).standard_normal((64, 128)).astype("float32")
    args = [tw.nd.array(x, tw.cuda(0)) for x in (a, np.full(64, np.nan, "float32"))]
    tw.build(sch.mod, "cuda")["main"](*args)
    np.testing.assert_allclose(args[1].numpy(), a.astype("float64").sum(1), rtol=1e-5, atol=1e-4)
