"""PrimExpr → Python expression source: the evaluator's one expression translator.

A scalar is a Python int or bool, or a numpy scalar of the IR dtype (``float32`` arithmetic
stays ``float32``); a vector is a numpy array of its lanes. The static dtype of each node picks
the spelling, so scalar and vector code compute bit-identical values. Every buffer index is
checked against its dimension; ``if_then_else``, ``Select``, ``&&`` and ``||`` evaluate lazily
on scalars, as the generated C does.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from tilewright import ir
from tilewright.ir import Buffer, Var, intrinsics

from .memory import np_dtype

_INFIX = {
    ir.Add: "+",
    ir.Sub: "-",
    ir.Mul: "*",
    ir.EQ: "==",
    ir.NE: "!=",
    ir.LT: "<",
    ir.LE: "<=",
    ir.GT: ">",
    ir.GE: ">=",
}


def _tdiv(a, b):  # C's integer division: toward zero
    q = a // b
    return q + ((q < 0) & (q * b != a))


def _tmod(a, b):
    return a - _tdiv(a, b) * b


def _max(a, b):  # NaN wins, as in np.maximum (the builtin max may drop a NaN)
    return a if a >= b or a != a else b


def _min(a, b):
    return a if a <= b or a != a else b


def _typed(fn: Callable[..., object]) -> Callable[..., object]:
    """``fn`` (on float64) with its result in the dtype of the first argument."""
    return lambda x, *rest: np.asarray(fn(x, *rest), dtype=np.result_type(x))[()]


def _round(x):  # C's round(): halves away from zero
    t = np.trunc(x)
    return np.where(np.abs(x - t) >= 0.5, t + np.sign(x), t).astype(np.result_type(x))[()]


# Each pure intrinsic of the table, as a function of scalars and lane arrays alike.
_SPECIAL = {
    "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
    "exp10": _typed(lambda x: np.power(10.0, x)),
    "rsqrt": lambda x: 1 / np.sqrt(x),
    "erf": _typed(np.vectorize(math.erf)),
    "round": _round,
}
_NUMPY_SPELLING = {
    "asin": "arcsin",
    "acos": "arccos",
    "atan": "arctan",
    "atan2": "arctan2",
    "pow": "power",
    "nearbyint": "rint",
    "shift_left": "left_shift",
    "shift_right": "right_shift",
    "bitwise_not": "invert",
}
FUNCTIONS: dict[intrinsics.Intrinsic, Callable[..., object]] = {
    intrinsics.lookup(name): _SPECIAL.get(name) or getattr(np, _NUMPY_SPELLING.get(name, name))
    for name in (
        *intrinsics.UNARY_MATH,
        *intrinsics.BINARY_MATH,
        *intrinsics.BITWISE,
        intrinsics.BITWISE_NOT.name,
    )
}

# Names the generated code uses besides its own variables and constants.
HELPERS: dict[str, object] = {"np": np, "_tdiv": _tdiv, "_tmod": _tmod, "_max": _max, "_min": _min}


def _identifier(text: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in text)


class ExprTranslator:
    """Spells expressions as Python; subclasses add statements (they own ``emit``)."""

    def __init__(self) -> None:
        self.names: dict[Var, str] = {}
        self.constants: dict[str, object] = {}
        self.storage_dtypes: dict[Var, ir.DataType] = {}  # data variable -> its array's dtype
        # match_buffer views: view buffer -> (source buffer, region minima, leading dimensions)
        self.matched: dict[Buffer, tuple[Buffer, list[str], int]] = {}

    def name(self, var: Var) -> str:
        if var not in self.names:
            self.names[var] = f"v{len(self.names)}_{_identifier(var.name)}"
        return self.names[var]

    def constant(self, value: object) -> str:
        name = f"_k{len(self.constants)}"
        self.constants[name] = value
        return name

    def expr(self, e: ir.PrimExpr) -> str:
        method = getattr(self, f"expr_{type(e).__name__}", None)
        if method is None:
            raise TypeError(f"evaluator: cannot execute {type(e).__name__}")
        return method(e)

    # -- leaves ----------------------------------------------------------------------------
    def expr_Var(self, e: Var) -> str:
        return self.name(e)

    def expr_IntImm(self, e: ir.IntImm) -> str:
        if e.dtype.is_bool:
            return repr(bool(e.value))
        return str(e.value) if e.value >= 0 else f"({e.value})"

    def expr_FloatImm(self, e: ir.FloatImm) -> str:
        return self.constant(np_dtype(e.dtype).type(e.value))

    def expr_StringImm(self, e: ir.StringImm) -> str:
        return repr(e.value)

    # -- arithmetic --------------------------------------------------------------------------
    def expr_BinaryOp(self, e: ir.BinaryOp | ir.CmpOp) -> str:
        return f"({self.expr(e.a)} {_INFIX[type(e)]} {self.expr(e.b)})"

    expr_Add = expr_Sub = expr_Mul = expr_BinaryOp
    expr_EQ = expr_NE = expr_LT = expr_LE = expr_GT = expr_GE = expr_BinaryOp

    def apply(self, function: str, e: ir.BinaryOp | ir.CmpOp) -> str:
        return f"{function}({self.expr(e.a)}, {self.expr(e.b)})"

    def expr_Div(self, e: ir.Div) -> str:
        if e.dtype.is_float:
            return f"({self.expr(e.a)} / {self.expr(e.b)})"
        return self.apply("_tdiv", e)

    def expr_Mod(self, e: ir.Mod) -> str:
        return self.apply("np.fmod" if e.dtype.is_float else "_tmod", e)

    def expr_FloorDiv(self, e: ir.FloorDiv) -> str:
        if e.dtype.is_float:
            return f"np.floor({self.expr(e.a)} / {self.expr(e.b)})"
        return f"({self.expr(e.a)} // {self.expr(e.b)})"

    def expr_FloorMod(self, e: ir.FloorMod) -> str:
        return f"({self.expr(e.a)} % {self.expr(e.b)})"

    def expr_Min(self, e: ir.Min) -> str:
        return self.apply("np.minimum" if e.dtype.is_vector else "_min", e)

    def expr_Max(self, e: ir.Max) -> str:
        return self.apply("np.maximum" if e.dtype.is_vector else "_max", e)

    def expr_And(self, e: ir.And) -> str:
        if e.dtype.is_vector:
            return self.apply("np.logical_and", e)
        return f"({self.expr(e.a)} and {self.expr(e.b)})"

    def expr_Or(self, e: ir.Or) -> str:
        if e.dtype.is_vector:
            return self.apply("np.logical_or", e)
        return f"({self.expr(e.a)} or {self.expr(e.b)})"

    def expr_Not(self, e: ir.Not) -> str:
        a = self.expr(e.a)
        return f"np.logical_not({a})" if e.dtype.is_vector else f"(not {a})"

    def select(self, vector: bool, cond: ir.PrimExpr, then: ir.PrimExpr, other: ir.PrimExpr) -> str:
        c, t, f = self.expr(cond), self.expr(then), self.expr(other)
        return f"np.where({c}, {t}, {f})" if vector else f"({t} if {c} else {f})"

    def expr_Select(self, e: ir.Select) -> str:
        return self.select(e.dtype.is_vector, e.condition, e.true_value, e.false_value)

    def expr_Cast(self, e: ir.Cast) -> str:
        value, dt = self.expr(e.value), e.dtype
        if dt.is_vector:
            return f"{value}.astype({self.constant(np_dtype(dt))})"
        if dt.is_float:
            return f"{self.constant(np_dtype(dt).type)}({value})"
        return f"{'bool' if dt.is_bool else 'int'}({value})"

    def expr_Let(self, e: ir.Let) -> str:
        return f"(({self.name(e.var)} := {self.expr(e.value)}), {self.expr(e.body)})[1]"

    # -- vectors -----------------------------------------------------------------------------
    def expr_Ramp(self, e: ir.Ramp) -> str:
        lanes = self.constant(np.arange(e.lanes))
        return f"({self.expr(e.base)} + {self.expr(e.stride)} * {lanes})"

    def expr_Broadcast(self, e: ir.Broadcast) -> str:
        return f"np.full({e.lanes}, {self.expr(e.value)})"

    # -- calls -------------------------------------------------------------------------------
    def expr_Call(self, e: ir.Call) -> str:
        intrinsic = intrinsics.lookup_or_none(e.op)
        if intrinsic is None:
            raise TypeError(f"evaluator: unknown intrinsic {e.op!r}")
        intrinsic.check_arity(len(e.args))
        if intrinsic is intrinsics.IF_THEN_ELSE:
            return self.select(e.dtype.is_vector, *e.args)
        if intrinsic is intrinsics.LIKELY:
            return self.expr(e.args[0])
        if intrinsic is intrinsics.ADDRESS_OF:
            load = e.args[0]
            if not isinstance(load, ir.BufferLoad):
                raise TypeError(f"evaluator: {intrinsic.name} of {type(load).__name__}")
            return self.address(load.buffer, load.indices)
        if intrinsic in (intrinsics.REGION_DATA, intrinsics.REGION_OFFSET):
            return self.region(e, data=intrinsic is intrinsics.REGION_DATA)
        if intrinsic is intrinsics.ACCESS_PTR:
            data, offset, _, mask = e.args
            if isinstance(data, Var):
                storage = self.storage_of(data)
                data_text = f"_whole({storage}, {data.name!r})"
            else:
                data_text = self.expr(data)
            return f"{data_text}.shifted({self.expr(offset)}, {self.expr(mask)})"
        if intrinsic not in FUNCTIONS:
            raise TypeError(f"evaluator: {intrinsic.name} ({intrinsic.effect.value}) is no value")
        args = ", ".join(self.expr(a) for a in e.args)
        return f"{self.constant(FUNCTIONS[intrinsic])}({args})"

    # -- memory ------------------------------------------------------------------------------
    def expr_BufferLoad(self, e: ir.BufferLoad) -> str:
        return self.load(e.buffer, e.indices)

    def load(self, buffer: Buffer, indices: tuple[ir.PrimExpr, ...]) -> str:
        storage, offset = self.locate(buffer, indices)
        return f"{storage}[{offset}]"

    def address(self, buffer: Buffer, indices: tuple[ir.PrimExpr, ...]) -> str:
        storage, offset = self.locate(buffer, indices)
        return f"_address({storage}, {offset})"

    def region(self, e: ir.Call, data: bool) -> str:
        """``tw.region_data``: a pointer to the storage of the loads' buffer, bounded by them
        (``memory.Pointer``); ``tw.region_offset``: the first load's flat offset."""
        first, last = e.args
        if not (isinstance(first, ir.BufferLoad) and isinstance(last, ir.BufferLoad)):
            raise TypeError(f"evaluator: {e.op} names its region by two loads")
        if first.buffer.data != last.buffer.data:
            names = f"{first.buffer.name} and {last.buffer.name}"
            raise TypeError(f"evaluator: {e.op} of loads from {names}")
        storage, start = self.locate(first.buffer, first.indices)
        if not data:
            return start
        _, end = self.locate(last.buffer, last.indices)
        return f"_region({storage}, {start}, {end}, {first.buffer.name!r})"

    def storage_of(self, data: Var) -> str:
        """The array bound to a data variable (as the element type it was allocated with)."""
        if data not in self.storage_dtypes:
            raise TypeError(f"evaluator: {data.name} is used where its storage is not bound")
        return self.name(data)

    def locate(self, buffer: Buffer, indices: tuple[ir.PrimExpr, ...]) -> tuple[str, str]:
        """(the storage of ``buffer``, the checked flat offset of ``indices``) as source."""
        spelled = [(self.expr(i), i.dtype.is_vector) for i in indices]
        return self.locate_spelled(buffer, spelled)

    def locate_spelled(self, buffer: Buffer, indices: list[tuple[str, bool]]) -> tuple[str, str]:
        if len(indices) != buffer.ndim:
            raise TypeError(f"evaluator: {buffer.name} has {buffer.ndim} dims, not {len(indices)}")
        checked = [self.check(i, v, d, buffer.name) for (i, v), d in zip(indices, buffer.shape)]
        if buffer in self.matched:
            source, mins, lead = self.matched[buffer]
            moved = [(m, False) for m in mins[:lead]]
            moved += [(f"({m} + {i})", v) for m, (i, v) in zip(mins[lead:], indices)]
            return self.locate_spelled(source, moved)
        if buffer.strides:
            terms = [f"{i} * {self.expr(s)}" for i, s in zip(checked, buffer.strides)]
            offset = " + ".join(terms) or "0"
        else:
            offset = checked[0] if checked else "0"
            for index, extent in zip(checked[1:], buffer.shape[1:]):
                offset = f"({offset}) * {self.expr(extent)} + {index}"
        if not (isinstance(buffer.elem_offset, ir.IntImm) and buffer.elem_offset.value == 0):
            offset = f"{offset} + {self.expr(buffer.elem_offset)}"
        return self.storage(buffer), offset

    def check(self, index: str, vector: bool, extent: ir.PrimExpr, name: str) -> str:
        n = self.expr(extent)
        if index.isdigit() and isinstance(extent, ir.IntImm) and int(index) < extent.value:
            return index
        if vector:
            return f"_check_lanes({index}, {n}, {name!r})"
        if index.isidentifier():
            return f"({index} if 0 <= {index} < {n} else _oob({index}, {n}, {name!r}))"
        return f"(_i if 0 <= (_i := {index}) < {n} else _oob(_i, {n}, {name!r}))"

    def storage(self, buffer: Buffer) -> str:
        """The array of ``buffer``'s data, viewed as its element type."""
        if buffer.data not in self.storage_dtypes:
            raise TypeError(f"evaluator: {buffer.name} is used where its storage is not bound")
        name = self.name(buffer.data)
        same = self.storage_dtypes[buffer.data] == buffer.dtype.element
        return name if same else f"{name}_{buffer.dtype.element}"
