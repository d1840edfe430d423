"""What the parser refuses beyond syntax, at the user's line: inits that write elsewhere (a
block with an init but no reduction iterator is read as TVM reads it, with a warning),
strings/buffers/handles in arithmetic, non-integer indices, unknown storage scopes; and the
short traceback of a ``ParseError``."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tilewright.ir import Block, PrimFunc
from tilewright.ir.functor import post_order_visit
from tilewright.ir.scope import STORAGE_SCOPES
from tilewright.script import ParseError, from_source

HEAD = '@T.prim_func\ndef f(A: T.Buffer((8, 8), "float32"), C: T.Buffer((8,), "float32")):\n'


def parse_body(*lines: str) -> PrimFunc:
    func = from_source(HEAD + "".join(f"    {line}\n" for line in lines))
    assert isinstance(func, PrimFunc)
    return func


def row_sum(kinds: str, init: str = "C[vi] = T.float32(0)") -> tuple[str, ...]:
    return (
        "for i, k in T.grid(8, 8):",
        '    with T.block("C"):',
        f'        vi, vk = T.axis.remap("{kinds}", [i, k])',
        "        with T.init():",
        f"            {init}",
        "        C[vi] = C[vi] + A[vi, vk]",
    )


# ---- reduction blocks ----------------------------------------------------------------------


def test_init_without_a_reduction_iterator_is_read_as_tvm_does_with_a_warning(caplog):
    # TVM accepts it (its init then runs at every step); the warning names the iterator that
    # should likely be "R" and the fix, at the user's line.
    with caplog.at_level("WARNING", logger="tilewright.script.parser.statements"):
        func = parse_body(*row_sum("SS"))
    assert [iv.kind.value for iv in _only_block(func).iter_vars] == ["spatial", "spatial"]
    (record,) = caplog.records
    message = record.getMessage()
    assert "line 5, column 13: block 'C' has T.init() but no reduction iterator: vk does " in (
        message
    )
    assert 'the init runs at every step; for a reduction it should be "R": ' in message
    assert 'T.axis.remap("SR", ...)' in message
    assert 'vi, vk = T.axis.remap("SS", [i, k])' in message
    caplog.clear()
    with caplog.at_level("WARNING", logger="tilewright.script.parser.statements"):
        parse_body(*row_sum("SR"))  # the fix parses quietly
    assert not caplog.records


def test_init_without_a_reduction_iterator_declared_one_by_one(caplog):
    lines = list(row_sum("SR"))
    lines[2:3] = ["        vi = T.axis.spatial(8, i)", "        vk = T.axis.spatial(8, k)"]
    with caplog.at_level("WARNING", logger="tilewright.script.parser.statements"):
        parse_body(*lines)
    (record,) = caplog.records
    assert "line 6, column 13: " in record.getMessage()
    assert "vk does not" in record.getMessage()
    assert "vk = T.axis.reduce(...)" in record.getMessage()


def _only_block(func: PrimFunc) -> Block:
    blocks: list[Block] = []
    post_order_visit(func.body, lambda n: blocks.append(n) if isinstance(n, Block) else None)
    blocks = [b for b in blocks if b.name == "C"]
    assert len(blocks) == 1
    return blocks[0]


def test_init_in_a_block_whose_iterators_all_index_the_output_is_fine():
    # Each step writes its own element (rfactor over a whole reduction makes such blocks).
    func = parse_body(
        "for i in range(8):",
        '    with T.block("C"):',
        '        vi = T.axis.remap("S", [i])',
        "        with T.init():",
        "            C[vi] = T.float32(0)",
        "        C[vi] = C[vi] + A[vi, 0]",
    )
    assert "with T.init():" in func.script()


def test_init_that_writes_another_buffer():
    with pytest.raises(
        ParseError,
        match=r"line 6, column 13: block 'C': T.init\(\) writes A, which the block does not "
        r"write; expected the init to set what the block reduces into \(C\)",
    ):
        parse_body(*row_sum("SR", init="A[vi, 0] = T.float32(0)"))


def test_opaque_and_scan_iterators_are_left_alone():
    lines = list(row_sum("SR"))
    lines[2:3] = ["        vi = T.axis.spatial(8, i)", "        vk = T.axis.opaque(8, k)"]
    parse_body(*lines)


# ---- operand dtypes ------------------------------------------------------------------------


def column_of(culprit: str, line: str) -> int:
    """The 1-based column of ``culprit`` in ``line`` of a loop body (indented 8 spaces)."""
    return 8 + line.index(culprit) + 1


@pytest.mark.parametrize(
    ("expression", "culprit", "found"),
    [
        ('C[i] + "x"', '"x"', "operand 'x' of C\\[i\\] \\+ 'x' is a string"),
        ('"x" * C[i]', '"x"', "operand 'x' of 'x' \\* C\\[i\\] is a string"),
        ("C[i] - A", "A", "operand A of C\\[i\\] - A is a buffer, not an element such as A\\[i\\]"),
        ('T.max(C[i], 1.0) / "2"', '"2"', "operand '2' of .* is a string"),
        ('C[i] if i < 4 else "x"', '"x"', "operand 'x' of .* is a string"),
    ],
)
def test_strings_and_buffers_in_arithmetic(expression, culprit, found):
    column = column_of(culprit, f"C[i] = {expression}")
    with pytest.raises(
        ParseError,
        match=rf"line 4, column {column}: {found}; expected a float32 number or expression",
    ):
        parse_body("for i in range(8):", f"    C[i] = {expression}")


def test_strings_in_comparisons_and_augmented_assignments():
    with pytest.raises(ParseError, match=r"line 4, column 19: operand 'x' of C\[i\] < 'x'"):
        parse_body("for i in range(8):", '    if C[i] < "x":', "        C[i] = 0.0")
    with pytest.raises(ParseError, match=r"line 4, column 17: operand 'x' of C\[i\] \+= 'x'"):
        parse_body("for i in range(8):", '    C[i] += "x"')
    with pytest.raises(ParseError, match=r"line 4, column 17: operand A of -A is a buffer"):
        parse_body("for i in range(8):", "    C[i] = -A")


def test_handles_in_arithmetic():
    with pytest.raises(
        ParseError, match=r"line 3, column 9: operand p of p \+ 1 is a handle value; expected"
    ):
        from_source(
            '@T.prim_func\ndef f(p: T.handle, C: T.Buffer((8,), "float32")):\n    x = p + 1\n'
        )


def test_python_values_still_compute_in_python():
    # Meta-programming on plain values stays Python: strings concatenate, bools add.
    func = parse_body('name = "a" + "b"', "for i in range(8):", "    C[i] = C[i] + (i < 4)")
    assert 'T.Cast("float32", i < 4)' in func.script()


@pytest.mark.parametrize(
    ("index", "found"),
    [
        ("i * 0.5", "a float32 value; expected an integer index \\(// divides integers"),
        ("T.float32(i)", "a float32 value"),
        ("0.5", "0.5; expected an integer index"),
        ("i < 4", "a bool value; expected an integer index\n"),
    ],
)
def test_non_integer_indices_in_loads_and_stores(index, found):
    column = column_of(index, f"C[i] = A[i, {index}]")
    with pytest.raises(
        ParseError, match=rf"line 4, column {column}: buffer A: index .* is {found}"
    ):
        parse_body("for i in range(8):", f"    C[i] = A[i, {index}]")
    with pytest.raises(ParseError, match=rf"line 4, column 11: buffer C: index .* is {found}"):
        parse_body("for i in range(8):", f"    C[{index}] = 0.0")


# ---- storage scopes ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("statement", "where"),
    [
        ('X = T.alloc_buffer((8,), scope="shard")', "T.alloc_buffer"),
        ('X = T.decl_buffer((8,), "float32", scope="shard")', "T.decl_buffer"),
        ('X = T.Buffer((8,), "float32", scope="shard")', "T.Buffer"),
        ('X = T.match_buffer(A[0, 0:8], (8,), scope="shard")', "T.match_buffer"),
    ],
)
def test_unknown_scope_in_a_script_suggests_the_known_one(statement, where):
    in_block = "match_buffer" in statement
    line, column = (4, 9) if in_block else (3, 5)
    column += statement.index('"shard"')
    with pytest.raises(
        ParseError,
        match=rf"line {line}, column {column}: {where}: unknown storage scope 'shard' "
        r"\(did you mean 'shared', 'shared.dyn'\?\); expected one of global, shared, "
        r"shared.dyn, local, warp",
    ) as e:
        if in_block:
            parse_body('with T.block("b"):', f"    {statement}")
        else:
            parse_body(statement)
    assert e.value.width == len('"shard"')


def test_unknown_scope_of_a_buffer_parameter():
    with pytest.raises(
        ParseError, match=r"line 2, column 42: T.Buffer: unknown storage scope 'Local' \(did you"
    ):
        from_source('@T.prim_func\ndef f(A: T.Buffer((8,), "float32", scope="Local")):\n    pass\n')


def test_every_known_scope_parses_and_an_empty_one_is_global():
    for scope in STORAGE_SCOPES:
        func = parse_body(f'X = T.alloc_buffer((8,), scope="{scope}")', "X[0] = 1.0")
        assert f'scope="{scope}"' in func.script() or scope == "global"
    func = parse_body('X = T.alloc_buffer((8,), scope="")', "X[0] = 1.0")
    assert "scope=" not in func.script()


# ---- the traceback a user sees -------------------------------------------------------------


@pytest.mark.parametrize(
    ("decorator", "body"),
    [
        ("@T.prim_func", "for i in T.gird(4):\n    A[i] = 1.0"),
        ("@T.prim_func()", 'A[0] = A[0] + "x"'),
    ],
)
def test_a_parse_error_shows_the_users_line_without_parser_frames(
    tmp_path: Path, decorator: str, body: str
):
    script = tmp_path / "user_kernel.py"
    head = "from tilewright.script import tir as T\n\n"
    head += f'{decorator}\ndef f(A: T.Buffer((4,), "float32")):\n'
    script.write_text(head + textwrap.indent(body, "    ") + "\n")
    result = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert len(lines) <= 12, result.stderr
    assert lines[0] == "Traceback (most recent call last):"
    assert lines[1] == f'  File "{script}", line 3, in <module>'
    assert f'  File "{script}", line 5' in lines
    assert lines[-1].startswith("tilewright.script.parser.errors.ParseError: ")
    assert lines[-2].strip().startswith("^")  # the caret under the culprit
    assert "parser/expressions.py" not in result.stderr
    assert "parser/statements.py" not in result.stderr


def test_a_parse_error_from_source_is_short_too():
    text = "@T.prim_func\\ndef f():\\n    T.gird(4)\\n"
    code = f"import tilewright as tw\ntw.script.from_source('{text}')\n"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
    )
    assert len(result.stderr.splitlines()) <= 10, result.stderr
    assert result.stderr.splitlines()[-1].endswith("unknown name 'T.gird' (did you mean 'T.grid'?)")
