"""unsafe_set_dtype and set_axis_separator: an intermediate buffer stored in another dtype
(casts where it is stored and loaded) or given axis separators (recorded on the buffer,
refused by flattening), with expected scripts, replay, numerics and refusals."""

from __future__ import annotations

import numpy as np
import pytest
from evaluator import run
from schedule_checks import check_refused, check_schedule
from test_transform_layout import two_stage  # the 16 x 8 two-stage program

from tilewright.ir import assert_structural_equal, structural_equal
from tilewright.script import tir as T
from tilewright.tir import Schedule
from tilewright.transform.flatten_buffers import flatten_buffers
from tilewright.transform.lower_blocks import lower_blocks


@T.prim_func
def two_stage_f64(A: T.Buffer((16, 8), "float32"), C: T.Buffer((16, 8), "float32")):
    B = T.alloc_buffer((16, 8), "float64")
    for i, j in T.grid(16, 8):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = T.Cast("float64", A[vi, vj] * T.float32(2))
    for i, j in T.grid(16, 8):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = T.Cast("float32", B[vi, vj]) + T.float32(1)


@T.prim_func
def row_sum(A: T.Buffer((8, 4), "float32"), C: T.Buffer((8,), "float32")):
    B = T.alloc_buffer((8,))
    for i, k in T.grid(8, 4):
        with T.block("B"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                B[vi] = T.float32(0)
            B[vi] = B[vi] + A[vi, vk]
    for i in range(8):
        with T.block("C"):
            vi = T.axis.remap("S", [i])
            C[vi] = B[vi]


@T.prim_func
def row_sum_f16(A: T.Buffer((8, 4), "float32"), C: T.Buffer((8,), "float32")):
    B = T.alloc_buffer((8,), "float16")
    for i, k in T.grid(8, 4):
        with T.block("B"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                B[vi] = T.float16(0)
            B[vi] = T.Cast("float16", T.Cast("float32", B[vi]) + A[vi, vk])
    for i in range(8):
        with T.block("C"):
            vi = T.axis.remap("S", [i])
            C[vi] = T.Cast("float32", B[vi])


@T.prim_func
def two_stage_separated(A: T.Buffer((16, 8), "float32"), C: T.Buffer((16, 8), "float32")):
    B = T.alloc_buffer((16, 8), axis_separators=[1])
    for i, j in T.grid(16, 8):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)
    for i, j in T.grid(16, 8):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vi, vj] + T.float32(1)


def test_widen_an_intermediate_buffer() -> None:
    sch = Schedule(two_stage)
    sch.unsafe_set_dtype("B", 0, "float64")
    check_schedule(sch, two_stage, two_stage_f64)
    assert 'dtype="float64"' in str(sch.trace)


def test_narrow_a_reduction_buffer_given_by_name() -> None:
    sch = Schedule(row_sum)
    sch.unsafe_set_dtype(sch.get_block("B"), "B", "float16")
    check_schedule(sch, row_sum, row_sum_f16, numeric=False)
    rng = np.random.default_rng(0)
    a = rng.standard_normal((8, 4)).astype("float32")
    (got,) = run(sch.mod["main"], a, np.zeros(8, "float32"))[1:]
    np.testing.assert_allclose(got, a.sum(axis=1), rtol=1e-2, atol=1e-2)  # float16 precision


def test_the_same_dtype_changes_nothing() -> None:
    sch = Schedule(two_stage)
    sch.unsafe_set_dtype("B", 0, "float32")
    assert_structural_equal(sch.mod["main"], two_stage)


def test_what_unsafe_set_dtype_refuses() -> None:
    sch = Schedule(two_stage)
    error = check_refused(sch, lambda: sch.unsafe_set_dtype("C", 0, "float16"), "parameter")
    assert error.rule == "param-buffer"
    error = check_refused(sch, lambda: sch.unsafe_set_dtype("B", 1, "float16"), "out of range")
    assert error.rule == "buffer-index"
    error = check_refused(sch, lambda: sch.unsafe_set_dtype("B", 0, "floaty"), "floaty")
    assert error.rule == "argument"


def test_axis_separators_are_recorded_on_the_buffer() -> None:
    sch = Schedule(two_stage)
    sch.set_axis_separator("B", ("write", 0), [1])
    check_schedule(sch, two_stage, two_stage_separated)
    assert "axis_separators=[1]" in sch.mod.script()
    again = Schedule(two_stage)
    again.set_axis_separator("C", "B", [1])  # the buffer by name, from its reader
    assert_structural_equal(again.mod, sch.mod)


def test_flattening_refuses_axis_separators() -> None:
    sch = Schedule(two_stage)
    sch.set_axis_separator("B", 0, [1])
    lowered = lower_blocks(sch.mod["main"])
    with pytest.raises(ValueError, match="axis_separators=\\[1\\]: multi-dimensional physical"):
        flatten_buffers(lowered)


def test_what_set_axis_separator_refuses() -> None:
    sch = Schedule(two_stage)
    error = check_refused(sch, lambda: sch.set_axis_separator("B", 0, [2]), "not strictly")
    assert error.rule == "axis-separator"
    check_refused(sch, lambda: sch.set_axis_separator("B", 0, [1, 1]), "not strictly")


@T.prim_func
def viewed(A: T.Buffer((4, 8), "float32"), C: T.Buffer((4,), "float32")):
    B = T.alloc_buffer((4, 8))
    for i, j in T.grid(4, 8):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj]
    for i in range(4):
        with T.block("C"):
            vi = T.axis.remap("S", [i])
            row = T.match_buffer(B[vi, 0:8], (8,))
            C[vi] = row[0] + row[7]


def test_a_viewed_buffer_keeps_its_dtype_and_separators() -> None:
    sch = Schedule(viewed)
    error = check_refused(sch, lambda: sch.unsafe_set_dtype("B", 0, "float16"), "views buffer")
    assert error.rule == "buffer-view"
    check_refused(sch, lambda: sch.set_axis_separator("B", 0, [1]), "views buffer")


def test_separators_on_a_parameter_change_its_buffer_map_entry() -> None:
    sch = Schedule(two_stage)
    sch.set_axis_separator("B", ("read", 0), [1])
    func = sch.mod["main"]
    assert func.buffer_of(func.params[0]).axis_separators == (1,)
    assert not structural_equal(func, two_stage)
    check_schedule(sch, two_stage)
