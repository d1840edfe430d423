"""Printing then parsing gives a structurally equal module, and printing again the same text."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from printer_programs import (
    EXPECTED_5,
    TRUE,
    S,
    arg,
    block,
    every_node_kind,
    loop,
    matmul,
    matmul_blocked,
    root,
    var,
    vector_add_split,
    window_sum_shared,
)
from seed_notebook import source

from tilewright.ir import (
    EQ,
    GE,
    GT,
    LE,
    LT,
    NE,
    Add,
    Allocate,
    And,
    AssertStmt,
    AttrStmt,
    Block,
    BlockRealize,
    Broadcast,
    BufferRegion,
    BufferStore,
    DeclBuffer,
    Evaluate,
    FloorDiv,
    FloorMod,
    For,
    ForKind,
    IfThenElse,
    IntImm,
    IRModule,
    IterKind,
    IterVar,
    Let,
    LetStmt,
    Max,
    Min,
    Mul,
    Not,
    Or,
    PrimFunc,
    Ramp,
    Range,
    Select,
    Shuffle,
    StringImm,
    Sub,
    While,
    assert_structural_equal,
    attrs,
    const,
    decl_buffer,
    dtype,
    op,
    seq,
)
from tilewright.script import from_source


def _one_buffer(body_of, shape=(16,), dt="float32") -> IRModule:
    a_h, a = arg("A", shape, dt)
    return IRModule({"main": PrimFunc((a_h,), body_of(a), ((a_h, a),))})


def _store(a, index, value=1.0):
    return BufferStore(a, op.convert(value, a.dtype), (op.convert(index),))


def shadowed_names() -> IRModule:
    i, other = var("i"), var("i")
    return _one_buffer(
        lambda a: seq(
            For(i, const(0), const(4), ForKind.PARALLEL, loop(other, 4, _store(a, i * 4 + other))),
            loop(var("i"), 4, _store(a, 0)),
        )
    )


def let_before_more_statements() -> IRModule:
    t, i = var("t"), var("i")
    return _one_buffer(lambda a: seq(LetStmt(t, const(3), _store(a, t)), loop(i, 4, _store(a, i))))


def int64_loop() -> IRModule:
    i = var("i", "int64")
    n16 = IntImm(16, dtype("int64"))
    return _one_buffer(
        lambda a: For(
            i, IntImm(0, dtype("int64")), n16, ForKind.SERIAL, _store(a, op.cast(i, "int32"))
        )
    )


def opaque_block_with_offset_domain() -> IRModule:
    i, vi = var("i"), var("vi")

    def body(a):
        ivs = (IterVar(vi, Range(const(2), const(8)), IterKind.OPAQUE),)
        blk = Block("B", ivs, (), (a[vi : vi + 1],), _store(a, vi, a[vi - 2] * op.const(-1.5)))
        return root(loop(i, 8, BlockRealize((i + 2,), TRUE, blk)))

    return _one_buffer(body)


def explicit_root_without_blocks() -> IRModule:
    i = var("i")
    return _one_buffer(lambda a: root(loop(i, 16, _store(a, i))))


def control_flow_and_vectors() -> IRModule:
    i, x = var("i"), var("x")

    def body(a):
        branches = IfThenElse(
            op.logical_or(i < 3, op.logical_and(op.eq(i, 7), i <= 12)),
            _store(a, i),
            IfThenElse(
                op.logical_not(i < 5),
                _store(a, i, 2.0),
                _store(a, i, op.cast((i - 8) // 3 % 4, "float32")),
            ),
        )
        vector = BufferStore(
            a,
            a[Ramp(const(0), const(1), 4)] + Broadcast(op.const(1.0), 4),
            (Ramp(const(4), const(1), 4),),
        )
        notes = attrs({"pragma_auto_unroll_max_step": 16, "s": "x", "f": 1.5, "l": [1, 2]})
        return seq(
            For(i, const(0), const(16), ForKind.UNROLLED, branches, annotations=notes),
            AttrStmt(a.data, "key", StringImm("v"), vector),
            Evaluate(op.call("tvm_storage_sync", "shared", dtype_="int32")),
            loop(i2 := var("i"), 16, _store(a, i2, op.cast(Let(x, i2 + 1, x * x), "float32"))),
        )

    return _one_buffer(body)


def float16_and_block_annotations() -> IRModule:
    i, vi = var("i"), var("vi")

    def body(h):
        update = _store(h, vi, h[vi] * op.const(0.5, "float16"))
        blk = block("B", [(vi, 8, S, i)], [h[vi : vi + 1]], [h[vi : vi + 1]], update)
        blk = blk.replace(block=blk.block.replace(annotations=attrs({"meta_schedule.unroll": 4})))
        return root(loop(i, 8, blk))

    return _one_buffer(body, (8,), "float16")


def non_default_parameters() -> IRModule:
    a_h, b_h = var("A", "handle"), var("B", "handle")
    a = decl_buffer((4, 4), "float32", "A", strides=(const(8), const(1)))
    b = decl_buffer((4,), "float32", "B", "shared")
    tmp = decl_buffer((4,), "float32", "tmp", "local")
    body = seq(
        _store(b, 0, a[1, 2]),
        Allocate(tmp, BufferStore(tmp, b[0], (const(1),))),
    )
    return IRModule({"main": PrimFunc((a_h, b_h), body, ((a_h, a), (b_h, b)))})


def int64_block_and_scalar_dtypes() -> IRModule:
    i64 = dtype("int64")
    i, vi, n, f = var("i", "int64"), var("vi", "int64"), var("n", "int64"), var("f")
    a_h, a = var("A", "handle"), decl_buffer((IntImm(16, i64),), "float32", "A")
    b_h, b = arg("B", (8,), "bool")
    u_h, u = arg("U", (8,), "uint8")
    one = Range(vi, IntImm(1, i64))
    iv = IterVar(vi, Range(IntImm(0, i64), IntImm(16, i64)), S)
    update = BufferStore(a, a[vi] + op.cast(f, "float32"), (vi,))
    blk = Block("B", (iv,), (BufferRegion(a, (one,)),), (BufferRegion(a, (one,)),), update)
    j = var("j")
    flags = seq(
        BufferStore(b, op.logical_not(b[j]), (j,)),
        BufferStore(u, u[j] + op.const(1, "uint8"), (j,)),
        _store(
            a, op.cast(n, "int32"), op.select(a[j] > op.const(0.0), a[j] // op.const(2.0), a[j])
        ),
    )
    body = seq(
        For(i, IntImm(0, i64), IntImm(16, i64), ForKind.SERIAL, BlockRealize((i,), TRUE, blk)),
        loop(j, 8, flags),
    )
    args = ((a_h, a), (b_h, b), (u_h, u))
    return IRModule({"main": PrimFunc((a_h, b_h, u_h, n, f), root(body), args)})


def nested_blocks_under_an_annotated_root() -> IRModule:
    j, j2, j3, k = var("j"), var("j"), var("j"), var("k")
    vo, vj, vs = var("vo"), var("vj"), var("vs")

    def body(a):
        tmp = decl_buffer((4,), "float32", "tmp", "local")
        inner = block("inner", [(vj, 4, S, k)], [], [tmp[vj : vj + 1]], _store(tmp, vj, 0.0))
        outer = block("outer", [(vo, 8, S, j)], [], [], loop(k, 4, inner), alloc=(tmp,))
        scan = block("scan", [(vs, 8, IterKind.SCAN, j2)], [], [], Evaluate(const(0)))
        guarded = block(
            "guarded",
            [(var("vw"), 8, S, j3)],
            [],
            [],
            Evaluate(const(0)),
            where=op.logical_and(j3 < 6, j3 > 1),
        )
        bound_loop = For(j3, const(2), const(4), ForKind.THREAD_BINDING, guarded, "threadIdx.x")
        notes = attrs({"note": 1})
        top = Block(
            "root",
            (),
            (),
            (),
            seq(loop(j, 8, outer), loop(j2, 8, scan), bound_loop),
            alloc_buffers=(decl_buffer((4,), "float32", "shared_tmp", "shared"),),
            annotations=notes,
        )
        return BlockRealize((), TRUE, top)

    return _one_buffer(body)


def _region_block(start_of, extent_of) -> IRModule:
    i, vi, n = var("i"), var("vi"), var("n")
    a_h, a = arg("A", (64,))
    window = BufferRegion(a, (Range(start_of(vi), extent_of(n)),))
    iv = IterVar(vi, Range(const(0), const(16)), S)
    blk = Block("B", (iv,), (window,), (a[vi : vi + 1],), _store(a, vi))
    body = root(loop(i, 16, BlockRealize((i,), TRUE, blk)))
    return IRModule({"main": PrimFunc((a_h, n), body, ((a_h, a),))})


def _allocate_then_more() -> IRModule:
    tmp = decl_buffer((4,), "float32", "tmp", "local")
    return _one_buffer(lambda a: seq(Allocate(tmp, _store(tmp, 0)), _store(a, 0)))


def constant_and_stage_ir() -> IRModule:
    from corpus.host_builtins import allocate_const_view, realize_whole_buffer

    return IRModule({"const": allocate_const_view, "realize": realize_whole_buffer})


def assert_while_and_shuffle() -> IRModule:
    flag = decl_buffer((1,), "int32", "flag", "local")

    def body(a):
        shuffled = Shuffle((a[Ramp(const(0), const(1), 4)],), tuple(const(k) for k in (3, 2, 1, 0)))
        loop = While(flag[const(0)] < 4, _store(flag, 0, flag[const(0)] + 1))
        checked = AssertStmt(op.eq(flag[const(0)], 4), StringImm("done"), _store(a, 1))
        inner = seq(BufferStore(a, shuffled, (Ramp(const(4), const(1), 4),)), loop, checked)
        view = decl_buffer((4,), "float32", "view", data=a.data)
        tail = seq(DeclBuffer(view, _store(view, 3)), _store(a, 2))
        return Allocate(
            flag, seq(_store(flag, 0, const(0)), AssertStmt(TRUE, StringImm("x"), inner), tail)
        )

    return _one_buffer(body)


def vector_let() -> IRModule:
    x = var("x", "float32x4")
    return _one_buffer(
        lambda a: LetStmt(
            x, a[Ramp(const(0), const(1), 4)], BufferStore(a, x + x, (Ramp(const(4), const(1), 4),))
        )
    )


def region_with_expression_start() -> IRModule:
    return _region_block(lambda v: v * 2, lambda n: const(3))


def region_from_zero_to_a_variable() -> IRModule:
    return _region_block(lambda v: const(0), lambda n: n)


def empty_loop_body() -> IRModule:
    return _one_buffer(lambda a: loop(var("i"), 4, seq()))


def thread_allreduce_under_its_reducer() -> IRModule:
    """TVM's lowered cross-thread reduction: an allreduce under its comm_reducer."""
    from tilewright.ir import BufferLoad, intrinsics
    from tilewright.ir.comm_reducer import standard_reducer

    a = arg("A", (32,))
    red = decl_buffer((1,), "float32", "red", "local")
    t = var("t")
    call = intrinsics.THREAD_ALLREDUCE.call(
        IntImm(1, dtype("uint32")), BufferLoad(a[1], (t,)), TRUE, BufferLoad(red, (const(0),)), t
    )
    scope = intrinsics.REINTERPRET.call(IntImm(0, dtype("uint64")), dtype=dtype("handle"))
    reducer = standard_reducer("max", dtype("float32"))
    body = Allocate(red, AttrStmt(reducer, "reduce_scope", scope, Evaluate(call)))
    kernel = loop(t, 32, body, ForKind.THREAD_BINDING, "threadIdx.x")
    return IRModule({"main": PrimFunc((a[0],), kernel, (a,))})


