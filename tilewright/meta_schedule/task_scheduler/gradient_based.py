"""``GradientBased``: spend the next batch on the task whose weighted latency is expected to
drop the most.

Every live task first gets one batch. Then each task's gain is estimated from its best
latency history ``h`` (after each round) with a backward term, the recent improvement per
round ``(h[-1-w] - h[-1]) / w`` over a window of ``w`` rounds, and a forward term, the
optimistic ``h[-1] / rounds`` (a task that was measured little may still fall a lot); the
gain is ``weight * (alpha * backward + (1 - alpha) * forward)`` and the largest wins (TVM's
scheduler estimates the same two slopes).
"""

from __future__ import annotations

import math

from tilewright.meta_schedule.task_scheduler.task_scheduler import TaskScheduler


class GradientBased(TaskScheduler):
    """Pick the task with the largest expected gain (see the module docstring).

    Example::

        ms.tune_tasks(tasks=..., task_scheduler=ms.task_scheduler.GradientBased(alpha=0.2))
    """

    def __init__(self, alpha: float = 0.2, window_size: int = 3) -> None:
        super().__init__()
        if not 0.0 <= alpha <= 1.0:
            raise ValueError(f"GradientBased: alpha must lie in [0, 1], not {alpha}")
        if window_size < 1:
            raise ValueError(f"GradientBased: window_size must be positive, not {window_size}")
        self.alpha = alpha
        self.window_size = window_size

    def next_task_id(self) -> int:
        live = self._live()
        if not live:
            return -1
        for k in live:
            if not self.tasks[k].history:
                return k
        best_k, best_gain = live[0], -math.inf
        for k in live:
            task = self.tasks[k]
            h = task.history
            if not math.isfinite(h[-1]):
                return k  # nothing valid yet: keep looking
            w = min(self.window_size, len(h) - 1)
            backward = (h[-1 - w] - h[-1]) / w if w > 0 and math.isfinite(h[-1 - w]) else 0.0
            forward = h[-1] / len(h)
            gain = task.weight * (self.alpha * backward + (1 - self.alpha) * forward)
            if gain > best_gain:
                best_k, best_gain = k, gain
        return best_k
