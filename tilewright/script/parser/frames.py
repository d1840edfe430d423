"""Directives: the small objects that ``T.`` functions return and the parser applies.

A ``T.grid(...)`` call does not build IR by itself; it returns a ``LoopFrame`` that the
parser turns into ``For`` nodes around the loop body it walks. Likewise ``T.block`` gives a
``BlockFrame``, ``T.axis.spatial`` an ``AxisDecl``, ``T.reads`` an ``AccessDirective`` and so
on. The parser dispatches on these classes with ``isinstance``; no state is global.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field

from tilewright.ir import op
from tilewright.ir.buffer import Buffer, BufferRegion, decl_buffer
from tilewright.ir.dtype import DataType, dtype, handle
from tilewright.ir.expr import FloatImm, IntImm, PrimExpr, Range, Var
from tilewright.ir.layout import Layout
from tilewright.ir.node import Node
from tilewright.ir.stmt import Attrs, AttrValue, ForKind, IterKind, Stmt


@dataclass(frozen=True)
class LoopSpec:
    """One loop of a loop frame: ``[min, min + extent)`` of a kind."""

    min: PrimExpr
    extent: PrimExpr
    kind: ForKind
    thread_tag: str = ""
    annotations: Attrs = ()


@dataclass(frozen=True)
class LoopFrame:
    """``for i, j in T.grid(...)``: one ``LoopSpec`` per target name, outermost first."""

    loops: tuple[LoopSpec, ...]


@dataclass(frozen=True)
class BlockFrame:
    """``with T.block(name):``."""

    name: str


@dataclass(frozen=True)
class InitFrame:
    """``with T.init():`` inside a block: the body becomes the block's ``init``."""


@dataclass(frozen=True)
class AttrFrame:
    """``with T.attr(node, key, value):`` becomes an ``AttrStmt`` around its body."""

    node: Node
    key: str
    value: PrimExpr


@dataclass(frozen=True)
class LetFrame:
    """``with T.let(x, value):`` becomes a ``LetStmt`` around its body; ``var`` is None for
    ``with T.LetStmt(value) as x:``, whose target names a new variable."""

    var: Var | None
    value: PrimExpr


@dataclass(frozen=True)
class AssertFrame:
    """``with T.Assert(cond, "message"):`` becomes an ``AssertStmt`` around its body."""

    condition: PrimExpr
    message: PrimExpr


@dataclass(frozen=True)
class AxisDecl:
    """``vi = T.axis.spatial(dom, binding)``: one block iterator."""

    kind: IterKind
    dom: Range | None  # None: take the domain of the loop bound to ``binding``
    binding: PrimExpr


@dataclass(frozen=True)
class AxisRemap:
    """``vi, vj = T.axis.remap("SR", [i, j])``: iterators bound to loop variables."""

    kinds: tuple[IterKind, ...]
    bindings: tuple[PrimExpr, ...]


@dataclass(frozen=True)
class AccessDirective:
    """``T.reads(...)`` (``is_write`` False) or ``T.writes(...)``."""

    is_write: bool
    regions: tuple[BufferRegion, ...]


@dataclass(frozen=True)
class WhereDirective:
    """``T.where(cond)``: the block realize's predicate."""

    predicate: PrimExpr


@dataclass(frozen=True)
class AttrDirective:
    """``T.block_attr({...})`` (``on_function`` False) or ``T.func_attr({...})``."""

    on_function: bool
    attrs: dict[str, AttrValue]


@dataclass(frozen=True)
class MetaVar:
    """``x, y = T.meta_var(f(i, j))``: Python values bound to names as they are, with no
    ``LetStmt`` (a tuple unpacks into several names)."""

    value: object


@dataclass(frozen=True)
class VarDecl:
    """``n = T.int32()``: a new variable named by the assignment target."""

    dtype: DataType


@dataclass(frozen=True)
class LetAnnotation:
    """``x: T.let[T.float32] = v`` (``kind`` given) or ``x: T.let = v`` (the value's dtype):
    TVM's explicit spelling of a ``LetStmt``."""

    kind: DTypeConstructor | None = None


