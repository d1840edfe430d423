"""lower_vthread: virtual threads pushed down as T.unroll loops, checked as expected scripts, on
the racing-checking evaluator against numpy and against the same kernel with each vthread a
plain serial loop, on PoCL, and compiled by NVRTC."""

# ruff: noqa: E501 - expected scripts keep one statement per line

from __future__ import annotations

import numpy as np
import pytest
from evaluator import run_module

import tilewright as tw
from tilewright import config
from tilewright.codegen.cuda import codegen_cuda
from tilewright.demo import matmul_module
from tilewright.ir import For, ForKind, Mutator, PrimFunc, Stmt, assert_structural_equal
from tilewright.runtime import opencl_runtime
from tilewright.runtime.cuda_runtime import device_count
from tilewright.runtime.cuda_runtime.nvrtc import compile_cuda, nvrtc_version
from tilewright.schedule import Schedule
from tilewright.script import from_source
from tilewright.target import Target
from tilewright.transform import ThreadBindingError, split_host_device
from tilewright.transform.lower_vthread import lower_vthread

from .test_lower_cross_thread_reduction import row_reduce

HEADER = "from tilewright.script import tir as T\n"
SYNC = 'T.evaluate(T.call_intrin("int32", "tw.sync_threads"))'


def _parse(text: str) -> PrimFunc:
    return from_source(HEADER + text)  # type: ignore[return-value]


class _Serial(Mutator):
    """Each vthread loop as a plain serial loop: the meaning lower_vthread must keep."""

    def visit_For(self, loop: For) -> Stmt:
        loop = self.generic_visit(loop)
        if loop.thread_tag.startswith("vthread"):
            return loop.replace(kind=ForKind.SERIAL, thread_tag="")
        return loop


def _as_serial(mod: tw.IRModule | PrimFunc) -> tw.IRModule:
    mod = tw.IRModule({"main": mod}) if isinstance(mod, PrimFunc) else mod
    return tw.IRModule({name: f.with_body(_Serial().visit(f.body)) for name, f in mod.items()})


def _no_vthread_left(lowered: tw.IRModule) -> None:
    for _, func in lowered.items():
        assert "vthread" not in func.script()
        extents = dict(func.attr("thread_extent", ()) or ())
        assert not any(tag.startswith("vthread") for tag in extents), extents


# -- the expected script ----------------------------------------------------------------------

SMALL = f"""
@T.prim_func
def main(A: T.Buffer((4, 4), "float32"), B: T.Buffer((8,), "float32"), C: T.Buffer((8,), "float32")):
    for bx in T.thread_binding(1, thread="blockIdx.x"):
        for v in T.thread_binding(2, thread="vthread.x"):
            for t in T.thread_binding(4, thread="threadIdx.x"):
                acc = T.decl_buffer((1,), "float32", scope="local")
                for k in range(4):
                    S = T.decl_buffer((4,), "float32", scope="shared")
                    S[t] = A[k, t]
                    {SYNC}
                    if k == 0:
                        acc[0] = T.float32(0.0)
                    acc[0] = acc[0] + S[k] * B[v * 4 + t]
                C[v * 4 + t] = acc[0]
"""

SMALL_LOWERED = f"""
@T.prim_func
def main(A: T.Buffer((4, 4), "float32"), B: T.Buffer((8,), "float32"), C: T.Buffer((8,), "float32")):
    for bx in T.thread_binding(1, thread="blockIdx.x"):
        for t in T.thread_binding(4, thread="threadIdx.x"):
            acc = T.decl_buffer((2, 1), "float32", scope="local")
            for k in range(4):
                S = T.decl_buffer((4,), "float32", scope="shared")
                S[t] = A[k, t]
                {SYNC}
                if k == 0:
                    for v in T.unroll(2):
                        acc[v, 0] = T.float32(0.0)
                for v in T.unroll(2):
                    acc[v, 0] = acc[v, 0] + S[k] * B[v * 4 + t]
            for v in T.unroll(2):
                C[v * 4 + t] = acc[v, 0]
"""


def test_small_kernel_lowers_to_the_expected_script():
    # Through the thread loop, a slice of acc per iteration, into the k loop and across the
    # barrier; the fetch into S does not use v and only copies, so it runs once.
    assert_structural_equal(lower_vthread(_parse(SMALL)), _parse(SMALL_LOWERED))


