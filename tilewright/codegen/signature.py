"""Lowered PrimFunc → ``FuncSignature``: the argument list a generated kernel takes.

The signature (``tilewright.artifact.signature``) is the contract between code generators
and runtimes: one argument per parameter (a pointer for a buffer, a value for a scalar),
then one ``int64`` per symbolic variable of the buffer shapes and strides that is not itself
a parameter, in order of first appearance.
"""

from __future__ import annotations

from tilewright.artifact.signature import (
    BoundsCheck,
    Dim,
    FuncSignature,
    ParamSpec,
    SignatureError,
)
from tilewright.ir import (
    Add,
    BinaryOp,
    BufferStore,
    Call,
    FloorDiv,
    FloorMod,
    IntImm,
    Max,
    Min,
    Mul,
    PrimExpr,
    PrimFunc,
    Sub,
    Var,
    intrinsics,
    post_order_visit,
)
from tilewright.transform.instrument_bounds import CHECKS_ATTR

_DIM_OPS: dict[type, str] = {
    Add: "add",
    Sub: "sub",
    Mul: "mul",
    FloorDiv: "floordiv",
    FloorMod: "floormod",
    Min: "min",
    Max: "max",
}

__all__ = ["FuncSignature", "ParamSpec", "SignatureError", "func_signature", "symbolic_vars"]


def func_signature(name: str, func: PrimFunc, symbol: str | None = None) -> FuncSignature:
    """The argument contract of ``func`` built under ``name``.

    Arguments:
        name: the function's name in its module.
        func: a lowered function (its ``buffer_map`` keeps the N-d buffers).
        symbol: the exported C symbol; ``name`` by default.

    Example::

        >>> sig = func_signature("main", func)
        >>> [p.name for p in sig.params], sig.sym_vars
        (['A', 'B'], ('n',))
    """
    names = _VarNames()
    written = _written_data(func)
    params: list[ParamSpec] = []
    param_set = set(func.params)
    for var in func.params:
        names.name(var)
    sym_vars = symbolic_vars(name, func)
    for var in func.params:
        buf = func.buffer_of(var)
        if buf is None:
            params.append(ParamSpec(var.name, str(var.dtype)))
            continue
        if buf.dtype.lanes != 1:
            raise SignatureError(f"{name}: buffer {buf.name} has vector dtype {buf.dtype}")
        dims = [_dim(expr, names) for expr in (*buf.shape, *buf.strides)]
        if not (isinstance(buf.elem_offset, IntImm) and buf.elem_offset.value == 0):
            raise SignatureError(
                f"{name}: buffer {buf.name} has elem_offset {buf.elem_offset}; "
                "arguments must start at their first element"
            )
        shape, strides = dims[: buf.ndim], dims[buf.ndim :]
        params.append(
            ParamSpec(
                buf.name,
                str(buf.dtype),
                tuple(shape),
                tuple(strides) if buf.strides else None,
                buf.data in written,
            )
        )
    _check_bindable(name, func, sym_vars, param_set)
    return FuncSignature(
        name,
        symbol or name,
        tuple(params),
        tuple(names.name(v) for v in sym_vars),
        _bounds_checks(func),
    )


def _bounds_checks(func: PrimFunc) -> tuple[BoundsCheck, ...]:
    """The checks ``instrument_bounds`` recorded in the function's ``tw.bounds_checks``."""
    records = func.attr(CHECKS_ATTR, ())
    assert isinstance(records, tuple)  # instrument_bounds writes a tuple of records
    return tuple(
        BoundsCheck(str(buffer), str(kernel), str(index), str(extent), tuple(shape))
        for buffer, kernel, index, extent, shape in records
    )


def symbolic_vars(name: str, func: PrimFunc) -> list[Var]:
    """The variables of buffer shapes and strides that are not parameters, first seen first.

    Each becomes a trailing ``int64`` argument of the generated function.

    Example::

        >>> [v.name for v in symbolic_vars("main", func)]
        ['n']
    """
    found: list[Var] = []
    params = set(func.params)
    for var in func.params:
        buf = func.buffer_of(var)
        if buf is None:
            continue
        for expr in (*buf.shape, *buf.strides):
            for v in _dim_vars(expr, name, buf.name):
                if v not in params and v not in found:
                    found.append(v)
    return found


class _VarNames:
    """Distinct names for distinct variables (two different ``n`` become ``n`` and ``n_1``)."""

    def __init__(self) -> None:
        self.names: dict[Var, str] = {}
        self.used: set[str] = set()

    def name(self, var: Var) -> str:
        if var not in self.names:
            base, count = var.name, 0
            text = base
            while text in self.used:
                count += 1
                text = f"{base}_{count}"
            self.used.add(text)
            self.names[var] = text
        return self.names[var]


def _dim(expr: PrimExpr, names: _VarNames) -> Dim:
    if isinstance(expr, IntImm):
        return expr.value
    if isinstance(expr, Var):
        return names.name(expr)
    assert isinstance(expr, BinaryOp)  # _dim_vars accepted only these
    return (_DIM_OPS[type(expr)], _dim(expr.a, names), _dim(expr.b, names))


def _dim_vars(expr: PrimExpr, func_name: str, buf_name: str) -> list[Var]:
    found: list[Var] = []

    def visit(e: PrimExpr) -> None:
        if isinstance(e, Var):
            found.append(e)
        elif isinstance(e, IntImm):
            pass
        elif isinstance(e, BinaryOp) and type(e) in _DIM_OPS:
            visit(e.a)
            visit(e.b)
        else:
            raise SignatureError(
                f"{func_name}: buffer {buf_name} has a shape or stride {type(e).__name__} "
                "expression; shapes may use + - * // % min max of constants and variables"
            )

    visit(expr)
    return found


def _check_bindable(name: str, func: PrimFunc, sym_vars: list[Var], params: set[Var]) -> None:
    # A symbolic size reaches the kernel only if some dimension or stride is exactly it.
    direct = {
        e for _, buf in func.buffer_map for e in (*buf.shape, *buf.strides) if isinstance(e, Var)
    }
    for var in sym_vars:
        if var not in direct:
            raise SignatureError(
                f"{name}: symbolic size {var.name} appears only inside shape expressions, so "
                "argument shapes cannot determine it; make it a parameter"
            )


def _written_data(func: PrimFunc) -> set[Var]:
    """The data of buffers the function stores to, or hands to an external function (which
    may write what it is given)."""
    written: set[Var] = set()

    def visit(node: object) -> None:
        if isinstance(node, BufferStore):
            written.add(node.buffer.data)
        if isinstance(node, Call) and intrinsics.CALL_EXTERN.matches(node):
            handed = (intrinsics.data_var(a) for a in node.args)
            written.update(v for v in handed if v is not None)
        if isinstance(node, Call) and intrinsics.ACCESS_PTR.matches(node):
            data, mask = intrinsics.data_var(node.args[0]), node.args[3]
            if data is not None and not (isinstance(mask, IntImm) and mask.value & 2 == 0):
                written.add(data)

    post_order_visit(func.body, visit)
    return written
