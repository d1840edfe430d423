"""Mutators on hand-built traces of corpus workloads: each changes exactly the decision (or
annotation value) it is for, to a legal other value; every result replays (directly, from
JSON text, from Python text) to a module that computes what numpy computes; many seeded
mutations stay valid; the same seed gives the same result; and a trace without the pattern
gives None."""

from __future__ import annotations

import json
import random
from collections.abc import Callable

import numpy as np
import pytest
from evaluator import run

from tilewright import meta_schedule as ms
from tilewright.ir import Block, For, ForKind, PrimFunc, assert_structural_equal
from tilewright.meta_schedule import mutator as M
from tilewright.meta_schedule.analysis import (
    COOPERATIVE_FETCH,
    PARALLEL,
    UNROLL_EXPLICIT,
    UNROLL_IMPLICIT,
    VECTORIZE,
)
from tilewright.meta_schedule.mutator.mutate_compute_location import locations_at
from tilewright.meta_schedule.mutator.mutate_parallel import (
    candidate_values,
    fusible_loops,
    parallel_outcomes,
)
from tilewright.meta_schedule.mutator.mutate_thread_binding import thread_extent_samples
from tilewright.meta_schedule.mutator.replay import replays
from tilewright.meta_schedule.postproc import RewriteParallelVectorizeUnroll
from tilewright.meta_schedule.testing.workloads import WORKLOADS
from tilewright.schedule import LoopRV, Schedule, Trace
from tilewright.schedule.tree import walk

SEEDS = range(200)
CPU = "llvm -num-cores=4"  # MutateParallel's largest value: 16 jobs x 4 cores = 64


def _func(name: str) -> PrimFunc:
    w = WORKLOADS[name]
    return w.func(**w.small)


def _ready(mutator: M.Mutator, name: str, target: str = CPU) -> M.Mutator:
    mutator._initialize_with_tune_context(ms.TuneContext(_func(name), target=target))
    return mutator


def _changed(before: Trace, after: Trace) -> list[int]:
    """Indices of the instructions that differ (inputs, attributes or decision)."""
    assert [i.kind for i in after] == [i.kind for i in before]
    return [
        k
        for k, (a, b) in enumerate(zip(before.insts, after.insts))
        if (a.inputs, a.attrs, a.decision) != (b.inputs, b.attrs, b.decision)
    ]


def _replayed(name: str, trace: Trace) -> Schedule:
    """``trace`` replayed on the workload directly, from its JSON text and from its Python
    text, all three to the same module."""
    sch = Schedule(_func(name))
    trace.apply_to_schedule(sch)
    from_json = Schedule(_func(name))
    Trace.from_json(json.dumps(trace.as_json())).apply_to_schedule(from_json)
    assert_structural_equal(from_json.mod, sch.mod)
    from_python = Schedule(_func(name))
    exec("\n".join(trace.as_python()), {"sch": from_python})
    assert_structural_equal(from_python.mod, sch.mod)
    return sch


def _check_computes(name: str, trace: Trace) -> None:
    """The trace replays (three ways) to a module that computes what numpy computes."""
    w = WORKLOADS[name]
    sch = _replayed(name, trace)
    inputs = w.inputs(np.random.default_rng(0), **w.small)
    got = run(sch.mod["main"], *inputs)
    for g, want in zip(got, w.reference(*inputs)):
        np.testing.assert_allclose(g, want, rtol=1e-4, atol=1e-4, err_msg=str(trace))


def _mutations(mutator: M.Mutator, trace: Trace, seeds: range = SEEDS) -> list[Trace]:
    """The mutator's result for each seed; the first seeds are applied twice and must give
    the same result."""
    results = []
    for seed in seeds:
        result = mutator.apply(trace, random.Random(seed))
        assert result is not None
        if seed < seeds.start + 5:
            again = mutator.apply(trace, random.Random(seed))
            assert again is not None and again.as_json() == result.as_json()
        results.append(result)
    return results


