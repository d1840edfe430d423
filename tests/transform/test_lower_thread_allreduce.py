"""lower_thread_allreduce: allreduces written out as warp shuffles (CUDA) or shared-memory trees
(OpenCL), checked as expected scripts, on the lockstep evaluator against numpy for every kind of
group (thread counts up to 1024, non-powers of two, guarded splits, threadIdx.y, two axes,
spatial thread axes, several reductions in one kernel), on PoCL, and compiled by NVRTC."""

# ruff: noqa: E501 - expected scripts keep one statement per line

from __future__ import annotations

import numpy as np
import pytest
from evaluator import run, run_kernel, run_module

import tilewright as tw
from tilewright.codegen.cuda import codegen_cuda
from tilewright.codegen.metal import codegen_metal
from tilewright.ir import assert_structural_equal, intrinsics
from tilewright.runtime import opencl_runtime
from tilewright.runtime.cuda_runtime.nvrtc import compile_cuda, nvrtc_version
from tilewright.schedule import Schedule
from tilewright.script import from_source
from tilewright.target import Target
from tilewright.transform import ThreadAllreduceError, lower_thread_allreduce

from .test_lower_cross_thread_reduction import bound, row_reduce

HEADER = "from tilewright.script import tir as T\n"
REDUCE = 'T.attr(T.comm_reducer(lambda x, y: x + y, [T.float32(0.0)]), "reduce_scope", T.reinterpret(T.uint64(0), dtype="handle"))'

BEFORE = f"""
@T.prim_func
def main(A: T.Buffer((THREADS * 2,), "float32"), B: T.Buffer((2,), "float32")):
    for i in T.thread_binding(2, thread="blockIdx.x"):
        for k in T.thread_binding(THREADS, thread="threadIdx.x"):
            with T.decl_buffer((1,), "float32", scope="local") as cross:
                with {REDUCE}:
                    T.evaluate(T.tvm_thread_allreduce(T.uint32(1), A[i * THREADS + k], T.bool(True), cross[0], k))
                if k == 0:
                    B[i] = cross[0]
"""

AFTER_WARP = """
@T.prim_func
def main(A: T.Buffer((8,), "float32"), B: T.Buffer((2,), "float32")):
    a0 = T.float32()
    a1 = T.float32()
    for i in T.thread_binding(2, thread="blockIdx.x"):
        for k in T.thread_binding(4, thread="threadIdx.x"):
            with T.decl_buffer((1,), "float32", scope="local") as cross:
                with T.decl_buffer((1,), "float32", scope="local") as red_acc:
                    red_acc[0] = A[i * 4 + k]
                    with T.let(a0, red_acc[0]):
                        b0: T.float32 = T.call_intrin("float32", "tw.warp_shuffle_xor", T.uint32(15), a0, 2, 32)
                        red_acc[0] = a0 + b0
                    with T.let(a1, red_acc[0]):
                        b1: T.float32 = T.call_intrin("float32", "tw.warp_shuffle_xor", T.uint32(15), a1, 1, 32)
                        red_acc[0] = a1 + b1
                    cross[0] = red_acc[0]
                if k == 0:
                    B[i] = cross[0]
"""

AFTER_TREE = """
@T.prim_func
def main(A: T.Buffer((6,), "float32"), B: T.Buffer((2,), "float32")):
    for i in T.thread_binding(2, thread="blockIdx.x"):
        for k in T.thread_binding(3, thread="threadIdx.x"):
            with T.decl_buffer((1,), "float32", scope="local") as cross:
                with T.decl_buffer((1,), "float32", scope="local") as red_acc:
                    red_buf = T.decl_buffer((3,), "float32", scope="shared")
                    red_acc[0] = A[i * 3 + k]
                    red_buf[k] = red_acc[0]
                    T.evaluate(T.call_intrin("int32", "tw.sync_threads"))
                    if k < 1:
                        a0: T.float32 = red_buf[k]
                        b0: T.float32 = red_buf[k + 2]
                        red_buf[k] = a0 + b0
                    T.evaluate(T.call_intrin("int32", "tw.sync_threads"))
                    if k < 1:
                        a1: T.float32 = red_buf[k]
                        b1: T.float32 = red_buf[k + 1]
                        red_buf[k] = a1 + b1
                    T.evaluate(T.call_intrin("int32", "tw.sync_threads"))
                    red_acc[0] = red_buf[0]
                    cross[0] = red_acc[0]
                if k == 0:
                    B[i] = cross[0]
"""


