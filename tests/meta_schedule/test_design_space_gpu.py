"""On the GPU (scripts/gpu-check): one CUDA candidate of every corpus workload, sampled from
the default design space at the workload's real sizes, runs on the device and computes what
numpy computes (under compute-sanitizer too, in gpu-check)."""

from __future__ import annotations

import numpy as np
import pytest

import tilewright as tw
from tilewright import meta_schedule as ms
from tilewright.meta_schedule.testing.workloads import WORKLOADS
from tilewright.runtime.cuda_runtime import device_count

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(device_count() == 0, reason="needs a CUDA GPU"),
]


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_a_sampled_cuda_candidate_matches_numpy_on_the_gpu(name: str) -> None:
    workload = WORKLOADS[name]
    ctx = ms.TuneContext(
        workload.func(**workload.sizes), target="cuda", task_name=name, rand_state=11
    )
    (sch,), report = ms.sample_candidates(ctx, 1, max_attempts=400)
    print(name, report)
    rt_mod = tw.build(sch.mod, target="cuda")
    inputs = workload.inputs(np.random.default_rng(0), **workload.sizes)
    args = [tw.nd.array(a, tw.cuda(0)) for a in inputs]
    rt_mod["main"](*args)
    want = workload.reference(*inputs)
    for arg, expected in zip(args, want):
        np.testing.assert_allclose(
            arg.numpy(), expected, rtol=1e-3, atol=1e-3, err_msg=str(sch.trace)
        )
