"""What the user sees while tuning: a live progress bar, the TVM-style task table in
``work_dir/logs/tune.log`` and the tuning curve (``work_dir/tuning_curve.csv``, and
``tuning_curve.png`` when matplotlib is installed).

The progress bar is ``tqdm``'s when it is installed, else one status line redrawn in place
(trials done of the total, best GFLOP/s, elapsed and remaining time).
"""

from __future__ import annotations

import csv
import math
import os
import sys
import time
from dataclasses import dataclass, field
from typing import IO, Any


@dataclass
class TaskStat:
    """Running figures of one task for the table."""

    name: str
    flops: int
    weight: float = 1.0
    trials: int = 0
    failures: int = 0
    best_secs: float = math.inf
    done: bool = False

    @property
    def best_gflops(self) -> float:
        return self.flops / self.best_secs / 1e9 if math.isfinite(self.best_secs) else 0.0


@dataclass
class TuneLog:
    """The log of one tuning session (see the module docstring)."""

    work_dir: str | None
    total_trials: int
    tasks: list[TaskStat]
    progress: bool = True
    stream: IO[str] = field(default_factory=lambda: sys.stderr)

    def __post_init__(self) -> None:
        self.start = time.perf_counter()
        self.trials = 0
        self.curve: list[tuple[int, float, str, float, float]] = []
        self._bar: Any = None
        self._log: IO[str] | None = None
        if self.work_dir:
            os.makedirs(os.path.join(self.work_dir, "logs"), exist_ok=True)
            self._log = open(os.path.join(self.work_dir, "logs", "tune.log"), "a")  # noqa: SIM115
        if self.progress:
            try:
                from tqdm import tqdm

                self._bar = tqdm(total=self.total_trials, unit="trial", file=self.stream)
            except ImportError:
                self._bar = None
        self.info(f"tuning {len(self.tasks)} task(s), {self.total_trials} trials at most")

    # ---- events --------------------------------------------------------------------------
    def info(self, message: str) -> None:
        if self._log is not None:
            stamp = time.strftime("%Y-%m-%d %H:%M:%S")
            self._log.write(f"{stamp} {message}\n")
            self._log.flush()

    def batch(self, task_id: int, times: list[float | None], errors: list[str]) -> None:
        """A measured batch of ``task_id``: per candidate its seconds or None (failed)."""
        task = self.tasks[task_id]
        for secs in times:
            self.trials += 1
            task.trials += 1
            if secs is None:
                task.failures += 1
            else:
                task.best_secs = min(task.best_secs, secs)
            gflops = task.flops / secs / 1e9 if secs else 0.0
            elapsed = time.perf_counter() - self.start
            self.curve.append((self.trials, elapsed, task.name, gflops, task.best_gflops))
        for error in errors[:3]:
            self.info(f"task {task.name}: candidate failed: {error.splitlines()[0][:200]}")
        self.info(
            f"task {task.name}: {len(times)} measured, {task.trials} trials, best "
            f"{task.best_gflops:.2f} GFLOP/s\n{self.table()}"
        )
        self._draw(len(times))

    def _draw(self, advance: int) -> None:
        if not self.progress:
            return
        best = max((t.best_gflops for t in self.tasks), default=0.0)
        if self._bar is not None:
            self._bar.update(advance)
            self._bar.set_postfix_str(f"best {best:.1f} GFLOP/s")
            return
        elapsed = time.perf_counter() - self.start
        left = elapsed / self.trials * (self.total_trials - self.trials) if self.trials else 0.0
        self.stream.write(
            f"\r[{self.trials}/{self.total_trials} trials] best {best:.1f} GFLOP/s, "
            f"{elapsed:.0f} s elapsed, ~{left:.0f} s left   "
        )
        self.stream.flush()

    # ---- reports -------------------------------------------------------------------------
    def table(self) -> str:
        """The task table: FLOP, weight, best speed and latency, trials, done."""
        rows = [
            "|  ID |                 Name |         FLOP | Weight | GFLOP/s | Latency (us) "
            "| Trials | Failed | Done |",
            "|-----|----------------------|--------------|--------|---------|--------------"
            "|--------|--------|------|",
        ]
        for k, t in enumerate(self.tasks):
            latency = (
                f"{t.best_secs * 1e6:12.1f}" if math.isfinite(t.best_secs) else " " * 9 + "N/A"
            )
            rows.append(
                f"| {k:3d} | {t.name[:20]:>20} | {t.flops:12d} | {t.weight:6.1f} | "
                f"{t.best_gflops:7.2f} | {latency} | {t.trials:6d} | {t.failures:6d} | "
                f"{'Y' if t.done else ' ':>4} |"
            )
        return "\n".join(rows)

    def close(self) -> None:
        """Finish the bar, write the curve files and the final table."""
        if self._bar is not None:
            self._bar.close()
        elif self.progress:
            self.stream.write("\n")
        elapsed = time.perf_counter() - self.start
        minutes = elapsed / 60
        rate = self.trials / minutes if minutes > 0 else 0.0
        summary = f"{self.trials} trials in {elapsed:.1f} s ({rate:.1f} trials/minute)"
        self.info(f"done: {summary}\n{self.table()}")
        if self.work_dir:
            self._write_curve()
        if self._log is not None:
            self._log.close()
        if self.progress:
            self.stream.write(self.table() + "\n" + summary + "\n")

    def _write_curve(self) -> None:
        assert self.work_dir is not None
        path = os.path.join(self.work_dir, "tuning_curve.csv")
        with open(path, "w", newline="") as f:
            writer = csv.writer(f)
            writer.writerow(["trial", "seconds", "task", "gflops", "best_gflops"])
            for row in self.curve:
                writer.writerow([row[0], f"{row[1]:.3f}", row[2], f"{row[3]:.3f}", f"{row[4]:.3f}"])
        try:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            return
        fig, (by_trial, by_time) = plt.subplots(1, 2, figsize=(10, 4))
        for task in self.tasks:
            rows = [r for r in self.curve if r[2] == task.name]
            by_trial.plot([r[0] for r in rows], [r[4] for r in rows], label=task.name)
            by_time.plot([r[1] for r in rows], [r[4] for r in rows], label=task.name)
        by_trial.set_xlabel("trials")
        by_time.set_xlabel("seconds")
        for ax in (by_trial, by_time):
            ax.set_ylabel("best GFLOP/s")
            ax.grid(True, alpha=0.3)
        by_trial.legend()
        fig.tight_layout()
        fig.savefig(os.path.join(self.work_dir, "tuning_curve.png"), dpi=100)
        plt.close(fig)
