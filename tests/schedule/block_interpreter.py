"""Block-level IR + numpy arrays in, the arrays after running it out: a reference executor.

The function is translated once to Python source (nested ``for`` loops, one ``if`` per block
predicate, the init run when every reduction iterator is at the start of its domain) and then
executed, so that the fuzz tests can afford hundreds of programs. Every buffer access and
every block binding is bounds-checked.
"""

from __future__ import annotations

import math

import numpy as np

from tilewright import ir
from tilewright.ir import Buffer, IterKind, PrimFunc, Var

_MATH = {
    "exp": math.exp,
    "log": math.log,
    "sqrt": math.sqrt,
    "tanh": math.tanh,
    "sin": math.sin,
    "cos": math.cos,
    "abs": abs,
    "fabs": abs,
    "floor": math.floor,
    "ceil": math.ceil,
    "sigmoid": lambda x: 1.0 / (1.0 + math.exp(-x)),
    "pow": math.pow,
}
_BINARY = {ir.Add: "+", ir.Sub: "-", ir.Mul: "*", ir.FloorDiv: "//", ir.FloorMod: "%"}
_COMPARE = {ir.EQ: "==", ir.NE: "!=", ir.LT: "<", ir.LE: "<=", ir.GT: ">", ir.GE: ">="}


def _np_dtype(dt: ir.DataType) -> np.dtype:
    return np.dtype("bool" if dt.is_bool else str(dt.element))


def _check(index: int, extent: int, name: str) -> int:
    if not 0 <= index < extent:
        raise IndexError(f"{name}: index {index} out of [0, {extent})")
    return index


