"""Task schedulers: which task the next batch of trials goes to."""

from tilewright.meta_schedule.task_scheduler.gradient_based import GradientBased
from tilewright.meta_schedule.task_scheduler.round_robin import RoundRobin
from tilewright.meta_schedule.task_scheduler.task_scheduler import TaskRecord, TaskScheduler

__all__ = ["GradientBased", "RoundRobin", "TaskRecord", "TaskScheduler"]
