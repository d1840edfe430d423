"""transform_layout of function parameters: the buffer's shape in the signature changes and
the caller passes arrays in the new layout (expected scripts, replay, numerics against the
original run on arrays numpy re-laid out, in the evaluator and built for C)."""

from __future__ import annotations

import numpy as np
from evaluator import run
from schedule_checks import check_refused, check_schedule
from test_transform_layout import two_stage  # the 16 x 8 two-stage program

import tilewright as tw
from tilewright.script import tir as T
from tilewright.tir import Schedule


@T.prim_func
def input_split(A: T.Buffer((4, 8, 4), "float32"), C: T.Buffer((16, 8), "float32")):
    B = T.alloc_buffer((16, 8))
    for i, j in T.grid(16, 8):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi // 4, vj, vi % 4] * T.float32(2)
    for i, j in T.grid(16, 8):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vi, vj] + T.float32(1)


@T.prim_func
def output_transposed(A: T.Buffer((16, 8), "float32"), C: T.Buffer((8, 16), "float32")):
    B = T.alloc_buffer((16, 8))
    for i, j in T.grid(16, 8):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)
    for i, j in T.grid(16, 8):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vj, vi] = B[vi, vj] + T.float32(1)


def _inputs() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    return rng.standard_normal((16, 8)).astype("float32"), np.zeros((16, 8), "float32")


def _expected(a: np.ndarray) -> np.ndarray:
    return run(two_stage, a, np.zeros((16, 8), "float32"))[1]


def test_an_input_split_takes_arrays_in_the_new_layout() -> None:
    sch = Schedule(two_stage)
    sch.transform_layout("B", ("read", 0), lambda i, j: (i // 4, j, i % 4))
    check_schedule(sch, two_stage, input_split, numeric=False)
    a, c = _inputs()
    a_new = a.reshape(4, 4, 8).transpose(0, 2, 1)  # a_new[i // 4, j, i % 4] = a[i, j]
    got = run(sch.mod["main"], a_new, c)[1]
    np.testing.assert_allclose(got, _expected(a), rtol=1e-6)
    built = np.zeros_like(c)
    tw.build(sch.mod, target="c")["main"](np.ascontiguousarray(a_new), built)
    np.testing.assert_allclose(built, _expected(a), rtol=1e-6)


def test_an_output_transposed_is_returned_in_the_new_layout() -> None:
    sch = Schedule(two_stage)
    sch.transform_layout("C", "C", lambda i, j: (j, i))
    check_schedule(sch, two_stage, output_transposed, numeric=False)
    a, _ = _inputs()
    got = run(sch.mod["main"], a, np.zeros((8, 16), "float32"))[1]
    np.testing.assert_allclose(got.T, _expected(a), rtol=1e-6)


def test_a_swizzled_input_is_passed_swizzled() -> None:
    sch = Schedule(two_stage)
    block = sch.get_block("B")
    param = sch.get(block).reads[0].buffer
    sch.transform_layout(block, param, lambda i, j: (i, j ^ (i % 8)))
    check_schedule(sch, two_stage, numeric=False)
    shape = [int(e) for e in sch.mod["main"].buffer_map[0][1].shape]
    assert shape == [16, 8]
    a, c = _inputs()
    rows, cols = np.indices((16, 8))
    a_new = np.empty_like(a)
    a_new[rows, cols ^ (rows % 8)] = a
    np.testing.assert_allclose(run(sch.mod["main"], a_new, c)[1], _expected(a), rtol=1e-6)


def test_a_padded_input_is_passed_padded() -> None:
    @T.prim_func
    def copy14(A: T.Buffer((14,), "float32"), B: T.Buffer((14,), "float32")):
        for i in range(14):
            with T.block("B"):
                vi = T.axis.remap("S", [i])
                B[vi] = A[vi] + T.float32(1)

    @T.prim_func
    def copy14_padded(A: T.Buffer((4, 4), "float32"), B: T.Buffer((14,), "float32")):
        for i in range(14):
            with T.block("B"):
                vi = T.axis.remap("S", [i])
                B[vi] = A[vi // 4, vi % 4] + T.float32(1)

    sch = Schedule(copy14)
    # Nothing in the function writes A: the caller fills its padding (here with 0).
    sch.transform_layout("B", "A", lambda i: (i // 4, i % 4), pad_value=0.0)
    check_schedule(sch, copy14, copy14_padded, numeric=False)
    a = np.arange(14, dtype="float32")
    a_new = np.concatenate([a, np.zeros(2, "float32")]).reshape(4, 4)
    got = run(sch.mod["main"], a_new, np.zeros(14, "float32"))[1]
    np.testing.assert_allclose(got, a + 1)


def test_a_parameter_with_explicit_strides_is_refused() -> None:
    @T.prim_func
    def strided(a: T.handle, c: T.handle):
        A = T.match_buffer(a, (4, 4), "float32", strides=(8, 1))
        C = T.match_buffer(c, (4, 4), "float32")
        for i, j in T.grid(4, 4):
            with T.block("C"):
                vi, vj = T.axis.remap("SS", [i, j])
                C[vi, vj] = A[vi, vj]

    sch = Schedule(strided)
    error = check_refused(
        sch,
        lambda: sch.transform_layout("C", "A", lambda i, j: (j, i)),
        "buffer 'A' has explicit strides",
    )
    assert error.rule == "index-map"
