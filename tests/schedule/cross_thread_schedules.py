"""Random cross-thread reductions for the differential fuzz tests: row sums and row maxima whose
reduction is bound to one or two thread axes (32 to 1024 threads, powers of two or not), split
unevenly so that a ``T.where`` guards the last threads, with the rows beside the reduction on
another thread axis or not."""

from __future__ import annotations

import random
from dataclasses import dataclass

import numpy as np

from tilewright.ir import PrimFunc
from tilewright.schedule import Schedule
from tilewright.script import tir as T

THREADS = (32, 48, 64, 96, 100, 128, 192, 256, 320, 512, 640, 1000, 1024)
SHAPES = ("1d", "2d", "rows_beside", "reduce_y")


def reduction(rows: int, length: int, kind: str) -> PrimFunc:
    """``B[i] = sum(A[i, :])`` or ``max(A[i, :])`` (init -1e30, not the identity)."""

    @T.prim_func
    def func(A: T.Buffer((rows, length), "float32"), B: T.Buffer((rows,), "float32")):
        for i, k in T.grid(rows, length):
            with T.block("B"):
                vi, vk = T.axis.remap("SR", [i, k])
                with T.init():
                    B[vi] = T.float32(0) if kind == "sum" else T.float32(-1e30)
                if kind == "sum":
                    B[vi] = B[vi] + A[vi, vk]
                else:
                    B[vi] = T.max(B[vi], A[vi, vk])

    return func


@dataclass(frozen=True)
class Drawn:
    """One drawn case: the schedule and what a test needs to run and describe it."""

    sch: Schedule
    kind: str
    rows: int
    length: int
    threads: int  # threads per block
    text: str

    def inputs(self, seed: int) -> np.ndarray:
        rng = np.random.default_rng(seed)
        return rng.standard_normal((self.rows, self.length)).astype("float32")

    def reference(self, a: np.ndarray) -> np.ndarray:
        wide = a.astype("float64")
        return wide.sum(1) if self.kind == "sum" else wide.max(1)


def draw(rng: random.Random, max_threads: int = 1024) -> Drawn:
    """A random cross-thread reduction and its schedule."""
    kind = rng.choice(("sum", "max"))
    shape = rng.choice(SHAPES)
    if shape == "1d":
        n = rng.choice([t for t in THREADS if t <= max_threads])
        return _bind(kind, rng.randint(1, 3), n, rng, [("threadIdx.x", n)])
    if shape == "2d":
        ny = rng.choice((2, 3, 4, 8))
        nx = rng.choice([t for t in (16, 32, 50, 64, 128) if ny * t <= max_threads])
        tags = [("threadIdx.y", ny), ("threadIdx.x", nx)]
        if rng.random() < 0.3:
            tags = [("threadIdx.x", nx), ("threadIdx.y", ny)]  # y varies fastest in k
        return _bind(kind, rng.randint(1, 2), ny * nx, rng, tags)
    rows_tag, reduce_tag = ("threadIdx.y", "threadIdx.x")
    if shape == "reduce_y":
        rows_tag, reduce_tag = reduce_tag, rows_tag
    per_block = rng.choice((2, 3, 4))
    n = rng.choice([t for t in (16, 32, 48, 64, 100, 128) if per_block * t <= max_threads])
    return _bind(kind, rng.randint(3, 9), n, rng, [(reduce_tag, n)], (rows_tag, per_block))


def _bind(
    kind: str,
    rows: int,
    n: int,
    rng: random.Random,
    tags: list[tuple[str, int]],
    beside: tuple[str, int] | None = None,
) -> Drawn:
    # Lengths from a part of the threads' span to a few spans: guarded splits mostly.
    length = rng.randint(max(1, n // 3), 3 * n)
    sch = Schedule(reduction(rows, length, kind))
    i, k = sch.get_loops("B")
    factors = [extent for _, extent in tags]
    k_loops = sch.split(k, [None, *factors])
    if beside is None:
        sch.bind(i, "blockIdx.x")
        threads = n
    else:
        i0, i1 = sch.split(i, [None, beside[1]])
        sch.reorder(i0, i1, *k_loops)
        sch.bind(i0, "blockIdx.x")
        sch.bind(i1, beside[0])
        threads = n * beside[1]
    for loop, (tag, _) in zip(k_loops[1:], tags):
        sch.bind(loop, tag)
    text = f"{kind} of {rows}x{length} over {tags}" + (f", rows on {beside}" if beside else "")
    return Drawn(sch, kind, rows, length, threads, text)