def _distinct(traces: list[Trace]) -> list[Trace]:
    seen: dict[str, Trace] = {}
    for t in traces:
        seen.setdefault(json.dumps(t.as_json()), t)
    return list(seen.values())


def _check_all(name: str, results: list[Trace], computed: int = 4) -> None:
    """Every distinct result replays on the workload; the first few also replay from text
    and compute what numpy computes."""
    distinct = _distinct(results)
    for k, result in enumerate(distinct):
        if k < computed:
            _check_computes(name, result)
        else:
            result.apply_to_schedule(Schedule(_func(name)))


# ---- hand-built traces, in the patterns the schedule rules write -------------------------


def matmul_cpu(unroll: tuple[list[int], list[float], int] | None = None) -> Trace:
    """Matmul tiled SSRSRS-style, the root annotated for parallelism and unrolling."""
    sch = Schedule(_func("matmul"))
    block = sch.get_block("C")
    i, j, k = sch.get_loops(block)
    ti = sch.sample_perfect_tile(i, n=4, max_innermost_factor=4, decision=[2, 2, 1, 4])
    tj = sch.sample_perfect_tile(j, n=4, max_innermost_factor=4, decision=[1, 4, 2, 2])
    tk = sch.sample_perfect_tile(k, n=2, max_innermost_factor=4, decision=[4, 4])
    i0, i1, i2, i3 = sch.split(i, ti)
    j0, j1, j2, j3 = sch.split(j, tj)
    k0, k1 = sch.split(k, tk)
    sch.reorder(i0, j0, i1, j1, k0, i2, j2, k1, i3, j3)
    root = sch.get_block("root")
    sch.annotate(root, PARALLEL, 64)
    sch.annotate(root, VECTORIZE, 64)
    candidates, probs, decision = unroll or ([0, 16, 64, 512], [0.25] * 4, 1)
    step = sch.sample_categorical(candidates, probs, decision=decision)
    sch.annotate(root, UNROLL_EXPLICIT, step)
    return sch.trace


def matmul_gpu() -> Trace:
    """Matmul tiled for a GPU: blockIdx and threadIdx tiles, A fetched cooperatively into
    shared memory with a sampled vector length, an implicit unroll step."""
    sch = Schedule(_func("matmul"))
    block = sch.get_block("C")
    i, j, k = sch.get_loops(block)
    ti = sch.sample_perfect_tile(i, n=3, max_innermost_factor=4, decision=[2, 4, 2])
    tj = sch.sample_perfect_tile(j, n=3, max_innermost_factor=4, decision=[4, 2, 2])
    tk = sch.sample_perfect_tile(k, n=2, max_innermost_factor=8, decision=[2, 8])
    i0, i1, i2 = sch.split(i, ti)
    j0, j1, j2 = sch.split(j, tj)
    k0, k1 = sch.split(k, tk)
    sch.reorder(i0, j0, i1, j1, k0, k1, i2, j2)
    sch.bind(sch.fuse(i0, j0), "blockIdx.x")
    sch.bind(sch.fuse(i1, j1), "threadIdx.x")
    shared = sch.cache_read(block, 0, "shared")
    sch.compute_at(shared, k0)
    vector = sch.sample_categorical([1, 2, 4], [1 / 3] * 3, decision=1)
    sch.annotate(shared, COOPERATIVE_FETCH, vector)
    step = sch.sample_categorical([0, 16, 64], [1 / 3] * 3, decision=0)
    sch.annotate(block, UNROLL_IMPLICIT, step)
    return sch.trace


CANDIDATES = [4, 8, 16, 32, 64]


def _bind_threads(sch: Schedule, loop: LoopRV, decision: int = 3) -> None:
    extent = sch.sample_categorical(CANDIDATES, [0.2] * 5, decision=decision)
    _, inner = sch.split(loop, [None, extent])
    sch.bind(inner, "threadIdx.x")


