"""lower_cross_thread_reduction: reductions over threadIdx-bound loops become thread allreduces
(expected scripts), TVM's printed allreduce form round-trips, and what cannot be lowered
correctly is refused naming the block and the rule."""

# ruff: noqa: E501 - expected scripts keep one statement per line

from __future__ import annotations

import numpy as np
import pytest
from evaluator import run, run_kernel

from tilewright.ir import CommReducer, assert_structural_equal
from tilewright.ir.comm_reducer import ReducerMismatch, identity_of, match_update
from tilewright.ir.dtype import dtype
from tilewright.schedule import Schedule
from tilewright.script import from_source
from tilewright.script import tir as T
from tilewright.script.parser.errors import ParseError
from tilewright.target import Target
from tilewright.transform import (
    CrossThreadReductionError,
    gpu_stages,
    lower_cross_thread_reduction,
    lower_module,
)


def row_reduce(rows: int, length: int, kind: str = "sum", dt: str = "float32", init=None):
    """``B[i] = reduce(A[i, :])`` for ``kind`` in sum, prod, max, min."""
    start = {"sum": 0, "prod": 1, "max": -1e30, "min": 1e30}[kind] if init is None else init
    if dt.startswith("int"):
        start = {"sum": 0, "prod": 1, "max": -(2**30), "min": 2**30}[kind]
    if dt == "float16" and kind in ("max", "min"):
        start = {"max": -6e4, "min": 6e4}[kind]

    @T.prim_func
    def func(A: T.Buffer((rows, length), dt), B: T.Buffer((rows,), dt)):
        for i, k in T.grid(rows, length):
            with T.block("B"):
                vi, vk = T.axis.remap("SR", [i, k])
                with T.init():
                    B[vi] = T.cast(start, dt)
                if kind == "sum":
                    B[vi] = B[vi] + A[vi, vk]
                elif kind == "prod":
                    B[vi] = B[vi] * A[vi, vk]
                elif kind == "max":
                    B[vi] = T.max(B[vi], A[vi, vk])
                else:
                    B[vi] = T.min(A[vi, vk], B[vi])

    return func


def bound(func, *factors: int, tags=("threadIdx.x",)) -> Schedule:
    """Rows to blockIdx.x; k split by ``factors`` (outer part serial), inner parts to ``tags``."""
    sch = Schedule(func)
    i, k = sch.get_loops("B")
    sch.bind(i, "blockIdx.x")
    if factors:
        loops = sch.split(k, [None, *factors])
        for loop, tag in zip(loops[1:], tags):
            sch.bind(loop, tag)
    else:
        sch.bind(k, tags[0])
    return sch


ROW_SUM_LOWERED = """
@T.prim_func
def main(A: T.Buffer((4, 32), "float32"), B: T.Buffer((4,), "float32")):
    cross_thread_B = T.alloc_buffer((1,), scope="local")
    for i in T.thread_binding(4, thread="blockIdx.x"):
        for k in T.thread_binding(32, thread="threadIdx.x"):
            with T.block("B_cross_thread"):
                vi, vk = T.axis.remap("SR", [i, k])
                T.reads(A[vi, vk])
                T.writes(cross_thread_B[0])
                with T.attr(T.comm_reducer(lambda x, y: x + y, [T.float32(0.0)]), "reduce_scope", T.reinterpret(T.uint64(0), dtype="handle")):
                    T.evaluate(T.tvm_thread_allreduce(T.uint32(1), A[vi, vk], T.bool(True), cross_thread_B[0], k))
            with T.block("B_write_back"):
                vi = T.axis.spatial(4, i)
                T.where(k == 0)
                T.reads(cross_thread_B[0])
                T.writes(B[vi])
                B[vi] = cross_thread_B[0]
"""

