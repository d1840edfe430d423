from __future__ import annotations

import pytest

from tilewright.ir import (
    Allocate,
    Block,
    BlockRealize,
    BufferRegion,
    Evaluate,
    For,
    ForKind,
    IfThenElse,
    MatchBufferRegion,
    PrimFunc,
    Range,
    Var,
    assert_structural_equal,
    attrs,
    decl_buffer,
    dtype,
    intrinsics,
    op,
    post_order_visit,
    seq,
)
from tilewright.script import tir as T
from tilewright.transform import lower_blocks, lower_init_block
from tilewright.transform.flatten_buffers import flatten_buffers
from tilewright.transform.simplify import simplify

from .programs import (
    ALL,
    TRUE,
    S,
    arg,
    assert_passes_preserve,
    const,
    grid,
    loop,
    realize,
    root,
    split_reordered_if_init,
    store,
    var,
)


def test_bindings_are_substituted_and_root_block_disappears():
    func = ALL["vector_add"]().func
    (_, a), (_, b), (_, c) = func.buffer_map
    i = var("i")
    expected = PrimFunc(func.params, loop(i, 16, store(c, a[i] + b[i], i)), func.buffer_map)
    assert_structural_equal(lower_blocks(func), expected)


def test_predicate_becomes_if_around_the_body():
    func = ALL["predicated_add"]().func
    (_, a), (_, b), (_, c) = func.buffer_map
    i0, i1 = var("i_0"), var("i_1")
    x = i0 * 8 + i1
    body = grid([i0, i1], [2, 8], IfThenElse(x < 14, store(c, a[x] + b[x], x)))
    assert_structural_equal(lower_blocks(func), PrimFunc(func.params, body, func.buffer_map))


def test_predicate_guards_the_lowered_init_too():
    func = lower_blocks(lower_init_block(ALL["predicated_row_sum"]().func))
    (_, a), (_, b) = func.buffer_map
    i, k0, k1 = var("i"), var("k_0"), var("k_1")
    k = k0 * 8 + k1
    guarded = seq(IfThenElse(op.eq(k, 0), store(b, 0.0, i)), store(b, b[i] + a[i, k], i))
    body = grid([i, k0, k1], [4, 2, 8], IfThenElse(k < 13, guarded))
    assert_structural_equal(func, PrimFunc(func.params, body, func.buffer_map))


def test_root_alloc_becomes_allocate_around_the_function_body():
    func = lower_blocks(ALL["root_alloc"]().func)
    assert isinstance(func.body, Allocate)
    assert func.body.buffer.name == "T" and func.body.buffer.ndim == 2


def test_block_alloc_becomes_allocate_inside_the_loop():
    func = ALL["block_alloc"]().func
    (_, a), (_, c) = func.buffer_map
    row = func.body.block.body.body.block.alloc_buffers[0]
    i, j, j2 = var("i"), var("j"), var("j")
    inner = seq(
        loop(j, 12, store(row, a[i, j] * 2.0, j)), loop(j2, 12, store(c, row[j2] + 1.0, i, j2))
    )
    expected = PrimFunc(func.params, loop(i, 4, Allocate(row, inner)), func.buffer_map)
    assert_structural_equal(lower_blocks(func), expected)


def test_match_buffer_accesses_become_source_accesses():
    func = ALL["nested_match"]().func
    (_, a), (_, b) = func.buffer_map
    t, e = var("t"), var("e")
    got = lower_blocks(func)
    zero = const(0)
    body = loop(t, 4, loop(e, 8, store(b, a[t, zero + e] + 1.0, t, zero + e)))
    assert_structural_equal(got, PrimFunc(func.params, body, func.buffer_map))


def test_symbolic_match_buffer_offset_is_bound_to_the_source_offset():
    args = [arg("A", (4, 8))]
    (_, a) = args[0]
    off = Var("off", dtype("int32"))
    view = decl_buffer((8,), "float32", "A_row", elem_offset=off)
    t, vt = var("t"), var("vt")
    match = MatchBufferRegion(
        view, BufferRegion(a, (Range(vt, const(1)), Range(const(2), const(6))))
    )
    inner = Evaluate(off + 0)
    func = root(args, loop(t, 4, realize("row", [(vt, 4, S, t)], inner, matches=(match,))))
    got = lower_blocks(func)
    # The offset names the region by its first and last elements until buffers are flat
    # (so that shrinking or padding A moves it too); flattening makes it the index.
    first, last = a[t, const(2)], a[t + 1 - 1, const(2) + 6 - 1]
    offset = intrinsics.REGION_OFFSET.call(first, last)
    assert_structural_equal(got.body, loop(t, 4, Evaluate(offset + 0)))
    flat = simplify(flatten_buffers(got))
    assert_structural_equal(flat.body, loop(t, 4, Evaluate(t * 8 + 2)))


def test_loop_kinds_and_annotations_are_kept():
    args = [arg("A", (8,))]
    (_, a) = args[0]
    i, vi = var("i"), var("vi")
    block = realize("A", [(vi, 8, S, i)], store(a, a[vi] + 1.0, vi))
    func = root(args, For(i, const(0), const(8), ForKind.PARALLEL, block, "", attrs({"x": 1})))
    got = lower_blocks(func)
    assert got.body.kind is ForKind.PARALLEL and got.body.annotations == (("x", 1),)


def test_no_blocks_remain_in_any_program():
    for make in ALL.values():
        func = lower_blocks(lower_init_block(make().func))
        assert not _blocks_in(func.body)


def _blocks_in(tree):
    found = []
    post_order_visit(
        tree, lambda n: found.append(n) if isinstance(n, Block | BlockRealize) else None
    )
    return found