def softmax_kernels() -> Trace:
    """Softmax as three kernels: the two reductions across threads (CrossThreadReduction's
    pattern), the normalisation bound by AutoBind's pattern; each samples its thread extent."""
    sch = Schedule(_func("softmax"))
    sch.compute_inline(sch.get_block("T_softmax_exp"))
    for name, decision in (
        ("T_softmax_maxelem", 1),
        ("T_softmax_expsum", 2),
        ("T_softmax_norm", 3),
    ):
        row, col = sch.get_loops(sch.get_block(name))
        sch.bind(row, "blockIdx.x")
        _bind_threads(sch, col, decision)
    return sch.trace


def softmax_fused(norm_extent: int | None) -> Trace:
    """Softmax as two kernels: the max reduction alone, and the sum computed under the
    normalisation's blockIdx loop, where both threadIdx.x extents must agree. The sum's
    extent is sampled; the normalisation's is ``norm_extent`` (None: sampled too)."""
    sch = Schedule(_func("softmax"))
    sch.compute_inline(sch.get_block("T_softmax_exp"))
    row, col = sch.get_loops(sch.get_block("T_softmax_maxelem"))
    sch.bind(row, "blockIdx.x")
    _bind_threads(sch, col, 1)
    norm = sch.get_block("T_softmax_norm")
    row, col = sch.get_loops(norm)
    sch.bind(row, "blockIdx.x")
    if norm_extent is None:
        _bind_threads(sch, col, 3)
    else:
        _, inner = sch.split(col, [None, norm_extent])
        sch.bind(inner, "threadIdx.x")
    expsum = sch.get_block("T_softmax_expsum")
    sch.compute_at(expsum, row)
    *_, k = sch.get_loops(expsum)
    _bind_threads(sch, k, 3)
    return sch.trace


def bias_relu_locations() -> Trace:
    """matmul_bias_relu with the bias and the matmul placed by sampled compute locations."""
    sch = Schedule(_func("matmul_bias_relu"))
    bias = sch.get_block("bias_add")
    sch.compute_at(bias, sch.sample_compute_location(bias, decision=1))
    matmul = sch.get_block("matmul")
    sch.compute_at(matmul, sch.sample_compute_location(matmul, decision=-1))
    return sch.trace


def cached_matmul_location(then_loops: bool = False) -> Trace:
    """A local cache of A placed by a sampled location, then annotated (which refuses once
    the cache is inlined, at location -2, legal as that location is) or, with
    ``then_loops``, its three loops taken and the first unrolled (which needs a location
    where the cache has three loops)."""
    sch = Schedule(_func("matmul"))
    block = sch.get_block("C")
    cache = sch.cache_read(block, 0, "local")
    sch.compute_at(cache, sch.sample_compute_location(cache, decision=1))
    if then_loops:
        first, _, _ = sch.get_loops(cache)
        sch.unroll(first)
    else:
        sch.annotate(cache, "pragma_auto_unroll_max_step", 16)
    return sch.trace


# ---- MutateTileSize ------------------------------------------------------------------------


def _moved_divisor(old: list[int], new: list[int]) -> bool:
    """``new`` is ``old`` with a divisor d > 1 of one factor moved to another factor."""
    diff = [k for k in range(len(old)) if old[k] != new[k]]
    if len(diff) != 2:
        return False
    x, y = diff if new[diff[0]] < old[diff[0]] else diff[::-1]
    d = old[x] // new[x]
    return old[x] % new[x] == 0 and d > 1 and new[y] == old[y] * d


