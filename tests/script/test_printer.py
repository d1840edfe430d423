from __future__ import annotations

import ast
import math
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from printer_programs import (
    EXPECTED_5,
    NOTEBOOK_ATTRS,
    TRUE,
    R,
    S,
    arg,
    block,
    bound,
    every_node_kind,
    func,
    grid,
    loop,
    matmul,
    matmul_blocked,
    module,
    root,
    var,
    vector_add_split,
    window_sum_shared,
)

from tilewright.ir import (
    Allocate,
    AttrStmt,
    Block,
    BlockRealize,
    Broadcast,
    BufferStore,
    Call,
    Cast,
    Evaluate,
    FloatImm,
    For,
    ForKind,
    IfThenElse,
    IntImm,
    IRModule,
    IterVar,
    Let,
    LetStmt,
    MatchBufferRegion,
    Node,
    PrimFunc,
    Ramp,
    Range,
    StringImm,
    Var,
    attrs,
    const,
    decl_buffer,
    dtype,
    op,
    seq,
)
from tilewright.ir.printer import script
from tilewright.script import from_source
from tilewright.script import tir as T


def golden(text: str) -> str:
    return textwrap.dedent(text).strip("\n")


HEADER = "# from tilewright.script import ir as I\n# from tilewright.script import tir as T\n\n\n"
ARGS_1D = 'A: T.Buffer((1024,), "float32"), B: T.Buffer((1024,), "float32")'
ARGS_MM = ", ".join(f'{n}: T.Buffer((1024, 1024), "float32")' for n in "ABC")


# -- the seed notebook's programs ---------------------------------------------------------


def test_vector_add_split_prints_like_expected_0():
    assert vector_add_split().script() == HEADER + golden(f"""
        @I.ir_module
        class Module:
            @T.prim_func
            def main({ARGS_1D}, C: T.Buffer((1024,), "float32")):
                T.func_attr({{"global_symbol": "main", "tir.noalias": True}})
                # with T.block("root"):
                for i_0, i_1 in T.grid(8, 128):
                    with T.block("C"):
                        vi = T.axis.spatial(1024, i_0 * 128 + i_1)
                        T.reads(A[vi], B[vi])
                        T.writes(C[vi])
                        C[vi] = A[vi] + B[vi]
        """)


def test_window_sum_prints_like_expected_4():
    args = 'A: T.Buffer((1027,), "float32"), B: T.Buffer((1024,), "float32")'
    assert window_sum_shared().script() == HEADER + golden(f"""
        @I.ir_module
        class Module:
            @T.prim_func
            def main({args}):
                T.func_attr({{"global_symbol": "main", "tir.noalias": True}})
                # with T.block("root"):
                A_shared = T.alloc_buffer((1027,), scope="shared")
                for i_0 in T.thread_binding(8, thread="blockIdx.x"):
                    for i_1 in T.thread_binding(128, thread="threadIdx.x"):
                        for ax0_0 in range(2):
                            for ax0_1 in T.thread_binding(128, thread="threadIdx.x"):
                                with T.block("A_shared"):
                                    v0 = T.axis.spatial(1027, i_0 * 128 + (ax0_0 * 128 + ax0_1))
                                    T.where(ax0_0 * 128 + ax0_1 < 130)
                                    T.reads(A[v0])
                                    T.writes(A_shared[v0])
                                    A_shared[v0] = A[v0]
                        with T.block("C"):
                            vi = T.axis.spatial(1024, i_0 * 128 + i_1)
                            T.reads(A_shared[vi:vi + 3])
                            T.writes(B[vi])
                            B[vi] = A_shared[vi] + A_shared[vi + 1] + A_shared[vi + 2]
        """)


def test_matmul_uses_grid_remap_and_init():
    assert matmul().script() == HEADER + golden(f"""
        @I.ir_module
        class Module:
            @T.prim_func
            def main({ARGS_MM}):
                T.func_attr({{"global_symbol": "main", "tir.noalias": True}})
                # with T.block("root"):
                for i, j, k in T.grid(1024, 1024, 1024):
                    with T.block("C"):
                        vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                        T.reads(C[vi, vj], A[vi, vk], B[vk, vj])
                        T.writes(C[vi, vj])
                        with T.init():
                            C[vi, vj] = T.float32(0.0)
                        C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
        """)


