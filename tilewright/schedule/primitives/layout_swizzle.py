"""Layouts the iterator maps cannot read (XOR swizzles): an index map over a constant box,
proved one to one by evaluating it at every point, and the box its images span.

``lambda i, j: (i, j ^ (i % 8))`` permutes each row of an (8k, 8m) tile: no affine analysis
sees that, but the box is small (a shared-memory tile holds a few thousand elements), so the
map is evaluated on all of it with numpy and the images are compared.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from tilewright.arith.region import const_bounds
from tilewright.ir.expr import (
    Add,
    Call,
    FloorDiv,
    FloorMod,
    IntImm,
    Max,
    Min,
    Mul,
    PrimExpr,
    Sub,
    Var,
)
from tilewright.schedule.index_map import IndexMap

# The most points a map is evaluated at: 4M int64 indices per dimension stay well under a
# second; a larger buffer needs ``assume_injective_transform``.
MAX_POINTS = 1 << 22

_BITS = {
    "bitwise_xor": np.bitwise_xor,
    "bitwise_and": np.bitwise_and,
    "bitwise_or": np.bitwise_or,
    "shift_left": np.left_shift,
    "shift_right": np.right_shift,
}


class Unprovable(Exception):
    """The map could not be evaluated on the box: the message says why."""


@dataclass(frozen=True)
class Images:
    """What ``index_map`` does to the box: the shape its images span (from 0), whether they
    fill it (else the new buffer has padding), and, when two points share an image, the first
    such pair ``(point, point, image)``."""

    shape: tuple[int, ...]
    fills: bool
    collision: tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]] | None
    lowest: tuple[int, ...]


def enumerate_images(index_map: IndexMap, dims: list[int], check: bool = True) -> Images:
    """Evaluate ``index_map`` at every point of the box ``dims``; ``check=False`` (TVM's
    ``assume_injective_transform``) skips the search for two points with one image."""
    total = math.prod(dims)
    if total > MAX_POINTS:
        raise Unprovable(
            f"the buffer has {total} elements, more than the {MAX_POINTS} the map is "
            "evaluated at to prove it one to one"
        )
    grids = np.indices(dims, dtype=np.int64).reshape(len(dims), -1) if dims else np.zeros((0, 1))
    env = dict(zip(index_map.initial_indices, grids))
    images = [
        np.broadcast_to(evaluate(e, env), (total,)).astype(np.int64)
        for e in index_map.final_indices
    ]
    lowest = tuple(int(x.min()) if x.size else 0 for x in images)
    shape = tuple(int(x.max()) + 1 if x.size else 1 for x in images)
    if any(low < 0 for low in lowest):
        return Images(shape, False, None, lowest)
    collision = None
    distinct = total
    if check and images:
        stacked = np.stack(images)
        order = np.lexsort(stacked[::-1])  # rows of images in lexicographic order
        ranked = stacked[:, order]
        same = np.flatnonzero((ranked[:, 1:] == ranked[:, :-1]).all(axis=0))
        distinct = total - len(same)
        if len(same):
            a, b = order[same[0]], order[same[0] + 1]
            point = tuple(int(g[a]) for g in grids)
            other = tuple(int(g[b]) for g in grids)
            collision = (point, other, tuple(int(x[a]) for x in images))
    fills = collision is None and distinct == math.prod(shape)
    return Images(shape, fills, collision, lowest)


def evaluate(expr: PrimExpr, env: dict[Var, np.ndarray]) -> np.ndarray:
    """``expr`` at every point, the variables' values given by ``env`` (integer arrays)."""
    if isinstance(expr, Var):
        if expr not in env:
            raise Unprovable(f"{expr.name} is not an index of the map")
        return env[expr]
    if isinstance(expr, IntImm):
        return np.asarray(expr.value, dtype=np.int64)  # broadcasts against the grids
    if isinstance(expr, Call) and expr.op.removeprefix("tir.") in _BITS and len(expr.args) == 2:
        a, b = (evaluate(x, env) for x in expr.args)
        return _BITS[expr.op.removeprefix("tir.")](a, b)
    if isinstance(expr, Add | Sub | Mul | FloorDiv | FloorMod | Min | Max):
        a, b = evaluate(expr.a, env), evaluate(expr.b, env)
        if isinstance(expr, Add):
            return a + b
        if isinstance(expr, Sub):
            return a - b
        if isinstance(expr, Mul):
            return a * b
        if isinstance(expr, Min):
            return np.minimum(a, b)
        if isinstance(expr, Max):
            return np.maximum(a, b)
        if np.any(b == 0):
            raise Unprovable(f"{expr} divides by zero")
        return np.floor_divide(a, b) if isinstance(expr, FloorDiv) else np.mod(a, b)
    raise Unprovable(f"{expr} is not integer arithmetic the map can be evaluated with")


def image_bounds(index_map: IndexMap, dims: list[int]) -> tuple[list[int], list[int]] | None:
    """The lowest image of each new index and the box (highest + 1), from interval arithmetic
    over the box ``dims`` (for a map too large to evaluate point by point); None when some
    index cannot be bounded."""
    env = {v: (0, e - 1) for v, e in zip(index_map.initial_indices, dims)}
    lowest, shape = [], []
    for e in index_map.final_indices:
        span = const_bounds(e, env)
        if span is None:
            return None
        lowest.append(span[0])
        shape.append(span[1] + 1)
    return lowest, shape