def _parse(text: str, threads: int = 4):
    return from_source(HEADER + text.replace("THREADS", str(threads)))


def test_four_lanes_reduce_with_two_shuffles_on_a_warp_target():
    got = lower_thread_allreduce(_parse(BEFORE, 4), Target("cuda"))
    assert_structural_equal(got, _parse(AFTER_WARP))


def test_three_threads_reduce_through_a_shared_tree_without_shuffles():
    # A non-power of two: the first step folds slot 2 into slot 0.
    got = lower_thread_allreduce(_parse(BEFORE, 3), Target("opencl"))
    assert_structural_equal(got, _parse(AFTER_TREE))
    # On a warp target too: 3 lanes do not divide the warp.
    assert_structural_equal(lower_thread_allreduce(_parse(BEFORE, 3), Target("cuda")), got)


@pytest.mark.parametrize("threads", [4, 3, 32, 64, 96, 100])
@pytest.mark.parametrize("target", ["cuda", "opencl"])
def test_the_written_out_allreduce_runs_like_the_call(threads, target):
    before = _parse(BEFORE, threads)
    a = np.random.default_rng(threads).standard_normal(2 * threads).astype("float32")
    want = run_kernel(before, a, np.zeros(2, "float32")).arrays[1]
    result = run_kernel(lower_thread_allreduce(before, Target(target)), a, np.zeros(2, "float32"))
    np.testing.assert_allclose(result.arrays[1], want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(want, a.reshape(2, threads).sum(1), rtol=1e-5, atol=1e-5)
    shuffles = result.effects[intrinsics.WARP_SHUFFLE_XOR]
    assert (shuffles > 0) == (target == "cuda" and threads in (4, 32, 64, 96))


# -- whole programs, lowered by the pipeline and run on the evaluator ----------------------------


def _numpy(kind: str, a: np.ndarray) -> np.ndarray:
    return {"sum": a.sum, "prod": a.prod, "max": a.max, "min": a.min}[kind](axis=1)


def _inputs(kind: str, dt: str, shape: tuple[int, int], seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if dt.startswith("int"):
        return rng.integers(-50, 50, shape).astype(dt)
    scale, shift = (0.05, 1.0) if kind == "prod" else (1.0, 0.0)
    return (rng.standard_normal(shape) * scale + shift).astype(dt)


def _check(sch: Schedule, kind: str, dt: str, shape: tuple[int, int], target: str) -> None:
    a = _inputs(kind, dt, shape)
    lowered = tw.lower(sch.mod, Target(f"{target} -max_num_threads=1024"))
    got = run_module(lowered, "main", a, np.zeros(shape[0], dt))[1]
    np.testing.assert_allclose(got, _numpy(kind, a), rtol=1e-4, atol=1e-4)


CASES = [
    # (kind, dtype, length, split factors, thread tags)
    ("sum", "float32", 128, (), ("threadIdx.x",)),
    ("sum", "float32", 100, (), ("threadIdx.x",)),
    ("max", "float32", 1030, (1024,), ("threadIdx.x",)),
    ("min", "float32", 300, (96,), ("threadIdx.x",)),
    ("prod", "float32", 40, (8,), ("threadIdx.x",)),
    ("sum", "int32", 333, (40,), ("threadIdx.x",)),
    ("max", "int32", 64, (2, 32), ("threadIdx.y", "threadIdx.x")),
    ("sum", "float32", 70, (6, 12), ("threadIdx.x", "threadIdx.y")),
    ("min", "float64", 50, (4, 3, 5), ("threadIdx.z", "threadIdx.y", "threadIdx.x")),
]


@pytest.mark.parametrize("target", ["cuda", "opencl"])
@pytest.mark.parametrize(("kind", "dt", "length", "factors", "tags"), CASES)
def test_row_reductions_over_thread_axes_match_numpy(kind, dt, length, factors, tags, target):
    sch = bound(row_reduce(3, length, kind, dt), *factors, tags=tags)
    _check(sch, kind, dt, (3, length), target)


def _spatial(
    rows: int, length: int, row_threads: int, reduce_threads: int, row_tag: str, reduce_tag: str
) -> Schedule:
    """Rows split over a spatial thread axis beside the reduction's."""
    sch = Schedule(row_reduce(rows, length, "sum"))
    i, k = sch.get_loops("B")
    i0, i1 = sch.split(i, [None, row_threads])
    k0, k1 = sch.split(k, [None, reduce_threads])
    sch.reorder(i0, i1, k0, k1)
    sch.bind(i0, "blockIdx.x")
    sch.bind(i1, row_tag)
    sch.bind(k1, reduce_tag)
    return sch


@pytest.mark.parametrize("target", ["cuda", "opencl"])
@pytest.mark.parametrize(
    ("row_threads", "reduce_threads", "row_tag", "reduce_tag"),
    [
        (4, 32, "threadIdx.y", "threadIdx.x"),  # groups of one warp: shuffles
        (3, 8, "threadIdx.y", "threadIdx.x"),  # 24 threads: a partial warp's mask
        (3, 64, "threadIdx.y", "threadIdx.x"),  # two warps a group, three groups
        (4, 16, "threadIdx.x", "threadIdx.y"),  # a reduction over y: a shared tree
    ],
)
def test_spatial_thread_axes_reduce_in_groups(
    row_threads, reduce_threads, row_tag, reduce_tag, target
):
    # 10 rows over groups of 4 (or 3): the guard on the last block's rows stays spatial.
    sch = _spatial(10, 70, row_threads, reduce_threads, row_tag, reduce_tag)
    _check(sch, "sum", "float32", (10, 70), target)


SOFTMAX_ROWS = """
@T.prim_func
def main(A: T.Buffer((4, 50), "float32"), M: T.Buffer((4,), "float32"), S: T.Buffer((4,), "float32")):
    for i in T.thread_binding(4, thread="blockIdx.x"):
        for k in T.thread_binding(64, thread="threadIdx.x"):
            with T.block("M"):
                vi, vk = T.axis.remap("SR", [i, k])
                T.where(k < 50)
                with T.init():
                    M[vi] = T.float32("-inf")
                M[vi] = T.max(M[vi], A[vi, vk])
        for k in T.thread_binding(64, thread="threadIdx.x"):
            with T.block("S"):
                vi, vk = T.axis.remap("SR", [i, k])
                T.where(k < 50)
                with T.init():
                    S[vi] = T.float32(0)
                S[vi] = S[vi] + T.exp(A[vi, vk] - T.float32(1))
"""


@pytest.mark.parametrize("target", ["cuda", "opencl"])
def test_two_reductions_in_one_kernel(target):
    func = from_source(HEADER + SOFTMAX_ROWS)
    a = _inputs("sum", "float32", (4, 50))
    lowered = tw.lower(func, target)
    m, s = run_module(lowered, "main", a, np.zeros(4, "float32"), np.zeros(4, "float32"))[1:]
    np.testing.assert_allclose(m, a.max(1), rtol=1e-6)
    np.testing.assert_allclose(s, np.exp(a - 1).sum(1), rtol=1e-5)
    assert [name for name, _ in lowered.items()] == ["main", "main_kernel"]


ARGMAX = """
@T.prim_func
def main(A: T.Buffer((48,), "float32"), V: T.Buffer((1,), "float32"), J: T.Buffer((1,), "int32")):
    for t in T.thread_binding(48, thread="threadIdx.x"):
        with T.decl_buffer((1,), "float32", scope="local") as best_v:
            with T.decl_buffer((1,), "int32", scope="local") as best_i:
                with T.attr(T.comm_reducer(lambda v0, i0, v1, i1: (T.Select(v0 >= v1, v0, v1), T.Select(v0 >= v1, i0, i1)), [T.float32("-inf"), -1]), "reduce_scope", T.reinterpret(T.uint64(0), dtype="handle")):
                    T.evaluate(T.tvm_thread_allreduce(T.uint32(2), A[t], t, t < 40, best_v[0], best_i[0], t))
                if t == 0:
                    V[0] = best_v[0]
                    J[0] = best_i[0]
"""


@pytest.mark.parametrize("target", ["cuda", "opencl"])
def test_a_reducer_of_two_values_and_a_condition(target):
    func = from_source(HEADER + ARGMAX)
    a = np.random.default_rng(3).permutation(48).astype("float32")
    args = (a, np.zeros(1, "float32"), np.zeros(1, "int32"))
    for f in (func, lower_thread_allreduce(func, Target(target))):
        v, j = run_kernel(f, *args).arrays[1:]
        assert (v[0], j[0]) == (a[:40].max(), a[:40].argmax())


# -- refusals --------------------------------------------------------------------------------

DIVERGENT = f"""
@T.prim_func
def main(A: T.Buffer((64,), "float32"), B: T.Buffer((1,), "float32")):
    for k in T.thread_binding(64, thread="threadIdx.x"):
        with T.decl_buffer((1,), "float32", scope="local") as cross:
            if k < 32:
                with {REDUCE}:
                    T.evaluate(T.tvm_thread_allreduce(T.uint32(1), A[k], T.bool(True), cross[0], k))
"""

UNSCOPED = """
@T.prim_func
def main(A: T.Buffer((64,), "float32"), B: T.Buffer((1,), "float32")):
    for k in T.thread_binding(64, thread="threadIdx.x"):
        with T.decl_buffer((1,), "float32", scope="local") as cross:
            T.evaluate(T.tvm_thread_allreduce(T.uint32(1), A[k], T.bool(True), cross[0], k))
"""

OUTSIDE_AXIS = f"""
@T.prim_func
def main(A: T.Buffer((64,), "float32"), B: T.Buffer((4,), "float32")):
    for k in T.thread_binding(64, thread="threadIdx.x"):
        with T.decl_buffer((1,), "float32", scope="local") as cross:
            with {REDUCE}:
                T.evaluate(T.tvm_thread_allreduce(T.uint32(1), A[k], T.bool(True), cross[0], k))
            for j in T.thread_binding(4, thread="threadIdx.y"):
                B[j] = cross[0]
"""


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (DIVERGENT, r"under `if k < 32`, which threads of one block decide differently"),
        (UNSCOPED, r"needs its combiner: put it under T.attr\(T.comm_reducer"),
        (OUTSIDE_AXIS, r"threadIdx.y \(extent 4\) does not enclose the allreduce"),
    ],
)
def test_allreduces_the_threads_cannot_all_reach_together_are_refused(text, message):
    with pytest.raises(ThreadAllreduceError, match=message):
        lower_thread_allreduce(from_source(HEADER + text), Target("cuda"))


