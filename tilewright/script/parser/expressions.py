"""Evaluate the expressions of a script: Python ``ast`` expression nodes to IR or values.

Names resolve in the script's scope first (parameters, loop and iterator variables,
buffers), then in the Python environment of the decorated function. ``T.xxx(...)`` calls
the real function of the ``T`` namespace; operators build IR when an operand is IR and
compute in Python otherwise.
"""

from __future__ import annotations

import ast
import builtins
import difflib
import inspect
import operator
import types
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, cast

from tilewright.ir import intrinsics, op
from tilewright.ir.buffer import Buffer
from tilewright.ir.expr import IntImm, PrimExpr, StringImm
from tilewright.script.parser.errors import ArgumentError, ParseError, SourceMap
from tilewright.script.parser.scope import Scope

BINARY_OPERATORS: dict[type, Callable[[object, object], object]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
    ast.LShift: operator.lshift,
    ast.RShift: operator.rshift,
    ast.BitAnd: operator.and_,
    ast.BitOr: operator.or_,
    ast.BitXor: operator.xor,
    ast.MatMult: operator.matmul,  # `4 @ laneid` in tile layouts
}
# Comparisons of IR operands build nodes; Python's own operators keep identity semantics.
_COMPARE_IR: dict[type, Callable[[op.Operand, op.Operand], PrimExpr]] = {
    ast.Eq: op.eq,
    ast.NotEq: op.ne,
    ast.Lt: op.lt,
    ast.LtE: op.le,
    ast.Gt: op.gt,
    ast.GtE: op.ge,
}
# Any: these are Python's own dynamic operators, applied to whatever values the script holds.
_COMPARE_PY: dict[type, Callable[[Any, Any], object]] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.Is: operator.is_,
    ast.IsNot: operator.is_not,
    ast.In: lambda a, b: operator.contains(b, a),
    ast.NotIn: lambda a, b: not operator.contains(b, a),
}
# Any: as above, Python's own operators on whatever value the script holds.
_NEGATE: Callable[[Any], object] = operator.neg
_INVERT: Callable[[Any], object] = operator.invert
_SUBSCRIPT: Callable[[Any, Any], object] = operator.getitem


def _is_ir(value: object) -> bool:
    return isinstance(value, PrimExpr)


def _operand(value: object) -> op.Operand:
    # Script values are unchecked here on purpose: the ``op`` constructors convert them and
    # raise a TypeError naming the value when it is not an expression or a number.
    return cast(op.Operand, value)


def _is_numeric(value: PrimExpr) -> bool:
    return not (value.dtype.is_handle or value.dtype.is_void)


def _non_numeric(value: object) -> str | None:
    """What ``value`` is when it cannot be an operand of arithmetic, else None."""
    if isinstance(value, bool | int | float):
        return None
    if isinstance(value, str | StringImm):
        return "a string"
    if isinstance(value, PrimExpr):
        return None if _is_numeric(value) else f"a {value.dtype} value"
    if isinstance(value, Buffer):
        return f"a buffer, not an element such as {value.name}[i]"
    return None  # other objects (tile layouts, ...) define their own operators


def _iterable(value: object) -> Iterable[object]:
    # A starred non-iterable raises TypeError when unpacked, as it would in Python.
    return cast("Iterable[object]", value)


def _mapping(value: object) -> Mapping[Any, object]:
    # A ``**`` operand that is not a mapping raises TypeError in ``dict.update``.
    return cast("Mapping[Any, object]", value)


def _plural(n: int, word: str, many: str) -> str:
    return f"{n} {word if n == 1 else many}"


