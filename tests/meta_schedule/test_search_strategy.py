"""Search strategies on small CPU workloads: ReplayTrace and ReplayFunc propose distinct
modules, skip what the database measured, and stop at max_trials or when the space runs out;
EvolutionarySearch, guided by a cost model that scores a known function of the decisions,
proposes better-scoring candidates than random search and better ones round after round;
its mutants replay from JSON to the same module and compute what numpy computes; its
ε-greedy share of random picks and its budget are exact."""

from __future__ import annotations

import json

import numpy as np
import pytest

import tilewright as tw
from tilewright import meta_schedule as ms
from tilewright.ir import structural_hash
from tilewright.meta_schedule.cost_model.cost_model import CostModel
from tilewright.meta_schedule.database import MemoryDatabase, TuningRecord
from tilewright.meta_schedule.search_strategy import (
    EvolutionarySearch,
    MeasureCandidate,
    ReplayFunc,
    ReplayTrace,
    SearchStrategy,
)
from tilewright.meta_schedule.testing.workloads import WORKLOADS
from tilewright.schedule import Schedule, Trace

CPU = "llvm --num-cores=2"
MATMUL = WORKLOADS["matmul"]


def innermost_product(sch: Schedule) -> int:
    """The product of the innermost factor of every tiling decision of the design space."""
    product = 1
    for inst in sch.trace.insts:
        if inst.kind == "enter_postproc":
            break
        if inst.kind == "sample_perfect_tile":
            product *= inst.decision[-1]
    return product


class TileCostModel(CostModel):
    """Scores a candidate by ``innermost_product``; remembers every score it gave."""

    def __init__(self) -> None:
        self.calls: list[dict[int, float]] = []

    def predict(self, context: ms.TuneContext, candidates: list[MeasureCandidate]) -> np.ndarray:
        scores = [float(innermost_product(c.sch)) for c in candidates]
        self.calls.append({structural_hash(c.sch.mod): s for c, s in zip(candidates, scores)})
        return np.array(scores)


def split_once(sch: Schedule) -> Schedule:
    """A ScheduleFn with five outcomes on a vector of 16: the inner tile 1, 2, 4, 8 or 16."""
    block = sch.get_block("T_add")
    (i,) = sch.get_loops(block)
    sch.split(i, sch.sample_perfect_tile(i, n=2))
    return sch


def split_space() -> ms.space_generator.ScheduleFn:
    return ms.space_generator.ScheduleFn(
        split_once, sch_rules=[], postprocs=[], mutator_probs={ms.mutator.MutateTileSize(): 1.0}
    )


def _start(
    strategy: SearchStrategy,
    context: ms.TuneContext,
    max_trials: int,
    per_iter: int,
    database: MemoryDatabase | None = None,
    cost_model: CostModel | None = None,
) -> SearchStrategy:
    strategy._initialize_with_tune_context(context)
    spaces = context.generate_design_space()
    strategy.pre_tuning(max_trials, per_iter, spaces, database, cost_model)
    return strategy


def _rounds(
    strategy: SearchStrategy, database: MemoryDatabase | None = None
) -> list[list[MeasureCandidate]]:
    """Every round until None; with a database, each candidate is committed as the tuner
    would, timed at 1 / its score (a higher score runs faster)."""
    rounds = []
    while (batch := strategy.generate_measure_candidates()) is not None:
        rounds.append(batch)
        if database is not None:
            workload = database.commit_workload(strategy.context.mod)
            for c in batch:
                secs = (1.0 / innermost_product(c.sch),)
                database.commit_tuning_record(
                    TuningRecord(
                        c.sch.trace,
                        workload,
                        secs,
                        candidate_shash=structural_hash(c.sch.mod),
                    )
                )
        report = getattr(strategy, "last_report", None)
        print(f"{type(strategy).__name__} round {len(rounds)}: {report}")
    strategy.post_tuning()
    return rounds


def _hashes(rounds: list[list[MeasureCandidate]]) -> list[int]:
    return [structural_hash(c.sch.mod) for batch in rounds for c in batch]


def _matmul_context(seed: int = 0, size: int = 32) -> ms.TuneContext:
    return ms.TuneContext(MATMUL.func(m=size, n=size, k=size), target=CPU, rand_state=seed)


def _vector_context(seed: int = 0) -> ms.TuneContext:
    func = WORKLOADS["vector_add"].func(n=16)
    return ms.TuneContext(func, target=CPU, space_generator=split_space(), rand_state=seed)


# ---- ReplayTrace / ReplayFunc ---------------------------------------------------------------


def test_replay_trace_distinct_candidates_until_max_trials() -> None:
    ctx = _matmul_context()
    rounds = _rounds(_start(ReplayTrace(), ctx, max_trials=10, per_iter=4))
    assert [len(batch) for batch in rounds] == [4, 4, 2]
    hashes = _hashes(rounds)
    assert len(set(hashes)) == 10
    args = tuple(ms.arg_info.ArgInfo.from_entry_func(ctx.mod))
    assert all(c.args_info == args for batch in rounds for c in batch)
    # Each candidate is postprocessed: its trace enters postprocessing and replays to itself.
    for c in rounds[0]:
        assert any(inst.kind == "enter_postproc" for inst in c.sch.trace.insts)
        again = Schedule(ctx.mod)
        c.sch.trace.apply_to_schedule(again)
        assert structural_hash(again.mod) == structural_hash(c.sch.mod)


