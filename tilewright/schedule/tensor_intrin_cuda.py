"""The CUDA tensor-core intrinsics, registered under TVM's names (``tir.tensor_intrin.cuda``).

A 16x16 tile of a warp-wide matrix operand lives in a ``"warp"`` buffer of shape (32, 8):
row ``t`` is lane ``t``'s eight registers. ``shared_16x16_to_ldmatrix_32x8_layout(i, j)``
says where element (i, j) of the tile goes: the fragment layout of ``mma.m16n8k16`` (for a
row-major A and the accumulator it is where the hardware keeps the element; for B it is the
transposed bookkeeping that the ``ldmatrix`` and ``mma`` descriptions share). A schedule
stores its warp buffers in this layout with ``transform_layout`` and then tensorizes:

* ``mma_ldmatrix_{f16,bf16}_{a,b}[_trans][_dyn]``: a 16x16 tile of shared memory (``_dyn``:
  ``shared.dyn``) into the warp buffer with one ``ldmatrix.x4`` (``.trans`` for a row-major
  B). ``_trans`` reads a tile stored transposed (A as k x m, B as n x k).
* ``mma_{f16f16f32,f16f16f16,bf16bf16f32}[_trans_a][_trans_b]``: C (16x16) += A (16x16) *
  B (16x16) as two ``mma.sync.aligned.m16n8k16``, the operands loaded by the matching
  ldmatrix.
* ``mma_fill_16x16_{f32,f16}``: zero an accumulator tile.
* ``mma_store_16x16_{f32,f16}_{global,shared,shared_dyn}_``: an accumulator tile to memory.

``get_mma_intrin_group`` names the five a GEMM needs, as TVM's does.

Example::

    from tilewright.tir.tensor_intrin.cuda import LDMATRIX_f16_A_INTRIN
    sch.tensorize(loop, LDMATRIX_f16_A_INTRIN)
"""

from __future__ import annotations

from typing import no_type_check

from tilewright.ir import op
from tilewright.ir.expr import PrimExpr
from tilewright.ir.function import PrimFunc
from tilewright.schedule.tensor_intrin import TensorIntrin
from tilewright.script import tir as T

# Script syntax (dtype strings in annotations, parsed frames) is not Python to mypy: each
# script function is @no_type_check.

WARP_SIZE = 32
M_DIM = N_DIM = K_DIM = 16
LOCAL_SIZE = M_DIM * K_DIM // WARP_SIZE  # 8 registers of a lane per 16x16 tile

_SHORT = {"float16": "f16", "bfloat16": "bf16", "float32": "f32"}
_PTX = {"float16": "fp16", "bfloat16": "bf16", "float32": "fp32"}


def shared_16x16_to_ldmatrix_32x8_layout(i: PrimExpr, j: PrimExpr) -> tuple[PrimExpr, PrimExpr]:
    """(lane, register) of element (i, j) of a 16x16 fragment tile (module docstring)."""
    return 4 * (i % 8) + (j % 8) // 2, 4 * (j // 8) + (i // 8) * 2 + j % 2


