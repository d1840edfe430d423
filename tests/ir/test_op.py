import pytest

from tilewright.ir import (
    Add,
    Broadcast,
    Cast,
    FloatImm,
    FloorDiv,
    FloorMod,
    IntImm,
    Var,
    dtype,
    op,
)


def test_python_constants_take_the_other_operands_dtype():
    n = Var("n", dtype("int64"))
    e = n + 1
    assert isinstance(e, Add) and e.b.dtype == dtype("int64")
    f = Var("f", dtype("float16"))
    assert (f * 2).b.dtype == dtype("float16")
    assert isinstance((f * 2).b, FloatImm)


def test_mixed_int_float_promotes_to_float():
    i = Var("i", dtype("int32"))
    e = i + 1.5
    assert e.dtype == dtype("float32")
    assert isinstance(e.a, Cast)


def test_narrow_integer_widens():
    a, b = Var("a", dtype("int32")), Var("b", dtype("int64"))
    assert (a + b).dtype == dtype("int64")


def test_scalar_broadcasts_to_vector():
    v = Var("v", dtype("float32x4"))
    s = Var("s", dtype("float32"))
    e = v * s
    assert e.dtype == dtype("float32x4")
    assert isinstance(e.b, Broadcast)


def test_floor_and_python_operators():
    i = Var("i", dtype("int32"))
    assert isinstance(i // 8, FloorDiv)
    assert isinstance(i % 8, FloorMod)
    assert (i < 4).dtype == dtype("bool")


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (lambda: op.add(3, 4), 7),
        (lambda: op.floordiv(-7, 2), -4),
        (lambda: op.floormod(-7, 2), 1),
        (lambda: op.truncdiv(-7, 2), -3),
        (lambda: op.truncmod(-7, 2), -1),
        (lambda: op.min_value(3, -1), -1),
        (lambda: op.lt(1, 2), 1),
    ],
)
def test_constants_fold(make, expected):
    value = make()
    assert isinstance(value, IntImm)
    assert value.value == expected


def test_logical_ops_simplify_constants():
    c = Var("c", dtype("bool"))
    assert op.logical_and(True, c) is c
    assert op.logical_or(c, False) is c
    assert op.logical_not(op.const(True)).value == 0


def test_math_call_promotes_integers():
    i = Var("i", dtype("int32"))
    call = op.math_call("exp", i)
    assert call.dtype == dtype("float32")
    assert call.op == "exp"


def test_cast_of_constant_folds():
    assert op.cast(3, "float32").value == 3.0
    assert isinstance(op.cast(Var("x", dtype("int32")), "float32"), Cast)


def test_convert_rejects_unknown_values():
    with pytest.raises(TypeError, match="cannot convert"):
        op.convert(object())
