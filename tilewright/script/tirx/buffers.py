"""Buffer declarations of the tirx ``T`` namespace: TIR's, with their ``layout=`` checked.

``T.alloc_buffer((32, 32), "float32", scope="shared", layout=TileLayout(S[32, 32]))`` gives
the buffer a tile layout (or a swizzled ``ComposeLayout``); the layout must index exactly as
many elements as the shape has.
"""

from __future__ import annotations

import math
from typing import Any

from tilewright.ir import IntImm
from tilewright.layout import ComposeLayout, TileLayout
from tilewright.script.parser.frames import BufferDecl
from tilewright.script.tir import buffers as tir_buffers


def _checked(decl: BufferDecl, where: str) -> BufferDecl:
    layout = decl.spec.layout
    if layout is None:
        return decl
    if not isinstance(layout, TileLayout | ComposeLayout):
        raise TypeError(
            f"{where}: layout must be a TileLayout or ComposeLayout, got {type(layout).__name__}"
        )
    dims: list[int] = []
    for extent in decl.spec.shape:
        if not isinstance(extent, IntImm):
            raise ValueError(f"{where}: a buffer with a layout needs a constant shape")
        dims.append(extent.value)
    size = math.prod(dims)
    if layout.size() != size:
        raise ValueError(
            f"{where}: layout {layout!r} indexes {layout.size()} elements but shape {dims} "
            f"has {size}"
        )
    return decl


def alloc_buffer(*args: Any, **kwargs: Any) -> BufferDecl:
    """``X = T.alloc_buffer(shape, dtype, scope=..., layout=...)`` (see ``T.alloc_buffer``).

    Example: ``A_smem = T.alloc_buffer((32, 32), scope="shared", layout=s_layout)``.
    """
    return _checked(tir_buffers.alloc_buffer(*args, **kwargs), "T.alloc_buffer")


def match_buffer(*args: Any, **kwargs: Any) -> BufferDecl:
    """``A = T.match_buffer(A_ptr, shape, dtype, layout=...)`` (see ``T.match_buffer``)."""
    return _checked(tir_buffers.match_buffer(*args, **kwargs), "T.match_buffer")


def decl_buffer(*args: Any, **kwargs: Any) -> BufferDecl:
    """``X = T.decl_buffer(shape, dtype, scope=..., layout=...)`` (see ``T.decl_buffer``)."""
    return _checked(tir_buffers.decl_buffer(*args, **kwargs), "T.decl_buffer")