FIXTURES = {
    "vector_add_split": vector_add_split,
    "window_sum_shared": window_sum_shared,
    "matmul": matmul,
    "matmul_blocked": matmul_blocked,
    "every_node_kind": every_node_kind,
    "shadowed_names": shadowed_names,
    "let_before_more_statements": let_before_more_statements,
    "int64_loop": int64_loop,
    "opaque_block_with_offset_domain": opaque_block_with_offset_domain,
    "explicit_root_without_blocks": explicit_root_without_blocks,
    "control_flow_and_vectors": control_flow_and_vectors,
    "float16_and_block_annotations": float16_and_block_annotations,
    "non_default_parameters": non_default_parameters,
    "int64_block_and_scalar_dtypes": int64_block_and_scalar_dtypes,
    "nested_blocks_under_an_annotated_root": nested_blocks_under_an_annotated_root,
    "region_with_expression_start": region_with_expression_start,
    "region_from_zero_to_a_variable": region_from_zero_to_a_variable,
    "vector_typed_variable": vector_let,
    "empty_loop_body": empty_loop_body,
    "thread_allreduce_under_its_reducer": thread_allreduce_under_its_reducer,
    "allocate_followed_by_more_statements": _allocate_then_more,
    "assert_while_and_shuffle": assert_while_and_shuffle,
    "constant_buffer_realize_and_prefetch": constant_and_stage_ir,
}


