"""Parse errors: type, message, and the file, line and column they point at."""

import re
from pathlib import Path

import pytest

from tilewright.script import ParseError, from_source
from tilewright.script import tir as T

THIS_FILE = Path(__file__).read_text().splitlines()


def where_in_this_file(marker: str) -> tuple[int, int]:
    """Line and 1-based column of the only line of this file holding ``marker`` in code."""
    hits = [
        (n + 1, line.index(marker) + 1)
        for n, line in enumerate(THIS_FILE)
        if marker in line and "where_in_this_file" not in line
    ]
    assert len(hits) == 1, hits
    return hits[0]


FUNC = '@T.prim_func\ndef f(A: T.Buffer((16,), "float32"), n: T.int32):\n{body}'


def parse_body(*lines: str) -> None:
    from_source(FUNC.format(body="".join(f"    {line}\n" for line in lines)))


def test_parse_error_is_a_syntax_error():
    assert issubclass(ParseError, SyntaxError)


def test_python_syntax_error_reports_line_and_column():
    with pytest.raises(
        ParseError, match=r"<string>, line 3, column 17: invalid Python syntax"
    ) as e:
        parse_body("A[0] = 1.0 +")
    assert (e.value.lineno, e.value.offset) == (3, 17)
    assert "A[0] = 1.0 +" in str(e.value)


def test_unknown_t_name_suggests_close_matches():
    with pytest.raises(ParseError, match=r"line 3, column 14: unknown name 'T.gird'") as e:
        parse_body("for i in T.gird(16):", "    A[i] = 0.0")
    assert "did you mean 'T.grid'?" in str(e.value)
    # The offending line and a caret under the name are shown.
    lines = str(e.value).splitlines()
    assert lines[1].strip() == "for i in T.gird(16):"
    assert lines[2].index("^") == lines[1].index("T.gird")


def test_unknown_nested_t_name():
    with pytest.raises(
        ParseError, match=r"unknown name 'T.axis.spatal' \(did you mean 'T.axis.spatial'"
    ):
        parse_body(
            "for i in range(4):", '    with T.block("b"):', "        vi = T.axis.spatal(4, i)"
        )


def test_wrong_number_of_indices_in_load_and_store():
    with pytest.raises(
        ParseError,
        match=r"line 3, column 12: buffer A has 1 dimension but is indexed with 2 indices",
    ):
        parse_body("A[0] = A[1, 2]")
    with pytest.raises(
        ParseError, match=r"line 3, column 5: buffer A has 1 dimension .* 0 indices"
    ):
        parse_body("A[()] = 1.0")


def test_undefined_variable():
    with pytest.raises(
        ParseError, match=r"line 3, column 12: undefined variable 'nn' \(did you mean 'n'"
    ):
        parse_body("A[0] = nn")


def test_unsupported_statement():
    with pytest.raises(ParseError, match=r"line 3, column 5: unsupported statement Try"):
        parse_body("try:", "    pass", "except:", "    pass")
    with pytest.raises(ParseError, match=r"unsupported statement Return"):
        parse_body("return 1")


def test_unsupported_expression():
    with pytest.raises(ParseError, match=r"unsupported expression ListComp"):
        parse_body("A[0] = [1 for x in range(2)][0]")


def test_wrong_argument_types_to_t_functions():
    with pytest.raises(ParseError, match=r"T.grid extent 0: expected an expression or a number"):
        parse_body('for i in T.grid("a"):', "    A[i] = 0.0")
    with pytest.raises(ParseError, match=r"T.alloc_buffer: unknown dtype 'floot32'"):
        parse_body('X = T.alloc_buffer((4,), "floot32")')
    with pytest.raises(ParseError, match=r"T.thread_binding: expected thread="):
        parse_body("for i in T.thread_binding(4):", "    A[i] = 0.0")
    with pytest.raises(ParseError, match=r"wrong arguments to T.serial: .*unexpected keyword"):
        parse_body("for i in T.serial(4, kind=1):", "    A[i] = 0.0")
    with pytest.raises(ParseError, match=r"T.reads: expected a buffer region"):
        parse_body("for i in range(4):", '    with T.block("b"):', "        T.reads(1)")
    with pytest.raises(ParseError, match=r"T.axis.remap: expected a list of 2 loop variables"):
        parse_body(
            "for i in range(4):",
            '    with T.block("b"):',
            '        vi, vj = T.axis.remap("SS", [i])',
        )


