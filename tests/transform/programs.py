"""Small block programs (IR constructors, one script) + numpy references for pass tests."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from tilewright.ir import (
    Block,
    BlockRealize,
    Buffer,
    BufferRegion,
    BufferStore,
    For,
    ForKind,
    IntImm,
    IterKind,
    IterVar,
    MatchBufferRegion,
    PrimExpr,
    PrimFunc,
    Range,
    Stmt,
    Var,
    const,
    decl_buffer,
    dtype,
    seq,
)
from tilewright.script import tir as T

I32 = dtype("int32")
TRUE = IntImm(1, dtype("bool"))
S, R = IterKind.SPATIAL, IterKind.REDUCE


def var(name: str) -> Var:
    return Var(name, I32)


def arg(name: str, shape: tuple[int, ...], dt: str = "float32") -> tuple[Var, Buffer]:
    return Var(name, dtype("handle")), decl_buffer(shape, dt, name)


def loop(v: Var, extent: int | PrimExpr, body: Stmt, kind: ForKind = ForKind.SERIAL) -> For:
    return For(v, const(0), const(extent) if isinstance(extent, int) else extent, kind, body)


def grid(vs: list[Var], extents: list[int], body: Stmt) -> Stmt:
    for v, n in reversed(list(zip(vs, extents))):
        body = loop(v, n, body)
    return body


def realize(
    name: str,
    iters: list[tuple[Var, int, IterKind, PrimExpr]],
    body: Stmt,
    *,
    init: Stmt | None = None,
    predicate: PrimExpr = TRUE,
    allocs: tuple[Buffer, ...] = (),
    matches: tuple[MatchBufferRegion, ...] = (),
) -> BlockRealize:
    iter_vars = tuple(IterVar(v, Range(const(0), const(n)), k) for v, n, k, _ in iters)
    block = Block(name, iter_vars, (), (), body, init, allocs, matches)
    return BlockRealize(tuple(b for *_, b in iters), predicate, block)


def root(args: list[tuple[Var, Buffer]], body: Stmt, allocs: tuple[Buffer, ...] = ()) -> PrimFunc:
    block = Block("root", (), (), (), body, alloc_buffers=allocs)
    return PrimFunc(tuple(v for v, _ in args), BlockRealize((), TRUE, block), tuple(args))


def store(buffer: Buffer, value: PrimExpr | float, *indices: PrimExpr) -> BufferStore:
    return BufferStore(buffer, const(value) if isinstance(value, float) else value, indices)


@dataclass
class Program:
    func: PrimFunc
    inputs: Callable[[np.random.Generator], list[np.ndarray]]
    reference: Callable[[list[np.ndarray]], list[np.ndarray]]


def _rand(*shapes: tuple[int, ...]) -> Callable[[np.random.Generator], list[np.ndarray]]:
    return lambda rng: [rng.standard_normal(s).astype("float32") for s in shapes]


def vector_add(n: int = 16) -> Program:
    args = [arg("A", (n,)), arg("B", (n,)), arg("C", (n,))]
    (_, a), (_, b), (_, c) = args
    i, vi = var("i"), var("vi")
    body = loop(i, n, realize("C", [(vi, n, S, i)], store(c, a[vi] + b[vi], vi)))
    return Program(root(args, body), _rand((n,), (n,), (n,)), lambda x: [x[0], x[1], x[0] + x[1]])


def window_sum(n: int = 16) -> Program:
    args = [arg("A", (n + 3,)), arg("B", (n,))]
    (_, a), (_, b) = args
    i, vi = var("i"), var("vi")
    value = a[vi] + a[vi + 1] + a[vi + 2]
    body = loop(i, n, realize("C", [(vi, n, S, i)], store(b, value, vi)))
    return Program(
        root(args, body),
        _rand((n + 3,), (n,)),
        lambda x: [x[0], x[0][:n] + x[0][1 : n + 1] + x[0][2 : n + 2]],
    )


def matmul(m: int = 8, n: int = 12, k: int = 16) -> Program:
    args = [arg("A", (m, k)), arg("B", (k, n)), arg("C", (m, n))]
    (_, a), (_, b), (_, c) = args
    i, j, kk, vi, vj, vk = (var(x) for x in ("i", "j", "k", "vi", "vj", "vk"))
    update = store(c, c[vi, vj] + a[vi, vk] * b[vk, vj], vi, vj)
    block = realize(
        "C",
        [(vi, m, S, i), (vj, n, S, j), (vk, k, R, kk)],
        update,
        init=store(c, 0.0, vi, vj),
    )
    return Program(
        root(args, grid([i, j, kk], [m, n, k], block)),
        _rand((m, k), (k, n), (m, n)),
        lambda x: [x[0], x[1], x[0] @ x[1]],
    )


def matmul_split_reordered(m: int = 8, n: int = 12, k0: int = 4, k1: int = 4) -> Program:
    """The reduce loop split into (k_0, k_1) and the loops ordered k_1, i, k_0, j."""
    k = k0 * k1
    args = [arg("A", (m, k)), arg("B", (k, n)), arg("C", (m, n))]
    (_, a), (_, b), (_, c) = args
    i, j, kk0, kk1, vi, vj, vk = (var(x) for x in ("i", "j", "k_0", "k_1", "vi", "vj", "vk"))
    update = store(c, c[vi, vj] + a[vi, vk] * b[vk, vj], vi, vj)
    block = realize(
        "C",
        [(vi, m, S, i), (vj, n, S, j), (vk, k, R, kk0 * k1 + kk1)],
        update,
        init=store(c, 0.0, vi, vj),
    )
    return Program(
        root(args, grid([kk1, i, kk0, j], [k1, m, k0, n], block)),
        _rand((m, k), (k, n), (m, n)),
        lambda x: [x[0], x[1], x[0] @ x[1]],
    )


def predicated_add(n: int = 14, tile: int = 8) -> Program:
    """Vector add of a length that the split factor does not divide, guarded by T.where."""
    outer = (n + tile - 1) // tile
    args = [arg("A", (n,)), arg("B", (n,)), arg("C", (n,))]
    (_, a), (_, b), (_, c) = args
    i0, i1, vi = var("i_0"), var("i_1"), var("vi")
    block = realize(
        "C",
        [(vi, n, S, i0 * tile + i1)],
        store(c, a[vi] + b[vi], vi),
        predicate=i0 * tile + i1 < n,
    )
    return Program(
        root(args, grid([i0, i1], [outer, tile], block)),
        _rand((n,), (n,), (n,)),
        lambda x: [x[0], x[1], x[0] + x[1]],
    )


def predicated_row_sum(m: int = 4, k: int = 13, tile: int = 8) -> Program:
    """A reduction over a split, predicated axis: init and update both under T.where."""
    outer = (k + tile - 1) // tile
    args = [arg("A", (m, k)), arg("B", (m,))]
    (_, a), (_, b) = args
    i, k0, k1, vi, vk = (var(x) for x in ("i", "k_0", "k_1", "vi", "vk"))
    block = realize(
        "B",
        [(vi, m, S, i), (vk, k, R, k0 * tile + k1)],
        store(b, b[vi] + a[vi, vk], vi),
        init=store(b, 0.0, vi),
        predicate=k0 * tile + k1 < k,
    )
    return Program(
        root(args, grid([i, k0, k1], [m, outer, tile], block)),
        _rand((m, k), (m,)),
        lambda x: [x[0], x[0].sum(axis=1)],
    )


def root_alloc(m: int = 8, n: int = 12) -> Program:
    """Two block nests communicating through a buffer allocated in the root block."""
    args = [arg("A", (m, n)), arg("C", (m, n))]
    (_, a), (_, c) = args
    tmp = decl_buffer((m, n), "float32", "T")
    i, j, i2, j2, vi, vj, wi, wj = (var(x) for x in ("i", "j", "i", "j", "vi", "vj", "vi", "vj"))
    first = realize("T", [(vi, m, S, i), (vj, n, S, j)], store(tmp, a[vi, vj] * 2.0, vi, vj))
    second = realize("C", [(wi, m, S, i2), (wj, n, S, j2)], store(c, tmp[wi, wj] + 1.0, wi, wj))
    body = seq(grid([i, j], [m, n], first), grid([i2, j2], [m, n], second))
    return Program(
        root(args, body, allocs=(tmp,)),
        _rand((m, n), (m, n)),
        lambda x: [x[0], x[0] * 2 + 1],
    )


def block_alloc(m: int = 4, n: int = 12) -> Program:
    """A per-row block allocating a local row buffer; plain loops inside the block."""
    args = [arg("A", (m, n)), arg("C", (m, n))]
    (_, a), (_, c) = args
    row = decl_buffer((n,), "float32", "L", "local")
    i, vi, j, j2 = var("i"), var("vi"), var("j"), var("j")
    body = seq(
        loop(j, n, store(row, a[vi, j] * 2.0, j)), loop(j2, n, store(c, row[j2] + 1.0, vi, j2))
    )
    block = realize("row", [(vi, m, S, i)], body, allocs=(row,))
    return Program(
        root(args, loop(i, m, block)), _rand((m, n), (m, n)), lambda x: [x[0], x[0] * 2 + 1]
    )


def nested_match(m: int = 4, n: int = 8) -> Program:
    """An outer per-row block viewing rows through match_buffer, an inner block per element."""
    args = [arg("A", (m, n)), arg("B", (m, n))]
    (_, a), (_, b) = args
    arow = decl_buffer((n,), "float32", "A_row")
    brow = decl_buffer((n,), "float32", "B_row")
    t, e, vt, ve = var("t"), var("e"), var("vt"), var("ve")
    inner = loop(e, n, realize("elem", [(ve, n, S, e)], store(brow, arow[ve] + 1.0, ve)))
    matches = (
        MatchBufferRegion(arow, BufferRegion(a, (Range(vt, const(1)), Range(const(0), const(n))))),
        MatchBufferRegion(brow, BufferRegion(b, (Range(vt, const(1)), Range(const(0), const(n))))),
    )
    outer = realize("row", [(vt, m, S, t)], inner, matches=matches)
    return Program(root(args, loop(t, m, outer)), _rand((m, n), (m, n)), lambda x: [x[0], x[0] + 1])


def opaque_scalar(n: int = 6) -> Program:
    """An opaque block (no iterators) holding a serial running sum."""
    args = [arg("A", (n,)), arg("B", (1,))]
    (_, a), (_, b) = args
    i = var("i")
    body = seq(store(b, 0.0, const(0)), loop(i, n, store(b, b[0] + a[i], const(0))))
    inner = BlockRealize((), TRUE, Block("acc", (), (), (), body))
    return Program(root(args, inner), _rand((n,), (1,)), lambda x: [x[0], x[0].sum(keepdims=True)])


def unit_split(n: int = 16) -> Program:
    """A loop split by its full extent, leaving an inner loop of extent one."""
    args = [arg("A", (n,)), arg("C", (n,))]
    (_, a), (_, c) = args
    i0, i1, vi = var("i_0"), var("i_1"), var("vi")
    block = realize("C", [(vi, n, S, i0 + i1)], store(c, a[vi] * 3.0, vi))
    return Program(
        root(args, grid([i0, i1], [n, 1], block)), _rand((n,), (n,)), lambda x: [x[0], x[0] * 3]
    )


# matmul_split_reordered as a script, its init already the ``if vk == 0`` store that
# lower_init_block gives and lower_blocks takes.
@T.prim_func
def split_reordered_if_init(
    A: T.Buffer((8, 16), "float32"),
    B: T.Buffer((16, 12), "float32"),
    C: T.Buffer((8, 12), "float32"),
):
    for k_1, i, k_0, j in T.grid(4, 8, 4, 12):
        with T.block("C"):
            vi = T.axis.spatial(8, i)
            vj = T.axis.spatial(12, j)
            vk = T.axis.reduce(16, k_0 * 4 + k_1)
            T.reads(C[vi, vj], A[vi, vk], B[vk, vj])
            T.writes(C[vi, vj])
            if vk == 0:
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]


ALL = {
    "vector_add": vector_add,
    "window_sum": window_sum,
    "matmul": matmul,
    "matmul_split_reordered": matmul_split_reordered,
    "predicated_add": predicated_add,
    "predicated_row_sum": predicated_row_sum,
    "root_alloc": root_alloc,
    "block_alloc": block_alloc,
    "nested_match": nested_match,
    "opaque_scalar": opaque_scalar,
    "unit_split": unit_split,
}


def assert_passes_preserve(program: Program, passes: list[Callable[[PrimFunc], PrimFunc]]) -> None:
    """Run ``program`` before and after each of ``passes`` (applied in turn) and compare.

    The untransformed program must match the numpy reference; each transformed one must give
    bit-identical results, since the passes change no arithmetic.
    """
    from evaluator import run

    inputs = program.inputs(np.random.default_rng(0))
    expected = run(program.func, *inputs)
    for got, want in zip(expected, program.reference(inputs)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    func = program.func
    for transform in passes:
        func = transform(func)
        for got, want in zip(run(func, *inputs), expected):
            name = getattr(transform, "__name__", None) or transform.func.__name__  # type: ignore[attr-defined]  # a functools.partial
            np.testing.assert_array_equal(got, want, err_msg=name)