# A replay of the GPU trace (its compute_at) costs about ten times one of the CPU trace.
@pytest.mark.parametrize(("build", "seeds"), [(matmul_cpu, SEEDS), (matmul_gpu, range(60))])
def test_tile_size_moves_a_divisor_or_changes_a_fetch_vector_length(
    build: Callable[[], Trace], seeds: range
) -> None:
    trace = build()
    mutator = _ready(M.MutateTileSize(), "matmul")
    tiles = {k for k, i in enumerate(trace.insts) if i.kind == "sample_perfect_tile"}
    fetch = {k for k, i in enumerate(trace.insts) if i.kind == "sample_categorical"}
    fetch -= {len(trace) - 2}  # the unroll step, last but one in both traces
    touched = set()
    results = _mutations(mutator, trace, seeds)
    for result in results:
        (k,) = _changed(trace, result)
        touched.add(k)
        old, new = trace.insts[k], result.insts[k]
        if k in tiles:
            n, bound = old.attrs
            assert len(new.decision) == n and np.prod(new.decision) == np.prod(old.decision)
            assert new.decision[-1] <= bound
            assert _moved_divisor(old.decision, new.decision), (old.decision, new.decision)
        else:
            assert k in fetch and new.decision in (0, 2)
    assert touched == tiles | fetch
    _check_all("matmul", results)


def test_tile_size_keeps_the_innermost_factor_within_its_bound() -> None:
    sch = Schedule(_func("vector_add"))
    (i,) = sch.get_loops(sch.get_block("T_add"))
    sch.split(i, sch.sample_perfect_tile(i, n=2, max_innermost_factor=4, decision=[256, 4]))
    trace = sch.trace
    results = _mutations(M.MutateTileSize(), trace)
    # Nothing can move into the full innermost factor: only 2 or 4 move out of it.
    assert {tuple(r.insts[2].decision) for r in results} == {(512, 2), (1024, 1)}
    _check_computes("vector_add", results[0])


def test_tile_size_gives_none_without_a_changeable_decision() -> None:
    sch = Schedule(_func("vector_add"))
    (i,) = sch.get_loops(sch.get_block("T_add"))
    sch.sample_perfect_tile(i, n=1, decision=[1024])
    sch.sample_perfect_tile(i, n=2, max_innermost_factor=1, decision=[1024, 1])
    single = sch.sample_categorical([4], [1.0], decision=0)
    sch.annotate(sch.get_block("T_add"), COOPERATIVE_FETCH, single)
    assert M.MutateTileSize().apply(sch.trace, random.Random(0)) is None
    assert M.MutateTileSize().apply(Trace(), random.Random(0)) is None


def test_mutated_traces_end_before_the_postprocessors() -> None:
    trace = matmul_cpu()
    sch = Schedule(_func("matmul"))
    trace.apply_to_schedule(sch)
    sch.enter_postproc()
    sch.annotate(sch.get_block("root"), "pragma_auto_unroll_max_step", 16)
    space = Trace(sch.trace.insts[: len(trace)])
    for mutator in (M.MutateTileSize(), M.MutateUnroll(), _ready(M.MutateParallel(), "matmul")):
        result = mutator.apply(sch.trace, random.Random(0))
        assert result is not None and len(_changed(space, result)) == 1


@pytest.mark.parametrize(
    ("mutator", "name", "build"),
    [
        (M.MutateTileSize(), "matmul", matmul_gpu),
        (M.MutateUnroll(), "matmul", matmul_gpu),
        (M.MutateThreadBinding(), "softmax", softmax_kernels),
        (M.MutateComputeLocation(), "matmul_bias_relu", bias_relu_locations),
        (M.MutateParallel(), "matmul", matmul_cpu),
    ],
)
def test_a_trace_read_back_from_json_mutates_alike(
    mutator: M.Mutator, name: str, build: Callable[[], Trace]
) -> None:
    _ready(mutator, name)
    trace = build()
    decoded = Trace.from_json(json.dumps(trace.as_json()))
    for seed in range(3):
        direct = mutator.apply(trace, random.Random(seed))
        read_back = mutator.apply(decoded, random.Random(seed))
        assert direct is not None and read_back is not None
        assert read_back.as_json() == direct.as_json()


# ---- MutateUnroll --------------------------------------------------------------------------


