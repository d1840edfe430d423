"""TVM's builtin calls and the statements that wrap a body: ``T.call_packed``,
``T.q_multiply_shift``, bit counts, ``T.address_of``, ``T.tvm_access_ptr``, the wmma calls,
``T.Shuffle``, ``T.Assert``, ``T.LetStmt`` and ``T.allocate``."""

from __future__ import annotations

from collections.abc import Callable

from tilewright.ir import expr as ir
from tilewright.ir import intrinsics, op
from tilewright.ir.expr import BufferLoad, Call, PrimExpr, StringImm, Var
from tilewright.script.parser.frames import AssertFrame, BufferDecl, BufferType, LetFrame
from tilewright.script.tir import arguments as args


def _operand(value: object, where: str) -> PrimExpr:
    return StringImm(value) if isinstance(value, str) else args.expr(value, where)


def _named(intrinsic: intrinsics.Intrinsic, doc: str) -> Callable[..., PrimExpr]:
    name = intrinsic.name

    def call(*values: object, dtype: object = None) -> PrimExpr:
        where = f"T.{name}"
        result = intrinsic.call(*(_operand(v, where) for v in values))
        if dtype is not None and result.dtype != args.dtype_of(dtype, where):
            raise TypeError(f"{where}: the result is {result.dtype}, not {dtype}")
        return result

    call.__name__ = call.__qualname__ = name
    call.__doc__ = doc
    return call


popcount = _named(intrinsics.POPCOUNT, "``T.popcount(x)``: the number of set bits of x.")
clz = _named(intrinsics.CLZ, "``T.clz(x)``: the number of leading zero bits of x.")
ldexp = _named(intrinsics.LDEXP, "``T.ldexp(x, e)``: ``x * 2**e``.")
q_multiply_shift = _named(
    intrinsics.Q_MULTIPLY_SHIFT,
    "``T.q_multiply_shift(x, y, q, s)``: the fixed-point product of int32 values "
    "(``round(x * y * 2**(s - q))``), as TVM computes it.",
)
ret = _named(intrinsics.RET, "``T.ret(value)``: return ``value`` (parsed and printed; not built).")
tvm_tuple = _named(intrinsics.TVM_TUPLE, "``T.tvm_tuple(a, b)``: a tuple of values.")
tvm_fill_fragment, tvm_load_matrix_sync, tvm_mma_sync, tvm_bmma_sync, tvm_store_matrix_sync = (
    _named(w, f"``T.{w.name}{w.doc}``: TVM's wmma builtin (CUDA).") for w in intrinsics.WMMA
)


@args.dtype_ignored
def call_packed(name: object, *values: object) -> PrimExpr:
    """``T.call_packed("f", A.data, n)``: a call of a packed function of TVM's runtime
    (parsed and printed; building it is refused, there is no packed-function runtime)."""
    if not isinstance(name, str):
        raise TypeError(f"T.call_packed: expected a function name string, found {name!r}")
    operands = (_operand(v, "T.call_packed") for v in values)
    return intrinsics.CALL_PACKED.call(StringImm(name), *operands)


@args.dtype_ignored
def address_of(load: object) -> PrimExpr:
    """``T.address_of(A[i])``: the address of one buffer element."""
    if not isinstance(load, BufferLoad):
        raise TypeError(f"T.address_of: expected a buffer element such as A[i], found {load!r}")
    return intrinsics.ADDRESS_OF.call(load)


def type_annotation(dtype: object) -> PrimExpr:
    """``T.type_annotation("float32")``: a dtype as an argument (``T.tvm_access_ptr``'s first)."""
    return Call(args.dtype_of(dtype, "T.type_annotation"), "type_annotation", ())


@args.dtype_ignored
def tvm_access_ptr(
    ptype: object, data: object, offset: object, extent: object, mask: object
) -> PrimExpr:
    """``T.tvm_access_ptr(T.type_annotation("float32"), A.data, offset, extent, mask)``: the
    address of element ``offset`` of ``data`` for a callee that reads (mask 1), writes (2) or
    both (3) ``extent`` elements (what ``A.access_ptr`` gives)."""
    where = "T.tvm_access_ptr"
    if not (isinstance(ptype, Call) and ptype.op == "type_annotation"):
        raise TypeError(f"{where}: expected T.type_annotation(dtype) first, found {ptype!r}")
    values = (args.expr(v, where) for v in (data, offset, extent, mask))
    return intrinsics.ACCESS_PTR.call(*values)


def Shuffle(vectors: object, indices: object) -> PrimExpr:
    """``T.Shuffle([a, b], [3, 2, 1, 0])``: the lanes ``indices`` of the concatenated vectors."""
    if not isinstance(vectors, list | tuple) or not isinstance(indices, list | tuple):
        raise TypeError("T.Shuffle: expected a list of vectors and a list of lane indices")
    vecs = tuple(args.expr(v, "T.Shuffle") for v in vectors)
    lanes = tuple(op.convert(args.int_expr(i, "T.Shuffle")) for i in indices)
    if not vecs or not lanes:
        raise ValueError("T.Shuffle: expected at least one vector and one index")
    return ir.Shuffle(vecs, lanes)


def Assert(condition: object, message: object) -> AssertFrame:
    """``with T.Assert(n > 0, "n must be positive"):`` checks the condition before the body
    (``assert n > 0, "..."`` checks it before the rest of the body)."""
    cond = args.expr(condition, "T.Assert")
    if not isinstance(message, str | StringImm):
        raise TypeError(f"T.Assert: expected a message string, found {message!r}")
    text = message if isinstance(message, StringImm) else StringImm(message)
    return AssertFrame(cond, text)


def LetStmt(value: object, type_annotation: object = None, *, var: object = None) -> LetFrame:
    """``with T.LetStmt(value) as x:`` (a new variable) or ``with T.LetStmt(value, var=x):``
    (one declared with ``x = T.int32()``): ``x`` bound to ``value`` in the body."""
    val = args.expr(value, "T.LetStmt")
    if type_annotation is not None:
        val = op.cast(val, args.dtype_of(type_annotation, "T.LetStmt"))
    if var is not None and not isinstance(var, Var):
        raise TypeError(f"T.LetStmt: var= is a variable (x = T.int32()), found {var!r}")
    if isinstance(var, Var):
        val = op.convert(val, var.dtype)
    return LetFrame(var, val)


def allocate(
    extents: object, dtype: object, scope: object = "global", condition: object = True
) -> BufferDecl:
    """``B = T.allocate([16], "float32", "global")``: storage for the rest of the body, read as
    ``B = T.decl_buffer((16,), "float32")`` (printed so); ``B[i]`` indexes it directly."""
    if not isinstance(scope, str):
        raise TypeError(f"T.allocate: expected a scope string, found {scope!r}")
    shape = args.shape_of(extents, "T.allocate")
    return BufferDecl("decl", BufferType(shape, args.dtype_of(dtype, "T.allocate"), scope=scope))


@args.dtype_ignored
def tvm_storage_sync(scope: object = "shared") -> PrimExpr:
    """``T.tvm_storage_sync("shared")``: the block-wide barrier (``__syncthreads()``)."""
    if scope != "shared":
        raise TypeError(f'T.tvm_storage_sync: only "shared" is supported, found {scope!r}')
    return intrinsics.SYNC_THREADS.call()
