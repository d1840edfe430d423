"""Scheduled programs built for the CPU (``tw.build(..., target="c")``) compute what numpy
computes: a tiled matmul with parallel, vectorized and unrolled loops, and random loop
schedules of the corpus."""

from __future__ import annotations

import random
import shutil

import numpy as np
import pytest
from schedule_corpus import CORPUS, Program, matmul
from test_fuzz_loops import _apply_random

import tilewright as tw
from tilewright import config
from tilewright.ir import For, ForKind, post_order_visit
from tilewright.tir import Schedule

pytestmark = pytest.mark.skipif(
    shutil.which(config.get().cc) is None, reason="no C compiler for the CPU target"
)


def _kinds(mod: tw.IRModule) -> set[ForKind]:
    kinds: set[ForKind] = set()
    post_order_visit(mod["main"].body, lambda n: kinds.add(n.kind) if isinstance(n, For) else None)
    return kinds


def _check_on_cpu(sch: Schedule, program: Program, seed: int) -> None:
    inputs = program.inputs(np.random.default_rng(seed))
    arrays = [tw.nd.array(x.copy()) for x in inputs]
    tw.build(sch.mod, target="c")["main"](*arrays)
    for got, want in zip(arrays, program.reference(*inputs)):
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-4, atol=1e-4, err_msg=str(sch.trace))


def test_tiled_matmul_with_parallel_vectorized_and_unrolled_loops() -> None:
    sch = Schedule(matmul)
    i, j, k = sch.get_loops("C")
    i0, i1 = sch.split(i, [None, 4])
    j0, j1 = sch.split(j, [None, 4])
    k0, k1 = sch.split(k, [None, 3])  # 10 is not a multiple of 3: a predicate
    sch.reorder(i0, j0, k0, i1, k1, j1)
    sch.parallel(sch.fuse(i0, j0))
    sch.unroll(k1)
    sch.vectorize(j1)
    assert {ForKind.PARALLEL, ForKind.UNROLLED, ForKind.VECTORIZED} <= _kinds(sch.mod)
    _check_on_cpu(sch, CORPUS[0], 0)


@pytest.mark.parametrize("case", range(12))
def test_random_cpu_schedule_matches_numpy(case: int) -> None:
    program = CORPUS[case % len(CORPUS)]
    for attempt in range(20):
        rng = random.Random(1000 * case + attempt)
        sch = Schedule(program.func)
        _apply_random(sch, program, rng)
        if ForKind.THREAD_BINDING not in _kinds(sch.mod):  # thread axes are for GPU targets
            break
    _check_on_cpu(sch, program, case)
