"""Differential fuzzing: random sequences of loop primitives on the corpus must compute what
numpy computes, replay from their trace (and its JSON) to the same IR, and leave the schedule
untouched when a primitive refuses."""

from __future__ import annotations

import random

import pytest
from schedule_checks import check_fuzzed
from schedule_corpus import CORPUS, Program

from tilewright import config
from tilewright.ir import IntImm
from tilewright.schedule import Schedule, ScheduleError

THREAD_TAGS = ("blockIdx.x", "blockIdx.y", "threadIdx.x", "threadIdx.y", "vthread.x")


def _factors(rng: random.Random, extent: int) -> list[int | None]:
    count = rng.choice((2, 2, 3))
    factors: list[int | None] = [rng.randint(1, max(1, extent)) for _ in range(count)]
    if rng.random() < 0.5:
        divisors = [d for d in range(1, extent + 1) if extent % d == 0]
        factors = [rng.choice(divisors) for _ in range(count)]
    factors[rng.randrange(count)] = None
    return factors


def _step(sch: Schedule, program: Program, rng: random.Random) -> None:
    block = sch.get_block(rng.choice(program.blocks))
    loops = sch.get_loops(block)
    if not loops:
        sch.add_unit_loop(block)
        return
    loop = rng.choice(loops)
    choice = rng.choice(
        ("split", "split", "split", "fuse", "fuse", "reorder", "reorder", "kind", "annotate")
    )
    if choice == "split":
        extent = sch.get(loop).extent
        if isinstance(extent, IntImm):
            sch.split(loop, _factors(rng, extent.value), preserve_unit_iters=rng.random() < 0.8)
    elif choice == "fuse":
        start = rng.randrange(len(loops))
        count = rng.choice((2, 2, 3))
        sch.fuse(*loops[start : start + count], preserve_unit_iters=rng.random() < 0.8)
    elif choice == "reorder":
        chosen = rng.sample(loops, min(len(loops), rng.randint(2, 4)))
        sch.reorder(*chosen)
    elif choice == "kind":
        kind = rng.choice(("parallel", "vectorize", "unroll", "bind", "add_unit_loop"))
        if kind == "bind":
            sch.bind(loop, rng.choice(THREAD_TAGS))
        elif kind == "add_unit_loop" and rng.random() < 0.5:
            sch.add_unit_loop(block)
        else:
            getattr(sch, kind)(loop)
    else:
        target = block if rng.random() < 0.5 else loop
        key = rng.choice(("pragma_a", "pragma_b"))
        if rng.random() < 0.3:
            sch.unannotate(target, key)  # refused unless set before
        else:
            sch.annotate(target, key, rng.randint(0, 4))


def _apply_random(sch: Schedule, program: Program, rng: random.Random) -> int:
    refused = 0
    for _ in range(rng.randint(1, 7)):
        before_mod, before_trace = sch.mod, len(sch.trace)
        try:
            _step(sch, program, rng)
        except ScheduleError:
            refused += 1
            assert sch.mod is before_mod, "a refused primitive changed the module"
            # Only the queries made before the refusal (get_block, get_loops) were recorded.
            kinds = [inst.kind for inst in sch.trace.insts[before_trace:]]
            assert set(kinds) <= {"get_block", "get_loops"}, kinds
    return refused


@pytest.mark.parametrize("case", range(config.get().fuzz_cases))
def test_random_schedule_matches_numpy(case: int) -> None:
    rng = random.Random(case)
    program = CORPUS[case % len(CORPUS)]
    sch = Schedule(program.func)
    _apply_random(sch, program, rng)
    if rng.random() < 0.25:
        # A copy diverges without touching the original.
        before, trace = sch.mod, str(sch.trace)
        _apply_random(sch.copy(), program, rng)
        assert sch.mod is before and str(sch.trace) == trace

    check_fuzzed(sch, program, case, print_every=5)
