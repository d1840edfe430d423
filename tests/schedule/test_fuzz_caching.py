"""Differential fuzzing of the block primitives: random sequences mixing caching, compute
location, inlining, reductions (rfactor on sums and maxima, decompose_reduction) and blockize
with the loop primitives must compute what numpy computes, replay from their trace (and its
JSON) to the same IR, and leave the schedule untouched when a primitive refuses."""

from __future__ import annotations

import random

import numpy as np
import pytest
from evaluator import run
from schedule_checks import check_fuzzed
from schedule_corpus import CORPUS, Program
from test_fuzz_loops import _step as loop_step

from tilewright import config
from tilewright.ir import Block, IterKind, pre_order_visit
from tilewright.schedule import Schedule, ScheduleError

SCOPES = ("global", "shared", "local")
QUERIES = {"get_block", "get_loops", "get_child_blocks", "get_producers", "get_consumers"}


def _blocks(sch: Schedule) -> list[Block]:
    found: list[Block] = []
    pre_order_visit(
        sch.mod["main"].body,
        lambda n: found.append(n) if isinstance(n, Block) and n.name != "root" else None,
    )
    return found


def _attempt(sch: Schedule, call) -> None:
    """A follow-up call: if refused, the schedule stays as the first call left it."""
    before = sch.mod
    try:
        call()
    except ScheduleError:
        assert sch.mod is before, "a refused primitive changed the module"


def _block_step(sch: Schedule, rng: random.Random) -> None:
    blocks = _blocks(sch)
    chosen = rng.choice(blocks)
    block = sch.get_block(chosen.name)
    kind = rng.choice(
        (
            "cache_read",
            "cache_write",
            "compute_at",
            "compute_at",
            "reverse_compute_at",
            "compute_inline",
            "reverse_compute_inline",
            "decompose",
            "rfactor",
            "rfactor",
            "blockize",
            "scope",
        )
    )
    if kind == "cache_read" and chosen.reads:
        cache = sch.cache_read(block, rng.randrange(len(chosen.reads)), rng.choice(SCOPES))
        loops = sch.get_loops(block)
        if loops and rng.random() < 0.7:
            loop, keep = rng.choice(loops), rng.random() < 0.3
            _attempt(sch, lambda: sch.compute_at(cache, loop, preserve_unit_loops=keep))
    elif kind == "cache_write":
        cache = sch.cache_write(block, 0, rng.choice(SCOPES))
        loops = sch.get_loops(block)
        if loops and rng.random() < 0.7:
            loop, keep = rng.choice(loops), rng.random() < 0.3
            _attempt(sch, lambda: sch.reverse_compute_at(cache, loop, keep))
    elif kind in ("compute_at", "reverse_compute_at"):
        other = sch.get_block(rng.choice(blocks).name)
        loops = sch.get_loops(other)
        if loops:
            getattr(sch, kind)(block, rng.choice(loops), rng.random() < 0.3)
    elif kind == "compute_inline":
        sch.compute_inline(block)
    elif kind == "reverse_compute_inline":
        sch.reverse_compute_inline(block)
    elif kind == "decompose":
        loops = sch.get_loops(block)
        if loops:
            sch.decompose_reduction(block, rng.choice(loops))
    elif kind == "rfactor":
        loops = sch.get_loops(block)
        if loops:
            sch.rfactor(rng.choice(loops), rng.randint(0, 1))
    elif kind == "blockize":
        loops = sch.get_loops(block)
        if loops:
            sch.blockize(rng.choice(loops))
    elif chosen.writes:
        if rng.random() < 0.5:
            sch.set_scope(block, 0, rng.choice(SCOPES))
        else:
            sch.storage_align(block, 0, 0, rng.choice((4, 8)), rng.randint(0, 3))


def _apply_random(sch: Schedule, program: Program, rng: random.Random) -> tuple[int, int]:
    refused = accepted = 0
    for _ in range(rng.randint(2, 8)):
        before_mod, before_trace = sch.mod, len(sch.trace)
        try:
            if rng.random() < 0.6:
                _block_step(sch, rng)
            else:
                names = tuple(b.name for b in _blocks(sch))
                loop_step(
                    sch, Program(program.name, program.func, names, (), program.reference), rng
                )
            accepted += 1
        except ScheduleError:
            refused += 1
            assert sch.mod is before_mod, "a refused primitive changed the module"
            kinds = {inst.kind for inst in sch.trace.insts[before_trace:]}
            assert kinds <= QUERIES, kinds
    return refused, accepted


def _has_reduction(sch: Schedule) -> bool:
    return any(iv.kind is IterKind.REDUCE for b in _blocks(sch) for iv in b.iter_vars)


@pytest.mark.parametrize("case", range(config.get().fuzz_cases))
def test_random_block_schedule_matches_numpy(case: int) -> None:
    rng = random.Random(7919 * case + 1)
    program = CORPUS[case % len(CORPUS)]
    sch = Schedule(program.func)
    _apply_random(sch, program, rng)

    check_fuzzed(sch, program, case, print_every=3)


@pytest.mark.parametrize("program", [p for p in CORPUS if p.name in ("row_sum", "total_max")])
def test_rfactor_of_sums_and_maxima_at_random_splits(program: Program) -> None:
    for seed in range(8):
        rng = random.Random(seed)
        sch = Schedule(program.func)
        loops = sch.get_loops(program.blocks[0])
        reduce_loop = loops[-1]
        extent = sch.get(reduce_loop).extent.value  # type: ignore[union-attr]
        factor = rng.choice([d for d in range(1, extent + 1) if extent % d == 0] + [4])
        outer, inner = sch.split(reduce_loop, [None, factor])
        if extent % factor:  # the split's predicate: refused, as TVM does
            with pytest.raises(ScheduleError, match="predicate"):
                sch.rfactor(rng.choice((outer, inner)), rng.randint(0, 1))
            continue
        sch.rfactor(rng.choice((outer, inner)), rng.randint(0, 1))
        inputs = program.inputs(np.random.default_rng(seed))
        for got, want in zip(run(sch.mod["main"], *inputs), program.reference(*inputs)):
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4, err_msg=str(sch.trace))
        assert _has_reduction(sch)


def test_compute_inline_of_elementwise_producers_in_random_orders() -> None:
    program = next(p for p in CORPUS if p.name == "two_stage")
    for seed in range(6):
        rng = random.Random(seed)
        sch = Schedule(program.func)
        loop_step(sch, program, rng) if rng.random() < 0.5 else None
        try:
            sch.compute_inline("B")
        except ScheduleError as err:  # only after a loop step that fused B with C
            assert err.rule in ("location", "data-flow", "inline-body"), err
            continue
        assert [b.name for b in _blocks(sch)] == ["C"]
        inputs = program.inputs(np.random.default_rng(seed))
        for got, want in zip(run(sch.mod["main"], *inputs), program.reference(*inputs)):
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
