"""Parser statements: functions, parameters, loops, blocks, buffers and control flow."""

# ruff: noqa: F821, UP037 - strings and names inside T.Buffer annotations are script syntax
# (dtypes, later parameters), not Python forward references
from __future__ import annotations

import pytest

import tilewright as tw
from tilewright.ir import (
    Allocate,
    AttrStmt,
    Block,
    BlockRealize,
    BufferStore,
    Evaluate,
    For,
    ForKind,
    IfThenElse,
    IntImm,
    IRModule,
    IterKind,
    LetStmt,
    PrimFunc,
    SeqStmt,
    Var,
    assert_structural_equal,
)
from tilewright.script import from_source, parse
from tilewright.script import ir as I
from tilewright.script import tir as T


def test_prim_func_params_and_buffer_map():
    @T.prim_func
    def f(A: T.Buffer((4, 8), "float16"), n: T.int32, h: T.handle):
        A[0, 0] = T.float16(1)

    assert isinstance(f, PrimFunc)
    a, n, h = f.params
    assert (a.name, str(a.dtype)) == ("A", "handle")
    assert (n.name, str(n.dtype)) == ("n", "int32")
    assert str(h.dtype) == "handle"
    ((param, buf),) = f.buffer_map
    assert param is a and buf.name == "A" and buf.data is not a and buf.data.name == "A"
    assert [s.value for s in buf.shape] == [4, 8] and str(buf.dtype) == "float16"
    assert f.attrs == ()


def test_buffer_spellings_are_equal():
    @T.prim_func
    def old(A: T.Buffer[1024, "float32"]):
        A[0] = 1.0

    @T.prim_func
    def old_tuple(A: T.Buffer[(1024,), "float32"]):
        A[0] = 1.0

    @T.prim_func
    def new(A: T.Buffer((1024,), "float32")):
        A[0] = 1.0

    @T.prim_func
    def new_int(A: T.Buffer(1024, "float32")):
        A[0] = 1.0

    for other in (old_tuple, new, new_int):
        assert_structural_equal(old, other)


def test_match_buffer_equals_inline_buffer():
    @T.prim_func
    def inline(A: T.Buffer((16,), "float32")):
        A[1] = 2.0

    @T.prim_func
    def matched(a: T.handle):
        A = T.match_buffer(a, (16,), "float32")
        A[1] = 2.0

    assert_structural_equal(inline, matched)
    assert matched.params[0].name == "a" and matched.buffer_map[0][1].name == "A"


def test_symbolic_shape_from_later_scalar_param():
    @T.prim_func
    def f(A: T.Buffer((n,), "float32"), n: T.int32):
        for i in range(n):
            A[i] = 0.0

    _, n = f.params
    buf = f.buffer_map[0][1]
    assert buf.shape[0] is n
    assert f.body.extent is n


def test_shape_and_constants_from_python_environment():
    size = 32
    scale = 3

    @T.prim_func
    def f(A: T.Buffer((size,), "float32")):
        for i in T.serial(size):
            A[i] = A[i] * scale

    assert f.buffer_map[0][1].shape[0].value == 32
    assert f.body.extent.value == 32
    assert f.body.body.value.b.value == 3.0


def test_func_attr_and_private_decorator():
    @T.prim_func(private=True)
    def f(A: T.Buffer((4,), "float32")):
        T.func_attr({"global_symbol": "f", "tir.noalias": True})
        A[0] = 1.0

    assert f.attrs == (("global_symbol", "f"), ("tir.noalias", True))


def test_ir_module_collects_prim_funcs_in_order():
    @I.ir_module
    class Mod:
        @T.prim_func
        def first(A: T.Buffer((4,), "float32")):
            A[0] = 1.0

        @T.prim_func
        def second(A: T.Buffer((4,), "float32")):
            A[1] = 1.0

    assert isinstance(Mod, IRModule) and list(Mod) == ["first", "second"]
    assert tw.script.ir_module is I.ir_module


def test_parse_alias_and_from_source_function():
    text = '@T.prim_func\ndef f(A: T.Buffer((4,), "float32")):\n    A[0] = 1.0\n'
    func = parse(text)
    assert isinstance(func, PrimFunc)
    assert_structural_equal(func, from_source(text))


def test_from_source_with_imports_and_aliases():
    text = (
        "import tvm\n"
        "from tvm.script import tir as TT\n"
        "@tvm.script.ir_module\n"
        "class M:\n"
        "    @TT.prim_func\n"
        '    def main(A: TT.Buffer((4,), "float32")):\n'
        "        A[0] = 1.0\n"
    )
    mod = from_source(text)
    assert isinstance(mod, IRModule) and list(mod) == ["main"]


