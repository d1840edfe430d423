"""Differential GPU fuzzing: random thread-bound schedules (block/thread binding, local and
shared caches with cooperative fetch, vectorize, unroll, decompose_reduction) of small programs,
built for OpenCL and run on PoCL, must compute what numpy computes."""

from __future__ import annotations

import random

import numpy as np
import pytest
from gpu_fuzz_schedules import GPU_CORPUS, draw_schedule
from schedule_checks import check_well_formed

import tilewright as tw
from tilewright import config
from tilewright.runtime import opencl_runtime
from tilewright.schedule import Schedule

CASES = max(20, config.get().fuzz_cases // 10)


@pytest.fixture(autouse=True)
def _need_opencl() -> None:
    if not opencl_runtime.available():
        if config.get().ci:
            pytest.fail("no OpenCL platform: CI installs PoCL (pocl-opencl-icd)")
        pytest.skip("no OpenCL platform")


def _seed(case: int) -> int:
    return 104729 * case + 11


@pytest.mark.parametrize("case", range(CASES))
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

    rt_mod = tw.build(sch.mod, target="opencl")
    source = rt_mod.imported_modules[0].get_source()
    if drawn.crosses_threads:
        assert "barrier(" in source, source

    inputs = program.inputs(np.random.default_rng(seed))
    arrays = [*inputs[:-1], np.full_like(inputs[-1], np.nan)]
    args = [tw.nd.array(a, tw.opencl(0)) for a in arrays]
    rt_mod["main"](*args)
    want = program.reference(*arrays)
    for arg, expected in zip(args, want):
        np.testing.assert_allclose(
            arg.numpy(), expected, rtol=1e-4, atol=1e-4, err_msg=f"seed={seed}\n{sch.trace}"
        )