def test_unroll_changes_only_the_unroll_step() -> None:
    for build, name in ((matmul_cpu, "matmul"), (matmul_gpu, "matmul")):
        trace = build()
        step = len(trace) - 2
        results = _mutations(M.MutateUnroll(), trace)
        old = trace.insts[step].decision
        assert {tuple(_changed(trace, r)) for r in results} == {(step,)}
        count = len(trace.insts[step].attrs[0])
        seen = {r.insts[step].decision for r in results}
        assert seen == set(range(count)) - {old}
        _check_all(name, results)


def test_unroll_draws_with_the_other_candidates_probabilities() -> None:
    trace = matmul_cpu(unroll=([0, 16, 64, 512], [0.5, 0.25, 0.25, 0.0], 0))
    seen = {r.insts[len(trace) - 2].decision for r in _mutations(M.MutateUnroll(), trace)}
    assert seen == {1, 2}


def test_unroll_step_also_used_as_a_split_factor_is_checked_by_replay() -> None:
    sch = Schedule(_func("vector_add"))
    block = sch.get_block("T_add")
    (i,) = sch.get_loops(block)
    step = sch.sample_categorical([0, 2, 4], [1 / 3] * 3, decision=1)
    sch.split(i, [None, step])
    sch.annotate(block, UNROLL_EXPLICIT, step)
    mutator = _ready(M.MutateUnroll(), "vector_add")
    # A split factor of 0 refuses: only index 2 replays.
    results = _mutations(mutator, sch.trace, range(40))
    assert {r.insts[2].decision for r in results} == {2}
    _check_computes("vector_add", results[0])


def test_unroll_gives_none_without_a_sampled_step() -> None:
    sch = Schedule(_func("vector_add"))
    block = sch.get_block("T_add")
    sch.annotate(block, UNROLL_EXPLICIT, 16)
    other = sch.sample_categorical([1, 2], [0.5, 0.5], decision=0)
    sch.annotate(block, COOPERATIVE_FETCH, other)
    single = sch.sample_categorical([16], [1.0], decision=0)
    sch.annotate(block, UNROLL_IMPLICIT, single)
    assert M.MutateUnroll().apply(sch.trace, random.Random(0)) is None


# ---- MutateThreadBinding -------------------------------------------------------------------


def test_thread_binding_changes_one_sampled_thread_extent() -> None:
    trace = softmax_kernels()
    samples = thread_extent_samples(trace)
    assert len(samples) == 3
    mutator = _ready(M.MutateThreadBinding(), "softmax", "opencl")
    touched = set()
    results = _mutations(mutator, trace)
    for result in results:
        (k,) = _changed(trace, result)
        touched.add(k)
        assert k in samples
        assert result.insts[k].decision in set(range(5)) - {trace.insts[k].decision}
    assert touched == set(samples)
    _check_all("softmax", results)


def test_thread_binding_skips_extents_that_clash_in_their_kernel() -> None:
    trace = softmax_fused(norm_extent=32)
    free, tied = thread_extent_samples(trace)
    mutator = _ready(M.MutateThreadBinding(), "softmax", "opencl")
    results = _mutations(mutator, trace, range(60))
    assert {tuple(_changed(trace, r)) for r in results} == {(free,)}
    assert trace.insts[tied].decision == 3  # 32, the only extent the kernel allows
    _check_computes("softmax", results[0])
    # Two extents sampled in one kernel: changing either one alone never replays.
    clash = softmax_fused(norm_extent=None)
    tied_pair = thread_extent_samples(clash)[1:]
    assert len(tied_pair) == 2
    for result in _mutations(mutator, clash, range(20)):
        assert _changed(clash, result) == [thread_extent_samples(clash)[0]]


