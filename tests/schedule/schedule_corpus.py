"""Small block-level programs with numpy references: the inputs of the schedule tests.

Each ``Program`` holds a function, the names of its blocks, a maker of random inputs and
the numpy function computing its outputs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from tilewright.ir import PrimFunc
from tilewright.script import tir as T


@dataclass(frozen=True)
class Program:
    name: str
    func: PrimFunc
    blocks: tuple[str, ...]
    shapes: tuple[tuple[int, ...], ...]  # one per buffer parameter
    reference: Callable[..., list[np.ndarray]]  # inputs -> every parameter's final value

    def inputs(self, rng: np.random.Generator) -> list[np.ndarray]:
        return [rng.standard_normal(s).astype("float32") for s in self.shapes]


@T.prim_func
def matmul(
    A: T.Buffer((8, 10), "float32"),
    B: T.Buffer((10, 12), "float32"),
    C: T.Buffer((8, 12), "float32"),
):
    for i, j, k in T.grid(8, 12, 10):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]


@T.prim_func
def matmul_odd(
    A: T.Buffer((7, 11), "float32"), B: T.Buffer((11, 9), "float32"), C: T.Buffer((7, 9), "float32")
):
    for i, j, k in T.grid(7, 9, 11):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]


@T.prim_func
def batch_matmul(
    A: T.Buffer((2, 6, 5), "float32"),
    B: T.Buffer((2, 5, 8), "float32"),
    C: T.Buffer((2, 6, 8), "float32"),
):
    for b, i, j, k in T.grid(2, 6, 8, 5):
        with T.block("C"):
            vb, vi, vj, vk = T.axis.remap("SSSR", [b, i, j, k])
            with T.init():
                C[vb, vi, vj] = T.float32(0)
            C[vb, vi, vj] = C[vb, vi, vj] + A[vb, vi, vk] * B[vb, vk, vj]


@T.prim_func
def conv2d(
    X: T.Buffer((1, 2, 6, 6), "float32"),
    W: T.Buffer((3, 2, 3, 3), "float32"),
    Y: T.Buffer((1, 3, 4, 4), "float32"),
):
    for n, f, h, w, c, r, s in T.grid(1, 3, 4, 4, 2, 3, 3):
        with T.block("conv"):
            vn, vf, vh, vw, vc, vr, vs = T.axis.remap("SSSSRRR", [n, f, h, w, c, r, s])
            with T.init():
                Y[vn, vf, vh, vw] = T.float32(0)
            Y[vn, vf, vh, vw] = Y[vn, vf, vh, vw] + X[vn, vc, vh + vr, vw + vs] * W[vf, vc, vr, vs]


@T.prim_func
def row_sum(A: T.Buffer((6, 10), "float32"), B: T.Buffer((6,), "float32")):
    for i, k in T.grid(6, 10):
        with T.block("B"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                B[vi] = T.float32(0)
            B[vi] = B[vi] + A[vi, vk]


@T.prim_func
def total_max(A: T.Buffer((7, 9), "float32"), B: T.Buffer((1,), "float32")):
    for i, k0, k1 in T.grid(1, 7, 9):
        with T.block("B"):
            vi, vk0, vk1 = T.axis.remap("SRR", [i, k0, k1])
            with T.init():
                B[vi] = T.float32(-1e30)
            B[vi] = T.max(B[vi], A[vk0, vk1])


@T.prim_func
def softmax(A: T.Buffer((4, 12), "float32"), Out: T.Buffer((4, 12), "float32")):
    M = T.alloc_buffer((4,), "float32")
    E = T.alloc_buffer((4, 12), "float32")
    S = T.alloc_buffer((4,), "float32")
    for i, j in T.grid(4, 12):
        with T.block("row_max"):
            vi, vj = T.axis.remap("SR", [i, j])
            with T.init():
                M[vi] = T.float32(-1e30)
            M[vi] = T.max(M[vi], A[vi, vj])
    for i, j in T.grid(4, 12):
        with T.block("exp"):
            vi, vj = T.axis.remap("SS", [i, j])
            E[vi, vj] = T.exp(A[vi, vj] - M[vi])
    for i, j in T.grid(4, 12):
        with T.block("row_sum"):
            vi, vj = T.axis.remap("SR", [i, j])
            with T.init():
                S[vi] = T.float32(0)
            S[vi] = S[vi] + E[vi, vj]
    for i, j in T.grid(4, 12):
        with T.block("norm"):
            vi, vj = T.axis.remap("SS", [i, j])
            Out[vi, vj] = E[vi, vj] / S[vi]


@T.prim_func
def broadcast_add(
    A: T.Buffer((7, 13), "float32"), B: T.Buffer((13,), "float32"), C: T.Buffer((7, 13), "float32")
):
    for i, j in T.grid(7, 13):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = A[vi, vj] + B[vj]


@T.prim_func
def two_stage(A: T.Buffer((6, 10), "float32"), C: T.Buffer((6, 10), "float32")):
    B = T.alloc_buffer((6, 10), "float32")
    for i, j in T.grid(6, 10):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)
    for i, j in T.grid(6, 10):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vi, vj] + T.float32(1)


@T.prim_func
def two_writers(A: T.Buffer((8,), "float32"), C: T.Buffer((8,), "float32")):
    # Two blocks write B: the rule tests' refusals of cache_write and compute_at.
    B = T.alloc_buffer((8,))
    for i in range(8):
        with T.block("B0"):
            vi = T.axis.spatial(8, i)
            B[vi] = A[vi]
    for i in range(8):
        with T.block("B1"):
            vi = T.axis.spatial(8, i)
            B[vi] = B[vi] + T.float32(1)
    for i in range(8):
        with T.block("C"):
            vi = T.axis.spatial(8, i)
            C[vi] = B[vi]


@T.prim_func
def square_matmul(
    A: T.Buffer((16, 16), "float32"),
    B: T.Buffer((16, 16), "float32"),
    C: T.Buffer((16, 16), "float32"),
):
    for i, j, k in T.grid(16, 16, 16):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]


def _softmax(a: np.ndarray) -> np.ndarray:
    e = np.exp(a - a.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _conv(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    y = np.zeros((1, 3, 4, 4), "float64")
    for r in range(3):
        for s in range(3):
            y += np.einsum("nchw,fc->nfhw", x[:, :, r : r + 4, s : s + 4], w[:, :, r, s])
    return y


CORPUS: tuple[Program, ...] = (
    Program("matmul", matmul, ("C",), ((8, 10), (10, 12), (8, 12)), lambda a, b, c: [a, b, a @ b]),
    Program(
        "matmul_odd", matmul_odd, ("C",), ((7, 11), (11, 9), (7, 9)), lambda a, b, c: [a, b, a @ b]
    ),
    Program(
        "batch_matmul",
        batch_matmul,
        ("C",),
        ((2, 6, 5), (2, 5, 8), (2, 6, 8)),
        lambda a, b, c: [a, b, a @ b],
    ),
    Program(
        "conv2d",
        conv2d,
        ("conv",),
        ((1, 2, 6, 6), (3, 2, 3, 3), (1, 3, 4, 4)),
        lambda x, w, y: [x, w, _conv(x, w)],
    ),
    Program("row_sum", row_sum, ("B",), ((6, 10), (6,)), lambda a, b: [a, a.sum(axis=1)]),
    Program("total_max", total_max, ("B",), ((7, 9), (1,)), lambda a, b: [a, a.max().reshape(1)]),
    Program(
        "softmax",
        softmax,
        ("row_max", "exp", "row_sum", "norm"),
        ((4, 12), (4, 12)),
        lambda a, o: [a, _softmax(a)],
    ),
    Program(
        "broadcast_add",
        broadcast_add,
        ("C",),
        ((7, 13), (13,), (7, 13)),
        lambda a, b, c: [a, b, a + b[None, :]],
    ),
    Program("two_stage", two_stage, ("B", "C"), ((6, 10), (6, 10)), lambda a, c: [a, a * 2 + 1]),
)
