"""Sizes in, ``PrimFunc`` out: the script programs of the workload corpus (``workloads.py``).

Each maker takes its sizes as keyword arguments and returns one block-level function named
``main`` (``global_symbol`` "main", ``tir.noalias``), its blocks named as TVM's te/topi
operators name theirs. The sizes reach the script through Python variables of the maker,
which the parser reads from the enclosing frame.

Example::

    >>> f = matmul(m=16, n=16, k=16)
    >>> [b.shape for _, b in f.buffer_map][2]          # C: (16, 16)
"""

from __future__ import annotations

from typing import no_type_check

from tilewright.ir import PrimFunc
from tilewright.script import tir as T

# T.min_value("float32") in TVM: the lowest finite float32, the init of a max reduction.
FLOAT32_MIN = -3.4028234663852886e38
# layer_norm's epsilon, added to the variance.
LAYER_NORM_EPS = 1e-5

# Script syntax (dtype strings in annotations, parsed frames) is not Python to mypy: each
# script function is @no_type_check.


def matmul(m: int, n: int, k: int) -> PrimFunc:
    """C[i, j] = sum_k A[i, k] * B[k, j]: the seed notebook's matmul (at m = n = k)."""
    M, N, K = m, n, k

    @T.prim_func
    @no_type_check
    def main(
        A: T.Buffer((M, K), "float32"),
        B: T.Buffer((K, N), "float32"),
        C: T.Buffer((M, N), "float32"),
    ) -> None:
        T.func_attr({"global_symbol": "main", "tir.noalias": True})
        for i, j, k in T.grid(M, N, K):
            with T.block("C"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    C[vi, vj] = 0.0
                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]

    return main


def vector_add(n: int) -> PrimFunc:
    """C[i] = A[i] + B[i]."""

    @T.prim_func
    @no_type_check
    def main(
        A: T.Buffer((n,), "float32"), B: T.Buffer((n,), "float32"), C: T.Buffer((n,), "float32")
    ) -> None:
        T.func_attr({"global_symbol": "main", "tir.noalias": True})
        for i in range(n):
            with T.block("T_add"):
                vi = T.axis.remap("S", [i])
                C[vi] = A[vi] + B[vi]

    return main


def window_sum(n: int) -> PrimFunc:
    """B[i] = A[i] + A[i + 1] + A[i + 2], A holding n + 2 elements."""

    @T.prim_func
    @no_type_check
    def main(A: T.Buffer((n + 2,), "float32"), B: T.Buffer((n,), "float32")) -> None:
        T.func_attr({"global_symbol": "main", "tir.noalias": True})
        for i in range(n):
            with T.block("B"):
                vi = T.axis.remap("S", [i])
                B[vi] = A[vi] + A[vi + 1] + A[vi + 2]

    return main


