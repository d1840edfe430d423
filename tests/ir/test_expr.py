"""Truth values of expressions: constants have one, symbolic expressions raise."""

import pytest

from tilewright.ir import EQ, GE, GT, LE, LT, NE, And, FloatImm, IntImm, Not, Or, Var, dtype, op
from tilewright.ir.stmt import Evaluate

x = Var("x", dtype("int32"))
y = Var("y", dtype("int32"))


@pytest.mark.parametrize(
    ("expr", "kind"),
    [
        (op.eq(x, 5), EQ),
        (op.ne(x, 5), NE),
        (x < 5, LT),
        (x <= 5, LE),
        (x > 5, GT),
        (x >= 5, GE),
        ((x > 5) & (y < 3), And),
        ((x > 5) | (y < 3), Or),
        (~(x > 5), Not),
    ],
)
def test_bool_of_a_symbolic_comparison_raises(expr, kind):
    assert isinstance(expr, kind)
    with pytest.raises(TypeError, match=r"truth value of the symbolic expression .* is unknown"):
        bool(expr)


def test_the_message_shows_the_expression_and_what_to_use_instead():
    with pytest.raises(TypeError) as info:
        bool(x > 5)
    message = str(info.value)
    assert "`x > 5`" in message
    assert "tilewright.arith.Analyzer().can_prove" in message
    assert "T.if_then_else" in message


def test_python_control_flow_on_a_comparison_raises():
    with pytest.raises(TypeError, match="truth value"):
        if x > 5:
            pass
    with pytest.raises(TypeError, match="truth value"):
        _ = (x > 5) and (y > 5)
    with pytest.raises(TypeError, match="truth value"):
        _ = not x > 5
    with pytest.raises(TypeError, match="truth value"):
        max(x, y)  # compares with `>` and asks for its truth value


@pytest.mark.parametrize("expr", [x, x + 1, op.select(x > 0, x, y)], ids=["var", "add", "select"])
def test_other_symbolic_expressions_have_no_truth_value_either(expr):
    # As in TVM: only constants have one; `if expr:` is never a None check on an expression.
    with pytest.raises(TypeError, match="truth value"):
        bool(expr)


def test_comparisons_of_constants_fold_to_a_truth_value():
    assert isinstance(op.gt(3, 5), IntImm)
    assert bool(op.gt(3, 5)) is False
    assert bool(op.lt(3, 5)) is True
    assert bool(op.logical_and(op.lt(3, 5), op.gt(3, 5))) is False
    assert bool(IntImm(0, dtype("int32"))) is False
    assert bool(IntImm(-2, dtype("int32"))) is True
    assert bool(FloatImm(0.0, dtype("float32"))) is False
    assert bool(FloatImm(0.5, dtype("float32"))) is True


def test_nodes_stay_usable_as_keys_and_statements_stay_true():
    cond = x > 5
    assert {cond: 1}[cond] == 1
    assert cond in {cond} and cond in [y, cond]
    assert Evaluate(cond)  # statements, buffers and other nodes keep Python's default
