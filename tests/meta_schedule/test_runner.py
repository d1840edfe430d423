"""LocalRunner, random arguments and reference outputs on the CPU: correct candidates are timed,
a wrong one is caught by the reference check, a crashing or hanging kernel costs only the
worker process and the next candidate measures fine."""

from __future__ import annotations

import dataclasses
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import tilewright as tw
from tilewright import config
from tilewright import meta_schedule as ms
from tilewright.ir import IRModule
from tilewright.meta_schedule.arg_info import ArgInfo, TensorInfo
from tilewright.meta_schedule.runner import (
    EvaluatorConfig,
    LocalRunner,
    ReferenceCheck,
    RunnerInput,
    RunnerResult,
    random_arguments,
    reference_path,
)
from tilewright.meta_schedule.runner.arguments import (
    DEFAULT_CPU_CACHE_BYTES,
    MAX_ARGUMENT_SETS,
    last_level_cache_bytes,
    rotation_sets,
)
from tilewright.meta_schedule.runner.reference import parallelize_outer_loops
from tilewright.meta_schedule.testing.workloads import WORKLOADS
from tilewright.script import tir as T
from tilewright.target import Target

pytestmark = pytest.mark.skipif(
    shutil.which(config.get().cc) is None, reason="no C compiler for the CPU target"
)

N = 16
TARGET = Target("llvm --num-cores=2")
QUICK = EvaluatorConfig(number=2, repeat=3, min_repeat_ms=5, slow_candidate_secs=0)


def matmul() -> IRModule:
    return IRModule({"main": WORKLOADS["matmul"].func(m=N, n=N, k=N)})


@T.prim_func
def add(A: T.Buffer((16, 16), "float32"), B: T.Buffer((16, 16), "float32"),
        C: T.Buffer((16, 16), "float32")):  # fmt: skip
    # The matmul's signature, another computation: a wrong candidate.
    for i, j in T.grid(16, 16):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = A[vi, vj] + B[vi, vj]


@T.prim_func
def scatter_far(A: T.Buffer((16, 16), "float32"), B: T.Buffer((16, 16), "float32"),
                C: T.Buffer((16, 16), "float32")):  # fmt: skip
    # Writes terabytes past C (the inputs are >= 0.5): the process dies of SIGSEGV.
    for i in range(16):
        with T.block("C"):
            vi = T.axis.spatial(16, i)
            C[T.Cast("int64", A[vi, 0] * T.float32(4)) * T.int64(1 << 40), 0] = T.float32(1)


@T.prim_func
def spin(A: T.Buffer((16, 16), "float32"), B: T.Buffer((16, 16), "float32"),
         C: T.Buffer((16, 16), "float32")):  # fmt: skip
    # 10^15 dependent steps: runs until the runner's timeout kills it.
    for i, j, k in T.grid(100000, 100000, 100000):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSS", [i, j, k])
            C[(vi + vj + vk) % 16, 0] = C[(vj + vk) % 16, 0] * T.float32(0.5) + A[vk % 16, 0]


def _save(mod: IRModule | tw.ir.PrimFunc, where: Path, name: str) -> str:
    return str(tw.build_artifact(mod, TARGET).save(where / f"{name}.so"))


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Artifacts by name: three sampled matmul candidates, the wrong one, the crashing one,
    the hanging one, and the matmul's reference file."""
    where = tmp_path_factory.mktemp("runner")
    mod = matmul()
    ctx = ms.TuneContext(mod=mod, target=TARGET, task_name="matmul", rand_state=5)
    candidates, _ = ms.sample_candidates(ctx, 3)
    paths = {
        f"candidate{i}": _save(c.mod, where, f"candidate{i}") for i, c in enumerate(candidates)
    }
    paths["add"] = _save(add, where, "add")
    paths["scatter_far"] = _save(scatter_far, where, "scatter_far")
    paths["spin"] = _save(spin, where, "spin")
    infos = ArgInfo.from_entry_func(mod)
    paths["reference"] = reference_path(mod, infos, seed=7, cache_dir=str(where / "refs"))
    return paths


@pytest.fixture
def runner() -> Iterator[LocalRunner]:
    r = LocalRunner(timeout_sec=20.0, evaluator_config=QUICK)
    yield r
    r.close()


def _input(path: str, reference: str | None = None) -> RunnerInput:
    infos = tuple(ArgInfo.from_entry_func(matmul()))
    check = ReferenceCheck(reference, seed=7) if reference is not None else None
    return RunnerInput(path, "cpu", infos, check)


def _assert_measured(result: RunnerResult, repeat: int = QUICK.repeat) -> None:
    assert result.error_msg is None, result.error_msg
    assert result.run_secs is not None and len(result.run_secs) == repeat
    assert all(0 < s < 1 for s in result.run_secs)