def test_blocked_matmul_prints_like_expected_5():
    assert matmul_blocked().script() == HEADER + EXPECTED_5.strip("\n")


def test_every_node_kind():
    assert every_node_kind().script() == HEADER + golden("""
        @I.ir_module
        class Module:
            @T.prim_func
            def main(A: T.Buffer((16, 16), "float32"), B: T.Buffer((16,), "int64")):
                T.func_attr({"global_symbol": "main", "tir.noalias": True})
                y = T.int32()
                # with T.block("root"):
                tmp = T.alloc_buffer((16,), scope="shared")
                for i in T.parallel(16):
                    for j in T.serial(16, annotations={"pragma": 1}):
                        with T.block("body"):
                            vi, vj = T.axis.remap("SR", [i, j])
                            T.where(i < 15)
                            T.reads(A[vi, 0:16])
                            T.writes(A[vi, vj], B[vi], tmp[0:16])
                            T.block_attr({"meta_schedule.unroll": 16, "note": "x"})
                            scratch = T.alloc_buffer((4,), "float16", scope="local")
                            view = T.match_buffer(A[vi, 0:4], (4,), "float32")
                            with T.init():
                                tmp[vi] = T.float32(0.0)
                            A[vi, vj] = T.if_then_else(vi >= 2 or vj != 1, T.Select(vi < vj and not vi == 3, T.max(T.min(A[vi, vj], T.float32(1.5)), T.exp(A[vi, vj])), T.Cast("float32", vi)), A[vi, vj] / T.float32(2.0))
                            B[vi] = T.Cast("int64", T.truncdiv(vi, 3) + T.truncmod(vj, 5) - vi // 2 % 4)
                            view[0] = A[vi, vj] * T.float32(0.25)
                for k in T.vectorized(2, 8):
                    tmp[T.Ramp(0, 1, 4)] = T.Broadcast(T.float32(1.0), 4)
                with T.attr(tmp.data, "storage_alignment", 128):
                    tmp[T.Ramp(0, 1, 4)] = T.Broadcast(T.float32(1.0), 4)
                x: T.int32 = 5
                if x > 0:
                    T.evaluate(T.call_intrin("int32", "my_intrin", x))
                elif x < -3:
                    T.evaluate(0)
                else:
                    T.evaluate(T.Let(y * y, where={y: x + 1}))
                staging = T.decl_buffer((8,), "int8", scope="local")
                staging[x] = T.int8(3)

            @T.prim_func
            def sym(C_handle: T.handle, D_handle: T.handle, m: T.int32):
                T.func_attr({"global_symbol": "sym"})
                n = T.int32()
                C = T.match_buffer(C_handle, (n, 8), "float32")
                D = T.match_buffer(D_handle, (m,), "float32", strides=(2,))
                for k in T.unroll(n):
                    C[k, 0] = D[k % m] + T.float32("inf")
        """)  # noqa: E501 - golden lines are as long as the printer makes them


# -- expressions ----------------------------------------------------------------------------

a, b, c, i, j = (var(n) for n in ("a", "b", "c", "i", "j"))
f, g = var("f", "float32"), var("g", "float32")
i_0, i_2, fused = var("i_0"), var("i_2"), var("i_1_j_1_fused")
ax0, ax1, ax2 = var("ax0"), var("ax1"), var("ax2")
_, BUF = arg("A", (16, 16))

