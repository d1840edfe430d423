"""A design space's trace with its decisions removed (``Trace(insts, {})``, as TVM's
``ReplayTrace`` replays it) replays, for any seed, into a schedule of the same design space:
the same instructions in the same order, fresh decisions from the schedule's generator, a
well-formed module that computes what the workload computes, and a trace that replays to
that module again."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

import tilewright as tw
from tilewright import meta_schedule as ms
from tilewright.ir import assert_structural_equal
from tilewright.meta_schedule.testing.workloads import WORKLOADS
from tilewright.schedule import Schedule, Trace

sys.path.insert(0, str(Path(__file__).parents[1] / "schedule"))
from schedule_checks import check_well_formed

SEEDS = range(4)
NUMERIC_SEEDS = 2  # built and run as C: the first two seeds


def _spaces(name: str, target: str) -> tuple[tw.IRModule, list[Schedule]]:
    workload = WORKLOADS[name]
    sizes = workload.small if target == "llvm" else workload.sizes
    mod = tw.IRModule({"main": workload.func(**sizes)})
    ctx = ms.TuneContext(mod, target=target, task_name=name, rand_state=3)
    return mod, ctx.generate_design_space()


def _resampled(space: Schedule, mod: tw.IRModule, seed: int) -> Schedule:
    design = space.trace
    bare = Trace(design.insts, {})
    assert bare.decisions == {}
    sch = Schedule(mod, seed=seed)
    bare.apply_to_schedule(sch, remove_postproc=True)
    # The same design space: instruction for instruction, every sampling one decided anew.
    kept = [i for i in design.insts if not i.kind.is_postproc][: len(sch.trace.insts)]
    assert [i.kind for i in sch.trace.insts] == [i.kind for i in kept]
    assert len(sch.trace.insts) == len(kept)
    sampled = [i for i in sch.trace.insts if i.kind.sampling]
    assert all(i.decision is not None for i in sampled)
    for _, func in sch.mod.items():
        check_well_formed(func)
    replayed = Schedule(mod)
    Trace.from_json(json.dumps(sch.trace.as_json())).apply_to_schedule(replayed)
    assert_structural_equal(replayed.mod, sch.mod)
    return sch


def _decisions(sch: Schedule) -> list[object]:
    return [i.decision for i in sch.trace.insts if i.kind.sampling]


@pytest.mark.parametrize("name", ["matmul", "matmul_bias_relu", "softmax", "window_sum"])
def test_cpu_spaces_replay_with_fresh_decisions(name: str) -> None:
    workload = WORKLOADS[name]
    mod, spaces = _spaces(name, "llvm")
    assert spaces
    for space in spaces:
        drawn = set()
        for seed in SEEDS:
            sch = _resampled(space, mod, seed)
            drawn.add(repr(_decisions(sch)))
            if seed >= NUMERIC_SEEDS:
                continue
            inputs = workload.inputs(np.random.default_rng(seed), **workload.small)
            args = [tw.nd.array(a) for a in inputs]
            tw.build(sch.mod, target="llvm")["main"](*args)
            want = workload.reference(*inputs)
            for got, expected in zip([a.numpy() for a in args], want):
                np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)
        if _decisions(space):
            assert len(drawn) > 1, f"{name}: every seed drew the same decisions"


@pytest.mark.parametrize("name", ["matmul", "softmax", "batch_matmul"])
def test_gpu_spaces_replay_with_fresh_decisions(name: str) -> None:
    mod, spaces = _spaces(name, "cuda")
    assert spaces
    for space in spaces:
        drawn = {repr(_decisions(_resampled(space, mod, seed))) for seed in SEEDS}
        if _decisions(space):
            assert len(drawn) > 1, f"{name}: every seed drew the same decisions"
