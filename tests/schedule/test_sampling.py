"""Sampling primitives: decisions drawn from the schedule's seeded generator, recorded in the
trace, replayed (directly, from JSON, from Python) to the same module, changed to explore,
and refused when they do not fit the instruction."""

from __future__ import annotations

import json
import random
from collections import Counter

import numpy as np
import pytest
from evaluator import run
from schedule_checks import check_refused, check_replay, check_schedule
from schedule_corpus import matmul

from tilewright.ir import assert_structural_equal
from tilewright.schedule import Schedule, Trace
from tilewright.schedule.primitives.sampling import divisors, prime_factors, sample_perfect_tile
from tilewright.script import tir as T


@T.prim_func
def matmul_tiled(
    A: T.Buffer((8, 10), "float32"),
    B: T.Buffer((10, 12), "float32"),
    C: T.Buffer((8, 12), "float32"),
):
    for i_0, i_1, i_2, j, k in T.grid(2, 2, 2, 12, 10):
        with T.block("C"):
            vi = T.axis.spatial(8, i_0 * 4 + i_1 * 2 + i_2)
            vj, vk = T.axis.remap("SR", [j, k])
            T.block_attr({"meta_schedule.unroll_explicit": 16})
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]


def _sampled(seed: int | None = None, tiles: list[int] | None = None) -> Schedule:
    sch = Schedule(matmul, seed=seed)
    block = sch.get_block("C")
    i, _, _ = sch.get_loops(block)
    factors = sch.sample_perfect_tile(i, n=3, max_innermost_factor=4, decision=tiles)
    sch.split(i, factors)
    unroll = sch.sample_categorical([0, 16, 64], [0.2, 0.5, 0.3], decision=1)
    sch.annotate(block, "meta_schedule.unroll_explicit", unroll)
    return sch


def test_sampled_factors_split_and_annotate_like_given_ones() -> None:
    sch = _sampled(tiles=[2, 2, 2])
    check_schedule(sch, matmul, matmul_tiled)
    assert [i.decision for i in sch.trace if i.spec.sampling] == [[2, 2, 2], 1]
    line = sch.trace.as_python()[2]
    assert line == (
        "v4, v5, v6 = sch.sample_perfect_tile(loop=l1, n=3, max_innermost_factor=4, "
        "decision=[2, 2, 2])"
    )


def test_one_seed_draws_the_same_schedule_and_the_trace_replays_it() -> None:
    for seed in range(10):
        first, second = _sampled(seed), _sampled(seed)
        assert_structural_equal(first.mod, second.mod)
        assert first.trace.as_json() == second.trace.as_json()
        check_schedule(first, matmul)
        tiles = first.trace.insts[2].decision
        assert tiles[0] * tiles[1] * tiles[2] == 8 and tiles[2] <= 4


def test_changing_a_decision_and_replaying_explores() -> None:
    sch = _sampled(tiles=[8, 1, 1])
    changed = sch.trace.with_decision(2, [2, 2, 2])
    replayed = Schedule(matmul)
    changed.apply_to_schedule(replayed)
    assert_structural_equal(replayed.mod, _sampled(tiles=[2, 2, 2]).mod)
    from_json = Schedule(matmul)
    Trace.from_json(json.dumps(changed.as_json())).apply_to_schedule(from_json)
    assert_structural_equal(from_json.mod, replayed.mod)
    with pytest.raises(ValueError, match="makes no decision"):
        sch.trace.with_decision(3, [1])


def test_the_decision_provider_chooses_on_replay() -> None:
    sch = _sampled(tiles=[8, 1, 1])
    replayed = Schedule(matmul)
    sch.trace.apply_to_schedule(
        replayed,
        decision_provider=lambda inst, d: [1, 4, 2] if inst.kind == "sample_perfect_tile" else d,
    )
    assert_structural_equal(replayed.mod, _sampled(tiles=[1, 4, 2]).mod)


def test_copies_and_forked_seeds_draw_independently_but_deterministically() -> None:
    a, b = Schedule(matmul, seed=5), Schedule(matmul, seed=5)
    assert a.fork_seed() == b.fork_seed()
    assert a.copy().fork_seed() == b.copy().fork_seed()
    a.seed(1)
    b.seed(1)
    assert a.fork_seed() == b.fork_seed()


