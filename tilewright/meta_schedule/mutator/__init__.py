"""Mutators: a measured candidate's trace in, a neighbour out (one decision, or one
annotation value, changed), for the evolutionary search (TVM's ``meta_schedule.mutator``).

Example::

    from tilewright.meta_schedule import mutator as M
    neighbour = M.MutateTileSize().apply(candidate.trace, random.Random(0))
"""

from tilewright.meta_schedule.mutator.mutate_compute_location import MutateComputeLocation
from tilewright.meta_schedule.mutator.mutate_parallel import MutateParallel
from tilewright.meta_schedule.mutator.mutate_thread_binding import MutateThreadBinding
from tilewright.meta_schedule.mutator.mutate_tile_size import MutateTileSize
from tilewright.meta_schedule.mutator.mutate_unroll import MutateUnroll
from tilewright.meta_schedule.mutator.mutator import Mutator

# TVM's subclassable spelling; the base class here is a Python class already.
PyMutator = Mutator

__all__ = [
    "PyMutator",
    "MutateComputeLocation",
    "MutateParallel",
    "MutateThreadBinding",
    "MutateTileSize",
    "MutateUnroll",
    "Mutator",
]