# -- generated source ------------------------------------------------------------------------


def test_cuda_source_shuffles_with_full_masks_and_compiles_for_sm90():
    if nvrtc_version() is None:
        pytest.skip("NVRTC is not installed")
    sch = bound(row_reduce(64, 128), tags=("threadIdx.x",))
    source = codegen_cuda(tw.lower(sch.mod, "cuda"))
    assert source.count("__shfl_xor_sync(4294967295U, ") == 5 + 2, source
    assert source.count("__syncthreads()") == 1
    assert "if (k == 0) {\n    B[i] = cross_thread_B[0];" in source
    compile_cuda(source, "sm_90", ["main_kernel"], "nvrtc")


@pytest.mark.parametrize(
    ("kind", "dt"), [("max", "float16"), ("min", "int8"), ("prod", "float64"), ("sum", "int64")]
)
def test_cuda_shuffles_of_every_type_compile(kind, dt):
    if nvrtc_version() is None:
        pytest.skip("NVRTC is not installed")
    sch = _spatial(6, 70, 3, 48, "threadIdx.y", "threadIdx.x")  # a tree beside
    for s in (sch, bound(row_reduce(4, 200, kind, dt), 64, tags=("threadIdx.x",))):
        compile_cuda(codegen_cuda(tw.lower(s.mod, "cuda")), "sm_90", ["main_kernel"], "nvrtc")


