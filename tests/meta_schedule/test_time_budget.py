"""The tuner's wall-time budget (``max_seconds``): ``TimeBudget``'s estimates on a clock the
test moves, then whole sessions whose runner is slow on purpose: a round takes only the
candidates that fit, the first round's runs stop at the deadline, and the log says how the
session ended against the budget."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tilewright import config
from tilewright import meta_schedule as ms
from tilewright.ir import IRModule
from tilewright.meta_schedule.builder import LocalBuilder
from tilewright.meta_schedule.runner import EvaluatorConfig, LocalRunner
from tilewright.meta_schedule.task_scheduler import RoundRobin
from tilewright.meta_schedule.task_scheduler.time_budget import CLOSING_SECS, TimeBudget
from tilewright.meta_schedule.testing.workloads import WORKLOADS


class Clock:
    """A clock the test moves: ``TimeBudget(..., clock=Clock())``."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


def test_without_a_budget_every_round_is_whole(clock: Clock) -> None:
    budget = TimeBudget(None, clock=clock)
    budget.record(8, fixed_secs=5.0, measure_secs=80.0)
    clock.now += 1e6
    assert budget.fits(64) == 64 and not budget.expired()
    assert budget.overrun() == 0.0 and budget.summary() is None


def test_rounds_shrink_to_what_the_slowest_recent_round_says_fits(clock: Clock) -> None:
    budget = TimeBudget(100.0, clock=clock)
    assert budget.fits(64) == 64  # nothing measured yet: the first round is whole
    clock.now += 30.0
    budget.record(10, fixed_secs=4.0, measure_secs=20.0)  # 2 s a candidate
    left = 100.0 - CLOSING_SECS - 30.0
    assert budget.fits(64) == int((left - 4.0) // 2.0)
    budget.record(10, fixed_secs=2.0, measure_secs=10.0)  # a faster round: the slow one counts
    assert budget.fits(64) == int((left - 4.0) // 2.0)
    assert budget.fits(8) == 8
    clock.now += left - 5.0  # 5 s left: the fixed part and no candidate
    assert budget.fits(64) == 0
    assert "5.0 s of the 100 s budget left" in (budget.stopped or "")
    assert "4.0 s plus 2.0 s a candidate" in (budget.stopped or "")


def test_the_summary_says_how_the_session_ended(clock: Clock) -> None:
    budget = TimeBudget(300.0, clock=clock)
    clock.now += 296.1
    assert budget.summary() == "time budget 300 s: ended after 296.1 s (3.9 s to spare)"
    clock.now += 16.3
    assert budget.overrun() == pytest.approx(12.4)
    assert budget.summary() == (
        "time budget 300 s: ended after 312.4 s, 12.4 s over (the last round ran past the deadline)"
    )
    assert budget.fits(1) == 0 and budget.stopped == "the 300 s budget is spent"


@pytest.mark.parametrize("seconds", [0, -5.0])
def test_a_budget_must_be_positive(seconds: float) -> None:
    with pytest.raises(ValueError, match="max_seconds must be positive"):
        TimeBudget(seconds)


class SlowRunner(LocalRunner):
    """A local runner whose every candidate takes ``delay`` seconds more on ``clock``."""

    def __init__(self, clock: Clock, delay: float) -> None:
        super().__init__(evaluator_config=EvaluatorConfig(number=1, repeat=1, min_repeat_ms=1))
        self.clock, self.delay = clock, delay
        self.calls: list[int] = []

    def run(self, runner_inputs):
        self.calls.append(len(runner_inputs))
        self.clock.now += self.delay * len(runner_inputs)
        return super().run(runner_inputs)


def _session(work_dir: Path, budget: TimeBudget, per_iter: int, runner: SlowRunner):
    """A session on ``budget``'s clock, on which only the runs take time (each candidate
    once: the leaders are not timed again, which would depend on the measured times)."""
    scheduler = RoundRobin()
    scheduler.confirm_top_k = 0
    db = ms.tune_tir(
        IRModule({"main": WORKLOADS["matmul"].func(m=16, n=16, k=16)}),
        "llvm --num-cores=2",
        work_dir=str(work_dir),
        max_trials_global=1000,
        num_trials_per_iter=per_iter,
        strategy="replay-trace",
        cost_model="random",
        builder=LocalBuilder(max_workers=2, timeout_sec=60.0),
        runner=runner,
        task_scheduler=scheduler,
        progress=False,
        max_seconds=budget,
    )
    return db, (work_dir / "logs" / "tune.log").read_text()


needs_cc = pytest.mark.skipif(
    shutil.which(config.get().cc) is None, reason="no C compiler for the CPU target"
)


@needs_cc
def test_the_first_rounds_runs_stop_at_the_deadline(tmp_path: Path, clock: Clock) -> None:
    # 32 candidates at 1 s each would take 32 s; 8 s of the 10 s budget are left for them.
    budget, runner = TimeBudget(10.0, clock=clock), SlowRunner(clock, 1.0)
    db, log = _session(tmp_path, budget, 32, runner)
    measured = {r.candidate_shash for r in db.get_all_tuning_records()}
    assert runner.calls == [4, 4]  # a few at a time, the deadline checked before each batch
    assert len(measured) == 8
    assert "the time budget's deadline stopped the runs after 8 of 32 candidates" in log
    assert "time budget 10 s: ended after 8.0 s (2.0 s to spare)" in log


@needs_cc
def test_later_rounds_take_only_what_fits(tmp_path: Path, clock: Clock) -> None:
    # Rounds of 6 at 0.25 s a candidate: 1.5 s each; 10 of the 12 s are for rounds.
    budget, runner = TimeBudget(12.0, clock=clock), SlowRunner(clock, 0.25)
    db, log = _session(tmp_path, budget, 6, runner)
    measured = {r.candidate_shash for r in db.get_all_tuning_records()}
    # Six whole rounds (9 s), then the 4 candidates that fit the last second.
    assert len(measured) == 6 * 6 + 4
    assert "task main: 4 of 6 candidates fit the time budget" in log
    assert "the 12 s budget is spent: tuning stops" in log
    assert "time budget 12 s: ended after 10.0 s (2.0 s to spare)" in log
