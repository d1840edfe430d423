"""Schedule + block → the schedule with the block computed at a sampled loop of its consumer
(or inlined, or left at the root): TVM's ``RandomComputeLocation``."""

from __future__ import annotations

from tilewright.ir import Block, ForKind
from tilewright.meta_schedule.analysis import TILING_STRUCTURE, annotation, block_of
from tilewright.meta_schedule.schedule_rule.add_rfactor import RANDOM_COMPUTE_PRODUCER
from tilewright.meta_schedule.schedule_rule.rule import ScheduleRule
from tilewright.schedule import BlockRV, Schedule, ScheduleError
from tilewright.schedule.dataflow import consumers_of, scope_blocks, scope_path
from tilewright.schedule.primitives.get import get_child_blocks


class RandomComputeLocation(ScheduleRule):
    """Compute a block at a randomly chosen loop of its first consumer.

    Applies to a block directly under the root block, under at least one loop whose
    outermost holds no other block, neither tiled (``meta_schedule.tiling_structure``) nor
    under a parallel, vectorised or thread-bound loop, with at least one consumer. The
    location comes from ``sample_compute_location`` and is taken with ``compute_at``
    (``preserve_unit_loops=True``). A block annotated ``meta_schedule.random_compute_producer``
    (by ``AddRFactor``) has its single producer placed the same way afterwards.

    Example::

        space = PostOrderApply(sch_rules=[RandomComputeLocation()], postprocs=[],
                               mutator_probs={})
        # b = sch.get_block("B"); l = sch.sample_compute_location(b); sch.compute_at(b, l, True)
    """

    def apply(self, sch: Schedule, block: BlockRV) -> list[Schedule]:
        if not _check_conditions(sch, block):
            return [sch]
        producer = None
        if annotation(block_of(sch, block), RANDOM_COMPUTE_PRODUCER) in (1, True):
            # Collected first: an inlined block has no producers to ask for afterwards.
            producers = sch.get_producers(block)
            sch.unannotate(block, RANDOM_COMPUTE_PRODUCER)
            if len(producers) == 1:
                producer = producers[0]
        result = _randomly_compute_at(sch, block)
        if producer is not None:
            result = _randomly_compute_at(result, producer)
        return [result]


def _check_conditions(sch: Schedule, block: BlockRV) -> bool:
    site = sch.state.block_ref_site(block, "RandomComputeLocation")
    scope = site.scope_index()
    if scope < 0 or any(isinstance(s, Block) for s in site.path[:scope]):
        return False  # the root block, or a block not directly under the root
    loops = site.enclosing_loops()
    if not loops or any(f.kind is not ForKind.SERIAL for f in loops):
        return False
    outermost = site.at(site.path[: site.path.index(loops[0]) + 1])
    if len(get_child_blocks(outermost)) > 1:
        return False
    if annotation(site.block, TILING_STRUCTURE) is not None:
        return False
    return bool(consumers_of(scope_blocks(scope_path(site)), site.block))


def _randomly_compute_at(sch: Schedule, block: BlockRV) -> Schedule:
    """Sample a location and compute the block there, on a copy: where a primitive refuses,
    the schedule as it was."""
    trial = sch.copy()
    try:
        location = trial.sample_compute_location(block)
        trial.compute_at(block, location, preserve_unit_loops=True)
    except ScheduleError:
        return sch
    return trial
