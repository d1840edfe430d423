"""Lowered PrimFunc → C-like source text: the printer that C, CUDA, OpenCL and Metal share.

Expressions print with C precedence (parentheses only where needed), statements with
two-space indentation. A language subclass mostly overrides tables: the value and storage
type of each dtype, the spelling of each math intrinsic, the qualifier of helper functions,
and the hooks for loops, allocation and the function signature.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import ClassVar

import numpy as np

from tilewright.codegen.lanes import lane_of
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
    Broadcast,
    Buffer,
    BufferLoad,
    Call,
    Cast,
    CmpOp,
    DataType,
    Div,
    FloatImm,
    FloorDiv,
    FloorMod,
    IntImm,
    Let,
    Max,
    Min,
    Mod,
    Mul,
    Node,
    Not,
    Or,
    PrimExpr,
    Ramp,
    Select,
    StringImm,
    Sub,
    Var,
    decl_buffer,
    intrinsics,
    op,
    post_order_visit,
)
from tilewright.ir.dtype import int32, numpy_scalar_type
from tilewright.ir.intrinsics import Intrinsic
from tilewright.ir.stmt import (
    AllocateConst,
    AttrStmt,
    BufferRealize,
    BufferStore,
    DeclBuffer,
    Evaluate,
    For,
    IfThenElse,
    LetStmt,
    Prefetch,
    SeqStmt,
    Stmt,
    While,
)


class CodegenError(ValueError):
    """A program the target's code generator cannot express; the message names the place."""


# How a printer spells one intrinsic: as an expression, or as a statement of its own.
Emitter = Callable[["CLikePrinter", Call], "Expr"]
StatementEmitter = Callable[["CLikePrinter", Call], None]


def _infix(symbol: str, prec: int) -> Emitter:
    def emit(p: CLikePrinter, e: Call) -> Expr:
        return Expr(
            f"{p.operand(e.args[0], prec)} {symbol} {p.operand(e.args[1], prec, True)}", prec
        )

    return emit


# C operator precedence, higher binds tighter.
PREC_ATOM, PREC_UNARY, PREC_MUL, PREC_ADD = 16, 15, 13, 12
PREC_REL, PREC_EQ, PREC_AND, PREC_OR, PREC_COND = 10, 9, 5, 4, 3
PREC_LOWEST = 0

_INFIX: dict[type, tuple[str, int]] = {
    Add: ("+", PREC_ADD),
    Sub: ("-", PREC_ADD),
    Mul: ("*", PREC_MUL),
    LT: ("<", PREC_REL),
    LE: ("<=", PREC_REL),
    GT: (">", PREC_REL),
    GE: (">=", PREC_REL),
    EQ: ("==", PREC_EQ),
    NE: ("!=", PREC_EQ),
    And: ("&&", PREC_AND),
    Or: ("||", PREC_OR),
}

_KEYWORDS = (
    "auto break case char const continue default do double else enum extern float for "
    "goto if inline int long register restrict return short signed sizeof static struct "
    "switch typedef union unsigned void volatile while bool true false main half"
)
C_KEYWORDS = frozenset(_KEYWORDS.split())

# Suffixes naming helper functions per dtype (tw_min_f32, tw_floordiv_i64, ...).
_SUFFIX = {"int": "i", "uint": "u", "float": "f", "bfloat": "f"}


class Expr:
    """Printed text and the precedence of its outermost operator."""

    __slots__ = ("prec", "text")

    def __init__(self, text: str, prec: int = PREC_ATOM) -> None:
        self.text = text
        self.prec = prec


