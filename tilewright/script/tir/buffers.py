"""Buffer declarations of the ``T`` namespace: ``T.Buffer``, ``T.alloc_buffer``,
``T.decl_buffer`` and ``T.match_buffer``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar, cast

from tilewright.ir.buffer import Buffer as BufferNode
from tilewright.ir.expr import PrimExpr, Var
from tilewright.ir.layout import Layout
from tilewright.ir.node import Node
from tilewright.ir.scope import unknown_scope_message
from tilewright.ir.stmt import attrs
from tilewright.ir.structural import structural_equal
from tilewright.script.parser.errors import ArgumentError
from tilewright.script.parser.frames import BufferDecl, BufferType
from tilewright.script.tir import arguments as args

_Made = TypeVar("_Made")


def _as_is(spec: BufferType) -> BufferType:
    return spec


def _maker(name: str, wrap: Callable[[BufferType], _Made], doc: str) -> Callable[..., _Made]:
    """The function ``T.<name>``: all four declarations take the same options and check them
    alike; ``wrap`` turns the checked ``BufferType`` into what ``T.<name>`` gives."""
    where = f"T.{name}"

    def make(
        shape: object,
        dtype: object = "float32",
        data: Var | BufferNode | None = None,
        strides: Sequence[object] | None = None,
        elem_offset: object = None,
        scope: str = "global",
        align: int = -1,
        offset_factor: int = 0,
        buffer_type: str = "default",
        axis_separators: object = None,
        layout: Layout | None = None,
        annotations: object = None,
    ) -> _Made:
        if isinstance(data, BufferNode) and where == "T.Buffer":
            # ``T.Buffer(shape, dtype, data=B)`` over ``B = T.allocate(...)``: that storage.
            same = structural_equal(args.shape_of(shape, where), data.shape)
            if args.dtype_of(dtype, where) != data.dtype or not same:
                raise TypeError(
                    f"{where}: a view of T.allocate's {data.name} must have its "
                    f"shape and dtype {data.shape} {data.dtype}"
                )
            return cast(_Made, data)
        if isinstance(data, BufferNode):
            data = data.data  # ``data=B`` over ``B = T.allocate_const(...)``: its storage
        if data is not None and not isinstance(data, Var):
            raise TypeError(f"{where}: data must be a handle variable, found {type(data).__name__}")
        if annotations is not None and name not in ("alloc_buffer", "decl_buffer"):
            raise ArgumentError(f"{where} takes no annotations", keyword="annotations")
        if scope == "":
            scope = "global"  # TVM reads an empty scope as global
        problem = unknown_scope_message(scope)
        if problem is not None:
            raise ArgumentError(f"{where}: {problem}", keyword="scope")
        spec = BufferType(
            shape=args.shape_of(shape, where),
            dtype=args.dtype_of(dtype, where),
            data=data,
            strides=tuple(args.int_expr(s, f"{where} strides") for s in strides or ()),
            elem_offset=None if elem_offset is None else args.int_expr(elem_offset, where),
            scope=scope,
            align=args.int_value(align, f"{where} align"),
            offset_factor=args.int_value(offset_factor, f"{where} offset_factor"),
            layout=layout,
            axis_separators=_separators(axis_separators, where),
            annotations=attrs(args.attr_dict(annotations or {}, f"{where} annotations")),
        )
        return wrap(spec)

    # Python's argument errors then name ``alloc_buffer()``, not ``make()``.
    make.__name__ = make.__qualname__ = name
    make.__doc__ = doc
    return make


def _separators(value: object, where: str) -> tuple[int, ...]:
    """``axis_separators=[1]``: the dimensions before which the physical buffer is split."""
    if value is None:
        return ()
    if not isinstance(value, list | tuple):
        raise TypeError(f"{where}: axis_separators must be a list of integers, found {value!r}")
    return tuple(args.int_value(a, f"{where} axis_separators") for a in value)


class _BufferTypeMaker:
    """``T.Buffer``: ``T.Buffer((4, 8), "float32")`` and the 2022 ``T.Buffer[(4, 8), "float32"]``
    both describe a buffer parameter (or a buffer view when assigned in a body)."""

    __call__ = staticmethod(_maker("Buffer", _as_is, '``T.Buffer((4, 8), "float32")``'))

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

alloc_buffer = _maker(
    "alloc_buffer",
    lambda spec: BufferDecl("alloc", spec),
    """``X = T.alloc_buffer((16, 16), "float32", scope="shared")``: storage owned by the
    enclosing block (the root block at function level).""",
)

sblock_alloc_buffer = alloc_buffer

decl_buffer = _maker(
    "decl_buffer",
    lambda spec: BufferDecl("decl", spec),
    """``X = T.decl_buffer((16,), "float32", scope="local")``: an ``Allocate`` whose body is
    the rest of the enclosing statement list.""",
)

_match_spec = _maker("match_buffer", _as_is, "The options of ``T.match_buffer`` after ``param``.")


def match_buffer(param: object, *shape_and_options: object, **options: object) -> BufferDecl:
    """``A = T.match_buffer(a, (n,), "float32")``: binds a ``T.handle`` parameter to a buffer
    (or, inside a block, views a region such as ``B[vi, 0:4]``); the shape and options after
    ``param`` are those of ``T.Buffer``."""
    if not isinstance(param, PrimExpr | Node):
        raise TypeError(
            "T.match_buffer: expected a T.handle parameter or a buffer region, "
            f"found {type(param).__name__} {param!r}"
        )
    return BufferDecl("match", _match_spec(*shape_and_options, **options), param)
