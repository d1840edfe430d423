"""``Tx``: tile primitives by execution scope (``from tilewright.script.tirx import tile as Tx``).

``Tx.warp.copy(dst, src)``, ``Tx.thread.copy_async(dst, src, mbar=bar[0])``,
``Tx.cta.fill(region, value)`` and ``Tx.warpgroup.gemm(C, A, B)`` build ``TileOp`` statements;
``dispatch="name"`` forces one implementation variant.
``Tx.wg`` is ``Tx.warpgroup``.

Example::

    Tx.warp.copy(A_smem[0:32, 0:32], A[0:32, 0:32])
    Tx.cta.fill(C_smem[0:64, 0:64], T.float32(0))
    Tx.wg.gemm(acc[0:64, 0:128], A_smem[0:64, 0:64], B_smem[0:128, 0:64], accum=k > 0)
"""

from __future__ import annotations

from tilewright.ir import Buffer, BufferLoad, BufferRegion, Call, IntImm, PrimExpr, attrs, op
from tilewright.ir.intrinsics import ADDRESS_OF
from tilewright.ir.tile import TileOp


def _region(value: object, what: str) -> BufferRegion:
    if isinstance(value, BufferRegion):
        return value
    if isinstance(value, Buffer):
        return BufferRegion.full(value)
    raise TypeError(f"{what} must be a buffer region such as A[0:32, 0:32], got {value!r}")