def test_loop_kinds_and_thread_binding():
    @T.prim_func
    def f(A: T.Buffer((64,), "float32")):
        for a in T.parallel(2):
            for b in T.vectorized(2):
                for c in T.unroll(2):
                    for d in T.thread_binding(2, thread="threadIdx.x"):
                        for e in T.serial(1, 3, annotations={"pragma": 1}):
                            A[a * 32 + b * 16 + c * 8 + d * 4 + e] = 0.0

    loops = []
    node = f.body
    while isinstance(node, For):
        loops.append(node)
        node = node.body
    kinds = [lp.kind for lp in loops]
    assert kinds == [
        ForKind.PARALLEL,
        ForKind.VECTORIZED,
        ForKind.UNROLLED,
        ForKind.THREAD_BINDING,
        ForKind.SERIAL,
    ]
    assert loops[3].thread_tag == "threadIdx.x"
    assert (loops[4].min.value, loops[4].extent.value) == (1, 2)
    assert loops[4].annotations == (("pragma", 1),)
    assert [lp.loop_var.name for lp in loops] == ["a", "b", "c", "d", "e"]


def test_grid_range_and_serial_agree():
    @T.prim_func
    def grid(A: T.Buffer((4, 4), "float32")):
        for i, j in T.grid(4, 4):
            A[i, j] = 0.0

    @T.prim_func
    def nested(A: T.Buffer((4, 4), "float32")):
        for i in range(4):
            for j in T.serial(4):
                A[i, j] = 0.0

    assert_structural_equal(grid, nested)
    assert grid.body.kind is ForKind.SERIAL and grid.body.min.value == 0


def test_block_axes_where_attr_alloc_and_init():
    @T.prim_func
    def f(A: T.Buffer((8, 8), "float32"), B: T.Buffer((8,), "float32")):
        for i, k in T.grid(8, 8):
            with T.block("sum"):
                vi = T.axis.spatial(8, i)
                vk = T.axis.reduce((0, 8), k)
                T.where(i < 7)
                T.block_attr({"meta_schedule.unroll": 16})
                tmp = T.alloc_buffer((1,), scope="local")
                with T.init():
                    B[vi] = 0.0
                tmp[0] = A[vi, vk]
                B[vi] = B[vi] + tmp[0]

    realize = f.body.block.body.body.body
    assert isinstance(realize, BlockRealize)
    block = realize.block
    assert [iv.kind for iv in block.iter_vars] == [IterKind.SPATIAL, IterKind.REDUCE]
    assert [iv.var.name for iv in block.iter_vars] == ["vi", "vk"]
    assert block.iter_vars[1].dom.extent.value == 8
    assert realize.iter_values == (f.body.block.body.loop_var, f.body.block.body.body.loop_var)
    assert type(realize.predicate).__name__ == "LT"
    assert block.annotations == (("meta_schedule.unroll", 16),)
    assert [(b.name, b.scope) for b in block.alloc_buffers] == [("tmp", "local")]
    assert isinstance(block.init, BufferStore)
    # The block's own allocation is not an access; B, a reduction's output, is a write only.
    assert [r.buffer.name for r in block.reads] == ["A"]
    assert [w.buffer.name for w in block.writes] == ["B"]


def test_axis_scan_opaque_and_shorthands():
    @T.prim_func
    def f(A: T.Buffer((4,), "float32")):
        for i in range(4):
            with T.block("b"):
                v0 = T.axis.S(4, i)
                v1 = T.axis.R(4, i)
                v2 = T.axis.scan(4, i)
                v3 = T.axis.opaque(4, i)
                A[v0] = A[v1] + A[v2] + A[v3]

    block = f.body.block.body.body.block
    assert [iv.kind for iv in block.iter_vars] == [
        IterKind.SPATIAL,
        IterKind.REDUCE,
        IterKind.SCAN,
        IterKind.OPAQUE,
    ]


def test_root_block_wraps_blocks_and_function_level_allocs():
    @T.prim_func
    def f(A: T.Buffer((4,), "float32")):
        X = T.sblock_alloc_buffer((4,), "float32", scope="shared")
        for i in range(4):
            X[i] = A[i]

    root = f.body
    assert isinstance(root, BlockRealize) and root.block.name == "root"
    assert root.block.alloc_buffers[0].name == "X" and root.block.reads == ()
    assert isinstance(root.block.body, For)

    @T.prim_func
    def plain(A: T.Buffer((4,), "float32")):
        for i in range(4):
            A[i] = 0.0

    assert isinstance(plain.body, For)


