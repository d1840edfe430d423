"""TVM's object API on IR nodes: ``same_as``, ``Block.name_hint``, ``SeqStmt`` as a sequence,
``ForKind`` numbers, ``IntImm``/``FloatImm`` with the dtype first, ``PrimExpr.ty``. Expected
values are what TVM gives for the same calls."""

import pytest

import tilewright as tvm
from tilewright import tir
from tilewright.ir import (
    Evaluate,
    FloatImm,
    IntImm,
    PrimType,
    SeqStmt,
    Var,
    const,
    dtype,
    pre_order_visit,
    structural_equal,
)

_SCALE = """
@T.prim_func
def main(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
    for i in T.unroll(8):
        with T.block("scale"):
            vi = T.axis.spatial(8, i)
            B[vi] = A[vi] * T.float32(2)
"""


def _stmts(n: int) -> list[Evaluate]:
    return [Evaluate(const(k)) for k in range(n)]


def test_same_as_is_identity_not_structure():
    x = Var("x", dtype("int32"))
    y = Var("x", dtype("int32"))
    assert x.same_as(x)
    assert not x.same_as(y)
    assert structural_equal(x + 1, y + 1) and not (x + 1).same_as(x + 1)
    assert not x.same_as(1)


def test_block_name_hint_is_the_name():
    func = tvm.script.from_source(_SCALE)
    sch = tir.Schedule(func)
    block = sch.get(sch.get_block("scale"))
    assert block.name_hint == "scale"
    assert block.name_hint == block.name


def test_seq_stmt_len_and_indexing():
    a, b, c = _stmts(3)
    seq = SeqStmt((a, b, c))
    assert len(seq) == 3
    assert seq[0] is a and seq[2] is c and seq[-1] is c
    assert [s for s in seq] == [a, b, c]
    with pytest.raises(IndexError):
        seq[3]


def test_seq_stmt_flattens_nested_sequences_on_construction():
    a, b, c, d = _stmts(4)
    nested = tir.SeqStmt([a, tir.SeqStmt([b, SeqStmt((c, d))])])
    # TVM: tir.SeqStmt([a, tir.SeqStmt([b, tir.SeqStmt([c, d])])]).seq == [a, b, c, d]
    assert nested.seq == (a, b, c, d)
    assert len(nested) == 4 and nested[3] is d
    deep = tir.SeqStmt([SeqStmt((a, SeqStmt((b, SeqStmt((c, d))))))])
    assert deep.seq == (a, b, c, d)
    # The list is held as a tuple, so the node stays immutable.
    assert isinstance(tir.SeqStmt([a, b]).seq, tuple)


def test_seq_stmt_built_from_a_tuple_keeps_its_groups():
    # Passes build the tuple form; a nested sequence stays one statement (a lowered
    # block's statements, one software-pipeline stage).
    a, b, c = _stmts(3)
    inner = SeqStmt((b, c))
    grouped = SeqStmt((a, inner))
    assert len(grouped) == 2 and grouped[1] is inner


def test_for_kind_is_an_int_enum_numbered_as_tvm():
    kinds = tir.ForKind
    assert [int(k) for k in kinds] == [0, 1, 2, 3, 4]
    assert kinds.SERIAL == 0 and kinds.PARALLEL == 1 and kinds.VECTORIZED == 2
    assert kinds.UNROLLED == 3 and kinds.THREAD_BINDING == 4
    assert kinds(3) is kinds.UNROLLED
    func = tvm.script.from_source(_SCALE)
    loops: list[tir.For] = []
    pre_order_visit(func, lambda n: loops.append(n) if isinstance(n, tir.For) else None)
    assert [loop.kind for loop in loops] == [3]
    assert loops[0].kind is kinds.UNROLLED
    # The printed spelling stays TVMScript's.
    assert "T.unroll(8)" in func.script()


def test_int_imm_with_the_dtype_first_as_tvm():
    ten = tir.IntImm("int64", 10)
    assert ten.value == 10 and ten.dtype == dtype("int64")
    assert str(ten.dtype) == "int64"
    assert tir.IntImm(dtype("int8"), -3).value == -3
    # The internal order (value, dtype) keeps working, and both build equal nodes.
    assert structural_equal(IntImm(10, dtype("int64")), ten)
    assert IntImm(7, "int32").dtype == dtype("int32")  # a string dtype is parsed
    assert not structural_equal(tir.IntImm("int32", 10), ten)


def test_float_imm_with_the_dtype_first_as_tvm():
    half = tir.FloatImm("float32", 0.5)
    assert half.value == 0.5 and half.dtype == dtype("float32")
    assert structural_equal(FloatImm(0.5, dtype("float32")), half)
    assert float(tir.FloatImm("float16", 1.25)) == 1.25


def test_imm_without_a_number_is_refused():
    with pytest.raises(TypeError, match="needs a number and a dtype"):
        IntImm("int32", "int64")


def test_prim_expr_ty_is_its_prim_type():
    x = Var("x", dtype("int64"))
    assert (x + 1).ty == PrimType("int64")
    assert (x + 1).ty.dtype == dtype("int64")
    assert (x < 3).ty == PrimType("bool")
    assert tir.FloatImm("float16", 1.0).ty == tvm.ir.PrimType("float16")
    assert x.ty != PrimType("int32")
