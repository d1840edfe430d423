"""Affine iterator maps: splits and fusions recognised, canonical forms, failures explained,
and (hypothesis) canonical forms that evaluate like the expressions they replace."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tilewright.arith.iter_map import (
    NotAffine,
    detect_iter_map,
    is_affine,
    iter_map_simplify,
    normalize,
)
from tilewright.ir import IntImm, PrimExpr, Range, Var, dtype, structural_equal
from tilewright.ir.op import floordiv, floormod

I32 = dtype("int32")


def loops(**extents: int) -> tuple[list[Var], dict[Var, Range]]:
    variables = [Var(name, I32) for name in extents]
    dom = {v: Range(IntImm(0, I32), IntImm(e, I32)) for v, e in zip(variables, extents.values())}
    return variables, dom


def evaluate(expr: PrimExpr, env: dict[Var, int]) -> int:
    from tilewright.ir import Add, FloorDiv, FloorMod, Mul, Sub

    if isinstance(expr, Var):
        return env[expr]
    if isinstance(expr, IntImm):
        return expr.value
    a, b = evaluate(expr.a, env), evaluate(expr.b, env)  # type: ignore[attr-defined]
    ops = {Add: a + b, Sub: a - b, Mul: a * b}
    if isinstance(expr, FloorDiv):
        return a // b
    if isinstance(expr, FloorMod):
        return a % b
    return ops[type(expr)]


def test_split_is_two_scaled_pieces() -> None:
    (i0, i1), dom = loops(i_0=8, i_1=128)
    total = normalize(i0 * 128 + i1, dom)
    assert [(a.mark.source, a.scale) for a in total.args] == [(i0, 128), (i1, 1)]
    assert total.base == 0


def test_fused_loop_pieces_share_one_mark() -> None:
    (f,), dom = loops(f=64)
    result = detect_iter_map([floordiv(f, 8), floormod(f, 8)], dom)
    assert result, result.errors
    (hi,), (lo,) = (s.args for s in result.indices)
    assert hi.mark == lo.mark
    assert (hi.lower_factor, hi.extent, lo.lower_factor, lo.extent) == (8, 8, 1, 8)


def test_notebook_bindings_keep_their_printed_form() -> None:
    (i0, f, i2), dom = loops(i_0=16, i_1_j_1_fused=64, i_2=8)
    vi = i0 * 64 + floordiv(f, 8) * 8 + i2
    (j0, j2), dom2 = loops(j_0=16, j_2=8)
    vj = j0 * 64 + floormod(f, 8) * 8 + j2
    out = iter_map_simplify([vi, vj], {**dom, **dom2})
    assert [str(e) for e in out] == [
        "i_0 * 64 + i_1_j_1_fused // 8 * 8 + i_2",
        "j_0 * 64 + i_1_j_1_fused % 8 * 8 + j_2",
    ]


def test_split_of_a_fused_loop_prints_the_fused_sum() -> None:
    (f0, f1, f2), dom = loops(f_0=2, f_1=64, f_2=4)
    fused = f0 * 256 + f1 * 4 + f2
    out = iter_map_simplify([floordiv(fused, 8), floormod(fused, 8)], dom)
    assert [str(e) for e in out] == [
        "(f_0 * 256 + f_1 * 4 + f_2) // 8",
        "(f_0 * 256 + f_1 * 4 + f_2) % 8",
    ]


def test_middle_piece_is_mod_then_div() -> None:
    (f,), dom = loops(f=512)
    out = iter_map_simplify([floordiv(f, 32), floordiv(floormod(f, 32), 4), floormod(f, 4)], dom)
    assert [str(e) for e in out] == ["f // 32", "f % 32 // 4", "f % 4"]
    div_mod = iter_map_simplify([floormod(floordiv(f, 4), 8)], dom)
    assert str(div_mod[0]) == "f % 32 // 4"


def test_pieces_glued_back_give_the_loop() -> None:
    (f,), dom = loops(f=64)
    (out,) = iter_map_simplify([floordiv(f, 8) * 8 + floormod(f, 8)], dom)
    assert out is f


def test_predicate_bounds_a_non_divisible_fusion() -> None:
    (i0, i1), dom = loops(i_0=8, i_1=128)
    value = i0 * 128 + i1
    result = detect_iter_map([floordiv(value, 10)], dom, value < 1000)
    assert result, result.errors
    (split,) = result.indices[0].args
    assert split.mark.extent == 1000
    unbounded = detect_iter_map([floordiv(value, 10)], dom)
    assert not unbounded
    assert "// 10 does not divide the iteration extent 1024" in unbounded.errors[0]


def test_overlap_is_not_a_surjective_map() -> None:
    (i, j), dom = loops(i=8, j=8)
    result = detect_iter_map([i, i + 0 * j], dom)
    assert not result
    assert result.errors == ("two indices use overlapping parts of loop i",)


def test_a_sum_with_a_gap_does_not_fuse() -> None:
    (i, j), dom = loops(i=4, j=4)
    result = detect_iter_map([i * 5 + j], dom)
    assert not result
    assert "do not tile one iteration space" in result.errors[0]


def test_bijective_needs_every_loop() -> None:
    (i, _), dom = loops(i=4, j=4)
    assert detect_iter_map([i], dom, check_level="surjective")
    result = detect_iter_map([i], dom, check_level="bijective")
    assert result.errors == ("loop j is not used by any index",)


def test_unit_loops_may_be_dropped() -> None:
    (i0, i1), dom = loops(i_0=1, i_1=128)
    (kept,) = iter_map_simplify([i0 * 128 + i1], dom)
    (dropped,) = iter_map_simplify([i0 * 128 + i1], dom, drop_unit_iters=True)
    assert str(kept) == "i_0 * 128 + i_1"
    assert dropped is i1


def test_unit_piece_between_equal_scales_still_fuses() -> None:
    (a, b, c), dom = loops(a=2, b=1, c=64)
    assert detect_iter_map([a * 64 + b * 64 + c], dom)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda i, j: i * j, "a product of two loop iterators is not affine"),
        (lambda i, j: floordiv(i, j), "depends on a loop iterator"),
        (lambda i, j: floordiv(i, -2), "the divisor must be a positive constant"),
        (lambda i, j: floordiv(i, 3), "// 3 does not divide the iteration extent 8"),
        (lambda i, j: floordiv(7 - i, 2), "a negative coefficient"),
    ],
)
def test_not_affine_says_why(make, message: str) -> None:
    (i, j), dom = loops(i=8, j=8)
    expr = make(i, j)
    reason = is_affine([expr], dom)
    assert reason is not None and message in reason
    with pytest.raises(NotAffine, match=message):
        normalize(expr, dom)


def test_symbolic_extent_fusion_splits_by_the_symbol() -> None:
    n = Var("n", I32)
    f = Var("f", I32)
    dom = {f: Range(IntImm(0, I32), 8 * n)}
    result = detect_iter_map([floordiv(f, n), floormod(f, n)], dom)
    assert result, result.errors
    assert [str(e) for e in iter_map_simplify([floordiv(f, n), floormod(f, n)], dom)] == [
        "f // n",
        "f % n",
    ]
    failed = detect_iter_map([floordiv(f, n + 1)], dom)
    assert not failed and "cannot tell that n + 1 divides" in failed.errors[0]
    # Lenient: a loop-invariant divisor keeps the binding affine for legality checks.
    assert is_affine([floordiv(f, n + 1)], dom) is None


def test_symbolic_coefficients_are_affine() -> None:
    (j0, j1), dom = loops(j_0=10, j_1=4)
    n = Var("n", I32)
    assert is_affine([j0 * floordiv(n + 9, 10) + j1], dom) is None
    reason = is_affine([j0 * j1 * n], dom)
    assert reason is not None and "a product of two loop iterators" in reason


def test_symbols_outside_the_domain_are_offsets() -> None:
    (i,), dom = loops(i=8)
    n = Var("n", I32)
    total = normalize(i * 4 + n, dom)
    assert total.base is n
    assert is_affine([i * 4 + n], dom) is None


@settings(max_examples=150, deadline=None)
@given(
    extents=st.lists(st.sampled_from([1, 2, 3, 4, 6, 8]), min_size=2, max_size=3),
    splits=st.lists(st.sampled_from([1, 2, 3, 4]), min_size=1, max_size=2),
)
def test_canonical_forms_evaluate_like_the_original(extents: list[int], splits: list[int]) -> None:
    names = {f"x{k}": e for k, e in enumerate(extents)}
    variables, dom = loops(**names)
    fused: PrimExpr = variables[0]
    total = extents[0]
    for v, e in zip(variables[1:], extents[1:]):
        fused = fused * e + v
        total *= e
    indices = []
    rest = total
    stride = 1
    for s in splits:
        if rest % s:
            continue
        indices.append(floormod(floordiv(fused, stride), s))
        stride *= s
        rest //= s
    indices.append(floordiv(fused, stride))
    result = detect_iter_map(indices, dom, check_level="bijective")
    assert result, result.errors
    simplified = iter_map_simplify(indices, dom)
    for values in itertools.product(*(range(e) for e in extents)):
        env = dict(zip(variables, values))
        assert [evaluate(e, env) for e in simplified] == [evaluate(e, env) for e in indices]
    assert all(
        structural_equal(a, b) for a, b in zip(iter_map_simplify(simplified, dom), simplified)
    )
