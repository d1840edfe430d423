"""Hand-lowered GPU modules (host launcher + device kernels) for the GPU printer/runtime tests.

Each builder returns the form the GPU lowering produces: a host PrimFunc ``main`` whose body
launches kernels through ``tw.launch_kernel``, and device PrimFuncs marked ``tir.is_kernel``.
"""

from __future__ import annotations

from tilewright.ir import (
    Broadcast,
    BufferStore,
    For,
    ForKind,
    IfThenElse,
    IntImm,
    IRModule,
    PrimExpr,
    PrimFunc,
    Ramp,
    Stmt,
    StringImm,
    Var,
    attrs,
    decl_buffer,
    dtype,
    intrinsics,
    op,
    seq,
)
from tilewright.ir.stmt import Allocate, Evaluate

I32 = dtype("int32")


def i32(value: int) -> IntImm:
    return IntImm(value, I32)


def bind(var: Var, extent: int | PrimExpr, tag: str, body: Stmt) -> For:
    size = i32(extent) if isinstance(extent, int) else extent
    return For(var, i32(0), size, ForKind.THREAD_BINDING, body, thread_tag=tag)


def serial(var: Var, extent: int, body: Stmt) -> For:
    return For(var, i32(0), i32(extent), ForKind.SERIAL, body)


def sync() -> Evaluate:
    return intrinsics.sync_threads()


def launch(name: str, grid: tuple, block: tuple, args: tuple, shared: int = 0) -> Evaluate:
    dims = [d if isinstance(d, PrimExpr) else i32(d) for d in (*grid, *block)]
    values = (StringImm(name), *dims, i32(shared), *args)
    return intrinsics.LAUNCH_KERNEL.stmt(*values)


def kernel(name, buffers, body, extents, kind, scalars=(), shared=0) -> PrimFunc:
    """A device function over flat views of ``buffers`` (sharing their data variables)."""
    params, bmap = [], []
    for buf in buffers:
        handle = Var(buf.name, dtype("handle"))
        params.append(handle)
        bmap.append((handle, buf))
    info = {
        "global_symbol": name,
        "tir.is_kernel": True,
        "target_kind": kind,
        "thread_extent": attrs(extents),
        "dyn_shared_memory_bytes": shared,
    }
    return PrimFunc((*params, *scalars), body, tuple(bmap), attrs(info))


def host(buffers, body, scalars=()) -> PrimFunc:
    params = [Var(b.name, dtype("handle")) for b in buffers]
    bmap = tuple(zip(params, buffers))
    return PrimFunc((*params, *scalars), body, bmap, attrs({"global_symbol": "main"}))