def test_perfect_tiles_cover_every_factorisation() -> None:
    rng = random.Random(0)
    seen = {tuple(sample_perfect_tile(rng, 12, 2, 0)) for _ in range(300)}
    assert seen == {(12 // d, d) for d in divisors(12)}
    assert prime_factors(360) == [2, 2, 2, 3, 3, 5]
    assert all(sample_perfect_tile(rng, 1000, 4, 16)[-1] <= 16 for _ in range(100))


def test_an_outer_weight_moves_factors_outward_and_still_covers_everything() -> None:
    rng = random.Random(0)
    uniform = [sample_perfect_tile(rng, 4096, 5, 64) for _ in range(2000)]
    weighted = [sample_perfect_tile(rng, 4096, 5, 64, outer_weight=0.3) for _ in range(2000)]
    for draw in weighted:
        assert draw[0] * draw[1] * draw[2] * draw[3] * draw[4] == 4096 and draw[4] <= 64

    def mean_log_outer(draws: list[list[int]]) -> float:
        return sum(d[0].bit_length() - 1 for d in draws) / len(draws)

    # Uniform: each of the 12 factors of 2 lands outside with probability ~1/5; weighted:
    # 0.3 + 0.7/5 = 0.44.
    assert 1.9 < mean_log_outer(uniform) < 3.1
    assert 4.7 < mean_log_outer(weighted) < 5.9
    seen = {tuple(sample_perfect_tile(rng, 12, 2, 0, outer_weight=0.3)) for _ in range(300)}
    assert seen == {(12 // d, d) for d in divisors(12)}


def test_compute_locations_include_root_inline_and_loops() -> None:
    counts: Counter[int] = Counter()
    for seed in range(40):
        sch = Schedule(matmul, seed=seed)
        block = sch.get_block("C")
        cache = sch.cache_read(block, 0, "local")
        location = sch.sample_compute_location(cache)
        sch.compute_at(cache, location)
        counts[sch.trace.insts[-2].decision] += 1
        check_schedule(sch, matmul)
    # inline (-2), root (-1), and the loops i, j above the consumer; as in TVM, not the
    # trailing reduction loop k.
    assert set(counts) == {-2, -1, 0, 1}


def test_a_decision_that_does_not_fit_is_refused() -> None:
    sch = Schedule(matmul)
    i, _, _ = sch.get_loops(sch.get_block("C"))
    error = check_refused(sch, lambda: sch.sample_perfect_tile(i, 2, 4, decision=[2, 3]), "6")
    assert error.rule == "decision"
    error = check_refused(sch, lambda: sch.sample_perfect_tile(i, 2, 2, decision=[2, 4]), "max")
    assert error.rule == "decision"
    error = check_refused(sch, lambda: sch.sample_categorical([1, 2], [1, 1], decision=2), "2")
    assert error.rule == "decision"
    cache = sch.cache_write("C", 0, "local")
    error = check_refused(sch, lambda: sch.sample_compute_location(cache, decision=0), "root")
    assert error.rule == "decision"


@T.prim_func
def symbolic(a: T.handle, b: T.handle):
    n = T.int32()
    A = T.match_buffer(a, (n,), "float32")
    B = T.match_buffer(b, (n,), "float32")
    for i in range(n):
        with T.block("B"):
            vi = T.axis.remap("S", [i])
            B[vi] = A[vi]


@T.prim_func
def symbolic_split(a: T.handle, b: T.handle):
    n = T.int32()
    A = T.match_buffer(a, (n,), "float32")
    B = T.match_buffer(b, (n,), "float32")
    for i_0, i_1 in T.grid(n, 1):
        with T.block("B"):
            vi = T.axis.spatial(n, i_0 + i_1)
            B[vi] = A[vi]


def _check_symbolic_numbers(sch: Schedule) -> None:
    for size in (1, 7, 12):
        a = np.arange(size, dtype="float32") + 1
        want = run(symbolic, a, np.zeros(size, "float32"))[1]
        got = run(sch.mod["main"], a, np.zeros(size, "float32"))[1]
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(got, a)


def test_a_symbolic_extent_samples_none_then_ones_as_tvm() -> None:
    sch = Schedule(symbolic, seed=0)
    (i,) = sch.get_loops(sch.get_block("B"))
    tiles = sch.sample_perfect_tile(i, 2)
    assert tiles[0] is None and tiles[1] is not None and sch.get(tiles[1]) == 1
    assert sch.trace.insts[-1].decision == [-1, 1]
    sch.split(i, tiles)
    check_schedule(sch, symbolic, symbolic_split, numeric=False)
    _check_symbolic_numbers(sch)


def test_a_symbolic_tile_prints_and_replays_its_blank_output() -> None:
    sch = Schedule(symbolic, seed=0)
    (i,) = sch.get_loops(sch.get_block("B"))
    tiles = sch.sample_perfect_tile(i, 3, decision=[-1, 1, 1])
    sch.split(i, tiles)
    assert sch.trace.as_python()[2:] == [
        "_, v3, v4 = sch.sample_perfect_tile(loop=l1, n=3, max_innermost_factor=16, "
        "decision=[-1, 1, 1])",
        "l5, l6, l7 = sch.split(loop=l1, factors=[None, v3, v4], preserve_unit_iters=True, "
        "disable_predication=False)",
    ]
    insts, decisions = sch.trace.as_json()
    assert insts[2] == ["SamplePerfectTile", ["l1"], [3, 16], ["_", "v3", "v4"]]
    assert decisions == [[2, [-1, 1, 1]]]
    check_replay(sch, symbolic)  # directly, from JSON, from the Python text
    bare = Schedule(symbolic, seed=4)
    Trace(sch.trace.insts, {}).apply_to_schedule(bare)  # resampled: the same again
    assert_structural_equal(bare.mod, sch.mod)
    _check_symbolic_numbers(sch)


def test_a_symbolic_extent_takes_no_other_decision() -> None:
    sch = Schedule(symbolic)
    (i,) = sch.get_loops(sch.get_block("B"))
    error = check_refused(
        sch, lambda: sch.sample_perfect_tile(i, 2, decision=[4, 1]), r"takes only \[-1, 1\]"
    )
    assert error.rule == "decision"


def test_a_root_or_inline_location_is_no_loop() -> None:
    sch = Schedule(matmul, seed=0)
    cache = sch.cache_read("C", 0, "local")
    root = sch.sample_compute_location(cache, decision=-1)
    error = check_refused(sch, lambda: sch.split(root, [None, 2]), "not a loop")
    assert error.rule == "location-mark"
    sch.compute_at(cache, root)  # root: the cache stays where it is
    inline = sch.sample_compute_location(cache, decision=-2)
    sch.compute_at(cache, inline)
    check_schedule(sch, matmul, matmul)
