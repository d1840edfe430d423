"""MultiLevelTiling: with fixed decisions its schedules equal the same schedule written with
primitives by hand, replay from their traces, and compute what the workload computes (C on
the CPU; OpenCL lowering thread by thread, with the race detector, on GPU targets)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from evaluator import run, run_module

import tilewright as tw
from tilewright import meta_schedule as ms
from tilewright.ir import assert_structural_equal
from tilewright.meta_schedule.schedule_rule import MultiLevelTiling, ReuseType
from tilewright.meta_schedule.testing.workloads import WORKLOADS
from tilewright.schedule import Schedule, Trace

MATMUL = WORKLOADS["matmul"]
SIZES = {"m": 16, "n": 16, "k": 16}


def _spaces(rule: MultiLevelTiling, target: str) -> list[Schedule]:
    generator = ms.space_generator.PostOrderApply(sch_rules=[rule], postprocs=[], mutator_probs={})
    ctx = ms.TuneContext(MATMUL.func(**SIZES), target=target, space_generator=generator)
    return ctx.generate_design_space()


def _with(sch: Schedule, decisions: list[object]) -> Schedule:
    """The schedule's trace replayed with the given decisions for its sampling instructions."""
    trace = sch.trace
    sampling = [k for k, inst in enumerate(trace) if inst.spec.sampling]
    assert len(sampling) == len(decisions)
    for k, decision in zip(sampling, decisions):
        trace = trace.with_decision(k, decision)
    replayed = Schedule(MATMUL.func(**SIZES))
    Trace.from_json(json.dumps(trace.as_json())).apply_to_schedule(replayed)
    return replayed


def _check_numbers(mod: tw.IRModule, gpu: bool) -> None:
    inputs = MATMUL.inputs(np.random.default_rng(0), **SIZES)
    got = run_module(tw.lower(mod, "opencl"), "main", *inputs) if gpu else run(mod["main"], *inputs)
    for g, w in zip(got, MATMUL.reference(*inputs)):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(("vector_bytes", "j_tiles"), [(None, [2, 1, 1, 8]), (32, [2, 1, 1, 1])])
def test_cpu_tiling_with_a_packed_panel_and_a_write_cache(
    vector_bytes: int | None, j_tiles: list[int]
) -> None:
    # With 32-byte vector registers (8 float32 lanes) j is split by 8 first and only its
    # outer part is tiled: the innermost tile is 8 lanes times a sampled factor.
    rule = MultiLevelTiling(
        structure="SSRSRS",
        max_innermost_factor=8,
        reuse_read=ReuseType(req="must", levels=[1], scope="global", buffers="vector"),
        reuse_write=ReuseType(req="must", levels=[2], scope="global"),
        vector_bytes=vector_bytes,
    )
    (space,) = _spaces(rule, "llvm")
    sch = _with(space, [[1, 2, 2, 4], j_tiles, [4, 4]])

    hand = Schedule(MATMUL.func(**SIZES))
    block = hand.get_block("C")
    hand.annotate(block, "meta_schedule.tiling_structure", "SSRSRS")
    cache = hand.cache_write(block, 0, "global")
    i, j, k = hand.get_loops(block)
    i0, i1, i2, i3 = hand.split(i, [1, 2, 2, 4])
    lanes = []
    if vector_bytes:
        j, lane = hand.split(j, [None, 8])
        lanes.append(lane)
    j0, j1, j2, j3 = hand.split(j, j_tiles)
    k0, k1 = hand.split(k, [4, 4])
    hand.reorder(i0, j0, i1, j1, k0, i2, j2, k1, i3, j3, *lanes)
    # The panel of B's columns is packed once for all rows: j0 moves out of i0.
    hand.reorder(j0, i0)
    panel = hand.cache_read(block, 1, "global")  # only B: its last index is j
    hand.compute_at(panel, j0, preserve_unit_loops=True)
    hand.reverse_compute_at(cache, j1, preserve_unit_loops=True)
    assert_structural_equal(sch.mod, hand.mod)
    assert "A_global" not in sch.mod.script() and "B_global" in sch.mod.script()
    _check_numbers(sch.mod, gpu=False)


def test_a_loop_no_register_width_divides_is_tiled_as_tvm_tiles_it() -> None:
    rule = MultiLevelTiling(structure="SSRSRS", max_innermost_factor=8, vector_bytes=32)
    odd = WORKLOADS["matmul"].func(m=16, n=15, k=16)
    generator = ms.space_generator.PostOrderApply(sch_rules=[rule], postprocs=[], mutator_probs={})
    ctx = ms.TuneContext(odd, target="llvm", space_generator=generator)
    (odd_space,) = ctx.generate_design_space()
    assert sum(inst.kind == "split" for inst in odd_space.trace) == 3


