"""Tuning databases: indexed queries, the JSON files' round trip, torn lines, and several
processes (one of them killed mid-loop) writing one work directory."""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import time
import warnings
from pathlib import Path
from typing import Any

import pytest

from tilewright import meta_schedule as ms
from tilewright.ir import IRModule, assert_structural_equal, structural_hash
from tilewright.meta_schedule.arg_info import ArgInfo
from tilewright.meta_schedule.database import (
    JSONDatabase,
    MemoryDatabase,
    TuningRecord,
    Workload,
)
from tilewright.meta_schedule.testing.workloads import WORKLOADS
from tilewright.schedule import Schedule, Trace
from tilewright.target import Target

TARGET = "llvm"


def small_module(name: str = "matmul") -> IRModule:
    w = WORKLOADS[name]
    return IRModule({"main": w.func(**w.small)})


@pytest.fixture(scope="module")
def candidates() -> list[Schedule]:
    ctx = ms.TuneContext(mod=small_module(), target=TARGET, rand_state=0)
    found, _ = ms.sample_candidates(ctx, 4)
    assert len({structural_hash(s.mod) for s in found}) == 4, "need four distinct candidates"
    return found


def record_of(workload: Workload, sch: Schedule, secs: float | None) -> TuningRecord:
    return TuningRecord(
        sch.trace,
        workload,
        (secs,) if secs is not None else None,
        Target(TARGET),
        tuple(ArgInfo.from_entry_func(workload.mod)),
        structural_hash(sch.mod),
    )


def make_db(kind: str, tmp_path: Path) -> MemoryDatabase:
    return MemoryDatabase() if kind == "memory" else JSONDatabase(work_dir=tmp_path)


def lines(path: Path) -> list[str]:
    return path.read_text().splitlines()


# Both databases: workloads, top-k, measured hashes, queries.


@pytest.mark.parametrize("kind", ["memory", "json"])
def test_commit_workload_keys_by_structure(kind: str, tmp_path: Path) -> None:
    db = make_db(kind, tmp_path)
    assert not db.has_workload(small_module())
    first = db.commit_workload(small_module())
    again = db.commit_workload(small_module())  # a new but structurally equal module
    other = db.commit_workload(small_module("vector_add"))
    assert again is first
    assert other.shash != first.shash
    assert db.has_workload(small_module()) and db.has_workload(small_module("vector_add"))
    if kind == "json":
        assert len(lines(tmp_path / "database_workload.json")) == 2


@pytest.mark.parametrize("kind", ["memory", "json"])
def test_top_k_is_fastest_first_and_skips_failures(
    kind: str, tmp_path: Path, candidates: list[Schedule]
) -> None:
    db = make_db(kind, tmp_path)
    workload = db.commit_workload(small_module())
    secs = [3e-3, 1e-3, None, 2e-3]
    for sch, s in zip(candidates, secs):
        db.commit_tuning_record(record_of(workload, sch, s))
    other = db.commit_workload(small_module("vector_add"))
    db.commit_tuning_record(record_of(other, candidates[0], 0.5e-3))

    top = db.get_top_k(workload, 10)
    assert [r.run_secs for r in top] == [(1e-3,), (2e-3,), (3e-3,)]
    assert [r.candidate_shash for r in db.get_top_k(workload, 2)] == [
        structural_hash(candidates[1].mod),
        structural_hash(candidates[3].mod),
    ]
    assert db.get_top_k(workload, 0) == []
    with pytest.raises(ValueError, match="top_k must be non-negative"):
        db.get_top_k(workload, -1)
    assert len(db) == 5
    # The failed candidate counts as measured: the search must not build it again.
    assert db.measured_hashes(workload) == {structural_hash(s.mod) for s in candidates}
    assert db.measured_hashes(other) == {structural_hash(candidates[0].mod)}


