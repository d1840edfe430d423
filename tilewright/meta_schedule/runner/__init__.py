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

# TVM's subclassable spelling; the base class here is a Python class already.
PyRunner = Runner

__all__ = [
    "PyRunner",
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
