"""IR (blocks or lowered form) + numpy arrays → arrays updated in place: a slow reference executor.

Storage is keyed by a buffer's ``data`` variable, so an N-d buffer and its flattened twin
read and write the same memory. Every access is bounds-checked. Fine for 16x16 programs.
"""

from __future__ import annotations

import numpy as np

from tilewright import ir
from tilewright.ir import Buffer, IterKind, PrimFunc, Var

_UNARY = {
    "exp": np.exp,
    "log": np.log,
    "sqrt": np.sqrt,
    "tanh": np.tanh,
    "sin": np.sin,
    "cos": np.cos,
    "abs": np.abs,
    "fabs": np.abs,
    "floor": np.floor,
    "ceil": np.ceil,
    "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
}


def np_dtype(dt: ir.DataType) -> np.dtype:
    return np.dtype("bool" if dt.is_bool else str(dt.element))


def run(func: PrimFunc, *arrays: np.ndarray) -> list[np.ndarray]:
    """Execute ``func`` on copies of ``arrays`` (one per buffer parameter); return the copies."""
    params = [p for p in func.params if func.buffer_of(p) is not None]
    assert len(params) == len(arrays), "one array per buffer parameter"
    copies = [np.array(a, copy=True) for a in arrays]
    machine = _Machine()
    for param, array in zip(params, copies):
        buffer = func.buffer_of(param)
        assert tuple(int(s) for s in buffer.shape) == array.shape, buffer.name
        machine.storage[buffer.data] = array.reshape(-1)  # a view: writes land in the copy
    machine.exec(func.body)
    return copies


