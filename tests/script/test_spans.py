"""Source positions: the parser records where blocks, loops and stores were written; the
positions take no part in equality, hashing or printing, and survive rewrites."""

from __future__ import annotations

from pathlib import Path

import tilewright as tw
from tilewright.ir import (
    Block,
    BlockRealize,
    BufferStore,
    For,
    PrimFunc,
    Span,
    assert_structural_equal,
    post_order_visit,
    structural_equal,
    structural_hash,
)
from tilewright.script import from_source
from tilewright.script import tir as T

TEXT = """from tilewright.script import tir as T
@T.prim_func
def main(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):
    for i in range(16):
        with T.block("B"):
            vi = T.axis.spatial(16, i)
            B[vi] = A[vi] * T.float32(2)
"""


def _parse(text: str = TEXT, filename: str = "kernel.py") -> PrimFunc:
    func = from_source(text, filename)
    assert isinstance(func, PrimFunc)
    return func


def _nodes(func: PrimFunc, cls: type) -> list:
    """The nodes of class ``cls`` in ``func``, the implicit root block left out."""
    found: list = []

    def add(node: object) -> None:
        if isinstance(node, cls) and not (isinstance(node, Block) and node.name == "root"):
            found.append(node)

    post_order_visit(func.body, add)
    return found


def test_blocks_loops_and_stores_carry_their_script_position():
    func = _parse()
    (loop,) = _nodes(func, For)
    (block,) = _nodes(func, Block)
    (store,) = _nodes(func, BufferStore)
    assert loop.span == Span("kernel.py", 4, 5, "for i in range(16):")
    assert block.span == Span("kernel.py", 5, 9, 'with T.block("B"):')
    assert store.span == Span("kernel.py", 7, 13, "B[vi] = A[vi] * T.float32(2)")
    assert str(store.span) == "kernel.py, line 7: B[vi] = A[vi] * T.float32(2)"


@T.prim_func
def _decorated(A: T.Buffer((16,), "float32")):
    for i in T.grid(16):
        A[i] = T.float32(0)


def test_a_decorated_function_points_into_its_python_file():
    (store,) = _nodes(_decorated, BufferStore)
    lines = Path(__file__).read_text().splitlines()
    expected = next(n for n, line in enumerate(lines, 1) if line.strip() == "A[i] = T.float32(0)")
    assert store.span == Span(__file__, expected, 9, "A[i] = T.float32(0)")


def test_a_constructed_node_has_no_span():
    (store,) = _nodes(_parse(), BufferStore)
    assert BufferStore(store.buffer, store.value, store.indices).span is None


def test_spans_take_no_part_in_equality_hashing_or_printing():
    func = _parse()
    moved = _parse("\n\n" + TEXT.replace("    ", "      "), "other.py")
    assert _nodes(moved, BufferStore)[0].span != _nodes(func, BufferStore)[0].span
    assert_structural_equal(func, moved)
    assert structural_hash(func) == structural_hash(moved)
    assert func.script() == moved.script()
    (realize,) = (r for r in _nodes(func, BlockRealize) if r.block.name == "B")
    bare = realize.replace(block=realize.block.replace(span=None))
    assert structural_equal(bare, realize)
    assert bare.script() == realize.script()
    assert "kernel.py" not in func.script()


def test_printing_then_parsing_is_structurally_equal_despite_new_spans():
    func = _parse()
    again = _parse(func.script(), "<string>")
    assert_structural_equal(func, again)
    assert _nodes(again, BufferStore)[0].span.file == "<string>"


def test_replace_and_schedule_primitives_keep_a_surviving_blocks_span():
    func = _parse()
    (block,) = _nodes(func, Block)
    assert block.span is not None
    assert block.replace(name="C").span == block.span
    sch = tw.tir.Schedule(func)
    sch.split(sch.get_loops(sch.get_block("B"))[0], [None, 4])
    (scheduled,) = _nodes(sch.mod["main"], Block)
    assert scheduled.span == block.span