def _tdiv(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _tmod(a: int, b: int) -> int:
    return a - _tdiv(a, b) * b


class _Translator:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.names: dict[int, str] = {}
        self.buffers: dict[int, str] = {}
        self.depth = 1
        self.temps = 0

    def name(self, var: Var) -> str:
        if id(var) not in self.names:
            self.names[id(var)] = f"v{len(self.names)}_{var.name}"
        return self.names[id(var)]

    def buffer(self, buf: Buffer) -> str:
        key = id(buf.data)
        if key not in self.buffers:
            self.buffers[key] = f"buf{len(self.buffers)}_{buf.name}"
        return self.buffers[key]

    def emit(self, line: str) -> None:
        self.lines.append("    " * self.depth + line)

    # -- expressions ---------------------------------------------------------------------------
    def expr(self, e: ir.PrimExpr) -> str:
        if isinstance(e, Var):
            return self.name(e)
        if isinstance(e, ir.IntImm):
            return repr(bool(e.value)) if e.dtype.is_bool else repr(e.value)
        if isinstance(e, ir.FloatImm):
            return f"float({str(e.value)!r})"
        if type(e) in _BINARY:
            return f"({self.expr(e.a)} {_BINARY[type(e)]} {self.expr(e.b)})"
        if isinstance(e, ir.Div):
            if e.dtype.is_float:
                return f"({self.expr(e.a)} / {self.expr(e.b)})"
            return f"_tdiv({self.expr(e.a)}, {self.expr(e.b)})"
        if isinstance(e, ir.Mod):
            return f"_tmod({self.expr(e.a)}, {self.expr(e.b)})"
        if isinstance(e, ir.Min | ir.Max):
            fn = "min" if isinstance(e, ir.Min) else "max"
            return f"{fn}({self.expr(e.a)}, {self.expr(e.b)})"
        if type(e) in _COMPARE:
            return f"({self.expr(e.a)} {_COMPARE[type(e)]} {self.expr(e.b)})"
        if isinstance(e, ir.And | ir.Or):
            word = "and" if isinstance(e, ir.And) else "or"
            return f"({self.expr(e.a)} {word} {self.expr(e.b)})"
        if isinstance(e, ir.Not):
            return f"(not {self.expr(e.a)})"
        if isinstance(e, ir.Select):
            c, t, f = (self.expr(x) for x in (e.condition, e.true_value, e.false_value))
            return f"({t} if {c} else {f})"
        if isinstance(e, ir.Cast):
            dt = e.dtype
            fn = "float" if dt.is_float else "bool" if dt.is_bool else "int"
            return f"{fn}({self.expr(e.value)})"
        if isinstance(e, ir.BufferLoad):
            return f"{self.buffer(e.buffer)}[{self.indices(e.buffer, e.indices)}]"
        if isinstance(e, ir.Call):
            args = [self.expr(a) for a in e.args]
            if e.op == "if_then_else":
                return f"({args[1]} if {args[0]} else {args[2]})"
            return f"_MATH[{e.op!r}]({', '.join(args)})"
        if isinstance(e, ir.Let):
            return f"(({self.name(e.var)} := {self.expr(e.value)}), {self.expr(e.body)})[1]"
        raise TypeError(f"interpreter: cannot execute {type(e).__name__}")

    def indices(self, buf: Buffer, indices: tuple[ir.PrimExpr, ...]) -> str:
        assert len(indices) == len(buf.shape), buf.name
        parts = [
            f"_check({self.expr(i)}, {self.expr(s)}, {buf.name!r})"
            for i, s in zip(indices, buf.shape)
        ]
        return ", ".join(parts) + ("," if len(parts) == 1 else "")

    # -- statements ----------------------------------------------------------------------------
    def stmt(self, s: ir.Stmt) -> None:
        getattr(self, f"stmt_{type(s).__name__}")(s)

    def stmt_SeqStmt(self, s: ir.SeqStmt) -> None:
        for item in s.seq:
            self.stmt(item)

    def stmt_For(self, s: ir.For) -> None:
        lo = self.expr(s.min)
        self.emit(f"for {self.name(s.loop_var)} in range({lo}, {lo} + {self.expr(s.extent)}):")
        self.nested(s.body)

    def nested(self, body: ir.Stmt | None) -> None:
        self.depth += 1
        self.emit("pass")
        if body is not None:
            self.stmt(body)
        self.depth -= 1

    def stmt_BufferStore(self, s: ir.BufferStore) -> None:
        target = f"{self.buffer(s.buffer)}[{self.indices(s.buffer, s.indices)}]"
        self.emit(f"{target} = {self.expr(s.value)}")

    def stmt_IfThenElse(self, s: ir.IfThenElse) -> None:
        self.emit(f"if {self.expr(s.condition)}:")
        self.nested(s.then_case)
        if s.else_case is not None:
            self.emit("else:")
            self.nested(s.else_case)

    def stmt_LetStmt(self, s: ir.LetStmt) -> None:
        self.emit(f"{self.name(s.var)} = {self.expr(s.value)}")
        self.stmt(s.body)

    def stmt_Evaluate(self, s: ir.Evaluate) -> None:
        pass

    def stmt_AttrStmt(self, s: ir.AttrStmt) -> None:
        self.stmt(s.body)

    def stmt_Allocate(self, s: ir.Allocate) -> None:
        self.allocate(s.buffer)
        self.stmt(s.body)

    def allocate(self, buf: Buffer) -> None:
        shape = ", ".join(self.expr(d) for d in buf.shape)
        fill = "np.nan" if buf.dtype.is_float else "0"
        dt = _np_dtype(buf.dtype)
        self.emit(f"{self.buffer(buf)} = np.full(({shape},), {fill}, dtype=np.{dt})")

    def stmt_BlockRealize(self, s: ir.BlockRealize) -> None:
        block = s.block
        temps = []
        for _, value in zip(block.iter_vars, s.iter_values):
            self.temps += 1
            temp = f"t{self.temps}"
            temps.append(temp)
            self.emit(f"{temp} = {self.expr(value)}")
        self.emit(f"if {self.expr(s.predicate)}:")
        self.depth += 1
        self.emit("pass")
        for iv, temp in zip(block.iter_vars, temps):
            lo, ext = self.expr(iv.dom.min), self.expr(iv.dom.extent)
            self.emit(f"{self.name(iv.var)} = {temp}")
            self.emit(f"assert {lo} <= {temp} < {lo} + {ext}, ({block.name!r}, {temp})")
        for buf in block.alloc_buffers:
            self.allocate(buf)
        if block.init is not None:
            starts = [
                f"{self.name(iv.var)} == {self.expr(iv.dom.min)}"
                for iv in block.iter_vars
                if iv.kind is IterKind.REDUCE
            ]
            self.emit(f"if {' and '.join(starts) or 'True'}:")
            self.nested(block.init)
        self.stmt(block.body)
        self.depth -= 1


def translate(func: PrimFunc) -> str:
    """The Python source of ``run_<func>(arrays...)`` for ``func``."""
    t = _Translator()
    params = []
    for param in func.params:
        buf = func.buffer_of(param)
        params.append(t.buffer(buf) if buf is not None else t.name(param))
    t.stmt(func.body)
    header = f"def kernel({', '.join(params)}):\n    pass\n"
    return header + "\n".join(t.lines) + "\n"


def run(func: PrimFunc, *arrays: np.ndarray) -> list[np.ndarray]:
    """Run ``func`` on copies of ``arrays`` (one per buffer parameter) and return the copies.

    Example::

        >>> C = run(matmul, A, B, np.zeros((8, 8), "float32"))[2]
    """
    params = [p for p in func.params if func.buffer_of(p) is not None]
    assert len(params) == len(arrays), "one array per buffer parameter"
    copies = []
    for param, array in zip(params, arrays):
        buf = func.buffer_of(param)
        assert buf is not None
        shape = tuple(int(s) for s in buf.shape)  # type: ignore[call-overload]
        assert shape == array.shape, f"{buf.name}: shape {array.shape}, expected {shape}"
        copies.append(np.array(array, dtype=_np_dtype(buf.dtype), copy=True))
    source = translate(func)
    scope: dict[str, object] = {
        "np": np,
        "_check": _check,
        "_tdiv": _tdiv,
        "_tmod": _tmod,
        "_MATH": _MATH,
    }
    exec(compile(source, f"<kernel {func.attr('global_symbol', 'main')}>", "exec"), scope)
    scope["kernel"](*copies)  # type: ignore[operator]
    return copies
