"""The notebook's GPU schedules (shared caches, cooperative fetch, local accumulators) built
for OpenCL and run on PoCL compute what numpy computes."""

from __future__ import annotations

import numpy as np
import pytest
import test_seed_schedules as seed

import tilewright as tw
from tilewright import config
from tilewright.runtime import opencl_runtime
from tilewright.tir import Schedule


@pytest.fixture(autouse=True)
def _need_opencl() -> None:
    if not opencl_runtime.available():
        if config.get().ci:
            pytest.fail("no OpenCL platform: CI installs PoCL (pocl-opencl-icd)")
        pytest.skip("no OpenCL platform")


def _run(mod: tw.IRModule, arrays: list[np.ndarray]) -> list[np.ndarray]:
    args = [tw.nd.array(a, tw.opencl(0)) for a in arrays]
    tw.build(mod, target="opencl")["main"](*args)
    return [a.numpy() for a in args]


def test_window_sum_with_shared_cache_and_cooperative_fetch() -> None:
    sch = Schedule(seed.MyModuleWindowSum)
    block = sch.get_block("C")
    (i,) = sch.get_loops(block)
    i0, i1 = sch.split(i, [None, 128])
    sch.bind(i0, "blockIdx.x")
    sch.bind(i1, "threadIdx.x")
    cache = sch.cache_read(block, 0, "shared")
    sch.compute_at(cache, i1)
    _, ax1 = sch.split(sch.get_loops(cache)[-1], [None, 128])
    sch.bind(ax1, "threadIdx.x")
    a = np.random.default_rng(0).random(1027, "float32")
    out = _run(sch.mod, [a, np.zeros(1024, "float32")])[1]
    np.testing.assert_allclose(out, a[:-3] + a[1:-2] + a[2:-1], rtol=1e-5)


@pytest.mark.parametrize("schedule", [seed.blocking, seed.blocking_with_shared])
def test_matmul_blocking_schedules(schedule) -> None:
    mod = seed.matmul_module(64)
    sch = schedule(Schedule(mod), 2, 2, 4, 4, 4)
    rng = np.random.default_rng(1)
    a, b = rng.random((64, 64), "float32"), rng.random((64, 64), "float32")
    out = _run(sch.mod, [a, b, np.zeros((64, 64), "float32")])[2]
    np.testing.assert_allclose(out, a @ b, rtol=1e-4)
