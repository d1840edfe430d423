"""Hand-built lowered-form PrimFuncs (no blocks, 1-D accesses) for the C code generator tests."""

from __future__ import annotations

from tilewright.ir import (
    Buffer,
    BufferStore,
    For,
    ForKind,
    IfThenElse,
    IntImm,
    IRModule,
    PrimExpr,
    PrimFunc,
    Stmt,
    Var,
    decl_buffer,
    dtype,
    op,
    seq,
)

I32 = dtype("int32")


def i32(value: int) -> IntImm:
    return IntImm(value, I32)


def loop(
    var: Var, extent: int | PrimExpr, body: Stmt, kind: ForKind = ForKind.SERIAL, **kw: object
) -> For:
    extent_expr = i32(extent) if isinstance(extent, int) else extent
    return For(var, IntImm(0, var.dtype), extent_expr, kind, body, **kw)


def flat(buf: Buffer) -> Buffer:
    """The 1-D view the lowering gives an N-d buffer (same data variable)."""
    size: PrimExpr = i32(1)
    for dim in buf.shape:
        size = op.mul(size, dim)
    return decl_buffer((size,), buf.dtype, buf.name, data=buf.data)


def func(buffers: list[Buffer], body: Stmt, scalars: tuple[Var, ...] = ()) -> PrimFunc:
    """A PrimFunc with one handle parameter per buffer, then the scalars."""
    params = [Var(b.name, dtype("handle")) for b in buffers]
    return PrimFunc((*params, *scalars), body, tuple((p, b) for p, b in zip(params, buffers)))


def module(f: PrimFunc, name: str = "main") -> IRModule:
    return IRModule({name: f})


def vector_add(n: int = 64, kind: ForKind = ForKind.SERIAL, dt: str = "float32") -> IRModule:
    A, B, C = (decl_buffer((n,), dt, name) for name in "ABC")
    i = Var("i", I32)
    body = loop(i, n, BufferStore(C, op.add(A[i], B[i]), (i,)), kind)
    return module(func([A, B, C], body))


def matmul(n: int = 16, m: int = 8, k: int = 12) -> IRModule:
    """C[i, j] = sum_k A[i, k] * B[k, j], flattened, with the reduction init ``if k == 0``."""
    A = decl_buffer((n, k), "float32", "A")
    B = decl_buffer((k, m), "float32", "B")
    C = decl_buffer((n, m), "float32", "C")
    a, b, c = flat(A), flat(B), flat(C)
    i, j, r = Var("i", I32), Var("j", I32), Var("k", I32)
    ci = i * m + j
    update = BufferStore(c, c[ci] + a[i * k + r] * b[r * m + j], (ci,))
    init = IfThenElse(op.eq(r, 0), BufferStore(c, op.const(0.0, "float32"), (ci,)))
    body = loop(i, n, loop(j, m, loop(r, k, seq(init, update))), ForKind.PARALLEL)
    return module(func([A, B, C], body))
