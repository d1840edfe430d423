"""Stmt → Python statements: the evaluator's one statement translator.

A function becomes ``def _evaluate(_rt, _t, *inputs)``, its inputs being the storage of each
buffer parameter (a flat array), each scalar parameter and each shape variable. ``_rt`` is the
machine the code runs on (it launches kernels and copies bytes); ``_t`` is the thread, None
outside a kernel. Storage is keyed by a buffer's ``data`` variable, so a buffer and its
flattened twin read and write the same memory. Blocks (``blocks.py``) and threads
(``threads.py``) are layers on this one.
"""

from __future__ import annotations

from collections import defaultdict

from tilewright import ir
from tilewright.ir import Buffer, DataType, PrimFunc, Var, intrinsics

from .expressions import ExprTranslator
from .memory import np_dtype


def parameter_inputs(func: PrimFunc) -> list[Var]:
    """What each parameter passes: a buffer's data variable (its storage), or the scalar."""
    return [buffer.data if (buffer := func.buffer_of(p)) is not None else p for p in func.params]


def function_inputs(func: PrimFunc) -> tuple[Var, ...]:
    """The parameters' inputs, then the shape variables of the buffer parameters."""
    inputs = parameter_inputs(func)
    for _, buffer in func.buffer_map:
        for e in (*buffer.shape, *buffer.strides, buffer.elem_offset):
            if isinstance(e, Var) and e not in inputs:
                inputs.append(e)
    return tuple(inputs)


def _element_dtypes(func: PrimFunc) -> dict[Var, set[DataType]]:
    """For each data variable, the element types of the buffers that use it."""
    found: dict[Var, set[DataType]] = defaultdict(set)

    def visit(node: object) -> None:
        if isinstance(node, Buffer):
            found[node.data].add(node.dtype.element)

    ir.post_order_visit(func, visit)
    return found


class Translator(ExprTranslator):
    """Translates one function; ``translate()`` gives its source and its inputs."""

    def __init__(self, func: PrimFunc) -> None:
        super().__init__()
        self.func = func
        self.lines: list[str] = []
        self.depth = 1
        self.dtypes_of = _element_dtypes(func)

    def translate(self) -> tuple[str, tuple[Var, ...]]:
        inputs = function_inputs(self.func)
        self.prologue()
        for _, buffer in self.func.buffer_map:
            self.bind_storage(buffer, None)
        self.stmt(self.func.body)
        args = ", ".join(["_rt", "_t", *(self.name(v) for v in inputs)])
        return "\n".join([f"def _evaluate({args}):", *self.lines]) + "\n", inputs

    def prologue(self) -> None:
        """Lines that open the function."""

    def emit(self, line: str) -> None:
        self.lines.append("    " * self.depth + line)

    def nested(self, body: ir.Stmt) -> None:
        self.depth += 1
        self.emit("pass")
        self.stmt(body)
        self.depth -= 1

    def stmt(self, s: ir.Stmt) -> None:
        method = getattr(self, f"stmt_{type(s).__name__}", None)
        if method is None:
            raise TypeError(f"evaluator: cannot execute {type(s).__name__}")
        method(s)

    # -- control -------------------------------------------------------------------------------
    def stmt_SeqStmt(self, s: ir.SeqStmt) -> None:
        for item in s.seq:
            self.stmt(item)

    def stmt_For(self, s: ir.For) -> None:
        lo, extent = self.expr(s.min), self.expr(s.extent)
        bounds = extent if lo == "0" else f"{lo}, {lo} + {extent}"
        self.emit(f"for {self.name(s.loop_var)} in range({bounds}):")
        self.nested(s.body)

    def stmt_IfThenElse(self, s: ir.IfThenElse) -> None:
        self.emit(f"if {self.expr(s.condition)}:")
        self.nested(s.then_case)
        if s.else_case is not None:
            self.emit("else:")
            self.nested(s.else_case)

    def stmt_LetStmt(self, s: ir.LetStmt) -> None:
        self.emit(f"{self.name(s.var)} = {self.expr(s.value)}")
        self.stmt(s.body)

    def stmt_AttrStmt(self, s: ir.AttrStmt) -> None:
        self.stmt(s.body)

    # -- memory --------------------------------------------------------------------------------
    def stmt_Allocate(self, s: ir.Allocate) -> None:
        self.bind_storage(s.buffer, self.allocation(s.buffer))
        self.stmt(s.body)

    def allocation(self, buffer: Buffer) -> str:
        return f"_alloc({self.size(buffer)}, {self.constant(np_dtype(buffer.dtype))})"

    def size(self, buffer: Buffer) -> str:
        dims = [f"({self.expr(d)})" for d in buffer.shape]
        if buffer.strides:
            return f"{dims[0]} * ({self.expr(buffer.strides[0])})"
        return " * ".join(dims) or "1"

    def bind_storage(self, buffer: Buffer, source: str | None) -> None:
        """Binds ``buffer``'s data to ``source`` (None: a parameter, bound already), and views
        of it as every other element type that buffers of the same data use."""
        name, element = self.name(buffer.data), buffer.dtype.element
        if source is not None:
            self.emit(f"{name} = {source}")
        self.storage_dtypes[buffer.data] = element
        for other in sorted(self.dtypes_of[buffer.data] - {element}, key=str):
            self.emit(f"{name}_{other} = {name}.view({self.constant(np_dtype(other))})")

    def stmt_BufferStore(self, s: ir.BufferStore) -> None:
        self.emit(self.store(s.buffer, s.indices, self.expr(s.value)))

    def store(self, buffer: Buffer, indices: tuple[ir.PrimExpr, ...], value: str) -> str:
        storage, offset = self.locate(buffer, indices)
        return f"{storage}[{offset}] = {value}"

    # -- intrinsics evaluated for their effect -----------------------------------------------
    def stmt_Evaluate(self, s: ir.Evaluate) -> None:
        call = s.value
        intrinsic = intrinsics.lookup_or_none(call.op) if isinstance(call, ir.Call) else None
        if intrinsic is None or intrinsic.effect is intrinsics.Effect.PURE:
            self.emit(self.expr(call))
        elif intrinsic.effect is intrinsics.Effect.BARRIER:
            self.barrier(intrinsic)
        elif intrinsic is intrinsics.LAUNCH_KERNEL:
            self.launch(call)
        elif intrinsic is intrinsics.COPY_BYTES:
            self.emit(f"_rt.copy_bytes({', '.join(self.expr(a) for a in call.args)})")
        else:
            raise TypeError(f"evaluator: cannot execute intrinsic {intrinsic.name}")

    def barrier(self, intrinsic: intrinsics.Intrinsic) -> None:
        raise TypeError(f"evaluator: {intrinsic.name} needs threads: use run_kernel or run_module")

    def launch(self, call: ir.Call) -> None:
        self.emit(f"_rt.launch({', '.join(self.expr(a) for a in call.args)})")
