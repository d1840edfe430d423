"""Parser expressions: operators, dtype constructors, casts, math and vector functions."""

import math

import pytest

from tilewright.ir import (
    EQ,
    GE,
    GT,
    LE,
    LT,
    NE,
    Add,
    And,
    Broadcast,
    BufferLoad,
    Call,
    Cast,
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
    Not,
    Or,
    Ramp,
    Select,
    StringImm,
    Sub,
    Var,
)
from tilewright.ir.intrinsics import BINARY_MATH, UNARY_MATH
from tilewright.script import from_source
from tilewright.script import tir as T

HEADER = '@T.prim_func\ndef f(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "int32"), '
HEADER += "n: T.int32, m: T.int32):\n"


def value_of(expr_text: str, target: str = "A[0]"):
    """The stored value of `target = expr_text` parsed in a small function."""
    func = from_source(HEADER + f"    {target} = {expr_text}\n")
    return func.body.value, func


@pytest.mark.parametrize(
    ("text", "cls"),
    [
        ("n + m", Add),
        ("n - m", Sub),
        ("n * m", Mul),
        ("n // m", FloorDiv),
        ("n % m", FloorMod),
        ("T.truncdiv(n, m)", Div),
        ("T.truncmod(n, m)", Mod),
        ("T.floordiv(n, m)", FloorDiv),
        ("T.floormod(n, m)", FloorMod),
        ("T.max(n, m)", Max),
        ("T.min(n, m)", Min),
    ],
)
def test_integer_operators(text, cls):
    value, func = value_of(text, "B[0]")
    assert type(value) is cls
    assert value.a is func.params[2] and value.b is func.params[3]


def test_true_division_of_floats():
    value, _ = value_of("A[1] / A[2]")
    assert type(value) is Div and isinstance(value.a, BufferLoad)


@pytest.mark.parametrize(
    ("text", "cls"),
    [("n == m", EQ), ("n != m", NE), ("n < m", LT), ("n <= m", LE), ("n > m", GT), ("n >= m", GE)],
)
def test_comparisons(text, cls):
    value, _ = value_of(f"T.Select({text}, 1.0, 2.0)")
    assert type(value.condition) is cls


def test_chained_comparison_and_boolean_operators():
    value, _ = value_of("T.Select(0 <= n < m, 1.0, 2.0)")
    cond = value.condition
    assert type(cond) is And and type(cond.a) is LE and type(cond.b) is LT
    value, _ = value_of("T.Select(n < 1 or not m > 2, 1.0, 2.0)")
    assert type(value.condition) is Or and type(value.condition.b) is Not


def test_ternary_is_select_and_python_ternary_folds():
    value, _ = value_of("A[1] if n < m else A[2]")
    assert type(value) is Select and type(value.condition) is LT
    value, _ = value_of("A[1] if 1 < 2 else A[2]")
    assert isinstance(value, BufferLoad) and value.indices[0].value == 1


def test_python_arithmetic_on_constants_stays_python():
    value, _ = value_of("A[4 * 2 + 1 - 3 // 2]")
    assert value.indices[0].value == 8


def test_dtype_constructors():
    value, _ = value_of("T.float32(0)")
    assert type(value) is FloatImm and value.value == 0.0 and str(value.dtype) == "float32"
    value, _ = value_of("T.float32('inf')")
    assert math.isinf(value.value)
    value, _ = value_of("T.int32(T.int64(5))", "B[0]")
    assert type(value) is IntImm and str(value.dtype) == "int32"
    value, _ = value_of("T.float32(n)")
    assert type(value) is Cast and str(value.dtype) == "float32"
    for name in ("int8", "int16", "int64", "uint8", "uint16", "uint32", "uint64"):
        c = getattr(T, name)(3)
        assert type(c) is IntImm and str(c.dtype) == name
    for name in ("float16", "bfloat16", "float64"):
        c = getattr(T, name)(0.5)
        assert type(c) is FloatImm and str(c.dtype) == name
    assert T.bool(True).value == 1 and str(T.bool(True).dtype) == "bool"


