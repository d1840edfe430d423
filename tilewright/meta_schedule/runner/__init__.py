"""Runners: built candidates in, measured times out (TVM's ``ms.runner``)."""

from tilewright.meta_schedule.runner.arguments import random_arguments
from tilewright.meta_schedule.runner.local_runner import LocalRunner
from tilewright.meta_schedule.runner.reference import reference_path
from tilewright.meta_schedule.runner.runner import (
    EvaluatorConfig,
    ReferenceCheck,
    Runner,
    RunnerFuture,
    RunnerInput,
    RunnerResult,
)

__all__ = [
    "EvaluatorConfig",
    "LocalRunner",
    "ReferenceCheck",
    "Runner",
    "RunnerFuture",
    "RunnerInput",
    "RunnerResult",
    "random_arguments",
    "reference_path",
]
