"""Search strategies (TVM's ``ms.search_strategy``): how the tuner picks the candidates it
measures each round.

``ReplayTrace`` replays the design space with fresh decisions, ``ReplayFunc`` re-runs a
schedule function, ``EvolutionarySearch`` evolves a population towards what the cost model
scores best. Each proposes only modules that were not measured before.
"""

from tilewright.meta_schedule.search_strategy.evolutionary_search import EvolutionarySearch
from tilewright.meta_schedule.search_strategy.replay_func import ReplayFunc
from tilewright.meta_schedule.search_strategy.replay_trace import ReplayTrace
from tilewright.meta_schedule.search_strategy.sampling import (
    RoundReport,
    SearchSession,
    measured_hashes,
)
from tilewright.meta_schedule.search_strategy.search_strategy import (
    MeasureCandidate,
    SearchStrategy,
)

# TVM's subclassable spelling; the base class here is a Python class already.
PySearchStrategy = SearchStrategy

__all__ = [
    "PySearchStrategy",
    "EvolutionarySearch",
    "MeasureCandidate",
    "ReplayFunc",
    "ReplayTrace",
    "RoundReport",
    "SearchSession",
    "SearchStrategy",
    "measured_hashes",
]