def test_thread_binding_gives_none_without_the_pattern() -> None:
    sch = Schedule(_func("softmax"))
    row, col = sch.get_loops(sch.get_block("T_softmax_norm"))
    outer = sch.sample_categorical(CANDIDATES, [0.2] * 5, decision=1)
    o0, _ = sch.split(col, [outer, None])
    sch.bind(o0, "threadIdx.x")  # the sample sets the outer factor
    inner = sch.sample_categorical(CANDIDATES, [0.2] * 5, decision=1)
    _, i1 = sch.split(row, [None, inner])
    sch.bind(i1, "blockIdx.x")  # a block index, not a thread index
    assert thread_extent_samples(sch.trace) == []
    assert M.MutateThreadBinding().apply(sch.trace, random.Random(0)) is None
    # An extent clash in every candidate: nothing replays.
    sch = Schedule(_func("softmax"))
    row, col = sch.get_loops(sch.get_block("T_softmax_norm"))
    sch.bind(row, "blockIdx.x")
    _, fixed = sch.split(col, [None, 32])
    sch.bind(fixed, "threadIdx.x")
    expsum = sch.get_block("T_softmax_expsum")
    sch.compute_at(expsum, row)
    *_, k = sch.get_loops(expsum)
    _bind_threads(sch, k, 3)
    mutator = _ready(M.MutateThreadBinding(), "softmax", "opencl")
    assert mutator.apply(sch.trace, random.Random(0)) is None


# ---- MutateComputeLocation -----------------------------------------------------------------


def test_compute_location_moves_one_block_to_another_legal_location() -> None:
    trace = bias_relu_locations()
    mod = _func("matmul_bias_relu")
    assert locations_at(trace, 1, mod) == [-2, -1, 0, 1]
    assert locations_at(trace, 4, mod) == [-1, 0, 1]
    mutator = _ready(M.MutateComputeLocation(), "matmul_bias_relu")
    results = _mutations(mutator, trace, range(60))
    seen = set()
    for result in results:
        (k,) = _changed(trace, result)
        seen.add((k, result.insts[k].decision))
    assert seen == {(1, -2), (1, -1), (1, 0), (4, 0), (4, 1)}
    _check_all("matmul_bias_relu", results, computed=5)


def test_compute_location_skips_locations_the_rest_of_the_trace_refuses() -> None:
    trace = cached_matmul_location()
    mod = _func("matmul")
    # As in TVM, the trailing reduction loop k is no location.
    assert locations_at(trace, 2, mod) == [-2, -1, 0, 1]
    mutator = _ready(M.MutateComputeLocation(), "matmul")
    results = _mutations(mutator, trace, range(40))
    assert {r.insts[2].decision for r in results} == {-1, 0}
    _check_all("matmul", results)
    # At the root or at loop i the cache has two loops: the trace's Python text, which
    # unpacks three, would fail; inlined it has none: no other location is proposed.
    trace = cached_matmul_location(then_loops=True)
    assert not replays(trace.with_decision(2, -1), mod)
    assert all(mutator.apply(trace, random.Random(seed)) is None for seed in range(20))


def test_compute_location_gives_none_without_another_location() -> None:
    mutator = _ready(M.MutateComputeLocation(), "matmul")
    sch = Schedule(_func("matmul"))
    block = sch.get_block("C")
    sch.compute_at(block, sch.sample_compute_location(block, decision=-1))  # the output
    assert mutator.apply(sch.trace, random.Random(0)) is None
    assert mutator.apply(matmul_cpu(), random.Random(0)) is None
    with pytest.raises(ValueError, match="MutateComputeLocation replays traces"):
        M.MutateComputeLocation().apply(sch.trace, random.Random(0))


# ---- MutateParallel ------------------------------------------------------------------------


def _parallel_extents(trace: Trace, name: str) -> dict[str, int]:
    """Replay ``trace``, run the parallel postprocessor: each block's parallel loop extent."""
    sch = Schedule(_func(name))
    trace.apply_to_schedule(sch)
    assert RewriteParallelVectorizeUnroll().apply(sch)
    found = {}
    for path in walk(sch.mod["main"].body):
        if isinstance(path[-1], Block):
            loops = [s for s in path if isinstance(s, For) and s.kind is ForKind.PARALLEL]
            if loops:
                (loop,) = loops
                found[path[-1].name] = loop.extent.value
    return found


