"""apply_unroll_pragmas: the auto-scheduler's pragma_auto_unroll_max_step / pragma_unroll_explicit,
checked as expected scripts for small and large budgets, written out and marked, run as built
C programs and on PoCL against numpy."""

# ruff: noqa: E501 - expected scripts keep one statement per line

from __future__ import annotations

import numpy as np
import pytest

import tilewright as tw
from tilewright import config
from tilewright.demo import matmul_module
from tilewright.ir import PrimFunc, assert_structural_equal
from tilewright.runtime import opencl_runtime
from tilewright.runtime.cuda_runtime import device_count
from tilewright.schedule import Schedule
from tilewright.script import from_source
from tilewright.transform import simplify
from tilewright.transform.unroll_pragmas import apply_unroll_pragmas

HEADER = "from tilewright.script import tir as T\n"


def _parse(text: str) -> PrimFunc:
    return from_source(HEADER + text)  # type: ignore[return-value]


def _pragmas(step: int, explicit: int) -> str:
    return f'annotations={{"pragma_auto_unroll_max_step": {step}, "pragma_unroll_explicit": {explicit}}}'


def _before(step: int, explicit: int) -> PrimFunc:
    # Steps: k's body 1, k 4; j's body 1 + 4 = 5, j 2 * 5 = 10; i 2 * 10 = 20.
    return _parse(f"""
@T.prim_func
def main(A: T.Buffer((16,), "float32"), C: T.Buffer((4,), "float32")):
    for i in T.serial(2, {_pragmas(step, explicit)}):
        for j in range(2):
            C[i * 2 + j] = T.float32(0.0)
            for k in range(4):
                C[i * 2 + j] = C[i * 2 + j] + A[i * 8 + j * 4 + k]
""")


def _check(step: int, explicit: int, expected_body: str) -> None:
    expected = _parse(f"""
@T.prim_func
def main(A: T.Buffer((16,), "float32"), C: T.Buffer((4,), "float32")):
{_indent(expected_body.strip(chr(10)), 1)}""")
    got = apply_unroll_pragmas(_before(step, explicit))
    assert "pragma_" not in got.script()
    assert_structural_equal(simplify(got), simplify(expected))


def _indent(text: str, depth: int) -> str:
    return "\n".join("    " * depth + line for line in text.splitlines()) + "\n"


def _written_out(i: str, j: str) -> str:
    row = f"{i} * 2 + {j}"
    lines = [f"C[{row}] = T.float32(0.0)"]
    lines += [f"C[{row}] = C[{row}] + A[{i} * 8 + {j} * 4 + {k}]" for k in range(4)]
    return "\n".join(lines)


NOTHING_UNROLLED = """
for i, j in T.grid(2, 2):
    C[i * 2 + j] = T.float32(0.0)
    for k in range(4):
        C[i * 2 + j] = C[i * 2 + j] + A[i * 8 + j * 4 + k]
"""

K_MARKED = """
for i, j in T.grid(2, 2):
    C[i * 2 + j] = T.float32(0.0)
    for k in T.unroll(4):
        C[i * 2 + j] = C[i * 2 + j] + A[i * 8 + j * 4 + k]
"""

J_AND_K_MARKED = """
for i in range(2):
    for j in T.unroll(2):
        C[i * 2 + j] = T.float32(0.0)
        for k in T.unroll(4):
            C[i * 2 + j] = C[i * 2 + j] + A[i * 8 + j * 4 + k]
"""

ALL_MARKED = """
for i in T.unroll(2):
    for j in T.unroll(2):
        C[i * 2 + j] = T.float32(0.0)
        for k in T.unroll(4):
            C[i * 2 + j] = C[i * 2 + j] + A[i * 8 + j * 4 + k]
"""


def test_max_step_zero_unrolls_nothing():
    _check(0, 1, NOTHING_UNROLLED)


def test_a_small_budget_marks_only_the_innermost_loop():
    _check(8, 0, K_MARKED)  # k: 4 x 1 <= 8; j: 2 x 5 > 8, so j and i stay loops


def test_a_small_explicit_budget_writes_the_innermost_loop_out():
    _check(8, 1, "for i, j in T.grid(2, 2):\n" + _indent(_written_out("i", "j"), 1))


