"""``sample_compute_location`` offers the loops TVM's ``CollectComputeLocation`` offers: those
holding every consumer, less unit loops, data-parallel loops after a reduction loop, and
trailing reduction loops; inline and root besides. A location it does not offer is refused
as a decision and never drawn."""

from __future__ import annotations

from collections import Counter

import pytest
from schedule_checks import check_refused, check_schedule

from tilewright.ir import PrimFunc
from tilewright.schedule import Schedule
from tilewright.script import tir as T


@T.prim_func
def unit_outer(A: T.Buffer((1, 16), "float32"), C: T.Buffer((1, 16), "float32")):
    B = T.alloc_buffer((1, 16), "float32")
    for i, j in T.grid(1, 16):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)
    for i, j in T.grid(1, 16):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vi, vj] + T.float32(1)


@T.prim_func
def unit_outer_at_j(A: T.Buffer((1, 16), "float32"), C: T.Buffer((1, 16), "float32")):
    B = T.alloc_buffer((1, 16), "float32")
    for i, j in T.grid(1, 16):
        with T.block("B"):
            vi = T.axis.spatial(1, 0)
            vj = T.axis.spatial(16, j)
            B[vi, vj] = A[vi, vj] * T.float32(2)
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vi, vj] + T.float32(1)


@T.prim_func
def reduce_middle(
    A: T.Buffer((8, 8), "float32"), W: T.Buffer((8, 4), "float32"), C: T.Buffer((8, 4), "float32")
):
    B = T.alloc_buffer((8, 8), "float32")
    for i, k in T.grid(8, 8):
        with T.block("B"):
            vi, vk = T.axis.remap("SS", [i, k])
            B[vi, vk] = A[vi, vk] * T.float32(2)
    for i, k, j in T.grid(8, 8, 4):
        with T.block("C"):
            vi, vk, vj = T.axis.remap("SRS", [i, k, j])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + B[vi, vk] * W[vk, vj]


@T.prim_func
def reduce_middle_at_k(
    A: T.Buffer((8, 8), "float32"), W: T.Buffer((8, 4), "float32"), C: T.Buffer((8, 4), "float32")
):
    B = T.alloc_buffer((8, 8), "float32")
    for i, k in T.grid(8, 8):
        with T.block("B"):
            vi, vk = T.axis.remap("SS", [i, k])
            B[vi, vk] = A[vi, vk] * T.float32(2)
        for j in range(4):
            with T.block("C"):
                vi, vk, vj = T.axis.remap("SRS", [i, k, j])
                with T.init():
                    C[vi, vj] = T.float32(0)
                C[vi, vj] = C[vi, vj] + B[vi, vk] * W[vk, vj]


@T.prim_func
def trailing_reduce(
    A: T.Buffer((8, 8), "float32"), W: T.Buffer((8, 4), "float32"), C: T.Buffer((8, 4), "float32")
):
    B = T.alloc_buffer((8, 8), "float32")
    for i, k in T.grid(8, 8):
        with T.block("B"):
            vi, vk = T.axis.remap("SS", [i, k])
            B[vi, vk] = A[vi, vk] * T.float32(2)
    for i, j, k in T.grid(8, 4, 8):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + B[vi, vk] * W[vk, vj]


@T.prim_func
def trailing_reduce_at_j(
    A: T.Buffer((8, 8), "float32"), W: T.Buffer((8, 4), "float32"), C: T.Buffer((8, 4), "float32")
):
    B = T.alloc_buffer((8, 8), "float32")
    for i, j in T.grid(8, 4):
        for ax0 in range(8):
            with T.block("B"):
                vi, vk = T.axis.remap("SS", [i, ax0])
                B[vi, vk] = A[vi, vk] * T.float32(2)
        for k in range(8):
            with T.block("C"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    C[vi, vj] = T.float32(0)
                C[vi, vj] = C[vi, vj] + B[vi, vk] * W[vk, vj]


@T.prim_func
def two_consumers(
    A: T.Buffer((16,), "float32"), C: T.Buffer((16,), "float32"), D: T.Buffer((16,), "float32")
):
    B = T.alloc_buffer((16,), "float32")
    for i in range(16):
        with T.block("B"):
            vi = T.axis.remap("S", [i])
            B[vi] = A[vi] * T.float32(2)
    for i in range(16):
        with T.block("C"):
            vi = T.axis.remap("S", [i])
            C[vi] = B[vi] + T.float32(1)
    for i in range(16):
        with T.block("D"):
            vi = T.axis.remap("S", [i])
            D[vi] = B[vi] - T.float32(1)


def _drawn(func: PrimFunc, seeds: int = 40) -> set[int]:
    counts: Counter[int] = Counter()
    for seed in range(seeds):
        sch = Schedule(func, seed=seed)
        block = sch.get_block("B")
        sch.compute_at(block, sch.sample_compute_location(block))
        counts[sch.trace.insts[-2].decision] += 1  # type: ignore[index]
        check_schedule(sch, func)
    return set(counts)


@pytest.mark.parametrize(
    ("func", "decision", "expected"),
    [
        (unit_outer, 1, unit_outer_at_j),
        (reduce_middle, 1, reduce_middle_at_k),
        (trailing_reduce, 1, trailing_reduce_at_j),
    ],
)
def test_an_offered_loop_is_taken(func: PrimFunc, decision: int, expected: PrimFunc) -> None:
    sch = Schedule(func)
    block = sch.get_block("B")
    sch.compute_at(block, sch.sample_compute_location(block, decision=decision))
    check_schedule(sch, func, expected)


def test_unit_loops_are_not_offered() -> None:
    assert _drawn(unit_outer) == {-2, -1, 1}
    sch = Schedule(unit_outer)
    error = check_refused(
        sch,
        lambda: sch.sample_compute_location("B", decision=0),
        r"location 0; its locations are \[-2, -1, 1\]",
    )
    assert error.rule == "decision"


def test_data_parallel_loops_after_a_reduction_loop_are_not_offered() -> None:
    assert _drawn(reduce_middle) == {-2, -1, 0, 1}
    sch = Schedule(reduce_middle)
    error = check_refused(
        sch,
        lambda: sch.sample_compute_location("B", decision=2),
        r"location 2; its locations are \[-2, -1, 0, 1\]",
    )
    assert error.rule == "decision"


def test_trailing_reduction_loops_are_not_offered() -> None:
    assert _drawn(trailing_reduce) == {-2, -1, 0, 1}
    sch = Schedule(trailing_reduce)
    error = check_refused(
        sch,
        lambda: sch.sample_compute_location("B", decision=2),
        r"location 2; its locations are \[-2, -1, 0, 1\]",
    )
    assert error.rule == "decision"


def test_loops_not_holding_every_consumer_are_not_offered() -> None:
    assert _drawn(two_consumers, seeds=12) == {-2, -1}
    sch = Schedule(two_consumers)
    error = check_refused(
        sch,
        lambda: sch.sample_compute_location("B", decision=0),
        r"location 0; its locations are \[-2, -1\]",
    )
    assert error.rule == "decision"