class ExecScope:
    """The tile primitives of one execution scope: ``Tx.thread``, ``Tx.warp``, ..."""

    def __init__(self, name: str) -> None:
        self.name = name

    def copy(self, dst: object, src: object, dispatch: str | None = None) -> TileOp:
        """``Tx.<scope>.copy(dst_region, src_region)``: the scope's threads copy ``src`` into
        ``dst`` together (equal dtype, equal non-unit extents)."""
        where = f"Tx.{self.name}.copy"
        args = (_region(dst, f"{where}: dst"), _region(src, f"{where}: src"))
        return TileOp("copy", self.name, args, _options(dispatch))

    def copy_async(
        self, dst: object, src: object, mbar: object = None, dispatch: str | None = None
    ) -> TileOp:
        """``Tx.<scope>.copy_async(dst_region, src_region, mbar=None)``: start copying ``src``
        into ``dst``; the op only issues the copy, the caller completes it.

        ``Tx.thread.copy_async`` (the ``tma`` variant, sm_90+) is one thread's TMA copy
        between global and shared memory; a load completes on ``mbar`` (an element of a
        uint64 shared buffer, ``bar[s]``, or ``T.address_of(bar[s])``), which the caller arms
        with ``T.cuda.mbarrier_arrive_expect_tx(bar[s], T.cuda.region_bytes(dst))`` and waits
        on. ``Tx.warp`` / ``Tx.warpgroup`` / ``Tx.cta.copy_async`` (``cp_async``, sm_80+)
        splits a global -> shared copy over the threads and commits one cp.async group: wait
        with ``T.cuda.cp_async_wait_group(0)`` and a barrier.

        Example::

            if tid == 0:
                Tx.thread.copy_async(As[0:128, 0:64], A[0:128, 0:64], mbar=bar[0])
                T.cuda.mbarrier_arrive_expect_tx(bar[0], T.cuda.region_bytes(As[0:128, 0:64]))
            T.cuda.mbarrier_wait(bar[0], 0)
        """
        where = f"Tx.{self.name}.copy_async"
        args: tuple = (_region(dst, f"{where}: dst"), _region(src, f"{where}: src"))
        if mbar is not None:
            args += (_mbar(mbar, where),)
        return TileOp("copy_async", self.name, args, _options(dispatch))

    def fill(self, region: object, value: object, dispatch: str | None = None) -> TileOp:
        """``Tx.<scope>.fill(region, value)``: every element of ``region`` becomes ``value``."""
        target = _region(region, f"Tx.{self.name}.fill: region")
        if isinstance(value, bool | int | float):
            value = op.convert(value, target.buffer.dtype)
        if not isinstance(value, PrimExpr):
            raise TypeError(f"Tx.{self.name}.fill: value must be a scalar, got {value!r}")
        return TileOp("fill", self.name, (target, value), _options(dispatch))

    def cast(self, dst: object, src: object, dispatch: str | None = None) -> TileOp:
        """``Tx.<scope>.cast(dst, src)``: ``dst = src`` converted to ``dst``'s dtype."""
        return self._elementwise("cast", dst, (src,), dispatch)

    def relu(self, dst: object, src: object, dispatch: str | None = None) -> TileOp:
        """``Tx.<scope>.relu(dst, src)``: ``dst = max(src, 0)``."""
        return self._elementwise("relu", dst, (src,), dispatch)

    def gelu(self, dst: object, src: object, dispatch: str | None = None) -> TileOp:
        """``Tx.<scope>.gelu(dst, src)``: ``dst = src * (1 + erf(src / sqrt(2))) / 2``."""
        return self._elementwise("gelu", dst, (src,), dispatch)

    def exp(self, dst: object, src: object, dispatch: str | None = None) -> TileOp:
        """``Tx.<scope>.exp(dst, src)``: ``dst = exp(src)``."""
        return self._elementwise("exp", dst, (src,), dispatch)

    def add(self, dst: object, a: object, b: object, dispatch: str | None = None) -> TileOp:
        """``Tx.<scope>.add(dst, a, b)``: ``dst = a + b``; ``b`` a region (extents equal to
        ``dst``'s or 1 where broadcast, e.g. a bias row) or a scalar. Inputs are converted to
        ``dst``'s dtype first.

        Example: ``Tx.wg.add(acc[0:64, 0:256], acc[0:64, 0:256], bias[0:1, 0:256])``.
        """
        return self._elementwise("add", dst, (a, b), dispatch)

    def sub(self, dst: object, a: object, b: object, dispatch: str | None = None) -> TileOp:
        """``Tx.<scope>.sub(dst, a, b)``: ``dst = a - b`` (``b`` as in ``add``)."""
        return self._elementwise("sub", dst, (a, b), dispatch)

    def mul(self, dst: object, a: object, b: object, dispatch: str | None = None) -> TileOp:
        """``Tx.<scope>.mul(dst, a, b)``: ``dst = a * b`` (``b`` as in ``add``)."""
        return self._elementwise("mul", dst, (a, b), dispatch)

    def maximum(self, dst: object, a: object, b: object, dispatch: str | None = None) -> TileOp:
        """``Tx.<scope>.maximum(dst, a, b)``: ``dst = max(a, b)`` elementwise."""
        return self._elementwise("maximum", dst, (a, b), dispatch)

    def minimum(self, dst: object, a: object, b: object, dispatch: str | None = None) -> TileOp:
        """``Tx.<scope>.minimum(dst, a, b)``: ``dst = min(a, b)`` elementwise."""
        return self._elementwise("minimum", dst, (a, b), dispatch)

    def _elementwise(self, name: str, dst: object, inputs: tuple, dispatch: str | None) -> TileOp:
        where = f"Tx.{self.name}.{name}"
        target = _region(dst, f"{where}: dst")
        args: list = [target]
        for position, value in enumerate(inputs):
            if position == 1 and isinstance(value, bool | int | float):
                value = op.convert(value, target.buffer.dtype)
            if position == 1 and isinstance(value, PrimExpr):
                args.append(value)
                continue
            args.append(_region(value, f"{where}: input {position}"))
        return TileOp(name, self.name, tuple(args), _options(dispatch))

    def gemm(
        self,
        C: object,
        A: object,
        B: object,
        transA: bool = False,
        transB: bool = False,
        accum: object = False,
        dispatch: str | None = None,
    ) -> TileOp:
        """``Tx.<scope>.gemm(C, A, B, accum=...)``: ``C[m, n] (+)= sum_k A[m, k] * B[n, k]``,
        complete when the op returns.

        TVM TIRx's convention: ``transA=False`` means A is K-major (an ``M x K`` region),
        ``transB=False`` that B is K-major (``N x K``); ``True`` gives ``K x M`` / ``K x N``.
        ``accum`` (a bool or a boolean expression such as ``k > 0``) adds the product to C
        instead of overwriting C.

        Example: ``Tx.wg.gemm(acc, A_smem[0:64, 0:64], B_smem[0:128, 0:64], accum=True)``.
        """
        return self._gemm("gemm", C, A, B, transA, transB, accum, dispatch)

    def gemm_async(
        self,
        C: object,
        A: object,
        B: object,
        transA: bool = False,
        transB: bool = False,
        accum: object = False,
        dispatch: str | None = None,
    ) -> TileOp:
        """``Tx.<scope>.gemm_async(C, A, B, accum=...)``: as ``gemm``, but the product is left
        in flight; the ``wgmma`` variant commits one wgmma group, which the caller waits for
        with ``T.cuda.wgmma_wait_group(n)`` before reading C or overwriting A and B.

        Example::

            Tx.wg.gemm_async(acc, A_smem[0:64, 0:64], B_smem[0:128, 0:64], accum=True)
            T.cuda.wgmma_wait_group(0)
        """
        return self._gemm("gemm_async", C, A, B, transA, transB, accum, dispatch)

    def _gemm(
        self,
        name: str,
        C: object,
        A: object,
        B: object,
        transA: bool,
        transB: bool,
        accum: object,
        dispatch: str | None,
    ) -> TileOp:
        where = f"Tx.{self.name}.{name}"
        regions = tuple(_region(x, f"{where}: {n}") for x, n in ((C, "C"), (A, "A"), (B, "B")))
        flags = {}
        for key, flag in (("transA", transA), ("transB", transB)):
            flag = flag.value if isinstance(flag, IntImm) else flag
            if not isinstance(flag, bool | int) or flag not in (0, 1):
                raise TypeError(f"{where}: {key} must be True or False, got {flag!r}")
            if flag:
                flags[key] = True
        if isinstance(accum, bool | int):
            accum = op.convert(bool(accum))
        if not isinstance(accum, PrimExpr):
            raise TypeError(f"{where}: accum must be a bool or a boolean expression, got {accum!r}")
        options = dict(_options(dispatch))
        options.update(flags)
        return TileOp(name, self.name, (*regions, accum), attrs(options))

    def __repr__(self) -> str:
        return f"Tx.{self.name}"


def _mbar(value: object, where: str) -> BufferLoad:
    if isinstance(value, Call) and ADDRESS_OF.matches(value):
        value = value.args[0]
    if not isinstance(value, BufferLoad):
        raise TypeError(
            f"{where}: mbar must be an mbarrier element such as bar[0] (a uint64 shared "
            f"buffer), got {value!r}"
        )
    return value


def _options(dispatch: str | None) -> tuple:
    if dispatch is not None and not isinstance(dispatch, str):
        raise TypeError(f"dispatch must be a variant name, got {dispatch!r}")
    return attrs({"dispatch": dispatch} if dispatch else None)


thread = ExecScope("thread")
warp = ExecScope("warp")
warpgroup = ExecScope("warpgroup")
cta = ExecScope("cta")
wg = warpgroup

__all__ = ["cta", "thread", "warp", "warpgroup", "wg"]