def test_a_budget_between_counts_marks_the_inner_two_loops():
    _check(16, 0, J_AND_K_MARKED)  # j: 2 x 5 = 10 <= 16; i: 2 x 10 = 20 > 16


def test_a_large_budget_marks_every_loop():
    _check(64, 0, ALL_MARKED)


def test_a_large_explicit_budget_writes_everything_out():
    _check(20, 1, "\n".join(_written_out(str(i), str(j)) for i in range(2) for j in range(2)))


def test_explicit_defaults_to_writing_out_and_a_user_unroll_loop_counts_as_unrolled():
    func = _parse("""
@T.prim_func
def main(A: T.Buffer((8,), "float32"), C: T.Buffer((8,), "float32")):
    for i in T.serial(2, annotations={"pragma_auto_unroll_max_step": 8}):
        for k in T.unroll(4):
            C[i * 4 + k] = A[i * 4 + k]
""")
    expected = _parse(
        """
@T.prim_func
def main(A: T.Buffer((8,), "float32"), C: T.Buffer((8,), "float32")):
"""
        + "".join(f"    C[{n}] = A[{n}]\n" for n in range(8))
    )
    assert_structural_equal(simplify(apply_unroll_pragmas(func)), simplify(expected))


def test_thread_vector_and_parallel_loops_are_left_alone():
    func = _parse("""
@T.prim_func
def main(A: T.Buffer((64,), "float32"), C: T.Buffer((64,), "float32")):
    for b in T.thread_binding(2, thread="blockIdx.x", annotations={"pragma_auto_unroll_max_step": 512, "pragma_unroll_explicit": 0}):
        for t in T.thread_binding(4, thread="threadIdx.x"):
            for p in T.parallel(2):
                for j in range(2):
                    for v in T.vectorized(4):
                        C[b * 32 + t * 8 + p * 4 + j * 2 + v] = A[b * 32 + t * 8 + p * 4 + j * 2 + v]
""")
    expected = _parse("""
@T.prim_func
def main(A: T.Buffer((64,), "float32"), C: T.Buffer((64,), "float32")):
    for b in T.thread_binding(2, thread="blockIdx.x"):
        for t in T.thread_binding(4, thread="threadIdx.x"):
            for p in T.parallel(2):
                for j in T.unroll(2):
                    for v in T.vectorized(4):
                        C[b * 32 + t * 8 + p * 4 + j * 2 + v] = A[b * 32 + t * 8 + p * 4 + j * 2 + v]
""")
    assert_structural_equal(apply_unroll_pragmas(func), expected)


def test_a_loop_of_symbolic_extent_stays_and_stops_the_loops_around_it():
    func = _parse("""
@T.prim_func
def main(a: T.handle, n: T.int32):
    A = T.match_buffer(a, (n * 2,), "float32")
    for i in T.serial(2, annotations={"pragma_auto_unroll_max_step": 1024, "pragma_unroll_explicit": 0}):
        for j in range(n):
            A[i * n + j] = T.float32(1.0)
""")
    got = apply_unroll_pragmas(func)
    assert "T.unroll" not in got.script() and "pragma_" not in got.script()


def test_a_bad_pragma_value_names_the_loop():
    func = _parse("""
@T.prim_func
def main(A: T.Buffer((4,), "float32")):
    for i in T.serial(4, annotations={"pragma_auto_unroll_max_step": "many"}):
        A[i] = T.float32(0.0)
""")
    with pytest.raises(
        ValueError,
        match=r"loop i: annotation pragma_auto_unroll_max_step must be a non-negative integer, got 'many'",
    ):
        apply_unroll_pragmas(func)


# -- through the pipeline ---------------------------------------------------------------------


def _annotated_matmul(n: int, step: int, explicit: int) -> Schedule:
    sch = Schedule(matmul_module(n))
    i, j, k = sch.get_loops(sch.get_block("C"))
    j0, j1 = sch.split(j, [None, 4])
    k0, k1 = sch.split(k, [None, 4])
    sch.reorder(i, j0, k0, k1, j1)
    sch.annotate(i, "pragma_auto_unroll_max_step", step)
    sch.annotate(i, "pragma_unroll_explicit", explicit)
    return sch


