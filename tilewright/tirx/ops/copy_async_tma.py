"""The ``tma`` variant of ``copy_async`` (Hopper): one thread issues a TMA bulk tensor copy.

Input: ``Tx.thread.copy_async(dst, src, mbar=bar[s])`` as a ``TileOp`` (args ``dst, src``
and, for a load, the mbarrier element), run by one thread on CUDA sm_90 or newer. Output,
through ``dispatch``:

    global -> shared:  tw.cuda.tma_load(&S[base], tensor_map(A, box, swizzle), &bar[s], *coords)
    shared -> global:  tw.cuda.tma_store(tensor_map(A, box, swizzle), &S[base], *coords)
                       tw.cuda.bulk_commit_group()

``box`` is the global region's extents (outermost first), ``coords`` its start (innermost
first), ``swizzle`` the byte width of the shared buffer's swizzle (0 without one). The variant
emits no completion: the caller arms the mbarrier with the copy's bytes (``T.cuda.region_bytes``,
``T.cuda.mbarrier_arrive_expect_tx``) and waits on it (``T.cuda.mbarrier_wait``); after a
store it waits with ``T.cuda.bulk_wait_group_read``.

Where TMA writes: the box row-major and densely from the shared address, 16-byte chunks of
each ``W``-byte row XORed with the row index (address bits [4, 4 + b) with [7, 7 + b), b = 1,
2, 3 for W = 32, 64, 128). The shared region's layout must say the same: row-major over the
box, with the ``SwizzleLayout`` of that width (or none), rows exactly ``W`` bytes and the
region starting on a ``8 W``-byte boundary (128 bytes without a swizzle).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from tilewright.ir import BufferLoad, BufferRegion, Call, IntImm, PrimExpr, SeqStmt, Stmt, op
from tilewright.ir import intrinsics_hopper as hopper
from tilewright.ir.intrinsics import ADDRESS_OF, address_of
from tilewright.ir.tile import TileOp
from tilewright.layout import LayoutError, SwizzleLayout
from tilewright.layout.shard import MEMORY
from tilewright.tirx.dispatch import Check, ExecContext, check_all
from tilewright.tirx.operand import Operand, buffer_layout, constant_shape, is_multiple
from tilewright.tirx.ops.copy_checks import copy_operands, scope_allowed, valid_copy
from tilewright.tirx.ops.wgmma_operands import STATIC_SHARED_ALIGN

TMA_SM = 90  # cp.async.bulk.tensor: sm_90 and newer
TMA_PAIRS = (("global", "shared"), ("shared", "global"))
MAX_RANK = 5
MAX_BOX = 256  # elements a box dimension
CHUNK_BYTES = 16  # a box row is a multiple of this; the swizzle permutes such chunks
SWIZZLE_MODES = (32, 64, 128)
UNSWIZZLED_ALIGN = 128  # bytes: TMA's shared-memory address alignment


@dataclass(frozen=True)
class TmaPlan:
    """One TMA copy: the global and shared sides, the direction, the box (outermost first),
    the coordinates of its first element (innermost first) and the swizzle width in bytes."""

    global_side: Operand
    shared_side: Operand
    load: bool
    box: tuple[int, ...]
    coords: tuple[PrimExpr, ...]
    swizzle: int

    @property
    def bytes(self) -> int:
        """Bytes the copy moves: what the mbarrier's expect_tx must count for a load."""
        return math.prod(self.box) * self.global_side.buffer.dtype.bytes


def sm_version(ctx: ExecContext) -> int | None:
    """The target's ``sm_XY`` number (90 for ``sm_90a``), None without one.

    Example: ``sm_version(ExecContext(Target("cuda -arch=sm_80"), ...)) == 80``.
    """
    arch = ctx.target.arch if ctx.target is not None else ""
    digits = "".join(c for c in arch.removeprefix("sm_") if c.isdigit())
    return int(digits) if arch.startswith("sm_") and digits else None


def copy_regions(op_: TileOp) -> TileOp:
    """The op with only its ``dst, src`` regions (what the ``copy`` checks read)."""
    return TileOp(op_.op, op_.scope, op_.args[:2], op_.attrs)


def mbar_of(op_: TileOp) -> PrimExpr | None:
    """The mbarrier argument of a ``copy_async`` (None when not given)."""
    return op_.args[2] if len(op_.args) > 2 else None  # type: ignore[return-value]


def valid_copy_async(op_: TileOp) -> Check:
    """Two regions (``dst, src``) and an optional mbarrier, forming a valid copy."""
    args = op_.args
    if not 2 <= len(args) <= 3 or not all(isinstance(a, BufferRegion) for a in args[:2]):
        return False, "copy_async takes two buffer regions (dst, src) and an optional mbar"
    return valid_copy(copy_regions(op_))


