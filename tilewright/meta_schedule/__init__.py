"""The auto-scheduler (TVM's ``meta_schedule`` names): design spaces of stochastic schedules.

``TuneContext`` ties a module and a target to a space generator; the space generator applies
schedule rules to the module's blocks and returns schedules whose traces hold sampling
decisions; postprocessors finish or reject a sampled schedule; mutators change one decision.

Example::

    from tilewright import meta_schedule as ms
    ctx = ms.TuneContext(mod=mod, target="llvm", space_generator="post-order-apply")
    spaces = ctx.generate_design_space()
    candidates, report = ms.sample_candidates(ctx, 16)
"""

from tilewright.meta_schedule import mutator, postproc, schedule_rule, space_generator, testing
from tilewright.meta_schedule.candidates import SampleReport, apply_postprocs, sample_candidates
from tilewright.meta_schedule.tune_context import TuneContext

__all__ = [
    "SampleReport",
    "TuneContext",
    "apply_postprocs",
    "mutator",
    "postproc",
    "sample_candidates",
    "schedule_rule",
    "space_generator",
    "testing",
]
