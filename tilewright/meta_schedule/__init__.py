"""The auto-scheduler and tuner (TVM's ``meta_schedule`` names).

``TuneContext`` ties a module and a target to a space generator; the space generator applies
schedule rules to the module's blocks and returns schedules whose traces hold sampling
decisions; postprocessors finish or reject a sampled schedule; mutators change one decision.
``tune_tir`` searches the space: a search strategy proposes candidates, a builder compiles
them, a runner measures them (checked against the unscheduled module), a database keeps the
records and a cost model learns which candidates to measure next.

Example::

    from tilewright import meta_schedule as ms
    database = ms.tune_tir(mod, target="llvm --num-cores=2", work_dir="./tune",
                           max_trials_global=200, num_trials_per_iter=32)
    sch = ms.tir_integration.compile_tir(database, mod, "llvm --num-cores=2")
"""

from tilewright.meta_schedule import (
    builder,
    cost_model,
    database,
    feature_extractor,
    measure_callback,
    mutator,
    postproc,
    runner,
    schedule_rule,
    search_strategy,
    space_generator,
    task_scheduler,
    testing,
    tir_integration,
)
from tilewright.meta_schedule.arg_info import ArgInfo, TensorInfo
from tilewright.meta_schedule.builder import Builder
from tilewright.meta_schedule.candidates import SampleReport, apply_postprocs, sample_candidates
from tilewright.meta_schedule.cost_model import CostModel
from tilewright.meta_schedule.database import Database
from tilewright.meta_schedule.feature_extractor import FeatureExtractor
from tilewright.meta_schedule.measure_callback import MeasureCallback
from tilewright.meta_schedule.mutator import Mutator
from tilewright.meta_schedule.postproc import Postproc
from tilewright.meta_schedule.runner import Runner
from tilewright.meta_schedule.schedule_rule import ScheduleRule
from tilewright.meta_schedule.search_strategy import MeasureCandidate, SearchStrategy
from tilewright.meta_schedule.space_generator import SpaceGenerator
from tilewright.meta_schedule.task_scheduler import TaskScheduler
from tilewright.meta_schedule.tune import TuneConfig, best_schedule, tune_tasks, tune_tir
from tilewright.meta_schedule.tune_context import TuneContext
from tilewright.meta_schedule.tune_params import ParamTuneResult, tune_params

__all__ = [
    "ArgInfo",
    "Builder",
    "CostModel",
    "Database",
    "FeatureExtractor",
    "MeasureCallback",
    "MeasureCandidate",
    "Mutator",
    "Postproc",
    "Runner",
    "ScheduleRule",
    "SearchStrategy",
    "SpaceGenerator",
    "TaskScheduler",
    "SampleReport",
    "TensorInfo",
    "TuneConfig",
    "TuneContext",
    "ParamTuneResult",
    "tune_params",
    "apply_postprocs",
    "best_schedule",
    "builder",
    "cost_model",
    "database",
    "feature_extractor",
    "measure_callback",
    "mutator",
    "postproc",
    "runner",
    "sample_candidates",
    "schedule_rule",
    "search_strategy",
    "space_generator",
    "task_scheduler",
    "testing",
    "tir_integration",
    "tune_tasks",
    "tune_tir",
]