def test_cast_spellings():
    value, _ = value_of('T.Cast("float32", n)')
    assert type(value) is Cast and value.value.name == "n"
    value, _ = value_of('T.cast(n, "float32")')
    assert type(value) is Cast
    # T.Cast keeps a Cast of a constant as written; T.cast folds it.
    assert type(T.Cast("float32", IntImm(3, T.int32.type))) is Cast
    assert type(T.cast(3, "float32")) is FloatImm


@pytest.mark.parametrize("name", UNARY_MATH)
def test_unary_math(name):
    value, _ = value_of(f"T.{name}(A[1])")
    assert type(value) is Call and value.op == name and str(value.dtype) == "float32"


@pytest.mark.parametrize("name", BINARY_MATH)
def test_binary_math(name):
    value, _ = value_of(f"T.{name}(A[1], A[2])")
    assert type(value) is Call and value.op == name and len(value.args) == 2


def test_if_then_else_and_call_intrin():
    value, _ = value_of("T.if_then_else(n < m, A[1], 0.0)")
    assert type(value) is Call and value.op == "if_then_else"
    assert type(value.args[2]) is FloatImm and str(value.args[2].dtype) == "float32"
    value, _ = value_of('T.call_intrin("float32", "my_op", A[1], "tag")')
    assert value.op == "my_op" and type(value.args[1]) is StringImm


def test_ramp_broadcast_and_vector_load():
    func = from_source(HEADER + "    A[T.Ramp(0, 1, 4)] = T.Broadcast(T.float32(1), 4)\n")
    store = func.body
    assert type(store.indices[0]) is Ramp and store.indices[0].lanes == 4
    assert type(store.value) is Broadcast and store.value.lanes == 4


def test_let_expression_both_spellings():
    text = HEADER + "    x = T.int32()\n    B[0] = T.Let(x + 1, where={x: n})\n"
    value = from_source(text).body.value
    assert type(value) is Let and value.var.name == "x" and value.value.name == "n"
    text = HEADER + "    x = T.int32()\n    B[0] = T.let(x, n, x * 2)\n"
    value = from_source(text).body.value
    assert type(value) is Let and type(value.body) is Mul


def test_buffer_region_and_negative_index():
    value, _ = value_of("A[-n + 3]")
    assert type(value.indices[0]) is Add
    region = T.reads(T.Buffer((4, 4), "float32").make("X")[0:2, 1])
    (r,) = region.regions
    assert [x.extent.value for x in r.region] == [2, 1]


def test_pow_operator_on_expressions_and_python_numbers():
    value, _ = value_of("A[1] ** 2.0")
    assert type(value) is Call and value.op == "pow"
    value, _ = value_of("A[2 ** 3]")
    assert value.indices[0].value == 8


def test_closure_values_and_helper_functions():
    offset = 2

    def shifted(x):
        return x + offset

    @T.prim_func
    def f(A: T.Buffer((16,), "float32")):
        for i in range(8):
            A[shifted(i)] = A[i]

    index = f.body.body.indices[0]
    assert type(index) is Add and index.b.value == 2 and isinstance(index.a, Var)


def test_range_and_iter_var_attribute_values():
    text = HEADER + (
        "    v = T.int32()\n"
        '    with T.attr(T.iter_var(v, T.Range(2, 10), "reduce"), "thread_extent", n):\n'
        "        B[0] = v\n"
    )
    attr = from_source(text).body
    iv = attr.node
    assert iv.var.name == "v" and (iv.dom.min.value, iv.dom.extent.value) == (2, 8)
    assert iv.kind.value == "reduce" and attr.body.value is iv.var
    with pytest.raises(TypeError, match=r"T.iter_var: kind is one of spatial"):
        T.iter_var(Var("x", T.int32.type), T.Range(4), "bogus")