def test_parallel_changes_how_many_loops_are_fused() -> None:
    trace = matmul_cpu()
    k = 10
    assert trace.insts[k].attrs == (PARALLEL,) and trace.insts[k].inputs[1] == 64
    root = Schedule(_func("matmul"))
    trace.apply_to_schedule(root)
    scope = root.get(root.get_block("root"))
    assert isinstance(scope, Block)
    assert fusible_loops(scope) == [(2, 1, 2, 4)]  # i0, j0, i1, j1; then the reduction k0
    assert candidate_values(fusible_loops(scope), 64) == [1, 2, 4, 16]
    # 64, 16 and 4 fuse all four loops (16 iterations); 2 fuses three (4), 1 one (2).
    assert _parallel_extents(trace, "matmul") == {"C": 16}
    mutator = _ready(M.MutateParallel(), "matmul")
    results = _mutations(mutator, trace, range(40))  # each runs the postprocessor 5 times
    assert {tuple(_changed(trace, r)) for r in results} == {(k,)}
    assert {r.insts[k].inputs[1] for r in results} == {1, 2}
    for result in _distinct(results):
        value = result.insts[k].inputs[1]
        assert _parallel_extents(result, "matmul") == {"C": {1: 2, 2: 4}[value]}
    _check_all("matmul", results)


def test_parallel_groups_values_by_the_loops_the_postprocessor_makes() -> None:
    sch = Schedule(_func("matmul_bias_relu"))
    root = sch.get_block("root")
    sch.annotate(root, PARALLEL, 64)
    sch.annotate(root, VECTORIZE, 64)
    trace = sch.trace
    outcomes = parallel_outcomes(trace, 1, _func("matmul_bias_relu"), 64)
    assert sorted(outcomes) == [1, 8, 64]
    # The bias and relu nests vectorize j, which leaves i alone to parallelize whatever the
    # value; the matmul, whose innermost loop is its reduction, vectorizes nothing and
    # parallelizes i and j for 8 or 64, i alone for 1.
    assert outcomes[8] == outcomes[64] != outcomes[1]
    assert _parallel_extents(trace, "matmul_bias_relu") == {
        "matmul": 128,
        "bias_add": 8,
        "relu": 8,
    }
    mutator = _ready(M.MutateParallel(), "matmul_bias_relu")
    results = _mutations(mutator, trace, range(20))
    assert {r.insts[1].inputs[1] for r in results} == {1}
    assert _parallel_extents(results[0], "matmul_bias_relu") == {
        "matmul": 8,
        "bias_add": 8,
        "relu": 8,
    }
    assert candidate_values([(4, 8, 16), (2, 2)], 64) == [1, 2, 4, 32]
    with pytest.raises(ValueError, match=r"not an annotate with key meta_schedule\.parallel"):
        parallel_outcomes(trace, 2, _func("matmul_bias_relu"), 64)


def test_parallel_gives_none_without_another_plan() -> None:
    sch = Schedule(_func("vector_add"))
    sch.annotate(sch.get_block("root"), PARALLEL, 64)
    mutator = _ready(M.MutateParallel(), "vector_add")
    assert mutator.apply(sch.trace, random.Random(0)) is None  # one loop: always fused
    assert mutator.apply(matmul_gpu(), random.Random(0)) is None  # no parallel annotation
    disabled = _ready(M.MutateParallel(max_jobs_per_core=-1), "matmul")
    assert disabled.apply(matmul_cpu(), random.Random(0)) is None
    with pytest.raises(ValueError, match="num_cores"):
        M.MutateParallel().apply(matmul_cpu(), random.Random(0))
    assert repr(M.MutateParallel(8)) == "MutateParallel(max_jobs_per_core=8)"