@dataclass(frozen=True)
class BufferType:
    """Everything that describes a buffer but its name: what ``T.Buffer((4,), "float32")``
    and ``T.alloc_buffer(...)`` give; ``make`` creates the ``Buffer``."""

    shape: tuple[PrimExpr, ...]
    dtype: DataType
    data: Var | None = None
    strides: tuple[PrimExpr, ...] = ()
    elem_offset: PrimExpr | None = None
    scope: str = "global"
    align: int | None = None
    offset_factor: int | None = None
    layout: Layout | None = None
    axis_separators: tuple[int, ...] = ()
    annotations: Attrs = ()

    def make(self, name: str) -> Buffer:
        """A new ``Buffer`` called ``name`` with a fresh data variable unless one was given."""
        extra: dict[str, int] = {}
        if self.align is not None and self.align > 0:
            extra["align"] = self.align
        if self.offset_factor is not None and self.offset_factor > 0:
            extra["offset_factor"] = self.offset_factor
        return decl_buffer(
            self.shape,
            self.dtype,
            name,
            self.scope,
            data=self.data if self.data is not None else Var(name, handle),
            strides=self.strides,
            elem_offset=self.elem_offset if self.elem_offset is not None else 0,
            layout=self.layout,
            axis_separators=self.axis_separators,
            annotations=self.annotations,
            **extra,
        )


@dataclass(frozen=True)
class BufferDecl:
    """A buffer declared by assignment: ``X = T.alloc_buffer(...)`` (``kind`` "alloc"),
    ``T.decl_buffer`` ("decl"), ``T.match_buffer(source, ...)`` ("match")."""

    kind: str
    spec: BufferType
    source: object = None


class EnclosingDirective(ABC):
    """A ``T.`` call whose statement encloses the rest of the body (the tile layer's
    ``T.device_entry()`` and ``T.cta_id([...])``); subclasses live with their namespace.

    ``enclose(names)`` gets the assignment's target names (``None`` for a bare call) and
    returns the value those names bind and a function wrapping the rest of the body.
    """

    @abstractmethod
    def enclose(self, names: list[str] | None) -> tuple[object, Callable[[Stmt], Stmt]]:
        """The value bound to ``names`` and the wrapper of the rest of the body."""


@dataclass(frozen=True)
class DTypeConstructor:
    """``T.float32`` and friends: an annotation, a constant maker, a cast, a new variable.

    ``T.float32(0)`` is a constant, ``T.float32(x)`` casts an expression, ``T.float32("inf")``
    is a non-finite constant and ``T.int32()`` declares a variable (``n = T.int32()``).
    """

    name: str
    type: DataType = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "type", dtype(self.name))

    def __call__(
        self, value: object = None, storage_scope: object = None, *, is_size_var: bool = False
    ) -> object:
        if value is None:
            return VarDecl(self.type)  # a size variable (is_size_var) is a plain variable here
        if self.type.is_handle and isinstance(value, str):
            # ``T.handle("float32", "global")``: a typed pointer, a plain handle here.
            dtype(value if value != "void" else "handle")
            return self
        if isinstance(value, PrimExpr):
            return op.cast(value, self.type)
        if self.type.is_vector:
            raise TypeError(f"T.{self.name} takes an expression; use T.Broadcast for a constant")
        floating = self.type.is_float
        if isinstance(value, str):
            if not floating:
                raise TypeError(f"T.{self.name} takes a number or an expression, found {value!r}")
            return FloatImm(float(value), self.type)
        if isinstance(value, bool | int | float):
            if floating:
                return FloatImm(float(value), self.type)
            if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
                raise TypeError(f"T.{self.name}({value!r}): not an integer")
            if self.type.is_bool:
                return IntImm(int(bool(value)), self.type)
            return IntImm(int(value), self.type)
        raise TypeError(
            f"T.{self.name} takes a number or an expression, found {type(value).__name__}"
        )

    def __repr__(self) -> str:
        return f"T.{self.name}"
