"""An ``ExprRV`` is a ``PrimExpr`` as in TVM (an ``int32`` variable): arithmetic and
comparisons build expressions, ``Schedule.get`` evaluates an expression of sampled values,
and split/annotate take such expressions, recorded in the trace and replayed."""

from __future__ import annotations

import json

from schedule_checks import check_refused, check_schedule
from schedule_corpus import matmul

from tilewright import tir
from tilewright.ir import LT, Mul, PrimExpr, Var, dtype
from tilewright.schedule import ExprRV, Schedule, Trace
from tilewright.script import tir as T


@T.prim_func
def matmul_split_2_4(
    A: T.Buffer((8, 10), "float32"),
    B: T.Buffer((10, 12), "float32"),
    C: T.Buffer((8, 12), "float32"),
):
    for i_0, i_1, j, k in T.grid(2, 4, 12, 10):
        with T.block("C"):
            vi = T.axis.spatial(8, i_0 * 4 + i_1)
            vj, vk = T.axis.remap("SR", [j, k])
            T.block_attr({"unroll": 16})
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]


def _tiles() -> tuple[Schedule, list[ExprRV]]:
    sch = Schedule(matmul)
    i, _, _ = sch.get_loops(sch.get_block("C"))
    return sch, sch.sample_perfect_tile(i, n=3, decision=[2, 2, 2])


def test_an_expr_rv_is_an_int32_variable():
    _, (v0, v1, _) = _tiles()
    assert isinstance(v0, PrimExpr) and isinstance(v0, tir.Var)
    assert v0.dtype == dtype("int32") and v0.ty == tir.PrimType("int32")
    product = v0 * v1
    assert isinstance(product, Mul) and product.a is v0 and product.b is v1
    assert isinstance(v0 < 3, LT) and (v0 < 3).dtype == dtype("bool")
    assert not v0.same_as(v1)


def test_get_evaluates_an_expression_of_sampled_values():
    sch, (v0, v1, v2) = _tiles()
    assert sch.get(v0) == 2
    assert sch.get(v0 * v1) == 4
    assert sch.get(v0 * v1 * v2 + 1) == 9
    assert sch.get((v0 + v1) // 3 - v2 % 2) == 1
    assert sch.get(v0 < v1 + 1) == 1 and sch.get(v0 > v1) == 0


def test_split_and_annotate_take_expressions_of_sampled_values():
    sch, (v0, v1, v2) = _tiles()
    i, _, _ = sch.get_loops(sch.get_block("C"))
    sch.split(i, [v0, v1 * v2])
    sch.annotate(sch.get_block("C"), "unroll", v0 * 8)
    check_schedule(sch, matmul, matmul_split_2_4)  # expected IR, replay, numeric
    text = sch.trace.as_python()
    assert (
        "l11, l12 = sch.split(loop=l8, factors=[v4, v5 * v6], preserve_unit_iters=True, "
        "disable_predication=False)"
    ) in text
    assert 'sch.annotate(block_or_loop=b13, ann_key="unroll", ann_val=v4 * 8)' in text
    data = json.loads(json.dumps(sch.trace.as_json()))
    assert data[0][5] == [
        "Split",
        ["l8", ["v4", {"expr": "v5 * v6"}]],
        [True, False],
        ["l11", "l12"],
    ]
    replayed = Schedule(matmul)
    Trace.from_json(data).apply_to_schedule(replayed)
    split = replayed.trace.insts[5]
    assert isinstance(split.inputs[1][1], Mul)
    assert all(isinstance(rv, ExprRV) for rv in (split.inputs[1][1].a, split.inputs[1][1].b))


def test_get_of_an_expression_with_a_free_variable_is_refused():
    sch, (v0, _, _) = _tiles()
    n = Var("n", dtype("int32"))
    error = check_refused(sch, lambda: sch.get(v0 * n), "not an integer of ExprRVs")
    assert error.rule == "argument"


def test_an_expr_rv_of_another_schedule_is_stale():
    sch, _ = _tiles()
    _, (other, _, _) = _tiles()
    error = check_refused(sch, lambda: sch.get(other * 2), "not created by this schedule")
    assert error.rule == "stale-reference"


@T.prim_func
def two_stage(A: T.Buffer((16, 8), "float32"), C: T.Buffer((16, 8), "float32")):
    B = T.alloc_buffer((16, 8))
    for i, j in T.grid(16, 8):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)
    for i, j in T.grid(16, 8):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vi, vj] + T.float32(1)


@T.prim_func
def two_stage_split(A: T.Buffer((16, 8), "float32"), C: T.Buffer((16, 8), "float32")):
    B = T.alloc_buffer((4, 8, 4))
    for i, j in T.grid(16, 8):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi // 4, vj, vi % 4] = A[vi, vj] * T.float32(2)
    for i, j in T.grid(16, 8):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vi // 4, vj, vi % 4] + T.float32(1)


def test_an_index_map_may_use_sampled_values():
    sch = Schedule(two_stage)
    i, _ = sch.get_loops(sch.get_block("B"))
    v0, v1, _ = sch.sample_perfect_tile(i, n=3, decision=[2, 2, 4])
    sch.transform_layout("B", ("write", 0), lambda i, j: (i // (v0 * v1), j, i % (v0 * v1)))
    check_schedule(sch, two_stage, two_stage_split)  # expected IR, replay, numeric
    assert "index_map=lambda i, j: (i // 4, j, i % 4)" in str(sch.trace)


@T.prim_func
def elementwise(A: T.Buffer((16, 8, 4), "float32"), B: T.Buffer((16, 8, 4), "float32")):
    for i, j, k in T.grid(16, 8, 4):
        with T.block("B"):
            vi, vj, vk = T.axis.remap("SSS", [i, j, k])
            B[vi, vj, vk] = A[vi, vj, vk] * T.float32(2)


@T.prim_func
def elementwise_partitioned(A: T.Buffer((16, 8, 4), "float32"), B: T.Buffer((16, 8, 4), "float32")):
    for i, j in T.grid(16, 8):
        with T.block("B_k_common"):
            with T.block("B_k0_partition"):
                for _k0 in range(1):
                    with T.block("B_k0"):
                        vi, vj = T.axis.remap("SS", [i, j])
                        vk = T.axis.spatial((0, 1), 0)
                        B[vi, vj, vk] = A[vi, vj, vk] * T.float32(2)
            with T.block("B_k1_partition"):
                for k1 in T.serial(1, 4):
                    with T.block("B_k1"):
                        vi, vj = T.axis.remap("SS", [i, j])
                        vk = T.axis.spatial((1, 4), k1)
                        B[vi, vj, vk] = A[vi, vj, vk] * T.float32(2)


def test_loop_partition_takes_an_expression_of_sampled_values():
    sch = Schedule(elementwise)
    _, _, k = sch.get_loops(sch.get_block("B"))
    v = sch.sample_categorical([2, 3], [0.5, 0.5], decision=0)
    sch.loop_partition(k, [v - 1, None], preserve_unit_iters=False)
    check_schedule(sch, elementwise, elementwise_partitioned)  # expected IR, replay, numeric
    assert "factors=[v4 - 1, None]" in sch.trace.as_python()[-1]
