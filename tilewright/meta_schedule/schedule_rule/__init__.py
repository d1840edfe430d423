"""Schedule rules (TVM's ``meta_schedule.schedule_rule``): each turns one block of a schedule
into the schedules of a design space.

Example::

    from tilewright.meta_schedule.schedule_rule import AutoInline, MultiLevelTiling
"""

from tilewright.meta_schedule.schedule_rule.add_rfactor import AddRFactor
from tilewright.meta_schedule.schedule_rule.auto_bind import AutoBind
from tilewright.meta_schedule.schedule_rule.auto_inline import AutoInline, InlineConstantScalars
from tilewright.meta_schedule.schedule_rule.cross_thread_reduction import CrossThreadReduction
from tilewright.meta_schedule.schedule_rule.multi_level_tiling import MultiLevelTiling, ReuseType
from tilewright.meta_schedule.schedule_rule.multi_level_tiling_tensor_core import (
    MultiLevelTilingTensorCore,
)
from tilewright.meta_schedule.schedule_rule.parallel_vectorize_unroll import (
    ParallelizeVectorizeUnroll,
)
from tilewright.meta_schedule.schedule_rule.random_compute_location import RandomComputeLocation
from tilewright.meta_schedule.schedule_rule.rule import ApplyCustomRule, ScheduleRule

# TVM's subclassable spelling; the base class here is a Python class already.
PyScheduleRule = ScheduleRule

__all__ = [
    "PyScheduleRule",
    "AddRFactor",
    "ApplyCustomRule",
    "AutoBind",
    "AutoInline",
    "CrossThreadReduction",
    "InlineConstantScalars",
    "MultiLevelTiling",
    "MultiLevelTilingTensorCore",
    "ParallelizeVectorizeUnroll",
    "RandomComputeLocation",
    "ReuseType",
    "ScheduleRule",
]
