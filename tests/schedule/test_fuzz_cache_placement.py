"""Differential fuzzing of where cache_read and cache_write put their copy when consumers sit
inside their producer's loops: programs with one producer and two or three consumers, the
consumers moved into the producer's loop nest (``reverse_compute_at``, at random depths, after
random splits), then cached (random consumer subsets, scopes, orders) and the copies moved
(``compute_at`` / ``reverse_compute_at``). Every schedule must compute what numpy computes,
replay from its trace, and stay untouched where a primitive refuses.

``TILEWRIGHT_FUZZ_CASES`` sets the number of cases (the default run takes the configured
count; the issue's check ran 2,000)."""

from __future__ import annotations

import random

import numpy as np
import pytest
from schedule_checks import check_fuzzed
from schedule_corpus import Program

from tilewright import config
from tilewright.schedule import Schedule, ScheduleError
from tilewright.script import tir as T

SCOPES = ("global", "shared", "local")


@T.prim_func
def two_consumers(
    A: T.Buffer((8, 12), "float32"),
    C: T.Buffer((8, 12), "float32"),
    D: T.Buffer((8, 12), "float32"),
):
    B = T.alloc_buffer((8, 12))
    for i, j in T.grid(8, 12):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)
    for i, j in T.grid(8, 12):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vi, vj] + T.float32(1)
    for i, j in T.grid(8, 12):
        with T.block("D"):
            vi, vj = T.axis.remap("SS", [i, j])
            D[vi, vj] = B[vi, vj] * A[vi, vj]


@T.prim_func
def window_and_sum(
    A: T.Buffer((8, 12), "float32"), C: T.Buffer((8, 10), "float32"), D: T.Buffer((8,), "float32")
):
    B = T.alloc_buffer((8, 12))
    for i, j in T.grid(8, 12):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] + T.float32(1)
    for i, j in T.grid(8, 10):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vi, vj] - B[vi, vj + 2]
    for i, j in T.grid(8, 12):
        with T.block("D"):
            vi, vj = T.axis.remap("SR", [i, j])
            with T.init():
                D[vi] = T.float32(0)
            D[vi] = D[vi] + B[vi, vj]


@T.prim_func
def chain_of_three(
    A: T.Buffer((8, 12), "float32"),
    C: T.Buffer((8, 12), "float32"),
    D: T.Buffer((8, 12), "float32"),
    E: T.Buffer((8, 12), "float32"),
):
    B = T.alloc_buffer((8, 12))
    for i, j in T.grid(8, 12):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * A[vi, vj]
    for i, j in T.grid(8, 12):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vi, vj] * T.float32(3)
    for i, j in T.grid(8, 12):
        with T.block("D"):
            vi, vj = T.axis.remap("SS", [i, j])
            D[vi, vj] = C[vi, vj] + B[vi, vj]
    for i, j in T.grid(8, 12):
        with T.block("E"):
            vi, vj = T.axis.remap("SS", [i, j])
            E[vi, vj] = B[vi, vj] - T.float32(1)


PROGRAMS = (
    Program(
        "two_consumers",
        two_consumers,
        ("B", "C", "D"),
        ((8, 12), (8, 12), (8, 12)),
        lambda a, c, d: [a, a * 2 + 1, a * 2 * a],
    ),
    Program(
        "window_and_sum",
        window_and_sum,
        ("B", "C", "D"),
        ((8, 12), (8, 10), (8,)),
        lambda a, c, d: [a, (a + 1)[:, :10] - (a + 1)[:, 2:], (a + 1).sum(axis=1)],
    ),
    Program(
        "chain_of_three",
        chain_of_three,
        ("B", "C", "D", "E"),
        ((8, 12), (8, 12), (8, 12), (8, 12)),
        lambda a, c, d, e: [a, a * a * 3, a * a * 4, a * a - 1],
    ),
)


def _try(sch: Schedule, call) -> bool:
    """Run one step; a refusal must leave the module as it was."""
    before = sch.mod
    try:
        call()
    except ScheduleError:
        assert sch.mod is before, "a refused primitive changed the module"
        return False
    return True


