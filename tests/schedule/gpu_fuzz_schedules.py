"""Random GPU-legal schedules for the differential OpenCL fuzz test: a small corpus of one-block
programs and a drawer that splits, fuses, binds, caches and vectorizes them so that every loop
ends up inside a thread binding."""

from __future__ import annotations

import random
from dataclasses import dataclass

from schedule_corpus import CORPUS, Program

from tilewright.ir import IntImm, IterKind
from tilewright.schedule import LoopRV, Schedule
from tilewright.script import tir as T


@T.prim_func
def row_max(A: T.Buffer((5, 13), "float32"), B: T.Buffer((5,), "float32")):
    for i, k in T.grid(5, 13):
        with T.block("B"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                B[vi] = T.float32(-1e30)
            B[vi] = T.max(B[vi], A[vi, vk])


@T.prim_func
def window_sum(A: T.Buffer((45,), "float32"), B: T.Buffer((43,), "float32")):
    for i in T.grid(43):
        with T.block("C"):
            vi = T.axis.remap("S", [i])
            B[vi] = A[vi] + A[vi + 1] + A[vi + 2]


@T.prim_func
def scale_rows(
    A: T.Buffer((9, 11), "float32"), S: T.Buffer((9,), "float32"), C: T.Buffer((9, 11), "float32")
):
    for i, j in T.grid(9, 11):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = A[vi, vj] * S[vi] + T.float32(1)


_REUSED = (
    "matmul",
    "matmul_odd",
    "batch_matmul",
    "conv2d",
    "row_sum",
    "total_max",
    "broadcast_add",
)

GPU_CORPUS: tuple[Program, ...] = (
    *(p for p in CORPUS if p.name in _REUSED),
    Program("row_max", row_max, ("B",), ((5, 13), (5,)), lambda a, b: [a, a.max(axis=1)]),
    Program(
        "window_sum",
        window_sum,
        ("C",),
        ((45,), (43,)),
        lambda a, b: [a, a[:-2] + a[1:-1] + a[2:]],
    ),
    Program(
        "scale_rows",
        scale_rows,
        ("C",),
        ((9, 11), (9,), (9, 11)),
        lambda a, s, c: [a, s, a * s[:, None] + 1],
    ),
)


@dataclass
class Drawn:
    """What a drawn schedule used, for the checks made on its generated source."""

    shared: bool = False
    local: bool = False
    vectorized: bool = False
    # Some shared element is read by a thread other than the one that fetched it.
    crosses_threads: bool = False


def _extent(sch: Schedule, loop: LoopRV) -> int:
    extent = sch.get(loop).extent
    assert isinstance(extent, IntImm), extent
    return extent.value


def _same(sch: Schedule, a: LoopRV, b: LoopRV) -> bool:
    return sch.get(a) is sch.get(b)


def _fuse(sch: Schedule, loops: list[LoopRV]) -> LoopRV:
    return loops[0] if len(loops) == 1 else sch.fuse(*loops)


def _cooperative_fetch(
    sch: Schedule,
    cache,
    at: LoopRV,
    threads: list[tuple[str, int]],
    rng: random.Random,
    vectors: bool,
) -> LoopRV | None:
    """Spread the cache block's copy loops below ``at`` over the block's threads."""
    loops = sch.get_loops(cache)
    depth = next(i for i, loop in enumerate(loops) if _same(sch, loop, at))
    below = loops[depth + 1 :]
    if not below:
        below = [sch.add_unit_loop(cache)]
    fused = _fuse(sch, below)
    vec = rng.choice((None, None, 2, 4)) if vectors else None
    factors: list[int | None] = [None] + [count for _, count in threads]
    if vec:
        factors.append(vec)
    parts = sch.split(fused, factors)
    for (tag, _), part in zip(threads, parts[1:]):
        sch.bind(part, tag)
    if vec:
        sch.vectorize(parts[-1])
    return parts[0]


def draw_schedule(sch: Schedule, program: Program, rng: random.Random) -> Drawn:
    """Schedule ``program`` (fresh in ``sch``) at random so that every loop is bound to a
    thread axis or runs under one.

    Example::

        sch = Schedule(GPU_CORPUS[0].func)
        drawn = draw_schedule(sch, GPU_CORPUS[0], random.Random(3))
        tw.build(sch.mod, target="opencl")
    """
    drawn = Drawn()
    block = sch.get_block(program.blocks[0])
    node = sch.get(block)
    kinds = [iv.kind for iv in node.iter_vars]
    n_inputs = len(node.reads)

    local = None
    # reverse_compute_at refuses a local cache of a unit-extent output split by [None, 4, 2].
    unit = any(
        _extent(sch, lp) == 1 for lp, k in zip(sch.get_loops(block), kinds) if k is IterKind.SPATIAL
    )
    if not unit and rng.random() < 0.5:
        local = sch.cache_write(block, 0, "local")
        drawn.local = True

    loops = sch.get_loops(block)
    spatial = [lp for lp, k in zip(loops, kinds) if k is IterKind.SPATIAL]
    reduce = [lp for lp, k in zip(loops, kinds) if k is IterKind.REDUCE]

    # Spatial loops: one or two axes, each split into block / thread / optional serial part.
    shared = n_inputs > 0 and rng.random() < 0.6
    shared_in_loop = shared and bool(reduce) and rng.random() < 0.6
    # PoCL 3.1 miscompiles vloadN / vstoreN in some kernels with a barrier inside a loop (the
    # PoCL notes in test_fuzz_gpu): such kernels stay scalar.
    vectors = not shared_in_loop
    groups = [spatial[:-1], spatial[-1:]] if len(spatial) >= 2 and rng.random() < 0.6 else [spatial]
    outer, thread, inner = [], [], []
    for group in groups:
        total = 1
        for loop in group:
            total *= _extent(sch, loop)
        axis = _fuse(sch, group)
        # A fused axis is split exactly: bind refuses the non-affine binding of a thread loop
        # longer than the fused rows it walks (a fused (2, 6) split by 16).
        # PoCL 3.1 drops a thread-guarded store after a loop holding barriers when that loop
        # also has a thread-guarded inner loop (the PoCL note in test_fuzz_gpu):
        # with a shared cache inside the reduction loop, no thread of a block idles.
        exact = shared_in_loop or len(group) > 1
        counts = [n for n in (1, 2, 3, 4, 5, 8, 16) if not exact or total % n == 0]
        count = rng.choice(counts)
        factors: list[int | None] = [None, count]
        # With a local cache, reverse_compute_at cannot prove what a serial tile of a fused
        # axis covers (a fused (8, 12) split by [None, 1, 3]): no tile there.
        if rng.random() < 0.5 and not (local is not None and len(group) > 1):
            tiles = [d for d in (1, 2, 3, 4) if not exact or (total // count) % d == 0]
            factors.append(rng.choice(tiles))
        parts = sch.split(axis, factors)
        outer.append(parts[0])
        thread.append(parts[1])
        inner.extend(parts[2:])
    thread_counts = [_extent(sch, t) for t in thread]

    # Reduction loops: fused into one, optionally split into an outer serial and an inner tile.
    red: list[LoopRV] = []
    exact = True  # no predicate on the reduction loops (decompose_reduction needs that)
    if reduce:
        k = _fuse(sch, reduce) if rng.random() < 0.7 else None
        if k is None:
            red = list(reduce)
        elif rng.random() < 0.6:
            tile = rng.choice((1, 2, 3, 4, 8))
            exact = _extent(sch, k) % tile == 0
            red = list(sch.split(k, [None, tile]))
        else:
            red = [k]
    inner_first = rng.random() < 0.3
    serial = inner + red if inner_first else red + inner
    sch.reorder(*outer, *thread, *serial)

    if len(outer) == 2 and rng.random() < 0.3:
        outer = [sch.fuse(*outer)]
    for loop, tag in zip(outer, ("blockIdx.y", "blockIdx.x")[2 - len(outer) :]):
        sch.bind(loop, tag)
    if len(thread) == 2 and (rng.random() < 0.4 or thread_counts[0] * thread_counts[1] > 1024):
        threads = [("threadIdx.x", thread_counts[0] * thread_counts[1])]
        thread = [sch.fuse(*thread)]
    else:
        tags = ("threadIdx.y", "threadIdx.x")[2 - len(thread) :]
        threads = list(zip(tags, thread_counts))
    for loop, (tag, _) in zip(thread, threads):
        sch.bind(loop, tag)

    if local is not None:
        sch.reverse_compute_at(local, thread[-1])
        below = sch.get_loops(local)[len(outer) + len(thread) :]
        if below and rng.random() < 0.4 and vectors:
            sch.vectorize(below[-1])
            drawn.vectorized = True

    if shared:
        index = rng.randrange(n_inputs)
        at = red[0] if shared_in_loop else outer[-1]
        cache = sch.cache_read(block, index, "shared")
        sch.compute_at(cache, at)
        fetch_outer = _cooperative_fetch(sch, cache, at, threads, rng, vectors)
        drawn.shared = True
        count = 1
        for _, n in threads:
            count *= n
        # Neighbouring threads read overlapping windows of the whole block's cached input.
        drawn.crosses_threads = program.name == "window_sum" and count > 1
        if rng.random() < 0.2:
            sch.unroll(fetch_outer)

    if inner and not inner_first and rng.random() < 0.4 and vectors:
        sch.vectorize(inner[-1])
        drawn.vectorized = True
    if serial and rng.random() < 0.4:
        sch.unroll(rng.choice(serial))
    if red and exact and rng.random() < 0.6:
        sch.decompose_reduction(block, serial[0])
    return drawn
