"""What ``mma.sync`` m16n8k16 needs to know about the operands of a ``gemm``: where each lane
points ``ldmatrix`` in shared memory for A and B, and which registers hold C's m16n8 tiles.

Input: ``Operand``s (regions with their layouts sliced). Output: an ``LdmatrixPlan`` (the
storage offset of any stored ``(row, col)``, swizzle included) or a ``LayoutError`` saying why
``ldmatrix`` cannot read the layout, and an ``MmaAccumulatorPlan`` (the register offset of each
m16n8 tile) or a ``LayoutError``.

``ldmatrix.m8n8`` reads 8 x 8 matrices of 16-bit elements; each of a matrix's 8 rows is one
16-byte run that one lane addresses. A region is loadable when its stored (contiguous)
dimension runs in 8-element pieces that are contiguous (stride 1), start on 8-element
(16-byte) boundaries, and are not split by a swizzle (its chunks are 16 bytes or wider).
Which dimension is contiguous is the gemm's: K for a K-major operand (``transA`` /
``transB`` False), M or N for an MN-major one (then ``ldmatrix.trans`` transposes it).

Example::

    >>> plan = plan_ldmatrix(operand(As[0:32, 0:64]), "A")    # 128-byte swizzled rows
    >>> plan.address(lane % 16, 8 * (lane // 16))            # this lane's row start
"""

from __future__ import annotations

from dataclasses import dataclass

from tilewright.arith import simplify
from tilewright.ir import Buffer, BufferLoad, IntImm, PrimExpr, intrinsics, op
from tilewright.ir.dtype import int32
from tilewright.layout import LayoutError
from tilewright.layout import offset_arith as oa
from tilewright.layout.fragment import MMA_M, MMA_N, mma_accumulator_layout
from tilewright.layout.offset_arith import Offset
from tilewright.layout.shard import MEMORY
from tilewright.tirx.operand import Operand, is_multiple
from tilewright.tirx.ops.wgmma_operands import matrix_extents

ROW_ELEMS = 8  # one ldmatrix row: 8 16-bit elements, 16 bytes
TILE_REGISTERS = 4  # float32 registers of one m16n8 tile a lane


@dataclass(frozen=True)
class LdmatrixPlan:
    """A shared region of ``rows x cols`` elements (as stored, ``cols`` contiguous) that
    ``ldmatrix`` reads in 8 x 8 matrices."""

    side: Operand
    rows: int
    cols: int

    def address(self, row: Offset, col: Offset) -> PrimExpr:
        """The storage offset (swizzled when the layout is) of stored element ``(row, col)``;
        ``col`` a multiple of 8 gives the start of a 16-byte ldmatrix row."""
        local = self.side.tile.apply(row, col, shape=[self.rows, self.cols])[MEMORY]
        offset = self.side.offset(oa.add(self.side.base, local))
        return simplify(offset) if isinstance(offset, PrimExpr) else op.convert(offset)


def whole_storage(buffer: Buffer) -> PrimExpr:
    """``tw.region_data`` of all of 1-D ``buffer``: its storage as an intrinsic argument (the
    passes that rename, place and check buffers follow the loads in it)."""
    last = int(buffer.shape[0].value)  # type: ignore[attr-defined]
    return intrinsics.REGION_DATA.call(
        BufferLoad(buffer, (IntImm(0, int32),)), BufferLoad(buffer, (IntImm(last - 1, int32),))
    )


