"""Test support for the ``mma_sync`` gemm variant: a small tile program around one
``Tx.warp.gemm``, and a CPU model of what the emitted ``ptx_ldmatrix``, ``ptx_mma`` and
``mma_fill`` statements compute (no GPU).

The model follows the PTX ISA's rules only, not the variant's derivation: ``ldmatrix.m8n8``
(lane ``8 q + r`` gives the address of row ``r`` of matrix ``q``; register ``q`` of lane ``t``
then holds elements ``(t // 4, 2 (t % 4) + {0, 1})`` of matrix ``q``, or of its transpose with
``.trans``) and the ``mma.m16n8k16`` fragments (A: ``a0..a3`` = rows ``g``, ``g + 8``, then
columns + 8; B: ``b0, b1`` = k ``2 c + {0, 1}`` and ``+ 8`` of column ``g``; C/D: ``c0, c1`` row
``g``, ``c2, c3`` row ``g + 8``, columns ``2 c + {0, 1}``; ``g = lane // 4``, ``c = lane % 4``).
"""

from __future__ import annotations

import numpy as np
from gemm_kernels import FRAGMENT
from wgmma_model import value

from tilewright.ir import Call, Evaluate, IfThenElse, PrimExpr, intrinsics
from tilewright.ir.expr import GE, GT, LE, LT, NE, And, Not, Or
from tilewright.layout import ComposeLayout, S, SwizzleLayout, TileLayout
from tilewright.layout.fragment import mma_accumulator_layout
from tilewright.script import tirx as T
from tilewright.script.tirx import tile as Tx

Statement = tuple[Call, tuple[PrimExpr, ...]]  # a call and the conditions guarding it


