"""TVM names for constants and conditions: ``T.min_value`` / ``T.max_value`` (a dtype's
limits), ``T.likely``, ``T.boolean``, ``tvm.tir.all`` / ``tvm.tir.any``, ``tvm.tir.min_value``."""

from __future__ import annotations

import numpy as np
import pytest

import tilewright as tw
from tilewright.ir import FloatImm, IntImm, assert_structural_equal
from tilewright.script import tir as T


def test_dtype_limits() -> None:
    smallest = tw.tir.min_value("int8")
    assert isinstance(smallest, IntImm) and (smallest.value, str(smallest.dtype)) == (-128, "int8")
    assert tw.tir.max_value("uint16").value == 65535
    assert tw.tir.min_value("float32").value == -float(np.finfo(np.float32).max)
    assert tw.tir.max_value("float16").value == 65504.0
    assert isinstance(T.max_value("float64"), FloatImm)
    assert T.min_value("bool").value == 0 and T.max_value("bool").value == 1
    with pytest.raises(TypeError, match="has no smallest or largest value"):
        tw.tir.min_value("handle")


@T.prim_func
def row_max(A: T.Buffer((4, 8), "float32"), B: T.Buffer((4,), "float32")):
    for i, k in T.grid(4, 8):
        with T.block("B"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                B[vi] = T.min_value("float32")
            if T.likely(A[vi, vk] > B[vi]):
                B[vi] = A[vi, vk]


def test_scripts_using_them_print_parse_and_run() -> None:
    text = row_max.script()
    assert "T.likely(" in text
    assert_structural_equal(tw.script.from_source(text), row_max)
    a = np.random.default_rng(0).standard_normal((4, 8)).astype("float32")
    b = np.zeros(4, "float32")
    tw.build(row_max, target="c")["main"](a, b)
    np.testing.assert_allclose(b, a.max(axis=1))


def test_all_any_and_boolean() -> None:
    i, j = tw.ir.Var("i", tw.ir.dtype("int32")), tw.ir.Var("j", tw.ir.dtype("int32"))
    both = tw.tir.all(i < 4, j < 8, i < j)
    assert str(both.dtype) == "bool" and type(both).__name__ == "And"
    either = tw.tir.any(i < 4, j < 8)
    assert type(either).__name__ == "Or"
    assert tw.tir.all(i < 4) is not None
    with pytest.raises(ValueError, match="at least one condition"):
        tw.tir.any()
    assert str(T.boolean(True).dtype) == "bool" and T.boolean is T.bool


@T.prim_func(check_well_formed=False)
def more_names(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32"),
               M: T.Buffer((8,), "int32")):  # fmt: skip
    for i in range(8):
        with T.block("B"):
            vi = T.axis.spatial(8, i)
            B[vi] = T.acosh(A[vi] + T.float32(1)) + T.asinh(A[vi]) + T.atanh(A[vi] * T.float32(0.5))
            M[vi] = T.Select(
                T.And(T.Not(T.isnan(A[vi])), T.Or(T.isfinite(A[vi]), T.isinf(A[vi]))),
                T.bitwise_xor(T.shift_left(vi, 2), T.bitwise_and(vi, 3)) + T.ceildiv(vi, 3),
                -1,
            )


def test_more_tvm_script_names_parse_print_and_run() -> None:
    assert_structural_equal(tw.script.from_source(more_names.script()), more_names)
    a = np.random.default_rng(1).uniform(0.1, 0.9, 8).astype("float32")
    b = np.zeros(8, "float32")
    m = np.zeros(8, "int32")
    tw.build(more_names, target="c")["main"](a, b, m)
    want = np.arccosh(a + 1) + np.arcsinh(a) + np.arctanh(a * 0.5)
    np.testing.assert_allclose(b, want, rtol=1e-5)
    i = np.arange(8)
    np.testing.assert_array_equal(m, ((i << 2) ^ (i & 3)) + (i + 2) // 3)


def test_math_calls_take_tvm_dtype_keyword_and_lower_case_vector_names() -> None:
    x = tw.ir.Var("x", tw.ir.dtype("float16"))
    assert str(T.sqrt(x, dtype="float32").dtype) == "float32"  # cast first, as asked
    assert str(T.exp(x, dtype="float16").dtype) == "float16"
    assert str(T.ramp(0, 1, 4).dtype) == "int32x4"
    assert str(T.broadcast(T.float32(1), 4).dtype) == "float32x4"