def _target(ctx: ExecContext) -> Check:
    version = sm_version(ctx)
    if not ctx.supports(hopper.TMA_LOAD) or version is None or version < TMA_SM:
        return False, (
            f"target {ctx.target} has no TMA ({hopper.TMA_LOAD.name}: CUDA sm_90 or newer)"
        )
    return True, None


def _thread_scope(ctx: ExecContext) -> Check:
    if ctx.scope != "thread":
        return False, (
            "TMA is issued by a single thread: use Tx.thread.copy_async under a condition that "
            f"selects one thread (e.g. `if tid == 0:`), not the {ctx.scope} scope"
        )
    return True, None


def _mbar(op_: TileOp) -> Check:
    dst, src = copy_operands(op_)
    mbar = mbar_of(op_)
    if src.memory == "shared":  # a store
        if mbar is not None:
            return False, (
                "a TMA store completes in bulk groups, not on an mbarrier: drop mbar= and wait "
                "with T.cuda.bulk_wait_group_read"
            )
        return True, None
    if not isinstance(mbar, BufferLoad):
        return False, (
            f"a TMA load into {dst.buffer.name} completes on an mbarrier: pass mbar=bar[i], an "
            "element of a uint64 shared buffer"
        )
    bar = mbar.buffer
    if str(bar.dtype) != "uint64" or not bar.scope.startswith("shared"):
        return False, (
            f"mbar {bar.name} must be a uint64 shared buffer, got {bar.dtype} in {bar.scope!r}"
        )
    return True, None


def _plan(op_: TileOp) -> Check:
    try:
        plan_tma(op_)
    except LayoutError as err:
        return False, str(err)
    return True, None


def is_tma(op_: TileOp, ctx: ExecContext) -> Check:
    """The ``tma`` predicate: sm_90+, one thread, a global/shared pair whose global side a
    tensor map describes and whose shared layout is what TMA writes, the mbarrier of a load."""
    ok, reason = valid_copy_async(op_)
    if not ok:
        return False, reason
    try:
        return check_all(
            lambda: _target(ctx),
            lambda: _thread_scope(ctx),
            lambda: scope_allowed(copy_regions(op_), TMA_PAIRS),
            lambda: _mbar(op_),
            lambda: _plan(op_),
        )
    except LayoutError as err:
        return False, f"invalid copy_async: {err}"


def plan_tma(op_: TileOp) -> TmaPlan:
    """The TMA copy of a valid global/shared ``copy_async`` (``LayoutError`` naming the
    buffer and the rule otherwise).

    Example: ``plan_tma(op).box == (128, 64)`` for ``As[0:128, 0:64] <- A[0:128, 64:128]``.
    """
    dst, src = copy_operands(op_)
    load = src.memory == "global"
    g, s = (src, dst) if load else (dst, src)
    dtype = g.buffer.dtype
    bits = dtype.bits * dtype.lanes
    if dtype.lanes != 1 or bits not in (8, 16, 32, 64):
        raise LayoutError(f"TMA moves 8-, 16-, 32- or 64-bit scalars, not {dtype}")
    box = _global_box(g)
    swizzle = _shared_swizzle(s, bits)
    inner = box[-1] * dtype.bytes
    if swizzle and inner != swizzle:
        raise LayoutError(
            f"the box's rows are {inner} bytes ({box[-1]} x {dtype}) but {s.buffer.name}'s "
            f"{swizzle}-byte swizzle needs rows of exactly {swizzle} bytes"
        )
    _check_shared(s, swizzle)
    coords = tuple(op.convert(r.min) for r in reversed(g.region.region))
    return TmaPlan(g, s, load, box, coords, swizzle)


def _global_box(g: Operand) -> tuple[int, ...]:
    buffer = g.buffer
    name = buffer.name
    if buffer.ndim > MAX_RANK:
        raise LayoutError(f"global {name} has rank {buffer.ndim}; TMA takes at most {MAX_RANK}")
    if buffer.layout is not None:
        raise LayoutError(
            f"global {name} has a layout; a tensor map describes a plain strided tensor"
        )
    element = buffer.dtype.bytes
    strides = buffer.strides
    if strides:
        if not (isinstance(strides[-1], IntImm) and strides[-1].value == 1):
            raise LayoutError(
                f"global {name}'s innermost stride is {strides[-1]}, not 1 (TMA reads rows)"
            )
        outer = [s.value for s in strides[:-1] if isinstance(s, IntImm)]
    else:
        shape = [e.value for e in buffer.shape if isinstance(e, IntImm)]
        outer = [math.prod(shape[i:]) for i in range(1, len(shape))]
        if len(shape) != buffer.ndim:
            outer = []  # symbolic extents: the runtime checks the strides at launch
    for stride in outer:
        if stride * element % CHUNK_BYTES:
            raise LayoutError(
                f"global {name}: a stride of {stride * element} bytes is not a multiple of "
                f"{CHUNK_BYTES} (a tensor map's rule)"
            )
    box = g.extents
    for dim, extent in enumerate(box):
        if not 1 <= extent <= MAX_BOX:
            raise LayoutError(
                f"the box's dimension {dim} is {extent} elements of {name}; TMA takes 1 to "
                f"{MAX_BOX}"
            )
    if box[-1] * element % CHUNK_BYTES:
        raise LayoutError(
            f"the box's rows are {box[-1] * element} bytes of {name}, not a multiple of "
            f"{CHUNK_BYTES}"
        )
    return box