def ldmatrix_32x8_to_shared_16x16_layout(
    lane: PrimExpr, local: PrimExpr
) -> tuple[PrimExpr, PrimExpr]:
    """The inverse: (row, column) of a lane's register ``local``."""
    return 8 * (local % 4 // 2) + lane // 4, 8 * (local // 4) + lane % 4 * 2 + local % 2


def _ldmatrix(dtype: str, operand: str, transposed: bool, scope: str) -> tuple:
    layout = shared_16x16_to_ldmatrix_32x8_layout
    # Lane t gives the address of row t % 8 of matrix t // 8, and matrix q fills register q
    # of every lane. A tile stored as the fragment wants it (A as m x k, B as k x n) is read
    # rows 0-15 of the left half, then of the right half; a transposed one (A as k x m, B as
    # n x k) quarter by quarter, so that the registers come in the same order.
    by_rows = not transposed
    trans = (operand == "B") != transposed  # the lanes want the stored tile's columns

    def offset(tx: PrimExpr, stride: PrimExpr) -> PrimExpr:
        if by_rows:
            return stride * (tx % 16) + 8 * (tx // 16)
        return stride * 8 * (tx // 16) + stride * (tx % 8) + 8 * (tx % 16 // 8)

    @T.prim_func
    @no_type_check
    def desc(warp_handle: T.handle, shared_handle: T.handle) -> None:
        shared = T.match_buffer(
            shared_handle, (16, 16), dtype, align=64, offset_factor=16, scope=scope
        )
        warp = T.match_buffer(warp_handle, (32, 8), dtype, align=64, offset_factor=16, scope="warp")
        with T.block("root"):
            T.reads(shared[0:16, 0:16])
            T.writes(warp[0:32, 0:8])
            for ax0, ax1 in T.grid(16, 16):
                with T.block("shared_warp"):
                    v0, v1 = T.axis.remap("SS", [ax0, ax1])
                    T.reads(shared[v0, v1])
                    lane, local = T.meta_var(layout(v0, v1))
                    T.writes(warp[lane, local])
                    warp[lane, local] = shared[v0, v1]

    @T.prim_func
    @no_type_check
    def impl(warp_handle: T.handle, shared_handle: T.handle) -> None:
        s0 = T.int32()
        s1 = T.int32()
        shared = T.match_buffer(
            shared_handle,
            (16, 16),
            dtype,
            align=64,
            offset_factor=16,
            scope=scope,
            strides=[s0, s1],
        )
        warp = T.match_buffer(warp_handle, (32, 8), dtype, align=64, offset_factor=16, scope="warp")
        with T.block("root"):
            T.reads(shared[0:16, 0:16])
            T.writes(warp[0:32, 0:8])
            for tx in T.thread_binding(0, 32, "threadIdx.x"):
                T.evaluate(
                    T.ptx_ldmatrix(
                        trans,
                        4,
                        ".b16",
                        warp.data,
                        warp.elem_offset + 8 * tx,
                        shared.access_ptr("r"),
                        offset(tx, s0),
                        dtype=dtype,
                    )
                )

    return desc, impl


def _mma(in_dtype: str, out_dtype: str, a_transposed: bool, b_transposed: bool) -> tuple:
    layout = shared_16x16_to_ldmatrix_32x8_layout
    names = (_PTX[in_dtype], _PTX[in_dtype], _PTX[out_dtype])

    def widen(value: PrimExpr) -> PrimExpr:
        return value if in_dtype == out_dtype else op.cast(value, out_dtype)

    # A transposed operand was loaded by its _trans ldmatrix, whose description stores
    # element (row, column) of the tile as it is kept (k x m for A, n x k for B).
    def a_index(i: PrimExpr, k: PrimExpr) -> tuple[PrimExpr, PrimExpr]:
        return layout(k, i) if a_transposed else layout(i, k)

    def b_index(k: PrimExpr, j: PrimExpr) -> tuple[PrimExpr, PrimExpr]:
        return layout(j, k) if b_transposed else layout(k, j)

    @T.prim_func
    @no_type_check
    def desc(a: T.handle, b: T.handle, c: T.handle) -> None:
        A = T.match_buffer(a, (32, 8), in_dtype, align=64, offset_factor=16, scope="warp")
        B = T.match_buffer(b, (32, 8), in_dtype, align=64, offset_factor=16, scope="warp")
        C = T.match_buffer(c, (32, 8), out_dtype, align=64, offset_factor=16, scope="warp")
        with T.block("root"):
            T.reads(C[0:32, 0:8], A[0:32, 0:8], B[0:32, 0:8])
            T.writes(C[0:32, 0:8])
            for i, j, k in T.grid(16, 16, 16):
                with T.block("C"):
                    vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                    lane_c, local_c = T.meta_var(layout(vi, vj))
                    lane_a, local_a = T.meta_var(a_index(vi, vk))
                    lane_b, local_b = T.meta_var(b_index(vk, vj))
                    T.reads(C[lane_c, local_c], A[lane_a, local_a], B[lane_b, local_b])
                    T.writes(C[lane_c, local_c])
                    C[lane_c, local_c] = C[lane_c, local_c] + widen(A[lane_a, local_a]) * widen(
                        B[lane_b, local_b]
                    )

    @T.prim_func
    @no_type_check
    def impl(a: T.handle, b: T.handle, c: T.handle) -> None:
        A = T.match_buffer(a, (32, 8), in_dtype, align=64, offset_factor=16, scope="warp")
        B = T.match_buffer(b, (32, 8), in_dtype, align=64, offset_factor=16, scope="warp")
        C = T.match_buffer(c, (32, 8), out_dtype, align=64, offset_factor=16, scope="warp")
        with T.block("root"):
            T.reads(C[0:32, 0:8], A[0:32, 0:8], B[0:32, 0:8])
            T.writes(C[0:32, 0:8])
            for tx in T.thread_binding(0, 32, "threadIdx.x"):
                # Columns 0-7 of the tile, then 8-15: B's and C's registers 4-7 hold the latter.
                T.evaluate(
                    T.ptx_mma(
                        "m16n8k16",
                        "row",
                        "col",
                        *names,
                        A.data,
                        A.elem_offset + tx * 8,
                        B.data,
                        B.elem_offset + tx * 8,
                        C.data,
                        C.elem_offset + tx * 8,
                        False,
                        dtype=out_dtype,
                    )
                )
                T.evaluate(
                    T.ptx_mma(
                        "m16n8k16",
                        "row",
                        "col",
                        *names,
                        A.data,
                        A.elem_offset + tx * 8,
                        B.data,
                        B.elem_offset + tx * 8 + 4,
                        C.data,
                        C.elem_offset + tx * 8 + 4,
                        False,
                        dtype=out_dtype,
                    )
                )

    return desc, impl


def _fill(dtype: str) -> tuple:
    layout = shared_16x16_to_ldmatrix_32x8_layout
    zero = op.cast(op.convert(0), dtype)

    @T.prim_func
    @no_type_check
    def desc(a: T.handle) -> None:
        C = T.match_buffer(a, (32, 8), dtype, scope="warp")
        with T.block("root"):
            T.reads()
            T.writes(C[0:32, 0:8])
            for i0, i1 in T.grid(16, 16):
                with T.block("C_warp"):
                    i, j = T.axis.remap("SS", [i0, i1])
                    lane, local = T.meta_var(layout(i, j))
                    T.reads()
                    T.writes(C[lane, local])
                    C[lane, local] = zero

    @T.prim_func
    @no_type_check
    def impl(a: T.handle) -> None:
        C = T.match_buffer(a, (32, 8), dtype, scope="warp", offset_factor=1)
        with T.block("root"):
            T.reads()
            T.writes(C[0:32, 0:8])
            for _tx in T.thread_binding(0, 32, "threadIdx.x"):
                T.evaluate(T.mma_fill(8, C.data, C.elem_offset, dtype=dtype))

    return desc, impl


def _store(dtype: str, scope: str) -> tuple:
    layout = shared_16x16_to_ldmatrix_32x8_layout

    @T.prim_func
    @no_type_check
    def desc(a: T.handle, c: T.handle) -> None:
        C_warp = T.match_buffer(a, (32, 8), dtype, scope="warp")
        C = T.match_buffer(c, (16, 16), dtype, scope=scope)
        with T.block("root"):
            T.reads(C_warp[0:32, 0:8])
            T.writes(C[0:16, 0:16])
            for i0, i1 in T.grid(16, 16):
                with T.block("C_warp"):
                    v0, v1 = T.axis.remap("SS", [i0, i1])
                    lane, local = T.meta_var(layout(v0, v1))
                    T.reads(C_warp[lane, local])
                    T.writes(C[v0, v1])
                    C[v0, v1] = C_warp[lane, local]

    @T.prim_func
    @no_type_check
    def impl(a: T.handle, c: T.handle) -> None:
        s0 = T.int32()
        s1 = T.int32()
        C_warp = T.match_buffer(a, (32, 8), dtype, scope="warp", offset_factor=1)
        C = T.match_buffer(c, (16, 16), dtype, scope=scope, offset_factor=1, strides=[s0, s1])
        with T.block("root"):
            T.reads(C_warp[0:32, 0:8])
            T.writes(C[0:16, 0:16])
            for _tx in T.thread_binding(0, 32, "threadIdx.x"):
                T.evaluate(
                    T.mma_store(
                        16, 16, C.access_ptr("w"), C_warp.data, C_warp.elem_offset, s0, dtype=dtype
                    )
                )

    return desc, impl


def _register_all() -> dict[str, str]:
    names: dict[str, str] = {}

    def add(constant: str, name: str, pair: tuple[PrimFunc, PrimFunc]) -> None:
        desc, impl = pair
        TensorIntrin.register(name, desc, impl, override=True)
        names[constant] = name

    for dtype in ("float16", "bfloat16"):
        short = _SHORT[dtype]
        for operand in ("A", "B"):
            for transposed in (False, True):
                for scope in ("shared", "shared.dyn"):
                    trans = "_TRANS" if transposed else ""
                    dyn = "_DYN" if scope == "shared.dyn" else ""
                    name = f"mma_ldmatrix_{short}_{operand.lower()}{trans.lower()}{dyn.lower()}"
                    constant = f"LDMATRIX_{short}_{operand}{trans}{dyn}_INTRIN"
                    add(constant, name, _ldmatrix(dtype, operand, transposed, scope))
    for in_dtype, out_dtype in (
        ("float16", "float32"),
        ("float16", "float16"),
        ("bfloat16", "float32"),
    ):
        base = f"{_SHORT[in_dtype]}{_SHORT[in_dtype]}{_SHORT[out_dtype]}"
        for trans_a in (False, True):
            for trans_b in (False, True):
                suffix = ("_trans_a" if trans_a else "") + ("_trans_b" if trans_b else "")
                add(
                    f"MMA_{base}{suffix.upper()}_INTRIN",
                    f"mma_{base}{suffix}",
                    _mma(in_dtype, out_dtype, trans_a, trans_b),
                )
    for dtype in ("float32", "float16"):
        short = _SHORT[dtype]
        add(f"MMA_fill_16x16_{short}_INTRIN", f"mma_fill_16x16_{short}", _fill(dtype))
        for scope in ("global", "shared", "shared.dyn"):
            where = scope.replace(".", "_")
            add(
                f"MMA_store_16x16_{short}_{where}_INTRIN",
                f"mma_store_16x16_{short}_{where}_",
                _store(dtype, scope),
            )
    return names


INTRIN_NAMES: dict[str, str] = _register_all()
globals().update(INTRIN_NAMES)


def get_mma_intrin_group(
    load_scope: str,
    store_scope: str,
    in_dtype: str,
    out_dtype: str,
    trans_a: bool,
    trans_b: bool,
) -> dict[str, str]:
    """The names of the five intrinsics of a tensor-core GEMM, as TVM's function returns
    them: ``init``, ``load_a``, ``load_b``, ``compute``, ``store``.

    Example: ``get_mma_intrin_group("shared", "global", "float16", "float32", False, False)``
    is ``{"init": "mma_fill_16x16_f32", "load_a": "mma_ldmatrix_f16_a", ...}``.
    """
    if in_dtype not in ("float16", "bfloat16") or out_dtype not in ("float16", "float32"):
        raise ValueError(
            f"no mma intrinsics for {in_dtype} inputs and {out_dtype} accumulation "
            "(float16 -> float16/float32, bfloat16 -> float32)"
        )
    if in_dtype == "bfloat16" and out_dtype != "float32":
        raise ValueError("bfloat16 inputs accumulate in float32")
    if load_scope not in ("shared", "shared.dyn"):
        raise ValueError(f"load_scope is shared or shared.dyn, not {load_scope!r}")
    if store_scope not in ("global", "shared", "shared.dyn"):
        raise ValueError(f"store_scope is global, shared or shared.dyn, not {store_scope!r}")
    a, out = _SHORT[in_dtype], _SHORT[out_dtype]
    dyn = "_dyn" if load_scope == "shared.dyn" else ""
    suffix = ("_trans_a" if trans_a else "") + ("_trans_b" if trans_b else "")
    return {
        "init": f"mma_fill_16x16_{out}",
        "load_a": f"mma_ldmatrix_{a}_a{'_trans' if trans_a else ''}{dyn}",
        "load_b": f"mma_ldmatrix_{a}_b{'_trans' if trans_b else ''}{dyn}",
        "compute": f"mma_{a}{a}{out}{suffix}",
        "store": f"mma_store_16x16_{out}_{store_scope.replace('.', '_')}_",
    }
