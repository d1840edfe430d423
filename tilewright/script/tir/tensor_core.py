"""Tensor-core functions of the ``T`` namespace (TVM's names): ``T.ptx_ldmatrix``,
``T.ptx_mma``, ``T.mma_fill``, ``T.mma_store``, and ``T.meta_var``, which tensor intrinsic
descriptions use to compute indices with Python functions.

Each intrinsic takes its result dtype as TVM's script does: ``dtype=`` or first.

Example::

    T.evaluate(T.ptx_ldmatrix(False, 4, ".b16", warp.data, warp.elem_offset + 8 * tx,
                              shared.access_ptr("r"), s0 * (tx % 16) + 8 * (tx // 16),
                              dtype="float16"))
"""

from __future__ import annotations

from collections.abc import Callable

from tilewright.ir import intrinsics
from tilewright.ir.dtype import bool_
from tilewright.ir.expr import IntImm, PrimExpr, StringImm
from tilewright.script.parser.frames import MetaVar
from tilewright.script.tir import arguments as args


def meta_var(value: object) -> MetaVar:
    """``thread, local = T.meta_var(layout(i, j))``: bind Python values (here the two index
    expressions ``layout`` returns) to names without a ``LetStmt``."""
    return MetaVar(value)


def _operand(value: object, where: str) -> PrimExpr:
    if isinstance(value, str):
        return StringImm(value)
    if isinstance(value, bool):
        return IntImm(int(value), bool_)
    return args.expr(value, where)


def _forwarded(intrinsic: intrinsics.Intrinsic, doc: str) -> Callable[..., PrimExpr]:
    name = intrinsic.name

    def call(*values: object, dtype: object = None) -> PrimExpr:
        where = f"T.{name}"
        if dtype is None:
            if not values:
                raise TypeError(f'{where}: expected dtype="float16" (or the dtype first)')
            dtype, values = values[0], values[1:]
        result = args.dtype_of(dtype, where)
        operands = tuple(_operand(v, where) for v in values)
        try:
            return intrinsic.call(*operands, dtype=result)
        except TypeError as err:
            raise TypeError(f"{where}: {err}") from None

    call.__name__ = call.__qualname__ = name
    call.__doc__ = doc
    return call


ptx_ldmatrix = _forwarded(
    intrinsics.PTX_LDMATRIX,
    '``T.ptx_ldmatrix(trans, num, ".b16", local_ptr, local_offset, smem_ptr, smem_offset, '
    "dtype=...)``: ``ldmatrix`` of ``num`` 8x8 matrices into this lane's registers.",
)
ptx_mma = _forwarded(
    intrinsics.PTX_MMA,
    '``T.ptx_mma("m16n8k16", "row", "col", "fp16", "fp16", "fp32", a, a_offset, '
    'b, b_offset, c, c_offset, False, dtype="float32")``: one ``mma.sync``.',
)
mma_fill = _forwarded(
    intrinsics.MMA_FILL,
    '``T.mma_fill(8, C.data, C.elem_offset, dtype="float32")``: zero a lane\'s accumulators.',
)
mma_store = _forwarded(
    intrinsics.MMA_STORE,
    '``T.mma_store(16, 16, C.access_ptr("w"), C_warp.data, C_warp.elem_offset, s0, '
    'dtype="float32")``: store an accumulator fragment.',
)

__all__ = ["meta_var", "mma_fill", "mma_store", "ptx_ldmatrix", "ptx_mma"]