def smem_layout(rows: int, cols: int) -> TileLayout | ComposeLayout:
    """``rows x cols`` 16-bit elements, swizzled in 32- to 128-byte row atoms when the row's
    bytes allow (the widest dividing them), else row-major."""
    width = 128
    while width > cols * 2 or (cols * 2) % width:
        width //= 2
    if width < 32:
        return TileLayout(S[rows, cols])
    row = width // 2
    if cols == row:
        tile = TileLayout(S[rows, cols])
    else:  # column atoms of rows x row, each swizzled
        tile = TileLayout(S[(rows, cols // row, row) : (row, rows * row, 1)])
    return ComposeLayout(SwizzleLayout.from_bytes(width, 16), tile)


def mma_kernel(
    *,
    m: int = 32,
    n: int = 32,
    k: int = 32,
    scope: str = "warp",
    op: str = "gemm",
    dtype: str = "float16",
    a_layout: object = "swizzled",
    a_scope: str = "shared",
    c_dtype: str = "float32",
    c_scope: str = "local",
    c_layout: object = FRAGMENT,
    c_shape: tuple[int, int] | None = None,
    c_rows: tuple[int, int] | None = None,
    accum: object = True,
    transA: bool = False,
    transB: bool = False,
    threads: int = 32,
    narrow: bool = False,
):
    """One CTA running ``Tx.<scope>.<op>(acc[rows, 0:n], As, Bs)`` once; A is stored
    ``k x m`` when ``transA`` (else ``m x k``), B ``k x n`` when ``transB`` (else ``n x k``)."""
    a_shape = (k, m) if transA else (m, k)
    b_shape = (k, n) if transB else (n, k)
    a_layout = smem_layout(*a_shape) if a_layout == "swizzled" else a_layout
    b_layout = smem_layout(*b_shape)
    c_shape = c_shape or (m, n)
    if c_layout == FRAGMENT:
        c_layout = mma_accumulator_layout(*c_shape)
    lo, hi = c_rows or (0, c_shape[0])
    run = getattr(getattr(Tx, scope), op)
    (a0, a1), (b0, b1), cn = a_shape, b_shape, c_shape[1]

    @T.prim_func
    def kernel(X: T.Buffer((16,), "float32")):
        T.device_entry()
        T.cta_id([1])
        tid = T.thread_id([threads])
        As = T.alloc_buffer(a_shape, dtype, scope=a_scope, align=128, layout=a_layout)
        Bs = T.alloc_buffer(b_shape, dtype, scope="shared", align=128, layout=b_layout)
        acc = T.alloc_buffer(c_shape, c_dtype, scope=c_scope, layout=c_layout)
        if narrow:
            if tid < 16:
                run(acc[lo:hi, 0:cn], As[0:a0, 0:a1], Bs[0:b0, 0:b1], accum=accum)
        else:
            run(
                acc[lo:hi, 0:cn],
                As[0:a0, 0:a1],
                Bs[0:b0, 0:b1],
                accum=accum,
                transA=transA,
                transB=transB,
            )

    return kernel


MODELLED = (intrinsics.PTX_LDMATRIX, intrinsics.PTX_MMA, intrinsics.MMA_FILL)


def mma_statements(node: object, conditions: tuple[PrimExpr, ...] = ()) -> list[Statement]:
    """The ldmatrix / mma / fill calls under ``node`` in program order, with the conditions
    of the ``if``s around them (loops are not unrolled: the caller binds their variables)."""
    if isinstance(node, Evaluate):
        call = node.value
        hit = isinstance(call, Call) and any(i.matches(call) for i in MODELLED)
        return [(call, conditions)] if hit else []  # type: ignore[list-item]
    if isinstance(node, IfThenElse):
        found = mma_statements(node.then_case, (*conditions, node.condition))
        if node.else_case is not None:
            found += mma_statements(node.else_case, (*conditions, Not(node.condition)))
        return found
    found = []
    for name in ("seq", "body", "block"):
        child = getattr(node, name, None)
        for item in child if isinstance(child, tuple) else (child,):
            if item is not None:
                found += mma_statements(item, conditions)
    return found


def truth(expr: PrimExpr, env: dict[str, int]) -> bool:
    """A boolean condition's value (comparisons, and, or, not)."""
    if isinstance(expr, Not):
        return not truth(expr.a, env)
    if isinstance(expr, And | Or):
        a, b = truth(expr.a, env), truth(expr.b, env)
        return a and b if isinstance(expr, And) else a or b
    for cls, fn in ((LE, int.__le__), (GE, int.__ge__), (NE, int.__ne__)):
        if isinstance(expr, cls):
            return bool(fn(value(expr.a, env), value(expr.b, env)))
    for cls in (GT, LT):
        if isinstance(expr, cls):
            return bool(value(expr, env))
    return bool(value(expr, env))


def _storage_name(arg: PrimExpr) -> tuple[str, PrimExpr | int]:
    """The buffer a pointer argument names, and the extra offset of ``tvm_access_ptr``."""
    offset: PrimExpr | int = 0
    if isinstance(arg, Call) and intrinsics.ACCESS_PTR.matches(arg):
        assert arg.args[3].value == 1, "ldmatrix only reads shared memory"  # type: ignore[attr-defined]
        arg, offset = arg.args[0], arg.args[1]
    assert isinstance(arg, Call) and intrinsics.REGION_DATA.matches(arg), arg
    return arg.args[0].buffer.name, offset  # type: ignore[attr-defined]


class WarpModel:
    """One warp's registers: ``regs[name]`` is ``(32, size)`` values (a 32-bit fragment
    register holds 2 values: ``frag[name]`` is ``(32, size, 2)``)."""

    def __init__(self, storage: dict[str, np.ndarray], acc: dict[str, np.ndarray]) -> None:
        self.storage = storage
        self.acc = acc
        self.frag: dict[str, np.ndarray] = {}

    def run(self, statements: list[Statement], envs: list[dict[str, int]]) -> None:
        """Apply the statements for the 32 lanes (``envs[lane]`` binds the variables)."""
        for call, conditions in statements:
            taken = {all(truth(c, env) for c in conditions) for env in envs}
            assert len(taken) == 1, "a warp-collective statement under a lane-divergent if"
            if taken.pop():
                self._step(call, envs)

    def _step(self, call: Call, envs: list[dict[str, int]]) -> None:
        if intrinsics.MMA_FILL.matches(call):
            size, ptr, offset = call.args
            name, _ = _storage_name(ptr)
            for lane, env in enumerate(envs):
                start = value(offset, env)
                self.acc[name][lane, start : start + value(size, env)] = 0.0
        elif intrinsics.PTX_LDMATRIX.matches(call):
            self._ldmatrix(call, envs)
        else:
            self._mma(call, envs)

    def _fragment(self, ptr: PrimExpr) -> np.ndarray:
        name, _ = _storage_name(ptr)
        buffer = ptr.args[0].buffer  # type: ignore[attr-defined]
        assert buffer.dtype.bits == 32, "fragment offsets count 32-bit registers"
        if name not in self.frag:
            self.frag[name] = np.full((32, buffer.shape[0].value, 2), np.nan)
        return self.frag[name]

    def _ldmatrix(self, call: Call, envs: list[dict[str, int]]) -> None:
        trans, num, kind, local, local_offset, smem, smem_offset = call.args
        assert kind.value == ".b16"  # type: ignore[attr-defined]
        count = num.value  # type: ignore[attr-defined]
        name, extra = _storage_name(smem)
        data = self.storage[name]
        matrices = np.empty((count, 8, 8))
        for q in range(count):
            for r in range(8):
                env = envs[8 * q + r]
                address = value(extra, env) + value(smem_offset, env)
                assert address % 8 == 0, f"ldmatrix row at element {address}: not 16-byte aligned"
                matrices[q, r] = data[address : address + 8]
        frag = self._fragment(local)
        for lane, env in enumerate(envs):
            g, c = divmod(lane, 4)
            for q in range(count):
                mat = matrices[q].T if trans.value else matrices[q]  # type: ignore[attr-defined]
                frag[lane, value(local_offset, env) + q] = mat[g, 2 * c : 2 * c + 2]

    def _mma(self, call: Call, envs: list[dict[str, int]]) -> None:
        texts = [a.value for a in call.args[:6]]  # type: ignore[attr-defined]
        assert texts[:3] == ["m16n8k16", "row", "col"] and texts[5] == "fp32", texts
        assert texts[3] == texts[4] and texts[3] in ("fp16", "bf16")
        a_ptr, a_off, b_ptr, b_off, c_ptr, c_off = call.args[6:12]
        af, bf = self._fragment(a_ptr), self._fragment(b_ptr)
        acc = self.acc[_storage_name(c_ptr)[0]]
        a, b, c = np.full((16, 16), np.nan), np.full((16, 8), np.nan), np.full((16, 8), np.nan)
        for lane, env in enumerate(envs):
            g, t = divmod(lane, 4)
            ar = af[lane, value(a_off, env) : value(a_off, env) + 4]
            br = bf[lane, value(b_off, env) : value(b_off, env) + 2]
            cs = value(c_off, env)
            for i, (row, col) in enumerate(((g, 0), (g + 8, 0), (g, 8), (g + 8, 8))):
                a[row, col + 2 * t : col + 2 * t + 2] = ar[i]
            b[2 * t : 2 * t + 2, g], b[2 * t + 8 : 2 * t + 10, g] = br[0], br[1]
            c[g, 2 * t : 2 * t + 2] = acc[lane, cs : cs + 2]
            c[g + 8, 2 * t : 2 * t + 2] = acc[lane, cs + 2 : cs + 4]
        d = a @ b + c
        for lane, env in enumerate(envs):
            g, t = divmod(lane, 4)
            cs = value(c_off, env)
            acc[lane, cs : cs + 2] = d[g, 2 * t : 2 * t + 2]
            acc[lane, cs + 2 : cs + 4] = d[g + 8, 2 * t : 2 * t + 2]


def store_through(layout: object, array: np.ndarray, size: int) -> np.ndarray:
    """Storage of ``size`` elements holding ``array`` placed through ``layout``."""
    storage = np.full(size, np.nan)
    for index in np.ndindex(*array.shape):
        storage[layout.apply(*index, shape=array.shape)["m"]] = array[index]  # type: ignore[attr-defined]
    return storage
