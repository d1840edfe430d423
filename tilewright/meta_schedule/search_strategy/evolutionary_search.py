"""``EvolutionarySearch``: the design space, the database's best records and a cost model in,
candidates out: a population evolved by mutation towards what the cost model scores
highest, mixed ε-greedily with fresh random samples."""

from __future__ import annotations

import bisect
import itertools
import time
from typing import TYPE_CHECKING

import numpy as np

from tilewright.ir import structural_hash
from tilewright.meta_schedule.replay_pool import Job
from tilewright.meta_schedule.search_strategy.replay_trace import ReplayTrace
from tilewright.meta_schedule.search_strategy.sampling import (
    RoundReport,
    SearchSession,
    log_round,
    logger,
)
from tilewright.meta_schedule.search_strategy.search_strategy import MeasureCandidate

if TYPE_CHECKING:
    from tilewright.schedule import Schedule


def _check_ratio(name: str, value: float) -> None:
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"EvolutionarySearch: {name} must lie in [0, 1], not {value}")


def _check_positive(name: str, value: int) -> None:
    if value <= 0:
        raise ValueError(f"EvolutionarySearch: {name} must be positive, not {value}")


class EvolutionarySearch(ReplayTrace):
    """Cost-model-guided evolutionary search (TVM's ``EvolutionarySearch``).

    Each round:

    1. The initial population: up to ``init_measured_ratio * population_size`` of the
       database's fastest records of this workload (replayed), and fresh samples of the
       design space for the rest (at least ``init_min_unmeasured`` of them, fewer only when
       the population is smaller; a round that finds no new sample at all ends the search).
    2. ``genetic_num_iters`` generations: the cost model scores the population (random
       scores without one); the best-scoring modules not measured before are kept; each
       member of the next generation is a parent drawn in proportion to its score, mutated
       with probability ``genetic_mutate_prob`` by a mutator of the space generator (drawn
       by ``mutator_probs``), replayed on the module and postprocessed. A mutator with
       nothing to change, a refused replay or a rejecting postprocessor is a failure; a
       member gives up after ``genetic_max_fail_count`` of them.
    3. Of the round's ``num_trials_per_iter`` candidates, a fraction ``eps_greedy`` are
       fresh random samples, the rest the cost model's best; none was measured or
       proposed before.

    Args:
        population_size: members per generation (the slow part is replaying each).
        init_measured_ratio: share of the initial population taken from the database.
        init_min_unmeasured: fresh samples wanted in the initial population.
        max_fail_count: batches of fresh samples that find nothing new after which the
            initial sampling stops.
        genetic_num_iters: generations per round.
        genetic_mutate_prob: probability that a new member is a mutation (else a copy).
        genetic_max_fail_count: failed mutations after which a member gives up.
        eps_greedy: share of random samples among the proposed candidates.

    Example::

        strategy = ms.search_strategy.EvolutionarySearch(population_size=64)
        strategy._initialize_with_tune_context(ctx)
        strategy.pre_tuning(64, 16, ctx.generate_design_space(), database, cost_model)
        batch = strategy.generate_measure_candidates()
        print(strategy.last_report)   # 16 candidates from 410 attempts in 21.3 s (...)
    """

    def __init__(
        self,
        population_size: int = 512,
        init_measured_ratio: float = 0.2,
        init_min_unmeasured: int = 50,
        max_fail_count: int = 5,
        genetic_num_iters: int = 4,
        genetic_mutate_prob: float = 0.85,
        genetic_max_fail_count: int = 10,
        eps_greedy: float = 0.05,
    ) -> None:
        super().__init__(max_fail_count)
        _check_positive("population_size", population_size)
        _check_positive("genetic_num_iters", genetic_num_iters)
        _check_positive("genetic_max_fail_count", genetic_max_fail_count)
        _check_ratio("init_measured_ratio", init_measured_ratio)
        _check_ratio("genetic_mutate_prob", genetic_mutate_prob)
        _check_ratio("eps_greedy", eps_greedy)
        if init_min_unmeasured < 0:
            raise ValueError(
                f"EvolutionarySearch: init_min_unmeasured must not be negative, not "
                f"{init_min_unmeasured}"
            )
        self.population_size = population_size
        self.init_measured_ratio = init_measured_ratio
        self.init_min_unmeasured = init_min_unmeasured
        self.genetic_num_iters = genetic_num_iters
        self.genetic_mutate_prob = genetic_mutate_prob
        self.genetic_max_fail_count = genetic_max_fail_count
        self.eps_greedy = eps_greedy

    def generate_measure_candidates(self) -> list[MeasureCandidate] | None:
        session = self._active()
        count = session.remaining()
        if count == 0:
            return None
        start = time.perf_counter()
        report = RoundReport()
        measured = self._measured_population(session, report)
        mark = time.perf_counter()
        report.phases["database"] = mark - start
        wanted = self.population_size - len(measured)
        least = min(self.init_min_unmeasured, wanted)
        unmeasured = session.sample_population(
            wanted, least, self.max_fail_count, report, self.time_is_up
        )
        report.phases["sample"] = time.perf_counter() - mark
        if len(unmeasured) < least:
            logger.warning(
                "EvolutionarySearch %s: only %d new samples of the %d wanted in the initial "
                "population",
                session.context.task_name,
                len(unmeasured),
                least,
            )
        if not unmeasured and not measured:
            log_round(type(self).__name__, session.context, report, start)
            self.last_report = report
            return None
        mark = time.perf_counter()
        initial = measured + unmeasured
        bests = self._evolve(session, initial, count, report)
        report.phases["evolve"] = time.perf_counter() - mark
        picks = self._pick(session, bests, unmeasured, {id(s) for s in initial}, count, report)
        report.proposed = len(picks)
        log_round(type(self).__name__, session.context, report, start)
        self.last_report = report
        return session.propose(picks)

    # ---- the initial population ----------------------------------------------------------
    def _measured_population(self, session: SearchSession, report: RoundReport) -> list[Schedule]:
        """The database's fastest records of this workload, replayed (their modules are
        marked measured, so they are parents only)."""
        if session.database is None or session.workload is None:
            return []
        wanted = int(self.population_size * self.init_measured_ratio)
        if wanted == 0:
            return []
        population = []
        records = session.database.get_top_k(session.workload, wanted)
        jobs: list[Job] = [("replay", r.trace, session.seed()) for r in records]
        for sch in session.run_jobs(jobs, report):
            if sch is not None:
                session.measured.add(structural_hash(sch.mod))
                population.append(sch)
        return population

    # ---- evolution -----------------------------------------------------------------------
    def _scores(self, session: SearchSession, population: list[Schedule]) -> np.ndarray:
        if session.cost_model is None:
            return np.array([session.rng.random() for _ in population])
        candidates = [MeasureCandidate(sch, session.args_info) for sch in population]
        scores = np.asarray(session.cost_model.predict(session.context, candidates), float)
        if scores.shape != (len(population),):
            raise ValueError(
                f"EvolutionarySearch: the cost model {type(session.cost_model).__name__} "
                f"returned {scores.shape[0] if scores.ndim else 'no'} scores for "
                f"{len(population)} candidates"
            )
        return scores

    def _evolve(
        self,
        session: SearchSession,
        population: list[Schedule],
        count: int,
        report: RoundReport,
    ) -> list[Schedule]:
        """The ``count`` best-scoring unmeasured modules met in ``genetic_num_iters``
        generations, best first."""
        best: dict[int, tuple[float, int, Schedule]] = {}
        order = itertools.count()  # ties keep the first met
        for generation in range(self.genetic_num_iters):
            scores = self._scores(session, population)
            for sch, score in zip(population, scores):
                shash = structural_hash(sch.mod)
                if session.is_new(shash) and shash not in best:
                    best[shash] = (float(score), -next(order), sch)
            if generation == self.genetic_num_iters - 1 or self.time_is_up():
                break
            population = self._next_generation(session, population, scores, report)
            if not population:
                break
        ranked = sorted(best.values(), key=lambda entry: entry[:2], reverse=True)
        return [sch for _, _, sch in ranked[:count]]

    def _next_generation(
        self,
        session: SearchSession,
        population: list[Schedule],
        scores: np.ndarray,
        report: RoundReport,
    ) -> list[Schedule]:
        weights = np.where(np.isfinite(scores), np.maximum(scores, 0.0), 0.0)
        if weights.sum() <= 0.0:
            weights = np.ones(len(population))
        cumulative = list(itertools.accumulate(weights.tolist()))
        mutable = any(p > 0 for p in session.context.space_generator.mutator_probs.values())

        def parent() -> Schedule:
            x = session.rng.random() * cumulative[-1]
            return population[min(bisect.bisect_right(cumulative, x), len(population) - 1)]

        # Each slot: a parent kept as it is, or a mutation of one (the mutator is drawn by
        # ``mutator_probs`` in the worker); slots whose mutation failed try again, up to
        # ``genetic_max_fail_count`` times, all pending slots of a try in one batch.
        children: list[Schedule] = []
        pending = self.population_size
        for _ in range(self.genetic_max_fail_count):
            if pending == 0 or (children and self.time_is_up()):
                break
            jobs: list[Job] = []
            for _ in range(pending):
                sch = parent()
                if not mutable or session.rng.random() >= self.genetic_mutate_prob:
                    children.append(sch)
                else:
                    jobs.append(("mutate", sch.trace, session.seed()))
            made = [c for c in session.run_jobs(jobs, report) if c is not None]
            children.extend(made)
            pending = len(jobs) - len(made)
        return children

    # ---- the round's picks ---------------------------------------------------------------
    def _pick(
        self,
        session: SearchSession,
        bests: list[Schedule],
        rands: list[Schedule],
        initial: set[int],
        count: int,
        report: RoundReport,
    ) -> list[Schedule]:
        """``count`` new modules: ``eps_greedy`` of them from the random samples, the rest
        from ``bests`` in order; either list fills in when the other runs out. ``initial``
        holds the ids of the initial population (to tell a sample from a mutant)."""
        num_rands = int(count * self.eps_greedy)
        num_bests = count - num_rands
        rands = list(rands)
        session.rng.shuffle(rands)
        queues = {"best": iter(bests), "random": iter(rands)}
        picks: list[Schedule] = []

        def take(source: str, quota: int) -> None:
            while len(picks) < quota:
                sch = next(queues[source], None)
                if sch is None:
                    return
                if session.claim(sch):
                    picks.append(sch)
                    mutant = source == "best" and id(sch) not in initial
                    report.picked.append("mutant" if mutant else source)

        take("best", num_bests)
        take("random", count)
        take("best", count)  # the random samples ran out
        return picks

    def clone(self) -> EvolutionarySearch:
        return EvolutionarySearch(
            self.population_size,
            self.init_measured_ratio,
            self.init_min_unmeasured,
            self.max_fail_count,
            self.genetic_num_iters,
            self.genetic_mutate_prob,
            self.genetic_max_fail_count,
            self.eps_greedy,
        )