GUARDED_MAX_LOWERED = """
@T.prim_func
def main(A: T.Buffer((4, 40), "float32"), B: T.Buffer((4,), "float32")):
    cross_thread_B = T.alloc_buffer((1,), scope="local")
    in_thread_B = T.alloc_buffer((1,), scope="local")
    for i in T.thread_binding(4, thread="blockIdx.x"):
        for k_1 in T.thread_binding(16, thread="threadIdx.x"):
            with T.block("B_in_thread_init"):
                T.reads()
                T.writes(in_thread_B[0])
                in_thread_B[0] = T.float32("-inf")
            for k_0 in range(3):
                with T.block("B_in_thread"):
                    vi = T.axis.spatial(4, i)
                    vk = T.axis.reduce(40, k_0 * 16 + k_1)
                    T.where(k_0 * 16 + k_1 < 40)
                    T.reads(A[vi, vk])
                    T.writes(in_thread_B[0])
                    in_thread_B[0] = T.max(in_thread_B[0], A[vi, vk])
            with T.block("B_cross_thread"):
                T.reads(in_thread_B[0])
                T.writes(cross_thread_B[0])
                with T.attr(T.comm_reducer(lambda x, y: T.max(x, y), [T.float32("-inf")]), "reduce_scope", T.reinterpret(T.uint64(0), dtype="handle")):
                    T.evaluate(T.tvm_thread_allreduce(T.uint32(1), in_thread_B[0], T.bool(True), cross_thread_B[0], k_1))
            with T.block("B_write_back"):
                vi = T.axis.spatial(4, i)
                T.where(k_1 == 0)
                T.reads(cross_thread_B[0])
                T.writes(B[vi])
                B[vi] = T.max(T.float32(-1e30), cross_thread_B[0])
"""


def _func(text: str):
    return from_source("from tilewright.script import tir as T\n" + text)


def test_row_sum_bound_to_threads_becomes_an_allreduce_and_one_write():
    got = lower_cross_thread_reduction(bound(row_reduce(4, 32)).mod["main"])
    assert_structural_equal(got, _func(ROW_SUM_LOWERED))


def test_serial_reduction_loops_reduce_in_thread_first_and_init_is_combined_last():
    # max with init -1e30 (not the identity): the threads reduce from -inf, the write-back
    # combines the init value once; the guard of the uneven split stays on the in-thread part.
    got = lower_cross_thread_reduction(bound(row_reduce(4, 40, "max"), 16).mod["main"])
    assert_structural_equal(got, _func(GUARDED_MAX_LOWERED))


def test_functions_without_cross_thread_reductions_are_returned_as_they_are():
    func = row_reduce(4, 32)
    assert lower_cross_thread_reduction(func) is func
    serial = bound(row_reduce(4, 32), 8, tags=()).mod["main"]  # split, nothing bound inside
    assert lower_cross_thread_reduction(serial) is serial


def test_a_local_output_is_written_by_every_thread_and_two_axes_are_listed():
    sch = bound(row_reduce(2, 64), 4, 16, tags=("threadIdx.y", "threadIdx.x"))
    sch.cache_write(sch.get_block("B"), 0, "local")
    got = lower_cross_thread_reduction(sch.mod["main"]).script()
    assert (
        "T.tvm_thread_allreduce(T.uint32(1), in_thread_B[0], T.bool(True), cross_thread_B[0], k_1, k_2)"
        in got
    )
    write_back = got.split('T.block("B_write_back")')[1].split("T.block")[0]
    assert "T.where" not in write_back  # B_local is each thread's own


def _allreduce_form(sch: Schedule, target: str = "cuda"):
    """The function as lower_thread_allreduce receives it (allreduce calls kept)."""
    stages = gpu_stages(Target(target))
    names = [s.name for s in stages]
    return lower_module(sch.mod, stages[: names.index("flatten_buffers") + 1])["main"]


@pytest.mark.parametrize(
    ("kind", "dt", "factors", "tags"),
    [
        ("sum", "float32", (), ("threadIdx.x",)),
        ("max", "float32", (16,), ("threadIdx.x",)),
        ("min", "int32", (12,), ("threadIdx.x",)),
        ("prod", "float64", (4, 8), ("threadIdx.y", "threadIdx.x")),
    ],
)
def test_the_allreduce_form_computes_the_reduction(kind, dt, factors, tags):
    # The evaluator runs tvm_thread_allreduce itself: the form is right before expansion.
    length = 40
    sch = bound(row_reduce(3, length, kind, dt), *factors, tags=tags)
    rng = np.random.default_rng(1)
    if dt.startswith("int"):
        a = rng.integers(-1000, 1000, (3, length)).astype(dt)
    else:
        a = (
            rng.standard_normal((3, length)) * (0.1 if kind == "prod" else 1)
            + (1 if kind == "prod" else 0)
        ).astype(dt)
    want = run(sch.mod["main"], a, np.zeros(3, dt))[1]  # thread loops run one after another
    got = run_kernel(_allreduce_form(sch), a, np.zeros(3, dt)).arrays[1]
    np.testing.assert_allclose(got, want, rtol=1e-5)