def test_measures_correct_candidates(built: dict[str, str], runner: LocalRunner) -> None:
    names = ["candidate0", "candidate1", "candidate2"]
    futures = runner.run([_input(built[n], built["reference"]) for n in names])
    assert len(futures) == 3
    for future in futures:
        assert future.done()
        _assert_measured(future.result())


def test_rotating_argument_sets(built: dict[str, str]) -> None:
    config_ = EvaluatorConfig(number=2, repeat=2, min_repeat_ms=5, enable_cpu_cache_flush=True)
    runner = LocalRunner(timeout_sec=20.0, evaluator_config=config_)
    try:
        (future,) = runner.run([_input(built["candidate0"], built["reference"])])
    finally:
        runner.close()
    _assert_measured(future.result(), repeat=2)


def test_a_slow_check_of_a_fast_kernel_times_it_fully(
    built: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The check's own time (comparing large outputs on the host) does not make a fast
    # kernel "slow": it is timed with every repeat, after its warm-up.
    from tilewright.meta_schedule.runner import worker

    check = worker.check_result

    def slow_check(*args: object) -> str | None:
        time.sleep(0.05)
        return check(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(worker, "check_result", slow_check)
    config_ = EvaluatorConfig(number=2, repeat=3, min_repeat_ms=5, slow_candidate_secs=0.02)
    result = worker.measure(_input(built["candidate0"], built["reference"]), config_)
    _assert_measured(result, repeat=3)
    # A kernel slower than the limit itself is timed by one call.
    slow = dataclasses.replace(config_, slow_candidate_secs=1e-9)
    result = worker.measure(_input(built["candidate0"], built["reference"]), slow)
    _assert_measured(result, repeat=1)


def test_wrong_candidate_is_caught(built: dict[str, str], runner: LocalRunner) -> None:
    wrong, right = runner.run(
        [_input(built["add"], built["reference"]), _input(built["candidate0"], built["reference"])]
    )
    message = wrong.result().error_msg
    assert wrong.result().run_secs is None
    assert message is not None and message.startswith("wrong result: buffer C, max abs error")
    _assert_measured(right.result())


def test_crashing_kernel_then_next_one_measures(built: dict[str, str], runner: LocalRunner) -> None:
    crashed, after = runner.run(
        [_input(built["scatter_far"]), _input(built["candidate1"], built["reference"])]
    )
    assert crashed.result() == RunnerResult(error_msg="runner process died (signal 11 SIGSEGV)")
    _assert_measured(after.result())


def test_hanging_kernel_times_out_then_next_one_measures(built: dict[str, str]) -> None:
    runner = LocalRunner(timeout_sec=3.0, evaluator_config=QUICK)
    try:
        hung, after = runner.run([_input(built["spin"]), _input(built["candidate2"])])
    finally:
        runner.close()
    assert hung.result() == RunnerResult(error_msg="timeout after 3 s")
    _assert_measured(after.result())


def test_gives_up_after_max_restarts(built: dict[str, str]) -> None:
    runner = LocalRunner(timeout_sec=20.0, evaluator_config=QUICK, max_restarts=0)
    try:
        results = [f.result() for f in runner.run([_input(built["scatter_far"])] * 2)]
        (later,) = runner.run([_input(built["candidate0"])])  # a new batch starts afresh
    finally:
        runner.close()
    assert results[0].error_msg == "runner process died (signal 11 SIGSEGV)"
    assert results[1].error_msg is not None
    assert results[1].error_msg.startswith("not measured: the runner process was replaced 1 ")
    _assert_measured(later.result())


def test_missing_artifact_is_an_error(runner: LocalRunner, tmp_path: Path) -> None:
    (future,) = runner.run([_input(str(tmp_path / "nothing.so"))])
    assert future.result().error_msg == (
        f"FileNotFoundError: load_module: no file at {tmp_path / 'nothing.so'}"
    )


def test_reference_holds_the_matmul_and_is_reused(built: dict[str, str], tmp_path: Path) -> None:
    mod = matmul()
    infos = ArgInfo.from_entry_func(mod)
    path = Path(reference_path(mod, infos, seed=7, cache_dir=str(tmp_path)))
    a, b, _ = random_arguments(infos, 7)
    with np.load(path) as ref:
        assert sorted(ref.files) == ["arg0", "arg1", "arg2"]
        np.testing.assert_array_equal(ref["arg0"], a)
        np.testing.assert_array_equal(ref["arg1"], b)
        np.testing.assert_allclose(ref["arg2"], a @ b, rtol=1e-5)
    stamp = path.stat().st_mtime_ns
    assert reference_path(mod, infos, seed=7, cache_dir=str(tmp_path)) == str(path)
    assert path.stat().st_mtime_ns == stamp  # reused, not recomputed
    assert Path(reference_path(mod, infos, seed=8, cache_dir=str(tmp_path))) != path


def test_reference_failure_raises(tmp_path: Path) -> None:
    infos = [TensorInfo("float32", (16, 16))] * 3
    # The crash takes the child process down, not this one.
    with pytest.raises(RuntimeError) as info:
        reference_path(IRModule({"main": scatter_far}), infos, seed=0, cache_dir=str(tmp_path))
    assert str(info.value) == (
        "computing the reference outputs failed: reference process died (signal 11 SIGSEGV)"
    )
    assert list(tmp_path.iterdir()) == []


def test_parallelize_outer_loops() -> None:
    parallel = parallelize_outer_loops(matmul())
    sch = tw.tir.Schedule(parallel)
    i, j, _ = sch.get_loops(sch.get_block("C"))
    assert sch.get(i).kind == tw.ir.ForKind.PARALLEL
    assert sch.get(j).kind == tw.ir.ForKind.SERIAL
    # The parallel module computes what the serial one does.
    infos = ArgInfo.from_entry_func(parallel)
    a, b, c = random_arguments(infos, 0)
    tw.build(parallel, "c")["main"](a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5)


def test_random_arguments() -> None:
    infos = [
        TensorInfo("float32", (3, 5)),
        TensorInfo("float16", (7,)),
        TensorInfo("bfloat16", (4, 4)),
        TensorInfo("int32", (9,)),
        TensorInfo("uint8", (9,)),
        TensorInfo("bool", (2,)),
    ]
    arrays = random_arguments(infos, seed=1)
    dtypes = [np.dtype("float32"), np.dtype("float16"), np.dtype(ml_dtypes.bfloat16),
              np.dtype("int32"), np.dtype("uint8"), np.dtype(np.bool_)]  # fmt: skip
    assert [a.dtype for a in arrays] == dtypes
    assert [a.shape for a in arrays] == [info.shape for info in infos]
    for a in arrays[:3]:
        values = a.astype(np.float64)
        assert (values >= 0.5).all() and (values <= 1.5).all()
    for a in arrays[3:5]:
        assert (a >= 1).all() and (a <= 3).all()
    assert arrays[5].all()
    again = random_arguments(infos, seed=1)
    assert all(np.array_equal(x, y) for x, y in zip(arrays, again))
    other = random_arguments(infos, seed=2)
    assert not np.array_equal(arrays[0], other[0])


def test_rotation_and_cache_size(tmp_path: Path) -> None:
    for index, (level, size) in enumerate([(1, "32K"), (2, "1024K"), (3, "36M")]):
        entry = tmp_path / f"index{index}"
        entry.mkdir()
        (entry / "level").write_text(f"{level}\n")
        (entry / "size").write_text(f"{size}\n")
    assert last_level_cache_bytes(str(tmp_path)) == 36 * 1024 * 1024
    assert last_level_cache_bytes(str(tmp_path / "missing")) == DEFAULT_CPU_CACHE_BYTES
    # 12 MB a set (1024² float32 matmul) against 2 x 64 MB on a GPU: 11 sets.
    big = [TensorInfo("float32", (1024, 1024))] * 3
    assert rotation_sets(big, "cuda") == 11
    assert rotation_sets([TensorInfo("float32", (4,))], "cuda") == MAX_ARGUMENT_SETS
    huge = [TensorInfo("float32", (8192, 8192))] * 3
    assert rotation_sets(huge, "cuda") == 1


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float64", "int32"])
def test_compare_checks_every_element_of_large_arrays(dtype: str) -> None:
    # More elements than one comparison block: the wrong element sits in the second block.
    from tilewright.meta_schedule.runner.worker import compare

    check = ReferenceCheck("unused.npz", rtol=1e-3, atol=1e-4)
    rng = np.random.default_rng(0)
    np_dtype = ml_dtypes.bfloat16 if dtype == "bfloat16" else np.dtype(dtype)
    want = rng.integers(1, 8, size=(1500, 1024)).astype(np_dtype)
    assert compare("C", want.copy(), want, check) is None  # bit-identical
    if dtype != "int32":
        close = (want.astype(np.float64) * (1 + 2e-4)).astype(np_dtype)
        assert compare("C", close, want, check) is None  # inside rtol, not identical
        nan = want.copy()
        nan[1400, 3] = np.nan
        assert compare("C", nan, want, check) == "wrong result: buffer C holds NaN (1 elements)"
    wrong = want.copy()
    wrong[1200, 5] = wrong[1200, 5] + 2
    wrong[7, 7] = wrong[7, 7] + 1
    message = compare("C", wrong, want, check)
    assert message is not None and message.startswith("wrong result: buffer C, max abs error 2")
    assert "at (1200, 5)" in message
    assert compare("C", want[:10], want, check) is not None  # shapes differ