def test_block_with_init_is_rejected():
    with pytest.raises(ValueError, match="block 'C' still has an init statement; run lower_init"):
        lower_blocks(ALL["matmul"]().func)


def test_binding_count_mismatch_is_rejected():
    func = ALL["vector_add"]().func
    realize_ = func.body.block.body.body
    bad = realize_.replace(iter_values=())
    func = func.with_body(
        func.body.replace(
            block=func.body.block.replace(body=func.body.block.body.replace(body=bad))
        )
    )
    with pytest.raises(ValueError, match="block 'C' has 1 iterators but 0 bindings"):
        lower_blocks(func)


def test_match_buffer_dropping_a_wide_dimension_is_rejected():
    args = [arg("A", (4, 8))]
    (_, a) = args[0]
    view = decl_buffer((8,), "float32", "A_row")
    region = BufferRegion(a, (Range(const(0), const(2)), Range(const(0), const(8))))
    body = BlockRealize(
        (),
        TRUE,
        Block(
            "v",
            (),
            (),
            (),
            store(view, 0.0, const(0)),
            match_buffers=(MatchBufferRegion(view, region),),
        ),
    )
    with pytest.raises(ValueError, match="drops a dimension of A whose extent is 2, not 1"):
        lower_blocks(root(args, body))


@pytest.mark.parametrize("name", sorted(ALL))
def test_numeric_results_unchanged(name):
    assert_passes_preserve(ALL[name](), [lower_init_block, lower_blocks])


def test_inner_block_bindings_over_outer_iterators_are_substituted():
    args = [arg("A", (16,))]
    (_, a) = args[0]
    t, e, vt, ve = var("t"), var("e"), var("vt"), var("ve")
    inner = loop(e, 4, realize("elem", [(ve, 16, S, vt * 4 + e)], store(a, a[ve] * 2.0, ve)))
    func = root(args, loop(t, 4, realize("tile", [(vt, 4, S, t)], inner)))
    x = t * 4 + e
    expected = loop(t, 4, loop(e, 4, store(a, a[x] * 2.0, x)))
    assert_structural_equal(lower_blocks(func).body, expected)


def test_thread_bindings_keep_their_kind_and_tag():
    args = [arg("A", (1024,)), arg("B", (1024,))]
    (_, a), (_, b) = args
    i0, i1, vi = var("i_0"), var("i_1"), var("vi")
    block = realize("B", [(vi, 1024, S, i0 * 128 + i1)], store(b, a[vi], vi))
    body = For(
        i0,
        const(0),
        const(8),
        ForKind.THREAD_BINDING,
        For(i1, const(0), const(128), ForKind.THREAD_BINDING, block, "threadIdx.x"),
        "blockIdx.x",
    )
    got = lower_blocks(root(args, body)).body
    assert (got.kind, got.thread_tag) == (ForKind.THREAD_BINDING, "blockIdx.x")
    assert (got.body.kind, got.body.thread_tag) == (ForKind.THREAD_BINDING, "threadIdx.x")
    x = i0 * 128 + i1
    assert_structural_equal(got.body.body, store(b, a[x], x))


# Scripts: the notebook's predicated shared-memory copy (serial loops), a root allocation and a
# block-local one.
@T.prim_func
def _window_sum_shared(A: T.Buffer((19,), "float32"), B: T.Buffer((16,), "float32")):
    A_shared = T.alloc_buffer((19,), scope="shared")
    for i_0 in range(2):
        for ax0_0, ax0_1 in T.grid(2, 8):
            with T.block("A_shared"):
                v0 = T.axis.spatial(19, i_0 * 8 + (ax0_0 * 8 + ax0_1))
                T.where(ax0_0 * 8 + ax0_1 < 11)
                A_shared[v0] = A[v0]
        for i_1 in range(8):
            with T.block("C"):
                vi = T.axis.spatial(16, i_0 * 8 + i_1)
                B_local = T.alloc_buffer((1,), scope="local")
                B_local[0] = A_shared[vi] + A_shared[vi + 1] + A_shared[vi + 2]
                B[vi] = B_local[0]


@T.prim_func
def _window_sum_shared_expected(A: T.Buffer((19,), "float32"), B: T.Buffer((16,), "float32")):
    A_shared = T.decl_buffer((19,), "float32", scope="shared")
    for i_0 in range(2):
        for ax0_0, ax0_1 in T.grid(2, 8):
            if ax0_0 * 8 + ax0_1 < 11:
                A_shared[i_0 * 8 + (ax0_0 * 8 + ax0_1)] = A[i_0 * 8 + (ax0_0 * 8 + ax0_1)]
        for i_1 in range(8):
            B_local = T.decl_buffer((1,), "float32", scope="local")
            B_local[0] = (
                A_shared[i_0 * 8 + i_1] + A_shared[i_0 * 8 + i_1 + 1] + A_shared[i_0 * 8 + i_1 + 2]
            )
            B[i_0 * 8 + i_1] = B_local[0]


def test_script_predicate_and_allocations():
    got = lower_blocks(_window_sum_shared)
    assert_structural_equal(got, _window_sum_shared_expected)


@T.prim_func
def _split_reordered_loops(
    A: T.Buffer((8, 16), "float32"),
    B: T.Buffer((16, 12), "float32"),
    C: T.Buffer((8, 12), "float32"),
):
    for k_1, i, k_0, j in T.grid(4, 8, 4, 12):
        if k_0 * 4 + k_1 == 0:
            C[i, j] = T.float32(0)
        C[i, j] = C[i, j] + A[i, k_0 * 4 + k_1] * B[k_0 * 4 + k_1, j]


def test_script_init_guard_is_written_over_loop_variables():
    assert_structural_equal(lower_blocks(split_reordered_if_init), _split_reordered_loops)