# -- TVM's printed form -----------------------------------------------------------------------

TVM_FORM = """
@T.prim_func
def main(a: T.handle, b: T.handle):
    A = T.match_buffer(a, [16, 64], dtype="float32")
    B = T.match_buffer(b, [16], dtype="float32")
    red = T.alloc_buffer([1], dtype="float32", strides=[1], scope="local")
    for i in T.serial(0, 16):
        for t in T.thread_binding(0, 64, thread="threadIdx.x"):
            with T.block("B_cross_thread_reduction"):
                vi = T.axis.spatial(16, i)
                vk = T.axis.reduce(64, t)
                T.reads([A[vi, vk]])
                T.writes([red[0]])
                T.attr(
                    T.comm_reducer(lambda x, y: T.max(x, y), [T.min_value_f32]),
                    "reduce_scope",
                    T.reinterpret(T.uint64(0), dtype="handle"),
                )
                T.evaluate(T.tvm_thread_allreduce(T.uint32(1), A[vi, vk], True, red[0], t, dtype="handle"))
            with T.block("B_write_back"):
                vi = T.axis.spatial(16, i)
                T.where(t == 0)
                B[vi] = red[0]
""".replace("T.min_value_f32", "T.float32(-3.4028234663852886e38)")

TUPLE_REDUCER = """
@T.prim_func
def main(A: T.Buffer((8,), "float32"), I: T.Buffer((8,), "int32")):
    best_v = T.alloc_buffer((1,), scope="local")
    best_i = T.alloc_buffer((1,), "int32", scope="local")
    for t in T.thread_binding(8, thread="threadIdx.x"):
        with T.block("argmax"):
            T.reads(A[t], I[t])
            T.writes(best_v[0], best_i[0])
            T.attr(T.comm_reducer(lambda v0, i0, v1, i1: (T.Select(v0 >= v1, v0, v1), T.Select(v0 >= v1, i0, i1)), [T.float32("-inf"), -1]), "reduce_scope", T.reinterpret("handle", T.uint64(0)))
            T.evaluate(T.tvm_thread_allreduce(T.uint32(2), A[t], I[t], T.bool(True), best_v[0], best_i[0], t))
"""


@pytest.mark.parametrize("text", [TVM_FORM, TUPLE_REDUCER, ROW_SUM_LOWERED, GUARDED_MAX_LOWERED])
def test_tvm_allreduce_form_parses_prints_and_reparses(text):
    func = _func(text)
    printed = func.script()
    again = from_source(printed)
    assert_structural_equal(again, func)
    assert again.script() == printed


def test_the_parsed_form_maps_to_the_reducer_and_the_intrinsic():
    func = _func(TUPLE_REDUCER)
    attr = func.body.block.body.body.block.body
    assert isinstance(attr.node, CommReducer) and attr.key == "reduce_scope"
    assert [str(d) for d in attr.node.dtypes] == ["float32", "int32"]
    assert attr.body.value.op == "tvm_thread_allreduce" and len(attr.body.value.args) == 7
    a = np.array([3, 9, -1, 9, 2, 0, 5, 1], "float32")
    result = run_kernel(func, a, np.arange(8, dtype="int32"))
    assert result.effects  # every thread took part in the exchange


def test_comm_reducer_checks_its_lambda():
    with pytest.raises(ParseError, match="1 identities need a lambda of 2 parameters"):
        _func(TVM_FORM.replace("lambda x, y: T.max(x, y)", "lambda x: x"))


# -- recognising the combiner ---------------------------------------------------------------


