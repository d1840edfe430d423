"""TVM's host-side and pre-schedule constructs of the ``T`` namespace: ``T.allocate_const``,
``T.realize``, ``T.prefetch``, ``T.isnullptr``, ``T.call_pure_extern``, ``T.call_cpacked``,
the LLVM intrinsic calls and the packed-call ABI builtins (``T.tvm_struct_get``, ...)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from tilewright.ir import intrinsics
from tilewright.ir.buffer import Buffer, BufferRegion, decl_buffer
from tilewright.ir.dtype import DataType, handle
from tilewright.ir.expr import IntImm, PrimExpr, Range, StringImm, Var
from tilewright.ir.stmt import AllocateConst, AttrStmt, BufferRealize, Prefetch, Stmt
from tilewright.script.parser.frames import EnclosingDirective
from tilewright.script.tir import arguments as args

REALIZE_SCOPE = "realize_scope"  # the AttrStmt key TVM puts around a BufferRealize


def _operand(value: object, where: str) -> PrimExpr:
    return StringImm(value) if isinstance(value, str) else args.expr(value, where)


def const_values(data: object, dtype: DataType, where: str) -> tuple[int | float, ...]:
    """The elements of a constant buffer as Python numbers of the dtype's kind (a nested list
    or a numpy array is read in row-major order)."""
    tolist = getattr(data, "tolist", None)
    values = tolist() if callable(tolist) else data
    flat: list[object] = []

    def walk(item: object) -> None:
        if isinstance(item, list | tuple):
            for x in item:
                walk(x)
        else:
            flat.append(item.value if isinstance(item, IntImm) else item)

    walk(values)
    floating = dtype.is_float
    out: list[int | float] = []
    for v in flat:
        if not isinstance(v, int | float) or (isinstance(v, bool) and not dtype.is_bool):
            raise TypeError(f"{where}: expected numbers, found {v!r}")
        if floating:
            out.append(float(v))
        elif isinstance(v, float) and not (math.isfinite(v) and v.is_integer()):
            raise TypeError(f"{where}: {v!r} is not a {dtype} value")
        else:
            out.append(int(v))
    return tuple(out)


@dataclass(frozen=True)
class ConstAllocation(EnclosingDirective):
    """``B = T.allocate_const(data, "float32", [8])``: a constant buffer ``B`` for the rest of
    the body (``with T.allocate_const(...) as B:`` for the with body)."""

    data: tuple[int | float, ...]
    dtype: DataType
    shape: tuple[PrimExpr, ...]

    def enclose(self, names: list[str] | None) -> tuple[object, Callable[[Stmt], Stmt]]:
        if not names or len(names) != 1:
            raise TypeError("T.allocate_const: expected one name, as in B = T.allocate_const(...)")
        name = names[0]
        buffer = decl_buffer(self.shape, self.dtype, name, data=Var(name, handle))
        return buffer, lambda body: AllocateConst(buffer, body, self.data)


def allocate_const(data: object, dtype: object, extents: object) -> ConstAllocation:
    """``B = T.allocate_const([1.0, 2.0, 3.0, 4.0], "float32", [4])``: read-only storage holding
    ``data`` (row-major) for the rest of the body; ``B[i]`` indexes it (as does a
    ``T.decl_buffer(..., data=B)`` view)."""
    where = "T.allocate_const"
    kind = args.dtype_of(dtype, where)
    shape = args.shape_of(extents, where)
    values = const_values(data, kind, where)
    count = 1
    for dim in shape:
        if not isinstance(dim, IntImm):
            raise TypeError(f"{where}: the extents must be constants, found {shape}")
        count *= dim.value
    if len(values) != count:
        raise ValueError(f"{where}: {len(values)} values for extents of {count} elements")
    return ConstAllocation(values, kind, shape)


@dataclass(frozen=True)
class Realization(EnclosingDirective):
    """``with T.realize(A[0:16], ""):`` (or bare, for the rest of the body)."""

    region: BufferRegion
    scope: str | None
    condition: PrimExpr

    def enclose(self, names: list[str] | None) -> tuple[object, Callable[[Stmt], Stmt]]:
        if names:
            raise TypeError("T.realize binds no name")
        return None, self.make

    def make(self, body: Stmt) -> Stmt:
        realize = BufferRealize(self.region.buffer, self.region.region, self.condition, body)
        if self.scope is None:
            return realize
        return AttrStmt(self.region.buffer, REALIZE_SCOPE, StringImm(self.scope), realize)


def realize(buffer_slice: object, scope: object = None, condition: object = True) -> Realization:
    """``with T.realize(A[0:16, 0:16], ""):``: TVM's pre-schedule stage IR, the buffer realized
    over the region in the storage scope (its ``realize_scope`` attribute) for the body."""
    where = "T.realize"
    if scope is not None and not isinstance(scope, str):
        raise TypeError(f"{where}: expected a storage scope string, found {scope!r}")
    cond = args.expr(condition, where)
    if not cond.dtype.is_bool:
        raise TypeError(f"{where}: condition= is a bool expression, found {cond.dtype}")
    return Realization(args.region(buffer_slice, where), scope, cond)


def prefetch(buffer: object, bounds: object) -> Prefetch:
    """``T.prefetch(A, [T.Range(0, 16)])``: a hint that the region will be read soon."""
    where = "T.prefetch"
    if not isinstance(buffer, Buffer):
        raise TypeError(f"{where}: expected a buffer, found {buffer!r}")
    if not isinstance(bounds, Sequence) or not all(isinstance(r, Range) for r in bounds):
        raise TypeError(f"{where}: expected a list of T.Range, one per dimension")
    if len(bounds) != len(buffer.shape):
        raise TypeError(
            f"{where}: {len(bounds)} ranges for the {len(buffer.shape)}-D {buffer.name}"
        )
    return Prefetch(buffer, tuple(bounds))


@args.dtype_ignored
def isnullptr(value: object) -> PrimExpr:
    """``T.isnullptr(A.data)``: whether the handle is NULL."""
    x = args.expr(value, "T.isnullptr")
    if not x.dtype.is_handle:
        raise TypeError(f"T.isnullptr: expected a handle, found a {x.dtype} value")
    return intrinsics.ISNULLPTR.call(x)


@args.dtype_forward
def call_pure_extern(dtype: object, func_name: object, *values: object) -> PrimExpr:
    """``T.call_pure_extern("float32", "fabsf", x)``: ``T.call_extern`` of a function without
    side effects."""
    where = "T.call_pure_extern"
    if not isinstance(func_name, str) or not func_name.isidentifier():
        raise TypeError(f"{where}: expected a C function name, found {func_name!r}")
    operands = (_operand(v, where) for v in values)
    result = args.dtype_of(dtype, where)
    return intrinsics.CALL_PURE_EXTERN.call(StringImm(func_name), *operands, dtype=result)


@args.dtype_ignored
def call_cpacked(name: object, *values: object) -> PrimExpr:
    """``T.call_cpacked("f", A.data, n)``: a direct C call of a packed function (TVM's C
    runtime ABI; parsed and printed, not built)."""
    if not isinstance(name, str):
        raise TypeError(f"T.call_cpacked: expected a function name string, found {name!r}")
    operands = (_operand(v, "T.call_cpacked") for v in values)
    return intrinsics.CALL_CPACKED.call(StringImm(name), *operands)


def _llvm(intrinsic: intrinsics.Intrinsic, name: str) -> Callable[..., PrimExpr]:
    def call(dtype: object, intrin: object, *values: object) -> PrimExpr:
        where = f"T.{name}"
        result = args.dtype_of(dtype, where)
        operands = (_operand(v, where) for v in (intrin, *values))
        return intrinsic.call(*operands, dtype=result)

    call.__name__ = call.__qualname__ = name
    call = args.dtype_forward(call)
    call.__doc__ = (
        f'``T.{name}("float32", "llvm.sqrt", x)``: a call of an LLVM intrinsic, named or '
        "numbered (parsed and printed; the c target refuses it)."
    )
    return call


call_llvm_intrin = _llvm(intrinsics.CALL_LLVM_INTRIN, "call_llvm_intrin")
call_llvm_pure_intrin = _llvm(intrinsics.CALL_LLVM_PURE_INTRIN, "call_llvm_pure_intrin")


def tvm_struct_get(array: object, index: object, field: object, dtype: object) -> PrimExpr:
    """``T.tvm_struct_get(args, 0, 12, "int32")``: a field of a TVM runtime struct (the dtype
    last, as TVM writes it)."""
    where = "T.tvm_struct_get"
    operands = (args.expr(v, where) for v in (array, index, field))
    return intrinsics.STRUCT_GET.call(*operands, dtype=args.dtype_of(dtype, where))


def _host(intrinsic: intrinsics.Intrinsic, doc: str) -> Callable[..., PrimExpr]:
    name = intrinsic.name

    def call(*values: object) -> PrimExpr:
        return intrinsic.call(*(_operand(v, f"T.{name}") for v in values))

    call.__name__ = call.__qualname__ = name
    call.__doc__ = doc + " (TVM's packed-call ABI; parsed and printed, not built)"
    return args.dtype_ignored(call)


tvm_struct_set = _host(
    intrinsics.STRUCT_SET, "``T.tvm_struct_set(array, index, field, value)``: set a field"
)
tvm_stack_alloca = _host(
    intrinsics.STACK_ALLOCA, '``T.tvm_stack_alloca("array", 1)``: stack space for items'
)
tvm_stack_make_shape = _host(
    intrinsics.STACK_MAKE_SHAPE, "``T.tvm_stack_make_shape(4, n)``: a shape on the stack"
)
tvm_stack_make_array = _host(
    intrinsics.STACK_MAKE_ARRAY,
    "``T.tvm_stack_make_array(A.data, shape, strides, ndim, T.float32(0), 0)``: a DLTensor",
)