def _consumers_into_producer(sch: Schedule, program: Program, rng: random.Random) -> None:
    """Split the producer's loops at random, then move consumers into its nest."""
    producer = sch.get_block("B")
    for loop in sch.get_loops(producer):
        if rng.random() < 0.3:
            extent = int(sch.get(loop).extent)
            factors = [f for f in (2, 3, 4) if extent % f == 0]
            if factors:
                sch.split(loop, [None, rng.choice(factors)])
    for name in program.blocks[1:]:
        if rng.random() < 0.8:
            loops = sch.get_loops(sch.get_block("B"))
            loop = rng.choice(loops)
            keep = rng.random() < 0.3
            _try(
                sch, lambda n=name, lp=loop, k=keep: sch.reverse_compute_at(sch.get_block(n), lp, k)
            )


def _cache_steps(sch: Schedule, program: Program, rng: random.Random) -> None:
    readers = list(program.blocks[1:])
    for _ in range(rng.randint(1, 3)):
        kind = rng.choice(("read", "read", "read_subset", "write", "input"))
        scope = rng.choice(SCOPES)
        if kind == "write":
            target = sch.get_block("B")
            written: list = []
            made = _try(
                sch, lambda w=written, t=target, s=scope: w.append(sch.cache_write(t, 0, s))
            )
            loops = sch.get_loops(target)
            if made and loops and rng.random() < 0.5:
                loop = rng.choice(loops)
                _try(sch, lambda w=written, lp=loop: sch.reverse_compute_at(w[0], lp))
            continue
        name = rng.choice(readers)
        block = sch.get_block(name)
        reads = [r.buffer.name for r in sch.get(block).reads]
        wanted = "A" if kind == "input" else "B"
        if wanted not in reads:
            continue
        index = reads.index(wanted)
        consumers = None
        if kind == "read_subset":
            chosen = [n for n in readers if rng.random() < 0.5] or [name]
            consumers = [sch.get_block(n) for n in chosen]
        holder: list = []
        made = _try(
            sch,
            lambda h=holder, b=block, i=index, s=scope, c=consumers: h.append(
                sch.cache_read(b, i, s, consumer_blocks=c)
            ),
        )
        if made and rng.random() < 0.5:
            loops = sch.get_loops(block)
            if loops:
                loop = rng.choice(loops)
                _try(sch, lambda h=holder, lp=loop: sch.compute_at(h[0], lp))


@pytest.mark.parametrize("case", range(config.get().fuzz_cases))
def test_caches_of_consumers_inside_producer_loops_match_numpy(case: int) -> None:
    rng = random.Random(104729 * case + 17)
    program = PROGRAMS[case % len(PROGRAMS)]
    sch = Schedule(program.func)
    _consumers_into_producer(sch, program, rng)
    _cache_steps(sch, program, rng)
    check_fuzzed(sch, program, case, print_every=5)


def test_the_fuzz_puts_consumers_inside_the_producer_loop() -> None:
    """The draw is not vacuous: most cases cache a buffer whose consumer shares a loop with
    its producer."""
    shared = 0
    for case in range(60):
        rng = random.Random(104729 * case + 17)
        program = PROGRAMS[case % len(PROGRAMS)]
        sch = Schedule(program.func)
        _consumers_into_producer(sch, program, rng)
        producer_loops = {id(sch.get(lp)) for lp in sch.get_loops(sch.get_block("B"))}
        for name in program.blocks[1:]:
            loops = sch.get_loops(sch.get_block(name))
            if any(id(sch.get(lp)) in producer_loops for lp in loops):
                shared += 1
                break
    assert shared >= 30, shared


def test_numpy_references_hold() -> None:
    rng = np.random.default_rng(0)
    for program in PROGRAMS:
        inputs = program.inputs(rng)
        outputs = program.reference(*inputs)
        assert len(outputs) == len(program.shapes)
        for got, shape in zip(outputs, program.shapes, strict=True):
            assert got.shape == shape
