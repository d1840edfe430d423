"""inject_software_pipeline: a loop annotated with stages becomes prologue, loop and epilogue
with its stage-crossing buffers doubled (expected script; the annotation replays from the
trace; C, the GPU evaluator with its race detector and NVRTC), and what it refuses."""

from __future__ import annotations

import numpy as np
import pytest
from evaluator import run_module

import tilewright as tw
from tilewright.codegen import codegen_cuda
from tilewright.ir import IRModule, assert_structural_equal
from tilewright.runtime.cuda_runtime.nvrtc import compile_cuda, nvrtc_version
from tilewright.schedule import Trace
from tilewright.script import tir as T
from tilewright.target import Target
from tilewright.tir import Schedule
from tilewright.transform.inject_software_pipeline import (
    SoftwarePipelineError,
    inject_software_pipeline,
)
from tilewright.transform.pipeline import cpu_stages, gpu_stages, lower_module
from tilewright.transform.simplify import simplify


@T.prim_func
def scale_rows(A: T.Buffer((8, 16), "float32"), C: T.Buffer((8, 16), "float32")):
    for k, j in T.grid(8, 16):
        with T.block("C"):
            vk, vj = T.axis.remap("SS", [k, j])
            C[vk, vj] = A[vk, vj] * T.float32(2) + T.float32(1)


@T.prim_func
def scale_rows_pipelined(A: T.Buffer((8, 16), "float32"), C: T.Buffer((8, 16), "float32")):
    A_global = T.decl_buffer((2, 1, 16), "float32")  # the version, then the row tile
    for ax0 in range(16):
        A_global[0, 0, ax0] = A[0, ax0]
    for k in range(7):
        for ax0 in range(16):
            A_global[(k + 1) % 2, 0, ax0] = A[k + 1, ax0]
        for j in range(16):
            C[k, j] = A_global[k % 2, 0, j] * T.float32(2) + T.float32(1)
    for j in range(16):
        C[7, j] = A_global[1, 0, j] * T.float32(2) + T.float32(1)


def _staged(stages: list[int] | None = (0, 1), order: list[int] | None = None) -> Schedule:
    """Row k of A copied to a buffer, then scaled into C: two statements per iteration."""
    sch = Schedule(scale_rows)
    block = sch.get_block("C")
    k, _ = sch.get_loops(block)
    row = sch.cache_read(block, 0, "global")
    sch.compute_at(row, k)
    if stages is not None:
        sch.annotate(k, "software_pipeline_stage", list(stages))
    if order is not None:
        sch.annotate(k, "software_pipeline_order", order)
    return sch


def _before_pipeline(mod: IRModule) -> IRModule:
    stages = cpu_stages(Target("c"))
    names = [s.name for s in stages]
    return lower_module(mod, list(stages[: names.index("inject_software_pipeline")]))


def test_two_stages_give_prologue_loop_epilogue_and_a_double_buffer() -> None:
    sch = _staged()
    got = simplify(inject_software_pipeline(_before_pipeline(sch.mod)["main"]))
    want = simplify(scale_rows_pipelined).replace(attrs=got.attrs)
    assert_structural_equal(got, want)


def test_the_annotation_replays_and_the_pipelined_c_computes_the_same() -> None:
    sch = _staged()
    replayed = Schedule(scale_rows)
    Trace.from_json(sch.trace.as_json()).apply_to_schedule(replayed)
    assert_structural_equal(replayed.mod, sch.mod)
    a = np.random.default_rng(0).standard_normal((8, 16)).astype("float32")
    for schedule in (sch, _staged(None), _staged((0, 2)), _staged((0, 1), order=[1, 0])):
        c = np.zeros((8, 16), "float32")
        tw.build(schedule.mod, target="c")["main"](a, c)
        np.testing.assert_allclose(c, a * 2 + 1, rtol=1e-6)


def test_three_stages_make_three_versions() -> None:
    lowered = lower_module(_staged((0, 2)).mod, list(cpu_stages(Target("c"))))
    assert "A_global = T.decl_buffer((48,)" in lowered.script()


