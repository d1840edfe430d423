"""LocalBuilder: sampled candidates build into artifacts that load and compute the matmul; a
build that raises, hangs or kills its worker becomes an error result while the others build."""

from __future__ import annotations

import os
import shutil
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import tilewright as tw
from tilewright import config
from tilewright import meta_schedule as ms
from tilewright.artifact import Artifact
from tilewright.ir import IRModule
from tilewright.meta_schedule.arg_info import ArgInfo
from tilewright.meta_schedule.builder import BuilderInput, BuilderResult, LocalBuilder
from tilewright.meta_schedule.builder.process_pool import WorkerPool, describe_exit
from tilewright.meta_schedule.testing.workloads import WORKLOADS
from tilewright.target import Target

pytestmark = pytest.mark.skipif(
    shutil.which(config.get().cc) is None, reason="no C compiler for the CPU target"
)

TARGET = Target("llvm --num-cores=2")


def matmul(n: int) -> IRModule:
    return IRModule({"main": WORKLOADS["matmul"].func(m=n, n=n, k=n)})


# A build function for the workers: top-level, so it pickles. It misbehaves on some sizes
# of matmul only, so the 16x16 candidates of a batch show that the pool carried on.
def misbehave(mod: IRModule, target: Target) -> Artifact:
    size = ArgInfo.from_entry_func(mod)[0].shape[0]
    if size == 17:
        os.kill(os.getpid(), signal.SIGSEGV)
    elif size == 18:
        os._exit(1)
    elif size == 19:
        raise ValueError("no kernels of size 19 today\nsecond line")
    elif size == 20:
        time.sleep(600)
    return tw.build_artifact(mod, target)


def not_an_artifact(mod: IRModule, target: Target) -> Artifact:
    return "source text"  # type: ignore[return-value]


@pytest.fixture
def builder(tmp_path: Path) -> Iterator[LocalBuilder]:
    b = LocalBuilder(max_workers=2, timeout_sec=20.0, artifact_dir=str(tmp_path / "builds"))
    yield b
    b.close()


def _check_matmul(result: BuilderResult, n: int) -> None:
    assert result.error_msg is None, result.error_msg
    assert result.artifact_path is not None
    rt_mod = tw.runtime.load(Artifact.load(result.artifact_path))
    rng = np.random.default_rng(0)
    a = rng.uniform(size=(n, n)).astype("float32")
    b = rng.uniform(size=(n, n)).astype("float32")
    c = np.zeros((n, n), "float32")
    rt_mod["main"](a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)


def test_builds_sampled_candidates(builder: LocalBuilder, tmp_path: Path) -> None:
    mod = matmul(16)
    ctx = ms.TuneContext(mod=mod, target=TARGET, task_name="matmul", rand_state=3)
    candidates, _ = ms.sample_candidates(ctx, 3)
    results = builder.build([BuilderInput(c.mod, TARGET) for c in candidates])
    assert len(results) == 3
    paths = {r.artifact_path for r in results}
    assert len(paths) == 3
    for result in results:
        assert Path(str(result.artifact_path)).parent == tmp_path / "builds"
        _check_matmul(result, 16)
    # The workers stay up: a second batch builds too.
    (again,) = builder.build([BuilderInput(candidates[0].mod, TARGET)])
    _check_matmul(again, 16)
    assert builder.build([]) == []


def test_failed_builds_become_error_results(tmp_path: Path) -> None:
    tw.build_artifact(matmul(16), TARGET)  # the C compile cache makes the workers' builds quick
    builder = LocalBuilder(
        max_workers=2, timeout_sec=3.0, artifact_dir=str(tmp_path), f_build=misbehave
    )
    try:
        sizes = (17, 16, 18, 19, 16, 20, 16)
        start = time.monotonic()
        results = builder.build([BuilderInput(matmul(n), TARGET) for n in sizes])
        elapsed = time.monotonic() - start
    finally:
        builder.close()
    expected = {
        17: "builder process died (signal 11 SIGSEGV)",
        18: "builder process died (exit code 1)",
        19: "ValueError: no kernels of size 19 today\nsecond line",
        20: "timeout after 3 s",
    }
    for size, result in zip(sizes, results):
        if size == 16:
            _check_matmul(result, 16)
        else:
            assert result == BuilderResult(error_msg=expected[size])
    assert elapsed < 60  # the hanging build was killed, not waited for


def test_build_function_must_return_an_artifact(tmp_path: Path) -> None:
    builder = LocalBuilder(max_workers=1, artifact_dir=str(tmp_path), f_build=not_an_artifact)
    try:
        (result,) = builder.build([BuilderInput(matmul(16), TARGET)])
    finally:
        builder.close()
    assert result == BuilderResult(
        error_msg="TypeError: the build function returned str, not an Artifact"
    )


def test_build_function_that_does_not_pickle(tmp_path: Path) -> None:
    def local_build(mod: IRModule, target: Target) -> Artifact:
        return tw.build_artifact(mod, target)

    builder = LocalBuilder(max_workers=1, artifact_dir=str(tmp_path), f_build=local_build)
    try:
        results = builder.build([BuilderInput(matmul(16), TARGET)] * 2)
    finally:
        builder.close()
    for result in results:
        assert result.artifact_path is None
        assert result.error_msg is not None
        assert result.error_msg.startswith("the call could not be sent: AttributeError: ")
        assert "local_build" in result.error_msg


def test_lowering_error_is_reported(builder: LocalBuilder) -> None:
    # An unscheduled loop nest cannot become a CUDA kernel: lowering refuses it.
    (result,) = builder.build([BuilderInput(matmul(16), Target("cuda"))])
    assert result.artifact_path is None
    assert result.error_msg is not None
    assert result.error_msg.startswith("ThreadBindingError: function main: loop i is not bound")


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="timeout_sec must be positive"):
        LocalBuilder(timeout_sec=0)
    with pytest.raises(ValueError, match="size must be >= 1"):
        WorkerPool(0, what="builder")


def test_describe_exit() -> None:
    assert describe_exit(-11) == "signal 11 SIGSEGV"
    assert describe_exit(3) == "exit code 3"
    assert describe_exit(None) == "still running"
