"""split_host_device: a host function launching kernels, one device function per kernel."""

from __future__ import annotations

import numpy as np
import pytest
from evaluator import run_module

from tilewright.driver import lower
from tilewright.ir import (
    Call,
    Evaluate,
    For,
    IntImm,
    LetStmt,
    PrimFunc,
    SeqStmt,
    StringImm,
    Var,
    assert_structural_equal,
    intrinsics,
)
from tilewright.script import from_source
from tilewright.transform import ThreadBindingError, split_host_device

from .gpu_programs import load


def _parse(text: str) -> PrimFunc:
    return from_source("from tilewright.script import tir as T\n" + text)  # type: ignore[return-value]


def _launch_args(stmt: object) -> tuple:
    assert isinstance(stmt, Evaluate) and isinstance(stmt.value, Call)
    assert intrinsics.LAUNCH_KERNEL.matches(stmt)
    return stmt.value.args


def test_vector_add_becomes_one_launch_and_one_kernel():
    module = load("Expected_1")
    source = module["main"]
    mod = lower(module, "cuda")
    assert list(mod) == ["main", "main_kernel"]
    host, kernel = mod["main"], mod["main_kernel"]
    assert host.params is source.params and host.buffer_map is source.buffer_map
    name, *dims, shared, a, b, c = _launch_args(host.body)
    assert isinstance(name, StringImm) and name.value == "main_kernel"
    assert [d.value for d in dims] == [8, 1, 1, 128, 1, 1] and shared.value == 0
    assert [a, b, c] == [buf.data for _, buf in source.buffer_map]
    assert dict(kernel.attrs) == {
        "global_symbol": "main_kernel",
        "tir.is_kernel": True,
        "target_kind": "cuda",
        "thread_extent": (("blockIdx.x", 8), ("threadIdx.x", 128)),
        "dyn_shared_memory_bytes": 0,
        "tir.noalias": True,
    }
    # One handle per buffer, bound to the flat buffer the body indexes (same data variable).
    for param, (_, flat) in zip(kernel.params, kernel.buffer_map, strict=True):
        assert param.dtype.is_handle and flat.ndim == 1
    assert [flat.data for _, flat in kernel.buffer_map] == [a, b, c]
    assert isinstance(kernel.body, For) and kernel.body.thread_tag == "blockIdx.x"


def test_each_top_level_nest_is_a_kernel_launched_in_order():
    func = _parse("""
@T.prim_func
def main(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32"),
         C: T.Buffer((64,), "float32")):
    for bx in T.thread_binding(2, thread="blockIdx.x"):
        for tx in T.thread_binding(32, thread="threadIdx.x"):
            B[bx * 32 + tx] = A[bx * 32 + tx] * T.float32(2)
    for tx in T.thread_binding(64, thread="threadIdx.x"):
        C[tx] = B[tx] + T.float32(1)
""")
    mod = split_host_device(func, "opencl")
    assert list(mod) == ["main", "main_kernel", "main_kernel_1"]
    first, second = mod["main"].body.seq  # type: ignore[attr-defined]
    assert _launch_args(first)[0].value == "main_kernel"
    assert [d.value for d in _launch_args(second)[1:8]] == [1, 1, 1, 64, 1, 1, 0]
    second_kernel = mod["main_kernel_1"]
    assert [b.name for _, b in second_kernel.buffer_map] == ["B", "C"]
    assert second_kernel.attr("target_kind") == "opencl"
    x = np.arange(64, dtype="float32")
    got = run_module(mod, "main", x, np.zeros(64, "float32"), np.zeros(64, "float32"))
    np.testing.assert_array_equal(got[2], x * 2 + 1)