def vector_add(kind: str = "cuda", n: int = 1024, threads: int = 128, dt: str = "float32"):
    """C[i] = A[i] + B[i], i = blockIdx.x * threads + threadIdx.x."""
    A, B, C = (decl_buffer((n,), dt, name) for name in "ABC")
    bx, tx = Var("i_0", I32), Var("i_1", I32)
    i = bx * threads + tx
    body = bind(bx, n // threads, "blockIdx.x", bind(tx, threads, "threadIdx.x",
                BufferStore(C, A[i] + B[i], (i,))))  # fmt: skip
    extents = {"blockIdx.x": n // threads, "threadIdx.x": threads}
    dev = kernel("main_kernel", [A, B, C], body, extents, kind)
    call = launch("main_kernel", (n // threads, 1, 1), (threads, 1, 1), (A.data, B.data, C.data))
    return IRModule({"main": host([A, B, C], call), "main_kernel": dev})


def window_sum(kind: str = "cuda", scope: str = "shared"):
    """The notebook's B[i] = A[i] + A[i + 1] + A[i + 2] with A staged in shared memory."""
    A = decl_buffer((1026,), "float32", "A")
    B = decl_buffer((1024,), "float32", "B")
    shared = decl_buffer((130,), "float32", "A_shared", scope)
    bx, tx, ax = Var("i_0", I32), Var("i_1", I32), Var("ax0_0", I32)
    fetch = serial(ax, 2, IfThenElse(
        op.floordiv(tx, 2) + ax * 64 < 65,
        BufferStore(shared, A[bx * 128 + ax * 128 + tx], (ax * 128 + tx,)),
    ))  # fmt: skip
    compute = BufferStore(B, shared[tx] + shared[tx + 1] + shared[tx + 2], (bx * 128 + tx,))
    inner = Allocate(shared, seq(fetch, sync(), compute))
    body = bind(bx, 8, "blockIdx.x", bind(tx, 128, "threadIdx.x", inner))
    dyn = 520 if scope == "shared.dyn" else 0
    extents = {"blockIdx.x": 8, "threadIdx.x": 128}
    dev = kernel("main_kernel", [A, B], body, extents, kind, shared=dyn)
    call = launch("main_kernel", (8, 1, 1), (128, 1, 1), (A.data, B.data), shared=dyn)
    return IRModule({"main": host([A, B], call), "main_kernel": dev})


def vector_scale(kind: str = "cuda", n: int = 1024, lanes: int = 4, dt: str = "float32"):
    """B[i*lanes : i*lanes + lanes] = A[...] * 2 + A[...], one vector per thread."""
    A, B = (decl_buffer((n,), dt, name) for name in "AB")
    bx, tx = Var("i_0", I32), Var("i_1", I32)
    threads = 64
    blocks = n // (threads * lanes)
    base = (bx * threads + tx) * lanes
    ramp = Ramp(base, i32(1), lanes)
    value = A.load([ramp]) * Broadcast(op.const(2.0, dt), lanes) + A.load([ramp])
    body = bind(bx, blocks, "blockIdx.x", bind(tx, threads, "threadIdx.x",
                BufferStore(B, value, (ramp,))))  # fmt: skip
    extents = {"blockIdx.x": blocks, "threadIdx.x": threads}
    dev = kernel("main_kernel", [A, B], body, extents, kind)
    call = launch("main_kernel", (blocks, 1, 1), (threads, 1, 1), (A.data, B.data))
    return IRModule({"main": host([A, B], call), "main_kernel": dev})


def vector_copy(kind: str = "cuda", n: int = 512, lanes: int = 8, dt: str = "float16"):
    """B[ramp] = A[ramp]: a pure vector copy (raw-bit vector types in CUDA)."""
    A, B = (decl_buffer((n,), dt, name) for name in "AB")
    tx = Var("i", I32)
    ramp = Ramp(tx * lanes, i32(1), lanes)
    body = bind(tx, n // lanes, "threadIdx.x", BufferStore(B, A.load([ramp]), (ramp,)))
    dev = kernel("main_kernel", [A, B], body, {"threadIdx.x": n // lanes}, kind)
    call = launch("main_kernel", (1, 1, 1), (n // lanes, 1, 1), (A.data, B.data))
    return IRModule({"main": host([A, B], call), "main_kernel": dev})


def symbolic_add(kind: str = "cuda", threads: int = 64):
    """B[i] = A[i] + x for i < n, n symbolic: grid = ceildiv(n, threads), n and x scalar args."""
    n, x = Var("n", I32), Var("x", dtype("float32"))
    A, B = (decl_buffer((n,), "float32", name) for name in "AB")
    # The kernel has its own size variable and flat views sharing the data variables.
    kn, kx = Var("n", I32), Var("x", dtype("float32"))
    Ak = decl_buffer((kn,), "float32", "A", data=A.data)
    Bk = decl_buffer((kn,), "float32", "B", data=B.data)
    bx, tx = Var("i_0", I32), Var("i_1", I32)
    i = bx * threads + tx
    guarded = IfThenElse(i < kn, BufferStore(Bk, Ak[i] + kx, (i,)))
    blocks = op.floordiv(kn + (threads - 1), threads)
    body = bind(bx, blocks, "blockIdx.x", bind(tx, threads, "threadIdx.x", guarded))
    dev = kernel("main_kernel", [Ak, Bk], body, {"threadIdx.x": threads}, kind, (kn, kx))
    grid = op.floordiv(n + (threads - 1), threads)
    call = launch("main_kernel", (grid, 1, 1), (threads, 1, 1), (A.data, B.data, n, x))
    return IRModule({"main": host([A, B], call, scalars=(x,)), "main_kernel": dev})


def expressions(kind: str = "cuda", dt: str = "float32", n: int = 256):
    """B[i] from A[i] through a let, min/max, select, if_then_else, floordiv/floormod, exp."""
    from tilewright.ir import Let

    A, B = (decl_buffer((n,), dt, name) for name in "AB")
    i, t = Var("i", I32), Var("t", dtype(dt))
    x = A[i]
    bound = Let(t, x * op.const(1.5, dt), op.max_value(t, op.const(0.25, dt)))
    picked = op.select(op.eq(op.floormod(i - 7, 5), 0), bound + op.min_value(x, op.const(0.5, dt)),
                       op.math_call("exp", x))  # fmt: skip
    value = op.if_then_else(op.floordiv(i - 100, 3) < 2, picked, op.cast(op.floordiv(i, 3), dt))
    body = bind(i, n, "threadIdx.x", BufferStore(B, value, (i,)))
    dev = kernel("main_kernel", [A, B], body, {"threadIdx.x": n}, kind)
    call = launch("main_kernel", (1, 1, 1), (n, 1, 1), (A.data, B.data))
    return IRModule({"main": host([A, B], call), "main_kernel": dev})


def expressions_reference(a):
    """numpy's value of ``expressions`` on input ``a``."""
    import numpy as np

    i = np.arange(a.shape[0])
    picked = np.where((i - 7) % 5 == 0, np.maximum(a * 1.5, 0.25) + np.minimum(a, 0.5), np.exp(a))
    return np.where((i - 100) // 3 < 2, picked, (i // 3).astype(a.dtype))
