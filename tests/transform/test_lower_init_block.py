from __future__ import annotations

import pytest

from tilewright.ir import (
    Block,
    BlockRealize,
    IfThenElse,
    IterVar,
    Range,
    assert_structural_equal,
    op,
    seq,
)
from tilewright.script import tir as T
from tilewright.transform import lower_init_block

from .programs import (
    ALL,
    TRUE,
    R,
    S,
    arg,
    assert_passes_preserve,
    const,
    grid,
    root,
    split_reordered_if_init,
    store,
    var,
)


def _matmul_block(with_init: bool, kinds=(S, S, R), k_min: int = 0, guard=None):
    args = [arg("A", (4, 4)), arg("B", (4, 4)), arg("C", (4, 4))]
    (_, a), (_, b), (_, c) = args
    i, j, k, vi, vj, vk = (var(x) for x in ("i", "j", "k", "vi", "vj", "vk"))
    update = store(c, c[vi, vj] + a[vi, vk] * b[vk, vj], vi, vj)
    init = store(c, 0.0, vi, vj)
    doms = [Range(const(0), const(4))] * 2 + [Range(const(k_min), const(4))]
    ivs = tuple(IterVar(v, d, kind) for v, d, kind in zip((vi, vj, vk), doms, kinds))
    if with_init:
        block = Block("C", ivs, (), (), update, init=init)
    else:
        first = init if guard is None else IfThenElse(guard(vi, vj, vk), init)
        block = Block("C", ivs, (), (), seq(first, update))
    body = grid([i, j, k], [4, 4, 4], BlockRealize((i, j, k + k_min), TRUE, block))
    return root(args, body)


def test_init_becomes_guarded_statement_before_the_update():
    expected = _matmul_block(False, guard=lambda vi, vj, vk: op.eq(vk, 0))
    assert_structural_equal(lower_init_block(_matmul_block(True)), expected)


def test_guard_uses_the_domain_start_of_each_reduce_iterator():
    got = lower_init_block(_matmul_block(True, kinds=(S, R, R), k_min=2))
    guard = lambda vi, vj, vk: op.logical_and(op.eq(vj, 0), op.eq(vk, 2))
    assert_structural_equal(got, _matmul_block(False, kinds=(S, R, R), k_min=2, guard=guard))
    assert got.body.block.body.body.body.body.block.init is None


def test_block_without_reduce_iterators_runs_init_unconditionally():
    got = lower_init_block(_matmul_block(True, kinds=(S, S, S)))
    assert_structural_equal(got, _matmul_block(False, kinds=(S, S, S)))


def test_function_without_init_is_returned_unchanged():
    func = ALL["vector_add"]().func
    assert lower_init_block(func) is func


@pytest.mark.parametrize(
    "name", ["matmul", "matmul_split_reordered", "predicated_row_sum", "vector_add"]
)
def test_numeric_results_unchanged(name):
    assert_passes_preserve(ALL[name](), [lower_init_block])


# The same transformation written as scripts: a split, reordered reduction.
@T.prim_func
def _split_reordered(
    A: T.Buffer((8, 16), "float32"),
    B: T.Buffer((16, 12), "float32"),
    C: T.Buffer((8, 12), "float32"),
):
    for k_1, i, k_0, j in T.grid(4, 8, 4, 12):
        with T.block("C"):
            vi = T.axis.spatial(8, i)
            vj = T.axis.spatial(12, j)
            vk = T.axis.reduce(16, k_0 * 4 + k_1)
            T.reads(C[vi, vj], A[vi, vk], B[vk, vj])
            T.writes(C[vi, vj])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]


def test_script_split_reordered_reduction():
    assert_structural_equal(lower_init_block(_split_reordered), split_reordered_if_init)