def test_metal_source_uses_simd_shuffles():
    sch = bound(row_reduce(4, 64), tags=("threadIdx.x",))
    source = codegen_metal(tw.lower(sch.mod, "metal"))
    assert "simd_shuffle_xor(red_mine, (ushort)16)" in source
    assert "threadgroup_barrier(mem_flags::mem_threadgroup)" in source


# -- PoCL -----------------------------------------------------------------------------------


def test_the_row_sum_of_the_issue_is_right_on_pocl_and_in_the_evaluator():
    # 64 x 128, rows to blockIdx.x, the reduction to threadIdx.x (issue 10).
    sch = bound(row_reduce(64, 128), tags=("threadIdx.x",))
    a = _inputs("sum", "float32", (64, 128))
    want = a.astype("float64").sum(1)
    assert np.allclose(run(sch.mod["main"], a, np.zeros(64, "float32"))[1], want, atol=1e-4)
    got = run_module(tw.lower(sch.mod, "opencl"), "main", a, np.full(64, np.nan, "float32"))[1]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)
    if not opencl_runtime.available():
        pytest.skip("no OpenCL platform")
    args = [tw.nd.array(x, tw.opencl(0)) for x in (a, np.full(64, np.nan, "float32"))]
    tw.build(sch.mod, "opencl")["main"](*args)
    np.testing.assert_allclose(args[1].numpy(), want, rtol=1e-5, atol=1e-4)
