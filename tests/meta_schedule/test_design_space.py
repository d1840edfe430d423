"""Every workload of the corpus, on each of "llvm", "cuda" and "opencl": candidates sampled
from the default design space and postprocessed are legal, replay from their JSON trace to
a structurally equal module, and compute what numpy computes — run as C on the CPU, run as
OpenCL on PoCL and thread by thread in the evaluator (which raises on a race in global or
shared memory), and compiled by NVRTC for CUDA (at the workloads' real sizes; they run on
the H200 in scripts/gpu-check).

``TILEWRIGHT_FUZZ_CASES=N`` draws ``N // 50`` candidates per workload for "llvm" and
"opencl" and ``N // 100`` for "cuda" (4 and 2 by default; 50000 gives 1000 and 500).
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from evaluator import run_module

import tilewright as tw
from tilewright import config
from tilewright import meta_schedule as ms
from tilewright.ir import assert_structural_equal
from tilewright.meta_schedule.testing.workloads import WORKLOADS
from tilewright.runtime import opencl_runtime
from tilewright.runtime.cuda_runtime.nvrtc import nvrtc_version
from tilewright.schedule import Schedule, Trace

COUNT = max(2, config.get().fuzz_cases // 50)
# CUDA candidates are lowered and compiled in full, explicit unrolling and all: fewer of them.
# Real-size CUDA candidates are large (pipelined, unrolled): one a workload by default
# (TILEWRIGHT_FUZZ_CASES=400 compiles four), to keep the default run within its budget.
CUDA_COUNT = max(1, config.get().fuzz_cases // 200)
TARGETS = ("llvm", "cuda", "opencl")


def _candidates(
    name: str, target: str, small: bool = True, count: int = COUNT
) -> tuple[list[Schedule], ms.SampleReport]:
    workload = WORKLOADS[name]
    sizes = workload.small if small else workload.sizes
    ctx = ms.TuneContext(workload.func(**sizes), target=target, task_name=name, rand_state=7)
    return ms.sample_candidates(ctx, count, max_attempts=100 * count)


def _check_replay(sch: Schedule, original: tw.IRModule) -> None:
    text = json.dumps(sch.trace.as_json())
    replayed = Schedule(original)
    Trace.from_json(text).apply_to_schedule(replayed)
    assert_structural_equal(replayed.mod, sch.mod)


def _check_numbers(name: str, got: list[np.ndarray], inputs: list[np.ndarray], trace: str):
    want = WORKLOADS[name].reference(*inputs)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4, err_msg=trace)


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_cpu_candidates_run_as_c(name: str) -> None:
    workload = WORKLOADS[name]
    original = tw.IRModule({"main": workload.func(**workload.small)})
    candidates, report = _candidates(name, "llvm")
    print(name, "llvm:", report)
    assert len(candidates) == COUNT, report
    for k, sch in enumerate(candidates):
        _check_replay(sch, original)
        inputs = workload.inputs(np.random.default_rng(k), **workload.small)
        rt_mod = tw.build(sch.mod, target="llvm")
        args = [tw.nd.array(a) for a in inputs]
        rt_mod["main"](*args)
        _check_numbers(name, [a.numpy() for a in args], inputs, str(sch.trace))


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_gpu_candidates_run_on_pocl_without_races(name: str) -> None:
    if not opencl_runtime.available():
        if config.get().ci:
            pytest.fail("no OpenCL platform: CI installs PoCL (pocl-opencl-icd)")
        pytest.skip("no OpenCL platform")
    workload = WORKLOADS[name]
    original = tw.IRModule({"main": workload.func(**workload.small)})
    candidates, report = _candidates(name, "opencl")
    print(name, "opencl:", report)
    assert len(candidates) == COUNT, report
    for k, sch in enumerate(candidates):
        _check_replay(sch, original)
        inputs = workload.inputs(np.random.default_rng(k), **workload.small)
        lowered = tw.lower(sch.mod, "opencl")
        rt_mod = tw.build_lowered(lowered, target="opencl")
        args = [tw.nd.array(a, tw.opencl(0)) for a in inputs]
        rt_mod["main"](*args)
        _check_numbers(name, [a.numpy() for a in args], inputs, str(sch.trace))
        # Thread by thread, with the race detector on global and shared memory.
        _check_numbers(name, run_module(lowered, "main", *inputs), inputs, str(sch.trace))


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_cuda_candidates_compile_with_nvrtc(name: str) -> None:
    # Nothing runs here, so the workloads keep their real sizes (the small ones have too
    # few elements for the 32-thread minimum MultiLevelTiling asks of a CUDA block).
    workload = WORKLOADS[name]
    original = tw.IRModule({"main": workload.func(**workload.sizes)})
    candidates, report = _candidates(name, "cuda", small=False, count=CUDA_COUNT)
    print(name, "cuda:", report)
    assert len(candidates) == CUDA_COUNT, report
    for sch in candidates:
        _check_replay(sch, original)
        artifact = tw.build_artifact(sch.mod, target="cuda")
        if nvrtc_version() is not None:
            assert artifact.format == "cubin", artifact.format
        elif config.get().ci:
            pytest.fail("CI installs NVRTC (the cuda extra)")


def test_gpu_fresh_samples_weight_the_grid_and_replay_as_ordinary_decisions() -> None:
    import random

    from tilewright.meta_schedule.candidates import fresh_decision, fresh_decisions

    workload = WORKLOADS["matmul"]
    cpu = ms.TuneContext(workload.func(**workload.small), target="llvm", rand_state=0)
    assert fresh_decisions(cpu, random.Random(0)) is fresh_decision  # TVM's uniform draws
    gpu = ms.TuneContext(workload.func(m=4096, n=4096, k=4096), target="cuda", rand_state=0)
    (space,) = gpu.generate_design_space()
    provide = fresh_decisions(gpu, random.Random(0))
    grids = []
    for inst in space.trace.insts:
        decision = inst.decision
        drawn = provide(inst, decision)
        if inst.kind != "sample_perfect_tile":
            assert drawn is None
            continue
        assert isinstance(drawn, list) and np.prod(drawn) == np.prod(decision)
        grids.append(drawn[0])
    assert len(grids) == 3  # i, j and k of the matmul
    candidates, report = ms.sample_candidates(gpu, 3, spaces=[space], max_attempts=300)
    assert len(candidates) == 3, report
    for sch in candidates:
        _check_replay(sch, gpu.mod)