def test_explicit_root_block_is_not_wrapped_again():
    @T.prim_func
    def f(A: T.Buffer((4,), "float32")):
        with T.block("root"):
            T.block_attr({"k": 1})
            for i in range(4):
                with T.block("b"):
                    vi = T.axis.remap("S", [i])
                    A[vi] = 0.0

    assert f.body.block.name == "root" and f.body.block.annotations == (("k", 1),)
    assert isinstance(f.body.block.body, For)


def test_let_statements_and_decl_buffer():
    @T.prim_func
    def f(A: T.Buffer((4,), "float32"), n: T.int32):
        x: T.int32 = n + 1
        y = x * 2
        X = T.decl_buffer((4,), "float32", scope="local")
        X[0] = A[y]
        A[0] = X[0]

    assert isinstance(f.body, LetStmt) and f.body.var.name == "x"
    assert str(f.body.var.dtype) == "int32"
    inner = f.body.body
    assert isinstance(inner, LetStmt) and inner.var.name == "y" and inner.value.a is f.body.var
    alloc = inner.body
    assert isinstance(alloc, Allocate) and alloc.buffer.scope == "local"
    assert isinstance(alloc.body, SeqStmt) and len(alloc.body.seq) == 2


def test_annotated_let_converts_constant_and_with_let():
    @T.prim_func
    def f(A: T.Buffer((4,), "float32")):
        c: T.float32 = 2
        v = T.int32()
        with T.let(v, 3):
            A[v] = c

    assert f.body.value.value == 2.0 and str(f.body.value.dtype) == "float32"
    let = f.body.body
    assert isinstance(let, LetStmt) and let.var.name == "v" and let.value.value == 3


def test_if_else_and_python_time_if():
    unroll = False

    @T.prim_func
    def f(A: T.Buffer((4,), "float32")):
        for i in range(4):
            if i < 2:
                A[i] = 0.0
            else:
                A[i] = 1.0
            if unroll:
                A[i] = 5.0

    branch = f.body.body
    assert isinstance(branch, IfThenElse)
    assert isinstance(branch.then_case, BufferStore) and isinstance(branch.else_case, BufferStore)


def test_evaluate_attr_and_bare_call():
    @T.prim_func
    def f(A: T.Buffer((4,), "float32"), n: T.int32):
        with T.attr(A.data, "storage_alignment", 16):
            T.evaluate(T.call_intrin("int32", "my_barrier"))
        T.call_intrin("int32", "other", n)

    first, second = f.body.seq
    assert isinstance(first, AttrStmt) and first.key == "storage_alignment"
    assert first.node is f.buffer_map[0][1].data and first.value.value == 16
    assert isinstance(first.body, Evaluate) and first.body.value.op == "my_barrier"
    assert isinstance(second, Evaluate) and second.value.args[0] is f.params[1]


def test_store_constant_takes_buffer_dtype_and_aug_assign():
    @T.prim_func
    def f(A: T.Buffer((4,), "float16"), B: T.Buffer((4,), "int8")):
        A[0] = 1
        B[0] = 3
        B[1] += 2

    a0, b0, b1 = f.body.seq
    assert str(a0.value.dtype) == "float16" and a0.value.value == 1.0
    assert str(b0.value.dtype) == "int8"
    assert type(b1.value).__name__ == "Add" and b1.value.a.buffer is b1.buffer


def test_scoping_inner_names_shadow_outer():
    @T.prim_func
    def f(A: T.Buffer((4, 4), "float32")):
        for i in range(4):
            for i in range(4):
                A[i, i] = 0.0

    outer, inner = f.body, f.body.body
    assert inner.body.indices[0] is inner.loop_var
    assert inner.loop_var is not outer.loop_var


def test_block_body_only_directives_is_no_op_and_buffer_view():
    @T.prim_func
    def f(A: T.Buffer((4,), "float32")):
        for i in range(4):
            with T.block("b"):
                vi = T.axis.remap("S", [i])
                T.where(vi < 4)
                T.reads()
                T.writes()
        V = T.Buffer((2, 2), "float32", data=A.data)
        V[1, 1] = 0.0

    loop, store = f.body.block.body.seq
    block = loop.body.block
    assert block.body.seq == () and block.reads == () and block.writes == ()
    assert store.buffer.data is f.buffer_map[0][1].data and store.buffer.ndim == 2
    assert isinstance(block.iter_vars[0].var, Var)