def test_small_kernel_keeps_its_results():
    rng = np.random.default_rng(0)
    x = [rng.standard_normal(s).astype("float32") for s in ((4, 4), (8,), (8,))]
    want = np.trace(x[0]) * x[1]  # S[k] read back is A[k, k]
    got = run_module(tw.lower(_parse(SMALL), "opencl"), "main", *x)[2]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


SAME_PLACE = """
@T.prim_func
def main(A: T.Buffer((8,), "float32"), B: T.Buffer((4,), "float32"), C: T.Buffer((8,), "float32")):
    for bx in T.thread_binding(1, thread="blockIdx.x"):
        for v in T.thread_binding(2, thread="vthread.x"):
            for t in T.thread_binding(4, thread="threadIdx.x"):
                B[t] = A[v * 4 + t]
                C[v * 4 + t] = B[t] * T.float32(2.0)
"""

SAME_PLACE_LOWERED = """
@T.prim_func
def main(A: T.Buffer((8,), "float32"), B: T.Buffer((4,), "float32"), C: T.Buffer((8,), "float32")):
    for bx in T.thread_binding(1, thread="blockIdx.x"):
        for t in T.thread_binding(4, thread="threadIdx.x"):
            for v in T.unroll(2):
                B[t] = A[v * 4 + t]
                C[v * 4 + t] = B[t] * T.float32(2.0)
"""


def test_iterations_writing_one_element_are_not_split_apart():
    # Distributing the loop over the two stores would make both C halves read the last B.
    got = lower_vthread(_parse(SAME_PLACE))
    assert_structural_equal(got, _parse(SAME_PLACE_LOWERED))
    a = np.arange(8, dtype="float32")
    _, b, c = run_module(
        tw.lower(_parse(SAME_PLACE), "opencl"),
        "main",
        a,
        np.zeros(4, "float32"),
        np.zeros(8, "float32"),
    )
    np.testing.assert_array_equal(c, a * 2)
    np.testing.assert_array_equal(b, a[4:])


CARRIED = """
@T.prim_func
def main(A: T.Buffer((8,), "float32"), C: T.Buffer((5,), "float32")):
    for bx in T.thread_binding(1, thread="blockIdx.x"):
        for v in T.thread_binding(2, thread="vthread.x"):
            for k in range(4):
                C[k + 1] = C[k] * T.float32(0.5) + A[v * 4 + k]
"""


def test_a_loop_carrying_values_between_iterations_keeps_the_vthread_outside():
    got = lower_vthread(_parse(CARRIED))
    loop = got.body.body  # type: ignore[attr-defined]
    assert loop.kind is ForKind.UNROLLED and isinstance(loop.body, For)
    assert loop.body.kind is ForKind.SERIAL
    a = np.arange(1, 9, dtype="float32")
    want = np.zeros(5, "float32")
    for v in range(2):
        for k in range(4):
            want[k + 1] = want[k] * 0.5 + a[v * 4 + k]
    got_c = run_module(tw.lower(_parse(CARRIED), "opencl"), "main", a, np.zeros(5, "float32"))[1]
    np.testing.assert_allclose(got_c, want, rtol=1e-6)


SLIDING = """
@T.prim_func
def main(A: T.Buffer((2,), "float32"), X: T.Buffer((11,), "float32")):
    for bx in T.thread_binding(1, thread="blockIdx.x"):
        for v in T.thread_binding(2, thread="vthread.x"):
            for k in range(4):
                for j in range(k, k + 4):
                    X[v * 4 + j] = X[v * 4 + j] * T.float32(2.0) + A[v]
"""


def test_a_window_sliding_with_an_outer_loop_counts_as_overlapping():
    # j alone spans 4 (< the stride 4 of v only when k is taken as fixed): k moves the
    # window, so the two iterations share X[4:7] and must keep their order.
    got = lower_vthread(_parse(SLIDING))
    loop = got.body.body  # type: ignore[attr-defined]
    assert loop.kind is ForKind.UNROLLED and loop.body.kind is ForKind.SERIAL
    a, x = np.array([1.0, 10.0], "float32"), np.arange(11, dtype="float32")
    want = x.copy()
    for v in range(2):
        for k in range(4):
            for j in range(k, k + 4):
                want[v * 4 + j] = want[v * 4 + j] * 2 + a[v]
    lowered = tw.lower(_parse(SLIDING), "opencl")
    np.testing.assert_array_equal(run_module(lowered, "main", a, x)[1], want)


