"""Programs scheduled with the block primitives (local and shared caches, compute_at,
decompose_reduction, rfactor, inlining, blockize) built for the CPU (``tw.build(...,
target="c")``) compute what numpy computes."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from schedule_corpus import CORPUS, Program, matmul, row_sum, softmax, total_max, two_stage

import tilewright as tw
from tilewright import config
from tilewright.tir import Schedule

pytestmark = pytest.mark.skipif(
    shutil.which(config.get().cc) is None, reason="no C compiler for the CPU target"
)


def _program(name: str) -> Program:
    return next(p for p in CORPUS if p.name == name)


def _check_on_cpu(sch: Schedule, program: Program, seed: int = 0) -> None:
    inputs = program.inputs(np.random.default_rng(seed))
    arrays = [tw.nd.array(x.copy()) for x in inputs]
    tw.build(sch.mod, target="c")["main"](*arrays)
    for got, want in zip(arrays, program.reference(*inputs)):
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-4, atol=1e-4, err_msg=str(sch.trace))


def test_matmul_with_local_accumulator_and_shared_tiles() -> None:
    sch = Schedule(matmul)
    block = sch.get_block("C")
    local = sch.cache_write(block, 0, "local")
    i, j, k = sch.get_loops(block)
    i0, i1 = sch.split(i, [None, 4])
    j0, j1 = sch.split(j, [None, 4])
    k0, k1 = sch.split(k, [None, 5])
    sch.reorder(i0, j0, k0, i1, j1, k1)
    sch.reverse_compute_at(local, j0)
    for index in (0, 1):
        shared = sch.cache_read(block, index, "shared")
        sch.compute_at(shared, k0)
    sch.decompose_reduction(block, k0)
    assert 'scope="shared"' in sch.mod.script() and 'scope="local"' in sch.mod.script()
    _check_on_cpu(sch, _program("matmul"))


def test_two_stage_with_a_local_intermediate_computed_per_row() -> None:
    sch = Schedule(two_stage)
    i, _ = sch.get_loops("C")
    sch.compute_at("B", i)
    sch.set_scope("B", 0, "local")
    _check_on_cpu(sch, _program("two_stage"))


# Factors that divide the reduction: a predicated split would make the loops dependent, and
# reorder refuses those (as TVM does).
@pytest.mark.parametrize(("func", "factor"), [(row_sum, 5), (total_max, 3)], ids=["sum", "max"])
def test_rfactor_then_parallel_partial_results(func, factor: int) -> None:
    program = next(p for p in CORPUS if p.func is func)
    sch = Schedule(func)
    loops = sch.get_loops(program.blocks[0])
    _, inner = sch.split(loops[-1], [None, factor])
    rf = sch.rfactor(inner, 0)
    rf_loops = sch.get_loops(rf)
    sch.reorder(rf_loops[-1], rf_loops[0])
    sch.parallel(rf_loops[-1])
    _check_on_cpu(sch, program)


def test_softmax_inlined_and_blockized() -> None:
    sch = Schedule(softmax)
    sch.compute_inline("exp")
    i, _ = sch.get_loops("norm")
    sch.blockize(i)
    _check_on_cpu(sch, _program("softmax"))
