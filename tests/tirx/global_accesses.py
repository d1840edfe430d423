"""Where a kernel touches its global buffers, for every thread and iteration at once.

``global_accesses(func)`` walks a kernel as ``LowerTIRx`` leaves it (or a TensorIR kernel
with thread bindings): each loop variable is a numpy axis of its own (``np.arange`` along
it), so an index or a guard is one broadcast array over the whole iteration space. It
returns the accesses of parameter buffers that leave the buffer's shape where every
enclosing condition holds (test support: a missing or wrong tail guard shows here, before
any GPU), and how many times each element of each written parameter is stored: by plain
stores, and by TMA stores, whose boxes TMA clips at the tensor's edges.

Example::

    found = global_accesses(LowerTIRx("cuda")(tile_hopper_gemm(200, 136, 72))["main"])
    assert not found.outside and (found.stores["C"] == 1).all()
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tilewright.ir import (
    Block,
    BlockRealize,
    Buffer,
    BufferLoad,
    BufferStore,
    Call,
    Cast,
    DeclBuffer,
    Evaluate,
    For,
    IfThenElse,
    IntImm,
    LetStmt,
    PrimFunc,
    SeqStmt,
    Var,
)
from tilewright.ir import expr as E
from tilewright.ir import intrinsics_hopper as hopper
from tilewright.ir.stmt import AttrStmt

DEPTH = 24  # loop nesting the walk allows: each loop variable has its own axis

_OPS = {
    E.Add: np.add,
    E.Sub: np.subtract,
    E.Mul: np.multiply,
    E.FloorDiv: np.floor_divide,
    E.FloorMod: np.mod,
    E.Min: np.minimum,
    E.Max: np.maximum,
    E.EQ: np.equal,
    E.NE: np.not_equal,
    E.LT: np.less,
    E.LE: np.less_equal,
    E.GT: np.greater,
    E.GE: np.greater_equal,
    E.And: np.logical_and,
    E.Or: np.logical_or,
}
_CALLS = {"bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or, "bitwise_xor": np.bitwise_xor}
# Byte copies between two addresses (dst, src, bytes): what they store and load.
_BYTE_COPIES = ("tw.cuda.copy_bytes", "tw.cuda.cp_async")


class WalkError(Exception):
    """The kernel holds something the walk does not evaluate (it says what): the check
    cannot vouch for that kernel."""


@dataclass
class Accesses:
    """What ``global_accesses`` found: descriptions of out-of-range accesses, and a count of
    stores per element of every written parameter buffer (by name)."""

    outside: list[str] = field(default_factory=list)
    stores: dict[str, np.ndarray] = field(default_factory=dict)


class _Walk:
    def __init__(self, func: PrimFunc) -> None:
        self.globals = {buf.name: buf for _, buf in func.buffer_map}
        self.shapes = {
            name: tuple(int(d.value) for d in buf.shape)  # type: ignore[attr-defined]
            for name, buf in self.globals.items()
        }
        self.found = Accesses()
        self.loops: list[str] = []  # the enclosing loops' variable names, by axis
        # Views of a parameter's data (a flat ``C_1`` over ``C``): view name -> parameter.
        self.views: dict[str, str] = {}
        self.data = {buf.data.name: name for name, buf in self.globals.items()}

    def is_global(self, buffer: Buffer) -> bool:
        """Whether ``buffer`` is a parameter or a view of one (registered as such)."""
        base = self.data.get(buffer.data.name)
        if base is None:
            return False
        if buffer.name not in self.globals:
            self.views[buffer.name] = base
            self.globals[buffer.name] = buffer
            self.shapes[buffer.name] = tuple(int(d.value) for d in buffer.shape)  # type: ignore[attr-defined]
        return True

    # ---- expressions ------------------------------------------------------------------
    def value(self, expr: object, env: dict[str, object]) -> object:
        if isinstance(expr, int | bool):
            return expr
        if isinstance(expr, IntImm):
            return expr.value
        if isinstance(expr, Var):
            return env[expr.name]
        if isinstance(expr, Cast):
            return self.value(expr.value, env)
        if isinstance(expr, E.Not):
            return np.logical_not(self.value(expr.a, env))
        if isinstance(expr, Call) and expr.op == "if_then_else":
            cond, yes, no = (self.value(x, env) for x in expr.args)
            return np.where(cond, yes, no)
        if isinstance(expr, Call) and expr.op in _CALLS:
            a, b = (self.value(x, env) for x in expr.args)
            return _CALLS[expr.op](a, b)
        op = _OPS.get(type(expr))
        if op is None:
            raise WalkError(f"global_accesses: no value for {type(expr).__name__}")
        return op(self.value(expr.a, env), self.value(expr.b, env))  # type: ignore[attr-defined]

    # ---- accesses ---------------------------------------------------------------------
    def loads(self, node: object, env: dict[str, object], mask: object) -> None:
        """Check every load of a parameter buffer inside the expression ``node``."""
        if isinstance(node, BufferLoad):
            if self.is_global(node.buffer):
                self.access("load", node.buffer.name, node.indices, env, mask)
            for index in node.indices:
                self.loads(index, env, mask)
        elif isinstance(node, Call):
            for arg in node.args:
                self.loads(arg, env, mask)
        elif isinstance(node, E.PrimExpr) and not isinstance(node, Var | IntImm):
            for name in ("a", "b", "value", "condition"):
                child = getattr(node, name, None)
                if child is not None:
                    self.loads(child, env, mask)

    def access(self, kind: str, name: str, indices, env, mask) -> list[np.ndarray] | None:
        """Check ``name[indices]`` where ``mask`` holds; the indices, broadcast and masked
        (None when the mask never holds)."""
        shape = self.shapes[name]
        indices = [self.value(i, env) if not isinstance(i, np.ndarray) else i for i in indices]
        arrays = np.broadcast_arrays(mask, *indices)
        where = arrays[0].astype(bool)
        if not where.any():
            return None
        picked = [np.asarray(a)[where] for a in arrays[1:]]
        for dim, (index, extent) in enumerate(zip(picked, shape)):
            bad = (index < 0) | (index >= extent)
            if bad.any():
                at = np.argwhere(where)[np.flatnonzero(bad)[0]]
                loops = ", ".join(f"{n}={at[k]}" for k, n in enumerate(self.loops) if n)
                self.found.outside.append(
                    f"{kind} of {name} (shape {shape}): index {int(index[bad][0])} of "
                    f"dimension {dim} at {loops}"
                )
                return None
        return picked

    def store(self, name: str, picked: list[np.ndarray]) -> None:
        base = self.views.get(name, name)
        counts = self.found.stores.setdefault(base, np.zeros(self.shapes[base], np.int64))
        np.add.at(counts.reshape(self.shapes[name]), tuple(picked), 1)

    def byte_copy(self, call: Call, env, mask) -> None:
        """A copy of ``bytes`` between two element addresses: a run of elements stored at
        the destination and loaded at the source, when they are global."""
        dst, src, count = call.args
        for kind, address in (("store", dst), ("load", src)):
            (load,) = address.args
            name = load.buffer.name
            if not self.is_global(load.buffer):
                continue
            elements = self.value(count, env) // load.buffer.dtype.bytes
            (index,) = load.indices
            run = np.arange(elements).reshape([1] * DEPTH + [-1])
            start = np.expand_dims(np.asarray(self.value(index, env)), -1)
            picked = self.access(kind, name, [start + run], env, np.expand_dims(mask, -1))
            if kind == "store" and picked is not None:
                self.store(name, picked)

    def tma_store(self, call: Call, env, mask) -> None:
        """A TMA store's box, clipped at the tensor's edges, counted once per element."""
        tmap, _, *coords = call.args
        data, *box, _ = tmap.args
        name = next(n for n, b in self.globals.items() if b.data.name == data.name)
        arrays = np.broadcast_arrays(mask, *(self.value(c, env) for c in reversed(coords)))
        where = arrays[0].astype(bool)
        starts = {tuple(int(a[i]) for a in arrays[1:]) for i in zip(*np.nonzero(where))}
        extents = [b.value for b in box]
        counts = self.found.stores.setdefault(name, np.zeros(self.shapes[name], np.int64))
        for start in starts:
            region = tuple(slice(max(s, 0), s + e) for s, e in zip(start, extents))
            counts[region] += 1

    # ---- statements -------------------------------------------------------------------
    def stmt(self, node: object, env: dict[str, object], mask: object) -> None:
        if node is None:
            return
        if isinstance(node, SeqStmt):
            for item in node.seq:
                self.stmt(item, env, mask)
        elif isinstance(node, For):
            axis = len(self.loops)
            if axis >= DEPTH:
                raise WalkError(f"global_accesses: loops nested over {DEPTH} deep")
            start, extent = self.value(node.min, env), self.value(node.extent, env)
            if not isinstance(start, int) or not isinstance(extent, int):
                raise WalkError("global_accesses: a loop with a varying range")
            shape = [1] * DEPTH
            shape[axis] = extent
            self.loops.append(node.loop_var.name)  # the axis of this depth (siblings share it)
            inner = dict(env)
            inner[node.loop_var.name] = np.arange(start, start + extent).reshape(shape)
            self.stmt(node.body, inner, mask)
            self.loops.pop()
        elif isinstance(node, LetStmt):
            self.loads(node.value, env, mask)
            self.stmt(node.body, {**env, node.var.name: self.value(node.value, env)}, mask)
        elif isinstance(node, IfThenElse):
            self.loads(node.condition, env, mask)
            cond = self.value(node.condition, env)
            self.stmt(node.then_case, env, np.logical_and(mask, cond))
            self.stmt(node.else_case, env, np.logical_and(mask, np.logical_not(cond)))
        elif isinstance(node, BlockRealize):
            inner = dict(env)
            for iv, value in zip(node.block.iter_vars, node.iter_values):
                inner[iv.var.name] = self.value(value, env)
            self.stmt(node.block, inner, np.logical_and(mask, self.value(node.predicate, env)))
        elif isinstance(node, Block | DeclBuffer | AttrStmt):
            self.stmt(node.body, env, mask)
        elif isinstance(node, BufferStore):
            self.loads(node.value, env, mask)
            for index in node.indices:
                self.loads(index, env, mask)
            if self.is_global(node.buffer):
                picked = self.access("store", node.buffer.name, node.indices, env, mask)
                if picked is not None:
                    self.store(node.buffer.name, picked)
        elif isinstance(node, Evaluate):
            if isinstance(node.value, Call) and hopper.TMA_STORE.matches(node.value):
                self.tma_store(node.value, env, mask)
            elif isinstance(node.value, Call) and node.value.op in _BYTE_COPIES:
                self.byte_copy(node.value, env, mask)
            else:
                self.loads(node.value, env, mask)
        elif hasattr(node, "body"):  # allocations
            self.stmt(node.body, env, mask)
        else:
            raise WalkError(f"global_accesses: no walk for {type(node).__name__}")


def global_accesses(func: PrimFunc) -> Accesses:
    """The out-of-range global accesses of ``func`` and its stores per element (module
    docstring)."""
    walk = _Walk(func)
    # Guards keep a divisor from being zero where they hold; elsewhere nothing is read.
    with np.errstate(divide="ignore", invalid="ignore"):
        walk.stmt(func.body, {}, True)
    return walk.found