SHIFTED = """
@T.prim_func
def main(A: T.Buffer((2,), "float32"), X: T.Buffer((8,), "float32")):
    for bx in T.thread_binding(1, thread="blockIdx.x"):
        for v in T.thread_binding(2, thread="vthread.x"):
            for k in range(2):
                for j in range(4 - v * 4, 6 - v * 4):
                    X[v * 4 + j] = X[v * 4 + j] * T.float32(2.0) + A[v]
"""


def test_an_inner_loop_whose_bounds_undo_the_stride_counts_as_overlapping():
    # v * 4 + j is 4 or 5 for both iterations: j's bounds use v, which must not cancel.
    got = lower_vthread(_parse(SHIFTED))
    assert got.body.body.kind is ForKind.UNROLLED  # type: ignore[attr-defined]
    a, x = np.array([1.0, 10.0], "float32"), np.arange(8, dtype="float32")
    want = x.copy()
    for v in range(2):
        for _ in range(2):
            for j in range(4 - v * 4, 6 - v * 4):
                want[v * 4 + j] = want[v * 4 + j] * 2 + a[v]
    lowered = tw.lower(_parse(SHIFTED), "opencl")
    np.testing.assert_array_equal(run_module(lowered, "main", a, x)[1], want)


LOCAL_ABOVE = """
@T.prim_func
def main(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):
    X = T.alloc_buffer((16,), scope="local")
    for bx in T.thread_binding(1, thread="blockIdx.x"):
        for t in T.thread_binding(8, thread="threadIdx.x"):
            for v in T.thread_binding(2, thread="vthread.x"):
                with T.block("X"):
                    vi = T.axis.spatial(16, v * 8 + t)
                    X[vi] = A[vi] * T.float32(2.0)
            for v in T.thread_binding(2, thread="vthread.x"):
                with T.block("B"):
                    vi = T.axis.spatial(16, v * 8 + t)
                    B[vi] = X[vi] + T.float32(1.0)
"""


def test_a_local_buffer_allocated_above_two_vthread_loops_holds_every_iteration():
    # The buffer lives across both loops: compaction must size it for both iterations.
    a = np.arange(16, dtype="float32")
    lowered = tw.lower(_parse(LOCAL_ABOVE), "opencl")
    _no_vthread_left(lowered)
    np.testing.assert_array_equal(
        run_module(lowered, "main", a, np.zeros(16, "float32"))[1], a * 2 + 1
    )


def test_a_cross_thread_reduction_under_a_vthread_runs_per_iteration():
    sch = Schedule(row_reduce(8, 32))
    i, k = sch.get_loops("B")
    i0, i1 = sch.split(i, [None, 2])
    sch.bind(i0, "blockIdx.x")
    sch.bind(i1, "vthread.x")
    sch.bind(k, "threadIdx.x")
    a = np.random.default_rng(1).standard_normal((8, 32)).astype("float32")
    for kind in ("cuda", "opencl"):
        lowered = tw.lower(sch.mod, kind)
        _no_vthread_left(lowered)
        got = run_module(lowered, "main", a, np.zeros(8, "float32"))[1]
        np.testing.assert_allclose(got, a.sum(1), rtol=1e-5, atol=1e-5)


# -- refusals ---------------------------------------------------------------------------------


def test_a_symbolic_vthread_extent_is_refused_naming_the_loop():
    func = _parse("""
@T.prim_func
def main(a: T.handle, n: T.int32):
    A = T.match_buffer(a, (n,), "float32")
    for v in T.thread_binding(n, thread="vthread.x"):
        A[v] = T.float32(0.0)
""")
    with pytest.raises(
        ValueError,
        match=r"loop v is bound to vthread.x with extent n; a virtual thread needs a constant extent",
    ):
        lower_vthread(func)


def test_kernels_refuse_a_vthread_left_unlowered():
    func = _parse("""
@T.prim_func
def main(A: T.Buffer((8,), "float32")):
    for bx in T.thread_binding(4, thread="blockIdx.x"):
        for v in T.thread_binding(2, thread="vthread.x"):
            A[bx * 2 + v] = T.float32(0.0)
""")
    with pytest.raises(
        ThreadBindingError, match=r"loop v is still bound to vthread.x; .*run lower_vthread"
    ):
        split_host_device(func, Target("cuda"))


