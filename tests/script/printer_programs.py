"""Programs built with the IR constructors: the seed notebook's structures and one of every
node kind, shared by the printer and round-trip tests."""

from __future__ import annotations

import math

from tilewright.ir import (
    Allocate,
    AttrStmt,
    Block,
    BlockRealize,
    Broadcast,
    Buffer,
    BufferRegion,
    BufferStore,
    Evaluate,
    For,
    ForKind,
    IfThenElse,
    IntImm,
    IRModule,
    IterKind,
    IterVar,
    Let,
    LetStmt,
    MatchBufferRegion,
    PrimExpr,
    PrimFunc,
    Ramp,
    Range,
    Stmt,
    Var,
    attrs,
    const,
    decl_buffer,
    dtype,
    op,
    seq,
)

I32 = dtype("int32")
TRUE = IntImm(1, dtype("bool"))
S, R = IterKind.SPATIAL, IterKind.REDUCE
NOTEBOOK_ATTRS = attrs({"global_symbol": "main", "tir.noalias": True})


def var(name: str, dt: str = "int32") -> Var:
    return Var(name, dtype(dt))


def arg(name: str, shape: tuple, dt: str = "float32") -> tuple[Var, Buffer]:
    return Var(name, dtype("handle")), decl_buffer(shape, dt, name)


def loop(v: Var, extent: int | PrimExpr, body: Stmt, kind=ForKind.SERIAL, tag="") -> For:
    return For(v, const(0), op.convert(extent), kind, body, thread_tag=tag)


def bound(v: Var, extent: int, tag: str, body: Stmt) -> For:
    return loop(v, extent, body, ForKind.THREAD_BINDING, tag)


def grid(vs: list[Var], extents: list[int], body: Stmt) -> Stmt:
    for v, n in reversed(list(zip(vs, extents))):
        body = loop(v, n, body)
    return body


def region(buffer: Buffer, *items: object) -> BufferRegion:
    return BufferRegion.from_indices(buffer, items)


def block(
    name: str,
    iters: list[tuple[Var, int, IterKind, PrimExpr]],
    reads: list[BufferRegion],
    writes: list[BufferRegion],
    body: Stmt,
    *,
    init: Stmt | None = None,
    where: PrimExpr = TRUE,
    alloc: tuple[Buffer, ...] = (),
) -> BlockRealize:
    ivs = tuple(IterVar(v, Range(const(0), const(n)), k) for v, n, k, _ in iters)
    blk = Block(name, ivs, tuple(reads), tuple(writes), body, init=init, alloc_buffers=alloc)
    return BlockRealize(tuple(b for *_, b in iters), where, blk)


def root(body: Stmt, alloc: tuple[Buffer, ...] = ()) -> BlockRealize:
    return BlockRealize((), TRUE, Block("root", (), (), (), body, alloc_buffers=alloc))


def func(args: list[tuple[Var, Buffer]], body: Stmt, fattrs=NOTEBOOK_ATTRS) -> PrimFunc:
    return PrimFunc(tuple(p for p, _ in args), body, tuple(args), fattrs)


def module(f: PrimFunc) -> IRModule:
    return IRModule({"main": f})


def vector_add_split() -> IRModule:
    """The notebook's Expected_0: the vector add after ``split(i, [None, 128])``."""
    args = [arg("A", (1024,)), arg("B", (1024,)), arg("C", (1024,))]
    (_, a), (_, b), (_, c) = args
    i0, i1, vi = var("i_0"), var("i_1"), var("vi")
    body = block(
        "C",
        [(vi, 1024, S, i0 * 128 + i1)],
        [a[vi : vi + 1], b[vi : vi + 1]],
        [c[vi : vi + 1]],
        BufferStore(c, a[vi] + b[vi], (vi,)),
    )
    return module(func(args, root(grid([i0, i1], [8, 128], body))))


def window_sum_shared() -> IRModule:
    """The notebook's Expected_4: window sum with a cooperative fetch into shared memory."""
    args = [arg("A", (1027,)), arg("B", (1024,))]
    (_, a), (_, b) = args
    a_shared = decl_buffer((1027,), "float32", "A_shared", "shared")
    i0, i1, ax0_0, ax0_1, v0, vi = (var(n) for n in ("i_0", "i_1", "ax0_0", "ax0_1", "v0", "vi"))
    fetch = block(
        "A_shared",
        [(v0, 1027, S, i0 * 128 + (ax0_0 * 128 + ax0_1))],
        [a[v0 : v0 + 1]],
        [a_shared[v0 : v0 + 1]],
        BufferStore(a_shared, a[v0], (v0,)),
        where=ax0_0 * 128 + ax0_1 < 130,
    )
    compute = block(
        "C",
        [(vi, 1024, S, i0 * 128 + i1)],
        [a_shared[vi : vi + 3]],
        [b[vi : vi + 1]],
        BufferStore(b, a_shared[vi] + a_shared[vi + 1] + a_shared[vi + 2], (vi,)),
    )
    fetch_loops = loop(ax0_0, 2, bound(ax0_1, 128, "threadIdx.x", fetch))
    body = bound(i0, 8, "blockIdx.x", bound(i1, 128, "threadIdx.x", seq(fetch_loops, compute)))
    return module(func(args, root(body, (a_shared,))))


