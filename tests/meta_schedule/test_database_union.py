"""Databases that answer queries without storing records: UnionDatabase (the fastest member
record), OrderedUnionDatabase (the first member with one), ScheduleFnDatabase (a hand-written
schedule function), each behind ``compile_tir``; and the RandomFeatureExtractor."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

import tilewright as tw
from tilewright import config
from tilewright import meta_schedule as ms
from tilewright.ir import IRModule, assert_structural_equal, structural_hash
from tilewright.meta_schedule.database import (
    Database,
    MemoryDatabase,
    OrderedUnionDatabase,
    ScheduleFnDatabase,
    TuningRecord,
    UnionDatabase,
)
from tilewright.meta_schedule.feature_extractor import RandomFeatureExtractor
from tilewright.meta_schedule.testing.workloads import WORKLOADS
from tilewright.schedule import Schedule, ScheduleError
from tilewright.target import Target

TARGET = "llvm --num-cores=2"
needs_cc = pytest.mark.skipif(
    shutil.which(config.get().cc) is None, reason="no C compiler for the CPU target"
)


def small_module(name: str = "matmul") -> IRModule:
    w = WORKLOADS[name]
    return IRModule({"main": w.func(**w.small)})


@pytest.fixture(scope="module")
def candidates() -> list[Schedule]:
    ctx = ms.TuneContext(mod=small_module(), target=TARGET, rand_state=0)
    found, _ = ms.sample_candidates(ctx, 3)
    assert len({structural_hash(s.mod) for s in found}) == 3, "need three distinct candidates"
    return found


def db_with(*timed: tuple[Schedule, tuple[float, ...] | None]) -> MemoryDatabase:
    """A database holding one record of the matmul per ``(candidate, run_secs)``."""
    db = MemoryDatabase()
    workload = db.commit_workload(small_module())
    for sch, secs in timed:
        db.commit_tuning_record(
            TuningRecord(sch.trace, workload, secs, Target(TARGET), None, structural_hash(sch.mod))
        )
    return db


def split_j_by_8(sch: Schedule) -> bool:
    """The hand-written schedule: the matmul's j loop split by 8; other modules declined."""
    try:
        block = sch.get_block("C")
    except ScheduleError:
        return False
    _, j, _ = sch.get_loops(block)
    sch.split(j, [None, 8])
    return True


def by_hand() -> IRModule:
    sch = Schedule(small_module())
    assert split_j_by_8(sch)
    return sch.mod


# UnionDatabase


def test_union_answers_the_fastest_member_record(candidates: list[Schedule]) -> None:
    a, b, c = candidates
    slow, fast, empty = db_with((a, (3e-3,))), db_with((b, (1e-3,)), (c, (5e-3,))), MemoryDatabase()
    union = UnionDatabase(empty, slow, fast)
    record = union.query_tuning_record(small_module(), TARGET)
    assert record is not None and record.run_secs == (1e-3,)
    sch = union.query_schedule(small_module(), TARGET)
    assert sch is not None
    assert_structural_equal(sch.mod, b.mod)
    query_mod = union.query_ir_module(small_module(), Target(TARGET))
    assert query_mod is not None and structural_hash(query_mod) == structural_hash(b.mod)
    # Nothing for another module or another target; an empty union has nothing at all.
    assert union.query_tuning_record(small_module("vector_add"), TARGET) is None
    assert union.query_schedule(small_module(), "cuda") is None
    assert UnionDatabase().query_ir_module(small_module(), TARGET) is None


def test_union_ranks_by_mean_and_keeps_member_order_on_ties(candidates: list[Schedule]) -> None:
    a, b, c = candidates
    # Median 1 ms but mean 4 ms: across members, TVM compares means, so 2 ms wins.
    noisy, steady = db_with((a, (1e-3, 1e-3, 10e-3))), db_with((b, (2e-3,)))
    best = UnionDatabase(noisy, steady).query_tuning_record(small_module(), TARGET)
    assert best is not None and best.run_secs == (2e-3,)
    first, second = db_with((a, (2e-3,))), db_with((c, (2e-3,)))
    for members, winner in [((first, second), a), ((second, first), c)]:
        sch = UnionDatabase(*members).query_schedule(small_module(), TARGET)
        assert sch is not None and structural_hash(sch.mod) == structural_hash(winner.mod)


def test_union_prefers_a_measured_record_to_a_schedule_function(
    candidates: list[Schedule],
) -> None:
    a = candidates[0]
    union = UnionDatabase(ScheduleFnDatabase(split_j_by_8), db_with((a, (9.0,))))
    sch = union.query_schedule(small_module(), TARGET)
    assert sch is not None and structural_hash(sch.mod) == structural_hash(a.mod)
    # Alone, the function's record (no run times) still answers.
    alone = UnionDatabase(MemoryDatabase(), ScheduleFnDatabase(split_j_by_8))
    sch = alone.query_schedule(small_module(), TARGET)
    assert sch is not None
    assert_structural_equal(sch.mod, by_hand())


