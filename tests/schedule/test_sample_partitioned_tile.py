"""sample_partitioned_tile: draws that keep the inner part a multiple of innerpart_factor,
recorded decisions that replay, and refusals of decisions and arguments that do not fit."""

from __future__ import annotations

import random

from schedule_checks import check_refused, check_schedule

from tilewright.ir import assert_structural_equal
from tilewright.schedule import Schedule
from tilewright.schedule.primitives.partitioned_tile import sample_partitioned_tile
from tilewright.script import tir as T


@T.prim_func
def scale(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
    for i in range(64):
        with T.block("B"):
            vi = T.axis.remap("S", [i])
            B[vi] = A[vi] * T.float32(3)


@T.prim_func
def scale_tiled(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
    for i_0, i_1, i_2 in T.grid(2, 4, 8):
        with T.block("B"):
            vi = T.axis.spatial(64, i_0 * 32 + i_1 * 8 + i_2)
            B[vi] = A[vi] * T.float32(3)


def _tiled(seed: int | None = None, decision: list[int] | None = None) -> Schedule:
    sch = Schedule(scale, seed=seed)
    (i,) = sch.get_loops("B")
    tiles = sch.sample_partitioned_tile(
        i, n=3, partition_pos=1, innerpart_factor=8, decision=decision
    )
    sch.split(i, tiles)
    return sch


def test_a_given_decision_splits_like_given_factors() -> None:
    sch = _tiled(decision=[2, 4, 8])
    check_schedule(sch, scale, scale_tiled)
    assert sch.trace.as_python()[2] == (
        "v2, v3, v4 = sch.sample_partitioned_tile(loop=l1, n=3, partition_pos=1, "
        "innerpart_factor=8, decision=[2, 4, 8])"
    )


def test_draws_keep_the_inner_part_a_multiple_and_replay() -> None:
    for seed in range(8):
        first, second = _tiled(seed), _tiled(seed)
        assert_structural_equal(first.mod, second.mod)
        tiles = first.trace.insts[2].decision
        assert tiles[0] * tiles[1] * tiles[2] == 64 and tiles[1] * tiles[2] % 8 == 0
        check_schedule(first, scale)


def test_the_pure_sampler_keeps_its_promise() -> None:
    rng = random.Random(1)
    for _ in range(50):
        tiles = sample_partitioned_tile(rng, 96, 4, 2, 6)
        assert tiles[0] * tiles[1] * tiles[2] * tiles[3] == 96
        assert tiles[2] * tiles[3] % 6 == 0


def test_without_a_partition_it_is_a_perfect_tile() -> None:
    sch = Schedule(scale, seed=3)
    (i,) = sch.get_loops("B")
    tiles = [sch.get(v) for v in sch.sample_partitioned_tile(i, n=2)]
    assert tiles[0] * tiles[1] == 64


# ---- rules ---------------------------------------------------------------------------------


def test_refuses_decisions_that_do_not_fit() -> None:
    sch = Schedule(scale)
    (i,) = sch.get_loops("B")

    def sample(decision: object) -> object:
        return sch.sample_partitioned_tile(
            i, n=3, partition_pos=1, innerpart_factor=8, decision=decision
        )

    cases = [
        ([16, 2, 2], "multiply to 4, not a multiple of innerpart_factor=8"),
        ([2, 4, 4], "multiplies to 32, not its extent 64"),
        ([64, 1], "is not a list of 3 positive integers"),
    ]
    for decision, match in cases:
        error = check_refused(sch, lambda decision=decision: sample(decision), match)
        assert error.rule == "decision"


def test_refuses_an_innerpart_factor_that_does_not_divide_the_extent() -> None:
    sch = Schedule(scale)
    (i,) = sch.get_loops("B")
    error = check_refused(
        sch,
        lambda: sch.sample_partitioned_tile(i, n=2, partition_pos=1, innerpart_factor=5),
        "innerpart_factor 5 does not divide the extent 64 of loop i",
    )
    assert error.rule == "innerpart-factor"


def test_refuses_bad_arguments_and_symbolic_extents() -> None:
    sch = Schedule(scale)
    (i,) = sch.get_loops("B")
    for n, pos, factor in ((1, 0, 2), (3, 3, 1), (3, 0, 0)):
        error = check_refused(
            sch,
            lambda n=n, pos=pos, factor=factor: sch.sample_partitioned_tile(i, n, pos, factor),
            "need n >= 2",
        )
        assert error.rule == "argument"

    @T.prim_func
    def symbolic(a: T.handle, n: T.int32):
        A = T.match_buffer(a, (n,), "float32")
        for i in range(n):
            with T.block("A"):
                vi = T.axis.remap("S", [i])
                A[vi] = T.float32(1)

    sch = Schedule(symbolic)
    (i,) = sch.get_loops("A")
    error = check_refused(
        sch, lambda: sch.sample_partitioned_tile(i, 2), "has the symbolic extent n"
    )
    assert error.rule == "constant-extent"
