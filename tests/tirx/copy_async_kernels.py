"""Small tile programs around one ``Tx.<scope>.copy_async`` for the copy_async tests, and a
model of where a TMA copy puts each box element in shared memory (test support)."""

from __future__ import annotations

from tilewright.layout import ComposeLayout, S, SwizzleLayout, TileLayout
from tilewright.script import tirx as T
from tilewright.script.tirx import tile as Tx


def swizzled(rows: int, cols: int, width: int = 128, bits: int = 16) -> ComposeLayout:
    """``rows x cols`` row-major under the ``width``-byte swizzle."""
    return ComposeLayout(SwizzleLayout.from_bytes(width, bits), TileLayout(S[rows, cols]))


def copy_async_kernel(
    *,
    g_shape: tuple[int, int] = (256, 128),
    dtype: str = "float16",
    s_shape: tuple[int, int] = (128, 64),
    layout: object = "swizzled",
    s_scope: str = "shared.dyn",
    align: int = 1024,
    s_rows: tuple[int, int] = (0, 128),
    s_cols: tuple[int, int] = (0, 64),
    g_rows: tuple[int, int] = (0, 128),
    g_cols: tuple[int, int] = (0, 64),
    scope: str = "thread",
    store: bool = False,
    mbar: bool = True,
    bar_dtype: str = "uint64",
    g_strides: tuple[int, int] | None = None,
    first_thread: bool = True,
):
    """One CTA of 128 threads; ``Tx.<scope>.copy_async`` between ``A[g_rows, g_cols]`` and
    ``As[s_rows, s_cols]`` (a load, or a store when ``store``) under ``if tid == 0`` (or
    ``if tid < 128`` when not ``first_thread``)."""
    if layout == "swizzled":
        layout = swizzled(*s_shape)
    ex = getattr(Tx, scope)
    limit = 1 if first_thread else 128

    def issue(shared, global_, bar):
        dst, src = (global_, shared) if store else (shared, global_)
        return ex.copy_async(dst, src, mbar=bar if mbar else None)

    (r0, r1), (c0, c1), (gr0, gr1), (gc0, gc1) = s_rows, s_cols, g_rows, g_cols

    @T.prim_func
    def main(A: T.Buffer(g_shape, dtype, strides=g_strides)):
        T.device_entry()
        tid = T.thread_id([128])
        As = T.alloc_buffer(s_shape, dtype, scope=s_scope, align=align, layout=layout)
        bar = T.alloc_buffer((1,), bar_dtype, scope="shared.dyn", align=8)
        if tid < limit:
            issue(As[r0:r1, c0:c1], A[gr0:gr1, gc0:gc1], bar[0])

    return main


def tma_bytes(box: tuple[int, ...], element_bytes: int, swizzle: int, start: int) -> list[int]:
    """The shared byte address TMA writes each element of a ``box`` to (row-major order of
    the box), the box written from byte ``start``: densely, row-major, then with a
    ``swizzle``-byte swizzle the 16-byte chunk bits [4, 7) XORed with the row bits [7, 10)
    (only the low log2(swizzle / 16) of them)."""
    count = 1
    for extent in box:
        count *= extent
    mask = swizzle // 16 - 1 if swizzle else 0
    out = []
    for linear in range(count):
        address = start + linear * element_bytes
        out.append(address ^ (((address >> 7) & mask) << 4))
    return out