class ExpressionEvaluator:
    """Evaluates ``ast`` expressions against a ``Scope`` and a Python environment."""

    def __init__(self, source: SourceMap, env: Mapping[str, object]) -> None:
        self.source = source
        self.env = env
        self.scope = Scope()

    def error(self, node: ast.AST | None, message: str) -> ParseError:
        return self.source.error(node, message)

    def eval(self, node: ast.expr) -> object:
        """The value of an expression node: IR, a directive, or a plain Python value."""
        method = getattr(self, f"visit_{type(node).__name__}", None)
        if method is None or not isinstance(node, ast.expr):
            raise self.error(
                node, f"unsupported expression {type(node).__name__} here: {ast.unparse(node)}"
            )
        return method(node)

    def visit_Constant(self, node: ast.Constant) -> object:
        return node.value

    def visit_Name(self, node: ast.Name) -> object:
        name = node.id
        value = self.scope.lookup(name, _UNBOUND)
        if value is not _UNBOUND:
            return value
        if name in self.env:
            return self.env[name]
        if hasattr(builtins, name):
            return getattr(builtins, name)
        close = difflib.get_close_matches(name, [*self.scope.names(), *self.env], n=3)
        hint = f" (did you mean {', '.join(repr(c) for c in close)}?)" if close else ""
        raise self.error(node, f"undefined variable '{name}'{hint}")

    def visit_Attribute(self, node: ast.Attribute) -> object:
        owner = self.eval(node.value)
        try:
            return getattr(owner, node.attr)
        except AttributeError:
            pass
        prefix = ast.unparse(node.value)
        names = [
            n
            for n in dir(owner)
            if not n.startswith("_") and not isinstance(getattr(owner, n, None), types.ModuleType)
        ]
        close = difflib.get_close_matches(node.attr, names, n=3)
        hint = (
            f" (did you mean {', '.join(repr(f'{prefix}.{c}') for c in close)}?)" if close else ""
        )
        if isinstance(owner, types.ModuleType) or type(owner).__module__.startswith(
            "tilewright.script"
        ):
            raise self.error(node, f"unknown name '{prefix}.{node.attr}'{hint}")
        kind = type(owner).__name__
        raise self.error(node, f"'{prefix}' ({kind}) has no attribute '{node.attr}'{hint}")

    def visit_Call(self, node: ast.Call) -> object:
        func = self.eval(node.func)
        positional: list[object] = []
        for arg in node.args:
            if isinstance(arg, ast.Starred):
                positional.extend(_iterable(self.eval(arg.value)))
            else:
                positional.append(self.eval(arg))
        keywords: dict[str, object] = {}
        for kw in node.keywords:
            if kw.arg is None:
                keywords.update(_mapping(self.eval(kw.value)))
            else:
                keywords[kw.arg] = self.eval(kw.value)
        if func is range:
            # A Python range in a script is a serial loop (its bounds may be IR).
            from tilewright.script.tir.loops import serial

            func = serial
        if not callable(func):
            raise self.error(node.func, f"'{ast.unparse(node.func)}' is not callable")
        name = ast.unparse(node.func)
        try:
            return func(*positional, **keywords)
        except (TypeError, ValueError) as err:
            text = str(err)
            if not text.startswith(name):
                text = f"wrong arguments to {name}: {text}"
            raise self.error(_argument_node(node, err), text) from None

    def check_operands(self, node: ast.AST, operands: Sequence[tuple[ast.AST, object]]) -> None:
        """Operands of an operator that builds IR are numbers or numeric expressions: a
        string, a buffer or a handle there would pass on to the C compiler."""
        if not any(isinstance(value, PrimExpr | Buffer) for _, value in operands):
            return  # plain Python values: meta-programming ("a" + "b" is fine)
        numeric = [v for _, v in operands if isinstance(v, PrimExpr) and _is_numeric(v)]
        kind = f"{numeric[0].dtype} " if numeric else ""
        for where, value in operands:
            problem = _non_numeric(value)
            if problem is not None:
                raise self.error(
                    where,
                    f"operand {ast.unparse(where)} of {ast.unparse(node)} is {problem}; "
                    f"expected a {kind}number or expression",
                )

    def visit_BinOp(self, node: ast.BinOp) -> object:
        left, right = self.eval(node.left), self.eval(node.right)
        self.check_operands(node, ((node.left, left), (node.right, right)))
        fn = BINARY_OPERATORS.get(type(node.op))
        if isinstance(node.op, ast.Pow) and (_is_ir(left) or _is_ir(right)):
            fn = lambda a, b: op.math_call("pow", _operand(a), _operand(b))  # noqa: E731 - one use
        if type(node.op) in _BIT_OPERATORS and (_is_ir(left) or _is_ir(right)):
            fn = _bit_operator(type(node.op), left, right)
        if fn is None:
            raise self.error(node, f"unsupported operator {type(node.op).__name__}")
        try:
            return fn(left, right)
        except (TypeError, ValueError) as err:
            raise self.error(node, f"cannot apply {ast.unparse(node)}: {err}") from None

    def visit_UnaryOp(self, node: ast.UnaryOp) -> object:
        value = self.eval(node.operand)
        self.check_operands(node, ((node.operand, value),))
        if isinstance(node.op, ast.Not):
            return op.logical_not(_operand(value)) if _is_ir(value) else not value
        if isinstance(node.op, ast.UAdd):
            return value
        if isinstance(node.op, ast.Invert) and isinstance(value, PrimExpr):
            if value.dtype.is_bool:
                return op.logical_not(value)
            return intrinsics.BITWISE_NOT.call(value)
        try:
            return _NEGATE(value) if isinstance(node.op, ast.USub) else _INVERT(value)
        except TypeError as err:
            raise self.error(node, f"cannot apply {ast.unparse(node)}: {err}") from None

    def visit_BoolOp(self, node: ast.BoolOp) -> object:
        is_and = isinstance(node.op, ast.And)
        result = self.eval(node.values[0])
        for item in node.values[1:]:
            if not _is_ir(result):
                # Python semantics (short-circuit) while every operand so far is a value.
                if bool(result) != is_and:
                    return result
                result = self.eval(item)
                continue
            other = self.eval(item)
            self.check_operands(node, ((node.values[0], result), (item, other)))
            x, y = _operand(result), _operand(other)
            result = op.logical_and(x, y) if is_and else op.logical_or(x, y)
        return result

    def visit_Compare(self, node: ast.Compare) -> object:
        left = self.eval(node.left)
        result: object = True
        for cmp, right_node in zip(node.ops, node.comparators):
            right = self.eval(right_node)
            if type(cmp) in _COMPARE_IR:
                self.check_operands(node, ((node.left, left), (right_node, right)))
            if (_is_ir(left) or _is_ir(right)) and type(cmp) in _COMPARE_IR:
                value: object = _COMPARE_IR[type(cmp)](_operand(left), _operand(right))
            else:
                value = _COMPARE_PY[type(cmp)](left, right)
            if result is True:
                result = value
            elif _is_ir(result) or _is_ir(value):
                result = op.logical_and(_operand(result), _operand(value))
            else:
                result = result and value
            left = right
        return result

    def visit_IfExp(self, node: ast.IfExp) -> object:
        cond = self.eval(node.test)
        if _is_ir(cond):
            body, orelse = self.eval(node.body), self.eval(node.orelse)
            self.check_operands(node, ((node.test, cond),))
            self.check_operands(node, ((node.body, body), (node.orelse, orelse)))
            return op.select(_operand(cond), _operand(body), _operand(orelse))
        return self.eval(node.body) if cond else self.eval(node.orelse)

    def index_items(self, node: ast.expr) -> tuple[object, ...]:
        """The indices of a subscript, slices as ``slice`` objects."""
        parts = node.elts if isinstance(node, ast.Tuple) else [node]
        items: list[object] = []
        for part in parts:
            if isinstance(part, ast.Slice):
                items.append(
                    slice(
                        None if part.lower is None else self.eval(part.lower),
                        None if part.upper is None else self.eval(part.upper),
                        None if part.step is None else self.eval(part.step),
                    )
                )
            else:
                items.append(self.eval(part))
        return tuple(items)

    def check_indices(self, node: ast.Subscript, buffer: Buffer, count: int) -> None:
        if count != buffer.ndim:
            dims = _plural(buffer.ndim, "dimension", "dimensions")
            used = _plural(count, "index", "indices")
            raise self.error(
                node,
                f"buffer {buffer.name} has {dims} but is indexed with {used}; "
                f"expected {buffer.ndim}",
            )

    def check_index_types(
        self, node: ast.Subscript, buffer: Buffer, items: Sequence[object]
    ) -> None:
        """Each index (not slice) of ``buffer[...]`` is an integer or an integer expression."""
        parts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if len(parts) != len(items):
            parts = [node] * len(items)  # indices unpacked from a tuple made outside
        for part, item in zip(parts, items):
            if isinstance(item, slice):
                continue
            if isinstance(item, int) and not isinstance(item, bool):
                continue
            if isinstance(item, PrimExpr) and item.dtype.is_integer:
                continue
            is_float = isinstance(item, float) or (
                isinstance(item, PrimExpr) and item.dtype.is_float
            )
            found = f"a {item.dtype} value" if isinstance(item, PrimExpr) else repr(item)
            hint = " (// divides integers; T.int32(x) casts)" if is_float else ""
            raise self.error(
                part,
                f"buffer {buffer.name}: index {ast.unparse(part)} is {found}; expected an "
                f"integer index{hint}",
            )

    def visit_Subscript(self, node: ast.Subscript) -> object:
        owner = self.eval(node.value)
        if isinstance(owner, Buffer):
            items = self.index_items(node.slice)
            if len(items) == 1 and isinstance(items[0], tuple):
                items = items[0]  # `A[fs]` with `fs` a tuple of slices made outside
            self.check_indices(node, owner, len(items))
            self.check_index_types(node, owner, items)
            try:
                if any(isinstance(item, slice) for item in items):
                    from tilewright.script.tir.arguments import region_of

                    return region_of(owner, items)
                return owner[items]
            except (TypeError, ValueError) as err:
                raise self.error(node, f"bad index of buffer {owner.name}: {err}") from None
        key = self.eval(node.slice)
        try:
            return _SUBSCRIPT(owner, key)
        except (TypeError, ValueError, KeyError, IndexError) as err:
            raise self.error(node, f"cannot subscript {ast.unparse(node.value)}: {err}") from None

    def visit_Slice(self, node: ast.Slice) -> object:
        parts = (node.lower, node.upper, node.step)
        return slice(*(None if p is None else self.eval(p) for p in parts))

    def visit_Tuple(self, node: ast.Tuple) -> object:
        return tuple(self._elements(node.elts))

    def visit_List(self, node: ast.List) -> object:
        return self._elements(node.elts)

    def _elements(self, nodes: list[ast.expr]) -> list[object]:
        out: list[object] = []
        for item in nodes:
            if isinstance(item, ast.Starred):
                out.extend(_iterable(self.eval(item.value)))
            else:
                out.append(self.eval(item))
        return out

    def visit_Dict(self, node: ast.Dict) -> object:
        out: dict[object, object] = {}
        for key, value in zip(node.keys, node.values):
            if key is None:
                out.update(_mapping(self.eval(value)))
            else:
                out[self.eval(key)] = self.eval(value)
        return out

    def visit_Lambda(self, node: ast.Lambda) -> object:
        return ScriptLambda(self, node)

    def visit_JoinedStr(self, node: ast.JoinedStr) -> object:
        parts = []
        for value in node.values:
            if isinstance(value, ast.FormattedValue):
                parts.append(str(self.eval(value.value)))
            else:
                parts.append(str(self.eval(value)))
        return "".join(parts)


