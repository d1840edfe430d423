"""A GPU module's host side as plain data: which kernels a function launches, and how.

A lowered GPU host function only binds values and launches kernels. Code generation turns
it into a ``HostPlan`` (``tilewright.codegen.host_plan``): nested lists that serialize to
JSON, so that another process can run the launches without the IR. The runtime evaluates a
plan over the checked argument values (``HostPlan.launches``).

Statements: ``["seq", [stmt, ...]]``, ``["let", name, expr, body]``,
``["if", cond, then, else_or_null]``, ``["launch", kernel, [gx, gy, gz, bx, by, bz, dyn],
[arg, ...]]``, ``["nop"]``. Expressions: ``["int", v]``, ``["float", v]``, ``["bool", v]``,
``["var", name]``, ``[op, a, b]`` for the operators of ``BINARY``, ``["not", a]``,
``["select", c, t, f]``, ``["cast", dtype, a]``.
"""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import Callable
from typing import Any, cast


class LaunchPlanError(ValueError):
    """A host plan the runtime cannot evaluate (the message names the function)."""


# Python's operators on host values (ints, floats, bools); div and mod truncate as C does.
def _c_div(a: Any, b: Any) -> object:
    if isinstance(a, float) or isinstance(b, float):
        return a / b
    quotient = abs(a) // abs(b)
    return quotient if (a >= 0) == (b >= 0) else -quotient


def _c_mod(a: Any, b: Any) -> object:
    if isinstance(a, float) or isinstance(b, float):
        return a % b
    return a - _c_div(a, b) * b


BINARY: dict[str, Callable[[Any, Any], object]] = {
    "add": operator.add,
    "sub": operator.sub,
    "mul": operator.mul,
    "floordiv": operator.floordiv,
    "floormod": operator.mod,
    "div": _c_div,
    "mod": _c_mod,
    "min": min,
    "max": max,
    "lt": operator.lt,
    "le": operator.le,
    "gt": operator.gt,
    "ge": operator.ge,
    "eq": operator.eq,
    "ne": operator.ne,
}


@dataclasses.dataclass(frozen=True)
class Launch:
    """One kernel launch with concrete dimensions and argument values."""

    kernel: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    dyn_shared_bytes: int
    args: tuple[object, ...]


@dataclasses.dataclass(frozen=True)
class HostPlan:
    """The launches of one host function.

    ``bindings[i]`` names what the i-th argument value binds (a parameter and, for a
    buffer, its data pointer); the values after the parameters are the symbolic sizes.

    Example::

        >>> plan.launches(check_arguments(sig, (a, b), cuda(0)))
        [Launch(kernel='main_kernel', grid=(8, 1, 1), ...)]
    """

    name: str
    bindings: tuple[tuple[str, ...], ...]
    body: Any  # a statement as described in the module docstring
    kernels: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "bindings": [list(b) for b in self.bindings],
            "body": self.body,
            "kernels": list(self.kernels),
        }

    @staticmethod
    def from_json(data: dict[str, Any]) -> HostPlan:
        bindings = tuple(tuple(b) for b in data["bindings"])
        return HostPlan(data["name"], bindings, data["body"], tuple(data["kernels"]))

    def launches(self, values: list[object]) -> list[Launch]:
        """The launches for checked argument values (``check_arguments``'s output)."""
        env: dict[str, object] = {}
        for names, value in zip(self.bindings, values):
            env.update(dict.fromkeys(names, value))
        out: list[Launch] = []
        self._run(self.body, env, out)
        return out

    def _run(self, stmt: Any, env: dict[str, object], out: list[Launch]) -> None:
        head = stmt[0]
        if head == "seq":
            for item in stmt[1]:
                self._run(item, env, out)
        elif head == "let":
            _, name, value, body = stmt
            self._run(body, {**env, name: self.evaluate(value, env)}, out)
        elif head == "if":
            _, cond, then, other = stmt
            if self.evaluate(cond, env):
                self._run(then, env, out)
            elif other is not None:
                self._run(other, env, out)
        elif head == "launch":
            _, kernel, dims, args = stmt
            where = f"launch of {kernel}"
            # Launch dimensions are thread extents and the shared byte count: integers in the IR.
            sizes = [int(cast(int, self.evaluate(d, env, where))) for d in dims]
            values = tuple(self.evaluate(a, env, where) for a in args)
            grid = (sizes[0], sizes[1], sizes[2])
            block = (sizes[3], sizes[4], sizes[5])
            out.append(Launch(kernel, grid, block, sizes[6], values))
        elif head != "nop":
            raise LaunchPlanError(f"host function {self.name}: unknown statement {head!r}")

    def evaluate(self, expr: Any, env: dict[str, object], where: str = "") -> object:
        """The value of a plan expression. Example: ``plan.evaluate(["add", ["var", "n"],
        ["int", 1]], {"n": 3})`` is 4."""
        head = expr[0]
        if head in ("int", "float", "bool"):
            return expr[1]
        if head == "var":
            if expr[1] not in env:
                place = f", {where}" if where else ""
                raise LaunchPlanError(
                    f"host function {self.name}{place}: {expr[1]} is used but not bound"
                )
            return env[expr[1]]
        if head in BINARY:
            return BINARY[head](
                self.evaluate(expr[1], env, where), self.evaluate(expr[2], env, where)
            )
        if head == "and":
            return bool(self.evaluate(expr[1], env, where)) and bool(
                self.evaluate(expr[2], env, where)
            )
        if head == "or":
            return bool(self.evaluate(expr[1], env, where)) or bool(
                self.evaluate(expr[2], env, where)
            )
        if head == "not":
            return not self.evaluate(expr[1], env, where)
        if head == "select":
            chosen = expr[2] if self.evaluate(expr[1], env, where) else expr[3]
            return self.evaluate(chosen, env, where)
        if head == "cast":
            value: Any = self.evaluate(expr[2], env, where)
            dtype = str(expr[1])
            if dtype.startswith("bool"):
                return bool(value)
            return float(value) if dtype.startswith(("float", "bfloat")) else int(value)
        raise LaunchPlanError(f"host function {self.name}: unknown expression {head!r}")