@pytest.mark.parametrize("kind", [UnionDatabase, OrderedUnionDatabase])
def test_unions_are_read_only(
    kind: type[UnionDatabase | OrderedUnionDatabase], candidates: list[Schedule]
) -> None:
    member = db_with((candidates[0], (1e-3,)))
    union = kind(member)
    workload = member.commit_workload(small_module())
    record = member.get_all_tuning_records()[0]
    name = kind.__name__
    calls = {
        "has_workload": lambda: union.has_workload(small_module()),
        "commit_workload": lambda: union.commit_workload(small_module()),
        "commit_tuning_record": lambda: union.commit_tuning_record(record),
        "get_top_k": lambda: union.get_top_k(workload, 1),
        "get_all_tuning_records": union.get_all_tuning_records,
        "size": lambda: len(union),
    }
    for method, call in calls.items():
        with pytest.raises(NotImplementedError, match=f"{name} answers queries only.*{method}"):
            call()
    with pytest.raises(NotImplementedError, match="commit to one of its member databases"):
        union.commit_tuning_record(record)
    assert len(member) == 1  # the member was not touched
    assert union  # truth does not ask for the size


def test_union_members_must_be_passed_one_by_one() -> None:
    with pytest.raises(TypeError, match=r"UnionDatabase\(db1, db2, ...\); got a list"):
        UnionDatabase([MemoryDatabase(), MemoryDatabase()])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="got a str"):
        OrderedUnionDatabase(MemoryDatabase(), "tune_logs")  # type: ignore[arg-type]


# OrderedUnionDatabase


def test_ordered_union_answers_the_first_member_with_a_record(
    candidates: list[Schedule],
) -> None:
    a, b, _ = candidates
    slow, fast = db_with((a, (3e-3,))), db_with((b, (1e-3,)))
    ordered = OrderedUnionDatabase(MemoryDatabase(), slow, fast)
    record = ordered.query_tuning_record(small_module(), TARGET)
    assert record is not None and record.run_secs == (3e-3,)  # first, though slower
    sch = ordered.query_schedule(small_module(), TARGET)
    assert sch is not None and structural_hash(sch.mod) == structural_hash(a.mod)
    assert ordered.query_tuning_record(small_module(), "cuda") is None
    assert ordered.query_ir_module(small_module("vector_add"), TARGET) is None
    # A schedule function first overrides the tuned records, for the modules it knows.
    handmade = OrderedUnionDatabase(ScheduleFnDatabase(split_j_by_8), fast)
    query_mod = handmade.query_ir_module(small_module(), TARGET)
    assert query_mod is not None
    assert_structural_equal(query_mod, by_hand())


def test_nested_unions(candidates: list[Schedule]) -> None:
    a, b, c = candidates
    r3, r4, r5 = db_with((a, (3e-3,))), db_with((b, (2e-3,))), db_with((c, (1e-3,)))
    empty = MemoryDatabase()

    def answer(db: Database) -> tuple[float, ...] | None:
        record = db.query_tuning_record(small_module(), TARGET)
        return record.run_secs if record is not None else None

    # (TVM's five examples, with r5 the fastest record and r3 the slowest.)
    assert answer(UnionDatabase(empty, r3, r4)) == (2e-3,)
    assert answer(OrderedUnionDatabase(empty, r3, r4)) == (3e-3,)
    assert answer(UnionDatabase(empty, r3, OrderedUnionDatabase(r4, r5))) == (2e-3,)
    assert answer(UnionDatabase(empty, r3, UnionDatabase(r4, r5))) == (1e-3,)
    assert answer(OrderedUnionDatabase(empty, UnionDatabase(r3, r4), r5)) == (2e-3,)


# ScheduleFnDatabase


def test_schedule_fn_database_applies_the_function_to_a_fresh_schedule() -> None:
    seen: list[IRModule] = []

    def fn(sch: Schedule) -> bool:
        seen.append(sch.mod)
        return split_j_by_8(sch)

    db = ScheduleFnDatabase(fn)
    for _ in range(2):  # every query starts again from the module given
        sch = db.query_schedule(small_module(), TARGET)
        assert sch is not None
        assert_structural_equal(sch.mod, by_hand())
    assert all(structural_hash(m) == structural_hash(small_module()) for m in seen)

    record = db.query_tuning_record(small_module(), TARGET)
    assert record is not None
    assert record.run_secs is None and not record.is_valid
    assert str(record.target) == str(Target(TARGET))
    assert record.workload.shash == structural_hash(small_module())
    assert_structural_equal(record.as_schedule().mod, by_hand())  # the trace replays
    query_mod = db.query_ir_module(small_module(), TARGET)
    assert query_mod is not None
    assert_structural_equal(query_mod, by_hand())


def test_schedule_fn_database_declines_when_the_function_returns_false() -> None:
    db = ScheduleFnDatabase(split_j_by_8)
    vector_add = small_module("vector_add")
    assert db.query_schedule(vector_add, TARGET) is None
    assert db.query_tuning_record(vector_add, TARGET) is None
    assert db.query_ir_module(vector_add, TARGET) is None
    assert ms.tir_integration.compile_tir(db, vector_add, TARGET) is None