def test_scalars_and_shape_variables_become_kernel_parameters():
    func = _parse("""
@T.prim_func
def main(a: T.handle, b: T.handle, s: T.float32):
    n = T.int32()
    A = T.match_buffer(a, (n,), "float32")
    B = T.match_buffer(b, (n,), "float32")
    for i_0 in T.thread_binding((n + 63) // 64, thread="blockIdx.x"):
        for i_1 in T.thread_binding(64, thread="threadIdx.x"):
            with T.block("B"):
                T.where(i_0 * 64 + i_1 < n)
                vi = T.axis.spatial(n, i_0 * 64 + i_1)
                B[vi] = A[vi] * s
""")
    mod = lower(func, "cuda")
    kernel = mod["main_kernel"]
    n = func.buffer_map[0][1].shape[0]
    assert [p.name for p in kernel.params] == ["A", "B", "s", "n"]
    assert kernel.params[2] is func.params[2] and kernel.params[3] is n
    args = _launch_args(mod["main"].body)
    assert_structural_equal(args[1], (n + 63) // 64)
    assert args[-2:] == (func.params[2], n)
    x = np.arange(100, dtype="float32")
    got = run_module(mod, "main", x, np.zeros(100, "float32"), np.float32(0.5))
    np.testing.assert_array_equal(got[1], x * 0.5)


def test_host_let_bindings_stay_on_the_host_and_reach_the_kernel():
    func = _parse("""
@T.prim_func
def main(A: T.Buffer((32,), "float32")):
    x: T.int32 = 3
    for tx in T.thread_binding(32, thread="threadIdx.x"):
        A[tx] = T.Cast("float32", tx * x)
""")
    mod = split_host_device(func, "cuda")
    host_body = mod["main"].body
    assert isinstance(host_body, LetStmt) and isinstance(host_body.value, IntImm)
    args = _launch_args(host_body.body)
    assert args[-1] is host_body.var
    assert mod["main_kernel"].params[-1] is host_body.var
    got = run_module(mod, "main", np.zeros(32, "float32"))
    np.testing.assert_array_equal(got[0], np.arange(32) * 3.0)


def test_code_outside_thread_bound_loops_is_refused():
    with pytest.raises(
        ThreadBindingError,
        match=r"function main: loop i is not bound to any thread: bind its loops to "
        r"blockIdx/threadIdx",
    ):
        lower(
            _parse("""
@T.prim_func
def main(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
    for i in range(8):
        with T.block("B"):
            vi = T.axis.spatial(8, i)
            B[vi] = A[vi]
"""),
            "cuda",
        )


def test_a_store_between_kernels_is_named():
    func = _parse("""
@T.prim_func
def main(A: T.Buffer((8,), "float32")):
    for tx in T.thread_binding(8, thread="threadIdx.x"):
        A[tx] = T.float32(0)
    A[0] = T.float32(1)
""")
    with pytest.raises(ThreadBindingError, match="the store to A is not bound to any thread"):
        split_host_device(func, "cuda")


def test_kernels_keep_flat_buffers_and_host_keeps_nd_buffers():
    mod = lower(load("Expected_5"), "cuda")
    assert [tuple(int(d) for d in b.shape) for _, b in mod["main"].buffer_map] == [(1024, 1024)] * 3
    assert [tuple(int(d) for d in b.shape) for _, b in mod["main_kernel"].buffer_map] == [
        (1048576,)
    ] * 3
    launch = mod["main"].body
    assert not isinstance(launch, SeqStmt) and isinstance(_launch_args(launch)[-1], Var)


def test_a_shared_buffer_used_by_two_kernels_is_refused():
    func = _parse("""
@T.prim_func
def main(A: T.Buffer((32,), "float32")):
    S = T.alloc_buffer((32,), "float32", scope="shared")
    for tx in T.thread_binding(32, thread="threadIdx.x"):
        with T.block("S"):
            vi = T.axis.spatial(32, tx)
            S[vi] = A[vi]
    for tx in T.thread_binding(32, thread="threadIdx.x"):
        with T.block("A"):
            vi = T.axis.spatial(32, tx)
            A[vi] = S[vi]
""")
    with pytest.raises(ThreadBindingError, match=r"buffer S \(shared\) is used by more than one"):
        lower(func, "cuda")