def test_gpu_tiling_binds_threads_and_caches_in_shared_and_local_memory() -> None:
    rule = MultiLevelTiling(
        structure="SSSRRSRS",
        tile_binds=["blockIdx.x", "vthread.x", "threadIdx.x"],
        max_innermost_factor=64,
        vector_load_lens=[1, 2, 4],
        reuse_read=ReuseType(req="must", levels=[4], scope="shared"),
        reuse_write=ReuseType(req="must", levels=[3], scope="local"),
    )
    (space,) = _spaces(rule, "opencl")
    tiles_i, tiles_j, tiles_k = [2, 1, 4, 2, 1], [1, 2, 4, 1, 2], [2, 2, 4]
    sch = _with(space, [tiles_i, tiles_j, tiles_k, 1, 0])

    hand = Schedule(MATMUL.func(**SIZES))
    block = hand.get_block("C")
    hand.annotate(block, "meta_schedule.tiling_structure", "SSSRRSRS")
    local = hand.cache_write(block, 0, "local")
    i, j, k = hand.get_loops(block)
    i_ = hand.split(i, tiles_i)
    j_ = hand.split(j, tiles_j)
    k_ = hand.split(k, tiles_k)
    order = [i_[0], j_[0], i_[1], j_[1], i_[2], j_[2], k_[0], k_[1], i_[3], j_[3], k_[2]]
    hand.reorder(*order, i_[4], j_[4])
    for level, tag in enumerate(["blockIdx.x", "vthread.x", "threadIdx.x"]):
        hand.bind(hand.fuse(i_[level], j_[level]), tag)
    hand.annotate(block, "meta_schedule.thread_extent_low_inclusive", 1)
    hand.annotate(block, "meta_schedule.thread_extent_high_inclusive", 256)
    for index, vec in ((0, 2), (1, 1)):
        cache = hand.cache_read(block, index, "shared")
        hand.compute_at(cache, k_[0], preserve_unit_loops=True)
        hand.annotate(cache, "meta_schedule.cooperative_fetch", vec)
    thread_loop = hand.get_loops(block)[2]
    hand.reverse_compute_at(local, thread_loop, preserve_unit_loops=True)
    assert_structural_equal(sch.mod, hand.mod)

    # Finished by the GPU postprocessors, it runs thread by thread without a race.
    ctx = ms.TuneContext(MATMUL.func(**SIZES), target="opencl")
    assert ms.apply_postprocs(ctx, sch) is None
    _check_numbers(sch.mod, gpu=True)


def test_blocks_without_reuse_are_left_alone() -> None:
    rule = MultiLevelTiling(structure="SSRSRS")
    workload = WORKLOADS["vector_add"]
    func = workload.func(**workload.small)
    generator = ms.space_generator.PostOrderApply(sch_rules=[rule], postprocs=[], mutator_probs={})
    ctx = ms.TuneContext(func, target="llvm", space_generator=generator)
    (space,) = ctx.generate_design_space()
    assert_structural_equal(space.mod["main"], func)


def test_bad_configurations_are_refused() -> None:
    with pytest.raises(ValueError, match="S and R only"):
        MultiLevelTiling(structure="SSX")
    with pytest.raises(ValueError, match="'no', 'may' or 'must'"):
        ReuseType(req="sometimes")
    with pytest.raises(ValueError, match="'all' or 'vector'"):
        ReuseType(req="may", buffers="some")
    with pytest.raises(ValueError, match="tile binds"):
        MultiLevelTiling(structure="SR", tile_binds=["blockIdx.x", "threadIdx.x"])


def test_several_structures_fork_the_space() -> None:
    rule = MultiLevelTiling(
        structure=["SSRSRS", "SSRS"],
        max_innermost_factor=8,
        reuse_write=ReuseType(req="must", levels=[2], scope="global"),
    )
    ssrsrs, ssrs = _spaces(rule, "llvm")
    annotated = [[i.inputs[1] for i in s.trace if i.kind == "annotate"] for s in (ssrsrs, ssrs)]
    assert annotated == [["SSRSRS"], ["SSRS"]]
    # SSRS: the register tile innermost under the whole reduction (k is not split).
    sch = _with(ssrs, [[2, 2, 4], [2, 1, 8]])
    hand = Schedule(MATMUL.func(**SIZES))
    block = hand.get_block("C")
    hand.annotate(block, "meta_schedule.tiling_structure", "SSRS")
    cache = hand.cache_write(block, 0, "global")
    i, j, k = hand.get_loops(block)
    i0, i1, i2 = hand.split(i, [2, 2, 4])
    j0, j1, j2 = hand.split(j, [2, 1, 8])
    hand.reorder(i0, j0, i1, j1, k, i2, j2)
    hand.reverse_compute_at(cache, j1, preserve_unit_loops=True)
    assert_structural_equal(sch.mod, hand.mod)
    _check_numbers(sch.mod, gpu=False)
    with pytest.raises(ValueError, match="made of S and R"):
        MultiLevelTiling(structure=["SSRSRS", "SSX"])


def test_register_lanes_prefer_whole_registers_when_the_native_width_does_not_divide() -> None:
    from tilewright.meta_schedule.schedule_rule.multi_level_tiling import register_lanes

    assert register_lanes(1024, 16) == 16  # divides: one register
    assert register_lanes(1000, 16) == 40  # 32 + 8 lanes: 3 vector stores for 40 lanes
    assert register_lanes(100, 16) == 20  # 16 + 4
    assert register_lanes(1000, 8) == 8  # an AVX2 machine: 8 divides
    assert register_lanes(1001, 16) == 1  # no divisor worth a vector: not split
    assert register_lanes(50, 8, bits=64) == 10  # float64: 8 + 2 lanes, both >= 128 bits
