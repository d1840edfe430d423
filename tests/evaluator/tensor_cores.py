"""The tensor-core intrinsics of lowered CUDA kernels, on the PTX ISA's fragment layouts.

``ptx_ldmatrix`` and ``ptx_mma`` are warp-collective (``.sync.aligned``): as a shuffle does
(``warps.py``), each lane offers what it brings, yields, and then takes its part of what the
32 lanes of its warp offered; a lane that does not take part is an error. ``mma_fill`` and
``mma_store`` are a thread's own. Operands are pointers (``memory.Pointer``: ``tw.region_data``,
``tvm_access_ptr``) plus an element offset; an access outside the region they name is an error.

- ``ptx_ldmatrix(trans, num, ".b16", local, local_offset, smem, smem_offset)``
  (``ldmatrix.sync.aligned.m8n8.x{num}[.trans].shared.b16``): lane ``t < 8 * num`` reads row
  ``t % 8`` of matrix ``t // 8``, eight elements at ``smem + smem_offset``; from matrix ``q``
  lane ``t`` receives into ``local[local_offset + 2q]`` and ``[... + 2q + 1]`` the elements
  (row ``t // 4``, columns ``2 (t % 4)`` and ``2 (t % 4) + 1``), or with ``trans`` (rows
  ``2 (t % 4)`` and ``2 (t % 4) + 1``, column ``t // 4``). The rows are read as the lanes that
  supply their addresses, so the race detector sees them as those lanes' reads.
- ``ptx_mma("m16n8k16", "row", "col", a_type, b_type, c_type, a, a_offset, b, b_offset, c,
  c_offset, saturate)``: ``D = A (16x16) B (16x8) + C`` into C's registers, lane ``t``
  (group ``g = t // 4``, ``q = t % 4``) holding elements ``r`` of A (8: row
  ``g + 8 ((r // 2) % 2)``, column ``2q + r % 2 + 8 (r // 4)``), B (4: row
  ``2q + r % 2 + 8 (r // 2)``, column ``g``) and C (4: row ``g + 8 (r // 2)``, column
  ``2q + r % 2``). Products and sums in float32, rounded once to C's type.
- ``tw.cuda.stmatrix(num, trans, smem, local, local_offset)``
  (``stmatrix.sync.aligned.m8n8.x{num}[.trans].shared.b16``): ldmatrix's inverse. Lane ``t``
  gives ``local[local_offset + 2q]`` and ``[... + 2q + 1]`` of matrix ``q`` (row ``t // 4``,
  columns ``2 (t % 4)``, ``+1``; with ``trans`` those are rows of the transpose); lane
  ``t < 8 * num`` writes row ``t % 8`` of matrix ``t // 8`` at ``smem``, writes the race
  detector sees as that lane's.
- ``mma_fill(size, ptr, offset)``: ``ptr[offset : offset + size] = 0``.
- ``mma_store(16, 16, dst, src, src_offset, stride)``: lane ``threadIdx.x`` stores its
  register ``r`` of a 16x16 accumulator tile (two C fragments side by side) to
  ``dst[row * stride + col]``, row ``8 ((r % 4) // 2) + lane // 4``, column
  ``8 (r // 4) + 2 (lane % 4) + r % 2``; stores the race detector sees.
"""

from __future__ import annotations

from typing import Any

import ml_dtypes  # noqa: F401 - numpy knows bfloat16 once it is imported
import numpy as np

from tilewright import ir
from tilewright.ir import intrinsics
from tilewright.ir import intrinsics_hopper as hopper

from .memory import Pointer
from .warps import WARP, block_dims, offer, warp_offers, warp_result

