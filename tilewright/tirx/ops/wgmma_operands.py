"""What ``wgmma`` needs to know about the operands of a ``gemm``: the shared-memory matrix
descriptors of A and B, and the register offsets of the accumulator C.

Input: ``Operand``s (regions with their layouts sliced). Output: a ``SmemPlan`` (leading and
stride byte offsets, the swizzle width and the unswizzled element offset of any ``(row, k)``)
or a ``LayoutError`` whose message says why the layout is not one wgmma can read, and an
``AccumulatorPlan`` (the register offset of each m64 block) or a ``LayoutError``.

wgmma reads a K-major operand as 8-row "core matrices" (PTX ISA, "Shared Memory Matrix
Layout"). With a swizzle of ``W`` bytes (32, 64, 128) each row of an 8-row atom holds ``W``
bytes of K and the atom (``8 * W`` bytes) is swizzled as ``SwizzleLayout.from_bytes(W, ...)``
swizzles it; the stride byte offset (SBO) steps between 8-row groups, the leading byte
offset is unused (16). Without a swizzle a core matrix is 8 rows of 16 bytes, contiguous;
LBO steps between core matrices along K, SBO along the rows.

Example::

    >>> plan = plan_smem(operand(A_smem[0:64, 0:64]))   # 128-byte swizzle, 64 x 64 float16
    >>> plan.leading_bytes, plan.stride_bytes, plan.swizzle_bytes
    (16, 1024, 128)
"""

from __future__ import annotations

from dataclasses import dataclass

from tilewright.layout import LayoutError, TileLayout
from tilewright.layout import offset_arith as oa
from tilewright.layout.fragment import WGMMA_M, wgmma_accumulator_layout
from tilewright.layout.offset_arith import Offset
from tilewright.layout.shard import MEMORY
from tilewright.tirx.operand import Operand, is_multiple

CORE_BYTES = 16  # a core-matrix row (and the descriptor's address unit)
CORE_ROWS = 8
UNUSED_LEADING_BYTES = 16  # swizzled K-major layouts: the field is ignored; CUTLASS writes 1
# Static __shared__ arrays are aligned to at most this many bytes by the CUDA printer.
STATIC_SHARED_ALIGN = 128


@dataclass(frozen=True)
class SmemPlan:
    """A K-major shared operand of ``rows x k`` elements as wgmma's descriptor sees it."""

    side: Operand
    rows: int
    k: int
    swizzle_bytes: int
    leading_bytes: int
    stride_bytes: int

    def start(self, row: int, k: int) -> Offset:
        """The element offset (unswizzled, buffer-relative) the descriptor of the 64 x 16 (or
        N x 16) block at ``(row, k)`` starts at; the hardware applies the swizzle itself."""
        local = self.side.tile.apply(row, k, shape=[self.rows, self.k])[MEMORY]
        return oa.add(self.side.base, local)


def matrix_extents(side: Operand, what: str) -> tuple[int, int]:
    """The two extents of a matrix region (leading unit extents dropped)."""
    extents = side.extents
    if len(extents) < 2 or any(e != 1 for e in extents[:-2]):
        raise LayoutError(
            f"{what} {side.buffer.name}: region extents {list(extents)} are not a matrix "
            "(all but the last two must be 1)"
        )
    return extents[-2], extents[-1]