def _shared_swizzle(s: Operand, bits: int) -> int:
    name = s.buffer.name
    canonical = s.tile.canonicalize()
    dense = s.size() == 1 or (
        len(canonical.shard) == 1
        and canonical.shard[0].is_memory
        and canonical.shard[0].stride == 1
    )
    if not dense:
        raise LayoutError(
            f"shared {name}'s region has layout {s.tile!r}; TMA writes the box row-major and "
            "densely (give the region a row-major layout, optionally swizzled)"
        )
    if s.swizzle is None:
        return 0
    for width in SWIZZLE_MODES:
        mode = SwizzleLayout.from_bytes(width, bits)
        if _fields(mode) == _fields(s.swizzle):
            return width
    raise LayoutError(
        f"shared {name}'s swizzle {s.swizzle!r} is not one of TMA's 32-, 64- or 128-byte "
        f"modes for {bits}-bit elements"
    )


def _fields(swizzle: SwizzleLayout) -> tuple[int, int, int]:
    return swizzle.per_element, swizzle.swizzle_len, swizzle.atom_len


def _check_shared(s: Operand, swizzle: int) -> None:
    buffer = s.buffer
    need = 8 * swizzle if swizzle else UNSWIZZLED_ALIGN
    what = f"the {swizzle}-byte swizzle" if swizzle else "TMA"
    if buffer.align < need:
        raise LayoutError(
            f"shared {buffer.name}: {what} needs {need}-byte aligned storage; declare it with "
            f"align={need} (it has {buffer.align})"
        )
    if buffer.scope == "shared" and need > STATIC_SHARED_ALIGN:
        raise LayoutError(
            f"shared {buffer.name}: static shared arrays are at most {STATIC_SHARED_ALIGN}-byte "
            f"aligned; use scope='shared.dyn' for {what}'s {need}-byte alignment"
        )
    if not is_multiple(s.base, need // buffer.dtype.bytes):
        raise LayoutError(
            f"shared {buffer.name}: the region starts at element {s.base}, not on a "
            f"{need}-byte boundary ({what})"
        )


def mbar_address(ctx: ExecContext, mbar: BufferLoad) -> PrimExpr:
    """The address of the mbarrier element ``mbar`` (through the flat view when laid out)."""
    bar = mbar.buffer
    if bar.layout is None:
        return ADDRESS_OF.call(mbar)
    offset = buffer_layout(bar).apply(*mbar.indices, shape=constant_shape(bar))[MEMORY]
    return address_of(ctx.flat(bar), op.convert(offset))


def emit_tma(op_: TileOp, ctx: ExecContext) -> Stmt:
    """``tma_load`` on the caller's mbarrier, or ``tma_store`` and ``bulk_commit_group``.

    Example (a 128 x 64 float16 tile, 128-byte swizzle)::

        T.evaluate(T.call_intrin("int32", "tw.cuda.tma_load", T.address_of(As_1[0]),
            T.call_intrin("handle", "tw.cuda.tensor_map", A.data, 128, 64, 128),
            T.address_of(bar[0]), by * 64, bx * 128))
    """
    plan = plan_tma(op_)
    g, s = plan.global_side, plan.shared_side
    tmap: Call = hopper.tensor_map(g.buffer, plan.box, plan.swizzle)
    shared = address_of(ctx.flat(s.buffer), op.convert(s.base))
    ctx.notes.update(
        direction="load" if plan.load else "store",
        box=plan.box,
        swizzle=plan.swizzle,
        bytes=plan.bytes,
    )
    if plan.load:
        mbar = mbar_of(op_)
        assert isinstance(mbar, BufferLoad)  # checked by the predicate
        return hopper.TMA_LOAD.stmt(shared, tmap, mbar_address(ctx, mbar), *plan.coords)
    return SeqStmt(
        (hopper.TMA_STORE.stmt(tmap, shared, *plan.coords), hopper.BULK_COMMIT_GROUP.stmt())
    )
