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
    # TVM's fuse binds a middle loop as ``f % (below * E) // below``.
    assert "vj = T.axis.spatial(16, i_j_k_fused % 128 // 8)" in sch.mod.script()
    f = tw.build(sch.mod, target="c")
    a = np.random.default_rng(0).random((3, 16, 8), dtype=np.float32)
    b = np.zeros_like(a)
    f(a, b)
    np.testing.assert_allclose(b, 2 * a)


@T.prim_func
def scale_last_symbolic(a: T.handle, b: T.handle):
    n = T.int32()
    A = T.match_buffer(a, (128, 128, n), "float32")
    B = T.match_buffer(b, (128, 128, n), "float32")
    for i, j, k in T.grid(128, 128, n):
        with T.block("B"):
            vi, vj, vk = T.axis.remap("SSS", [i, j, k])
            B[vi, vj, vk] = A[vi, vj, vk] * T.float32(2)


def test_fuse_binds_as_tvm_does() -> None:
    # TVM's test_fuse_symbolic expects these bindings.
    @T.prim_func
    def expected(a: T.handle, b: T.handle):
        n = T.int32()
        A = T.match_buffer(a, (128, 128, n), "float32")
        B = T.match_buffer(b, (128, 128, n), "float32")
        for i_j_k_fused in range(n * 16384):
            with T.block("B"):
                vi = T.axis.spatial(128, i_j_k_fused // (n * 128))
                vj = T.axis.spatial(128, i_j_k_fused % (n * 128) // n)
                vk = T.axis.spatial(n, i_j_k_fused % n)
                B[vi, vj, vk] = A[vi, vj, vk] * T.float32(2)

    sch = Schedule(scale_last_symbolic)
    sch.fuse(*sch.get_loops("B"))
    tw.ir.assert_structural_equal(sch.mod["main"], expected)
    built = tw.build(sch.mod, target="c")
    for n in (1, 3, 5):
        a = np.random.default_rng(n).standard_normal((128, 128, n)).astype("float32")
        b = np.zeros_like(a)
        built(a, b)
        np.testing.assert_allclose(b, a * 2, rtol=1e-6)


@T.prim_func
def scale_by_tiles(a: T.handle, b: T.handle):
    n = T.int32()
    A = T.match_buffer(a, (n, 32), "float32")
    B = T.match_buffer(b, (n, 32), "float32")
    for i in range(n * 32):
        with T.block("B"):
            vi = T.axis.remap("S", [i])
            B[vi // 32, vi % 32] = A[vi // 32, vi % 32] * T.float32(2)


def test_split_of_a_multiple_of_the_factor_needs_no_predicate() -> None:
    # (n * 32 + 31) // 32 is n, and the tiles cover the loop exactly, as TVM finds.
    @T.prim_func
    def expected(a: T.handle, b: T.handle):
        n = T.int32()
        A = T.match_buffer(a, (n, 32), "float32")
        B = T.match_buffer(b, (n, 32), "float32")
        for i_0, i_1 in T.grid(n, 32):
            with T.block("B"):
                vi = T.axis.spatial(n * 32, i_0 * 32 + i_1)
                B[vi // 32, vi % 32] = A[vi // 32, vi % 32] * T.float32(2)

    sch = Schedule(scale_by_tiles)
    sch.split(sch.get_loops("B")[0], [None, 32])
    tw.ir.assert_structural_equal(sch.mod["main"], expected)
    built = tw.build(sch.mod, target="c")
    for n in (1, 4):
        a = np.random.default_rng(n).standard_normal((n, 32)).astype("float32")
        b = np.zeros_like(a)
        built(a, b)
        np.testing.assert_allclose(b, a * 2, rtol=1e-6)