def test_identities():
    assert identity_of("max", dtype("float32")).value == float("-inf")
    assert identity_of("min", dtype("int8")).value == 127
    assert identity_of("max", dtype("uint16")).value == 0
    assert identity_of("prod", dtype("int64")).value == 1


def test_match_update_names_what_does_not_fit():
    block = (
        bound(row_reduce(2, 8), tags=("threadIdx.x",)).mod["main"].body.block.body.body.body.block
    )
    assert match_update(block.init, block.body).kind == "sum"
    with pytest.raises(ReducerMismatch, match="the init stores"):
        match_update(block.body.replace(indices=(block.body.indices[0] + 1,)), block.body)


# -- refusals ---------------------------------------------------------------------------------


def _script(body: str, init: str = "B[vi] = T.float32(0)", where: str = "") -> str:
    return f"""
@T.prim_func
def main(A: T.Buffer((4, 32), "float32"), B: T.Buffer((4,), "float32")):
    for i in T.thread_binding(4, thread="blockIdx.x"):
        for k in T.thread_binding(32, thread="threadIdx.x"):
            with T.block("B"):
                vi, vk = T.axis.remap("SR", [i, k])
                {where}
                with T.init():
                    {init}
                {body}
"""


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        (
            _script("B[vi] = B[vi] - A[vi, vk]"),
            r"combiner is not recognised: the update `B\[...\] = B\[vi\] - A\[vi, vk\]` is not `B\[...\] op value`",
        ),
        (_script("B[vi] = B[vi] + A[vi, vk] * B[vi]"), "combiner is not recognised"),
        (
            _script("B[vi] = B[vi] + A[vi, vk]", init="B[vi] = B[vi] * T.float32(2)"),
            "the init value reads B",
        ),
    ],
)
def test_an_unrecognised_combiner_is_refused(text, rule):
    with pytest.raises(
        CrossThreadReductionError, match=rf"block 'B' cannot be a cross-thread reduction: .*{rule}"
    ):
        lower_cross_thread_reduction(_func(text))


ACROSS_BLOCKS = """
@T.prim_func
def main(A: T.Buffer((4, 64), "float32"), B: T.Buffer((4,), "float32")):
    for i in range(4):
        for k_0 in T.thread_binding(2, thread="blockIdx.x"):
            for k_1 in T.thread_binding(32, thread="threadIdx.x"):
                with T.block("B"):
                    vi = T.axis.spatial(4, i)
                    vk = T.axis.reduce(64, k_0 * 32 + k_1)
                    with T.init():
                        B[vi] = T.float32(0)
                    B[vi] = B[vi] + A[vi, vk]
"""


def test_a_reduction_across_thread_blocks_is_refused():
    # Schedule.bind refuses it too; a script may still say it.
    with pytest.raises(
        CrossThreadReductionError,
        match=r"reduction loop k_0 is bound to blockIdx.x; a reduction can span the threads of one block",
    ):
        lower_cross_thread_reduction(_func(ACROSS_BLOCKS))


def test_a_decomposed_reduction_over_threads_is_refused():
    sch = Schedule(row_reduce(4, 32))
    i, k = sch.get_loops("B")
    sch.bind(i, "blockIdx.x")
    sch.decompose_reduction("B", k)
    sch.bind(sch.get_loops("B_update")[1], "threadIdx.x")
    with pytest.raises(CrossThreadReductionError, match=r"'B_update'.*without its T.init"):
        lower_cross_thread_reduction(sch.mod["main"])


def test_a_spatial_loop_inside_the_reduction_loops_is_refused():
    sch = Schedule(row_reduce(4, 32))
    i, k = sch.get_loops("B")
    sch.reorder(k, i)
    sch.bind(k, "threadIdx.x")
    with pytest.raises(
        CrossThreadReductionError, match="loop i lies under its reduction loops \\(k\\)"
    ):
        lower_cross_thread_reduction(sch.mod["main"])


def test_refusals_come_before_code_generation():
    import tilewright as tw

    sch = Schedule(_func(_script("B[vi] = B[vi] - A[vi, vk]")))
    with pytest.raises(CrossThreadReductionError) as info:
        tw.build(sch.mod, "cuda")
    assert "stage lower_cross_thread_reduction" in str(getattr(info.value, "__notes__", ""))
