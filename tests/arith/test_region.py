"""Block access-region inference (tilewright.arith.region)."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tilewright.arith.region import block_access_regions, const_bounds, linearize
from tilewright.ir import (
    Block,
    BlockRealize,
    BufferRegion,
    BufferStore,
    For,
    ForKind,
    IntImm,
    IterKind,
    IterVar,
    Range,
    Var,
    assert_structural_equal,
    decl_buffer,
    dtype,
    seq,
)
from tilewright.script import tir as T

i32 = dtype("int32")


def block_named(func, name):
    found = []

    def walk(node):
        if isinstance(node, Block) and node.name == name:
            found.append(node)
        return True

    from tilewright.ir import pre_order_visit

    pre_order_visit(func.body, walk)
    (block,) = found
    return block


def regions_of(block):
    """The regions as (buffer, [(min, extent)]) with IntImm values unwrapped."""

    def show(r):
        return [
            (x.min.value if isinstance(x.min, IntImm) else x.min, x.extent.value) for x in r.region
        ]

    reads, writes = block_access_regions(block)
    return [(r.buffer.name, show(r)) for r in reads], [(w.buffer.name, show(w)) for w in writes]


def test_window_union_keeps_the_index_as_written():
    @T.prim_func
    def f(A: T.Buffer((1027,), "float32"), B: T.Buffer((1024,), "float32")):
        for i in range(1024):
            with T.block("C"):
                vi = T.axis.remap("S", [i])
                B[vi] = A[vi + 2] + A[vi] + A[vi + 1]

    block = block_named(f, "C")
    vi = block.iter_vars[0].var
    reads, writes = regions_of(block)
    assert reads == [("A", [(vi, 3)])]
    assert writes == [("B", [(vi, 1)])]
    # The minimum is the very variable, so the region prints as A[vi : vi + 3].
    assert block_access_regions(block)[0][0].region[0].min is vi


def test_offset_minimum_is_rebuilt_from_linear_form():
    @T.prim_func
    def f(A: T.Buffer((1030,), "float32"), B: T.Buffer((1024,), "float32")):
        for i in range(1024):
            with T.block("C"):
                vi = T.axis.remap("S", [i])
                B[vi] = A[vi + 3] + A[vi + 5]

    block = block_named(f, "C")
    (read,), _ = block_access_regions(block)
    rng = read.region[0]
    assert rng.extent.value == 3
    assert rng.min.b.value == 3 and rng.min.a is block.iter_vars[0].var


def test_order_of_first_access_and_read_write_buffer():
    @T.prim_func
    def f(
        A: T.Buffer((8, 8), "float32"),
        B: T.Buffer((8, 8), "float32"),
        C: T.Buffer((8, 8), "float32"),
    ):
        for i, j, k in T.grid(8, 8, 8):
            with T.block("C"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    C[vi, vj] = 0.0
                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]

    block = block_named(f, "C")
    vi, vj, vk = (iv.var for iv in block.iter_vars)
    reads, writes = regions_of(block)
    # A reduction block's output is a write only (TVM's inference).
    assert reads == [
        ("A", [(vi, 1), (vk, 1)]),
        ("B", [(vk, 1), (vj, 1)]),
    ]
    assert writes == [("C", [(vi, 1), (vj, 1)])]


def test_init_store_counts_as_write():
    @T.prim_func
    def f(A: T.Buffer((8,), "float32"), C: T.Buffer((1,), "float32")):
        for k in range(8):
            with T.block("sum"):
                vk = T.axis.reduce(8, k)
                T.reads(A[vk])
                T.writes()
                with T.init():
                    C[0] = 0.0
                A[vk] = A[vk]

    block = block_named(f, "sum")
    _, writes = regions_of(block)
    assert [name for name, _ in writes] == ["C", "A"]


def test_loops_inside_the_block_are_relaxed():
    @T.prim_func
    def f(A: T.Buffer((64, 64), "float32"), B: T.Buffer((64,), "float32")):
        for i in range(16):
            with T.block("row"):
                vi = T.axis.spatial(16, i)
                for k in range(8):
                    for j in T.serial(2, 6):
                        B[vi * 4] = B[vi * 4] + A[vi * 4 + k, j * 2]

    block = block_named(f, "row")
    reads, writes = block_access_regions(block)
    b_read, a_read = reads
    assert b_read.buffer.name == "B" and a_read.buffer.name == "A"
    row, col = a_read.region
    assert row.extent.value == 8 and type(row.min).__name__ == "Mul"
    assert (col.min.value, col.extent.value) == (4, 7)  # j in [2, 5]: 2*j in [4, 10]
    assert writes[0].region[0].extent.value == 1


def test_nested_block_regions_are_substituted_and_relaxed():
    @T.prim_func
    def f(A: T.Buffer((128,), "float32"), B: T.Buffer((128,), "float32")):
        for o in range(4):
            with T.block("outer"):
                vo = T.axis.spatial(4, o)
                for x in range(32):
                    with T.block("inner"):
                        vx = T.axis.spatial(128, vo * 32 + x)
                        B[vx] = A[vx]

    block = block_named(f, "outer")
    vo = block.iter_vars[0].var
    reads, writes = block_access_regions(block)
    (rng,) = reads[0].region
    assert rng.extent.value == 32
    assert rng.min.a is vo and rng.min.b.value == 32
    assert writes[0].buffer.name == "B"


def test_allocated_buffers_are_excluded():
    @T.prim_func
    def f(A: T.Buffer((4,), "float32")):
        for i in range(4):
            with T.block("b"):
                vi = T.axis.remap("S", [i])
                tmp = T.alloc_buffer((1,), "float32")
                tmp[0] = A[vi]
                A[vi] = tmp[0]

    reads, writes = regions_of(block_named(f, "b"))
    assert [n for n, _ in reads] == ["A"] and [n for n, _ in writes] == ["A"]


def test_disagreeing_symbolic_parts_widen_to_the_whole_dimension():
    @T.prim_func
    def f(A: T.Buffer((16,), "float32"), n: T.int32, m: T.int32):
        for i in range(4):
            with T.block("b"):
                vi = T.axis.remap("S", [i])
                A[vi] = A[n] + A[m]

    reads, _ = regions_of(block_named(f, "b"))
    assert reads == [("A", [(0, 16)])]


def test_unbounded_nonlinear_index_widens():
    @T.prim_func
    def f(A: T.Buffer((16,), "float32"), n: T.int32):
        for i in range(4):
            with T.block("b"):
                vi = T.axis.remap("S", [i])
                for k in range(n):
                    A[vi] = A[k]

    reads, _ = regions_of(block_named(f, "b"))
    assert reads == [("A", [(0, 16)])]


def test_vector_ramp_index():
    @T.prim_func
    def f(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):
        for i in range(4):
            with T.block("b"):
                vi = T.axis.remap("S", [i])
                B[T.Ramp(vi * 4, 1, 4)] = A[T.Ramp(vi * 4, 1, 4)]

    reads, writes = regions_of(block_named(f, "b"))
    assert reads[0][1][0][1] == 4 and writes[0][1][0][1] == 4


def test_let_bound_index_is_substituted():
    @T.prim_func
    def f(A: T.Buffer((16,), "float32")):
        for i in range(4):
            with T.block("b"):
                vi = T.axis.remap("S", [i])
                x = vi + 1
                A[x] = 0.0

    block = block_named(f, "b")
    _, writes = block_access_regions(block)
    assert writes[0].region[0].min.a is block.iter_vars[0].var


def test_floordiv_floormod_of_relaxed_loop():
    @T.prim_func
    def f(A: T.Buffer((16, 8), "float32")):
        for i in range(2):
            with T.block("b"):
                vi = T.axis.remap("S", [i])
                for f in range(32):
                    A[vi * 8 + f // 8, f % 8] = 0.0

    block = block_named(f, "b")
    (write,) = block_access_regions(block)[1]
    row, col = write.region
    assert row.extent.value == 4 and (col.min.value, col.extent.value) == (0, 8)


def test_hand_built_block_matches_explicit_regions():
    A = decl_buffer((8,), "float32", "A")
    i = Var("i", i32)
    vi = Var("vi", i32)
    store = BufferStore(A, A[vi], (vi,))
    block = Block(
        "b", (IterVar(vi, Range(IntImm(0, i32), IntImm(8, i32)), IterKind.SPATIAL),), (), (), store
    )
    reads, writes = block_access_regions(block)
    expected = BufferRegion(A, (Range(vi, IntImm(1, i32)),))
    assert_structural_equal(reads, (expected,))
    assert_structural_equal(writes, (expected,))
    loop = For(
        i,
        IntImm(0, i32),
        IntImm(8, i32),
        ForKind.SERIAL,
        BlockRealize((i,), IntImm(1, dtype("bool")), block),
    )
    assert isinstance(seq(loop), For)


@pytest.mark.parametrize(
    ("expr_of", "expected"),
    [
        (lambda x, y: x * 3 + y - 2, (3 * 0 + 5 - 2, 3 * 7 + 9 - 2)),
        (lambda x, y: x // 2, (0, 3)),
        (lambda x, y: (x + 6) % 4, (0, 3)),
        (lambda x, y: y % 16, (5, 9)),
        (lambda x, y: y % 8, (0, 7)),
        (lambda x, y: T.max(x, y) - T.min(x, y), (5 - 7, 9 - 0)),
        (lambda x, y: x - y, (0 - 9, 7 - 5)),
    ],
)
def test_const_bounds(expr_of, expected):
    x, y = Var("x", i32), Var("y", i32)
    assert const_bounds(expr_of(x, y), {x: (0, 7), y: (5, 9)}) == expected


def test_linearize_collects_terms():
    x, y = Var("x", i32), Var("y", i32)
    form = linearize((x * 4 + y) * 2 - x + 3)
    coefs = {atom.name: coef for _, atom, coef in form.terms}
    assert coefs == {"x": 7, "y": 2} and form.const == 3


def _evaluate(expr, env):
    """The integer value of a small index expression under ``env``."""
    from tilewright.ir import Add, FloorDiv, FloorMod, Mul, Sub

    if isinstance(expr, IntImm):
        return expr.value
    if isinstance(expr, Var):
        return env[expr]
    a, b = _evaluate(expr.a, env), _evaluate(expr.b, env)
    table = {Add: a + b, Sub: a - b, Mul: a * b}
    if isinstance(expr, FloorDiv | FloorMod):
        return a // b if isinstance(expr, FloorDiv) else a % b
    return table[type(expr)]


@given(
    coef=st.integers(1, 4),
    offsets=st.lists(st.integers(-3, 6), min_size=1, max_size=4),
    inner=st.integers(1, 5),
    step=st.integers(0, 3),
    divisor=st.sampled_from([None, 2, 3]),
)
@settings(max_examples=60, deadline=None)
def test_inferred_region_covers_every_accessed_index(coef, offsets, inner, step, divisor):
    """Property: every index the body touches, for every value of the block iterator and the
    relaxed inner loop, lies inside the inferred region."""
    A = decl_buffer((4096,), "float32", "A")
    vi = Var("vi", i32)
    k = Var("k", i32)
    loads = []
    for c in offsets:
        index = vi * coef + k * step + c + 64
        if divisor is not None:
            index = index // divisor
        loads.append(A[index])
    value = loads[0]
    for load in loads[1:]:
        value = value + load
    body = For(k, IntImm(0, i32), IntImm(inner, i32), ForKind.SERIAL, BufferStore(A, value, (vi,)))
    dom = Range(IntImm(0, i32), IntImm(8, i32))
    block = Block("b", (IterVar(vi, dom, IterKind.SPATIAL),), (), (), body)
    (read,), _ = block_access_regions(block)
    (rng,) = read.region
    for v in range(8):
        low = _evaluate(rng.min, {vi: v})
        high = low + rng.extent.value - 1
        for kv in range(inner):
            for load in loads:
                point = _evaluate(load.indices[0], {vi: v, k: kv})
                assert low <= point <= high or (low, rng.extent.value) == (0, 4096)
    if divisor is None:
        # Without division the region is exact: its ends are touched.
        assert rng.extent.value == max(offsets) - min(offsets) + step * (inner - 1) + 1
