"""Lowered GPU host PrimFunc → ``HostPlan``: its launches as plain data the runtime evaluates.

The GPU lowering leaves a host function whose body only binds values (``LetStmt``), branches
on them (``IfThenElse``) and launches kernels (``intrinsics.LAUNCH_KERNEL``). This module
writes that body as the nested lists of ``tilewright.artifact.host_plan`` and refuses
anything else, naming the function, before anything runs.
"""

from __future__ import annotations

from typing import Any

from tilewright.artifact.host_plan import HostPlan, LaunchPlanError
from tilewright.codegen.signature import symbolic_vars
from tilewright.ir import (
    EQ,
    GE,
    GT,
    LE,
    LT,
    NE,
    Add,
    And,
    BinaryOp,
    Call,
    Cast,
    CmpOp,
    Div,
    FloatImm,
    FloorDiv,
    FloorMod,
    IntImm,
    Max,
    Min,
    Mod,
    Mul,
    Not,
    Or,
    PrimExpr,
    PrimFunc,
    Select,
    StringImm,
    Sub,
    Var,
    intrinsics,
)
from tilewright.ir import intrinsics_hopper as hopper
from tilewright.ir.stmt import AttrStmt, Evaluate, IfThenElse, LetStmt, SeqStmt, Stmt

_BINARY: dict[type, str] = {
    Add: "add",
    Sub: "sub",
    Mul: "mul",
    FloorDiv: "floordiv",
    FloorMod: "floormod",
    Div: "div",
    Mod: "mod",
    Min: "min",
    Max: "max",
    LT: "lt",
    LE: "le",
    GT: "gt",
    GE: "ge",
    EQ: "eq",
    NE: "ne",
    And: "and",
    Or: "or",
}


def host_plan(name: str, func: PrimFunc) -> HostPlan:
    """The launch plan of the lowered host function ``func`` called ``name``.

    Example::

        >>> host_plan("main", lowered["main"]).kernels
        ('main_kernel',)
    """
    return _Writer(name, func).plan()


class _Writer:
    def __init__(self, name: str, func: PrimFunc) -> None:
        self.name = name
        self.func = func
        self.names: dict[Var, str] = {}
        self.used: set[str] = set()
        self.kernels: list[str] = []

    def plan(self) -> HostPlan:
        bindings: list[tuple[str, ...]] = []
        for var in self.func.params:
            buf = self.func.buffer_of(var)
            keys = [var] if buf is None else [var, buf.data]
            bindings.append(tuple(self.bind(v) for v in keys))
        for var in symbolic_vars(self.name, self.func):
            bindings.append((self.bind(var),))
        body = self.stmt(self.func.body)
        return HostPlan(self.name, tuple(bindings), body, tuple(self.kernels))

    def bind(self, var: Var) -> str:
        if var not in self.names:
            text, count = var.name, 0
            while text in self.used:
                count += 1
                text = f"{var.name}_{count}"
            self.used.add(text)
            self.names[var] = text
        return self.names[var]

    def error(self, what: str) -> LaunchPlanError:
        return LaunchPlanError(f"host function {self.name}: {what}")

    def stmt(self, s: Stmt) -> Any:
        if isinstance(s, SeqStmt):
            return ["seq", [self.stmt(item) for item in s.seq]]
        if isinstance(s, LetStmt):
            value = self.expr(s.value)
            return ["let", self.bind(s.var), value, self.stmt(s.body)]
        if isinstance(s, AttrStmt):
            return self.stmt(s.body)
        if isinstance(s, IfThenElse):
            other = None if s.else_case is None else self.stmt(s.else_case)
            return ["if", self.expr(s.condition), self.stmt(s.then_case), other]
        if isinstance(s, Evaluate) and isinstance(s.value, IntImm):
            return ["nop"]
        if (
            isinstance(s, Evaluate)
            and isinstance(s.value, Call)
            and intrinsics.LAUNCH_KERNEL.matches(s.value)
        ):
            return self.launch(s.value)
        raise self.error(
            f"{type(s).__name__} cannot run on the host; a lowered GPU host function only binds "
            f"values and calls {intrinsics.LAUNCH_KERNEL.name}"
        )

    def launch(self, call: Call) -> Any:
        args = call.args
        if len(args) < 8 or not isinstance(args[0], StringImm):
            raise self.error(
                f"{call.op} takes (name, grid x/y/z, block x/y/z, dynamic shared bytes, *args); "
                f"got {len(args)} arguments"
            )
        self.kernels.append(args[0].value)
        dims = [self.expr(a) for a in args[1:8]]
        return ["launch", args[0].value, dims, [self.expr(a) for a in args[8:]]]

    def expr(self, e: PrimExpr) -> Any:
        if isinstance(e, IntImm):
            return ["bool", bool(e.value)] if e.dtype.is_bool else ["int", e.value]
        if isinstance(e, FloatImm):
            return ["float", e.value]
        if isinstance(e, Var):
            if e not in self.names:
                raise self.error(f"variable {e.name} is used but not bound")
            return ["var", self.names[e]]
        if isinstance(e, BinaryOp | CmpOp) and type(e) in _BINARY:
            return [_BINARY[type(e)], self.expr(e.a), self.expr(e.b)]
        if isinstance(e, Not):
            return ["not", self.expr(e.a)]
        if isinstance(e, Select):
            return ["select", self.expr(e.condition), self.expr(e.true_value),
                    self.expr(e.false_value)]  # fmt: skip
        if isinstance(e, Call) and hopper.TENSOR_MAP.matches(e):
            # A kernel's tensor-map argument: the plan passes the buffer's argument; the
            # kernel's TensorMapParam says how the runtime encodes its map.
            return self.expr(e.args[0])
        if isinstance(e, Call) and intrinsics.IF_THEN_ELSE.matches(e):
            return ["select", *(self.expr(a) for a in e.args)]
        if isinstance(e, Cast):
            return ["cast", str(e.dtype), self.expr(e.value)]
        raise self.error(f"cannot evaluate {type(e).__name__} on the host")
