"""TVMScript as TVM users write it (issue 30, group 1): ``T.let[...]`` bindings, ``dtype=`` on
the call builtins, ``Buffer.access_ptr(extent=)``, the implicit cast of a store, pointer
variables and buffer annotations, blocks with ``T.init()`` and spatial iterators only, and
TVM's newer spellings (``T.sblock``, ``s_tir=True``). Each program is the text a TVM user
writes; the test checks what it parses to (against the form written out here), that it prints
back as expected and re-parses to an equal function, and, where it computes, that its C build
agrees with numpy."""

from __future__ import annotations

import logging

import numpy as np
import pytest

import tilewright as tw
from tilewright.ir import IRModule, PrimFunc, assert_structural_equal
from tilewright.ir.printer import script
from tilewright.script import ParseError, from_source
from tilewright.script import ir as I
from tilewright.script import tir as T

HEADER = "# from tilewright.script import tir as T\n\n"

SUM3_C = "static float tw_sum3(float a, float b, float c) { return a + b + c; }"
FILL_C = (
    "static int32_t tw_fill(float* p, int32_t n) "
    "{ for (int32_t k = 0; k < n; ++k) p[k] = (float)(k + 1); return 0; }"
)


def parse(text: str) -> PrimFunc:
    func = from_source(text)
    assert isinstance(func, PrimFunc)
    return func


def prints_as(func: PrimFunc, expected_body: str) -> None:
    """``func`` prints exactly as ``expected_body`` (after the header) and reads back equal."""
    text = func.script()
    assert text == HEADER + expected_body.strip("\n")
    back = parse(text)
    assert_structural_equal(back, func)
    assert back.script() == text


def run(func: PrimFunc, *arrays: np.ndarray) -> None:
    tw.build(func, target="c")["main"](*arrays)  # a lone function builds as main


# ---- 1. T.let[...] ----------------------------------------------------------------------------


LET_TVM = """
@T.prim_func
def scale(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
    for i in range(8):
        x: T.let[T.float32] = A[i] * T.float32(2)
        twice: T.let = i * 2
        B[i] = x + T.Cast("float32", twice)
"""


