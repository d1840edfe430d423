"""Printed IR in TVM's canonical forms, where users compare ours with TVM's text."""

from __future__ import annotations

import numpy as np

import tilewright as tw
from tilewright.arith import Analyzer
from tilewright.ir import Var, op
from tilewright.script import tir as T
from tilewright.tir import Schedule


def test_mod_then_div_becomes_div_then_mod() -> None:
    i = Var("i", op.int32)
    simplify = Analyzer().simplify
    assert str(simplify(op.floordiv(op.floormod(i, 16384), 128))) == "i // 128 % 128"
    # Only when the divisor divides the modulus: otherwise the form stays.
    assert str(simplify(op.floordiv(op.floormod(i, 100), 8))) == "i % 100 // 8"
    # Both forms name the same values.
    values = np.arange(-70000, 70000, 7)
    assert np.array_equal(values % 16384 // 128, values // 128 % 128)


@T.prim_func
def scale(a: T.handle, b: T.handle):
    n = T.int32()
    A = T.match_buffer(a, (n, 16, 8), "float32")
    B = T.match_buffer(b, (n, 16, 8), "float32")
    for i, j, k in T.grid(n, 16, 8):
        with T.block("B"):
            vi, vj, vk = T.axis.remap("SSS", [i, j, k])
            B[vi, vj, vk] = A[vi, vj, vk] * T.float32(2)


def test_fusing_symbolic_loops_folds_the_constant_extents() -> None:
    sch = Schedule(scale)
    fused = sch.fuse(*sch.get_loops("B"))
    assert str(sch.get(fused).extent) == "n * 128"
    assert "vj = T.axis.spatial(16, i_j_k_fused // 8 % 16)" in sch.mod.script()
    f = tw.build(sch.mod, target="c")
    a = np.random.default_rng(0).random((3, 16, 8), dtype=np.float32)
    b = np.zeros_like(a)
    f(a, b)
    np.testing.assert_allclose(b, 2 * a)