_LANES = np.arange(WARP)[:, None]
_GROUP, _QUAD = _LANES // 4, _LANES % 4
_R8, _R4 = np.arange(8)[None, :], np.arange(4)[None, :]
# (row, column) of each lane's fragment registers: (32, registers) index arrays.
A_FRAGMENT = (_GROUP + 8 * (_R8 // 2 % 2), 2 * _QUAD + _R8 % 2 + 8 * (_R8 // 4))
B_FRAGMENT = (2 * _QUAD + _R4 % 2 + 8 * (_R4 // 2), np.broadcast_to(_GROUP, (WARP, 4)))
C_FRAGMENT = (_GROUP + 8 * (_R4 // 2), 2 * _QUAD + _R4 % 2)
_MMA_TYPES = {("fp16", "fp16", "fp32"), ("fp16", "fp16", "fp16"), ("bf16", "bf16", "fp32")}
_PTX_TYPES = {"fp16": "float16", "bf16": "bfloat16", "fp32": "float32"}


def _lane(thread: Any) -> int:
    return thread.id % WARP


# -- ldmatrix ------------------------------------------------------------------------------------
def ldmatrix_offer(thread: Any, trans: bool, num: int, smem: Pointer, offset: int) -> tuple:
    """What a lane brings to ``ldmatrix``: its row of a matrix, if it supplies one."""
    row = smem.read(offset, 8) if _lane(thread) < 8 * num else None
    if row is not None and row.dtype.itemsize != 2:
        raise AssertionError(f"ptx_ldmatrix: {smem.name} holds {row.dtype}, not 16-bit elements")
    return trans, num, row


def ldmatrix_take(thread: Any, trans: bool, num: int, local: Pointer, offset: int) -> None:
    """The lane's registers from the rows its warp's lanes read."""
    offers = warp_offers(thread, "ptx_ldmatrix")
    if any(o[:2] != (trans, num) for o in offers):
        raise AssertionError("ptx_ldmatrix: the lanes of a warp run different ldmatrix forms")
    lane = _lane(thread)
    values = []
    for q in range(num):
        if trans:
            values += [offers[8 * q + 2 * (lane % 4) + i][2][lane // 4] for i in (0, 1)]
        else:
            values += list(offers[8 * q + lane // 4][2][2 * (lane % 4) : 2 * (lane % 4) + 2])
    local.write(int(offset) + np.arange(2 * num), np.array(values))


# -- stmatrix -----------------------------------------------------------------------------------
def stmatrix_offer(thread: Any, trans: bool, num: int, local: Pointer, offset: int) -> tuple:
    """What a lane brings to ``stmatrix``: two 16-bit registers per matrix."""
    registers = local.read(offset, 2 * num)
    if registers.dtype.itemsize != 2:
        raise AssertionError(f"stmatrix: {local.name} holds {registers.dtype}, not 16 bits")
    return trans, num, registers


def stmatrix_take(thread: Any, trans: bool, num: int, smem: Pointer) -> None:
    """The lane writes its row of a matrix (if it addresses one) from its warp's registers."""
    offers = warp_offers(thread, "stmatrix")
    if any(o[:2] != (trans, num) for o in offers):
        raise AssertionError("stmatrix: the lanes of a warp run different stmatrix forms")
    lane = _lane(thread)
    if lane >= 8 * num:
        return
    q, r = divmod(lane, 8)
    if trans:  # row r of the stored matrix is column r of the lanes' one
        row = [offers[4 * j + r // 2][2][2 * q + r % 2] for j in range(8)]
    else:
        row = [offers[4 * r + c][2][2 * q + i] for c in range(4) for i in (0, 1)]
    if smem.dtype.itemsize != 2:
        raise AssertionError(f"stmatrix: {smem.name} holds {smem.dtype}, not 16-bit elements")
    smem.write(np.arange(8), np.array(row, smem.dtype))


# -- mma -----------------------------------------------------------------------------------------
def mma_offer(types: tuple[np.dtype, ...], *operands: Any) -> tuple[np.ndarray, ...]:
    """A lane's fragments of A, B and C (pointer, offset pairs), of the PTX types."""
    fragments = tuple(
        pointer.read(offset, count)
        for pointer, offset, count in zip(operands[0::2], operands[1::2], (8, 4, 4))
    )
    for fragment, dtype, pointer, name in zip(fragments, types, operands[0::2], "ABC"):
        if fragment.dtype != dtype:
            held = f"{name} ({pointer.name}) holds {fragment.dtype}"
            raise AssertionError(f"ptx_mma: {held}, not {dtype}")
    return fragments


def _multiply(offers: list[tuple[np.ndarray, ...]], accumulator: np.dtype) -> np.ndarray:
    """The warp's D fragments (32 lanes x 4) from its lanes' A, B, C fragments."""
    a, b, c = (np.zeros(shape, "float32") for shape in ((16, 16), (16, 8), (16, 8)))
    for matrix, fragment, i in ((a, A_FRAGMENT, 0), (b, B_FRAGMENT, 1), (c, C_FRAGMENT, 2)):
        matrix[fragment] = np.stack([o[i] for o in offers])
    d = (a @ b + c).astype(accumulator)
    return d[C_FRAGMENT]


def mma_take(thread: Any, accumulator: np.dtype, c: Pointer, offset: int) -> None:
    """The lane's registers of D, into C's."""
    d = warp_result(thread, "ptx_mma", lambda offers: _multiply(offers, accumulator))
    c.write(int(offset) + np.arange(4), d[_lane(thread)])


# -- per thread ----------------------------------------------------------------------------------
def mma_fill(size: int, ptr: Pointer, offset: int) -> None:
    ptr.write(int(offset) + np.arange(int(size)), 0)


def mma_store(lane: int, dst: Pointer, src: Pointer, offset: int, stride: int) -> None:
    r = np.arange(8)
    rows = 8 * (r % 4 // 2) + lane // 4
    columns = 8 * (r // 4) + 2 * (lane % 4) + r % 2
    values = src.read(offset, 8)
    dtype = dst.dtype
    if values.dtype != dtype:
        raise AssertionError(f"mma_store: {src.name} holds {values.dtype}, {dst.name} {dtype}")
    dst.write(rows * int(stride) + columns, values)


# -- translation ---------------------------------------------------------------------------------
def _text(arg: ir.PrimExpr, what: str) -> str:
    if not isinstance(arg, ir.StringImm):
        raise TypeError(f"evaluator: {what} is a string, not {arg}")
    return arg.value


def _constant(arg: ir.PrimExpr, what: str) -> int:
    if not isinstance(arg, ir.IntImm):
        raise TypeError(f"evaluator: {what} is a constant, not {arg}")
    return arg.value


def _check_scope(arg: ir.PrimExpr, scope: str, what: str) -> None:
    """A pointer operand names a region of a buffer in ``scope`` (where the form says so)."""
    if isinstance(arg, ir.Call) and intrinsics.ACCESS_PTR.matches(arg):
        arg = arg.args[0]
    if isinstance(arg, ir.Call) and intrinsics.REGION_DATA.matches(arg):
        buffer = arg.args[0].buffer  # type: ignore[attr-defined]
        if not buffer.scope.startswith(scope):
            where = f"{buffer.scope} {buffer.name}"
            raise TypeError(f"evaluator: {what} is in {scope} memory, not in {where}")


class TensorCoreTranslator:
    """Mixed into ``ThreadTranslator`` (it needs ``expr``, ``emit``, ``constant``): the
    tensor-core intrinsics as statements; the collective ones yield."""

    func: ir.PrimFunc

    def stmt_Evaluate(self, s: ir.Evaluate) -> None:
        call = s.value
        intrinsic = intrinsics.lookup_or_none(call.op) if isinstance(call, ir.Call) else None
        emitter = {
            intrinsics.PTX_LDMATRIX: self.emit_ldmatrix,
            intrinsics.PTX_MMA: self.emit_mma,
            intrinsics.MMA_FILL: self.emit_fill,
            intrinsics.MMA_STORE: self.emit_store,
            hopper.STMATRIX: self.emit_stmatrix,
        }.get(intrinsic)  # type: ignore[arg-type]
        if emitter is None:
            super().stmt_Evaluate(s)  # type: ignore[misc]
            return
        assert isinstance(call, ir.Call) and intrinsic is not None
        intrinsic.check_arity(len(call.args))
        emitter(call)

    def emit_ldmatrix(self, call: ir.Call) -> None:
        trans, num, kind, local, local_offset, smem, smem_offset = call.args
        if _text(kind, "ldmatrix's type") != ".b16":
            raise TypeError(f"evaluator: ldmatrix of {kind} (only .b16)")
        _check_scope(local, "local", "ldmatrix's destination")
        _check_scope(smem, "shared", "ldmatrix's source")
        self._exchange(
            intrinsics.PTX_LDMATRIX, trans, num, (ldmatrix_offer, smem, smem_offset),
            (ldmatrix_take, local, local_offset),
        )  # fmt: skip

    def emit_stmatrix(self, call: ir.Call) -> None:
        num, trans, smem, local, local_offset = call.args
        _check_scope(local, "local", "stmatrix's source")
        _check_scope(smem, "shared", "stmatrix's destination")
        self._exchange(
            hopper.STMATRIX, trans, num, (stmatrix_offer, local, local_offset),
            (stmatrix_take, smem),
        )  # fmt: skip

    def _exchange(self, intrinsic, trans, num, offered: tuple, taken: tuple) -> None:
        """A warp-collective 8 x 8 matrix move: every lane offers (``offered``: the function
        and its pointer arguments), yields, then takes its part (``taken``)."""
        expr, emit, constant = self.expr, self.emit, self.constant  # type: ignore[attr-defined]
        what = intrinsic.name.split(".")[-1]
        flag, count = bool(_constant(trans, f"{what}'s trans")), _constant(num, f"{what}'s num")
        if count not in (1, 2, 4):
            raise TypeError(f"evaluator: {what} of {count} matrices (1, 2 or 4)")
        offer_fn, *offer_args = offered
        take_fn, *take_args = taken
        head = f"_t, {flag}, {count}"
        given = ", ".join(expr(a) for a in offer_args)
        emit(f"{constant(offer)}(_t, {constant(offer_fn)}({head}, {given}))")
        emit(f"yield {constant(intrinsic)}")
        emit(f"{constant(take_fn)}({head}, {', '.join(expr(a) for a in take_args)})")

    def emit_mma(self, call: ir.Call) -> None:
        expr, emit, constant = self.expr, self.emit, self.constant  # type: ignore[attr-defined]
        shape, a_layout, b_layout, *names = (_text(a, "an mma form") for a in call.args[:6])
        form = (shape, a_layout, b_layout)
        if form != ("m16n8k16", "row", "col") or tuple(names) not in _MMA_TYPES:
            raise TypeError(f"evaluator: mma {' '.join(form)} of {' '.join(names)} is not known")
        if _constant(call.args[12], "mma's saturate"):
            raise TypeError("evaluator: mma with saturation is not known")
        for pointer in call.args[6:12:2]:
            _check_scope(pointer, "local", "an mma operand")
        types = tuple(np.dtype(_PTX_TYPES[n]) for n in names)
        operands = ", ".join(expr(a) for a in call.args[6:12])
        emit(f"{constant(offer)}(_t, {constant(mma_offer)}({constant(types)}, {operands}))")
        emit(f"yield {constant(intrinsics.PTX_MMA)}")
        c, c_offset = call.args[10:12]
        emit(f"{constant(mma_take)}(_t, {constant(types[2])}, {expr(c)}, {expr(c_offset)})")

    def emit_fill(self, call: ir.Call) -> None:
        expr, emit, constant = self.expr, self.emit, self.constant  # type: ignore[attr-defined]
        emit(f"_rt.effects[{constant(intrinsics.MMA_FILL)}] += 1")
        emit(f"{constant(mma_fill)}({', '.join(expr(a) for a in call.args)})")

    def emit_store(self, call: ir.Call) -> None:
        expr, emit, constant = self.expr, self.emit, self.constant  # type: ignore[attr-defined]
        m, n, dst, src, offset, stride = call.args
        if (_constant(m, "mma_store's m"), _constant(n, "mma_store's n")) != (16, 16):
            raise TypeError(f"evaluator: mma_store of {m}x{n} tiles (16x16)")
        _check_scope(src, "local", "mma_store's source")
        lane = f"_t.index('threadIdx.x', {block_dims(self.func)[0]})"
        emit(f"_rt.effects[{constant(intrinsics.MMA_STORE)}] += 1")
        args = ", ".join(expr(a) for a in (dst, src, offset, stride))
        emit(f"{constant(mma_store)}({lane}, {args})")
