"""Symbolic interval sets: eval_set relaxation, set operations and conversion to ranges."""

from __future__ import annotations

import pytest

from tilewright.arith import Analyzer, IntervalSet, eval_set
from tilewright.arith.linear_form import same
from tilewright.ir import op
from tilewright.ir.dtype import int32
from tilewright.ir.expr import IntImm, Range, Var

x, y, i, j, n, i0, i1 = (Var(name, int32) for name in ("x", "y", "i", "j", "n", "i_0", "i_1"))


def R(lo, extent):
    return Range.from_min_extent(lo, extent)


def c(value):
    return IntImm(value, int32)


def check(got, lo, hi):
    for end, want in ((got.min_value, lo), (got.max_value, hi)):
        if want is None:
            assert end is None, f"{got!r}: expected an unbounded side"
        else:
            want = op.convert(want)
            assert end is not None and same(end, want), f"{got!r}: want [{lo!r}, {hi!r}]"


CASES = [
    ("inner_relaxed", i0 * 128 + i1, {i1: R(0, 128)}, i0 * 128, i0 * 128 + 127),
    ("both_relaxed", i0 * 128 + i1, {i0: R(0, 8), i1: R(0, 128)}, 0, 1023),
    ("negative_coef", 10 - i, {i: R(0, 4)}, 7, 10),
    ("unmapped_stays", x + y, {x: R(0, 4)}, y, y + 3),
    ("symbolic_extent", i * 4 + j, {i: R(0, n)}, j, n * 4 + j - 4),
    ("floordiv", i // 8, {i: R(0, 64)}, 0, 7),
    ("floordiv_symbolic", (x + i) // 4, {i: R(0, 4)}, x // 4, (x + 3) // 4),
    ("floormod_full", i % 8, {i: R(0, 64)}, 0, 7),
    ("floormod_one_block", (i0 * 8 + i1) % 8, {i1: R(0, 4)}, 0, 3),
    ("truncmod_unknown_sign", op.truncmod(x, 8), {x: R(-3, 10)}, -7, 7),
    ("truncmod_nonneg", op.truncmod(i, 8), {i: R(0, 64)}, 0, 7),
    ("min", op.min_value(i, 5), {i: R(0, 8)}, 0, 5),
    ("max", op.max_value(i, j), {i: R(0, 8)}, op.max_value(0, j), op.max_value(7, j)),
    ("select", op.select(op.lt(x, y), i, i + 10), {i: R(0, 4)}, 0, 13),
    ("compare", op.lt(i, y), {i: R(0, 4)}, op.convert(False), op.convert(True)),
    ("product_of_ranges", i * j, {i: R(-2, 5), j: R(1, 3)}, -6, 6),
    ("point", x * 2, {}, x * 2, x * 2),
]


@pytest.mark.parametrize(("name", "expr", "dom", "lo", "hi"), CASES, ids=[c[0] for c in CASES])
def test_eval_set_table(name, expr, dom, lo, hi):
    check(eval_set(expr, dom), lo, hi)


def test_unknown_sign_product_is_unbounded():
    check(eval_set(i * x, {i: R(0, 4)}), None, None)


def test_analyzer_knows_sign_of_factor():
    ana = Analyzer()
    ana.bind(x, R(1, 4))
    check(eval_set(i * x, {i: R(0, 4)}, ana), 0, x * 3)


def test_interval_set_as_domain():
    check(eval_set(i * 2 + 1, {i: IntervalSet.interval(n, n + 3)}), n * 2 + 1, n * 2 + 7)


def test_analyzer_int_set_relaxes_bound_ranges():
    ana = Analyzer()
    ana.bind(i, R(0, 16))
    check(ana.int_set(i // 4 + x), x, x + 3)
    check(ana.int_set(i + x, {}), i + x, i + x)


def test_union_intersect_and_points():
    a = IntervalSet.interval(0, 7)
    b = IntervalSet.interval(4, 12)
    check(a.union(b), 0, 12)
    check(a.intersect(b), 4, 7)
    check(a.union(IntervalSet.everything()), None, None)
    check(a.intersect(IntervalSet.interval(None, 5)), 0, 5)
    assert IntervalSet.single_point(x + 1).is_single_point()
    assert IntervalSet(x * 2 - x, x).is_single_point()
    assert not a.is_single_point()
    assert IntervalSet.everything().is_everything and not a.is_everything


def test_to_range():
    rng = eval_set(i0 * 128 + i1, {i1: R(0, 128)}).to_range()
    assert same(rng.min, i0 * 128) and same(rng.extent, c(128))
    whole = IntervalSet.from_range(R(3, n)).to_range()
    assert same(whole.min, c(3)) and same(whole.extent, n)


def test_to_range_of_unbounded_set_raises():
    with pytest.raises(ValueError, match="cannot make a Range of the unbounded interval"):
        IntervalSet.interval(0, None).to_range()


def test_repr_names_the_ends():
    assert repr(IntervalSet.interval(0, None)) == "IntervalSet[0, +inf]"