@pytest.mark.parametrize("name", list(FIXTURES))
def test_print_parse_print(name):
    mod = FIXTURES[name]()
    text = mod.script()
    back = from_source(text)
    assert_structural_equal(back, mod)
    assert back.script() == text
    assert mod.script() == text


def test_fixtures_cover_every_node_kind():
    import tilewright.ir as ir
    from tilewright.ir.functor import pre_order_visit

    seen: set[str] = set()
    for build in FIXTURES.values():
        pre_order_visit(build(), lambda node: seen.add(type(node).__name__))
    kinds = {
        name
        for name in dir(ir)
        if isinstance(getattr(ir, name), type)
        and issubclass(getattr(ir, name), ir.Node)
        and getattr(ir, name).__subclasses__() == []
        and name not in ("IRModule",)
    }
    assert kinds - seen == set()


def test_notebook_expected_5_prints_in_the_modern_spelling():
    parsed = from_source(source("Expected_5"))
    assert_structural_equal(parsed, matmul_blocked())
    header = (
        "# from tilewright.script import ir as I\n# from tilewright.script import tir as T\n\n\n"
    )
    assert parsed.script() == header + EXPECTED_5.strip("\n")


# -- random expressions: the printed parentheses give back the same tree ------------------

_A, _B, _C = var("a"), var("b"), var("c")
_INT_OPS = (Add, Sub, Mul, FloorDiv, FloorMod, Min, Max)
_CMP_OPS = (EQ, NE, LT, LE, GT, GE)


