"""GPU-scheduled programs (the seed notebook's and smaller twins) as script text + numpy references."""

# ruff: noqa: E501 - the small twins keep the notebook's layout (long lines)
from __future__ import annotations

from collections.abc import Callable

import numpy as np
from seed_notebook import source

from tilewright.ir import IRModule

HEADER = "from tilewright.script import tir as T\nimport tilewright as tvm\n"

# The notebook's printed modules, verbatim (tests/seed_notebook.py).
SEEDS = {name: source(name) for name in ("Expected_1", "Expected_4", "Expected_5", "Expected_6")}

# The same schedules at sizes the reference interpreter runs in a moment.
SMALL = {
    "matmul_small": """
@T.prim_func
def main(A: T.Buffer((16, 16), "float32"), B: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32")):
    T.func_attr({"global_symbol": "main", "tir.noalias": True})
    for i, j, k in T.grid(16, 16, 16):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
""",
    "matmul_blocking": """
@T.prim_func
def main(A: T.Buffer((32, 32), "float32"), B: T.Buffer((32, 32), "float32"), C: T.Buffer((32, 32), "float32")):
    T.func_attr({"global_symbol": "main", "tir.noalias": True})
    C_local = T.alloc_buffer((32, 32), scope="local")
    for i_0 in T.thread_binding(2, thread="blockIdx.y"):
        for j_0 in T.thread_binding(2, thread="blockIdx.x"):
            for i_1 in T.thread_binding(4, thread="threadIdx.y"):
                for j_1 in T.thread_binding(4, thread="threadIdx.x"):
                    for i_2_init, j_2_init in T.grid(4, 4):
                        with T.block("C_init"):
                            vi = T.axis.spatial(32, i_0 * 16 + i_1 * 4 + i_2_init)
                            vj = T.axis.spatial(32, j_0 * 16 + j_1 * 4 + j_2_init)
                            C_local[vi, vj] = T.float32(0)
                    for k_0 in T.serial(8):
                        for k_1 in T.unroll(4):
                            for i_2, j_2 in T.grid(4, 4):
                                with T.block("C_update"):
                                    vi = T.axis.spatial(32, i_0 * 16 + i_1 * 4 + i_2)
                                    vj = T.axis.spatial(32, j_0 * 16 + j_1 * 4 + j_2)
                                    vk = T.axis.reduce(32, k_0 * 4 + k_1)
                                    C_local[vi, vj] = C_local[vi, vj] + A[vi, vk] * B[vk, vj]
                    for ax0, ax1 in T.grid(4, 4):
                        with T.block("C_local"):
                            v0 = T.axis.spatial(32, i_0 * 16 + i_1 * 4 + ax0)
                            v1 = T.axis.spatial(32, j_0 * 16 + j_1 * 4 + ax1)
                            C[v0, v1] = C_local[v0, v1]
""",
    "matmul_shared": """
@T.prim_func
def main(A: T.Buffer((32, 32), "float32"), B: T.Buffer((32, 32), "float32"), C: T.Buffer((32, 32), "float32")):
    T.func_attr({"global_symbol": "main", "tir.noalias": True})
    C_local = T.alloc_buffer((32, 32), scope="local")
    A_shared = T.alloc_buffer((32, 32), scope="shared")
    B_shared = T.alloc_buffer((32, 32), scope="shared")
    for i_0 in T.thread_binding(2, thread="blockIdx.y"):
        for j_0 in T.thread_binding(2, thread="blockIdx.x"):
            for i_1_j_1_fused in T.thread_binding(16, thread="threadIdx.x"):
                for i_2_init, j_2_init in T.grid(4, 4):
                    with T.block("C_init"):
                        vi = T.axis.spatial(32, i_0 * 16 + i_1_j_1_fused // 4 * 4 + i_2_init)
                        vj = T.axis.spatial(32, j_0 * 16 + i_1_j_1_fused % 4 * 4 + j_2_init)
                        C_local[vi, vj] = T.float32(0)
                for k_0 in T.serial(4):
                    for ax0_ax1_fused_0 in T.serial(2):
                        for ax0_ax1_fused_1 in T.thread_binding(16, thread="threadIdx.x"):
                            for ax0_ax1_fused_2 in T.vectorized(4):
                                with T.block("A_shared"):
                                    v0 = T.axis.spatial(32, i_0 * 16 + (ax0_ax1_fused_0 * 64 + ax0_ax1_fused_1 * 4 + ax0_ax1_fused_2) // 8)
                                    v1 = T.axis.spatial(32, k_0 * 8 + (ax0_ax1_fused_0 * 64 + ax0_ax1_fused_1 * 4 + ax0_ax1_fused_2) % 8)
                                    A_shared[v0, v1] = A[v0, v1]
                    for ax0_ax1_fused_0 in T.serial(2):
                        for ax0_ax1_fused_1 in T.thread_binding(16, thread="threadIdx.x"):
                            for ax0_ax1_fused_2 in T.vectorized(4):
                                with T.block("B_shared"):
                                    v0 = T.axis.spatial(32, k_0 * 8 + (ax0_ax1_fused_0 * 64 + ax0_ax1_fused_1 * 4 + ax0_ax1_fused_2) // 16)
                                    v1 = T.axis.spatial(32, j_0 * 16 + (ax0_ax1_fused_0 * 64 + ax0_ax1_fused_1 * 4 + ax0_ax1_fused_2) % 16)
                                    B_shared[v0, v1] = B[v0, v1]
                    for k_1, i_2, j_2 in T.grid(8, 4, 4):
                        with T.block("C_update"):
                            vi = T.axis.spatial(32, i_0 * 16 + i_1_j_1_fused // 4 * 4 + i_2)
                            vj = T.axis.spatial(32, j_0 * 16 + i_1_j_1_fused % 4 * 4 + j_2)
                            vk = T.axis.reduce(32, k_0 * 8 + k_1)
                            C_local[vi, vj] = C_local[vi, vj] + A_shared[vi, vk] * B_shared[vk, vj]
                for ax0, ax1 in T.grid(4, 4):
                    with T.block("C_local"):
                        v0 = T.axis.spatial(32, i_0 * 16 + i_1_j_1_fused // 4 * 4 + ax0)
                        v1 = T.axis.spatial(32, j_0 * 16 + i_1_j_1_fused % 4 * 4 + ax1)
                        C[v0, v1] = C_local[v0, v1]
""",
}


def load(name: str) -> IRModule:
    """The module of a seed (``Expected_4``) or small program (``matmul_shared``) by name."""
    from tilewright.script import from_source

    text = SEEDS.get(name) or SMALL[name]
    parsed = from_source(HEADER + text)
    return parsed if isinstance(parsed, IRModule) else IRModule({"main": parsed})


def _add(x: list[np.ndarray]) -> np.ndarray:
    return x[0] + x[1]


def _window(x: list[np.ndarray]) -> np.ndarray:
    a = x[0]
    n = x[1].shape[0]
    return a[:n] + a[1 : n + 1] + a[2 : n + 2]


def _matmul(x: list[np.ndarray]) -> np.ndarray:
    return x[0] @ x[1]


# name → (index of the output argument, numpy reference of the output from the inputs)
REFERENCES: dict[str, tuple[int, Callable[[list[np.ndarray]], np.ndarray]]] = {
    "Expected_1": (2, _add),
    "Expected_4": (1, _window),
    "Expected_5": (2, _matmul),
    "Expected_6": (2, _matmul),
    "matmul_blocking": (2, _matmul),
    "matmul_small": (2, _matmul),
    "matmul_shared": (2, _matmul),
}
