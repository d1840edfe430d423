"""Structural equality and hashing of IR, modulo renaming of variables and buffers.

Two trees are equal when they have the same node classes and field values, and their
variables (and buffers) correspond one-to-one in order of first appearance; names (of
variables, buffers, functions and blocks, as in TVM, where a block's ``name_hint`` takes
no part) and source positions (``span``) are hints and take no part. A Python list and a
tuple of the same items are equal (TVM converts both to one ``Array``). The hash is stable
across processes (it keys the compile cache).
"""

from __future__ import annotations

import enum
import hashlib
import struct
from dataclasses import dataclass, field

from tilewright.ir.buffer import Buffer
from tilewright.ir.dtype import DataType
from tilewright.ir.expr import Var
from tilewright.ir.function import PrimFunc
from tilewright.ir.node import Node
from tilewright.ir.stmt import Block, BufferStore, For

# Fields that are hints only and take no part in equality: names, and source positions.
_IGNORED = {
    Var: ("name",),
    Buffer: ("name",),
    PrimFunc: ("name", "spelling"),
    Block: ("name", "span"),
    For: ("span",),
    BufferStore: ("span",),
}


@dataclass
class Mismatch:
    """Where two trees first differ: the path from the roots and the nodes (or values) there."""

    path: str
    lhs: object
    rhs: object
    reason: str


@dataclass
class _Equal:
    map_free_vars: bool = True
    lhs_to_rhs: dict[int, object] = field(default_factory=dict)
    rhs_to_lhs: dict[int, object] = field(default_factory=dict)
    mismatch: Mismatch | None = None
    # Without map_free_vars: the ids of the variables and buffers each tree defines.
    lhs_defined: set[int] = field(default_factory=set)
    rhs_defined: set[int] = field(default_factory=set)

    def fail(self, path: str, a: object, b: object, reason: str) -> bool:
        if self.mismatch is None:
            self.mismatch = Mismatch(path, a, b, reason)
        return False

    def bind(self, a: Node, b: Node, path: str) -> bool | None:
        """For vars and buffers: True/False when already mapped, None when new."""
        if id(a) in self.lhs_to_rhs:
            if self.lhs_to_rhs[id(a)] is b:
                return True
            return self.fail(path, a, b, "refers to a different variable or buffer")
        if id(b) in self.rhs_to_lhs:
            return self.fail(path, a, b, "refers to a different variable or buffer")
        if not self.map_free_vars and not (id(a) in self.lhs_defined and id(b) in self.rhs_defined):
            if a is not b:  # a free variable stands for itself
                return self.fail(path, a, b, "a different free variable (map_free_vars=False)")
            self.record(a, b)
            return True
        return None

    def record(self, a: Node, b: Node) -> None:
        self.lhs_to_rhs[id(a)] = b
        self.rhs_to_lhs[id(b)] = a

    def equal(self, a: object, b: object, path: str) -> bool:
        if isinstance(a, Node) or isinstance(b, Node):
            if type(a) is not type(b):
                return self.fail(path, a, b, f"{type(a).__name__} vs {type(b).__name__}")
            assert isinstance(a, Node) and isinstance(b, Node)
            if isinstance(a, Var | Buffer):
                known = self.bind(a, b, path)
                if known is not None:
                    return known
                if isinstance(a, Var) and isinstance(b, Var):  # one type, checked above
                    if a.dtype != b.dtype:
                        return self.fail(path, a, b, f"dtype {a.dtype} vs {b.dtype}")
                    self.record(a, b)
                    return True
                self.record(a, b)  # before the fields: a buffer's shape may not refer to it
            ignored = _IGNORED.get(type(a), ())
            for name, value in a.field_items():
                if name in ignored:
                    continue
                if not self.equal(value, getattr(b, name), f"{path}.{name}"):
                    return False
            return True
        if isinstance(a, tuple | list) or isinstance(b, tuple | list):
            if not (isinstance(a, tuple | list) and isinstance(b, tuple | list)) or len(a) != len(
                b
            ):
                return self.fail(path, a, b, "sequences differ in length")
            return all(self.equal(x, y, f"{path}[{i}]") for i, (x, y) in enumerate(zip(a, b)))
        if type(a) is not type(b) or a != b:
            if isinstance(a, float) and isinstance(b, float) and a != a and b != b:
                return True  # NaN constants are equal to each other
            return self.fail(path, a, b, f"{a!r} vs {b!r}")
        return True


def structural_equal(lhs: object, rhs: object, map_free_vars: bool = True) -> bool:
    """True if ``lhs`` and ``rhs`` have the same structure, variables up to renaming.

    The variables (and buffers) a tree defines (parameters, loop, let and block iterator
    variables, allocated and matched buffers) always correspond by position. With
    ``map_free_vars=False`` (TVM's default) a free variable must be the same object on both
    sides; the default here, True, lets free variables correspond too.

    Example::

        >>> structural_equal(x + 1, y + 1), structural_equal(x + 1, y + 1, map_free_vars=False)
        (True, False)
    """
    return find_mismatch(lhs, rhs, map_free_vars) is None