def _int_exprs():
    leaves = st.sampled_from([_A, _B, _C])

    def grow(children):
        binary = st.tuples(st.sampled_from(_INT_OPS), children, children).map(
            lambda t: t[0](t[1], t[2])
        )
        # A constant only beside a variable, so that nothing folds when parsed.
        with_const = st.tuples(
            st.sampled_from(_INT_OPS), leaves, st.integers(-3, 9).map(const), st.booleans()
        ).map(lambda t: t[0](t[1], t[2]) if t[3] else t[0](t[2], t[1]))
        return binary | with_const

    return st.recursive(leaves, grow, max_leaves=8)


def _bool_exprs(ints):
    compare = st.tuples(st.sampled_from(_CMP_OPS), ints, ints).map(lambda t: t[0](t[1], t[2]))

    def grow(children):
        logic = st.tuples(st.sampled_from((And, Or, EQ, NE)), children, children).map(
            lambda t: t[0](t[1], t[2])
        )
        return logic | children.map(Not)

    return st.recursive(compare, grow, max_leaves=4)


@settings(max_examples=100, deadline=None)
@given(st.data())
def test_random_expressions_print_and_parse_to_the_same_tree(data):
    ints = _int_exprs()
    cond = data.draw(_bool_exprs(ints))
    value = data.draw(ints)
    picked = Select(cond, value, data.draw(ints))
    a_h, out = arg("Out", (1,), "int32")
    func = PrimFunc((a_h, _A, _B, _C), BufferStore(out, picked, (const(0),)), ((a_h, out),))
    mod = IRModule({"main": func})
    assert_structural_equal(from_source(mod.script()), mod)