def matmul_bias_relu(m: int, n: int, k: int) -> PrimFunc:
    """compute[i, j] = max(sum_k A[i, k] * B[k, j] + bias[j], 0) in three blocks."""
    M, N, K = m, n, k

    @T.prim_func
    @no_type_check
    def main(
        A: T.Buffer((M, K), "float32"),
        B: T.Buffer((K, N), "float32"),
        bias: T.Buffer((N,), "float32"),
        compute: T.Buffer((M, N), "float32"),
    ) -> None:
        T.func_attr({"global_symbol": "main", "tir.noalias": True})
        T_matmul = T.alloc_buffer((M, N), "float32")
        T_bias_add = T.alloc_buffer((M, N), "float32")
        for i, j, k in T.grid(M, N, K):
            with T.block("matmul"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    T_matmul[vi, vj] = T.float32(0)
                T_matmul[vi, vj] = T_matmul[vi, vj] + A[vi, vk] * B[vk, vj]
        for i, j in T.grid(M, N):
            with T.block("bias_add"):
                vi, vj = T.axis.remap("SS", [i, j])
                T_bias_add[vi, vj] = T_matmul[vi, vj] + bias[vj]
        for i, j in T.grid(M, N):
            with T.block("relu"):
                vi, vj = T.axis.remap("SS", [i, j])
                compute[vi, vj] = T.max(T_bias_add[vi, vj], T.float32(0))

    return main


def batch_matmul(b: int, m: int, n: int, k: int) -> PrimFunc:
    """C[b, i, j] = sum_k A[b, i, k] * B[b, k, j] (TVM's NN layout)."""
    Bt, M, N, K = b, m, n, k

    @T.prim_func
    @no_type_check
    def main(
        A: T.Buffer((Bt, M, K), "float32"),
        B: T.Buffer((Bt, K, N), "float32"),
        T_batch_matmul_NN: T.Buffer((Bt, M, N), "float32"),
    ) -> None:
        T.func_attr({"global_symbol": "main", "tir.noalias": True})
        for b, i, j, k in T.grid(Bt, M, N, K):
            with T.block("T_batch_matmul_NN"):
                vb, vi, vj, vk = T.axis.remap("SSSR", [b, i, j, k])
                with T.init():
                    T_batch_matmul_NN[vb, vi, vj] = T.float32(0)
                T_batch_matmul_NN[vb, vi, vj] = (
                    T_batch_matmul_NN[vb, vi, vj] + A[vb, vi, vk] * B[vb, vk, vj]
                )

    return main


def conv2d_nhwc(n: int, h: int, w: int, ci: int, co: int, stride: int = 1) -> PrimFunc:
    """A 3x3 convolution, padding 1: data (n, h, w, ci), weight HWIO (3, 3, ci, co), output
    (n, (h - 1) // stride + 1, (w - 1) // stride + 1, co); the border is zero-padded by the
    "pad_temp" block. With a stride, the last output row and column may use fewer input rows
    than the stride (a tail)."""
    N, H, W, CI, CO = n, h, w, ci, co
    OH, OW = (H - 1) // stride + 1, (W - 1) // stride + 1

    def at(out, tap):  # the padded input row (column) an output row (column) and tap read
        return out + tap if stride == 1 else out * stride + tap

    @T.prim_func
    @no_type_check
    def main(
        data: T.Buffer((N, H, W, CI), "float32"),
        weight: T.Buffer((3, 3, CI, CO), "float32"),
        conv2d_nhwc: T.Buffer((N, OH, OW, CO), "float32"),
    ) -> None:
        T.func_attr({"global_symbol": "main", "tir.noalias": True})
        pad_temp = T.alloc_buffer((N, H + 2, W + 2, CI), "float32")
        for i0, i1, i2, i3 in T.grid(N, H + 2, W + 2, CI):
            with T.block("pad_temp"):
                v0, v1, v2, v3 = T.axis.remap("SSSS", [i0, i1, i2, i3])
                pad_temp[v0, v1, v2, v3] = T.if_then_else(
                    v1 >= 1 and v1 < H + 1 and v2 >= 1 and v2 < W + 1,
                    data[v0, v1 - 1, v2 - 1, v3],
                    T.float32(0),
                )
        for nn, yy, xx, ff, ry, rx, rc in T.grid(N, OH, OW, CO, 3, 3, CI):
            with T.block("conv2d_nhwc"):
                vn, vy, vx, vf, vry, vrx, vrc = T.axis.remap(
                    "SSSSRRR", [nn, yy, xx, ff, ry, rx, rc]
                )
                with T.init():
                    conv2d_nhwc[vn, vy, vx, vf] = T.float32(0)
                conv2d_nhwc[vn, vy, vx, vf] = (
                    conv2d_nhwc[vn, vy, vx, vf]
                    + pad_temp[vn, at(vy, vry), at(vx, vrx), vrc] * weight[vry, vrx, vrc, vf]
                )

    return main


def depthwise_conv2d(n: int, h: int, w: int, c: int) -> PrimFunc:
    """A depthwise 3x3 convolution (channel multiplier 1), NHWC, stride 1, padding 1: data
    (n, h, w, c), filter (3, 3, c), output (n, h, w, c), padded by "PaddedInput"."""
    N, H, W, C = n, h, w, c

    @T.prim_func
    @no_type_check
    def main(
        data: T.Buffer((N, H, W, C), "float32"),
        kernel: T.Buffer((3, 3, C), "float32"),
        DepthwiseConv2d: T.Buffer((N, H, W, C), "float32"),
    ) -> None:
        T.func_attr({"global_symbol": "main", "tir.noalias": True})
        PaddedInput = T.alloc_buffer((N, H + 2, W + 2, C), "float32")
        for i0, i1, i2, i3 in T.grid(N, H + 2, W + 2, C):
            with T.block("PaddedInput"):
                v0, v1, v2, v3 = T.axis.remap("SSSS", [i0, i1, i2, i3])
                PaddedInput[v0, v1, v2, v3] = T.if_then_else(
                    v1 >= 1 and v1 < H + 1 and v2 >= 1 and v2 < W + 1,
                    data[v0, v1 - 1, v2 - 1, v3],
                    T.float32(0),
                )
        for b, i, j, c, di, dj in T.grid(N, H, W, C, 3, 3):
            with T.block("DepthwiseConv2d"):
                vb, vi, vj, vc, vdi, vdj = T.axis.remap("SSSSRR", [b, i, j, c, di, dj])
                with T.init():
                    DepthwiseConv2d[vb, vi, vj, vc] = T.float32(0)
                DepthwiseConv2d[vb, vi, vj, vc] = (
                    DepthwiseConv2d[vb, vi, vj, vc]
                    + PaddedInput[vb, vi + vdi, vj + vdj, vc] * kernel[vdi, vdj, vc]
                )

    return main


def softmax(m: int, n: int) -> PrimFunc:
    """Softmax over the last axis of A (m, n), in topi's four blocks."""
    M, N, LOWEST = m, n, FLOAT32_MIN

    @T.prim_func
    @no_type_check
    def main(A: T.Buffer((M, N), "float32"), T_softmax_norm: T.Buffer((M, N), "float32")) -> None:
        T.func_attr({"global_symbol": "main", "tir.noalias": True})
        T_softmax_maxelem = T.alloc_buffer((M,), "float32")
        T_softmax_exp = T.alloc_buffer((M, N), "float32")
        T_softmax_expsum = T.alloc_buffer((M,), "float32")
        for i0, k in T.grid(M, N):
            with T.block("T_softmax_maxelem"):
                v0, vk = T.axis.remap("SR", [i0, k])
                with T.init():
                    T_softmax_maxelem[v0] = T.float32(LOWEST)
                T_softmax_maxelem[v0] = T.max(T_softmax_maxelem[v0], A[v0, vk])
        for i0, i1 in T.grid(M, N):
            with T.block("T_softmax_exp"):
                v0, v1 = T.axis.remap("SS", [i0, i1])
                T_softmax_exp[v0, v1] = T.exp(A[v0, v1] - T_softmax_maxelem[v0])
        for i0, k in T.grid(M, N):
            with T.block("T_softmax_expsum"):
                v0, vk = T.axis.remap("SR", [i0, k])
                with T.init():
                    T_softmax_expsum[v0] = T.float32(0)
                T_softmax_expsum[v0] = T_softmax_expsum[v0] + T_softmax_exp[v0, vk]
        for i0, i1 in T.grid(M, N):
            with T.block("T_softmax_norm"):
                v0, v1 = T.axis.remap("SS", [i0, i1])
                T_softmax_norm[v0, v1] = T_softmax_exp[v0, v1] / T_softmax_expsum[v0]

    return main


def layer_norm(m: int, n: int) -> PrimFunc:
    """Layer normalisation over the last axis of A (m, n), scaled by gamma and shifted by beta.

    TVM computes the row sum and the row sum of squares in one two-output block
    "A_red_temp"; a reduction block here updates one buffer, so each is its own block, named
    after the buffer TVM gives that output. The variance is E[x^2] - E[x]^2, as in TVM.
    """
    M, N, EPS = m, n, LAYER_NORM_EPS

    @T.prim_func
    @no_type_check
    def main(
        A: T.Buffer((M, N), "float32"),
        gamma: T.Buffer((N,), "float32"),
        beta: T.Buffer((N,), "float32"),
        T_layer_norm: T.Buffer((M, N), "float32"),
    ) -> None:
        T.func_attr({"global_symbol": "main", "tir.noalias": True})
        A_red_temp_v0 = T.alloc_buffer((M,), "float32")
        A_red_temp_v1 = T.alloc_buffer((M,), "float32")
        for i0, k in T.grid(M, N):
            with T.block("A_red_temp_v0"):
                v0, vk = T.axis.remap("SR", [i0, k])
                with T.init():
                    A_red_temp_v0[v0] = T.float32(0)
                A_red_temp_v0[v0] = A_red_temp_v0[v0] + A[v0, vk]
        for i0, k in T.grid(M, N):
            with T.block("A_red_temp_v1"):
                v0, vk = T.axis.remap("SR", [i0, k])
                with T.init():
                    A_red_temp_v1[v0] = T.float32(0)
                A_red_temp_v1[v0] = A_red_temp_v1[v0] + A[v0, vk] * A[v0, vk]
        for i0, i1 in T.grid(M, N):
            with T.block("T_layer_norm"):
                v0, v1 = T.axis.remap("SS", [i0, i1])
                T_layer_norm[v0, v1] = (A[v0, v1] - A_red_temp_v0[v0] / T.float32(N)) * T.rsqrt(
                    A_red_temp_v1[v0] / T.float32(N)
                    - A_red_temp_v0[v0] / T.float32(N) * (A_red_temp_v0[v0] / T.float32(N))
                    + T.float32(EPS)
                ) * gamma[v1] + beta[v1]

    return main


def transpose(m: int, n: int) -> PrimFunc:
    """T_transpose[j, i] = A[i, j] for A (m, n)."""
    M, N = m, n

    @T.prim_func
    @no_type_check
    def main(A: T.Buffer((M, N), "float32"), T_transpose: T.Buffer((N, M), "float32")) -> None:
        T.func_attr({"global_symbol": "main", "tir.noalias": True})
        for i0, i1 in T.grid(N, M):
            with T.block("T_transpose"):
                v0, v1 = T.axis.remap("SS", [i0, i1])
                T_transpose[v0, v1] = A[v1, v0]

    return main


def row_sum(m: int, n: int) -> PrimFunc:
    """A_red[i] = sum_k A[i, k] for A (m, n)."""
    M, N = m, n

    @T.prim_func
    @no_type_check
    def main(A: T.Buffer((M, N), "float32"), A_red: T.Buffer((M,), "float32")) -> None:
        T.func_attr({"global_symbol": "main", "tir.noalias": True})
        for i0, k in T.grid(M, N):
            with T.block("A_red"):
                v0, vk = T.axis.remap("SR", [i0, k])
                with T.init():
                    A_red[v0] = T.float32(0)
                A_red[v0] = A_red[v0] + A[v0, vk]

    return main
