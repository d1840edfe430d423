"""Small tile programs around one ``Tx.<scope>.gemm`` for the gemm tests (test support)."""

from __future__ import annotations

from tilewright.layout import ComposeLayout, S, SwizzleLayout, TileLayout, wgmma_accumulator_layout
from tilewright.script import tirx as T
from tilewright.script.tirx import tile as Tx

FRAGMENT = "fragment"


def swizzled(rows: int, k: int, width: int | None = None, bits: int = 16) -> ComposeLayout:
    """Rows of ``width`` bytes (K split into atoms of width bytes when wider), swizzled;
    ``width`` defaults to K's bytes, at most 128."""
    width = width or min(128, k * bits // 8)
    row = width * 8 // bits
    if k <= row:
        tile = TileLayout(S[rows, k])
    else:  # (rows, k) as k // row atom columns of rows x row, each swizzled
        tile = TileLayout(S[(rows, k // row, row) : (row, rows * row, 1)])
    return ComposeLayout(SwizzleLayout.from_bytes(width, bits), tile)


def interleaved(rows: int, k: int) -> TileLayout:
    """No swizzle: 8 x 8 core matrices of 16-bit elements, K-adjacent ones 128 bytes apart."""
    return TileLayout(S[(rows // 8, 8, k // 8, 8) : (k * 8, 8, 64, 1)])


def gemm_kernel(
    *,
    m: int = 64,
    n: int = 128,
    k: int = 64,
    scope: str = "warpgroup",
    op: str = "gemm",
    dtype: str = "float16",
    a_layout: object = "swizzled",
    a_scope: str = "shared.dyn",
    align: int = 1024,
    c_dtype: str = "float32",
    c_scope: str = "local",
    c_layout: object = FRAGMENT,
    c_shape: tuple[int, int] | None = None,
    a_rows: tuple[int, int] | None = None,
    accum: object = True,
    transB: bool = False,
    threads: int = 128,
    narrow: bool = False,
):
    """One CTA of ``threads`` threads running ``Tx.<scope>.<op>(C, A, B)`` once."""
    a_layout = swizzled(m, k) if a_layout == "swizzled" else a_layout
    b_layout = swizzled(n, k) if k >= 16 else TileLayout(S[n, k])
    c_shape = c_shape or (m, n)
    if c_layout == FRAGMENT:
        c_layout = wgmma_accumulator_layout(*c_shape)
    lo, hi = a_rows or (0, m)
    ex = getattr(Tx, scope)
    run = getattr(ex, op)
    cm, cn = c_shape

    @T.prim_func
    def kernel(X: T.Buffer((16,), "float32")):
        T.device_entry()
        T.cta_id([1])
        tid = T.thread_id([threads])
        As = T.alloc_buffer((m, k), dtype, scope=a_scope, align=align, layout=a_layout)
        Bs = T.alloc_buffer((n, k), dtype, scope="shared.dyn", align=1024, layout=b_layout)
        acc = T.alloc_buffer(c_shape, c_dtype, scope=c_scope, layout=c_layout)
        if narrow:
            if tid < 64:
                run(acc[0:cm, 0:cn], As[lo:hi, 0:k], Bs[0:n, 0:k], accum=accum, transB=transB)
        else:
            run(acc[0:cm, 0:cn], As[lo:hi, 0:k], Bs[0:n, 0:k], accum=accum, transB=transB)

    return kernel


def registers_gemm(m: int = 64, n: int = 128, k: int = 64, dtype: str = "float16"):
    """C (m x n, float32) = A @ B.T with A loaded into registers in the fragment layout."""

    @T.prim_func
    def kernel(
        A: T.Buffer((m, k), dtype), B: T.Buffer((n, k), dtype), C: T.Buffer((m, n), "float32")
    ):
        T.device_entry()
        T.thread_id([128])
        a_regs = T.alloc_buffer((m, k), dtype, scope="local", layout=wgmma_accumulator_layout(m, k))
        Bs = T.alloc_buffer((n, k), dtype, scope="shared.dyn", align=1024, layout=swizzled(n, k))
        acc = T.alloc_buffer(
            (m, n), "float32", scope="local", layout=wgmma_accumulator_layout(m, n)
        )
        Tx.wg.copy(a_regs[0:m, 0:k], A[0:m, 0:k])
        Tx.wg.copy(Bs[0:n, 0:k], B[0:n, 0:k])
        T.cuda.cta_sync()
        Tx.wg.gemm(acc[0:m, 0:n], a_regs[0:m, 0:k], Bs[0:n, 0:k], accum=False)
        Tx.wg.copy(C[0:m, 0:n], acc[0:m, 0:n])

    return kernel
