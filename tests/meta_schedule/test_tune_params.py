"""Tuning a kernel's parameters (``ms.tune_params``) on the CPU: every configuration built
and measured, each output checked against the reference, refusals and failures recorded,
the fastest correct one chosen."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

import tilewright as tw
from tilewright import config
from tilewright import meta_schedule as ms
from tilewright.ir import IRModule
from tilewright.meta_schedule.builder import LocalBuilder
from tilewright.meta_schedule.runner import EvaluatorConfig, LocalRunner
from tilewright.meta_schedule.testing.workloads import WORKLOADS
from tilewright.script import tir as T

pytestmark = pytest.mark.skipif(
    shutil.which(config.get().cc) is None, reason="no C compiler for the CPU target"
)

N = 32
QUICK = EvaluatorConfig(number=2, repeat=2, min_repeat_ms=2)


def matmul() -> IRModule:
    return IRModule({"main": WORKLOADS["matmul"].func(m=N, n=N, k=N)})


@T.prim_func
def off_by_one(A: T.Buffer((N, N), "float32"), B: T.Buffer((N, N), "float32"),
               C: T.Buffer((N, N), "float32")):  # fmt: skip
    for i, j, k in T.grid(N, N, N):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(1)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]


def make(tile: int, unroll: bool = False) -> IRModule:
    """The matmul with its i loop split by ``tile`` (which must divide N); ``tile == 16``
    makes a broken kernel (C one too large) that the check must catch."""
    if N % tile:
        raise ValueError(f"tile {tile} does not divide {N}")
    if tile == 16:
        return IRModule({"main": off_by_one})
    sch = tw.tir.Schedule(matmul())
    i, _, _ = sch.get_loops(sch.get_block("C"))
    _, inner = sch.split(i, [None, tile])
    if unroll:
        sch.unroll(inner)
    return sch.mod


def _tune(tmp_path: Path, space, reference) -> ms.ParamTuneResult:
    return ms.tune_params(
        make,
        space,
        "llvm --num-cores=2",
        reference=reference,
        builder=LocalBuilder(max_workers=2, timeout_sec=60.0),
        runner=LocalRunner(timeout_sec=20.0, evaluator_config=QUICK),
        work_dir=str(tmp_path),
        progress=False,
    )


def test_every_configuration_is_measured_checked_or_refused(tmp_path: Path) -> None:
    result = _tune(
        tmp_path,
        {"tile": [4, 5, 8, 16], "unroll": [False, True]},
        lambda a, b, c: np.matmul(a, b, out=c),
    )
    by = {(r.params["tile"], r.params["unroll"]): r for r in result.results}
    assert len(by) == 8
    assert (
        by[5, False].error == "refused: tile 5 does not divide 32" and by[5, True].run_secs is None
    )
    assert by[16, False].error is not None and "wrong result: buffer" in by[16, False].error
    for key in [(4, False), (4, True), (8, False), (8, True)]:
        assert by[key].error is None and by[key].run_secs and by[key].median_secs > 0
    best = result.best
    assert best is not None and best.params["tile"] in (4, 8)
    assert best.median_secs == min(r.median_secs for r in result.results)
    text = result.table(flops=2 * N**3)
    assert text.splitlines()[0].endswith(", ".join(f"{k}={v}" for k, v in best.params.items()))
    lines = (tmp_path / "params.jsonl").read_text().splitlines()
    assert [json.loads(line)["params"] for line in lines] == [r.params for r in result.results]


def test_a_tir_reference_and_a_list_of_configurations(tmp_path: Path) -> None:
    result = _tune(tmp_path, [{"tile": 2}, {"tile": 16}], matmul())
    ok, wrong = result.results
    assert ok.run_secs and ok.error is None
    assert wrong.error is not None and wrong.error.startswith("wrong result")
    assert result.best is ok


def test_bad_spaces_are_refused() -> None:
    with pytest.raises(TypeError, match="values of parameter 'tile' must be a list"):
        ms.tune_params(make, {"tile": 4}, "c", reference=None)
    with pytest.raises(ValueError, match="holds no configuration"):
        ms.tune_params(make, [], "c", reference=None)


def scale(factor: float) -> IRModule:
    """``B = A * factor`` in bfloat16: a dtype numpy's ``.npz`` format does not know."""

    @T.prim_func
    def main(A: T.Buffer((N, N), "bfloat16"), B: T.Buffer((N, N), "bfloat16")):
        for i, j in T.grid(N, N):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = A[vi, vj] * T.bfloat16(factor)

    return IRModule({"main": main})


def test_bfloat16_arguments_are_checked_against_the_reference(tmp_path: Path) -> None:
    # The reference arrays go through an .npz file and must come back as bfloat16, not as
    # two raw bytes an element: a wrong factor is caught, the right one passes.
    result = ms.tune_params(
        scale,
        {"factor": [2.0, 3.0]},
        "llvm --num-cores=2",
        reference=lambda a, b: np.multiply(a, 2, out=b),
        builder=LocalBuilder(max_workers=2, timeout_sec=60.0),
        runner=LocalRunner(timeout_sec=20.0, evaluator_config=QUICK),
        work_dir=str(tmp_path),
        progress=False,
    )
    right, wrong = result.results
    assert right.error is None and right.run_secs
    assert wrong.error is not None and wrong.error.startswith("wrong result: buffer")