class _Machine:
    def __init__(self) -> None:
        self.env: dict[Var, object] = {}
        self.storage: dict[Var, np.ndarray] = {}
        # match_buffer views: view buffer -> (source buffer, region minima, leading dims)
        self.views: dict[Buffer, tuple[Buffer, tuple[int, ...], int]] = {}

    # -- memory -----------------------------------------------------------------------------
    def locate(self, buffer: Buffer, indices: tuple[object, ...]) -> tuple[np.ndarray, object]:
        if buffer in self.views:
            source, mins, lead = self.views[buffer]
            moved = tuple(mins[:lead]) + tuple(m + i for m, i in zip(mins[lead:], indices))
            return self.locate(source, moved)
        memory = self.storage[buffer.data]
        assert len(indices) == buffer.ndim, f"{buffer.name}: {len(indices)} indices"
        shape = [int(self.eval(s)) for s in buffer.shape]
        if buffer.strides:
            strides = [int(self.eval(s)) for s in buffer.strides]
        else:
            strides = [int(np.prod(shape[d + 1 :])) for d in range(len(shape))]
        for index, extent in zip(indices, shape):
            assert np.all(np.asarray(index) >= 0) and np.all(np.asarray(index) < extent), (
                f"{buffer.name}: index {index} out of [0, {extent})"
            )
        offset = int(self.eval(buffer.elem_offset))
        for index, stride in zip(indices, strides):
            offset = offset + np.asarray(index) * stride
        assert np.all(offset < memory.size), f"{buffer.name}: offset {offset} past the end"
        return memory, offset

    def allocate(self, buffer: Buffer) -> None:
        shape = [int(self.eval(s)) for s in buffer.shape]
        size = int(np.prod(shape))
        if buffer.strides:
            size = shape[0] * int(self.eval(buffer.strides[0]))
        dt = np_dtype(buffer.dtype)
        # NaN poisons reads of elements nobody wrote.
        fill = np.nan if dt.kind == "f" else 0
        self.storage[buffer.data] = np.full(size, fill, dtype=dt)

    # -- statements ---------------------------------------------------------------------------
    def exec(self, stmt: ir.Stmt) -> None:
        getattr(self, f"exec_{type(stmt).__name__}")(stmt)

    def exec_SeqStmt(self, stmt: ir.SeqStmt) -> None:
        for s in stmt.seq:
            self.exec(s)

    def exec_For(self, loop: ir.For) -> None:
        start = int(self.eval(loop.min))
        for value in range(start, start + int(self.eval(loop.extent))):
            self.env[loop.loop_var] = value
            self.exec(loop.body)
        self.env.pop(loop.loop_var, None)

    def exec_IfThenElse(self, stmt: ir.IfThenElse) -> None:
        if self.eval(stmt.condition):
            self.exec(stmt.then_case)
        elif stmt.else_case is not None:
            self.exec(stmt.else_case)

    def exec_LetStmt(self, stmt: ir.LetStmt) -> None:
        self.env[stmt.var] = self.eval(stmt.value)
        self.exec(stmt.body)

    def exec_Evaluate(self, stmt: ir.Evaluate) -> None:
        self.eval(stmt.value)

    def exec_AttrStmt(self, stmt: ir.AttrStmt) -> None:
        self.exec(stmt.body)

    def exec_Allocate(self, stmt: ir.Allocate) -> None:
        self.allocate(stmt.buffer)
        self.exec(stmt.body)

    def exec_BufferStore(self, store: ir.BufferStore) -> None:
        memory, offset = self.locate(store.buffer, tuple(self.eval(i) for i in store.indices))
        memory[offset] = self.eval(store.value)

    def exec_BlockRealize(self, realize: ir.BlockRealize) -> None:
        block = realize.block
        values = [self.eval(v) for v in realize.iter_values]
        if not self.eval(realize.predicate):
            return
        for iv, value in zip(block.iter_vars, values):
            self.env[iv.var] = value
        for match in block.match_buffers:
            region = match.source.region
            mins = tuple(int(self.eval(r.min)) for r in region)
            self.views[match.buffer] = (match.source.buffer, mins, len(region) - match.buffer.ndim)
        for buffer in block.alloc_buffers:
            self.allocate(buffer)
        reduce = [iv for iv in block.iter_vars if iv.kind is IterKind.REDUCE]
        if block.init is not None and all(
            self.env[iv.var] == self.eval(iv.dom.min) for iv in reduce
        ):
            self.exec(block.init)
        self.exec(block.body)

    # -- expressions --------------------------------------------------------------------------
    def eval(self, expr: ir.PrimExpr) -> object:
        return getattr(self, f"eval_{type(expr).__name__}")(expr)

    def eval_Var(self, var: Var) -> object:
        return self.env[var]

    def eval_IntImm(self, imm: ir.IntImm) -> object:
        return bool(imm.value) if imm.dtype.is_bool else imm.value

    def eval_FloatImm(self, imm: ir.FloatImm) -> object:
        return np_dtype(imm.dtype).type(imm.value)

    def eval_Cast(self, cast: ir.Cast) -> object:
        value = self.eval(cast.value)
        dt = np_dtype(cast.dtype)
        if isinstance(value, np.ndarray):
            return value.astype(dt)
        return int(value) if dt.kind in "iu" else dt.type(value)

    def eval_Add(self, e: ir.Add) -> object:
        return self.eval(e.a) + self.eval(e.b)

    def eval_Sub(self, e: ir.Sub) -> object:
        return self.eval(e.a) - self.eval(e.b)

    def eval_Mul(self, e: ir.Mul) -> object:
        return self.eval(e.a) * self.eval(e.b)

    def eval_Div(self, e: ir.Div) -> object:
        a, b = self.eval(e.a), self.eval(e.b)
        if e.dtype.is_float:
            return a / b
        return (a - np.fmod(a, b)) // b

    def eval_Mod(self, e: ir.Mod) -> object:
        return np.fmod(self.eval(e.a), self.eval(e.b))

    def eval_FloorDiv(self, e: ir.FloorDiv) -> object:
        a, b = self.eval(e.a), self.eval(e.b)
        return np.floor(a / b) if e.dtype.is_float else a // b

    def eval_FloorMod(self, e: ir.FloorMod) -> object:
        return self.eval(e.a) % self.eval(e.b)

    def eval_Min(self, e: ir.Min) -> object:
        return np.minimum(self.eval(e.a), self.eval(e.b))

    def eval_Max(self, e: ir.Max) -> object:
        return np.maximum(self.eval(e.a), self.eval(e.b))

    def eval_EQ(self, e: ir.EQ) -> object:
        return self.eval(e.a) == self.eval(e.b)

    def eval_NE(self, e: ir.NE) -> object:
        return self.eval(e.a) != self.eval(e.b)

    def eval_LT(self, e: ir.LT) -> object:
        return self.eval(e.a) < self.eval(e.b)

    def eval_LE(self, e: ir.LE) -> object:
        return self.eval(e.a) <= self.eval(e.b)

    def eval_GT(self, e: ir.GT) -> object:
        return self.eval(e.a) > self.eval(e.b)

    def eval_GE(self, e: ir.GE) -> object:
        return self.eval(e.a) >= self.eval(e.b)

    def eval_And(self, e: ir.And) -> object:
        return np.logical_and(self.eval(e.a), self.eval(e.b))

    def eval_Or(self, e: ir.Or) -> object:
        return np.logical_or(self.eval(e.a), self.eval(e.b))

    def eval_Not(self, e: ir.Not) -> object:
        return np.logical_not(self.eval(e.a))

    def eval_Select(self, e: ir.Select) -> object:
        return np.where(self.eval(e.condition), self.eval(e.true_value), self.eval(e.false_value))

    def eval_BufferLoad(self, load: ir.BufferLoad) -> object:
        memory, offset = self.locate(load.buffer, tuple(self.eval(i) for i in load.indices))
        return memory[offset]

    def eval_Ramp(self, ramp: ir.Ramp) -> object:
        return self.eval(ramp.base) + self.eval(ramp.stride) * np.arange(ramp.lanes)

    def eval_Broadcast(self, b: ir.Broadcast) -> object:
        return np.full(b.lanes, self.eval(b.value))

    def eval_Let(self, let: ir.Let) -> object:
        self.env[let.var] = self.eval(let.value)
        return self.eval(let.body)

    def eval_Call(self, call: ir.Call) -> object:
        if call.op == "if_then_else":
            cond, then, other = call.args
            return self.eval(then) if self.eval(cond) else self.eval(other)
        args = [self.eval(a) for a in call.args]
        if call.op in _UNARY:
            return np_dtype(call.dtype).type(_UNARY[call.op](*args))
        raise TypeError(f"interpreter: cannot execute intrinsic {call.op}")