PRECEDENCE = [
    (lambda: (a + b) * c, "(a + b) * c"),
    (lambda: a + b * c, "a + b * c"),
    (lambda: a - (b - c), "a - (b - c)"),
    (lambda: a - b - c, "a - b - c"),
    (lambda: a + (b + c), "a + (b + c)"),
    (lambda: a * (b * c), "a * (b * c)"),
    (lambda: a // 8 * 8, "a // 8 * 8"),
    (lambda: a // (8 * b), "a // (8 * b)"),
    (lambda: a % 8 * 8 + 1, "a % 8 * 8 + 1"),
    (lambda: (a + b) % 8, "(a + b) % 8"),
    (lambda: i_0 * 64 + fused // 8 * 8 + i_2, "i_0 * 64 + i_1_j_1_fused // 8 * 8 + i_2"),
    (
        lambda: i_0 * 64 + (ax0 * 256 + ax1 * 4 + ax2) // 8,
        "i_0 * 64 + (ax0 * 256 + ax1 * 4 + ax2) // 8",
    ),
    (lambda: a * -1, "a * -1"),
    (lambda: const(-2) * a, "-2 * a"),
    (lambda: -a, "0 - a"),
    (lambda: a < b + 1, "a < b + 1"),
    (lambda: op.eq(a < b, b < c), "(a < b) == (b < c)"),
    (lambda: op.logical_and(a < b, b < c), "a < b and b < c"),
    (lambda: op.logical_or(a < b, op.logical_and(b < c, c < a)), "a < b or b < c and c < a"),
    (lambda: op.logical_and(op.logical_or(a < b, b < c), c < a), "(a < b or b < c) and c < a"),
    (
        lambda: op.logical_and(a < b, op.logical_and(b < c, c < a)),
        "a < b and (b < c and c < a)",
    ),
    (lambda: op.logical_not(a < b), "not a < b"),
    (lambda: op.logical_not(op.logical_and(a < b, b < c)), "not (a < b and b < c)"),
    (lambda: op.eq(op.logical_not(a < b), b < c), "(not a < b) == (b < c)"),
    (lambda: f / g / f, "f / g / f"),
    (lambda: f / (g / f), "f / (g / f)"),
    (lambda: f * op.const(2.0) + g, "f * T.float32(2.0) + g"),
    (lambda: op.min_value(a + b, c) * 2, "T.min(a + b, c) * 2"),
    (lambda: op.max_value(a, b), "T.max(a, b)"),
    (lambda: op.truncdiv(a, b) + op.truncmod(a, b), "T.truncdiv(a, b) + T.truncmod(a, b)"),
    (lambda: Cast(dtype("float32"), a + b) * f, 'T.Cast("float32", a + b) * f'),
    (lambda: BUF[i + 1, j] * 2, "A[i + 1, j] * T.float32(2.0)"),
    (lambda: op.select(a < b, a, b), "T.Select(a < b, a, b)"),
    (lambda: op.math_call("exp", f), "T.exp(f)"),
    (lambda: op.math_call("pow", f, g), "T.pow(f, g)"),
    (lambda: op.math_call("sqrt", a), 'T.sqrt(T.Cast("float32", a))'),
    (lambda: op.if_then_else(a < b, f, g), "T.if_then_else(a < b, f, g)"),
    (lambda: Call(dtype("float16"), "exp", (f,)), 'T.call_intrin("float16", "exp", f)'),
    (
        lambda: op.call("tvm_thread_sync", "shared", dtype_="int32"),
        'T.call_intrin("int32", "tvm_thread_sync", "shared")',
    ),
    (lambda: Ramp(a * 4, const(1), 4), "T.Ramp(a * 4, 1, 4)"),
    (lambda: Broadcast(f, 8) + Broadcast(g, 8), "T.Broadcast(f, 8) + T.Broadcast(g, 8)"),
    (lambda: Let(i, a + 1, i * i), "T.Let(i * i, where={i: a + 1})"),
]


@pytest.mark.parametrize(("build", "expected"), PRECEDENCE, ids=[e for _, e in PRECEDENCE])
def test_precedence(build, expected):
    assert script(build()) == expected


def test_parenthesised_text_parses_to_the_same_tree_shape():
    # Python's own parser agrees with the printed grouping.
    text = script(a - (b - c) * (a + b) // 4)
    tree = ast.parse(text, mode="eval").body
    assert isinstance(tree, ast.BinOp) and isinstance(tree.op, ast.Sub)
    assert isinstance(tree.right, ast.BinOp) and isinstance(tree.right.op, ast.FloorDiv)


CONSTANTS = [
    (IntImm(5, dtype("int32")), "5"),
    (IntImm(-5, dtype("int32")), "-5"),
    (IntImm(5, dtype("int64")), "T.int64(5)"),
    (IntImm(-3, dtype("int8")), "T.int8(-3)"),
    (IntImm(255, dtype("uint8")), "T.uint8(255)"),
    (IntImm(1, dtype("bool")), "T.bool(True)"),
    (IntImm(0, dtype("bool")), "T.bool(False)"),
    (FloatImm(0.0, dtype("float32")), "T.float32(0.0)"),
    (FloatImm(0.1, dtype("float32")), "T.float32(0.1)"),
    (FloatImm(0.5, dtype("float16")), "T.float16(0.5)"),
    (FloatImm(1e-300, dtype("float64")), "T.float64(1e-300)"),
    (FloatImm(1.0, dtype("bfloat16")), "T.bfloat16(1.0)"),
    (FloatImm(math.inf, dtype("float32")), 'T.float32("inf")'),
    (FloatImm(-math.inf, dtype("float32")), 'T.float32("-inf")'),
    (FloatImm(math.nan, dtype("float32")), 'T.float32("nan")'),
    (StringImm('say "hi"\n'), '"say \\"hi\\"\\n"'),
]


@pytest.mark.parametrize(("node", "expected"), CONSTANTS, ids=[e for _, e in CONSTANTS])
def test_constants(node, expected):
    assert script(node) == expected


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_float_text_round_trips_exactly(value):
    text = script(FloatImm(value, dtype("float64")))
    assert text.startswith("T.float64(") and text.endswith(")")
    assert ast.literal_eval(text[len("T.float64(") : -1]) == value


# -- loops and blocks -----------------------------------------------------------------------


def _store(buf, *idx):
    return BufferStore(buf, const(1.0), tuple(op.convert(x) for x in idx))


def test_grid_merges_only_plain_nested_loops():
    _, x = arg("X", (8, 8, 8))
    k = var("k")
    inner = For(
        k, const(0), const(8), ForKind.SERIAL, _store(x, i, j, k), annotations=attrs({"u": 1})
    )
    assert script(grid([i, j], [8, 8], inner)) == golden("""
        for i, j in T.grid(8, 8):
            for k in T.serial(8, annotations={"u": 1}):
                X[i, j, k] = T.float32(1.0)
        """)
    # An inner extent that uses an outer variable stays a separate loop.
    triangle = loop(i, 8, loop(j, i + 1, _store(x, i, j, 0)))
    assert script(triangle) == golden("""
        for i in range(8):
            for j in range(i + 1):
                X[i, j, 0] = T.float32(1.0)
        """)
    shifted = For(i, const(2), const(6), ForKind.SERIAL, loop(j, 8, _store(x, i, j, 0)))
    assert script(shifted) == golden("""
        for i in T.serial(2, 8):
            for j in range(8):
                X[i, j, 0] = T.float32(1.0)
        """)
    symbolic = For(i, a, const(4), ForKind.PARALLEL, _store(x, i, 0, 0))
    assert script(symbolic) == "for i in T.parallel(a, a + 4):\n    X[i, 0, 0] = T.float32(1.0)"


def test_thread_binding_and_loop_kinds():
    _, x = arg("X", (8,))
    body = bound(i, 8, "threadIdx.x", loop(j, 4, _store(x, i), ForKind.VECTORIZED))
    assert script(body) == golden("""
        for i in T.thread_binding(8, thread="threadIdx.x"):
            for j in T.vectorized(4):
                X[i] = T.float32(1.0)
        """)


def _copy_block(extent_loop, dom, binding):
    _, x = arg("X", (1024,))
    vi = var("vi")
    blk = block("B", [(vi, dom, S, binding)], [], [x[vi : vi + 1]], _store(x, vi))
    return loop(i, extent_loop, blk)


def test_remap_only_when_the_loop_range_equals_the_domain():
    assert 'vi = T.axis.remap("S", [i])' in script(_copy_block(1024, 1024, i))
    assert "vi = T.axis.spatial(1024, i)" in script(_copy_block(512, 1024, i))
    assert "vi = T.axis.spatial(1024, i + 1)" in script(_copy_block(1023, 1024, i + 1))


def test_domain_with_nonzero_min_prints_as_a_pair():
    _, x = arg("X", (16,))
    vi = var("vi")
    ivs = (IterVar(vi, Range(const(4), const(8)), S),)
    realize = BlockRealize((i,), TRUE, Block("B", ivs, (), (), _store(x, vi)))
    assert script(loop(i, 8, realize)).splitlines()[2] == "        vi = T.axis.spatial((4, 12), i)"


def test_reduce_and_remap_kinds():
    text = script(matmul()["main"].body)
    assert 'vi, vj, vk = T.axis.remap("SSR", [i, j, k])' in text


def test_root_block_is_a_comment_only_when_the_parser_would_recreate_it():
    a_h, buf = arg("A", (4,))
    plain = PrimFunc((a_h,), loop(i, 4, _store(buf, i)), ((a_h, buf),))
    text = script(plain)
    assert 'T.block("root")' not in text
    assert text == golden("""
        # from tilewright.script import tir as T

        @T.prim_func
        def main(A: T.Buffer((4,), "float32")):
            for i in range(4):
                A[i] = T.float32(1.0)
        """)
    # A root block without inner blocks or allocations is written out.
    explicit = plain.with_body(root(loop(i, 4, _store(buf, i))))
    assert 'with T.block("root"):\n        T.reads()' in script(explicit)
    # So is a root block with annotations.
    notes = Block(
        "root", (), (), (), vector_add_split()["main"].body.block.body, annotations=attrs({"k": 1})
    )
    annotated = vector_add_split()["main"].with_body(BlockRealize((), TRUE, notes))
    assert '    with T.block("root"):\n' in script(annotated)
    assert "# with T.block" not in script(annotated)


def test_function_name_comes_from_the_key_or_global_symbol():
    f = vector_add_split()["main"]
    assert "def main(" in script(f)
    assert "def vadd(" in script(f.with_attr("global_symbol", "vadd"))
    assert "def kernel(" in script(IRModule({"kernel": f}))
    assert script(IRModule({})) == HEADER + "@I.ir_module\nclass Module:\n    pass"


def test_a_parsed_function_prints_under_its_own_name():
    @T.prim_func
    def kernel(A: T.Buffer((4,), "float32")):
        A[0] = T.float32(1)

    assert kernel.name == "kernel"
    assert 'def kernel(A: T.Buffer((4,), "float32")):' in script(kernel)
    # Its own name before its global_symbol (which still prints among its attributes) ...
    tagged = kernel.with_attr("global_symbol", "entry")
    assert "def kernel(" in script(tagged) and '"global_symbol": "entry"' in script(tagged)
    # ... and a module's key before both, as in TVM.
    assert "    def main(" in script(IRModule({"main": kernel}))
    parsed = from_source(script(kernel))
    assert isinstance(parsed, PrimFunc) and parsed.name == "kernel"


def test_header_can_be_left_out():
    assert script(matmul(), header=False).startswith("@I.ir_module\nclass Module:")
    assert script(matmul()["main"], header=False).startswith("@T.prim_func\n")


def test_shape_variables_are_declared_before_the_buffers_that_use_them():
    n = var("n")
    a_h, buf = Var("A", dtype("handle")), decl_buffer((n, 4), "float32", "A")
    f = PrimFunc((a_h,), loop(i, n, _store(buf, i, 0)), ((a_h, buf),))
    # The parameter list is read before the body, so the buffer is bound in the body.
    assert script(f, header=False) == golden("""
        @T.prim_func
        def main(A_handle: T.handle):
            n = T.int32()
            A = T.match_buffer(A_handle, (n, 4), "float32")
            for i in range(n):
                A[i, 0] = T.float32(1.0)
        """)


def test_scalar_parameter_used_in_an_earlier_shape_keeps_its_name():
    n = var("n")
    a_h, buf = Var("A", dtype("handle")), decl_buffer((n,), "float32", "A")
    f = PrimFunc((a_h, n), _store(buf, 0), ((a_h, buf),))
    assert 'def main(A: T.Buffer((n,), "float32"), n: T.int32):' in script(f)


def test_non_default_buffer_parameter_uses_match_buffer():
    a_h = Var("A", dtype("handle"))
    buf = decl_buffer((8,), "float16", "A", "global", elem_offset=4, align=16, offset_factor=2)
    f = PrimFunc((a_h,), _store(buf, 0), ((a_h, buf),))
    assert script(f, header=False) == golden("""
        @T.prim_func
        def main(A_handle: T.handle):
            A = T.match_buffer(A_handle, (8,), "float16", elem_offset=4, align=16, offset_factor=2)
            A[0] = T.float32(1.0)
        """)


# -- statements -----------------------------------------------------------------------------


def test_statements():
    _, x = arg("X", (8,))
    t = var("t")
    tmp = decl_buffer((4,), "float32", "tmp", "local")
    body = seq(
        IfThenElse(i < 4, _store(x, i)),
        IfThenElse(i < 2, _store(x, 0), Evaluate(const(0))),
        AttrStmt(x.data, "pragma", const(1), Allocate(tmp, _store(tmp, i))),
        LetStmt(t, i * 2, _store(x, t)),
    )
    assert script(body) == golden("""
        if i < 4:
            X[i] = T.float32(1.0)
        if i < 2:
            X[0] = T.float32(1.0)
        else:
            T.evaluate(0)
        with T.attr(X.data, "pragma", 1):
            tmp = T.decl_buffer((4,), "float32", scope="local")
            tmp[i] = T.float32(1.0)
        t: T.int32 = i * 2
        X[t] = T.float32(1.0)
        """)


def test_let_followed_by_more_statements_uses_with_and_a_declaration():
    t = var("t")
    a_h, buf = arg("A", (8,))
    body = seq(LetStmt(t, i * 2, _store(buf, t)), _store(buf, 0))
    f = PrimFunc((a_h, i), body, ((a_h, buf),))
    assert script(f, header=False) == golden("""
        @T.prim_func
        def main(A: T.Buffer((8,), "float32"), i: T.int32):
            t = T.int32()
            with T.let(t, i * 2):
                A[t] = T.float32(1.0)
            A[0] = T.float32(1.0)
        """)


def test_allocate_followed_by_more_statements_uses_with_as():
    tmp = decl_buffer((4,), "float32", "tmp", "local")
    _, x = arg("X", (8,))
    body = seq(Allocate(tmp, _store(tmp, 0)), _store(x, 0))
    assert script(body) == golden("""
        with T.decl_buffer((4,), "float32", scope="local") as tmp:
            tmp[0] = T.float32(1.0)
        X[0] = T.float32(1.0)
        """)


def test_empty_bodies_print_pass():
    assert script(loop(i, 4, seq())) == "for i in range(4):\n    pass"


def test_standalone_nodes():
    _, x = arg("X", (16, 16))
    vi = var("vi")
    blk = Block(
        "B",
        (IterVar(vi, Range(const(2), const(8)), S),),
        (x[vi : vi + 1, 0:4],),
        (),
        _store(x, vi, 0),
    )
    assert script(blk) == golden("""
        with T.block("B"):
            vi = T.axis.spatial((2, 10))
            T.reads(X[vi, 0:4])
            T.writes()
            X[vi, 0] = T.float32(1.0)
        """)
    assert script(x) == "X"
    assert script(x[i : i + 2, 0:16]) == "X[i:i + 2, 0:16]"
    assert script(Range(const(2), const(8))) == "T.Range(2, 10)"
    assert script(IterVar(vi, Range(const(0), j), R)) == 'T.iter_var(vi, T.Range(0, j), "reduce")'
    view = decl_buffer((4,), "float32", "view")
    match = MatchBufferRegion(view, x[i : i + 1, 0:4])
    assert script(match) == 'view = T.match_buffer(X[i, 0:4], (4,), "float32")'
    assert repr(x[i, j] + 1) == "X[i, j] + T.float32(1.0)"
    assert str(loop(i, 2, _store(x, i, i))) == "for i in range(2):\n    X[i, i] = T.float32(1.0)"


def test_unknown_nodes_print_generically():
    from dataclasses import dataclass

    @dataclass(frozen=True, eq=False, repr=False)
    class Marker(Node):
        label: str
        size: int

    assert script(Marker("m", 3)) == 'Marker(label="m", size=3)'
    with pytest.raises(TypeError, match="script\\(\\) prints IR nodes, not int"):
        script(3)  # type: ignore[arg-type]


# -- names and stability --------------------------------------------------------------------


def test_distinct_variables_sharing_a_name_get_suffixes():
    other_i = var("i")
    assert script(i + other_i * i) == "i + i_1 * i"
    _, x = arg("X", (8, 8))
    # An inner loop that would shadow an outer one is renamed ...
    nested = For(i, const(0), const(8), ForKind.PARALLEL, loop(other_i, 8, _store(x, i, other_i)))
    assert script(nested) == golden("""
        for i in T.parallel(8):
            for i_1 in range(8):
                X[i, i_1] = T.float32(1.0)
        """)
    # ... while sibling scopes reuse the name, as the notebook's blocks reuse `vi`.
    siblings = seq(loop(i, 8, _store(x, i, 0)), loop(other_i, 8, _store(x, other_i, 1)))
    assert script(siblings) == golden("""
        for i in range(8):
            X[i, 0] = T.float32(1.0)
        for i in range(8):
            X[i, 1] = T.float32(1.0)
        """)
    # A free variable keeps its name over a loop variable of the same name.
    assert script(loop(other_i, 8, _store(x, i, other_i))).startswith("for i_1 in range(8):")


def test_buffers_and_variables_share_one_namespace():
    a1, a2 = arg("A", (4,)), arg("A", (4,))
    x = var("A")
    f = PrimFunc((a1[0], a2[0], x), BufferStore(a1[1], a2[1][x], (const(0),)), (a1, a2))
    assert (
        'def main(A: T.Buffer((4,), "float32"), A_1: T.Buffer((4,), "float32"), A_2: T.int32):'
        in (script(f))
    )
    assert "A[0] = A_1[A_2]" in script(f)


@pytest.mark.parametrize(
    ("hint", "printed"),
    [
        ("T", "T_1"),
        ("I", "I_1"),
        ("range", "range_1"),
        ("lambda", "lambda_1"),
        ("threadIdx.x", "threadIdx_x"),
        ("", "v"),
        ("2x", "v_2x"),
        ("x-y", "x_y"),
    ],
)
def test_names_are_valid_identifiers(hint, printed):
    assert script(Var(hint, dtype("int32")) + 1) == f"{printed} + 1"


def test_printing_is_stable():
    first = matmul_blocked()
    assert script(first) == script(first)
    assert script(first) == script(matmul_blocked())
    assert script(every_node_kind()) == script(every_node_kind())


def test_printing_is_the_same_in_another_process():
    here = Path(__file__).parent
    code = (
        f"import sys; sys.path.insert(0, {str(here)!r}); import printer_programs as p; "
        "print(p.every_node_kind().script() + p.matmul_blocked().script(), end='')"
    )
    root_dir = str(here.parent.parent)
    other = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=root_dir,
    )
    assert other.stdout == every_node_kind().script() + matmul_blocked().script()


def test_module_functions_are_separated_by_a_blank_line():
    text = every_node_kind().script()
    assert "staging[x] = T.int8(3)\n\n    @T.prim_func\n    def sym(" in text


def test_notebook_attrs_print_as_a_dict():
    f = func([arg("A", (4,))], Evaluate(const(0)), NOTEBOOK_ATTRS)
    assert '    T.func_attr({"global_symbol": "main", "tir.noalias": True})' in script(f)
    nested = f.with_attr("layout", (("a", 1), ("b", (1, 2.5, "s"))))
    assert '"layout": {"a": 1, "b": [1, 2.5, "s"]}' in script(nested)
    assert module(f)["main"] is f


def test_marks_comment_the_line_that_opens_a_node():
    func = matmul_blocked()["main"]
    tile = func.body.block.body.body.body.body.body  # inside the four thread-bound loops
    init_grid, reduction, _ = tile.seq
    unrolled = reduction.body
    inner_grid = unrolled.body
    update = inner_grid.body.body
    marks = {
        update.block: "<-- here",
        unrolled: "unrolled",
        inner_grid.body: "j_2",
        init_grid: "init",
    }
    lines = script(func, marks=marks).splitlines()
    marked = [line.strip() for line in lines if "  # " in line.strip()]
    assert marked == [
        "for i_2_init, j_2_init in T.grid(8, 8):  # init",
        "for k_1 in T.unroll(4):  # unrolled",
        "for i_2, j_2 in T.grid(8, 8):  # j_2",
        'with T.block("C_update"):  # <-- here',
    ]
    assert script(func, marks={}) == script(func)
    assert script(update, marks={update: "x"}).splitlines()[0] == 'with T.block("C_update"):  # x'