@pytest.mark.parametrize(("step", "explicit"), [(0, 1), (16, 0), (16, 1), (64, 1), (512, 0)])
def test_built_c_programs_match_numpy(step, explicit):
    sch = _annotated_matmul(16, step, explicit)
    lowered = tw.lower(sch.mod, "c")["main"].script()
    assert "pragma_" not in lowered
    # j_1 (4 x 2 steps: init under if, update) is unrolled from a budget of 8 on.
    if step == 0:
        assert "T.unroll" not in lowered and "j_1" in lowered
    elif explicit:
        assert "j_1" not in lowered
    else:
        assert "for j_1 in T.unroll(4):" in lowered
    rt_mod = tw.build(sch.mod, target="c")
    source = rt_mod.get_source()
    if step and not explicit:
        assert "#pragma GCC unroll 4" in source, source
    rng = np.random.default_rng(step)
    a, b = (rng.standard_normal((16, 16)).astype("float32") for _ in range(2))
    c = tw.nd.array(np.full((16, 16), np.nan, "float32"))
    rt_mod["main"](tw.nd.array(a), tw.nd.array(b), c)
    np.testing.assert_allclose(c.numpy(), a @ b, rtol=1e-4, atol=1e-4)


def _gpu_matmul(explicit: int) -> Schedule:
    sch = Schedule(matmul_module(32))
    block = sch.get_block("C")
    i, j, k = sch.get_loops(block)
    i0, i1 = sch.split(i, [None, 8])
    j0, j1, j2 = sch.split(j, [None, 8, 2])
    k0, k1 = sch.split(k, [None, 4])
    sch.reorder(i0, j0, i1, j1, k0, k1, j2)
    sch.bind(i0, "blockIdx.x")
    sch.bind(j0, "blockIdx.y")
    sch.bind(i1, "threadIdx.x")
    sch.bind(j1, "threadIdx.y")
    sch.annotate(i0, "pragma_auto_unroll_max_step", 64)
    sch.annotate(i0, "pragma_unroll_explicit", explicit)
    return sch


@pytest.fixture
def _need_opencl() -> None:
    if not opencl_runtime.available():
        if config.get().ci:
            pytest.fail("no OpenCL platform: CI installs PoCL (pocl-opencl-icd)")
        pytest.skip("no OpenCL platform")


@pytest.mark.usefixtures("_need_opencl")
@pytest.mark.parametrize("explicit", [0, 1])
def test_opencl_build_on_pocl_matches_numpy(explicit):
    sch = _gpu_matmul(explicit)
    rt_mod = tw.build(sch.mod, target="opencl")
    source = rt_mod.imported_modules[0].get_source()
    # k_1 x j_2 is 4 x 2 x 2 steps: unrolled; k_0 (8 x 16) is not.
    assert ("#pragma unroll" in source) == (not explicit), source
    assert "for (int k_0 = 0; k_0 < 8; ++k_0)" in source
    rng = np.random.default_rng(explicit)
    a, b = (rng.standard_normal((32, 32)).astype("float32") for _ in range(2))
    args = [tw.nd.array(x, tw.opencl(0)) for x in (a, b, np.full((32, 32), np.nan, "float32"))]
    rt_mod["main"](*args)
    np.testing.assert_allclose(args[2].numpy(), a @ b, rtol=1e-4, atol=1e-4)


@pytest.mark.gpu
@pytest.mark.skipif(device_count() == 0, reason="needs a CUDA GPU")
@pytest.mark.parametrize("explicit", [0, 1])
def test_cuda_build_matches_numpy_on_gpu(explicit):
    sch = _gpu_matmul(explicit)
    rng = np.random.default_rng(explicit)
    a, b = (rng.standard_normal((32, 32)).astype("float32") for _ in range(2))
    args = [tw.nd.array(x, tw.cuda(0)) for x in (a, b, np.full((32, 32), np.nan, "float32"))]
    tw.build(sch.mod, target="cuda")["main"](*args)
    np.testing.assert_allclose(args[2].numpy(), a @ b, rtol=1e-4, atol=1e-4)
