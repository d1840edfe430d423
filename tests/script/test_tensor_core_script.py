"""TVMScript of tensor intrinsics: ``T.meta_var``, ``T.env_thread`` / ``T.launch_thread`` (the
same loop as ``T.thread_binding``), the tensor-core calls with their dtype, and the errors."""

from __future__ import annotations

import pytest

from tilewright.ir import assert_structural_equal, intrinsics
from tilewright.script import from_source
from tilewright.script import tir as T
from tilewright.script.parser.errors import ParseError


def _layout(i, j):
    return 4 * (i % 8) + (j % 8) // 2, 4 * (j // 8) + (i // 8) * 2 + j % 2


def test_meta_var_binds_the_values_a_function_returns():
    @T.prim_func
    def with_meta(a: T.handle, b: T.handle):
        A = T.match_buffer(a, (16, 16), "float16")
        W = T.match_buffer(b, (32, 8), "float16")
        for i, j in T.grid(16, 16):
            with T.block("W"):
                vi, vj = T.axis.remap("SS", [i, j])
                lane, local = T.meta_var(_layout(vi, vj))
                W[lane, local] = A[vi, vj]

    @T.prim_func
    def written_out(a: T.handle, b: T.handle):
        A = T.match_buffer(a, (16, 16), "float16")
        W = T.match_buffer(b, (32, 8), "float16")
        for i, j in T.grid(16, 16):
            with T.block("W"):
                vi, vj = T.axis.remap("SS", [i, j])
                W[4 * (vi % 8) + vj % 8 // 2, 4 * (vj // 8) + vi // 8 * 2 + vj % 2] = A[vi, vj]

    assert_structural_equal(with_meta, written_out)
    assert "LetStmt" not in repr(with_meta.body)


def test_launch_thread_is_a_thread_binding_loop():
    @T.prim_func
    def launched(a: T.handle):
        C = T.match_buffer(a, (32, 8), "float32", scope="warp", offset_factor=1)
        with T.block("root"):
            tx = T.env_thread("threadIdx.x")
            T.launch_thread(tx, 32)
            T.evaluate(T.mma_fill(8, C.data, C.elem_offset + tx * 8, dtype="float32"))

    @T.prim_func
    def bound(a: T.handle):
        C = T.match_buffer(a, (32, 8), "float32", scope="warp", offset_factor=1)
        with T.block("root"):
            for tx in T.thread_binding(32, thread="threadIdx.x"):
                T.evaluate(T.mma_fill("float32", 8, C.data, C.elem_offset + tx * 8))

    assert_structural_equal(launched, bound)
    call = bound.body.block.body.body.value
    assert intrinsics.MMA_FILL.matches(call) and str(call.dtype) == "float32"
    assert_structural_equal(from_source(bound.script()), bound)  # printed with the dtype first


@pytest.mark.parametrize(
    ("line", "match"),
    [
        ("T.launch_thread(n, 32)", "expected a variable from T.env_thread"),
        ("T.evaluate(T.ptx_mma())", "expected dtype="),
        ("a, b, c = T.meta_var((n, n))", "cannot unpack T.meta_var's value"),
    ],
)
def test_script_errors_name_the_problem(line, match):
    source = f"""
from tilewright.script import tir as T

@T.prim_func
def f(n: T.int32):
    {line}
"""
    with pytest.raises(ParseError, match=match):
        from_source(source)
