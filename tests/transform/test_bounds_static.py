"""verify_bounds: accesses proven out of range are refused at lowering; possible ones are not."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from evaluator import run

import tilewright as tw
from tilewright.ir import BufferStore, For, Mutator, PrimFunc, Stmt
from tilewright.script import from_source
from tilewright.script import tir as T
from tilewright.transform import OutOfBoundsError, verify_bounds


def _func(body: str, params: str) -> PrimFunc:
    func = from_source(
        "from tilewright.script import tir as T\n"
        f"@T.prim_func\ndef main({params}):\n"
        + "\n".join(f"    {line}" for line in body.split("\n"))
    )
    assert isinstance(func, PrimFunc)
    return func


def _matmul(k_extent: int) -> PrimFunc:
    # The program of issue 10: the reduction loop runs past the 1024-wide buffers.
    return _func(
        f"""for i, j, k in T.grid(1024, 1024, {k_extent}):
    with T.block("C"):
        vi, vj, vk = T.axis.remap("SSR", [i, j, k])
        with T.init():
            C[vi, vj] = 0.0
        C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]""",
        'A: T.Buffer((1024, 1024), "float32"), B: T.Buffer((1024, 1024), "float32"), '
        'C: T.Buffer((1024, 1024), "float32")',
    )


VEC = 'A: T.Buffer((1024,), "float32"), B: T.Buffer((1024,), "float32")'


@pytest.mark.parametrize("extent", [2048, 1048576])
def test_the_issue_matmul_is_refused_naming_buffer_index_and_ranges(extent):
    with pytest.raises(OutOfBoundsError) as info:
        tw.build(_matmul(extent), "c")
    text = str(info.value)
    assert text.startswith("function main: 2 accesses are out of bounds:")
    assert (
        f'block "C" reads A[vi, vk] out of bounds in loops i, j, k: index 1 (vk = k) takes '
        f"values in [0, {extent - 1}] but dimension 1 of A (shape (1024, 1024)) allows "
        f"[0, 1023]; at i = 0, j = 0, k = {extent - 1} it is {extent - 1}"
    ) in text
    assert "reads B[vk, vj] out of bounds" in text and "dimension 0 of B" in text
    # Refused at the first lowering stage, before any code exists.
    assert info.value.__notes__ == ["while building 'main', stage verify_bounds"]


def test_a_refusal_names_the_script_file_and_line():
    text = _matmul(2048).script()  # printed text parses back with the same program
    func = from_source(text, "matmul.py")
    lines = text.splitlines()
    store = "C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]"
    line = next(n for n, t in enumerate(lines, 1) if t.strip() == store)
    with pytest.raises(OutOfBoundsError) as info:
        verify_bounds(func)
    assert f"it is 2047 (matmul.py, line {line}: {store})\n" in str(info.value)


@T.prim_func
def _past_the_end(A: T.Buffer((1024,), "float32"), B: T.Buffer((1024,), "float32")):
    for i in range(1025):
        B[i] = A[i] + T.float32(1)


def test_a_decorated_function_is_refused_at_its_line_in_the_python_file():
    lines = Path(__file__).read_text().splitlines()
    store = "B[i] = A[i] + T.float32(1)"
    line = next(n for n, t in enumerate(lines, 1) if t.strip() == store)
    with pytest.raises(OutOfBoundsError) as info:
        verify_bounds(_past_the_end)
    assert f"at i = 1024 it is 1024 ({__file__}, line {line}: {store})" in str(info.value)


def test_a_program_without_spans_keeps_the_plain_message():
    func = _func("for i in range(1030):\n    B[i % 1024] = A[i]", VEC)

    class _Unspanned(Mutator):
        def visit_BufferStore(self, store: BufferStore) -> Stmt:
            return self.generic_visit(store).replace(span=None)

        def visit_For(self, loop: For) -> Stmt:
            return self.generic_visit(loop).replace(span=None)

    with pytest.raises(OutOfBoundsError) as info:
        verify_bounds(func.replace(body=_Unspanned().visit(func.body)))
    assert str(info.value).endswith("allows [0, 1023]; at i = 1029 it is 1029")


def test_a_refusal_is_an_index_error_and_happens_for_gpu_targets_too():
    with pytest.raises(IndexError, match="reads A"):
        tw.lower(_matmul(2048), "cuda")


def test_a_store_past_the_end_and_a_negative_index_are_named():
    func = _func(
        """for i in range(1025):
    with T.block("B"):
        vi = T.axis.spatial(1025, i)
        B[vi] = A[vi - 1]""",
        VEC,
    )
    with pytest.raises(OutOfBoundsError) as info:
        verify_bounds(func)
    text = str(info.value)
    assert (
        'block "B" writes B[vi] out of bounds in loops i: index 0 (vi = i) takes values in '
        "[0, 1024] but dimension 0 of B (shape (1024)) allows [0, 1023]; at i = 1024 it is 1024"
    ) in text
    assert "reads A[vi - 1]" in text and "(vi - 1 = i - 1)" in text
    assert "at i = 0 it is -1" in text


def test_a_single_violation_is_one_line():
    func = _func("for i in range(1030):\n    B[i % 1024] = A[i]", VEC)
    with pytest.raises(OutOfBoundsError, match=r"^function main: a statement reads A\[i\]") as e:
        verify_bounds(func)
    assert "\n" not in str(e.value)


def test_a_split_loop_past_the_extent_is_refused():
    func = _func("for i0, i1 in T.grid(32, 33):\n    B[i0 * 32 + i1] = A[i0 * 32 + i1]", VEC)
    with pytest.raises(OutOfBoundsError, match=r"at i0 = 31, i1 = 32 it is 1024"):
        verify_bounds(func)


GUARDED_OR_UNKNOWN = {
    # A non-divisible split: the T.where predicate keeps the index in range.
    "where": """for i0, i1 in T.grid(32, 33):
    with T.block("B"):
        vi = T.axis.spatial(1024, i0 * 33 + i1)
        T.where(i0 * 33 + i1 < 1024)
        B[vi] = A[vi]""",
    "if": """for i in range(2048):
    if i < 1024:
        B[i] = A[i]""",
    "else branch": """for i in range(2048):
    if i >= 1024:
        B[i - 1024] = A[i - 1024]
    else:
        B[i] = A[i]""",
    "if_then_else": """for i in range(1100):
    B[T.min(i, 1023)] = T.if_then_else(i < 1024, A[i], T.float32(0))""",
    "short-circuit and": """for i in range(1100):
    if i < 1024 and A[i] > T.float32(0):
        B[i] = T.float32(1)""",
    "guard on the index expression": """for i, j in T.grid(64, 17):
    if i * 16 + j < 1024:
        B[i * 16 + j] = A[i * 16 + j]""",
    "init only at the first reduction step": """for i, k in T.grid(1024, 4):
    with T.block("B"):
        vi, vk = T.axis.remap("SR", [i, k])
        with T.init():
            B[vi] = T.float32(0)
        B[vi] = B[vi] + A[vi]""",
    "data-dependent": """for i in range(1024):
    B[i] = A[T.Cast("int32", A[i])]""",
    "let-bound from a load": """for i in range(1024):
    j = T.Cast("int32", A[i]) + 5000
    B[i] = A[j]""",
}


@pytest.mark.parametrize("name", list(GUARDED_OR_UNKNOWN))
def test_accesses_that_may_be_in_range_are_not_refused(name):
    func = _func(GUARDED_OR_UNKNOWN[name], VEC)
    assert verify_bounds(func) is func


def test_guarded_programs_build_and_run():
    func = _func(GUARDED_OR_UNKNOWN["where"], VEC)
    a = np.arange(1024, dtype="float32")
    b = np.zeros(1024, "float32")
    tw.build(func, "c")["main"](a, b)
    np.testing.assert_array_equal(b, a)


SYMBOLIC = [
    # The extent is a parameter: nothing is known about it at compile time.
    (
        """for i in range(m):
    B[i] = A[i]""",
        'A: T.Buffer((1024,), "float32"), B: T.Buffer((1024,), "float32"), m: T.int32',
    ),
    # Symbolic shapes: the index and the extent are the same variable.
    (
        """for i in range(n):
    B[i] = A[i]""",
        'A: T.Buffer((n,), "float32"), B: T.Buffer((n,), "float32"), n: T.int32',
    ),
    # A loop that may run zero times, around an access that would be out of range.
    (
        """for i in range(m):
    B[0] = A[2000]""",
        'A: T.Buffer((1024,), "float32"), B: T.Buffer((1024,), "float32"), m: T.int32',
    ),
]


@pytest.mark.parametrize(("body", "params"), SYMBOLIC)
def test_symbolic_extents_are_not_refused(body, params):
    func = _func(body, params)
    assert verify_bounds(func) is func


@T.prim_func
def _gpu_unguarded(A: T.Buffer((1000,), "float32"), B: T.Buffer((1000,), "float32")):
    for bx in T.thread_binding(8, thread="blockIdx.x"):
        for tx in T.thread_binding(128, thread="threadIdx.x"):
            with T.block("B"):
                vi = T.axis.spatial(1024, bx * 128 + tx)
                B[vi] = A[vi] * T.float32(2)


def test_thread_bound_loops_count_as_loops():
    with pytest.raises(OutOfBoundsError, match=r"at bx = 7, tx = 127 it is 1023"):
        tw.lower(_gpu_unguarded, "opencl")


def test_a_guarded_thread_grid_builds_and_matches_the_interpreter():
    sch = tw.tir.Schedule(
        _func(
            """for i in range(1000):
    with T.block("B"):
        vi = T.axis.spatial(1000, i)
        B[vi] = A[vi] * T.float32(2)""",
            'A: T.Buffer((1000,), "float32"), B: T.Buffer((1000,), "float32")',
        )
    )
    bx, tx = sch.split(sch.get_loops(sch.get_block("B"))[0], [None, 128])
    sch.bind(bx, "blockIdx.x")
    sch.bind(tx, "threadIdx.x")
    assert verify_bounds(sch.mod["main"]) is sch.mod["main"]
    a = np.arange(1000, dtype="float32")
    np.testing.assert_array_equal(run(sch.mod["main"], a, np.zeros(1000, "float32"))[1], a * 2)


def test_an_access_through_a_match_buffer_view_is_checked_in_its_source():
    func = _func(
        """for i in range(4):
    with T.block("B"):
        vi = T.axis.spatial(4, i)
        src = T.match_buffer(A[vi * 300 : vi * 300 + 300], (300,))
        B[vi] = src[299]""",
        VEC,
    )
    with pytest.raises(
        OutOfBoundsError, match=r"reads A\[i \* 300 \+ 299\] \(through match_buffer src\)"
    ):
        verify_bounds(func)