_BIT_OPERATORS: dict[type, intrinsics.Intrinsic] = {
    ast.LShift: intrinsics.SHIFT_LEFT,
    ast.RShift: intrinsics.SHIFT_RIGHT,
    ast.BitAnd: intrinsics.BITWISE_AND,
    ast.BitOr: intrinsics.BITWISE_OR,
    ast.BitXor: intrinsics.BITWISE_XOR,
}


def _bit_operator(kind: type, left: object, right: object) -> Callable[[object, object], object]:
    """TVM's meaning of ``<< >> & | ^`` on IR: bit operations on integers (``&`` and ``|`` of
    conditions stay logical)."""
    a, b = op.convert(_operand(left)), op.convert(_operand(right))
    if a.dtype.is_bool and b.dtype.is_bool and kind in (ast.BitAnd, ast.BitOr):
        return BINARY_OPERATORS[kind]
    intrinsic = _BIT_OPERATORS[kind]

    def apply(x: object, y: object) -> object:
        # A Python int takes the other operand's dtype, as in TVM.
        if isinstance(a, IntImm) and isinstance(left, int):
            return intrinsic.call(op.convert(left, b.dtype), b)
        if isinstance(b, IntImm) and isinstance(right, int):
            return intrinsic.call(a, op.convert(right, a.dtype))
        return intrinsic.call(a, b)

    return apply


