"""Generic traversal of IR trees: a visitor, a mutator, and the small walks built on them.

Both dispatch to ``visit_<ClassName>`` of the node's class or, failing that, of its
nearest base class (``visit_BinaryOp`` handles every arithmetic node); without one, they
recurse through the node's dataclass fields.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, ClassVar, TypeVar, overload

from tilewright.ir.buffer import Buffer
from tilewright.ir.expr import PrimExpr, Var
from tilewright.ir.node import Node

if TYPE_CHECKING:
    from tilewright.ir.stmt import Stmt

_N = TypeVar("_N", bound=Node)


def _find_method(owner: type, cls: type) -> str | None:
    for klass in cls.__mro__:
        name = f"visit_{klass.__name__}"
        if hasattr(owner, name):
            return name
        if klass is Node:
            break
    return None


class Visitor:
    """Walks a tree in field order; override ``visit_<Class>`` and call ``generic_visit``
    to continue below a node."""

    _methods: ClassVar[dict[type, str | None]] = {}

    def __init_subclass__(cls) -> None:
        cls._methods = {}

    def visit(self, value: object) -> None:
        if isinstance(value, Node):
            cls = type(value)
            table = type(self)._methods
            if cls not in table:
                table[cls] = _find_method(type(self), cls)
            method = table[cls]
            if method is None:
                self.generic_visit(value)
            else:
                getattr(self, method)(value)
        elif isinstance(value, tuple):
            for item in value:
                self.visit(item)

    def generic_visit(self, node: Node) -> None:
        for _, value in node.field_items():
            self.visit(value)


class Mutator:
    """Rebuilds a tree bottom-up; an unchanged subtree is returned as the same object.

    A buffer is rewritten once and the result reused for every reference to it, so that
    identity between a buffer's uses survives the rewrite.
    """

    _methods: ClassVar[dict[type, str | None]] = {}

    def __init_subclass__(cls) -> None:
        cls._methods = {}

    def __init__(self) -> None:
        self.buffer_map: dict[Buffer, Buffer] = {}

    # A mutator keeps each field's kind: an expression becomes an expression (a ``Var`` may
    # become any expression), a statement a statement (a ``Block`` may become any statement),
    # and any other node a node of its own class.
    @overload
    def visit(self, value: PrimExpr) -> PrimExpr: ...
    @overload
    def visit(self, value: Stmt) -> Stmt: ...
    @overload
    def visit(self, value: _N) -> _N: ...
    @overload
    def visit(self, value: tuple[PrimExpr, ...]) -> tuple[PrimExpr, ...]: ...
    @overload
    def visit(self, value: tuple[Stmt, ...]) -> tuple[Stmt, ...]: ...
    @overload
    def visit(self, value: tuple[_N, ...]) -> tuple[_N, ...]: ...
    @overload
    def visit(self, value: object) -> object: ...
    def visit(self, value: object) -> object:
        if isinstance(value, Node):
            cls = type(value)
            table = type(self)._methods
            if cls not in table:
                table[cls] = _find_method(type(self), cls)
            method = table[cls]
            if method is None:
                return self.generic_visit(value)
            return getattr(self, method)(value)
        if isinstance(value, tuple):
            items = tuple(self.visit(item) for item in value)
            return value if all(a is b for a, b in zip(items, value, strict=True)) else items
        return value

    def visit_Buffer(self, buffer: Buffer) -> Buffer:
        if buffer not in self.buffer_map:
            self.buffer_map[buffer] = self.generic_visit(buffer)
        return self.buffer_map[buffer]

    def generic_visit(self, node: _N) -> _N:
        changes = {}
        for name, value in node.field_items():
            new = self.visit(value)
            if new is not value:
                changes[name] = new
        return node.replace(**changes) if changes else node


class _PostOrder(Visitor):
    def __init__(self, fn: Callable[[Node], None]) -> None:
        self.fn = fn

    def generic_visit(self, node: Node) -> None:
        super().generic_visit(node)
        self.fn(node)


class _PreOrder(Visitor):
    def __init__(self, fn: Callable[[Node], bool | None]) -> None:
        self.fn = fn

    def generic_visit(self, node: Node) -> None:
        if self.fn(node) is not False:
            super().generic_visit(node)


def post_order_visit(tree: object, fn: Callable[[Node], None]) -> None:
    """Call ``fn`` on every node of ``tree``, children before parents."""
    _PostOrder(fn).visit(tree)


def pre_order_visit(tree: object, fn: Callable[[Node], bool | None]) -> None:
    """Call ``fn`` on every node, parents first; ``fn`` returning ``False`` skips the subtree."""
    _PreOrder(fn).visit(tree)


class _Substitute(Mutator):
    def __init__(self, mapping: Mapping[Var, PrimExpr]) -> None:
        super().__init__()
        self.mapping = mapping

    def visit_Var(self, var: Var) -> PrimExpr:
        return self.mapping.get(var, var)


@overload
def substitute(tree: PrimExpr, mapping: Mapping[Var, PrimExpr | int]) -> PrimExpr: ...
@overload
def substitute(tree: Stmt, mapping: Mapping[Var, PrimExpr | int]) -> Stmt: ...
@overload
def substitute(tree: _N, mapping: Mapping[Var, PrimExpr | int]) -> _N: ...
@overload
def substitute(
    tree: tuple[PrimExpr, ...], mapping: Mapping[Var, PrimExpr | int]
) -> tuple[PrimExpr, ...]: ...
@overload
def substitute(tree: object, mapping: Mapping[Var, PrimExpr | int]) -> object: ...
def substitute(tree: object, mapping: Mapping[Var, PrimExpr | int]) -> object:
    """``tree`` with each free occurrence of a mapped variable replaced by its expression."""
    if not mapping:
        return tree
    from tilewright.ir.op import convert

    return _Substitute({k: convert(v, k.dtype) for k, v in mapping.items()}).visit(tree)


def collect_vars(tree: object) -> list[Var]:
    """Every distinct variable referenced in ``tree``, in first-seen order."""
    seen: dict[Var, None] = {}

    def add(node: Node) -> None:
        if isinstance(node, Var):
            seen.setdefault(node, None)

    post_order_visit(tree, add)
    return list(seen)


def bound_vars(tree: object) -> list[Var]:
    """The variables ``tree`` binds, in first-seen order: loop, let and block iterator
    variables, and the data of the buffers it allocates. Substituting fresh variables for
    them gives a copy of ``tree`` that can stand beside the original.

    Example: ``substitute(body, {v: Var(v.name, v.dtype) for v in bound_vars(body)})``.
    """
    from tilewright.ir.expr import Let
    from tilewright.ir.stmt import Allocate, Block, For, IterVar, LetStmt

    seen: dict[Var, None] = {}

    def add(node: Node) -> None:
        if isinstance(node, For):
            seen.setdefault(node.loop_var, None)
        elif isinstance(node, LetStmt | Let | IterVar):
            seen.setdefault(node.var, None)
        elif isinstance(node, Allocate):
            seen.setdefault(node.buffer.data, None)
        elif isinstance(node, Block):
            for buffer in node.alloc_buffers:
                seen.setdefault(buffer.data, None)

    post_order_visit(tree, add)
    return list(seen)


def uses_var(tree: object, predicate: Callable[[Var], bool]) -> bool:
    """True if some variable in ``tree`` satisfies ``predicate``."""
    return any(predicate(v) for v in collect_vars(tree))