def find_mismatch(lhs: object, rhs: object, map_free_vars: bool = True) -> Mismatch | None:
    """The first difference between two trees, or None when they are structurally equal."""
    eq = _Equal(map_free_vars=map_free_vars)
    if not map_free_vars:
        eq.lhs_defined = _definitions(lhs)
        eq.rhs_defined = _definitions(rhs)
    eq.equal(lhs, rhs, "root")
    return eq.mismatch


def _definitions(tree: object) -> set[int]:
    """The ids of the variables and buffers ``tree`` defines."""
    from tilewright.ir.comm_reducer import CommReducer
    from tilewright.ir.expr import Let
    from tilewright.ir.functor import post_order_visit
    from tilewright.ir.stmt import Allocate, IterVar, LetStmt, MatchBufferRegion

    found: set[int] = set()

    def buffer(b: Buffer) -> None:
        found.update((id(b), id(b.data)))
        found.update(id(d) for d in (*b.shape, *b.strides, b.elem_offset) if isinstance(d, Var))

    def visit(node: object) -> None:
        if isinstance(node, PrimFunc):
            found.update(id(p) for p in node.params)
            for _, b in node.buffer_map:
                buffer(b)
        elif isinstance(node, For):
            found.add(id(node.loop_var))
        elif isinstance(node, LetStmt | Let | IterVar):
            found.add(id(node.var))
        elif isinstance(node, Allocate):
            buffer(node.buffer)
        elif isinstance(node, Block):
            for b in node.alloc_buffers:
                buffer(b)
        elif isinstance(node, MatchBufferRegion):
            buffer(node.buffer)
        elif isinstance(node, CommReducer):
            found.update(id(v) for v in (*node.lhs, *node.rhs))

    post_order_visit(tree, visit)
    return found


def assert_structural_equal(lhs: object, rhs: object, map_free_vars: bool = True) -> None:
    """Raise ``AssertionError`` showing the first mismatching node of each side
    (``map_free_vars`` as in ``structural_equal``)."""
    mismatch = find_mismatch(lhs, rhs, map_free_vars)
    if mismatch is None:
        return
    raise AssertionError(
        f"structural mismatch at {mismatch.path}: {mismatch.reason}\n"
        f"--- lhs node ---\n{_show(mismatch.lhs)}\n"
        f"--- rhs node ---\n{_show(mismatch.rhs)}\n"
        f"--- lhs ---\n{_show(lhs)}\n"
        f"--- rhs ---\n{_show(rhs)}"
    )


def _show(value: object) -> str:
    if isinstance(value, tuple | list):
        return "(" + ", ".join(_show(v) for v in value) + ")"
    return repr(value)


class _Hasher:
    def __init__(self) -> None:
        self.digest = hashlib.sha256()
        self.ids: dict[int, int] = {}

    def feed(self, tag: str, payload: bytes = b"") -> None:
        self.digest.update(tag.encode())
        self.digest.update(struct.pack("<I", len(payload)))
        self.digest.update(payload)

    def walk(self, value: object) -> None:
        if isinstance(value, Node):
            self.feed(type(value).__name__)
            if isinstance(value, Var | Buffer):
                if id(value) in self.ids:
                    self.feed("ref", struct.pack("<I", self.ids[id(value)]))
                    return
                self.ids[id(value)] = len(self.ids)
            ignored = _IGNORED.get(type(value), ())
            for name, item in value.field_items():
                if name not in ignored:
                    self.walk(item)
        elif isinstance(value, tuple | list):  # one hash for both, as TVM's Array
            self.feed("tuple", struct.pack("<I", len(value)))
            for item in value:
                self.walk(item)
        elif isinstance(value, bool | int):
            self.feed(type(value).__name__, str(value).encode())
        elif isinstance(value, float):
            self.feed("float", struct.pack("<d", value))
        elif isinstance(value, str):
            self.feed("str", value.encode())
        elif isinstance(value, DataType):
            self.feed("dtype", str(value).encode())
        elif isinstance(value, enum.Enum):
            self.feed("enum", f"{type(value).__name__}.{value.name}".encode())
        elif value is None:
            self.feed("none")
        else:
            self.feed("other", repr(value).encode())


def structural_hash(tree: object) -> int:
    """A 64-bit hash equal for structurally equal trees, stable across processes."""
    hasher = _Hasher()
    hasher.walk(tree)
    return int.from_bytes(hasher.digest.digest()[:8], "little")