def plan_ldmatrix(side: Operand, what: str, instruction: str = "ldmatrix") -> LdmatrixPlan:
    """The ``LdmatrixPlan`` of shared region ``side`` (``what`` is ``A`` or ``B``, for the
    message); ``LayoutError`` when its 8-element rows are not contiguous 16-byte runs.
    ``stmatrix`` writes the same 8 x 8 matrices: its plans come from here too, with
    ``instruction`` naming it in the messages."""
    rows, cols = matrix_extents(side, what)
    name = f"{what} {side.buffer.name}"
    bits = side.buffer.dtype.bits * side.buffer.dtype.lanes
    if bits != 16:
        raise LayoutError(f"{name}: {instruction} moves 16-bit elements, not {side.buffer.dtype}")
    if cols % ROW_ELEMS:
        raise LayoutError(f"{name}: the contiguous extent {cols} is not a multiple of 8")
    try:
        outer, runs, run = side.tile.group([rows, cols // ROW_ELEMS, ROW_ELEMS])
    except LayoutError as err:
        raise LayoutError(f"{name}: layout {side.tile!r} has no 8-element rows: {err}") from None
    inner = [s for s in run.canonicalize().shard if s.extent > 1]
    if len(inner) != 1 or not inner[0].is_memory or inner[0].stride != 1:
        raise LayoutError(
            f"{name}: layout {side.tile!r} does not keep 8 consecutive elements of its last "
            f"dimension contiguous; {instruction} moves 16-byte rows (give the contiguous "
            "dimension stride 1)"
        )
    for shard in (*outer.shard, *runs.shard):
        if shard.extent > 1 and (not shard.is_memory or shard.stride % ROW_ELEMS):
            raise LayoutError(
                f"{name}: layout {side.tile!r} puts 16-byte rows {shard.stride_text()} "
                f"elements apart; {instruction} needs them on 16-byte boundaries (multiples of 8)"
            )
    if not is_multiple(side.base, ROW_ELEMS):
        raise LayoutError(
            f"{name}: the region starts at element {side.base}, not on a 16-byte boundary"
        )
    swizzle = side.swizzle
    if swizzle is not None and swizzle.chunk_elems() < ROW_ELEMS:
        raise LayoutError(
            f"{name}: swizzle {swizzle!r} moves {swizzle.chunk_elems()}-element chunks, which "
            f"splits {instruction}'s 16-byte rows (use SwizzleLayout.from_bytes(width, 16))"
        )
    return LdmatrixPlan(side, rows, cols)


@dataclass(frozen=True)
class MmaAccumulatorPlan:
    """The registers of an ``m x n`` float32 accumulator: tile ``(i, j)`` (rows ``16 i`` on,
    columns ``8 j`` on) is the 4 registers from ``base + relative[i][j]``."""

    side: Operand
    m: int
    n: int
    base: Offset
    relative: tuple[tuple[int, ...], ...]

    def offset(self, i: int, j: int) -> Offset:
        """The first register of tile ``(i, j)``."""
        return oa.add(self.base, self.relative[i][j])


def plan_mma_accumulator(side: Operand) -> MmaAccumulatorPlan:
    """The register offsets of accumulator region ``side``; ``LayoutError`` unless inside each
    m16n8 tile it is ``mma_accumulator_layout``'s (the tiles may be anywhere, 4-aligned).

    Example: for ``acc[0:32, 0:16]`` of ``mma_accumulator_layout(32, 16)`` ``relative`` is
    ``((0, 4), (8, 12))``.
    """
    m, n = matrix_extents(side, "C")
    name = f"C {side.buffer.name}"
    expect = mma_accumulator_layout(m, n)  # raises for shapes mma has no fragment of
    parts = list(expect.shape)
    try:
        groups = side.tile.group(parts)
    except LayoutError:
        groups = ()
    ok = len(groups) == len(parts)
    strides = {0: 0, 3: 0}  # the m16 block and n8 tile dimensions: any memory stride
    for index, (group, want) in enumerate(zip(groups, expect.shard)):
        shards = [s for s in group.canonicalize().shard if s.extent > 1]
        if index in strides:
            if shards:
                single = len(shards) == 1 and shards[0].is_memory
                ok = ok and single and shards[0].stride % TILE_REGISTERS == 0
                strides[index] = shards[0].stride if single else 0
            continue
        got = [(s.extent, s.stride, s.axis) for s in shards]
        ok = ok and got == ([(want.extent, want.stride, want.axis)] if want.extent > 1 else [])
    if not ok:
        raise LayoutError(
            f"{name}: layout {side.tile!r} is not the mma m16n8 fragment layout {expect!r} "
            f"(declare it with layout=mma_accumulator_layout({m}, {n}))"
        )
    relative = tuple(
        tuple(i * strides[0] + j * strides[3] for j in range(n // MMA_N)) for i in range(m // MMA_M)
    )
    return MmaAccumulatorPlan(side, m, n, side.base, relative)