def test_schedule_fn_database_refusals() -> None:
    returns_schedule = ScheduleFnDatabase(lambda sch: sch)  # type: ignore[arg-type,return-value]
    with pytest.raises(TypeError, match=r"must return True .* or False .*, not a Schedule"):
        returns_schedule.query_schedule(small_module(), TARGET)
    with pytest.raises(TypeError, match="takes a function sch -> bool, not a str"):
        ScheduleFnDatabase("split_j_by_8")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="'anchor-block' is not supported"):
        ScheduleFnDatabase(split_j_by_8, module_equality="anchor-block")
    db = ScheduleFnDatabase(split_j_by_8)
    with pytest.raises(NotImplementedError, match=r"ScheduleFnDatabase .* commit_workload"):
        db.commit_workload(small_module())
    with pytest.raises(NotImplementedError, match="get_all_tuning_records"):
        db.get_all_tuning_records()


# compile_tir with every kind


@needs_cc
@pytest.mark.parametrize("kind", ["union", "ordered", "schedule_fn"])
def test_compile_tir_with_each_kind(kind: str, candidates: list[Schedule]) -> None:
    a, b, _ = candidates
    tuned = db_with((a, (2e-3,)), (b, (1e-3,)))
    db: Database = {
        "union": UnionDatabase(MemoryDatabase(), tuned),
        "ordered": OrderedUnionDatabase(MemoryDatabase(), tuned),
        "schedule_fn": ScheduleFnDatabase(split_j_by_8),
    }[kind]
    expected = by_hand() if kind == "schedule_fn" else b.mod
    sch = ms.tir_integration.compile_tir(db, small_module()["main"], TARGET)
    assert sch is not None
    assert_structural_equal(sch.mod, expected)
    w = WORKLOADS["matmul"]
    args = w.inputs(np.random.default_rng(0), **w.small)
    expected_c = w.reference(*args)[-1]
    tw.build(sch.mod, target="c")["main"](*args)
    np.testing.assert_allclose(args[-1], expected_c, rtol=1e-5, atol=1e-5)


# RandomFeatureExtractor


def features(extractor: RandomFeatureExtractor, count: int) -> list[np.ndarray]:
    # The extractor never looks at the context or the candidates.
    return extractor.extract_from(None, [None] * count)  # type: ignore[arg-type,list-item]


def test_random_feature_extractor_shapes_and_seed() -> None:
    extractor = RandomFeatureExtractor(feature_size=7, max_block_num=3, seed=4)
    first, second = features(extractor, 6), features(extractor, 2)
    assert len(first) == 6 and len(second) == 2
    for m in first + second:
        assert m.dtype == np.float32 and m.shape[1] == 7 and 1 <= m.shape[0] <= 3
        assert ((m >= 0) & (m < 1)).all()
    assert len({m.shape[0] for m in first}) > 1  # the row counts vary
    # One seed, one sequence, continued across calls; numpy's global generator untouched.
    np.random.seed(123)
    again = RandomFeatureExtractor(feature_size=7, max_block_num=3, seed=4)
    replay = features(again, 4) + features(again, 4)
    for x, y in zip(first + second, replay):
        np.testing.assert_array_equal(x, y)
    assert np.random.randint(1 << 30) == np.random.RandomState(123).randint(1 << 30)
    other = features(RandomFeatureExtractor(feature_size=7, max_block_num=3, seed=5), 6)
    assert any(x.shape != y.shape or not np.array_equal(x, y) for x, y in zip(first, other))
    # TVM's draws (legacy numpy generator seeded with ``seed``: a row count, then the rows).
    tvm_rng = np.random.RandomState(4)
    for m in first:
        rows = tvm_rng.randint(1, 3 + 1)
        np.testing.assert_array_equal(m, tvm_rng.rand(rows, 7).astype(np.float32))
    # The defaults: 30 features, 1 to 5 rows.
    (default,) = features(RandomFeatureExtractor(), 1)
    assert default.shape[1] == 30 and 1 <= default.shape[0] <= 5


def test_random_feature_extractor_refuses_empty_shapes() -> None:
    with pytest.raises(ValueError, match="max_block_num must be >= 1, got 0"):
        RandomFeatureExtractor(max_block_num=0)
    with pytest.raises(ValueError, match="feature_size must be >= 1, got 0"):
        RandomFeatureExtractor(feature_size=0)
    with pytest.raises(TypeError):
        RandomFeatureExtractor(30)  # type: ignore[call-arg]  # keyword-only, as in TVM


def test_random_feature_extractor_feeds_a_cost_model() -> None:
    pytest.importorskip("lightgbm")

    class Candidate:  # hashable stand-ins: the model caches features per candidate
        pass

    cands = [Candidate() for _ in range(12)]
    model = ms.cost_model.XGBModel(
        extractor=RandomFeatureExtractor(feature_size=6, seed=1), num_warmup_samples=4
    )
    results = [ms.runner.RunnerResult(run_secs=(float(k + 1),)) for k in range(10)]
    model.update(None, cands[:10], results)  # type: ignore[arg-type]
    scores = model.predict(None, cands[10:])  # type: ignore[arg-type]
    assert scores.shape == (2,) and np.isfinite(scores).all()