# -- matmul, as the auto-scheduler tiles it ----------------------------------------------------


def _tiled(n: int = 64, caches: bool = False, vt: int = 2) -> Schedule:
    sch = Schedule(matmul_module(n))
    block = sch.get_block("C")
    local = sch.cache_write(block, 0, "local") if caches else None
    i, j, k = sch.get_loops(block)
    i0, i1, i2 = sch.split(i, [None, vt, 8])
    j0, j1, j2 = sch.split(j, [None, vt, 8])
    if caches:
        k0, k1 = sch.split(k, [None, 4])
        sch.reorder(i0, j0, i1, j1, i2, j2, k0, k1)
    else:
        sch.reorder(i0, j0, i1, j1, i2, j2, k)
    sch.bind(i0, "blockIdx.x")
    sch.bind(i1, "vthread.x")
    sch.bind(i2, "threadIdx.x")
    sch.bind(j0, "blockIdx.y")
    sch.bind(j1, "vthread.y")
    sch.bind(j2, "threadIdx.y")
    if caches:
        for index in (0, 1):
            shared = sch.cache_read(block, index, "shared")
            sch.compute_at(shared, k0)
            fused = sch.fuse(*sch.get_loops(shared)[-2:])
            _, tx, ty = sch.split(fused, [None, 8, 8])  # cooperative fetch by the 8 x 8 threads
            sch.bind(tx, "threadIdx.x")
            sch.bind(ty, "threadIdx.y")
        assert local is not None
        sch.reverse_compute_at(local, j2)
    return sch


def _matmul_inputs(n: int) -> list[np.ndarray]:
    rng = np.random.default_rng(n)
    a, b = (rng.standard_normal((n, n)).astype("float32") for _ in range(2))
    return [a, b, np.full((n, n), np.nan, "float32")]


@pytest.mark.parametrize(("caches", "vt"), [(False, 2), (True, 2), (True, 1), (True, 4)])
def test_tiled_matmul_matches_numpy_and_the_serial_vthread_on_the_evaluator(caches, vt):
    n = 16 * vt if vt > 1 else 32
    sch = _tiled(n, caches, vt)
    x = _matmul_inputs(n)
    lowered = tw.lower(sch.mod, "opencl")
    _no_vthread_left(lowered)
    got = run_module(lowered, "main", *x)[2]  # raises DataRace on a race between threads
    np.testing.assert_allclose(got, x[0] @ x[1], rtol=1e-4, atol=1e-4)
    serial = run_module(tw.lower(_as_serial(sch.mod), "opencl"), "main", *x)[2]
    np.testing.assert_array_equal(got, serial)


def test_the_lowered_cached_matmul_fetches_once_into_four_registers():
    kernel = tw.lower(_tiled(64, caches=True).mod, "cuda")["main_kernel"]
    assert dict(kernel.attr("thread_extent")) == {  # type: ignore[arg-type]
        "blockIdx.x": 4,
        "blockIdx.y": 4,
        "threadIdx.x": 8,
        "threadIdx.y": 8,
    }
    source = codegen_cuda(tw.lower(_tiled(64, caches=True).mod, "cuda"))
    assert source.count("A_shared[ax0_ax1_fused_1 * 8 + ax0_ax1_fused_2] = ") == 1, source
    assert "float C_local[4];" in source
    for slot in range(4):
        assert f"C_local[{slot}] = C_local[{slot}] + " in source
    assert "vthread" not in source


@pytest.fixture
def _need_opencl() -> None:
    if not opencl_runtime.available():
        if config.get().ci:
            pytest.fail("no OpenCL platform: CI installs PoCL (pocl-opencl-icd)")
        pytest.skip("no OpenCL platform")


