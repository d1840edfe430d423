"""A CPU model of what the emitted ``wgmma`` calls compute, for tests (no GPU).

It reads each ``tw.cuda.wgmma_mma_async`` call of a lowered function (and
``wgmma_mma_async_rs``, A from registers: the m64 x k16 fragment, 8 16-bit elements a
thread, placed like a 64 x 16 accumulator's), decodes its descriptors the way the PTX ISA's
canonical K-major shared-memory layouts define them (start address, LBO, SBO,
0/32/64/128-byte swizzle of the absolute byte address) and multiplies what it finds in the
given shared-memory storage into per-thread accumulators (the m64nNk16 fragment:
``wgmma_fragment_coord``). The model is independent of the descriptor derivation in
``tilewright.tirx.ops.wgmma_operands``: it only shares PTX's rules.
"""

from __future__ import annotations

import numpy as np
from expr_eval import evaluate

from tilewright.ir import Call, PrimExpr, collect_vars, post_order_visit
from tilewright.ir import intrinsics_hopper as hopper
from tilewright.ir.expr import EQ, GT, LT
from tilewright.layout import wgmma_fragment_coord


def value(expr: object, env: dict[str, int]) -> int:
    """An integer expression's value, variables by name (``if_then_else`` and comparisons
    included)."""
    if isinstance(expr, Call) and expr.op == "if_then_else":
        cond, yes, no = expr.args
        return value(yes, env) if value(cond, env) else value(no, env)
    for cls, fn in ((GT, int.__gt__), (LT, int.__lt__), (EQ, int.__eq__)):
        if isinstance(expr, cls):
            return int(fn(value(expr.a, env), value(expr.b, env)))
    if isinstance(expr, PrimExpr):
        return evaluate(expr, {v: env[v.name] for v in collect_vars(expr)})
    return evaluate(expr, {})


def wgmma_calls(func) -> list[Call]:
    """The function's wgmma_mma_async calls, in program order."""
    calls: list[Call] = []

    def visit(node: object) -> None:
        if isinstance(node, Call) and (
            hopper.WGMMA_MMA_ASYNC.matches(node) or hopper.WGMMA_MMA_ASYNC_RS.matches(node)
        ):
            calls.append(node)

    post_order_visit(func.body, visit)
    return calls


def _byte_address(start: int, r: int, kk: int, lbo: int, sbo: int, swizzle: int) -> int:
    if swizzle == 0:  # 8 x 16-byte core matrices: LBO along K, SBO along rows
        return start + (r // 8) * sbo + (kk // 8) * lbo + (r % 8) * 16 + (kk % 8) * 2
    address = start + (r // 8) * sbo + (r % 8) * swizzle + kk * 2
    return address ^ (((address >> 7) & (swizzle // 16 - 1)) << 4)


def read_operand(
    desc: Call, rows: int, storage: dict[str, np.ndarray], env: dict[str, int]
) -> np.ndarray:
    """The ``rows x 16`` matrix a descriptor points at (16-bit elements)."""
    pointer, lbo, sbo, swizzle = desc.args
    (load,) = pointer.args
    data = storage[load.buffer.name]
    start = value(load.indices[0], env) * 2
    lbo, sbo, swizzle = (x.value for x in (lbo, sbo, swizzle))
    out = np.empty((rows, 16), np.float64)
    for r in range(rows):
        for kk in range(16):
            address = _byte_address(start, r, kk, lbo, sbo, swizzle)
            assert address % 2 == 0
            out[r, kk] = data[address // 2]
    return out


def read_registers(a_registers: np.ndarray, offset: int) -> np.ndarray:
    """The 64 x 16 A of a ``wgmma_mma_async_rs``: thread t's elements ``offset .. + 7``."""
    a = np.full((64, 16), np.nan)
    for t in range(128):
        for i in range(8):
            row, col = wgmma_fragment_coord(t, i, 16)
            a[row, col] = a_registers[t, offset + i]
    return a


def run_wgmmas(
    calls: list[Call],
    storage: dict[str, np.ndarray],
    acc: np.ndarray,
    env: dict[str, int],
    a_registers: np.ndarray | None = None,
) -> None:
    """Apply the calls (in order) to ``acc`` (128 threads x registers), in place; A from
    ``a_registers`` (128 threads x 16-bit registers) for the ``_rs`` form."""
    for call in calls:
        n = call.args[0].value
        if hopper.WGMMA_MMA_ASYNC_RS.matches(call):
            assert a_registers is not None, "a wgmma with A in registers needs a_registers"
            a = read_registers(a_registers, value(call.args[3], env))
            b = read_operand(call.args[4], n, storage, env)
            offset, keep = value(call.args[6], env), value(call.args[7], env)
        else:
            a = read_operand(call.args[2], 64, storage, env)
            b = read_operand(call.args[3], n, storage, env)
            offset = value(call.args[5], env)
            keep = value(call.args[6], env)
            assert (call.args[7].value, call.args[8].value) == (0, 0)
        product = a @ b.T
        for t in range(128):
            for i in range(n // 2):
                row, col = wgmma_fragment_coord(t, i, n)
                old = acc[t, offset + i] if keep else 0.0
                acc[t, offset + i] = old + product[row, col]


def store_through(layout: object, array: np.ndarray, size: int) -> np.ndarray:
    """Storage of ``size`` elements holding ``array`` placed through ``layout``."""
    storage = np.full(size, np.nan)
    for index in np.ndindex(*array.shape):
        storage[layout.apply(*index, shape=array.shape)["m"]] = array[index]  # type: ignore[attr-defined]
    return storage
