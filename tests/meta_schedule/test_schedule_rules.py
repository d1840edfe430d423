"""The schedule rules other than MultiLevelTiling, each applied alone (or after the rule it
follows in the default lists) through ``PostOrderApply``: with fixed decisions the result is
the expected script, its trace replays from Python and JSON, and it computes what the
workload's reference computes — in the evaluator, and for GPU rules built for OpenCL and run
on PoCL and thread by thread. Rules that do not apply return the schedule unchanged."""

from __future__ import annotations

import json
from collections.abc import Sequence

import numpy as np
import pytest
from evaluator import run, run_module

import tilewright as tw
from tilewright import config
from tilewright.ir import IRModule, PrimFunc, assert_structural_equal
from tilewright.meta_schedule.schedule_rule import (
    AddRFactor,
    AutoBind,
    AutoInline,
    CrossThreadReduction,
    InlineConstantScalars,
    ParallelizeVectorizeUnroll,
    RandomComputeLocation,
    ScheduleRule,
)
from tilewright.meta_schedule.schedule_rule.auto_inline import read_write_pattern
from tilewright.meta_schedule.space_generator import PostOrderApply
from tilewright.meta_schedule.testing.workloads import WORKLOADS
from tilewright.meta_schedule.tune_context import TuneContext
from tilewright.runtime import opencl_runtime
from tilewright.schedule import Schedule, Trace
from tilewright.script import tir as T

CPU = "llvm --num-cores=4"


def cpu_inline() -> AutoInline:
    return AutoInline(False, True, True, True, True, True, disallow_op=["tir.exp"])


def gpu_inline() -> AutoInline:
    return AutoInline(True, True, True, False, False, False)


# ---- helpers ---------------------------------------------------------------------------------
def space(
    func: PrimFunc, rules: Sequence[ScheduleRule], target: str = CPU, seed: int = 1
) -> list[Schedule]:
    generator = PostOrderApply(sch_rules=list(rules), postprocs=[], mutator_probs={})
    ctx = TuneContext(mod=func, target=target, space_generator=generator, rand_state=seed)
    return ctx.generate_design_space()


def decided(sch: Schedule, func: PrimFunc, decisions: Sequence[object]) -> Schedule:
    """The schedule's trace replayed on ``func`` with the sampling decisions given, in the
    order the trace samples; the replay is checked from Python and JSON too."""
    given = iter(decisions)
    result = Schedule(func)
    sch.trace.apply_to_schedule(result, decision_provider=lambda inst, old: next(given))
    assert next(given, None) is None, "more decisions than sampling instructions"
    check_replay(result, func)
    return result


def check_replay(sch: Schedule, func: PrimFunc) -> None:
    from_json = Schedule(func)
    Trace.from_json(json.dumps(sch.trace.as_json())).apply_to_schedule(from_json)
    assert_structural_equal(from_json.mod, sch.mod)
    from_python = Schedule(func)
    exec("\n".join(sch.trace.as_python()), {"sch": from_python})
    assert_structural_equal(from_python.mod, sch.mod)


def check_numbers(mod: IRModule, func: PrimFunc, seed: int = 0) -> None:
    """The scheduled module computes what the unscheduled function computes (evaluator)."""
    rng = np.random.default_rng(seed)
    inputs = [
        rng.standard_normal([int(s) for s in func.buffer_of(p).shape]).astype("float32")
        for p in func.params
    ]  # type: ignore[union-attr]
    want = run(func, *inputs)
    for got, expected in zip(run(mod["main"], *inputs), want, strict=True):
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def check_workload(mod: IRModule, name: str, sizes: dict[str, int], gpu: bool = False) -> None:
    """Against the workload's numpy reference: in the evaluator (for a GPU module, lowered
    for OpenCL and run thread by thread, races checked), and built for OpenCL on PoCL."""
    w = WORKLOADS[name]
    inputs = w.inputs(np.random.default_rng(0), **sizes)
    want = w.reference(*inputs)
    if not gpu:
        got = run(mod["main"], *inputs)
    else:
        lowered = tw.lower(mod, "opencl")
        got = run_module(lowered, "main", *inputs)
        if opencl_runtime.available():
            args = [tw.nd.array(a, tw.opencl(0)) for a in inputs]
            tw.build_lowered(lowered, target="opencl")["main"](*args)
            for a, e in zip(args, want, strict=True):
                np.testing.assert_allclose(a.numpy(), e, rtol=1e-4, atol=1e-5)
        elif config.get().ci:
            pytest.fail("no OpenCL platform: CI installs PoCL (pocl-opencl-icd)")
    for g, e in zip(got, want, strict=True):
        np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-5)