def test_block_directives_outside_a_block():
    with pytest.raises(
        ParseError, match=r"line 3, column 5: T.reads is only allowed inside a with T.block"
    ):
        parse_body("T.reads(A[0])")
    with pytest.raises(ParseError, match=r"T.axis is only allowed inside"):
        parse_body("for i in range(4):", "    vi = T.axis.spatial(4, i)")


def test_loop_target_count_and_bad_iterables():
    with pytest.raises(ParseError, match=r"2 loops but 1 loop variables; expected 2 names"):
        parse_body("for i in T.grid(4, 4):", "    A[i] = 0.0")
    with pytest.raises(ParseError, match=r"expected a loop such as range\(n\), T.grid"):
        parse_body("for i in [1, 2]:", "    A[i] = 0.0")


def test_remap_of_non_loop_variable():
    with pytest.raises(ParseError, match=r"T.axis.remap binds loop variables"):
        parse_body('with T.block("b"):', '    vi = T.axis.remap("S", [n])')


def test_store_dtype_mismatch_and_non_buffer_target():
    # A numeric value of another dtype is cast, as in TVM (test_tvm_conventions.py); a
    # handle is not a number.
    with pytest.raises(ParseError, match=r"cannot store a handle value into buffer A of float32"):
        parse_body("A[0] = A.data")
    with pytest.raises(ParseError, match=r"cannot assign to n\[0\]; expected a buffer element"):
        parse_body("n[0] = 1")


def test_parameter_without_or_with_bad_annotation():
    with pytest.raises(ParseError, match=r"line 2, column 7: parameter A has no annotation"):
        from_source("@T.prim_func\ndef f(A):\n    pass\n")
    with pytest.raises(ParseError, match=r"parameter A: expected T.Buffer\(\(...\), dtype\)"):
        from_source('@T.prim_func\ndef f(A: "x"):\n    pass\n')


def test_from_source_needs_one_decorated_definition():
    with pytest.raises(ParseError, match=r"function f: expected the decorator @T.prim_func"):
        from_source("def f():\n    pass\n")
    with pytest.raises(ParseError, match=r"expected one @I.ir_module class .* found nothing"):
        from_source("import tvm\n")
    with pytest.raises(
        ParseError, match=r"script text may import tilewright \(or tvm\) only, not os"
    ):
        from_source("import os\n")


def test_error_in_decorated_function_points_into_this_file():
    with pytest.raises(ParseError) as e:

        @T.prim_func
        def f(A: T.Buffer((8,), "float32")):
            for i in T.gird(8):
                A[i] = 0.0

    line, column = where_in_this_file("T.gird(8)")
    assert e.value.filename == __file__
    assert (e.value.lineno, e.value.offset) == (line, column)
    assert re.match(
        rf".*test_parse_errors.py, line {line}, column {column}: unknown name", str(e.value)
    )


def test_error_in_ir_module_method_points_into_this_file():
    import tilewright as tvm

    with pytest.raises(
        ParseError, match=r"buffer B has 2 dimensions but is indexed with 1 index"
    ) as e:

        @tvm.script.ir_module
        class Module:
            @T.prim_func
            def main(B: T.Buffer((4, 4), "float32")):
                B[0] = T.float32(1)

    line, column = where_in_this_file("B[0] = T.float32(1)")
    assert (e.value.lineno, e.value.offset) == (line, column)


def test_undecorated_method_in_ir_module():
    import tilewright as tvm

    with pytest.raises(TypeError, match=r"method helper is not decorated with @T.prim_func"):

        @tvm.script.ir_module
        class Module:
            def helper(self):
                return 1