def plan_smem(side: Operand, what: str) -> SmemPlan:
    """The descriptor fields of K-major region ``side`` (``rows x k``, k contiguous);
    ``LayoutError`` naming ``what`` (``A`` or ``B``) when wgmma cannot read the layout."""
    rows, k = matrix_extents(side, what)
    name = f"{what} {side.buffer.name}"
    dtype = side.buffer.dtype
    element_bytes = dtype.bits * dtype.lanes // 8
    swizzle = side.swizzle
    if swizzle is None:
        width, row_elems = 0, CORE_BYTES // element_bytes
    else:
        width = swizzle.swizzle_bytes(dtype.bits * dtype.lanes)
        standard = swizzle.chunk_elems() * element_bytes == CORE_BYTES and swizzle.shift == 3
        if not standard or width not in (32, 64, 128):
            raise LayoutError(
                f"{name}: swizzle {swizzle!r} is not a 32/64/128-byte shared-memory swizzle of "
                f"{dtype} (use SwizzleLayout.from_bytes(width, {dtype.bits}))"
            )
        row_elems = width // element_bytes
    atom_elems = CORE_ROWS * row_elems
    chunk = min(row_elems, k)
    parts = [rows // CORE_ROWS, CORE_ROWS, k // chunk, chunk]
    if rows % CORE_ROWS or k % chunk:
        raise LayoutError(f"{name}: {rows} x {k} is not made of 8-row, {chunk}-column atoms")
    try:
        groups = side.tile.group(parts)
    except LayoutError as err:
        raise LayoutError(f"{name}: layout {side.tile!r} has no 8-row atoms: {err}") from None
    row_groups, in_atom, k_atoms, in_row = (_stride(g, name) for g in groups)
    need = "one swizzle row" if width else "one 16-byte core-matrix row"
    if in_row not in (None, 1):
        raise LayoutError(f"{name}: not K-major: k has stride {in_row}, not 1")
    if in_atom != row_elems:
        raise LayoutError(
            f"{name}: layout {side.tile!r} puts consecutive rows {in_atom} elements apart; "
            f"wgmma needs {row_elems} ({need}, {width or CORE_BYTES} bytes)"
            + ("" if width else "; use a swizzled layout or 8 x 8 core matrices")
        )
    # Swizzled: atoms sit on whole swizzle patterns; plain: core matrices on 16 bytes.
    unit = atom_elems if width else row_elems
    for stride, what_ in ((row_groups, "8-row groups"), (k_atoms, "k atoms")):
        if stride is not None and stride % unit:
            raise LayoutError(
                f"{name}: {what_} are {stride} elements apart, not a multiple of "
                f"{unit * element_bytes} bytes"
            )
    if not is_multiple(side.base, unit):
        raise LayoutError(
            f"{name}: the region starts at element {side.base}, not on a "
            f"{unit * element_bytes}-byte atom boundary"
        )
    _check_alignment(side, width * CORE_ROWS if width else CORE_BYTES, name)
    stride_bytes = (row_groups or atom_elems) * element_bytes  # unused for 8 rows
    # Swizzled K-major: LBO is unused; plain: K-adjacent core matrices.
    leading_bytes = UNUSED_LEADING_BYTES if width else (k_atoms or atom_elems) * element_bytes
    return SmemPlan(side, rows, k, width, leading_bytes, stride_bytes)


def _stride(group: TileLayout, name: str) -> int | None:
    """The memory stride of a dimension group that is one shard (None: extent 1)."""
    shards = [s for s in group.canonicalize().shard if s.extent > 1]
    if not shards:
        return None
    if len(shards) > 1 or not shards[0].is_memory:
        raise LayoutError(f"{name}: {group!r} is not one memory stride")
    return shards[0].stride


def _check_alignment(side: Operand, need: int, name: str) -> None:
    buffer = side.buffer
    if buffer.align < need:
        raise LayoutError(
            f"{name}: the swizzle pattern needs {need}-byte aligned storage; declare the buffer "
            f"with align={need} (it has {buffer.align})"
        )
    if buffer.scope == "shared" and need > STATIC_SHARED_ALIGN:
        raise LayoutError(
            f"{name}: static shared arrays are at most {STATIC_SHARED_ALIGN}-byte aligned; "
            f"use scope='shared.dyn' for the {need}-byte aligned swizzle atoms"
        )


@dataclass(frozen=True)
class AccumulatorPlan:
    """The registers of an ``m x n`` float32 accumulator: block ``b`` (rows ``64 b`` to
    ``64 b + 63``) starts at register ``offsets[b]``, ``n / 2`` consecutive registers."""

    side: Operand
    m: int
    n: int
    offsets: tuple[Offset, ...]


def plan_accumulator(side: Operand, what: str = "C") -> AccumulatorPlan:
    """The register offsets of accumulator region ``side``; ``LayoutError`` unless its layout
    is ``wgmma_accumulator_layout``'s (any m64 block stride of at least ``n / 2``).

    wgmma's A operand in registers (``what="A"``, ``m x k`` 16-bit elements) has the same
    layout: k step ``s`` of block ``b`` is the 8 elements from ``offsets[b] + 8 s``.
    """
    m, n = matrix_extents(side, what)
    name = f"{what} {side.buffer.name}"
    expect = wgmma_accumulator_layout(m, n)  # raises for shapes wgmma has no fragment of
    parts = list(expect.shape)
    try:
        groups = side.tile.group(parts)
    except LayoutError:
        groups = ()
    blocks = m // WGMMA_M
    ok = len(groups) == len(parts)
    block_stride = 0
    for index, (group, want) in enumerate(zip(groups, expect.shard)):
        shards = [s for s in group.canonicalize().shard if s.extent > 1]
        if index == 0:
            if blocks > 1:
                single = len(shards) == 1 and shards[0].is_memory
                block_stride = shards[0].stride if single else 0
                ok = ok and single and block_stride >= n // 2
            continue
        got = [(s.extent, s.stride, s.axis) for s in shards]
        ok = ok and got == ([(want.extent, want.stride, want.axis)] if want.extent > 1 else [])
    if not ok:
        raise LayoutError(
            f"{name}: layout {side.tile!r} is not the wgmma m64nNk16 fragment layout "
            f"{expect!r} (declare it with layout=T.wgmma_accumulator_layout({m}, {n}))"
        )
    offsets = tuple(oa.add(side.base, b * block_stride) for b in range(blocks))
    return AccumulatorPlan(side, m, n, offsets)
