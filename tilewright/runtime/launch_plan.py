"""Host PrimFunc + checked arguments → the concrete kernel launches it makes, in order.

The GPU lowering leaves a host function whose body is a sequence of
``Evaluate(Call("tw.launch_kernel", (name, grid xyz, block xyz, dyn_shared_bytes, *args)))``
(under ``LetStmt``s binding shape-derived values). The runtime interprets it in Python:
launch dimensions are integer expressions of the scalar arguments and symbolic sizes.
"""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import Callable
from typing import Any, cast

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
    Call,
    Cast,
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
)
from tilewright.ir.stmt import AttrStmt, Evaluate, IfThenElse, LetStmt, SeqStmt, Stmt

LAUNCH = "tw.launch_kernel"
# Any: Python's operators applied to the host values (ints, floats, bools) of the operands.
_BINARY: dict[type, Callable[[Any, Any], object]] = {
    Add: operator.add,
    Sub: operator.sub,
    Mul: operator.mul,
    FloorDiv: operator.floordiv,
    FloorMod: operator.mod,
    Min: min,
    Max: max,
    LT: operator.lt,
    LE: operator.le,
    GT: operator.gt,
    GE: operator.ge,
    EQ: operator.eq,
    NE: operator.ne,
}


class LaunchPlanError(ValueError):
    """A host function the runtime cannot interpret (the message names the function)."""


@dataclasses.dataclass(frozen=True)
class Launch:
    """One kernel launch with concrete dimensions and argument values."""

    kernel: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    dyn_shared_bytes: int
    args: tuple[object, ...]


def evaluate(expr: PrimExpr, env: dict[Var, object], where: str = "") -> object:
    """The value of a host expression over bound variables.

    Example::

        >>> evaluate((n + 127) // 128, {n: 1000})
        8
    """
    if isinstance(expr, IntImm):
        return bool(expr.value) if expr.dtype.is_bool else expr.value
    if isinstance(expr, FloatImm):
        return expr.value
    if isinstance(expr, Var):
        if expr not in env:
            raise LaunchPlanError(f"{where}: variable {expr.name} is used but not bound")
        return env[expr]
    if type(expr) in _BINARY:
        a = evaluate(expr.a, env, where)  # type: ignore[attr-defined]
        b = evaluate(expr.b, env, where)  # type: ignore[attr-defined]
        return _BINARY[type(expr)](a, b)
    if isinstance(expr, Div | Mod):
        a, b = evaluate(expr.a, env, where), evaluate(expr.b, env, where)
        if isinstance(a, float) or isinstance(b, float):
            return a / b if isinstance(expr, Div) else a % b  # type: ignore[operator]
        # Host expressions evaluate to numbers; without a float operand both are integers.
        x, y = cast(int, a), cast(int, b)
        quotient = abs(x) // abs(y) * (1 if (x >= 0) == (y >= 0) else -1)
        return quotient if isinstance(expr, Div) else x - quotient * y
    if isinstance(expr, And | Or):
        a = evaluate(expr.a, env, where)
        if isinstance(expr, And):
            return bool(a) and bool(evaluate(expr.b, env, where))
        return bool(a) or bool(evaluate(expr.b, env, where))
    if isinstance(expr, Not):
        return not evaluate(expr.a, env, where)
    if isinstance(expr, Select):
        chosen = expr.true_value if evaluate(expr.condition, env, where) else expr.false_value
        return evaluate(chosen, env, where)
    if isinstance(expr, Call) and expr.op in ("if_then_else", "tir.if_then_else"):
        cond, then, other = expr.args
        return evaluate(then if evaluate(cond, env, where) else other, env, where)
    if isinstance(expr, Cast):
        value = evaluate(expr.value, env, where)
        if expr.dtype.is_bool:
            return bool(value)
        number = cast("int | float", value)  # host values are numbers (bools are ints)
        return float(number) if expr.dtype.is_float else int(number)
    raise LaunchPlanError(f"{where}: cannot evaluate {type(expr).__name__} on the host")


class HostProgram:
    """A host function ready to turn checked arguments into launches.

    Example::

        >>> program = HostProgram("main", lowered["main"])
        >>> program.launches(check_arguments(sig, (a, b), cuda(0)))
        [Launch(kernel='main_kernel', grid=(8, 1, 1), ...)]
    """

    def __init__(self, name: str, func: PrimFunc) -> None:
        self.name = name
        self.func = func
        self.sym_vars = symbolic_vars(name, func)
        self.kernels: list[str] = []
        self._check(func.body)

    def _check(self, stmt: Stmt) -> None:
        if isinstance(stmt, SeqStmt):
            for item in stmt.seq:
                self._check(item)
        elif isinstance(stmt, LetStmt | AttrStmt):
            self._check(stmt.body)
        elif isinstance(stmt, IfThenElse):
            self._check(stmt.then_case)
            if stmt.else_case is not None:
                self._check(stmt.else_case)
        elif isinstance(stmt, Evaluate) and isinstance(stmt.value, IntImm):
            pass
        elif isinstance(stmt, Evaluate) and _is_launch(stmt.value):
            args = stmt.value.args  # type: ignore[attr-defined]
            if len(args) < 8 or not isinstance(args[0], StringImm):
                raise LaunchPlanError(
                    f"host function {self.name}: {LAUNCH} takes (name, grid x/y/z, block x/y/z, "
                    f"dynamic shared bytes, *args); got {len(args)} arguments"
                )
            self.kernels.append(args[0].value)
        else:
            raise LaunchPlanError(
                f"host function {self.name}: {type(stmt).__name__} cannot run on the host; "
                f"a lowered GPU host function only binds values and calls {LAUNCH}"
            )

    def launches(self, values: list[object]) -> list[Launch]:
        """The launches for checked argument values (``check_arguments``'s output)."""
        env: dict[Var, object] = {}
        for var, value in zip(self.func.params, values):
            env[var] = value
            buf = self.func.buffer_of(var)
            if buf is not None:
                env[buf.data] = value
        for var, value in zip(self.sym_vars, values[len(self.func.params) :]):
            env[var] = value
        out: list[Launch] = []
        self._run(self.func.body, env, out)
        return out

    def _run(self, stmt: Stmt, env: dict[Var, object], out: list[Launch]) -> None:
        where = f"host function {self.name}"
        if isinstance(stmt, SeqStmt):
            for item in stmt.seq:
                self._run(item, env, out)
        elif isinstance(stmt, LetStmt):
            self._run(stmt.body, {**env, stmt.var: evaluate(stmt.value, env, where)}, out)
        elif isinstance(stmt, AttrStmt):
            self._run(stmt.body, env, out)
        elif isinstance(stmt, IfThenElse):
            if evaluate(stmt.condition, env, where):
                self._run(stmt.then_case, env, out)
            elif stmt.else_case is not None:
                self._run(stmt.else_case, env, out)
        elif isinstance(stmt, Evaluate) and _is_launch(stmt.value):
            args = stmt.value.args  # type: ignore[attr-defined]
            name = args[0].value
            dims = [int(evaluate(a, env, f"{where}, launch of {name}")) for a in args[1:8]]  # type: ignore[call-overload]
            values = tuple(evaluate(a, env, f"{where}, launch of {name}") for a in args[8:])
            out.append(Launch(name, tuple(dims[0:3]), tuple(dims[3:6]), dims[6], values))  # type: ignore[arg-type]


def _is_launch(value: PrimExpr) -> bool:
    return isinstance(value, Call) and value.op == LAUNCH
