"""Task schedulers: which task the next batch of trials goes to."""

from tilewright.meta_schedule.task_scheduler.gradient_based import GradientBased
from tilewright.meta_schedule.task_scheduler.round_robin import RoundRobin
from tilewright.meta_schedule.task_scheduler.task_scheduler import TaskRecord, TaskScheduler

# TVM's subclassable spelling; the base class here is a Python class already.
PyTaskScheduler = TaskScheduler

__all__ = ["PyTaskScheduler", "GradientBased", "RoundRobin", "TaskRecord", "TaskScheduler"]