def matmul() -> IRModule:
    """The notebook's unscheduled matmul: one reduction block under a 3-deep grid."""
    args = [arg("A", (1024, 1024)), arg("B", (1024, 1024)), arg("C", (1024, 1024))]
    (_, a), (_, b), (_, c) = args
    i, j, k, vi, vj, vk = (var(n) for n in ("i", "j", "k", "vi", "vj", "vk"))
    body = block(
        "C",
        [(vi, 1024, S, i), (vj, 1024, S, j), (vk, 1024, R, k)],
        [c[vi : vi + 1, vj : vj + 1], a[vi : vi + 1, vk : vk + 1], b[vk : vk + 1, vj : vj + 1]],
        [c[vi : vi + 1, vj : vj + 1]],
        BufferStore(c, c[vi, vj] + a[vi, vk] * b[vk, vj], (vi, vj)),
        init=BufferStore(c, const(0.0), (vi, vj)),
    )
    return module(func(args, root(grid([i, j, k], [1024] * 3, body))))


def matmul_blocked() -> IRModule:
    """The notebook's Expected_5: matmul tiled for the GPU with a local accumulator."""
    args = [arg("A", (1024, 1024)), arg("B", (1024, 1024)), arg("C", (1024, 1024))]
    (_, a), (_, b), (_, c) = args
    c_local = decl_buffer((1024, 1024), "float32", "C_local", "local")
    i0, j0, i1, j1 = var("i_0"), var("j_0"), var("i_1"), var("j_1")
    i2i, j2i, k0, k1, i2, j2, ax0, ax1 = (
        var(n) for n in ("i_2_init", "j_2_init", "k_0", "k_1", "i_2", "j_2", "ax0", "ax1")
    )

    def one(buffer, *idx):
        return region(buffer, *(slice(x, x + 1) for x in idx))

    vi, vj = var("vi"), var("vj")
    init = block(
        "C_init",
        [(vi, 1024, S, i0 * 64 + i1 * 8 + i2i), (vj, 1024, S, j0 * 64 + j1 * 8 + j2i)],
        [],
        [one(c_local, vi, vj)],
        BufferStore(c_local, const(0.0), (vi, vj)),
    )
    vi, vj, vk = var("vi"), var("vj"), var("vk")
    update = block(
        "C_update",
        [
            (vi, 1024, S, i0 * 64 + i1 * 8 + i2),
            (vj, 1024, S, j0 * 64 + j1 * 8 + j2),
            (vk, 1024, R, k0 * 4 + k1),
        ],
        [one(c_local, vi, vj), one(a, vi, vk), one(b, vk, vj)],
        [one(c_local, vi, vj)],
        BufferStore(c_local, c_local[vi, vj] + a[vi, vk] * b[vk, vj], (vi, vj)),
    )
    v0, v1 = var("v0"), var("v1")
    write_back = block(
        "C_local",
        [(v0, 1024, S, i0 * 64 + i1 * 8 + ax0), (v1, 1024, S, j0 * 64 + j1 * 8 + ax1)],
        [one(c_local, v0, v1)],
        [one(c, v0, v1)],
        BufferStore(c, c_local[v0, v1], (v0, v1)),
    )
    reduction = loop(k0, 256, loop(k1, 4, grid([i2, j2], [8, 8], update), ForKind.UNROLLED))
    tile = seq(grid([i2i, j2i], [8, 8], init), reduction, grid([ax0, ax1], [8, 8], write_back))
    body = bound(
        i0,
        16,
        "blockIdx.y",
        bound(j0, 16, "blockIdx.x", bound(i1, 8, "threadIdx.y", bound(j1, 8, "threadIdx.x", tile))),
    )
    return module(func(args, root(body, (c_local,))))


