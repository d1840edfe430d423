"""Buffer declarations of the ``T`` namespace: ``T.Buffer``, ``T.alloc_buffer``,
``T.decl_buffer`` and ``T.match_buffer``."""

from __future__ import annotations

from collections.abc import Sequence

from tilewright.ir.expr import PrimExpr, Var
from tilewright.ir.node import Node
from tilewright.script.parser.frames import BufferDecl, BufferType
from tilewright.script.tir import arguments as args


def _spec(
    where: str,
    shape: object,
    dtype: object = "float32",
    data: Var | None = None,
    strides: Sequence[object] | None = None,
    elem_offset: object = None,
    scope: str = "global",
    align: int = -1,
    offset_factor: int = 0,
    layout: Node | None = None,
) -> BufferType:
    if data is not None and not isinstance(data, Var):
        raise TypeError(f"{where}: data must be a handle variable, found {type(data).__name__}")
    if not isinstance(scope, str):
        raise TypeError(f'{where}: scope must be a string such as "shared", found {scope!r}')
    return BufferType(
        shape=args.shape_of(shape, where),
        dtype=args.dtype_of(dtype, where),
        data=data,
        strides=tuple(args.int_expr(s, f"{where} strides") for s in strides or ()),
        elem_offset=None if elem_offset is None else args.int_expr(elem_offset, where),
        scope=scope,
        align=args.int_value(align, f"{where} align"),
        offset_factor=args.int_value(offset_factor, f"{where} offset_factor"),
        layout=layout,
    )


class _BufferTypeMaker:
    """``T.Buffer``: ``T.Buffer((4, 8), "float32")`` and the 2022 ``T.Buffer[(4, 8), "float32"]``
    both describe a buffer parameter (or a buffer view when assigned in a body)."""

    def __call__(
        self,
        shape: object,
        dtype: object = "float32",
        data: Var | None = None,
        strides: Sequence[object] | None = None,
        elem_offset: object = None,
        scope: str = "global",
        align: int = -1,
        offset_factor: int = 0,
        buffer_type: str = "",
        axis_separators: object = None,
        layout: Node | None = None,
    ) -> BufferType:
        return _spec(
            "T.Buffer",
            shape,
            dtype,
            data,
            strides,
            elem_offset,
            scope,
            align,
            offset_factor,
            layout,
        )

    def __getitem__(self, key: object) -> BufferType:
        items = key if isinstance(key, tuple) else (key,)
        if len(items) == 2 and isinstance(items[1], str):
            return self(items[0], items[1])
        if len(items) == 1 or not isinstance(items[-1], str):
            return self(items if len(items) > 1 else items[0])
        return self(items[:-1], items[-1])

    def __repr__(self) -> str:
        return "T.Buffer"


Buffer = _BufferTypeMaker()


def alloc_buffer(
    shape: object,
    dtype: object = "float32",
    data: Var | None = None,
    strides: Sequence[object] | None = None,
    elem_offset: object = None,
    scope: str = "global",
    align: int = -1,
    offset_factor: int = 0,
    buffer_type: str = "default",
    axis_separators: object = None,
    layout: Node | None = None,
) -> BufferDecl:
    """``X = T.alloc_buffer((16, 16), "float32", scope="shared")``: storage owned by the
    enclosing block (the root block at function level)."""
    spec = _spec(
        "T.alloc_buffer",
        shape,
        dtype,
        data,
        strides,
        elem_offset,
        scope,
        align,
        offset_factor,
        layout,
    )
    return BufferDecl("alloc", spec)


sblock_alloc_buffer = alloc_buffer


def decl_buffer(
    shape: object,
    dtype: object = "float32",
    data: Var | None = None,
    strides: Sequence[object] | None = None,
    elem_offset: object = None,
    scope: str = "global",
    align: int = -1,
    offset_factor: int = 0,
    buffer_type: str = "default",
    axis_separators: object = None,
    layout: Node | None = None,
) -> BufferDecl:
    """``X = T.decl_buffer((16,), "float32", scope="local")``: an ``Allocate`` whose body is
    the rest of the enclosing statement list."""
    spec = _spec(
        "T.decl_buffer",
        shape,
        dtype,
        data,
        strides,
        elem_offset,
        scope,
        align,
        offset_factor,
        layout,
    )
    return BufferDecl("decl", spec)


def match_buffer(
    param: object,
    shape: object,
    dtype: object = "float32",
    data: Var | None = None,
    strides: Sequence[object] | None = None,
    elem_offset: object = None,
    scope: str = "global",
    align: int = -1,
    offset_factor: int = 0,
    buffer_type: str = "default",
    axis_separators: object = None,
    layout: Node | None = None,
) -> BufferDecl:
    """``A = T.match_buffer(a, (n,), "float32")``: binds a ``T.handle`` parameter to a buffer
    (or, inside a block, views a region such as ``B[vi, 0:4]``)."""
    if not isinstance(param, PrimExpr | Node):
        raise TypeError(
            "T.match_buffer: expected a T.handle parameter or a buffer region, "
            f"found {type(param).__name__} {param!r}"
        )
    spec = _spec(
        "T.match_buffer",
        shape,
        dtype,
        data,
        strides,
        elem_offset,
        scope,
        align,
        offset_factor,
        layout,
    )
    return BufferDecl("match", spec, param)