@pytest.mark.parametrize("kind", ["memory", "json"])
def test_query_schedule_replays_the_best_record(
    kind: str, tmp_path: Path, candidates: list[Schedule]
) -> None:
    db = make_db(kind, tmp_path)
    mod = small_module()
    assert db.query_schedule(mod, TARGET) is None
    workload = db.commit_workload(mod)
    for sch, s in zip(candidates, [4e-3, 3e-3, 1e-3, 2e-3]):
        db.commit_tuning_record(record_of(workload, sch, s))
    if kind == "json":
        db = JSONDatabase(work_dir=tmp_path)  # the answer comes from the files

    best = db.query_tuning_record(small_module(), TARGET)
    assert best is not None and best.run_secs == (1e-3,)
    best_sch = db.query_schedule(small_module(), TARGET)
    assert best_sch is not None
    assert_structural_equal(best_sch.mod, candidates[2].mod)
    query_mod = db.query_ir_module(small_module(), Target(TARGET))
    assert query_mod is not None
    assert structural_hash(query_mod) == structural_hash(candidates[2].mod)
    assert db.query_tuning_record(small_module(), "cuda") is None  # another target
    assert db.query_schedule(small_module("vector_add"), TARGET) is None


def test_unsupported_module_equality_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="'anchor-block' is not supported"):
        MemoryDatabase(module_equality="anchor-block")
    with pytest.raises(ValueError, match="'ignore-ndarray' is not supported"):
        JSONDatabase(work_dir=tmp_path, module_equality="ignore-ndarray")


# JSONDatabase: the files.


def test_json_round_trip_through_a_fresh_database(
    tmp_path: Path, candidates: list[Schedule]
) -> None:
    db = JSONDatabase(work_dir=tmp_path)
    workload = db.commit_workload(small_module())
    committed = [record_of(workload, sch, (k + 1) * 1e-3) for k, sch in enumerate(candidates)]
    for record in committed:
        db.commit_tuning_record(record)

    # TVM's layout: one workload line, records naming it by line number.
    (workload_line,) = lines(tmp_path / "database_workload.json")
    assert json.loads(workload_line) == workload.as_json()
    record_lines = [json.loads(x) for x in lines(tmp_path / "database_tuning_record.json")]
    assert [x[0] for x in record_lines] == [0] * 4
    assert record_lines[1][1] == committed[1].as_json()

    fresh = JSONDatabase(work_dir=tmp_path, allow_missing=False)
    loaded = fresh.get_all_tuning_records()
    assert len(loaded) == 4
    assert loaded[0].workload.shash == workload.shash
    assert structural_hash(loaded[0].workload.mod) == workload.shash
    for record, original, sch in zip(loaded, committed, candidates):
        assert record.as_json() == original.as_json()
        assert record.run_secs == original.run_secs
        assert str(record.target) == TARGET
        assert record.args_info == original.args_info
        # The stored trace rebuilds the candidate's module.
        assert structural_hash(record.as_schedule().mod) == structural_hash(sch.mod)
        assert record.candidate_shash == structural_hash(sch.mod)