class CLikePrinter:
    """Print one lowered function at a time; subclasses override the tables and hooks.

    Example::

        >>> printer = CPrinter()
        >>> printer.expr_text(x * 4 + 1)    # after the variable x is declared
        'x * 4 + 1'
    """

    target_name = "c"
    restrict = "__restrict__"
    helper_qualifier = "static inline"
    # dtype → the C type of a value in an expression.
    value_types: ClassVar[dict[str, str]] = {
        "bool": "bool",
        "int8": "int8_t",
        "int16": "int16_t",
        "int32": "int32_t",
        "int64": "int64_t",
        "uint8": "uint8_t",
        "uint16": "uint16_t",
        "uint32": "uint32_t",
        "uint64": "uint64_t",
        "float16": "half",
        "float32": "float",
        "float64": "double",
        "handle": "void*",
    }
    # dtype → the C type of a buffer element, where it differs from the value type.
    storage_types: ClassVar[dict[str, str]] = {}
    # math intrinsic → (float32 template, float64 template); {0}, {1} are the printed arguments.
    math_templates: ClassVar[dict[str, tuple[str, str]]] = {
        **{name: (name + "f({0})", name + "({0})") for name in (
            "exp", "exp2", "log", "log2", "log10", "log1p", "sqrt", "sin", "cos", "tan",
            "sinh", "cosh", "tanh", "asin", "acos", "atan", "asinh", "acosh", "atanh", "erf",
            "floor", "ceil", "trunc", "nearbyint")},
        **{name: (name + "f({0}, {1})", name + "({0}, {1})") for name in (
            "pow", "atan2", "fmod", "hypot", "copysign", "nextafter")},
        "ldexp": ("ldexpf({0}, {1})", "ldexp({0}, {1})"),
        "exp10": ("powf(10.0f, {0})", "pow(10.0, {0})"),
        "round": ("nearbyintf({0})", "nearbyint({0})"),
        "abs": ("fabsf({0})", "fabs({0})"),
        "fabs": ("fabsf({0})", "fabs({0})"),
        "rsqrt": ("(1.0f / sqrtf({0}))", "(1.0 / sqrt({0}))"),
        "sigmoid": ("(1.0f / (1.0f + expf(-({0}))))", "(1.0 / (1.0 + exp(-({0}))))"),
        "isnan": ("isnan({0})", "isnan({0})"),
        "isinf": ("isinf({0})", "isinf({0})"),
        "isfinite": ("isfinite({0})", "isfinite({0})"),
    }  # fmt: skip
    # Every other intrinsic this language prints: the intrinsic → a function of the printer and
    # the call returning the printed expression (a subclass extends the table).
    emitters: ClassVar[dict[Intrinsic, Emitter]] = {
        intrinsics.IF_THEN_ELSE: lambda p, e: p.ternary(*e.args),
        intrinsics.LIKELY: lambda p, e: p.expr(e.args[0]),
        intrinsics.CALL_EXTERN: lambda p, e: p.call_extern(e),
        intrinsics.REGION_DATA: lambda p, e: p.region_part(e, data=True),
        intrinsics.REGION_OFFSET: lambda p, e: p.region_part(e, data=False),
        intrinsics.ACCESS_PTR: lambda p, e: Expr(
            f"({p.expr_text(e.args[0])} + {p.operand(e.args[1], PREC_ADD)})", PREC_ATOM
        ),
        intrinsics.BITWISE_NOT: lambda p, e: Expr(
            f"~{p.operand(e.args[0], PREC_UNARY)}", PREC_UNARY),
        intrinsics.BITWISE_AND: _infix("&", 8),
        intrinsics.BITWISE_OR: _infix("|", 6),
        intrinsics.BITWISE_XOR: _infix("^", 7),
        intrinsics.SHIFT_LEFT: _infix("<<", 11),
        intrinsics.SHIFT_RIGHT: _infix(">>", 11),
    }  # fmt: skip
    # Intrinsics evaluated as statements for their effect (barriers, copies): the intrinsic →
    # a function of the printer and the call that emits the statement's lines.
    statement_emitters: ClassVar[dict[Intrinsic, StatementEmitter]] = {}
    # Words of the dialect (qualifiers, builtins) no variable may be named.
    reserved_words: ClassVar[frozenset[str]] = frozenset()

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.indent = 0
        self.names: dict[Var, str] = {}
        self.used: set[str] = set(C_KEYWORDS) | self.reserved_words
        self.helpers: dict[str, str] = {}  # name → definition, in first-use order
        self.nonneg: set[Var] = set()  # variables known to be >= 0
        self.value_arrays: set[Var] = set()  # local arrays holding values, not storage
        self.arrays: dict[Var, Buffer] = {}  # vector let variables → their lane arrays
        self.func_name = ""
        self._methods: dict[type, Callable[[PrimExpr], Expr]] = {}

    # ---- names ----------------------------------------------------------------------------

    def define(self, var: Var, hint: str | None = None) -> str:
        """Give ``var`` a C identifier unique in the function and return it."""
        base = "".join(c if c.isalnum() or c == "_" else "_" for c in (hint or var.name)) or "v"
        if base[0].isdigit() or base.startswith("tw_"):
            base = "v_" + base
        text, count = base, 0
        while text in self.used:
            count += 1
            text = f"{base}_{count}"
        self.used.add(text)
        self.names[var] = text
        return text

    def name_of(self, var: Var) -> str:
        if var not in self.names:
            raise CodegenError(f"{self.func_name}: variable {var.name} is used but not defined")
        return self.names[var]

    # ---- types ----------------------------------------------------------------------------

    def value_type(self, dtype: DataType) -> str:
        key = str(dtype.element)
        if key not in self.value_types:
            raise CodegenError(
                f"{self.func_name}: the {self.target_name} target has no type for {key}"
            )
        return self.value_types[key]

    def storage_type(self, dtype: DataType) -> str:
        if dtype.lanes != 1:
            raise CodegenError(
                f"{self.func_name}: buffers of vector type {dtype} are not supported by the "
                f"{self.target_name} target; use a scalar buffer and Ramp indices"
            )
        return self.storage_types.get(str(dtype.element)) or self.value_type(dtype)

    def load_value(self, text: str, dtype: DataType) -> Expr:
        """A loaded storage element as a value (C converts half-precision bits here)."""
        return Expr(text)

    def store_value(self, text: str, dtype: DataType) -> str:
        """A value as the storage element to write."""
        return text

    def round_value(self, result: Expr, dtype: DataType) -> Expr:
        """The result of arithmetic in ``dtype`` (C rounds half-precision results here)."""
        return result

    # ---- helpers emitted on demand ---------------------------------------------------------

    def helper(self, name: str, definition: str) -> str:
        self.helpers.setdefault(name, definition.replace("QUAL", self.helper_qualifier))
        return name

    def suffix(self, dtype: DataType) -> str:
        return _SUFFIX.get(dtype.code, "b") + str(dtype.bits)

    # ---- expressions ----------------------------------------------------------------------

    def expr(self, e: PrimExpr) -> Expr:
        cls = type(e)
        method = self._methods.get(cls)
        if method is None:
            for klass in cls.__mro__:
                method = getattr(self, f"expr_{klass.__name__}", None)
                if method is not None or klass is Node:
                    break
            if method is None:
                raise CodegenError(f"{self.func_name}: cannot print {cls.__name__}")
            self._methods[cls] = method
        return method(e)

    def expr_text(self, e: PrimExpr) -> str:
        return self.expr(e).text

    def operand(self, e: PrimExpr, prec: int, right: bool = False) -> str:
        """``e`` printed as an operand of an operator of precedence ``prec``."""
        out = self.expr(e)
        need = out.prec <= prec if right else out.prec < prec
        return f"({out.text})" if need else out.text

    def expr_Var(self, e: Var) -> Expr:
        return Expr(self.name_of(e))

    def expr_IntImm(self, e: IntImm) -> Expr:
        dt = e.dtype
        if dt.is_bool:
            return Expr("true" if e.value else "false")
        value = e.value
        suffix = ""
        if dt.is_uint and value > 2**31 - 1:
            suffix = "ULL" if value > 2**32 - 1 else "U"
        elif value > 2**31 - 1 or value < -(2**31):
            suffix = "LL"
        if dt.is_int and value == -(2**63):
            return Expr("(-9223372036854775807LL - 1)")
        text = f"{value}{suffix}"
        return Expr(text, PREC_UNARY if value < 0 else PREC_ATOM)

    def expr_FloatImm(self, e: FloatImm) -> Expr:
        dt = e.dtype
        value = e.value
        single = dt.bits < 64
        if math.isnan(value):
            return Expr("NAN")
        if math.isinf(value):
            return Expr("INFINITY" if value > 0 else "-INFINITY", PREC_ATOM if value > 0 else 15)
        if dt.bits == 16:  # the constant as the half type holds it
            half = numpy_scalar_type(dt.element)
            value = float(np.array(value).astype(half))
        elif dt.is_float8:
            value = float(np.array(value).astype(numpy_scalar_type(dt)))
        text = str(np.float32(value)) if single else repr(float(value))
        if "e" not in text and "." not in text:
            text += ".0"
        if single:
            text += "f"
        return Expr(text, PREC_UNARY if text.startswith("-") else PREC_ATOM)

    def expr_StringImm(self, e: StringImm) -> Expr:
        escaped = e.value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
        return Expr(f'"{escaped}"')

    def expr_Cast(self, e: Cast) -> Expr:
        if e.dtype.lanes != 1:
            raise self.vector_error(e)
        text = f"({self.value_type(e.dtype)}){self.operand(e.value, PREC_UNARY)}"
        out = Expr(text, PREC_UNARY)
        if e.dtype.is_float and (e.dtype.bits == 16 or e.dtype.is_float8):
            return self.round_value(out, e.dtype)
        return out

    def expr_BinaryOp(self, e: BinaryOp) -> Expr:
        dt = e.dtype
        if dt.lanes != 1:
            raise self.vector_error(e)
        if type(e) in _INFIX:
            sym, prec = _INFIX[type(e)]
            text = f"{self.operand(e.a, prec)} {sym} {self.operand(e.b, prec, right=True)}"
            return self.round_value(Expr(text, prec), dt)
        if isinstance(e, Div):
            text = f"{self.operand(e.a, PREC_MUL)} / {self.operand(e.b, PREC_MUL, right=True)}"
            return self.round_value(Expr(text, PREC_MUL), dt)
        if isinstance(e, Mod) and not dt.is_float:
            text = f"{self.operand(e.a, PREC_MUL)} % {self.operand(e.b, PREC_MUL, right=True)}"
            return Expr(text, PREC_MUL)
        if isinstance(e, Mod):
            return self.round_value(self.call_intrinsic("fmod", dt, (e.a, e.b)), dt)
        if isinstance(e, FloorDiv | FloorMod):
            return self.floor_div_mod(e)
        if isinstance(e, Min | Max):
            return self.min_max(e)
        raise CodegenError(f"{self.func_name}: cannot print {type(e).__name__}")

    def expr_CmpOp(self, e: CmpOp) -> Expr:
        if e.dtype.lanes != 1:
            raise self.vector_error(e)
        sym, prec = _INFIX[type(e)]
        a, b = e.a, e.b
        # Nested logical operators are parenthesized for the reader (and -Wparentheses).
        tight = PREC_AND + 1 if prec == PREC_OR else prec
        return Expr(f"{self.operand(a, tight)} {sym} {self.operand(b, tight, right=True)}", prec)

    def expr_Not(self, e: Not) -> Expr:
        return Expr(f"!{self.operand(e.a, PREC_UNARY)}", PREC_UNARY)

    def expr_Select(self, e: Select) -> Expr:
        if e.dtype.lanes != 1:
            raise self.vector_error(e)
        return self.ternary(e.condition, e.true_value, e.false_value)

    def ternary(self, cond: PrimExpr, then: PrimExpr, other: PrimExpr) -> Expr:
        c = self.operand(cond, PREC_COND + 1)
        t = self.operand(then, PREC_COND + 1)
        f = self.operand(other, PREC_COND)
        return Expr(f"{c} ? {t} : {f}", PREC_COND)

    def expr_BufferLoad(self, e: BufferLoad) -> Expr:
        if len(e.indices) != 1:
            raise CodegenError(
                f"{self.func_name}: buffer {e.buffer.name} is loaded with {len(e.indices)} "
                "indices; the code generator takes flattened (1-D) accesses"
            )
        if e.dtype.lanes != 1:
            raise self.vector_error(e)
        text = f"{self.name_of(e.buffer.data)}[{self.expr_text(e.indices[0])}]"
        if e.buffer.data in self.value_arrays:
            return Expr(text)
        return self.load_value(text, e.buffer.dtype)

    def expr_Ramp(self, e: Ramp) -> Expr:
        raise self.vector_error(e)

    def expr_Broadcast(self, e: Broadcast) -> Expr:
        raise self.vector_error(e)

    def expr_Let(self, e: Let) -> Expr:
        if e.var.dtype.lanes != 1:
            raise self.vector_error(e)
        value = self.expr_text(e.value)
        name = self.define(e.var)
        if self.is_nonneg(e.value):
            self.nonneg.add(e.var)
        ctype = self.value_type(e.var.dtype)
        # A GNU statement expression: C has no let-expression.
        return Expr(f"({{ {ctype} {name} = {value}; {self.expr_text(e.body)}; }})")

    def expr_Call(self, e: Call) -> Expr:
        if e.dtype.lanes != 1:
            raise self.vector_error(e)
        intrinsic = intrinsics.lookup_or_none(e.op)
        emitter = self.emitters.get(intrinsic) if intrinsic is not None else None
        if emitter is None and intrinsic is not None and intrinsic.name in self.math_templates:
            emitter = CLikePrinter.emit_math
        if emitter is None:
            raise CodegenError(
                f"{self.func_name}: intrinsic {e.op!r} is not supported by the {self.target_name} "
                "target"
            )
        return emitter(self, e)

    def import_sources(self, body: Stmt) -> None:
        """Put the C of every ``pragma_import_c`` loop annotation in ``body`` (the functions
        ``T.call_extern`` calls) before the function, once each."""

        def visit(node: object) -> None:
            if isinstance(node, For):
                source = dict(node.annotations).get("pragma_import_c")
                if isinstance(source, str):
                    self.helper(f"import_c {source}", source)

        post_order_visit(body, visit)

    def region_part(self, e: Call, data: bool) -> Expr:
        """A lowered match buffer's storage (the region's buffer) or element offset (the flat
        index of its first element)."""
        first = e.args[0]
        if not isinstance(first, BufferLoad) or len(first.indices) != 1:
            raise CodegenError(f"{self.func_name}: {e.op} needs a flattened buffer element")
        return self.expr(first.buffer.data if data else first.indices[0])

    def call_extern(self, e: Call) -> Expr:
        """``name(args)`` for ``T.call_extern``: the function comes from a ``pragma_import_c``
        source (or the linker)."""
        name = e.args[0]
        if not isinstance(name, StringImm):
            raise CodegenError(f"{self.func_name}: call_extern needs a function name first")
        arguments = ", ".join(self.expr_text(a) for a in e.args[1:])
        return Expr(f"{name.value}({arguments})", PREC_ATOM)

    def emit_math(self, e: Call) -> Expr:
        name = e.op.removeprefix("tir.")
        if name in ("abs", "fabs") and not e.dtype.is_float:
            return self.int_abs(e)
        return self.round_value(self.call_intrinsic(name, e.dtype, e.args), e.dtype)

    def call_intrinsic(self, name: str, dtype: DataType, args: tuple[PrimExpr, ...]) -> Expr:
        single, double = self.math_templates[name]
        template = double if args and args[0].dtype.bits == 64 else single
        return Expr(template.format(*(self.expr_text(a) for a in args)))

    def vector_error(self, e: PrimExpr) -> CodegenError:
        return CodegenError(
            f"{self.func_name}: a {e.dtype} {type(e).__name__} appears outside a vector store; "
            "vector values may only be stored or bound by a let"
        )

    # ---- integer helpers --------------------------------------------------------------------

    def is_nonneg(self, e: PrimExpr) -> bool:
        """Whether ``e`` is provably >= 0 from constants, loop bounds and sizes."""
        if isinstance(e, IntImm):
            return e.value >= 0
        if e.dtype.is_uint:
            return True
        if isinstance(e, Var):
            return e in self.nonneg
        if isinstance(e, Add | Mul | Div | FloorDiv | Min):
            return self.is_nonneg(e.a) and self.is_nonneg(e.b)
        if isinstance(e, Max):
            return self.is_nonneg(e.a) or self.is_nonneg(e.b)
        if isinstance(e, FloorMod):
            return isinstance(e.b, IntImm) and e.b.value > 0
        if isinstance(e, Cast):
            return e.dtype.is_integer and e.value.dtype.is_integer and self.is_nonneg(e.value)
        return False

    def floor_div_mod(self, e: FloorDiv | FloorMod) -> Expr:
        dt = e.dtype
        is_div = isinstance(e, FloorDiv)
        if dt.is_float:
            a, b = self.expr_text(e.a), self.expr_text(e.b)
            fl = "floor" if dt.bits == 64 else "floorf"
            text = f"{fl}({a} / {b})" if is_div else f"({a} - {fl}({a} / {b}) * {b})"
            return self.round_value(Expr(text), dt)
        plain = dt.is_uint or (isinstance(e.b, IntImm) and e.b.value > 0 and self.is_nonneg(e.a))
        if plain:
            sym = "/" if is_div else "%"
            return Expr(
                f"{self.operand(e.a, PREC_MUL)} {sym} {self.operand(e.b, PREC_MUL, True)}",
                PREC_MUL,
            )
        ctype = self.value_type(dt)
        kind = "floordiv" if is_div else "floormod"
        name = f"tw_{kind}_{self.suffix(dt)}"
        if is_div:
            body = (
                f"  {ctype} q = a / b;\n"
                "  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;\n"
            )
        else:
            body = f"  {ctype} r = a % b;\n  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;\n"
        self.helper(name, f"QUAL {ctype} {name}({ctype} a, {ctype} b) {{\n{body}}}\n")
        return Expr(f"{name}({self.expr_text(e.a)}, {self.expr_text(e.b)})")

    def min_max(self, e: Min | Max) -> Expr:
        kind = "min" if isinstance(e, Min) else "max"
        ctype = self.value_type(e.dtype)
        name = f"tw_{kind}_{self.suffix(e.dtype)}"
        cmp = "<" if kind == "min" else ">"
        self.helper(
            name,
            f"QUAL {ctype} {name}({ctype} a, {ctype} b) {{ return a {cmp} b ? a : b; }}\n",
        )
        return Expr(f"{name}({self.expr_text(e.a)}, {self.expr_text(e.b)})")

    def int_abs(self, e: Call) -> Expr:
        ctype = self.value_type(e.dtype)
        name = f"tw_abs_{self.suffix(e.dtype)}"
        self.helper(name, f"QUAL {ctype} {name}({ctype} a) {{ return a < 0 ? -a : a; }}\n")
        return Expr(f"{name}({self.expr_text(e.args[0])})")

    # ---- statement output -----------------------------------------------------------------

    def emit(self, line: str) -> None:
        self.lines.append("  " * self.indent + line if line else "")

    def stmt(self, s: Stmt) -> None:
        method = getattr(self, f"stmt_{type(s).__name__}", None)
        if method is None:
            raise CodegenError(
                f"{self.func_name}: {type(s).__name__} must be lowered before code generation "
                "(build with tw.build or lower with tw.lower first)"
            )
        method(s)

    def block(self, s: Stmt) -> None:
        """``s`` one indentation level deeper."""
        self.indent += 1
        self.stmt(s)
        self.indent -= 1

    def stmt_SeqStmt(self, s: SeqStmt) -> None:
        for item in s.seq:
            self.stmt(item)

    def stmt_AttrStmt(self, s: AttrStmt) -> None:
        self.stmt(s.body)

    def stmt_Evaluate(self, s: Evaluate) -> None:
        if isinstance(s.value, IntImm):
            return
        if isinstance(s.value, Call):
            intrinsic = intrinsics.lookup_or_none(s.value.op)
            statement = self.statement_emitters.get(intrinsic) if intrinsic else None
            if statement is not None:
                statement(self, s.value)
                return
        self.emit(f"{self.expr_text(s.value)};")

    def stmt_Prefetch(self, s: Prefetch) -> None:
        pass  # a hint only; prefetching is left to the compiler and the hardware

    def stmt_BufferRealize(self, s: BufferRealize) -> None:
        raise CodegenError(
            f"{self.func_name}: T.realize of {s.buffer.name} (TVM's pre-schedule stage IR) is "
            "not lowered; build with tw.build, or declare the buffer with T.alloc_buffer"
        )

    def stmt_AllocateConst(self, s: AllocateConst) -> None:
        raise CodegenError(
            f"{self.func_name}: the {self.target_name} target has no constant buffers "
            f"(T.allocate_const {s.buffer.name}); pass the values as a parameter buffer"
        )

    def stmt_DeclBuffer(self, s: DeclBuffer) -> None:
        # A view of storage that exists: accesses name its data variable already.
        self.stmt(s.body)

    def stmt_While(self, s: While) -> None:
        self.emit(f"while ({self.expr_text(s.condition)}) {{")
        self.block(s.body)
        self.emit("}")

    def stmt_IfThenElse(self, s: IfThenElse) -> None:
        self.emit(f"if ({self.expr_text(s.condition)}) {{")
        self.block(s.then_case)
        else_case = s.else_case
        while isinstance(else_case, IfThenElse):
            self.emit(f"}} else if ({self.expr_text(else_case.condition)}) {{")
            self.block(else_case.then_case)
            else_case = else_case.else_case
        if else_case is not None:
            self.emit("} else {")
            self.block(else_case)
        self.emit("}")

    def stmt_LetStmt(self, s: LetStmt) -> None:
        lanes = s.var.dtype.lanes
        if lanes == 1:
            value = self.expr_text(s.value)
            if self.is_nonneg(s.value):
                self.nonneg.add(s.var)
            name = self.define(s.var)
            self.emit(f"const {self.value_type(s.var.dtype)} {name} = {value};")
            self.stmt(s.body)
            return
        # A vector value lives in a local array of its lanes.
        name = self.define(s.var)
        self.emit(f"{self.value_type(s.var.dtype)} {name}[{lanes}];")
        array = decl_buffer((lanes,), s.var.dtype.element, name, "local", data=s.var)
        self.value_arrays.add(s.var)
        self.lane_loop(lanes, lambda lane: f"{name}[{self.name_of(lane)}] = "
                       f"{self.expr_text(self.lanes(s.value, lane))};")  # fmt: skip
        self.arrays[s.var] = array
        self.stmt(s.body)

    def stmt_BufferStore(self, s: BufferStore) -> None:
        if len(s.indices) != 1:
            raise CodegenError(
                f"{self.func_name}: buffer {s.buffer.name} is stored with {len(s.indices)} "
                "indices; the code generator takes flattened (1-D) accesses"
            )
        index = s.indices[0]
        lanes = max(index.dtype.lanes, s.value.dtype.lanes)
        target = self.name_of(s.buffer.data)
        if lanes == 1:
            value = self.store_value(self.expr_text(s.value), s.buffer.dtype)
            self.emit(f"{target}[{self.expr_text(index)}] = {value};")
            return
        if index.dtype.lanes != lanes:
            raise CodegenError(
                f"{self.func_name}: store to {s.buffer.name} writes {s.value.dtype.lanes} "
                f"lanes at {index.dtype.lanes} indices"
            )

        def store(lane: Var, value: str) -> str:
            position = self.expr_text(self.lanes(index, lane))
            return f"{target}[{position}] = {self.store_value(value, s.buffer.dtype)};"

        if not self.reads_data(s.value, s.buffer.data):
            self.lane_loop(
                lanes, lambda lane: store(lane, self.expr_text(self.lanes(s.value, lane)))
            )
            return
        # The value reads the buffer it overwrites: every lane reads before any lane writes.
        tmp = self.define(Var(f"{target}_lanes", s.value.dtype))
        self.emit(f"{self.value_type(s.value.dtype)} {tmp}[{lanes}];")
        self.lane_loop(lanes, lambda lane: f"{tmp}[{self.name_of(lane)}] = "
                       f"{self.expr_text(self.lanes(s.value, lane))};")  # fmt: skip
        self.lane_loop(lanes, lambda lane: store(lane, f"{tmp}[{self.name_of(lane)}]"))

    def lanes(self, e: PrimExpr, lane: Var) -> PrimExpr:
        return lane_of(e, lane, self.arrays)

    def lane_loop(self, lanes: int, body: Callable[[Var], str]) -> None:
        """A loop over the lanes of a vector statement, one line of body per lane."""
        lane = Var("lane", int32)
        name = self.define(lane)
        self.nonneg.add(lane)
        self.emit(f"for ({self.value_type(int32)} {name} = 0; {name} < {lanes}; ++{name}) {{")
        self.indent += 1
        self.emit(body(lane))
        self.indent -= 1
        self.emit("}")

    @staticmethod
    def reads_data(e: PrimExpr, data: Var) -> bool:
        found = False

        def visit(node: Node) -> None:
            nonlocal found
            if isinstance(node, BufferLoad) and node.buffer.data is data:
                found = True

        post_order_visit(e, visit)
        return found

    def loop_header(self, s: For) -> str:
        var = self.define(s.loop_var)
        if self.is_nonneg(s.min):
            self.nonneg.add(s.loop_var)
        ctype = self.value_type(s.loop_var.dtype)
        start = self.expr_text(s.min)
        if isinstance(s.min, IntImm) and s.min.value == 0:
            stop = self.expr_text(s.extent)
        else:
            stop = self.expr_text(op.add(s.min, s.extent))
        return f"for ({ctype} {var} = {start}; {var} < {stop}; ++{var}) {{"

    def stmt_For(self, s: For) -> None:
        self.emit(self.loop_header(s))
        self.block(s.body)
        self.emit("}")