@T.prim_func
def tiled_matmul(A: T.Buffer((64, 64), "float32"), B: T.Buffer((64, 64), "float32"),
                 C: T.Buffer((64, 64), "float32")):  # fmt: skip
    for i, j, k in T.grid(64, 64, 64):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]


def _gpu_matmul(stages: list[int]) -> Schedule:
    """16 x 16 tiles per block, one output per thread, k tiles of 8 through shared memory."""
    sch = Schedule(tiled_matmul)
    block = sch.get_block("C")
    i, j, k = sch.get_loops(block)
    i0, i1 = sch.split(i, [None, 16])
    j0, j1 = sch.split(j, [None, 16])
    k0, k1 = sch.split(k, [None, 8])
    sch.reorder(i0, j0, i1, j1, k0, k1)
    sch.bind(i0, "blockIdx.y")
    sch.bind(j0, "blockIdx.x")
    sch.bind(i1, "threadIdx.y")
    sch.bind(j1, "threadIdx.x")
    for index in (0, 1):
        tile = sch.cache_read(block, index, "shared")
        sch.compute_at(tile, k0)
        fused = sch.fuse(*sch.get_loops(tile)[-2:])
        _, y, x = sch.split(fused, [None, 16, 16])
        sch.bind(y, "threadIdx.y")
        sch.bind(x, "threadIdx.x")
    sch.annotate(k0, "software_pipeline_stage", stages)
    return sch


def test_a_shared_memory_pipeline_is_race_free_in_the_evaluator_and_compiles() -> None:
    rng = np.random.default_rng(1)
    a, b = (rng.standard_normal((64, 64)).astype("float32") for _ in range(2))
    sch = _gpu_matmul([0, 0, 1])
    _, _, c = run_module(tw.lower(sch.mod, "opencl"), "main", a, b, np.zeros((64, 64), "float32"))
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)
    lowered = lower_module(sch.mod, list(gpu_stages(Target("cuda"))))
    source = codegen_cuda(lowered)
    # Two versions of each tile: the next k tile is fetched into the other one.
    assert "__shared__ float A_shared[512];" in source
    assert "A_shared[(k_0 + 1) % 2 * 256 + " in source and "A_shared[k_0 % 2 * 256 + " in source
    if nvrtc_version() is None:
        pytest.skip("NVRTC is not installed")
    compile_cuda(source, "sm_90", ["main_kernel"], "nvrtc")


@pytest.mark.parametrize(
    ("stages", "order", "match"),
    [
        ([0], None, r"must give a stage >= 0 to each of the 2 statements"),
        ([1, 0], None, r"written at stage 1 and read at the earlier stage 0"),
        ([0, 0], [1, 0], r"puts statements 0 and 1 of stage 0, which share buffer A_global"),
        ([0, 1], [0, 0], r"is not an order of 2 statements"),
    ],
)
def test_what_the_pass_refuses(stages: list[int], order: list[int] | None, match: str) -> None:
    sch = _staged(stages, order)
    with pytest.raises(SoftwarePipelineError, match=match):
        tw.lower(sch.mod, "c")


def test_thread_loops_and_stray_annotations_are_refused() -> None:
    sch = _staged(None)
    (k, _) = sch.get_loops(sch.get_block("C"))
    sch.annotate(k, "software_pipeline_async_stages", [0])
    with pytest.raises(SoftwarePipelineError, match="without software_pipeline_stage"):
        tw.lower(sch.mod, "c")
    sch = _staged()
    (k, _) = sch.get_loops(sch.get_block("C"))
    sch.annotate(k, "software_pipeline_async_stages", [3])
    with pytest.raises(SoftwarePipelineError, match=r"names stages \[3\] that no statement has"):
        tw.lower(sch.mod, "c")
    gpu = _gpu_matmul([0, 0, 1])
    i0 = gpu.get_loops(gpu.get_block("C"))[0]
    gpu.annotate(i0, "software_pipeline_stage", [0])
    with pytest.raises(SoftwarePipelineError, match="a thread_binding loop cannot be pipelined"):
        tw.lower(gpu.mod, "cuda")