def test_replay_trace_exhausts_a_small_space_without_a_database() -> None:
    ctx = _vector_context()
    rounds = _rounds(_start(ReplayTrace(max_fail_count=60), ctx, max_trials=20, per_iter=3))
    hashes = _hashes(rounds)
    # Five inner tiles, five modules; then a round finds nothing new and the search ends.
    assert len(hashes) == len(set(hashes)) == 5
    assert sorted(innermost_product(c.sch) for batch in rounds for c in batch) == [1, 2, 4, 8, 16]


def test_replay_trace_skips_modules_the_database_measured() -> None:
    database = MemoryDatabase()
    first = _rounds(
        _start(ReplayTrace(max_fail_count=60), _vector_context(1), 3, 3, database), database
    )
    measured = set(_hashes(first))
    assert len(measured) == 3
    second = _rounds(
        _start(ReplayTrace(max_fail_count=60), _vector_context(2), 20, 4, database), database
    )
    fresh = _hashes(second)
    assert len(fresh) == 2
    assert not measured & set(fresh)
    assert len(measured | set(fresh)) == 5


def test_replay_func_reruns_the_schedule_function() -> None:
    ctx = _vector_context(3)
    rounds = _rounds(_start(ReplayFunc(max_fail_count=60), ctx, max_trials=4, per_iter=3))
    assert [len(batch) for batch in rounds] == [3, 1]
    assert len(set(_hashes(rounds))) == 4


def test_pre_tuning_refuses_bad_sessions() -> None:
    ctx = _matmul_context()
    with pytest.raises(ValueError, match="ReplayTrace: call _initialize_with_tune_context"):
        ReplayTrace().pre_tuning(4, 4, ctx.generate_design_space())
    strategy = ReplayTrace()
    strategy._initialize_with_tune_context(ctx)
    with pytest.raises(ValueError, match="empty design space"):
        strategy.pre_tuning(4, 4, [])
    with pytest.raises(ValueError, match=r"max_trials \(0\)"):
        strategy.pre_tuning(0, 4, ctx.generate_design_space())
    with pytest.raises(ValueError, match="ReplayTrace: call pre_tuning first"):
        strategy.generate_measure_candidates()
    with pytest.raises(ValueError, match=r"eps_greedy must lie in \[0, 1\], not 1.5"):
        EvolutionarySearch(eps_greedy=1.5)
    with pytest.raises(ValueError, match="population_size must be positive"):
        EvolutionarySearch(population_size=0)


# ---- EvolutionarySearch ---------------------------------------------------------------------


def _evolutionary(**options: float) -> EvolutionarySearch:
    settings: dict = dict(population_size=12, init_min_unmeasured=8, genetic_num_iters=3)
    settings.update(options)
    return EvolutionarySearch(**settings)


def test_evolutionary_search_beats_random_search_and_improves() -> None:
    scores = {}
    for strategy in (ReplayTrace(), _evolutionary()):
        database = MemoryDatabase()
        started = _start(strategy, _matmul_context(5), 24, 8, database, TileCostModel())
        rounds = _rounds(started, database)
        assert len(set(_hashes(rounds))) == 24
        scores[type(strategy).__name__] = [
            float(np.mean([innermost_product(c.sch) for c in batch])) for batch in rounds
        ]
    print("mean score per round:", scores)
    random_mean = np.mean(scores["ReplayTrace"])
    evolved = scores["EvolutionarySearch"]
    assert np.mean(evolved) > 3 * random_mean
    assert evolved[-1] > evolved[0]
    assert min(evolved) > random_mean


def test_mutants_replay_from_json_and_compute_what_numpy_computes() -> None:
    sizes = MATMUL.small
    ctx = ms.TuneContext(MATMUL.func(**sizes), target=CPU, rand_state=7)
    strategy = _evolutionary(genetic_mutate_prob=1.0, eps_greedy=0.0)
    batch = _start(strategy, ctx, 8, 8, None, TileCostModel()).generate_measure_candidates()
    assert batch is not None and strategy.last_report is not None
    print(strategy.last_report)
    mutants = [c for c, o in zip(batch, strategy.last_report.picked) if o == "mutant"]
    assert len(mutants) >= 2
    rng = np.random.default_rng(0)
    for number, c in enumerate(mutants):
        text = json.dumps(c.sch.trace.as_json())
        again = Schedule(ctx.mod)
        Trace.from_json(text).apply_to_schedule(again)
        assert structural_hash(again.mod) == structural_hash(c.sch.mod)
        if number < 2:
            args = MATMUL.inputs(rng, **sizes)
            expected = MATMUL.reference(*args)
            tw.build(c.sch.mod, target="c")["main"](*args)
            np.testing.assert_allclose(args[-1], expected[-1], rtol=1e-4, atol=1e-4)


