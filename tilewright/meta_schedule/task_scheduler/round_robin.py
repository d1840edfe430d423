"""``RoundRobin``: tasks take turns, one batch each."""

from __future__ import annotations

from tilewright.meta_schedule.task_scheduler.task_scheduler import TaskScheduler


class RoundRobin(TaskScheduler):
    """Each live task in turn.

    Example::

        ms.tune_tasks(tasks=..., task_scheduler=ms.task_scheduler.RoundRobin(), ...)
    """

    def __init__(self) -> None:
        super().__init__()
        self._last = -1

    def next_task_id(self) -> int:
        live = self._live()
        if not live:
            return -1
        later = [k for k in live if k > self._last]
        self._last = later[0] if later else live[0]
        return self._last