def _async_matmul() -> Schedule:
    sch = _gpu_matmul([0, 0, 1])
    k0 = next(
        loop
        for loop in sch.get_loops(sch.get_block("A_shared"))
        if sch.get(loop).loop_var.name == "k_0"
    )
    sch.annotate(k0, "software_pipeline_async_stages", [0])
    return sch


def test_async_stages_become_cp_async_with_groups_waits_and_barriers() -> None:
    source = codegen_cuda(lower_module(_async_matmul().mod, list(gpu_stages(Target("cuda")))))
    assert source.count("cp.async.ca.shared.global") == 4  # A and B: prologue and loop
    assert source.count("cp.async.commit_group") == 3  # prologue, loop, epilogue (empty)
    # Before the compute of tile k: only tile k + 1's group may be in flight; before the
    # last compute, none. Each wait is followed by one barrier.
    loop_wait = 'asm volatile("cp.async.wait_group 1;\\n" ::: "memory");\n    __syncthreads();\n'
    last_wait = 'asm volatile("cp.async.wait_group 0;\\n" ::: "memory");\n  __syncthreads();\n'
    assert loop_wait in source and last_wait in source, source
    assert "__syncthreads();\n    __syncthreads();" not in source
    for arch in ("sm_80", "sm_90"):
        if nvrtc_version() is None:
            pytest.skip("NVRTC is not installed")
        compile_cuda(source, arch, ["main_kernel"], "nvrtc")


def test_async_stages_run_synchronously_where_there_is_no_cp_async() -> None:
    sch = _async_matmul()
    for target in ("opencl", "nvidia/tesla-p100"):  # no cp.async: plain copies
        lowered = lower_module(sch.mod, list(gpu_stages(Target(target))))
        assert "cp_async" not in lowered.script()
    rng = np.random.default_rng(2)
    a, b = (rng.standard_normal((64, 64)).astype("float32") for _ in range(2))
    _, _, c = run_module(tw.lower(sch.mod, "opencl"), "main", a, b, np.zeros((64, 64), "float32"))
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)
    # On the CPU the asynchronous stages are ordinary stages.
    cpu = _staged()
    (k, _) = cpu.get_loops(cpu.get_block("C"))
    cpu.annotate(k, "software_pipeline_async_stages", [0])
    a = rng.standard_normal((8, 16)).astype("float32")
    out = np.zeros((8, 16), "float32")
    tw.build(cpu.mod, target="c")["main"](a, out)
    np.testing.assert_allclose(out, a * 2 + 1, rtol=1e-6)


@T.prim_func
def add_rows(A: T.Buffer((8, 16), "float32"), B: T.Buffer((8, 16), "float32"),
             C: T.Buffer((8, 16), "float32")):  # fmt: skip
    for k, j in T.grid(8, 16):
        with T.block("C"):
            vk, vj = T.axis.remap("SS", [k, j])
            C[vk, vj] = A[vk, vj] + B[vk, vj]


def test_the_order_gives_each_statement_its_position_as_tvm_does() -> None:
    # Statements (copy A, copy B, compute) with order [1, 2, 0]: statement i goes to
    # position order[i], so the compute of row k comes first in the loop, then the copies
    # of row k + 1 (read as "the statements in this order" it would be copy B first).
    sch = Schedule(add_rows)
    block = sch.get_block("C")
    k, _ = sch.get_loops(block)
    for index in (0, 1):
        sch.compute_at(sch.cache_read(block, index, "global"), k)
    sch.annotate(k, "software_pipeline_stage", [0, 0, 1])
    sch.annotate(k, "software_pipeline_order", [1, 2, 0])
    loop = simplify(inject_software_pipeline(_before_pipeline(sch.mod)["main"])).script()
    body = loop[loop.index("for k in range(7):") :]
    positions = [body.index(text) for text in ("C[k, j] =", "A_global[", "B_global[")]
    assert positions == sorted(positions)
    rng = np.random.default_rng(1)
    a, b = (rng.standard_normal((8, 16)).astype("float32") for _ in range(2))
    c = np.zeros((8, 16), "float32")
    tw.build(sch.mod, target="c")["main"](a, b, c)
    np.testing.assert_allclose(c, a + b, rtol=1e-6)
