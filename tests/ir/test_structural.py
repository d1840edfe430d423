import pytest

import tilewright as tw
from tilewright.ir import (
    BufferStore,
    For,
    ForKind,
    IRModule,
    PrimFunc,
    Var,
    assert_structural_equal,
    const,
    decl_buffer,
    dtype,
    find_mismatch,
    structural_equal,
    structural_hash,
)


def _loop(name="i", buf_name="A", extent=16, value=1.0):
    i = Var(name, dtype("int32"))
    a = decl_buffer((16,), "float32", buf_name)
    body = BufferStore(a, a[i] + value, (i,))
    loop = For(i, const(0), const(extent), ForKind.SERIAL, body)
    handle = Var(buf_name, dtype("handle"))
    return PrimFunc((handle,), loop, ((handle, a),))


def test_equal_up_to_renaming():
    a, b = _loop("i", "A"), _loop("j", "B")
    assert structural_equal(a, b)
    assert structural_hash(a) == structural_hash(b)


def test_function_names_are_hints_like_variable_names():
    a, b = _loop().replace(name="kernel"), _loop().replace(name="other")
    assert structural_equal(a, b)
    assert structural_hash(a) == structural_hash(b)


def test_different_constant_is_unequal_and_reported():
    a, b = _loop(extent=16), _loop(extent=8)
    assert not structural_equal(a, b)
    mismatch = find_mismatch(a, b)
    assert mismatch is not None and mismatch.path.endswith("extent.value")
    assert structural_hash(a) != structural_hash(b)


def test_variable_correspondence_must_be_one_to_one():
    x, y = Var("x", dtype("int32")), Var("y", dtype("int32"))
    assert structural_equal(x + x, y + y)
    assert not structural_equal(x + y, y + y)
    assert not structural_equal(x + x, x + y)


def test_dtype_of_variables_matters():
    assert not structural_equal(Var("x", dtype("int32")), Var("x", dtype("int64")))


def test_hash_is_stable_and_identity_free():
    first = structural_hash(IRModule({"main": _loop()}))
    second = structural_hash(IRModule({"main": _loop()}))
    assert first == second


def test_assert_structural_equal_shows_both_sides():
    with pytest.raises(AssertionError, match=r"structural mismatch at root\.body\.extent"):
        assert_structural_equal(_loop(extent=16), _loop(extent=8))


def test_map_free_vars_false_keeps_free_variables_apart():
    x, y = Var("x", dtype("int32")), Var("y", dtype("int32"))
    assert structural_equal(x + 1, y + 1)  # the default here: free variables correspond
    assert not structural_equal(x + 1, y + 1, map_free_vars=False)  # TVM's default
    assert structural_equal(x + 1, x + 1, map_free_vars=False)
    # What a tree defines (parameters, buffers, loop variables) still corresponds.
    assert structural_equal(_loop("i", "A"), _loop("j", "B"), map_free_vars=False)
    with pytest.raises(AssertionError, match=r"a different free variable \(map_free_vars=False\)"):
        assert_structural_equal(x * 2, y * 2, map_free_vars=False)
    assert_structural_equal(x * 2, y * 2, True)  # TVM's positional third argument


_COPY = """
@T.prim_func
def main(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
    for i in range(8):
        with T.block("{name}"):
            vi = T.axis.spatial(8, i)
            B[vi] = A[vi] * T.float32(2)
"""


def test_block_names_take_no_part_as_in_tvm():
    # TVM leaves a Block's name_hint out of structural equality and hashing.
    a = tw.script.from_source(_COPY.format(name="B"))
    b = tw.script.from_source(_COPY.format(name="renamed"))
    assert structural_equal(a, b)
    assert structural_hash(a) == structural_hash(b)
    assert_structural_equal(a, b)
    # Only the name is ignored: a different body still differs.
    c = tw.script.from_source(_COPY.format(name="B").replace("T.float32(2)", "T.float32(3)"))
    assert not structural_equal(a, c)


def test_list_and_tuple_of_the_same_items_are_equal():
    x, y = Var("x", dtype("int32")), Var("y", dtype("int32"))
    assert structural_equal([x + 1, y], (x + 1, y))
    assert structural_hash([x + 1, y]) == structural_hash((x + 1, y))
    assert_structural_equal([const(1), const(2)], (const(1), const(2)))
    assert not structural_equal([x + 1, y], (x + 1,))
    assert not structural_equal([const(1), const(2)], (const(1), const(3)))