def test_missing_files_and_paths(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    with pytest.raises(FileNotFoundError, match=r"nowhere/database_workload\.json"):
        JSONDatabase(work_dir=missing, allow_missing=False)
    with pytest.raises(ValueError, match="needs work_dir"):
        JSONDatabase(path_workload=tmp_path / "w.json")
    # Explicit paths, created on demand; the lock file sits beside the workload file.
    db = JSONDatabase(tmp_path / "a" / "w.json", tmp_path / "a" / "r.json")
    db.commit_workload(small_module())
    assert len(lines(tmp_path / "a" / "w.json")) == 1
    assert (tmp_path / "a" / ".database.lock").exists()


def test_records_another_writer_appends_become_visible(
    tmp_path: Path, candidates: list[Schedule]
) -> None:
    reader = JSONDatabase(work_dir=tmp_path)
    writer = JSONDatabase(work_dir=tmp_path)  # separate state, as in another process
    workload = writer.commit_workload(small_module())
    writer.commit_tuning_record(record_of(workload, candidates[0], 2e-3))
    assert len(reader.get_all_tuning_records()) == 1
    writer.commit_tuning_record(record_of(workload, candidates[1], 1e-3))
    assert reader.measured_hashes(workload) == {
        structural_hash(candidates[0].mod),
        structural_hash(candidates[1].mod),
    }
    # The reader commits the same workload: it re-reads the file and reuses line 0.
    assert reader.commit_workload(small_module()).shash == workload.shash
    assert len(lines(tmp_path / "database_workload.json")) == 1
    reader.commit_tuning_record(record_of(workload, candidates[2], 3e-3))
    assert [r.run_secs for r in writer.get_top_k(workload, 5)] == [(1e-3,), (2e-3,), (3e-3,)]


def test_a_workload_appended_between_check_and_lock_is_not_appended_twice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, candidates: list[Schedule]
) -> None:
    late = JSONDatabase(work_dir=tmp_path)
    first = JSONDatabase(work_dir=tmp_path)
    first.commit_workload(small_module("vector_add"))
    workload = first.commit_workload(small_module())
    # The other writer appends after ``late`` looked at the files but before it locks them.
    monkeypatch.setattr(late, "_refresh", lambda: None)
    assert late.commit_workload(small_module()).shash == workload.shash
    late.commit_tuning_record(record_of(workload, candidates[0], 1e-3))
    assert len(lines(tmp_path / "database_workload.json")) == 2
    assert json.loads(lines(tmp_path / "database_tuning_record.json")[0])[0] == 1


