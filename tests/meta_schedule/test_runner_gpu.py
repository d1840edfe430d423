"""On the GPU (scripts/gpu-check): sampled CUDA candidates build in LocalBuilder's workers and
are checked and timed in LocalRunner's; a kernel that faults costs only the worker process
(whose CUDA context the fault poisoned) and the next candidate measures fine."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tilewright import meta_schedule as ms
from tilewright.ir import IRModule
from tilewright.meta_schedule.arg_info import ArgInfo
from tilewright.meta_schedule.builder import BuilderInput, LocalBuilder
from tilewright.meta_schedule.runner import (
    EvaluatorConfig,
    LocalRunner,
    ReferenceCheck,
    RunnerInput,
    reference_path,
)
from tilewright.meta_schedule.testing.workloads import WORKLOADS
from tilewright.runtime.cuda_runtime import device_count
from tilewright.script import tir as T
from tilewright.target import Target

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(device_count() == 0, reason="needs a CUDA GPU"),
]

# compute-sanitizer (gpu-check runs these tests under it too) hands its settings to the
# processes it watches in NV_SANITIZER_* variables; under it the deliberate fault below would
# count as a finding.
UNDER_SANITIZER = any(name.startswith("NV_SANITIZER_") for name in os.environ)
N = 64
QUICK = EvaluatorConfig(
    number=3, repeat=3, min_repeat_ms=5, enable_cpu_cache_flush=True, slow_candidate_secs=0
)


@T.prim_func
def scatter_far(A: T.Buffer((64, 64), "float32"), B: T.Buffer((64, 64), "float32"),
                C: T.Buffer((64, 64), "float32")):  # fmt: skip
    # Writes terabytes past C (the inputs are >= 0.5): an illegal address on the device.
    for i in T.thread_binding(64, thread="threadIdx.x"):
        with T.block("C"):
            vi = T.axis.spatial(64, i)
            C[T.Cast("int64", A[vi, 0] * T.float32(4)) * T.int64(1 << 40), 0] = T.float32(1)


def _matmul() -> IRModule:
    return IRModule({"main": WORKLOADS["matmul"].func(m=N, n=N, k=N)})


# Under compute-sanitizer the builder's child processes run several times slower.
BUILD_S = 300.0


def _candidates(count: int) -> list[IRModule]:
    ctx = ms.TuneContext(_matmul(), target="cuda", task_name="matmul", rand_state=2)
    schedules, _ = ms.sample_candidates(ctx, count, max_attempts=200)
    return [s.mod for s in schedules]


def test_cuda_candidates_build_check_and_time(tmp_path: Path) -> None:
    mod = _matmul()
    infos = tuple(ArgInfo.from_entry_func(mod))
    reference = reference_path(mod, infos, seed=3, cache_dir=str(tmp_path / "refs"))
    builder = LocalBuilder(
        max_workers=2, artifact_dir=str(tmp_path / "builds"), timeout_sec=BUILD_S
    )
    runner = LocalRunner(timeout_sec=60.0, evaluator_config=QUICK)
    try:
        built = builder.build([BuilderInput(m, Target("cuda")) for m in _candidates(3)])
        assert [b.error_msg for b in built] == [None] * 3
        check = ReferenceCheck(reference, seed=3)
        inputs = [RunnerInput(str(b.artifact_path), "cuda", infos, check) for b in built]
        results = [f.result() for f in runner.run(inputs)]
    finally:
        builder.close()
        runner.close()
    for result in results:
        assert result.error_msg is None, result.error_msg
        assert result.run_secs is not None and len(result.run_secs) == QUICK.repeat
        assert all(0 < s < 0.1 for s in result.run_secs)


def test_wrong_cuda_candidate_is_caught(tmp_path: Path) -> None:
    mod = _matmul()
    infos = tuple(ArgInfo.from_entry_func(mod))
    # The reference of another seed: the candidate's output cannot match it.
    reference = reference_path(mod, infos, seed=4, cache_dir=str(tmp_path))
    builder = LocalBuilder(max_workers=1, artifact_dir=str(tmp_path), timeout_sec=BUILD_S)
    runner = LocalRunner(timeout_sec=60.0, evaluator_config=QUICK)
    try:
        (built,) = builder.build([BuilderInput(_candidates(1)[0], Target("cuda"))])
        check = ReferenceCheck(reference, seed=5)
        (future,) = runner.run([RunnerInput(str(built.artifact_path), "cuda", infos, check)])
    finally:
        builder.close()
        runner.close()
    message = future.result().error_msg
    assert message is not None and message.startswith("wrong result: buffer A, max abs error")


@pytest.mark.skipif(UNDER_SANITIZER, reason="the deliberate fault would be a sanitizer finding")
def test_faulting_kernel_then_next_one_measures(tmp_path: Path) -> None:
    infos = tuple(ArgInfo.from_entry_func(_matmul()))
    builder = LocalBuilder(max_workers=2, artifact_dir=str(tmp_path))
    runner = LocalRunner(timeout_sec=60.0, evaluator_config=QUICK)
    try:
        modules = [IRModule({"main": scatter_far}), _candidates(1)[0]]
        built = builder.build([BuilderInput(m, Target("cuda")) for m in modules])
        assert [b.error_msg for b in built] == [None, None]
        inputs = [RunnerInput(str(b.artifact_path), "cuda", infos) for b in built]
        faulted, after = (f.result() for f in runner.run(inputs))
    finally:
        builder.close()
        runner.close()
    assert faulted.run_secs is None
    assert faulted.error_msg is not None
    print("the fault was reported as:", faulted.error_msg)
    assert after.error_msg is None, after.error_msg
    assert after.run_secs is not None and len(after.run_secs) == QUICK.repeat
