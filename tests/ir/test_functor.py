from tilewright.ir import (
    Add,
    BufferLoad,
    BufferStore,
    Mutator,
    Var,
    Visitor,
    collect_vars,
    decl_buffer,
    dtype,
    post_order_visit,
    seq,
    substitute,
)


def test_visitor_dispatches_to_nearest_base_class():
    i = Var("i", dtype("int32"))
    seen = []

    class CountBinary(Visitor):
        def visit_BinaryOp(self, node):
            seen.append(type(node).__name__)
            self.generic_visit(node)

    CountBinary().visit((i + 1) * 2 - i // 4)
    assert sorted(seen) == ["Add", "FloorDiv", "Mul", "Sub"]


def test_mutator_keeps_unchanged_subtrees():
    i = Var("i", dtype("int32"))
    expr = (i + 1) * 2
    assert Mutator().visit(expr) is expr


def test_mutator_rewrites_each_buffer_once():
    n = Var("n", dtype("int32"))
    a = decl_buffer((n,), "float32", "A")
    i = Var("i", dtype("int32"))
    stmt = BufferStore(a, a[i] + 1.0, (i,))
    out = substitute(stmt, {n: 16})
    assert out.buffer is out.value.a.buffer
    assert out.buffer.shape[0].value == 16


def test_substitute_and_collect():
    i, j = Var("i", dtype("int32")), Var("j", dtype("int32"))
    e = substitute(i * 4 + j, {i: j + 1})
    assert isinstance(e, Add)
    assert collect_vars(e) == [j]


def test_post_order_visits_children_first():
    i = Var("i", dtype("int32"))
    a = decl_buffer((4,), "float32", "A")
    order = []
    post_order_visit(seq(BufferStore(a, a[i], (i,))), lambda n: order.append(type(n).__name__))
    assert order.index("BufferLoad") < order.index("BufferStore")
    assert isinstance(BufferLoad(a, (i,)), BufferLoad)