def test_match_buffer_region_in_block():
    @T.prim_func
    def f(A: T.Buffer((8, 8), "float32")):
        for i in range(8):
            with T.block("row"):
                vi = T.axis.remap("S", [i])
                R = T.match_buffer(A[vi, 0:8], (8,), "float32")
                R[0] = 1.0

    block = f.body.block.body.body.block
    (match,) = block.match_buffers
    assert match.buffer.name == "R" and match.source.buffer.name == "A"
    assert match.source.region[1].extent.value == 8


def test_int64_loop_extent_gives_int64_var():
    @T.prim_func
    def f(A: T.Buffer((4,), "float32")):
        for i in T.serial(T.int64(4)):
            A[i] = 0.0

    assert str(f.body.loop_var.dtype) == "int64"
    assert f.body.min.dtype == f.body.extent.dtype


def test_printer_round_trip_of_constructs():
    @T.prim_func
    def f(A: T.Buffer((8, 8), "float32"), n: T.int32):
        T.func_attr({"global_symbol": "f"})
        for i, k in T.grid(8, 8):
            with T.block("sum"):
                vi, vk = T.axis.remap("SR", [i, k])
                with T.init():
                    A[vi, 0] = 0.0
                A[vi, 0] = A[vi, 0] + A[vi, vk]
        for j in T.thread_binding(8, thread="threadIdx.x"):
            x: T.int32 = j + n
            if x < 4:
                A[x, 0] = T.exp(A[x, 0])

    assert_structural_equal(from_source(f.script()), f)
    assert isinstance(IntImm(1, f.params[1].dtype), IntImm)
    assert all(isinstance(b, Block) for b in [f.body.block])


def test_annotation_names_from_the_defining_frame():
    rows = 6  # used only in the annotation: found in the frame locals, not the closure

    @T.prim_func
    def f(A: T.Buffer((rows, 2), "float32")):
        A[0, 0] = 1.0

    assert [s.value for s in f.buffer_map[0][1].shape] == [6, 2]


def test_buffer_parameter_options():
    @T.prim_func
    def f(A: T.Buffer((4,), "float16", scope="shared", align=16, offset_factor=4)):
        A[0] = 1.0

    buf = f.buffer_map[0][1]
    assert (buf.scope, buf.align, buf.offset_factor, str(buf.dtype)) == ("shared", 16, 4, "float16")


def test_prim_func_rejects_non_functions():
    with pytest.raises(TypeError, match=r"prim_func decorates a Python function, found int"):
        T.prim_func(3)


def test_pass_is_an_empty_sequence():
    @T.prim_func
    def f(A: T.Buffer((4,), "float32")):
        for _i in range(4):
            pass

    assert isinstance(f.body.body, SeqStmt) and f.body.body.seq == ()


def test_vector_dtype_variables_and_slices_with_expression_starts():
    @T.prim_func
    def f(A: T.Buffer((64,), "float32"), n: T.int32):
        x: T.float32x4 = A[T.Ramp(0, 1, 4)]
        for i in range(8):
            with T.block("b"):
                vi = T.axis.remap("S", [i])
                T.reads(A[vi * 2 : vi * 2 + 3], A[0:n])
                A[vi] = 0.0
        A[T.Ramp(4, 1, 4)] = x

    let = f.body.block.body
    assert str(let.var.dtype) == "float32x4"
    block = let.body.seq[0].body.block
    first, second = block.reads
    assert first.region[0].extent.value == 3
    assert second.region[0].extent is f.params[1]
    with pytest.raises(TypeError, match=r"T.float32x4 takes an expression"):
        T.float32x4(1.0)


def test_with_decl_buffer_scopes_the_allocation():
    @T.prim_func
    def f(A: T.Buffer((4,), "float32")):
        with T.decl_buffer((2,), "float32", scope="local") as X:
            X[0] = A[0]
            A[1] = X[0]
        A[2] = 0.0

    alloc, after = f.body.seq
    assert isinstance(alloc, Allocate) and alloc.buffer.name == "X"
    assert alloc.buffer.scope == "local" and len(alloc.body.seq) == 2
    assert isinstance(after, BufferStore)


def test_namespaces_reachable_from_the_package():
    assert tw.script.tir.grid is T.grid and tw.script.ir.ir_module is I.ir_module