def test_torn_last_record_line_is_skipped_and_the_next_append_starts_fresh(
    tmp_path: Path, candidates: list[Schedule]
) -> None:
    db = JSONDatabase(work_dir=tmp_path)
    workload = db.commit_workload(small_module())
    for k in range(2):
        db.commit_tuning_record(record_of(workload, candidates[k], (k + 1) * 1e-3))
    path = tmp_path / "database_tuning_record.json"
    whole = json.dumps([0, record_of(workload, candidates[2], 1e-4).as_json()])
    with open(path, "a") as f:
        f.write(whole[: len(whole) // 2])  # a writer killed mid-line

    with pytest.warns(RuntimeWarning, match=r"database_tuning_record\.json: skipped line 3"):
        reloaded = JSONDatabase(work_dir=tmp_path)
    assert [r.run_secs for r in reloaded.get_all_tuning_records()] == [(1e-3,), (2e-3,)]

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the torn line is reported once per database
        reloaded.commit_tuning_record(record_of(workload, candidates[3], 5e-4))
        assert len(reloaded.get_all_tuning_records()) == 3
    assert len(lines(path)) == 4  # two records, the torn line, the new record
    with pytest.warns(RuntimeWarning, match="skipped line 3: not valid JSON"):
        fresh = JSONDatabase(work_dir=tmp_path)
    assert [r.run_secs for r in fresh.get_top_k(workload, 5)] == [(5e-4,), (1e-3,), (2e-3,)]


def test_a_torn_workload_line_keeps_its_line_number(
    tmp_path: Path, candidates: list[Schedule]
) -> None:
    db = JSONDatabase(work_dir=tmp_path)
    db.commit_workload(small_module("vector_add"))
    with open(tmp_path / "database_workload.json", "a") as f:
        f.write('["12345", "# from tilewright.script imp')
    with pytest.warns(RuntimeWarning, match=r"database_workload\.json: skipped line 2"):
        db = JSONDatabase(work_dir=tmp_path)
    workload = db.commit_workload(small_module())
    db.commit_tuning_record(record_of(workload, candidates[0], 1e-3))
    assert json.loads(lines(tmp_path / "database_tuning_record.json")[0])[0] == 2
    with pytest.warns(RuntimeWarning, match="skipped line 2"):
        fresh = JSONDatabase(work_dir=tmp_path)
    (record,) = fresh.get_all_tuning_records()
    assert record.workload.shash == workload.shash


def test_a_record_naming_an_unknown_workload_is_skipped(
    tmp_path: Path, candidates: list[Schedule]
) -> None:
    db = JSONDatabase(work_dir=tmp_path)
    workload = db.commit_workload(small_module())
    db.commit_tuning_record(record_of(workload, candidates[0], 1e-3))
    with open(tmp_path / "database_tuning_record.json", "a") as f:
        f.write(json.dumps([7, record_of(workload, candidates[1], 1e-3).as_json()]) + "\n")
        f.write('[0, "not a record"]\n')
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fresh = JSONDatabase(work_dir=tmp_path)
    messages = [str(w.message) for w in caught]
    assert any("line 2" in m and "workload index 7" in m for m in messages), messages
    assert any("line 3: not a record" in m for m in messages), messages
    assert len(fresh) == 1


# Several processes.


def _append_records(
    work_dir: str, trace_json: list[Any], first: int, count: int, barrier: Any
) -> None:
    db = JSONDatabase(work_dir=work_dir)
    trace = Trace.from_json(trace_json)
    if barrier is not None:
        barrier.wait()
    workload = db.commit_workload(small_module())
    k = first
    while count < 0 or k < first + count:
        db.commit_tuning_record(TuningRecord(trace, workload, (1e-3 + k * 1e-6,), None, None, k))
        k += 1


def test_two_processes_commit_concurrently(tmp_path: Path, candidates: list[Schedule]) -> None:
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(2)
    trace_json = candidates[0].trace.as_json()
    procs = [
        ctx.Process(target=_append_records, args=(str(tmp_path), trace_json, 50 * n, 50, barrier))
        for n in range(2)
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    assert len(lines(tmp_path / "database_workload.json")) == 1
    record_lines = [json.loads(x) for x in lines(tmp_path / "database_tuning_record.json")]
    assert len(record_lines) == 100 and {x[0] for x in record_lines} == {0}
    db = JSONDatabase(work_dir=tmp_path)
    workload = db.commit_workload(small_module())
    assert db.measured_hashes(workload) == set(range(100))
    top = db.get_top_k(workload, 100)
    assert [r.candidate_shash for r in top] == list(range(100))
    assert all(r.is_valid for r in top)


def test_a_writer_killed_in_its_loop_leaves_a_loadable_database(
    tmp_path: Path, candidates: list[Schedule]
) -> None:
    ctx = multiprocessing.get_context("spawn")
    trace = candidates[0].trace
    proc = ctx.Process(target=_append_records, args=(str(tmp_path), trace.as_json(), 0, -1, None))
    proc.start()
    path = tmp_path / "database_tuning_record.json"
    deadline = time.monotonic() + 30
    while not (path.exists() and path.stat().st_size > 0 and len(lines(path)) >= 20):
        assert time.monotonic() < deadline and proc.is_alive(), "the writer made no progress"
        time.sleep(0.01)
    assert proc.pid is not None
    os.kill(proc.pid, signal.SIGKILL)
    proc.join(timeout=10)
    assert proc.exitcode == -signal.SIGKILL

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a torn last line, if the kill landed mid-write
        db = JSONDatabase(work_dir=tmp_path)
        records = db.get_all_tuning_records()
    assert len(records) >= 20
    for k, record in enumerate(records):
        assert record.candidate_shash == k
        assert record.run_secs == (1e-3 + k * 1e-6,)
        assert record.trace.as_json() == trace.as_json()
    workload = db.commit_workload(small_module())
    db.commit_tuning_record(TuningRecord(trace, workload, (1.0,), None, None, -1))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert len(JSONDatabase(work_dir=tmp_path)) == len(records) + 1