def test_let_annotation_binds_a_let_statement_of_the_given_or_the_value_dtype():
    func = parse(LET_TVM)

    @T.prim_func
    def expected(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
        for i in range(8):
            x: T.float32 = A[i] * T.float32(2)
            twice: T.int32 = i * 2
            B[i] = x + T.Cast("float32", twice)

    assert_structural_equal(func, expected)
    prints_as(
        func,
        """
@T.prim_func
def scale(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
    for i in range(8):
        x: T.float32 = A[i] * T.float32(2.0)
        twice: T.int32 = i * 2
        B[i] = x + T.Cast("float32", twice)
""",
    )
    a, b = np.random.default_rng(1).random(8, dtype="float32"), np.zeros(8, "float32")
    run(func, a, b)
    np.testing.assert_allclose(b, a * 2 + np.arange(8) * 2, rtol=1e-6)


def test_let_annotation_casts_the_value_to_its_dtype():
    func = parse(
        "@T.prim_func\n"
        'def f(A: T.Buffer((4,), "int32")):\n'
        "    for i in range(4):\n"
        "        h: T.let[T.int32] = T.float32(2.75)\n"
        "        A[i] = h + i\n"
    )
    a = np.zeros(4, "int32")
    run(func, a)
    np.testing.assert_array_equal(a, np.arange(4) + 2)


def test_let_annotation_of_a_pointer():
    func = parse(
        "@T.prim_func\n"
        'def f(A: T.Buffer((8,), "float32")):\n'
        '    p: T.let[T.handle("float32", "global")] = T.address_of(A[2])\n'
        '    B = T.decl_buffer((4,), "float32", data=p)\n'
        "    B[0] = T.float32(1)\n"
    )
    prints_as(
        func,
        """
@T.prim_func
def f(A: T.Buffer((8,), "float32")):
    p: T.handle = T.address_of(A[2])
    B = T.decl_buffer((4,), "float32", data=p)
    B[0] = T.float32(1.0)
""",
    )


def test_let_annotation_without_a_value_is_refused():
    with pytest.raises(ParseError, match=r"T.let binds a value: expected x: T.let\[T.float32\]"):
        parse("@T.prim_func\ndef f():\n    x: T.let[T.float32]\n")
    with pytest.raises(ParseError, match=r"T.let\[...\]: expected a dtype such as T.float32"):
        parse('@T.prim_func\ndef f():\n    x: T.let["x"] = 1\n')


# ---- 2. dtype= on the builtins ----------------------------------------------------------------


def test_call_extern_takes_its_dtype_as_a_keyword_and_any_number_of_arguments():
    func = parse(
        "@T.prim_func\n"
        'def f(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):\n'
        f'    for i in T.serial(8, annotations={{"pragma_import_c": "{SUM3_C}"}}):\n'
        '        B[i] = T.call_extern("tw_sum3", A[i], A[i], T.float32(1), dtype="float32")\n'
    )
    (store_text,) = [line for line in func.script().splitlines() if "B[i] =" in line]
    assert (
        store_text.strip()
        == 'B[i] = T.call_extern("float32", "tw_sum3", A[i], A[i], T.float32(1.0))'
    )
    assert parse(func.script()).script() == func.script()
    a, b = np.random.default_rng(2).random(8, dtype="float32"), np.zeros(8, "float32")
    run(func, a, b)
    np.testing.assert_allclose(b, 2 * a + 1, rtol=1e-6)


@pytest.mark.parametrize(
    ("keyword", "positional"),
    [
        (
            'T.call_intrin("tw.sync_threads", dtype="int32")',
            'T.call_intrin("int32", "tw.sync_threads")',
        ),
        (
            'T.call_pure_extern("fabsf", A[0], dtype="float32")',
            'T.call_pure_extern("float32", "fabsf", A[0])',
        ),
        (
            'T.call_llvm_pure_intrin("llvm.sqrt", T.uint32(1), A[0], dtype="float32")',
            'T.call_llvm_pure_intrin("float32", "llvm.sqrt", T.uint32(1), A[0])',
        ),
        (
            'T.call_packed("tw_f", A.data, 1, 2, dtype="int32")',
            'T.call_packed("tw_f", A.data, 1, 2)',
        ),
        (
            'T.tvm_access_ptr(T.type_annotation("float32"), A.data, 0, 4, 1, dtype="handle")',
            'T.tvm_access_ptr(T.type_annotation("float32"), A.data, 0, 4, 1)',
        ),
        ('T.tvm_storage_sync("shared", dtype="int32")', 'T.tvm_storage_sync("shared")'),
        ('T.floordiv(T.int32(7), 2, dtype="int32")', "T.floordiv(T.int32(7), 2)"),
        ('T.truncmod(T.int32(7), 2, dtype="int32")', "T.truncmod(T.int32(7), 2)"),
    ],
)
def test_builtins_take_dtype_as_tvm_does(keyword: str, positional: str):
    # TVM forwards a call builtin's dtype= as its first argument and drops it where the
    # result's dtype is fixed; both spellings give the same call.
    def body(call: str) -> str:
        return f'@T.prim_func\ndef f(A: T.Buffer((4,), "float32")):\n    T.evaluate({call})\n'

    assert_structural_equal(parse(body(keyword)), parse(body(positional)))


def test_if_then_else_takes_dtype():
    func = parse(
        "@T.prim_func\n"
        'def f(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):\n'
        "    for i in range(8):\n"
        '        B[i] = T.if_then_else(i < 4, A[i], T.float32(0), dtype="float32")\n'
    )
    a, b = np.random.default_rng(3).random(8, dtype="float32"), np.ones(8, "float32")
    run(func, a, b)
    np.testing.assert_array_equal(b, np.where(np.arange(8) < 4, a, 0))


# ---- 3. Buffer.access_ptr(extent=) ------------------------------------------------------------


def test_access_ptr_extent_and_tvms_default_extent():
    func = parse(
        "@T.prim_func\n"
        'def f(A: T.Buffer((4, 4), "float32")):\n'
        f'    for _i in T.serial(1, annotations={{"pragma_import_c": "{FILL_C}"}}):\n'
        '        T.evaluate(T.call_extern("int32", "tw_fill",\n'
        '                                 A.access_ptr("w", offset=2, extent=3), 3))\n'
        '        T.evaluate(T.call_extern("int32", "tw_fill", A.access_ptr("rw", offset=12), 2))\n'
    )
    ptrs = [line.strip() for line in func.script().splitlines() if "tvm_access_ptr" in line]
    # The extent given, and TVM's default: from the offset to the end (16 - 12).
    assert 'T.tvm_access_ptr(T.type_annotation("float32"), A.data, 2, 3, 2)' in ptrs[0]
    assert 'T.tvm_access_ptr(T.type_annotation("float32"), A.data, 12, 4, 3)' in ptrs[1]
    assert parse(func.script()).script() == func.script()
    a = np.zeros((4, 4), "float32")
    run(func, a)
    want = np.zeros(16, "float32")
    want[2:5] = [1, 2, 3]
    want[12:14] = [1, 2]
    np.testing.assert_array_equal(a.reshape(-1), want)


def test_access_ptr_default_extent_of_a_strided_buffer():
    buf = tw.ir.decl_buffer((2, 3), "float32", "S", strides=(8, 1))
    ptr = buf.access_ptr("r", offset=1)
    # TVM: the first stride times the first extent, less the offset (2 * 8 - 1).
    assert [script(a) for a in ptr.args] == ["S", "1", "15", "1"]
    assert ptr.args[0] is buf.data


# ---- 4. the implicit cast of a store ----------------------------------------------------------


def test_a_store_of_another_numeric_dtype_is_cast_to_the_buffers():
    func = parse(
        "@T.prim_func\n"
        'def f(A: T.Buffer((8,), "float32"), C: T.Buffer((8,), "int32")):\n'
        "    for i in range(8):\n"
        "        A[i] = i\n"
        "        C[i] = A[i] * T.float32(1.5)\n"
    )

    @T.prim_func
    def expected(A: T.Buffer((8,), "float32"), C: T.Buffer((8,), "int32")):
        for i in range(8):
            A[i] = T.Cast("float32", i)
            C[i] = T.Cast("int32", A[i] * T.float32(1.5))

    assert_structural_equal(func, expected)
    text = func.script()
    assert 'A[i] = T.Cast("float32", i)' in text
    assert 'C[i] = T.Cast("int32", A[i] * T.float32(1.5))' in text
    a, c = np.zeros(8, "float32"), np.zeros(8, "int32")
    run(func, a, c)
    np.testing.assert_array_equal(a, np.arange(8))
    np.testing.assert_array_equal(c, (np.arange(8) * 1.5).astype("int32"))


# ---- 5. pointer variables, buffer annotations -------------------------------------------------


def test_a_pointer_variable_declared_with_t_handle_backs_a_decl_buffer():
    func = parse(
        "@T.prim_func\n"
        'def f(A: T.Buffer((4,), "float32")):\n'
        '    p = T.handle("float32")\n'
        '    B = T.decl_buffer((4,), "float32", data=p)\n'
        "    A[0] = B[1]\n"
    )
    prints_as(
        func,
        """
@T.prim_func
def f(A: T.Buffer((4,), "float32")):
    p = T.handle()
    B = T.decl_buffer((4,), "float32", data=p)
    A[0] = B[1]
""",
    )


ANNOTATED_TVM = """
@T.prim_func
def copy(A: T.Buffer((8,), "float32"), C: T.Buffer((8,), "float32")):
    B = T.alloc_buffer((8,), annotations={"tw.note": 1})
    for i in range(8):
        with T.block("B"):
            vi = T.axis.spatial(8, i)
            B[vi] = A[vi] + T.float32(1)
    for i in range(8):
        with T.block("C"):
            vi = T.axis.spatial(8, i)
            C[vi] = B[vi]
"""


def test_alloc_buffer_annotations():
    func = parse(ANNOTATED_TVM)
    prints_as(
        func,
        """
@T.prim_func
def copy(A: T.Buffer((8,), "float32"), C: T.Buffer((8,), "float32")):
    # with T.block("root"):
    B = T.alloc_buffer((8,), annotations={"tw.note": 1})
    for i in range(8):
        with T.block("B"):
            vi = T.axis.remap("S", [i])
            T.reads(A[vi])
            T.writes(B[vi])
            B[vi] = A[vi] + T.float32(1.0)
    for i in range(8):
        with T.block("C"):
            vi = T.axis.remap("S", [i])
            T.reads(B[vi])
            T.writes(C[vi])
            C[vi] = B[vi]
""",
    )
    # The annotations are part of the buffer: without them the function differs.
    plain = parse(ANNOTATED_TVM.replace(', annotations={"tw.note": 1}', ""))
    assert not tw.ir.structural_equal(func, plain)
    a, c = np.random.default_rng(4).random(8, dtype="float32"), np.zeros(8, "float32")
    run(func, a, c)
    np.testing.assert_allclose(c, a + 1, rtol=1e-6)


def test_annotations_on_a_buffer_parameter_are_refused():
    with pytest.raises(ParseError, match=r"T.match_buffer takes no annotations"):
        parse(
            "@T.prim_func\n"
            "def f(a: T.handle):\n"
            '    A = T.match_buffer(a, (4,), "float32", annotations={"x": 1})\n'
            "    A[0] = T.float32(0)\n"
        )


# ---- 6. T.init() in a block of spatial iterators ----------------------------------------------


def test_init_in_a_spatial_block_runs_at_every_step_as_in_tvm(caplog):
    text = """
@T.prim_func
def last(A: T.Buffer((4, 8), "float32"), C: T.Buffer((4,), "float32")):
    for i, k in T.grid(4, 8):
        with T.block("C"):
            vi, vk = T.axis.remap("SS", [i, k])
            with T.init():
                C[vi] = T.float32(0)
            C[vi] = C[vi] + A[vi, vk]
"""
    with caplog.at_level(logging.WARNING, logger="tilewright.script.parser.statements"):
        func = parse(text)
    assert "no reduction iterator: vk does not index" in caplog.text
    assert parse(func.script()).script() == func.script()
    a, c = np.random.default_rng(5).random((4, 8), dtype="float32"), np.ones(4, "float32")
    run(func, a, c)
    # Without a reduce iterator every step is a first step: only the last one stays.
    np.testing.assert_allclose(c, a[:, 7], rtol=1e-6)


def test_init_in_a_spatial_block_writing_its_own_element_is_quiet(caplog):
    text = """
@T.prim_func
def add(A: T.Buffer((8,), "float32"), C: T.Buffer((8,), "float32")):
    for i in range(8):
        with T.block("C"):
            vi = T.axis.spatial(8, i)
            with T.init():
                C[vi] = T.float32(1)
            C[vi] = C[vi] + A[vi]
"""
    with caplog.at_level(logging.WARNING, logger="tilewright.script.parser.statements"):
        func = parse(text)
    assert not caplog.records
    a, c = np.random.default_rng(6).random(8, dtype="float32"), np.zeros(8, "float32")
    run(func, a, c)
    np.testing.assert_allclose(c, a + 1, rtol=1e-6)


# ---- 7. TVM's newer spellings -----------------------------------------------------------------


SBLOCK_TVM = """
@T.prim_func
def double(A: T.Buffer((8,), "float32"), C: T.Buffer((8,), "float32")):
    B = T.sblock_alloc_buffer((8,))
    for i in range(8):
        with T.sblock("B"):
            vi = T.axis.spatial(8, i)
            T.sblock_attr({"tw.note": 1})
            B[vi] = A[vi] * T.float32(2)
    for i in range(8):
        with T.sblock("C"):
            vi = T.axis.spatial(8, i)
            C[vi] = B[vi]
"""

SBLOCK_PRINTED = """
@T.prim_func
def double(A: T.Buffer((8,), "float32"), C: T.Buffer((8,), "float32")):
    # with T.sblock("root"):
    B = T.sblock_alloc_buffer((8,))
    for i in range(8):
        with T.sblock("B"):
            vi = T.axis.remap("S", [i])
            T.reads(A[vi])
            T.writes(B[vi])
            T.sblock_attr({"tw.note": 1})
            B[vi] = A[vi] * T.float32(2.0)
    for i in range(8):
        with T.sblock("C"):
            vi = T.axis.remap("S", [i])
            T.reads(B[vi])
            T.writes(C[vi])
            C[vi] = B[vi]
"""


def _older(text: str) -> str:
    return (
        text.replace("T.sblock_alloc_buffer", "T.alloc_buffer")
        .replace("T.sblock_attr", "T.block_attr")
        .replace("T.sblock(", "T.block(")
        .replace('T.sblock("root")', 'T.block("root")')
    )


def test_sblock_spelling_prints_back_as_written_and_equals_the_block_spelling():
    func = parse(SBLOCK_TVM)
    prints_as(func, SBLOCK_PRINTED)
    older = parse(_older(SBLOCK_TVM))
    assert_structural_equal(func, older)  # the spelling is only how it prints
    prints_as(older, _older(SBLOCK_PRINTED))
    a, c = np.random.default_rng(7).random(8, dtype="float32"), np.zeros(8, "float32")
    run(func, a, c)
    np.testing.assert_allclose(c, a * 2, rtol=1e-6)


def test_s_tir_prim_func_prints_its_decorator_and_sblocks():
    func = parse(_older(SBLOCK_TVM).replace("@T.prim_func", "@T.prim_func(s_tir=True)"))
    prints_as(func, SBLOCK_PRINTED.replace("@T.prim_func", "@T.prim_func(s_tir=True)"))
    assert_structural_equal(func, parse(SBLOCK_TVM))


def test_s_tir_prim_func_decorator_in_python():
    @T.prim_func(s_tir=True, private=True)
    def f(A: T.Buffer((4,), "float32")):
        for i in range(4):
            with T.sblock("A"):
                vi = T.axis.spatial(4, i)
                A[vi] = T.float32(0)

    assert f.script().splitlines()[2] == "@T.prim_func(s_tir=True)"
    assert 'with T.sblock("A"):' in f.script()


def test_s_tir_ir_module_marks_its_functions():
    @I.ir_module(s_tir=True)
    class Module:
        @T.prim_func
        def main(A: T.Buffer((4,), "float32")):
            A[0] = T.float32(1)

    assert isinstance(Module, IRModule)
    text = Module.script()
    assert "    @T.prim_func(s_tir=True)\n    def main(" in text
    back = from_source(text, check_well_formed=False)
    assert isinstance(back, IRModule)
    assert_structural_equal(back, Module)
    assert back.script() == text
    source = text.replace("@I.ir_module", "@I.ir_module(s_tir=True)").replace(
        "(s_tir=True)\n    def", "\n    def"
    )
    assert from_source(source).script() == text


def test_block_spelling_still_prints_block():
    func = parse(_older(SBLOCK_TVM))
    assert "sblock" not in func.script()
    assert func.script().splitlines()[2] == "@T.prim_func"