def every_node_kind() -> IRModule:
    """One function touching every statement and expression kind, and a second function
    with a symbolic shape, a scalar parameter and a strided (match_buffer) parameter."""
    a_h, a = arg("A", (16, 16))
    b_h, b = arg("B", (16,), "int64")
    i, j, vi, vj, x, y = var("i"), var("j"), var("vi"), var("vj"), var("x"), var("y")
    scratch = decl_buffer((4,), "float16", "scratch", "local")
    tmp = decl_buffer((16,), "float32", "tmp", "shared")
    view = decl_buffer((4,), "float32", "view")
    f = a[vi, vj]
    expr = op.max_value(op.min_value(f, op.const(1.5)), op.math_call("exp", f))
    expr = op.select(
        op.logical_and(vi < vj, op.logical_not(op.eq(vi, 3))), expr, op.cast(vi, "float32")
    )
    expr = op.if_then_else(op.logical_or(vi >= 2, op.ne(vj, 1)), expr, f / op.const(2.0))
    blk_body = seq(
        BufferStore(a, expr, (vi, vj)),
        BufferStore(
            b, op.cast(op.truncdiv(vi, 3) + op.truncmod(vj, 5) - vi // 2 % 4, "int64"), (vi,)
        ),
        BufferStore(view, a[vi, vj] * op.const(0.25), (const(0),)),
    )
    inner = BlockRealize(
        (i, j),
        i < 15,
        Block(
            "body",
            (
                IterVar(vi, Range(const(0), const(16)), S),
                IterVar(vj, Range(const(0), const(16)), R),
            ),
            (a[vi : vi + 1, 0:16],),
            (a[vi : vi + 1, vj : vj + 1], b[vi : vi + 1], tmp[0:16]),
            blk_body,
            init=BufferStore(tmp, const(0.0), (vi,)),
            alloc_buffers=(scratch,),
            match_buffers=(MatchBufferRegion(view, a[vi : vi + 1, 0:4]),),
            annotations=attrs({"meta_schedule.unroll": 16, "note": "x"}),
        ),
    )
    loops = For(
        i,
        const(0),
        const(16),
        ForKind.PARALLEL,
        For(j, const(0), const(16), ForKind.SERIAL, inner, annotations=attrs({"pragma": 1})),
    )
    store_vec = BufferStore(tmp, Broadcast(const(1.0), 4), (Ramp(const(0), const(1), 4),))
    let_body = IfThenElse(
        x > 0,
        Evaluate(op.call("my_intrin", x, dtype_="int32")),
        IfThenElse(x < -3, Evaluate(const(0)), Evaluate(Let(y, x + 1, y * y))),
    )
    staging = decl_buffer((8,), "int8", "staging", "local")
    alloc = Allocate(staging, BufferStore(staging, op.const(3, "int8"), (x,)))
    tail = seq(
        For(var("k"), const(2), const(6), ForKind.VECTORIZED, store_vec),
        AttrStmt(tmp.data, "storage_alignment", const(128), store_vec),
        LetStmt(x, const(5), seq(let_body, alloc)),
    )
    body = root(seq(loops, tail), (tmp,))
    main = func([(a_h, a), (b_h, b)], body)

    n, m = var("n"), var("m")
    c_h, c = Var("C", dtype("handle")), decl_buffer((n, 8), "float32", "C")
    d_h = Var("D", dtype("handle"))
    d = decl_buffer((m,), "float32", "D", strides=(const(2),))
    k = var("k")
    sym = For(
        k,
        const(0),
        n,
        ForKind.UNROLLED,
        BufferStore(c, d[k % m] + op.const(math.inf), (k, const(0))),
    )
    symbolic = PrimFunc((c_h, d_h, m), sym, ((c_h, c), (d_h, d)), attrs({"global_symbol": "sym"}))
    return IRModule({"main": main, "sym": symbolic})


_MM_ARGS = ", ".join(f'{n}: T.Buffer((1024, 1024), "float32")' for n in "ABC")
# The notebook's Expected_5 as the printer writes it (modern spelling, no header comments).
EXPECTED_5 = f"""
@I.ir_module
class Module:
    @T.prim_func
    def main({_MM_ARGS}):
        T.func_attr({{"global_symbol": "main", "tir.noalias": True}})
        # with T.block("root"):
        C_local = T.alloc_buffer((1024, 1024), scope="local")
        for i_0 in T.thread_binding(16, thread="blockIdx.y"):
            for j_0 in T.thread_binding(16, thread="blockIdx.x"):
                for i_1 in T.thread_binding(8, thread="threadIdx.y"):
                    for j_1 in T.thread_binding(8, thread="threadIdx.x"):
                        for i_2_init, j_2_init in T.grid(8, 8):
                            with T.block("C_init"):
                                vi = T.axis.spatial(1024, i_0 * 64 + i_1 * 8 + i_2_init)
                                vj = T.axis.spatial(1024, j_0 * 64 + j_1 * 8 + j_2_init)
                                T.reads()
                                T.writes(C_local[vi, vj])
                                C_local[vi, vj] = T.float32(0.0)
                        for k_0 in range(256):
                            for k_1 in T.unroll(4):
                                for i_2, j_2 in T.grid(8, 8):
                                    with T.block("C_update"):
                                        vi = T.axis.spatial(1024, i_0 * 64 + i_1 * 8 + i_2)
                                        vj = T.axis.spatial(1024, j_0 * 64 + j_1 * 8 + j_2)
                                        vk = T.axis.reduce(1024, k_0 * 4 + k_1)
                                        T.reads(C_local[vi, vj], A[vi, vk], B[vk, vj])
                                        T.writes(C_local[vi, vj])
                                        C_local[vi, vj] = C_local[vi, vj] + A[vi, vk] * B[vk, vj]
                        for ax0, ax1 in T.grid(8, 8):
                            with T.block("C_local"):
                                v0 = T.axis.spatial(1024, i_0 * 64 + i_1 * 8 + ax0)
                                v1 = T.axis.spatial(1024, j_0 * 64 + j_1 * 8 + ax1)
                                T.reads(C_local[v0, v1])
                                T.writes(C[v0, v1])
                                C[v0, v1] = C_local[v0, v1]
"""