def _argument_node(call: ast.Call, err: Exception) -> ast.AST:
    """The keyword argument an ``ArgumentError`` names, else the whole call."""
    if isinstance(err, ArgumentError):
        for kw in call.keywords:
            if kw.arg == err.keyword:
                return kw.value
    return call


_UNBOUND = object()


class ScriptLambda:
    """A script's ``lambda x, y: x + y``: called with values (IR variables), it evaluates its
    body with its parameters bound to them (``T.comm_reducer`` reads its parameter names)."""

    def __init__(self, evaluator: ExpressionEvaluator, node: ast.Lambda) -> None:
        spec = node.args
        if spec.vararg or spec.kwarg or spec.kwonlyargs or spec.defaults or spec.posonlyargs:
            raise evaluator.error(node, "a script lambda takes plain positional parameters")
        self.evaluator = evaluator
        self.node = node
        self.params = [a.arg for a in spec.args]
        kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
        self.__signature__ = inspect.Signature([inspect.Parameter(n, kind) for n in self.params])

    def __call__(self, *values: object) -> object:
        if len(values) != len(self.params):
            raise TypeError(f"the lambda takes {len(self.params)} arguments, got {len(values)}")
        with self.evaluator.scope.nested():
            for name, value in zip(self.params, values):
                self.evaluator.scope.define(name, value)
            return self.evaluator.eval(self.node.body)