def unchanged(result: list[Schedule], func: PrimFunc) -> None:
    assert len(result) == 1
    assert_structural_equal(result[0].mod["main"], func)


# ---- AutoInline ------------------------------------------------------------------------------
@T.prim_func
def sum_scale_shift(A: T.Buffer((8, 8), "float32"), D: T.Buffer((8,), "float32")) -> None:
    B = T.alloc_buffer((8,))
    C = T.alloc_buffer((8,))
    for i, k in T.grid(8, 8):
        with T.block("B"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                B[vi] = T.float32(0)
            B[vi] = B[vi] + A[vi, vk]
    for i in range(8):
        with T.block("C"):
            vi = T.axis.remap("S", [i])
            C[vi] = B[vi] * T.float32(2)
    for i in range(8):
        with T.block("D"):
            vi = T.axis.remap("S", [i])
            D[vi] = C[vi] + T.float32(1)


@T.prim_func
def sum_scale_shift_into_consumer(A: T.Buffer((8, 8), "float32"), D: T.Buffer((8,), "float32")):
    B = T.alloc_buffer((8,))
    for i, k in T.grid(8, 8):
        with T.block("B"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                B[vi] = T.float32(0)
            B[vi] = B[vi] + A[vi, vk]
    for i in range(8):
        with T.block("D"):
            vi = T.axis.remap("S", [i])
            D[vi] = B[vi] * T.float32(2) + T.float32(1)


@T.prim_func
def sum_scale_shift_into_producer(A: T.Buffer((8, 8), "float32"), D: T.Buffer((8,), "float32")):
    B = T.alloc_buffer((8,))
    for i, k in T.grid(8, 8):
        with T.block("B"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                B[vi] = T.float32(0)
            B[vi] = B[vi] + A[vi, vk]
    for i in range(8):
        with T.block("C"):
            vi = T.axis.remap("S", [i])
            D[vi] = B[vi] * T.float32(2) + T.float32(1)


def test_auto_inline_into_the_consumer_on_cpu() -> None:
    (sch,) = space(sum_scale_shift, [cpu_inline()])
    assert_structural_equal(sch.mod["main"], sum_scale_shift_into_consumer)
    check_replay(sch, sum_scale_shift)
    check_numbers(sch.mod, sum_scale_shift)


def test_auto_inline_reverse_inlines_an_output_into_its_producer_on_gpu() -> None:
    (sch,) = space(sum_scale_shift, [gpu_inline()], "opencl")
    assert_structural_equal(sch.mod["main"], sum_scale_shift_into_producer)
    check_replay(sch, sum_scale_shift)
    check_numbers(sch.mod, sum_scale_shift)


@T.prim_func
def sum_then_exp(A: T.Buffer((8, 8), "float32"), D: T.Buffer((8,), "float32")) -> None:
    B = T.alloc_buffer((8,))
    C = T.alloc_buffer((8,))
    for i, k in T.grid(8, 8):
        with T.block("B"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                B[vi] = T.float32(0)
            B[vi] = B[vi] + A[vi, vk]
    for i in range(8):
        with T.block("C"):
            vi = T.axis.remap("S", [i])
            C[vi] = T.exp(B[vi])
    for i in range(8):
        with T.block("D"):
            vi = T.axis.remap("S", [i])
            D[vi] = C[vi] + T.float32(1)


@T.prim_func
def sum_then_branch(A: T.Buffer((8, 8), "float32"), D: T.Buffer((8,), "float32")) -> None:
    B = T.alloc_buffer((8,))
    C = T.alloc_buffer((8,))
    for i, k in T.grid(8, 8):
        with T.block("B"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                B[vi] = T.float32(0)
            B[vi] = B[vi] + A[vi, vk]
    for i in range(8):
        with T.block("C"):
            vi = T.axis.remap("S", [i])
            C[vi] = T.if_then_else(vi > 2, B[vi], T.float32(0))
    for i in range(8):
        with T.block("D"):
            vi = T.axis.remap("S", [i])
            D[vi] = C[vi] + T.float32(1)


@T.prim_func
def sum_then_transpose(A: T.Buffer((4, 6, 3), "float32"), D: T.Buffer((6, 4), "float32")):
    B = T.alloc_buffer((4, 6))
    C = T.alloc_buffer((6, 4))
    for i, j, k in T.grid(4, 6, 3):
        with T.block("B"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                B[vi, vj] = T.float32(0)
            B[vi, vj] = B[vi, vj] + A[vi, vj, vk]
    for i, j in T.grid(6, 4):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vj, vi]
    for i, j in T.grid(6, 4):
        with T.block("D"):
            vi, vj = T.axis.remap("SS", [i, j])
            D[vi, vj] = C[vi, vj] * T.float32(3)


def _blocks(sch: Schedule) -> list[str]:
    return sorted(sch.state.index("main").blocks)


@pytest.mark.parametrize(
    ("func", "rule", "kept"),
    [
        (sum_then_exp, AutoInline(False, True, False, False, False, False, ["tir.exp"]), True),
        (sum_then_exp, AutoInline(False, True, False, False, False, False, ["tir.log"]), False),
        (sum_then_branch, AutoInline(False, True, False, True, False, False), True),
        (sum_then_branch, AutoInline(False, True, False, False, False, False), False),
        (sum_then_transpose, AutoInline(False, True, False, False, False, True), True),
        (sum_then_transpose, AutoInline(False, True, False, False, True, False), False),
        (sum_then_transpose, AutoInline(False, False, False, False, False, False), True),
    ],
)
def test_auto_inline_conditions(func: PrimFunc, rule: AutoInline, kept: bool) -> None:
    (sch,) = space(func, [rule])
    assert ("C" in _blocks(sch)) is kept
    if kept:
        assert_structural_equal(sch.mod["main"], func)
    check_replay(sch, func)
    check_numbers(sch.mod, func)


@T.prim_func
def pad_then_add(A: T.Buffer((8,), "float32"), C: T.Buffer((9,), "float32")) -> None:
    P = T.alloc_buffer((9,))
    for i in range(9):
        with T.block("P"):
            vi = T.axis.remap("S", [i])
            P[vi] = T.if_then_else(vi >= 1, A[vi - 1], T.float32(0))
    for i in range(9):
        with T.block("C"):
            vi = T.axis.remap("S", [i])
            C[vi] = P[vi] + T.float32(1)


@T.prim_func
def pad_then_add_inlined(A: T.Buffer((8,), "float32"), C: T.Buffer((9,), "float32")) -> None:
    for i in range(9):
        with T.block("C"):
            vi = T.axis.remap("S", [i])
            C[vi] = T.if_then_else(vi >= 1, A[vi - 1], T.float32(0)) + T.float32(1)


def test_auto_inline_ignores_its_conditions_in_a_spatial_function() -> None:
    (sch,) = space(pad_then_add, [cpu_inline()])
    assert_structural_equal(sch.mod["main"], pad_then_add_inlined)
    check_numbers(sch.mod, pad_then_add)


def test_auto_inline_keeps_the_padding_of_a_cpu_convolution() -> None:
    w = WORKLOADS["conv2d_nhwc"]
    func = w.func(**w.small)
    (cpu,) = space(func, [cpu_inline()])
    assert_structural_equal(cpu.mod["main"], func)
    (gpu,) = space(func, [gpu_inline()], "opencl")
    assert _blocks(gpu) == ["conv2d_nhwc", "root"]
    check_replay(gpu, func)
    check_workload(gpu.mod, "conv2d_nhwc", dict(w.small))


@T.prim_func
def constant_tensor(A: T.Buffer((8,), "float32"), C: T.Buffer((8,), "float32")) -> None:
    B = T.alloc_buffer((8,))
    for i in range(8):
        with T.block("B"):
            vi = T.axis.remap("S", [i])
            B[vi] = T.float32(3)
    for i in range(8):
        with T.block("C"):
            vi = T.axis.remap("S", [i])
            C[vi] = A[vi] * B[vi]


@T.prim_func
def constant_tensor_inlined(A: T.Buffer((8,), "float32"), C: T.Buffer((8,), "float32")) -> None:
    for i in range(8):
        with T.block("C"):
            vi = T.axis.remap("S", [i])
            C[vi] = A[vi] * T.float32(3)


def test_auto_inline_inlines_a_constant_tensor_whatever_else_it_allows() -> None:
    (sch,) = space(constant_tensor, [AutoInline(False, False, True, True, True, True)])
    assert_structural_equal(sch.mod["main"], constant_tensor_inlined)
    (kept,) = space(constant_tensor, [AutoInline(False, False, False, True, True, True)])
    assert_structural_equal(kept.mod["main"], constant_tensor)


def test_read_write_pattern() -> None:
    c = sum_then_transpose.body.block.body.seq[1].body.body.block  # type: ignore[attr-defined]
    (transposed,) = c.reads
    assert read_write_pattern(transposed, c.writes[0]) == (True, True, False)
    assert read_write_pattern(c.writes[0], c.writes[0]) == (True, True, True)
    p = pad_then_add.body.block.body.seq[0].body.block  # type: ignore[attr-defined]
    shifted = p.reads[0]
    assert read_write_pattern(shifted, p.writes[0]) == (True, True, True)


def test_auto_inline_refuses_unknown_op_names() -> None:
    with pytest.raises(ValueError, match=r"tir\.expp"):
        AutoInline(False, True, False, False, False, False, ["tir.expp"])


@T.prim_func
def constant_scalar(A: T.Buffer((8,), "float32"), C: T.Buffer((8,), "float32")) -> None:
    c = T.alloc_buffer(())
    with T.block("c"):
        vi = T.axis.spatial(1, 0)
        c[()] = T.float32(59)
    for i in range(8):
        with T.block("C"):
            vi = T.axis.remap("S", [i])
            C[vi] = A[vi] + c[()]


@T.prim_func
def constant_scalar_inlined(A: T.Buffer((8,), "float32"), C: T.Buffer((8,), "float32")) -> None:
    for i in range(8):
        with T.block("C"):
            vi = T.axis.remap("S", [i])
            C[vi] = A[vi] + T.float32(59)


def test_inline_constant_scalars() -> None:
    (sch,) = space(constant_scalar, [InlineConstantScalars()])
    assert_structural_equal(sch.mod["main"], constant_scalar_inlined)
    check_replay(sch, constant_scalar)
    check_numbers(sch.mod, constant_scalar)
    # A constant tensor of several elements is AutoInline's business.
    unchanged(space(constant_tensor, [InlineConstantScalars()]), constant_tensor)


# ---- ParallelizeVectorizeUnroll --------------------------------------------------------------
@T.prim_func
def row_sum_annotated(A: T.Buffer((4, 16), "float32"), A_red: T.Buffer((4,), "float32")):
    T.func_attr({"global_symbol": "main", "tir.noalias": True})
    with T.block("root"):
        T.reads()
        T.writes()
        T.block_attr(
            {
                "meta_schedule.parallel": 64,
                "meta_schedule.vectorize": 32,
                "meta_schedule.unroll_explicit": 64,
            }
        )
        for i0, k in T.grid(4, 16):
            with T.block("A_red"):
                v0, vk = T.axis.remap("SR", [i0, k])
                with T.init():
                    A_red[v0] = T.float32(0)
                A_red[v0] = A_red[v0] + A[v0, vk]


def test_parallelize_vectorize_unroll_annotates_the_root() -> None:
    func = WORKLOADS["row_sum_127"].func(m=4, n=16)
    rule = ParallelizeVectorizeUnroll(16, 32, [0, 16, 64, 512])
    (sch,) = space(func, [rule])
    sch = decided(sch, func, [2])
    assert_structural_equal(sch.mod["main"], row_sum_annotated)
    check_numbers(sch.mod, func)


def test_parallelize_vectorize_unroll_options() -> None:
    func = WORKLOADS["row_sum_127"].func(m=4, n=16)
    (sch,) = space(func, [ParallelizeVectorizeUnroll(-1, -1, [8], unroll_explicit=False)])
    root = sch.mod["main"].body.block  # type: ignore[attr-defined]
    assert dict(root.annotations) == {"meta_schedule.unroll_implicit": 8}
    # A function of spatial blocks only is not unrolled; non-root blocks are left alone.
    add = WORKLOADS["vector_add"].func(n=64)
    (sch,) = space(add, [ParallelizeVectorizeUnroll(16, 32, [0, 16])])
    assert dict(sch.mod["main"].body.block.annotations) == {  # type: ignore[attr-defined]
        "meta_schedule.parallel": 64,
        "meta_schedule.vectorize": 32,
    }
    rule = ParallelizeVectorizeUnroll()
    rule._initialize_with_tune_context(TuneContext(mod=add, target=CPU))
    plain = Schedule(add)
    assert rule.apply(plain, plain.get_block("T_add")) == [plain]
    assert_structural_equal(plain.mod["main"], add)


# ---- AutoBind --------------------------------------------------------------------------------
@T.prim_func
def element_wise(A: T.Buffer((512, 512), "float32"), B: T.Buffer((512, 512), "float32")) -> None:
    for i, j in T.grid(512, 512):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] + T.float32(1)


@T.prim_func
def element_wise_bound(A: T.Buffer((512, 512), "float32"), B: T.Buffer((512, 512), "float32")):
    for i_j_fused_0 in T.thread_binding(256, thread="blockIdx.x"):
        for i_j_fused_1 in T.thread_binding(1024, thread="threadIdx.x"):
            with T.block("C"):
                vi = T.axis.spatial(512, (i_j_fused_0 * 1024 + i_j_fused_1) // 512)
                vj = T.axis.spatial(512, (i_j_fused_0 * 1024 + i_j_fused_1) % 512)
                B[vi, vj] = A[vi, vj] + T.float32(1)


@T.prim_func
def reduction_loop_only(
    A: T.Buffer((2,), "float32"), B: T.Buffer((2,), "float32"), C: T.Buffer((), "float32")
) -> None:
    for i0 in range(2):
        with T.block("C"):
            k0 = T.axis.reduce(2, i0)
            with T.init():
                C[()] = T.float32(1)
            C[()] = T.min(C[()], A[k0] / B[k0])


@T.prim_func
def reduction_loop_only_bound(
    A: T.Buffer((2,), "float32"), B: T.Buffer((2,), "float32"), C: T.Buffer((), "float32")
) -> None:
    for u_fused_0 in T.thread_binding(1, thread="blockIdx.x"):  # noqa: B007 - TVM's names, kept in the expected script
        for u_fused_1 in T.thread_binding(1, thread="threadIdx.x"):  # noqa: B007 - TVM's names, kept in the expected script
            for i0 in range(2):
                with T.block("C"):
                    k0 = T.axis.reduce(2, i0)
                    with T.init():
                        C[()] = T.float32(1)
                    C[()] = T.min(C[()], A[k0] / B[k0])


@T.prim_func
def zero_dim_add(
    A: T.Buffer((), "float32"), B: T.Buffer((), "float32"), C: T.Buffer((), "float32")
) -> None:
    with T.block("C"):
        vi = T.axis.spatial(1, 0)  # noqa: F841 - a block iterator the body does not use
        C[()] = A[()] + B[()]


@T.prim_func
def zero_dim_add_bound(
    A: T.Buffer((), "float32"), B: T.Buffer((), "float32"), C: T.Buffer((), "float32")
) -> None:
    for u_fused_0 in T.thread_binding(1, thread="blockIdx.x"):  # noqa: B007 - TVM's names, kept in the expected script
        for u_fused_1 in T.thread_binding(1, thread="threadIdx.x"):  # noqa: B007 - TVM's names, kept in the expected script
            with T.block("C"):
                vi = T.axis.spatial(1, 0)  # noqa: F841 - a block iterator the body does not use
                C[()] = A[()] + B[()]


@pytest.mark.parametrize(
    ("func", "expected", "decisions"),
    [
        (element_wise, element_wise_bound, [5]),
        (reduction_loop_only, reduction_loop_only_bound, []),
        (zero_dim_add, zero_dim_add_bound, []),
    ],
)
def test_auto_bind(func: PrimFunc, expected: PrimFunc, decisions: list[int]) -> None:
    (sch,) = space(func, [AutoBind()], "cuda")
    sch = decided(sch, func, decisions)
    assert_structural_equal(sch.mod["main"], expected)
    tw.lower(sch.mod, "cuda")  # every block bound: GPU lowering accepts it
    # Bound blocks are left as they are.
    (again,) = space(expected, [AutoBind()], "cuda")
    assert_structural_equal(again.mod["main"], expected)


def test_auto_bind_leaves_a_serial_loop_past_max_threadblocks() -> None:
    func = WORKLOADS["vector_add"].func(n=1024)
    rule = AutoBind(max_threadblocks=4, thread_extents=[32], max_threads_per_block=64)
    (sch,) = space(func, [rule], "opencl")
    loops = [sch.get(lp) for lp in sch.get_loops(sch.get_block("T_add"))]
    assert [(f.thread_tag, f.extent.value) for f in loops] == [  # type: ignore[union-attr]
        ("blockIdx.x", 4),
        ("threadIdx.x", 64),
        ("", 4),
    ]
    check_replay(sch, func)
    check_workload(sch.mod, "vector_add", {"n": 1024}, gpu=True)


def test_auto_bind_samples_thread_extents_up_to_the_loop() -> None:
    w = WORKLOADS["transpose"]
    func = w.func(**w.small)  # 2048 elements
    rule = AutoBind(thread_extents=[16, 64, 4096])
    (sch,) = space(func, [rule], "opencl", seed=4)
    (sample,) = [i for i in sch.trace if i.kind == "sample_categorical"]
    assert sample.attrs[0] == [16, 64]  # 4096 is past opencl's 256 threads
    for decision in (0, 1):
        check_workload(decided(sch, func, [decision]).mod, "transpose", dict(w.small), gpu=True)


def test_auto_bind_needs_a_gpu_target() -> None:
    with pytest.raises(ValueError, match="GPU target"):
        space(element_wise, [AutoBind()], CPU)


# ---- CrossThreadReduction --------------------------------------------------------------------
@T.prim_func
def softmax_reduced_across_threads(
    A: T.Buffer((8, 64), "float32"), T_softmax_norm: T.Buffer((8, 64), "float32")
) -> None:
    T.func_attr({"global_symbol": "main", "tir.noalias": True})
    T_softmax_maxelem = T.alloc_buffer((8,), scope="shared")
    T_softmax_expsum = T.alloc_buffer((8,), scope="shared")
    for i0 in range(8):
        for ax0, ax1_0 in T.grid(1, 2):
            for ax1_1 in T.thread_binding(32, thread="threadIdx.x"):
                with T.block("T_softmax_maxelem"):
                    v0 = T.axis.spatial(8, i0 + ax0)
                    vk = T.axis.reduce(64, ax1_0 * 32 + ax1_1)
                    with T.init():
                        T_softmax_maxelem[v0] = T.float32(-3.4028234663852886e38)
                    T_softmax_maxelem[v0] = T.max(T_softmax_maxelem[v0], A[v0, vk])
        for ax0, ax1_0 in T.grid(1, 2):
            for ax1_1 in T.thread_binding(32, thread="threadIdx.x"):
                with T.block("T_softmax_expsum"):
                    v0 = T.axis.spatial(8, i0 + ax0)
                    vk = T.axis.reduce(64, ax1_0 * 32 + ax1_1)
                    with T.init():
                        T_softmax_expsum[v0] = T.float32(0)
                    T_softmax_expsum[v0] = T_softmax_expsum[v0] + T.exp(
                        A[v0, vk] - T_softmax_maxelem[v0]
                    )
        for i1_0 in range(2):
            for i1_1 in T.thread_binding(32, thread="threadIdx.x"):
                with T.block("T_softmax_norm"):
                    v0 = T.axis.spatial(8, i0)
                    v1 = T.axis.spatial(64, i1_0 * 32 + i1_1)
                    T_softmax_norm[v0, v1] = (
                        T.exp(A[v0, v1] - T_softmax_maxelem[v0]) / T_softmax_expsum[v0]
                    )


def test_cross_thread_reduction_of_softmax_computes_both_reductions_at_the_row() -> None:
    w = WORKLOADS["softmax"]
    func = w.func(**w.small)
    rule = CrossThreadReduction([4, 8, 16, 32, 64, 128])
    spaces = space(func, [gpu_inline(), rule], "opencl")
    # expsum's fork, each forked again by maxelem: [both, expsum, maxelem, neither].
    assert len(spaces) == 4
    both = decided(spaces[0], func, [3, 0])  # 32 threads; maxelem takes expsum's extent
    assert_structural_equal(both.mod["main"], softmax_reduced_across_threads)
    (inlined,) = space(func, [gpu_inline()], "opencl")
    assert_structural_equal(spaces[3].mod, inlined.mod)
    # One kernel once AutoBind binds the row loop to blockIdx.x.
    for decision in (0, 3, 5):  # 4, 32 and 128 threads (128 > 64 leaves threads idle)
        sch = decided(spaces[0], func, [decision, 1])
        (bound,) = space(sch.mod["main"], [AutoBind()], "opencl")
        loops = bound.get_loops(bound.get_block("T_softmax_norm"))
        assert bound.get(loops[0]).thread_tag == "blockIdx.x"  # type: ignore[union-attr]
        check_workload(bound.mod, "softmax", dict(w.small), gpu=True)


def test_cross_thread_reduction_of_a_row_sum() -> None:
    w = WORKLOADS["row_sum_127"]
    func = w.func(**w.small)
    variant, original = space(func, [CrossThreadReduction([16, 64, 256])], "opencl")
    assert_structural_equal(original.mod["main"], func)
    sch = decided(variant, func, [1])
    (_, k0, k1) = [sch.get(lp) for lp in sch.get_loops(sch.get_block("A_red"))]
    assert (k0.extent.value, k1.thread_tag, k1.extent.value) == (2, "threadIdx.x", 64)  # type: ignore[union-attr]
    for decision in range(3):
        sch = decided(variant, func, [decision])
        (bound,) = space(sch.mod["main"], [AutoBind()], "opencl")
        check_workload(bound.mod, "row_sum_127", dict(w.small), gpu=True)


@pytest.mark.parametrize(
    ("name", "target"),
    [("matmul", "opencl"), ("row_sum_127", CPU), ("vector_add", "opencl"), ("transpose", "cuda")],
)
def test_cross_thread_reduction_does_not_apply(name: str, target: str) -> None:
    w = WORKLOADS[name]
    func = w.func(**w.small)
    unchanged(space(func, [CrossThreadReduction([32, 64])], target), func)


# ---- RandomComputeLocation -------------------------------------------------------------------
@T.prim_func
def two_stage(A: T.Buffer((16,), "float32"), C: T.Buffer((16,), "float32")) -> None:
    B = T.alloc_buffer((16,))
    for i in range(16):
        with T.block("B"):
            vi = T.axis.remap("S", [i])
            B[vi] = A[vi] * T.float32(2)
    for i in range(16):
        with T.block("C"):
            vi = T.axis.remap("S", [i])
            C[vi] = B[vi] + T.float32(1)


@T.prim_func
def two_stage_at_i(A: T.Buffer((16,), "float32"), C: T.Buffer((16,), "float32")) -> None:
    B = T.alloc_buffer((16,))
    for i in range(16):
        for ax0 in range(1):
            with T.block("B"):
                vi = T.axis.spatial(16, i + ax0)
                B[vi] = A[vi] * T.float32(2)
        with T.block("C"):
            vi = T.axis.remap("S", [i])
            C[vi] = B[vi] + T.float32(1)


@T.prim_func
def two_stage_inlined(A: T.Buffer((16,), "float32"), C: T.Buffer((16,), "float32")) -> None:
    for i in range(16):
        with T.block("C"):
            vi = T.axis.remap("S", [i])
            C[vi] = A[vi] * T.float32(2) + T.float32(1)


@pytest.mark.parametrize(
    ("decision", "expected"), [(0, two_stage_at_i), (-1, two_stage), (-2, two_stage_inlined)]
)
def test_random_compute_location(decision: int, expected: PrimFunc) -> None:
    (sch,) = space(two_stage, [RandomComputeLocation()])
    assert [i.kind for i in sch.trace if i.decision is not None] == ["sample_compute_location"]
    sch = decided(sch, two_stage, [decision])
    assert_structural_equal(sch.mod["main"], expected)
    check_numbers(sch.mod, two_stage)


def test_random_compute_location_does_not_apply() -> None:
    # An output block without consumers; a tiled block; a block sharing its outer loop.
    w = WORKLOADS["matmul"]
    matmul = w.func(**w.small)
    unchanged(space(matmul, [RandomComputeLocation()]), matmul)
    sch = Schedule(two_stage)
    sch.annotate(sch.get_block("B"), "meta_schedule.tiling_structure", "SSRSRS")
    tiled = sch.mod["main"]
    unchanged(space(tiled, [RandomComputeLocation()]), tiled)
    unchanged(space(two_stage_at_i, [RandomComputeLocation()]), two_stage_at_i)


@T.prim_func
def row_sum_then_scale(A: T.Buffer((4, 16), "float32"), C: T.Buffer((4,), "float32")) -> None:
    B = T.alloc_buffer((4,))
    for i, k in T.grid(4, 16):
        with T.block("B"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                B[vi] = T.float32(0)
            B[vi] = B[vi] + A[vi, vk]
    for i in range(4):
        with T.block("C"):
            vi = T.axis.remap("S", [i])
            C[vi] = B[vi] * T.float32(2)


def test_random_compute_location_places_the_rfactor_producer_too() -> None:
    spaces = space(row_sum_then_scale, [AddRFactor(16, 4), RandomComputeLocation()])
    assert len(spaces) == 3
    sch = spaces[0]
    sampled = [i.kind for i in sch.trace if i.decision is not None]
    # B's location first, then that of its rfactor producer B_rf.
    assert sampled == ["sample_perfect_tile", "sample_compute_location", "sample_compute_location"]
    sch = decided(sch, row_sum_then_scale, [[4, 4], 0, 0])
    outer = sch.mod["main"].body.block.body  # type: ignore[attr-defined]
    assert outer.loop_var.name == "i"  # C's loop holds B_rf and B now
    assert sorted(sch.state.index("main").blocks) == ["B", "B_rf", "C", "root"]
    node = sch.get(sch.get_block("B"))
    assert "meta_schedule.random_compute_producer" not in dict(node.annotations)  # type: ignore[union-attr]
    check_numbers(sch.mod, row_sum_then_scale)


# ---- AddRFactor ------------------------------------------------------------------------------
@T.prim_func
def row_sum_rf_outer(A: T.Buffer((4, 16), "float32"), A_red: T.Buffer((4,), "float32")):
    T.func_attr({"global_symbol": "main", "tir.noalias": True})
    A_red_rf = T.alloc_buffer((4, 2))
    for i0, k_0, k_1 in T.grid(4, 2, 8):
        with T.block("A_red_rf"):
            vk_0, v0, vk_1 = T.axis.remap("SSR", [k_0, i0, k_1])
            with T.init():
                A_red_rf[v0, vk_0] = T.float32(0)
            A_red_rf[v0, vk_0] = A_red_rf[v0, vk_0] + A[v0, vk_0 * 8 + vk_1]
    for i0, k_0 in T.grid(4, 2):
        with T.block("A_red"):
            vk_0, v0 = T.axis.remap("RS", [k_0, i0])
            T.block_attr({"meta_schedule.random_compute_producer": 1})
            with T.init():
                A_red[v0] = T.float32(0)
            A_red[v0] = A_red[v0] + A_red_rf[v0, vk_0]


@T.prim_func
def row_sum_rf_inner(A: T.Buffer((4, 16), "float32"), A_red: T.Buffer((4,), "float32")):
    T.func_attr({"global_symbol": "main", "tir.noalias": True})
    A_red_rf = T.alloc_buffer((4, 8))
    for i0, k_0, k_1 in T.grid(4, 2, 8):
        with T.block("A_red_rf"):
            vk_1, v0, vk_0 = T.axis.remap("SSR", [k_1, i0, k_0])
            with T.init():
                A_red_rf[v0, vk_1] = T.float32(0)
            A_red_rf[v0, vk_1] = A_red_rf[v0, vk_1] + A[v0, vk_0 * 8 + vk_1]
    for i0, k_1 in T.grid(4, 8):
        with T.block("A_red"):
            vk_1, v0 = T.axis.remap("RS", [k_1, i0])
            T.block_attr({"meta_schedule.random_compute_producer": 1})
            with T.init():
                A_red[v0] = T.float32(0)
            A_red[v0] = A_red[v0] + A_red_rf[v0, vk_1]


def test_add_rfactor_forks_a_row_sum() -> None:
    func = WORKLOADS["row_sum_127"].func(m=4, n=16)
    outer, inner, original = space(func, [AddRFactor(max_jobs_per_core=16)])
    assert_structural_equal(original.mod["main"], func)
    for sch, expected in ((outer, row_sum_rf_outer), (inner, row_sum_rf_inner)):
        sch = decided(sch, func, [[2, 8]])
        assert_structural_equal(sch.mod["main"], expected)
        check_workload(sch.mod, "row_sum_127", {"m": 4, "n": 16})


def test_add_rfactor_bounds_the_inner_factor() -> None:
    func = WORKLOADS["row_sum_127"].func(m=4, n=16)
    for seed in range(5):
        sch = space(func, [AddRFactor(16, max_innermost_factor=2)], seed=seed)[0]
        (tiles,) = [i.decision for i in sch.trace if i.kind == "sample_perfect_tile"]
        assert tiles[1] <= 2 and tiles[0] * tiles[1] == 16


@pytest.mark.parametrize("name", ["matmul", "vector_add", "softmax"])
def test_add_rfactor_does_not_apply_with_enough_spatial_parallelism(name: str) -> None:
    # matmul: 256 spatial iterations against 16 reduced; softmax: every reduction qualifies.
    w = WORKLOADS[name]
    func = w.func(**w.small)
    result = space(func, [AddRFactor(max_jobs_per_core=16)])
    if name == "softmax":
        assert len(result) == 9  # two reductions, each forked in three
        for sch in result:
            check_workload(sch.mod, "softmax", dict(w.small))
    else:
        unchanged(result, func)
