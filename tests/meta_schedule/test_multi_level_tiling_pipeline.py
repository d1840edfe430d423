"""MultiLevelTiling on CUDA sm_80+ pipelines the shared-memory fetch (beyond TVM): the loop
holding the caches gets three stages, compute first, its copies asynchronous; other GPU
targets keep plain fetches; pipelined candidates compute what numpy does on the evaluator
(whose race detector would catch a missing barrier)."""

from __future__ import annotations

import numpy as np
import pytest
from evaluator import run_module

import tilewright as tw
from tilewright import meta_schedule as ms
from tilewright.codegen import codegen_cuda
from tilewright.meta_schedule.testing.workloads import WORKLOADS
from tilewright.meta_schedule.tune_context import TuneContext
from tilewright.runtime.cuda_runtime.nvrtc import compile_cuda, nvrtc_version

PIPELINE = {
    "software_pipeline_stage": [0, 0, 2],
    "software_pipeline_order": [1, 2, 0],
    "software_pipeline_async_stages": [0],
}


def _annotations(target: str) -> dict[str, object]:
    w = WORKLOADS["matmul"]
    ctx = TuneContext(
        mod=tw.IRModule({"main": w.func(**w.small)}),
        target=target,
        space_generator="post-order-apply",
    )
    (sch,) = ctx.generate_design_space()
    found = {}
    for inst in sch.trace.insts:
        if inst.kind == "annotate" and str(inst.attrs[0]).startswith("software_pipeline"):
            found[str(inst.attrs[0])] = list(inst.inputs[1])
    return found


def test_cuda_sm80_and_newer_pipeline_the_shared_fetch():
    assert _annotations("nvidia/h200") == PIPELINE


@pytest.mark.parametrize("target", ["cuda -arch=sm_75", "opencl"])
def test_targets_without_asynchronous_copies_keep_plain_fetches(target):
    assert _annotations(target) == {}


@pytest.mark.parametrize("name", ["matmul", "batch_matmul", "conv2d_nhwc"])
def test_pipelined_candidates_compute_the_reference(name):
    w = WORKLOADS[name]
    ctx = TuneContext(
        mod=tw.IRModule({"main": w.func(**w.small)}),
        target="nvidia/h200",
        space_generator="post-order-apply",
        rand_state=11,
    )
    (sch,), _ = ms.sample_candidates(ctx, 1, max_attempts=2000)
    lowered = tw.lower(sch.mod, "nvidia/h200")
    assert "tw.cuda.cp_async" in lowered.script()
    inputs = w.inputs(np.random.default_rng(0), **w.small)
    for got, want in zip(run_module(lowered, "main", *inputs), w.reference(*inputs)):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_guarded_and_padded_fetches_become_predicated_copies():
    # conv2d's input is padded (if_then_else(inside, data[...], 0): copied where inside,
    # zeros elsewhere) and its weight tile is fetched under a guard (threads past the tile
    # copy nothing); both stay asynchronous and never form an address outside a buffer.
    w = WORKLOADS["conv2d_nhwc"]
    ctx = TuneContext(
        mod=tw.IRModule({"main": w.func(**w.small)}),
        target="nvidia/h200",
        space_generator="post-order-apply",
        rand_state=11,
    )
    (sch,), _ = ms.sample_candidates(ctx, 1, max_attempts=2000)
    lowered = tw.lower(sch.mod, "nvidia/h200")
    copies = [line for line in lowered.script().splitlines() if '"tw.cuda.cp_async"' in line]
    assert any(line.rstrip().endswith(", 1))") for line in copies)  # zero-filled
    assert all("T.if_then_else" in line for line in copies if line.rstrip().endswith("))"))
    source = codegen_cuda(lowered)
    assert "@!p st.shared" in source and "@p cp.async" in source
    if nvrtc_version() is not None:
        compile_cuda(source, "sm_90", ["main_kernel"], "nvrtc")


def test_the_best_hand_sgemm_configuration_is_in_the_space():
    # benchmarks/gpu_sgemm_schedules.py's 64x64 block of 64 threads, 8x8 outputs a thread
    # strided by 2x2 virtual threads, k tile 32, float4 fetches, unrolled: 0.92x cuBLAS on
    # the H200. The tuner's CUDA space must hold it: these decisions replay and pass every
    # postprocessor.
    from tilewright.meta_schedule.candidates import replay_candidate
    from tilewright.schedule import Schedule

    w = WORKLOADS["matmul"]
    mod = tw.IRModule({"main": w.func(m=4096, n=4096, k=4096)})
    ctx = TuneContext(mod=mod, target="nvidia/h200", space_generator="post-order-apply")
    (space,) = ctx.generate_design_space()
    decisions = iter([[64, 2, 8, 1, 4], [64, 2, 8, 1, 4], [128, 8, 4], 3, 3, 3])
    sch = Schedule(mod, seed=0)
    reason = replay_candidate(
        ctx, space.trace, sch, lambda inst, d: next(decisions) if inst.spec.sampling else d
    )
    assert reason is None
    text = sch.mod.script()
    assert 'T.thread_binding(64, thread="threadIdx.x")' in text
    assert 'T.thread_binding(4, thread="vthread.x")' in text
    assert '"software_pipeline_stage": [0, 0, 2]' in text
