"""``MutateComputeLocation``: a trace in, the same trace with one ``sample_compute_location``
decision changed out, to another location that is legal where the instruction runs and
whose whole trace still replays on the task's module."""

from __future__ import annotations

import random

from tilewright.ir import IRModule
from tilewright.meta_schedule.mutator.replay import (
    ReplayingMutator,
    design_space,
    generator,
    replays,
)
from tilewright.schedule import BlockRV, Schedule, Trace


class MutateComputeLocation(ReplayingMutator):
    """Change where one block is computed: root (-1), inlined (-2) or at the ``i``-th loop
    above its first consumer (``i >= 0``), the decisions of ``sample_compute_location``.

    For each ``sample_compute_location`` of the trace, the trace is replayed up to it and the
    block's legal locations at that point are listed (the ones the sampler chooses from).
    An instruction with another location is drawn uniformly, then one of its other locations
    uniformly (TVM's draw); a choice whose whole trace refuses to replay (a later primitive
    needed the old location) is dropped and another drawn. Needs the task's module (a
    ``TuneContext``). The result ends before ``enter_postproc``.

    Example::

        >>> mutator = MutateComputeLocation()
        >>> mutator._initialize_with_tune_context(ms.TuneContext(mod, target="llvm"))
        >>> mutator.apply(trace, random.Random(0)).insts[k].decision   # was -1
        1
    """

    def apply(self, trace: Trace, rng: random.Random | None = None) -> Trace | None:
        rng = generator(rng)
        mod = self.module()
        space = design_space(trace)
        choices = {
            k: others
            for k, inst in enumerate(space.insts)
            if inst.kind == "sample_compute_location"
            and (others := [d for d in locations_at(space, k, mod) if d != inst.decision])
        }
        while choices:
            k = rng.choice(sorted(choices))
            decision = rng.choice(choices[k])
            mutated = space.with_decision(k, decision)
            if replays(mutated, mod):
                return mutated
            choices[k].remove(decision)
            if not choices[k]:
                del choices[k]
        return None


def locations_at(trace: Trace, index: int, mod: IRModule) -> list[int]:
    """The decisions ``sample_compute_location`` instruction ``index`` of ``trace`` may take,
    ascending: the legal locations of its block after the instructions before it.

    Example::

        >>> locations_at(sch.trace, 2, mod)   # inline, root, and the loops i, j, k
        [-2, -1, 0, 1, 2]
    """
    inst = trace.insts[index]
    if inst.kind != "sample_compute_location":
        raise ValueError(f"instruction {index} is {inst.kind!r}, not sample_compute_location")
    sch = Schedule(mod, seed=0)
    # Replaying the instruction itself (with its own decision, which is legal) records it
    # with the replayed schedule's reference to the block.
    Trace(trace.insts[: index + 1]).apply_to_schedule(sch)
    block = sch.trace.insts[-1].inputs[0]
    assert isinstance(block, BlockRV)
    site = sch.state.block_ref_site(block, "mutate_compute_location")
    return sorted(sch._compute_locations(site))