def test_eps_greedy_share_of_random_picks() -> None:
    model = TileCostModel()
    strategy = _evolutionary(eps_greedy=0.5)
    batch = _start(strategy, _matmul_context(11), 8, 8, None, model).generate_measure_candidates()
    assert batch is not None and strategy.last_report is not None
    picked = strategy.last_report.picked
    assert len(batch) == 8
    assert picked.count("random") == 4
    # The random picks are fresh samples of the initial population (the first scored).
    initial = model.calls[0]
    random_hashes = {structural_hash(c.sch.mod) for c, o in zip(batch, picked) if o == "random"}
    assert random_hashes <= set(initial)
    # The others are the four best-scored modules of every generation.
    scored: dict[int, float] = {}
    for call in model.calls:
        scored.update(call)
    best_scores = sorted(
        (innermost_product(c.sch) for c, o in zip(batch, picked) if o != "random"), reverse=True
    )
    assert best_scores == sorted(scored.values(), reverse=True)[:4]


def test_evolutionary_search_respects_max_trials_and_the_database() -> None:
    database = MemoryDatabase()
    quick = {"genetic_num_iters": 2}
    first = _rounds(_start(_evolutionary(**quick), _matmul_context(13), 10, 4, database), database)
    assert [len(batch) for batch in first] == [4, 4, 2]
    measured = set(_hashes(first))
    assert len(measured) == 10
    # A second session starts from the database's best records and proposes none of them.
    second = _rounds(
        _start(_evolutionary(**quick), _matmul_context(14), 6, 6, database, TileCostModel()),
        database,
    )
    assert [len(batch) for batch in second] == [6]
    assert not measured & set(_hashes(second))


def test_evolutionary_search_ends_when_the_space_is_exhausted() -> None:
    rounds = _rounds(
        _start(
            _evolutionary(max_fail_count=20, init_min_unmeasured=2),
            _vector_context(17),
            max_trials=20,
            per_iter=2,
            cost_model=TileCostModel(),
        )
    )
    hashes = _hashes(rounds)
    assert len(hashes) == len(set(hashes)) == 5


def test_clone_copies_the_settings_not_the_session() -> None:
    strategy = _evolutionary(eps_greedy=0.25)
    _start(strategy, _matmul_context(), 4, 4)
    copy = strategy.clone()
    assert isinstance(copy, EvolutionarySearch)
    assert (copy.population_size, copy.eps_greedy) == (12, 0.25)
    assert copy.session is None
    assert isinstance(ReplayFunc(7).clone(), ReplayFunc)


# ---- on the GPU (scripts/gpu-check) ---------------------------------------------------------


@pytest.mark.gpu
def test_evolutionary_cuda_candidates_match_numpy_on_the_gpu() -> None:
    from tilewright.runtime.cuda_runtime import device_count

    if device_count() == 0:
        pytest.skip("needs a CUDA GPU")
    sizes = {"m": 256, "n": 256, "k": 256}
    ctx = ms.TuneContext(MATMUL.func(**sizes), target="cuda", rand_state=3)
    # About one CUDA matmul sample in ten passes VerifyGPUCode: a small population that
    # samples patiently.
    strategy = _evolutionary(
        population_size=8, init_min_unmeasured=4, max_fail_count=20, genetic_num_iters=2
    )
    batch = _start(strategy, ctx, 3, 3, None, TileCostModel()).generate_measure_candidates()
    assert batch is not None and len(batch) == 3
    print(strategy.last_report, strategy.last_report.picked if strategy.last_report else "")
    inputs = MATMUL.inputs(np.random.default_rng(0), **sizes)
    expected = MATMUL.reference(*inputs)
    for c in batch:
        args = [tw.nd.array(a, tw.cuda(0)) for a in inputs]
        tw.build(c.sch.mod, target="cuda")["main"](*args)
        np.testing.assert_allclose(
            args[-1].numpy(), expected[-1], rtol=1e-3, atol=1e-3, err_msg=str(c.sch.trace)
        )


def test_a_search_ends_its_round_with_what_it_has_when_the_time_is_up() -> None:
    """``time_is_up`` (the tuner's budget) is asked between batches: the evolutionary search
    then skips the generations, the random search its remaining slots."""
    full = _start(_evolutionary(), _matmul_context(21), 8, 8)
    batch = full.generate_measure_candidates()
    whole = full.last_report
    hurried = _start(_evolutionary(), _matmul_context(21), 8, 8)
    hurried.time_is_up = lambda: True
    batch_hurried = hurried.generate_measure_candidates()
    report = hurried.last_report
    assert batch and batch_hurried  # the first sampling batch still counts
    assert report.attempts < whole.attempts and report.phases["evolve"] < whole.phases["evolve"]
    replay = _start(ReplayTrace(), _matmul_context(21), 8, 8)
    replay.time_is_up = lambda: True
    assert len(replay.generate_measure_candidates() or []) == 1
