"""Script → lower_module → C → run: seed-style programs end to end on the CPU."""

from __future__ import annotations

import numpy as np

import tilewright as tw
from tilewright.driver import build_lowered, lower
from tilewright.script import tir as T


@tw.script.ir_module
class WindowSum:
    @T.prim_func
    def main(A: T.Buffer((131,), "float32"), B: T.Buffer((128,), "float32")) -> None:
        T.func_attr({"global_symbol": "main", "tir.noalias": True})
        for i in T.grid(128):
            with T.block("C"):
                vi = T.axis.remap("S", [i])
                B[vi] = A[vi] + A[vi + 1] + A[vi + 2]


@tw.script.ir_module
class Matmul:
    @T.prim_func
    def main(
        A: T.Buffer((32, 16), "float32"),
        B: T.Buffer((16, 24), "float32"),
        C: T.Buffer((32, 24), "float32"),
    ) -> None:
        T.func_attr({"global_symbol": "main", "tir.noalias": True})
        for i, j, k in T.grid(32, 24, 16):
            with T.block("C"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    C[vi, vj] = T.float32(0)
                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]


def test_window_sum():
    rt = build_lowered(lower(WindowSum, "c"), "c")
    assert "B[i] = A[i] + A[i + 1] + A[i + 2];" in rt.get_source()
    a, b = np.random.rand(131).astype("float32"), np.zeros(128, "float32")
    rt["main"](a, b)
    np.testing.assert_allclose(b, a[:128] + a[1:129] + a[2:130], rtol=1e-6)


def test_matmul_with_init():
    rt = build_lowered(lower(Matmul, "c"), "c")
    a = np.random.rand(32, 16).astype("float32")
    b = np.random.rand(16, 24).astype("float32")
    c = np.full((32, 24), np.nan, "float32")
    rt["main"](tw.nd.array(a), b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5)