@pytest.mark.usefixtures("_need_opencl")
@pytest.mark.parametrize("caches", [False, True])
def test_tiled_matmul_runs_on_opencl(caches):
    sch = _tiled(64, caches)
    x = _matmul_inputs(64)
    args = [tw.nd.array(a, tw.opencl(0)) for a in x]
    tw.build(sch.mod, target="opencl")["main"](*args)
    np.testing.assert_allclose(args[2].numpy(), x[0] @ x[1], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("caches", [False, True])
def test_tiled_matmul_cuda_source_compiles(caches):
    if nvrtc_version() is None:
        pytest.skip("NVRTC is not installed")
    source = codegen_cuda(tw.lower(_tiled(64, caches).mod, "cuda"))
    compile_cuda(source, "sm_90", ["main_kernel"], "nvrtc")


# -- random tilings ---------------------------------------------------------------------------


def _rect_matmul(m: int, n: int, k: int) -> PrimFunc:
    return _parse(f"""
@T.prim_func
def main(A: T.Buffer(({m}, {k}), "float32"), B: T.Buffer(({k}, {n}), "float32"), C: T.Buffer(({m}, {n}), "float32")):
    for i, j, k in T.grid({m}, {n}, {k}):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0.0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
""")


def _random_tiling(rng: np.random.Generator) -> tuple[Schedule, tuple[int, int, int]]:
    """Block / vthread / thread / serial tiles of both spatial axes, the vthreads outside or
    inside the thread loops, with or without a local accumulator and shared fetches."""
    tiles = [[int(rng.choice(c)) for c in ((1, 2), (1, 2, 3), (2, 4), (1, 2))] for _ in range(2)]
    kt = int(rng.choice((1, 2, 4)))
    m, n = (int(np.prod(t)) for t in tiles)
    k = kt * int(rng.choice((1, 3)))
    sch = Schedule(_rect_matmul(m, n, k))
    block = sch.get_block("C")
    local = sch.cache_write(block, 0, "local") if rng.random() < 0.6 else None
    i, j, kk = sch.get_loops(block)
    (i0, i1, i2, i3), (j0, j1, j2, j3) = sch.split(i, tiles[0]), sch.split(j, tiles[1])
    k0, k1 = sch.split(kk, [None, kt])
    inside = rng.random() < 0.3  # vthreads below the thread loops
    middle = [i2, j2, i1, j1] if inside else [i1, j1, i2, j2]
    sch.reorder(i0, j0, *middle, k0, k1, i3, j3)
    for loop, tag in zip(
        (i0, j0, i1, j1, i2, j2),
        ("blockIdx.x", "blockIdx.y", "vthread.x", "vthread.y", "threadIdx.x", "threadIdx.y"),
    ):
        sch.bind(loop, tag)
    if rng.random() < 0.6:
        for index in (0, 1):
            shared = sch.cache_read(block, index, "shared")
            sch.compute_at(shared, k0)
            loops = sch.get_loops(shared)
            depth = next(d for d, lp in enumerate(loops) if sch.get(lp) is sch.get(k0))
            below = loops[depth + 1 :] or [sch.add_unit_loop(shared)]
            fused = sch.fuse(*below) if len(below) > 1 else below[0]
            _, tx, ty = sch.split(fused, [None, tiles[0][2], tiles[1][2]])
            sch.bind(tx, "threadIdx.x")
            sch.bind(ty, "threadIdx.y")
    if local is not None:
        sch.reverse_compute_at(local, middle[-1])
    return sch, (m, n, k)


@pytest.mark.parametrize("case", range(12))
def test_random_tilings_match_numpy_and_the_serial_vthread(case):
    rng = np.random.default_rng(1000 + case)
    sch, (m, n, k) = _random_tiling(rng)
    print(sch.trace)  # shown by pytest when the case fails
    x = [rng.standard_normal(s).astype("float32") for s in ((m, k), (k, n))]
    x.append(np.full((m, n), np.nan, "float32"))
    lowered = tw.lower(sch.mod, "opencl")
    _no_vthread_left(lowered)
    got = run_module(lowered, "main", *x)[2]
    np.testing.assert_allclose(got, x[0] @ x[1], rtol=1e-4, atol=1e-4)
    serial = run_module(tw.lower(_as_serial(sch.mod), "opencl"), "main", *x)[2]
    np.testing.assert_array_equal(got, serial)


@pytest.mark.gpu
@pytest.mark.skipif(device_count() == 0, reason="needs a CUDA GPU")
@pytest.mark.parametrize("caches", [False, True])
def test_tiled_matmul_matches_numpy_on_cuda(caches):
    x = _matmul_inputs(64)
    args = [tw.nd.array(a, tw.cuda(0)) for a in x]
    tw.build(_tiled(64, caches).mod, target="cuda")["main"](*args)
    np.testing.assert_allclose(args[2].numpy(), x[0] @ x[1], rtol=1e-4, atol=1e-4)
