"""TVM's constant buffers, stage IR and host-side builtins beyond the corpus round trips: the
spellings TVM also writes, the C code they become, and the clear refusals at build."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import tilewright as tw
from tilewright.ir import AllocateConst, AttrStmt, BufferRealize, DataType, assert_structural_equal
from tilewright.script import from_source
from tilewright.script import tir as T

HEADER = "from tilewright.script import tir as T\n\n"


def parse(body: str) -> tw.ir.PrimFunc:
    return from_source(HEADER + body)


def test_bare_realize_encloses_the_rest_of_the_body():
    bare = parse(
        "@T.prim_func\n"
        "def f(A: T.Buffer((8,), 'float32')):\n"
        "    B = T.Buffer((8,), 'float32')\n"
        "    T.realize(B[0:8], 'global')\n"
        "    for i in range(8):\n"
        "        B[i] = A[i]\n"
    )
    scoped = parse(
        "@T.prim_func\n"
        "def f(A: T.Buffer((8,), 'float32')):\n"
        "    B = T.Buffer((8,), 'float32')\n"
        "    with T.realize(B[0:8], 'global'):\n"
        "        for i in range(8):\n"
        "            B[i] = A[i]\n"
    )
    assert_structural_equal(bare, scoped)
    assert isinstance(bare.body, AttrStmt) and bare.body.key == "realize_scope"
    assert isinstance(bare.body.body, BufferRealize)


def test_allocate_const_reads_tvms_buffer_over_its_storage():
    # TVM declares the constant storage, then a buffer over it (either spelling).
    for view in (
        "T.Buffer((8,), 'int32', data=K_data)",
        "T.decl_buffer((8,), 'int32', data=K_data)",
    ):
        func = parse(
            "@T.prim_func\n"
            "def f(A: T.Buffer((8,), 'int32'), B: T.Buffer((8,), 'int32')):\n"
            "    K_data = T.allocate_const([1, 1, 1, 1, 2, 2, 2, 2], 'int32', [8])\n"
            f"    K = {view}\n"
            "    for x in range(8):\n"
            "        B[x] = A[x] + K[x]\n"
        )
        assert isinstance(func.body, AllocateConst)
        a = np.arange(8, dtype="int32")
        b = np.zeros(8, "int32")
        tw.build(func, target="c")["main"](a, b)
        np.testing.assert_array_equal(b, a + np.repeat([1, 2], 4))


def test_allocate_const_checks_its_values():
    with pytest.raises(ValueError, match=r"3 values for extents of 4 elements"):
        T.allocate_const([1, 2, 3], "int32", [4])
    with pytest.raises(TypeError, match=r"0\.5 is not a int32 value"):
        T.allocate_const([0.5], "int32", [1])
    # numpy arrays are read too, in row-major order
    assert T.allocate_const(np.eye(2), "float32", [2, 2]).data == (1.0, 0.0, 0.0, 1.0)


def test_constant_buffer_is_a_static_c_array():
    from corpus.host_builtins import allocate_const_half, allocate_const_table

    source = tw.build(allocate_const_table, target="c").get_source()
    assert "static const float B[8] __attribute__((aligned(64))) = {0.0f, 0.5f, 1.0f," in source
    # half precision is stored as its bits
    assert "0x3e00u" in tw.build(allocate_const_half, target="c").get_source()


def test_isnullptr_and_prefetch_in_c():
    from corpus.host_builtins import isnullptr_guard, prefetch_hint

    assert "if (!(A == 0)) {" in tw.build(isnullptr_guard, target="c").get_source()
    lowered = tw.lower(prefetch_hint)
    assert "T.prefetch" not in lowered.script()


def test_realize_of_part_of_a_buffer_is_refused():
    from corpus.host_builtins import realize_partial_region

    with pytest.raises(ValueError, match=r"cannot lower T\.realize of B with a region"):
        tw.build(realize_partial_region, target="c")


@pytest.mark.parametrize(
    ("case", "message"),
    [
        ("call_cpacked", r"T\.call_cpacked is part of TVM's packed-function ABI"),
        ("call_llvm_intrinsics", r"T\.call_llvm_pure_intrin is an LLVM intrinsic"),
        ("packed_call_abi", r"T\.tvm_stack_alloca is part of TVM's packed-function ABI"),
    ],
)
def test_host_builtins_are_refused_at_build(case, message):
    from corpus import host_builtins

    with pytest.raises(tw.codegen.c_like.CodegenError, match=message):
        tw.build(getattr(host_builtins, case), target="c")


def test_llvm_intrinsic_by_number_round_trips():
    func = parse(
        "@T.prim_func\n"
        "def f(A: T.Buffer((4,), 'float32')):\n"
        "    for i in range(4):\n"
        "        A[i] = T.call_llvm_pure_intrin('float32', T.uint32(205), T.uint32(1), A[i])\n"
    )
    text = func.script()
    assert 'T.call_llvm_pure_intrin("float32", T.uint32(205), T.uint32(1), A[i])' in text
    assert_structural_equal(from_source(text), func)


def test_float8_dtypes_are_named_as_tvm_and_ml_dtypes_name_them():
    for name in ("float8_e4m3fn", "float8_e5m2"):
        dtype = DataType.parse(name)
        assert str(dtype) == name == np.dtype(getattr(ml_dtypes, name)).name
        assert (dtype.bits, dtype.bytes, dtype.is_float8, dtype.is_float) == (8, 1, True, True)
        assert str(DataType.parse(f"{name}x4")) == f"{name}x4"
        assert getattr(T, name).type == dtype
    assert str(T.float8_e4m3fn(0.5)) == "T.float8_e4m3fn(0.5)"
    assert str(T.void.type) == "void"


def test_isnullptr_takes_a_handle():
    with pytest.raises(TypeError, match=r"T\.isnullptr: expected a handle"):
        T.isnullptr(T.int32(1))


def test_realize_of_a_parameter_allocates_nothing():
    func = parse(
        "@T.prim_func\n"
        "def f(A: T.Buffer((8,), 'float32')):\n"
        "    with T.realize(A[0:8], ''):\n"
        "        for i in range(8):\n"
        "            A[i] = A[i] + T.float32(1)\n"
    )
    a = np.zeros(8, "float32")
    tw.build(func, target="c")["main"](a)
    np.testing.assert_array_equal(a, 1)


def test_allocate_const_needs_a_name_at_the_users_line():
    from tilewright.script.parser.errors import ParseError

    with pytest.raises(ParseError, match=r"line 5, column 5: T\.allocate_const: expected one name"):
        parse("@T.prim_func\ndef f():\n    T.allocate_const([1], 'int32', [1])\n")


@pytest.mark.parametrize(
    "name", ["float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz"]
)
def test_float8_conversions_in_c_match_ml_dtypes_bit_for_bit(name):
    special = [0.0, -0.0, 448, 464, 465, 480, 57344, 61440, 61441, np.inf, np.nan, 1e-9]
    small = [0.0019, 240, 241, 247, 248, 7.62939e-06, 1.52588e-05, 2.0**-10, 2.0**-11, 1.5 * 2**-11]
    rng = np.random.default_rng(7)
    scaled = rng.normal(0, 1, 500) * 2.0 ** rng.integers(-20, 20, 500)
    x = np.concatenate([special, small, scaled]).astype("float32")
    x = np.concatenate([x, -x])
    n = len(x)
    func = parse(
        "@T.prim_func\n"
        f"def f(X: T.Buffer(({n},), 'float32'), Y: T.Buffer(({n},), '{name}'),"
        f" Z: T.Buffer(({n},), 'float32')):\n"
        f"    for i in range({n}):\n"
        f"        Y[i] = T.Cast('{name}', X[i])\n"
        "        Z[i] = T.Cast('float32', Y[i])\n"
    )
    y, z = np.zeros(n, name), np.zeros(n, "float32")
    tw.build(func, target="c")["main"](x, y, z)
    want = x.astype(name)
    np.testing.assert_array_equal(y.view("uint8"), want.view("uint8"))
    np.testing.assert_array_equal(z, want.astype("float32"))
