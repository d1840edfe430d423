"""``MultiLevelTilingTensorCore``: a GEMM block on the tensor cores (``mma.sync`` m16n8k16 with
``ldmatrix`` loads and a ``cp.async`` shared-memory pipeline), its tile sizes sampled.

A block computing ``C[i, j] += cast(A[i, k]) * cast(B[k, j])`` (A or B may be stored
transposed) with float16 or bfloat16 operands, accumulated in float32 (or float16 from
float16), whose three extents are multiples of 16, on a CUDA target of sm_80 or newer. The
intrinsics come from ``get_mma_intrin_group`` by dtype and layout. ``tile_for_tensor_cores``
is the schedule itself, shared with the hand schedule of
``tilewright.meta_schedule.testing.tensor_core``:

* 16x16x16 tiles blockized; their i and j loops split into ``[blocks, warps, fragments]``,
  k into ``[k0, fragments]``; ``blockIdx.x`` over the block tiles, ``threadIdx.y`` over the
  warps (the 32 lanes are the intrinsics' ``threadIdx.x``);
* A's and B's tiles cached in shared memory at ``k0`` (16 bytes a lane), fetched by the whole
  block, stored XOR-swizzled against bank conflicts (``permuted_layout``; rows padded by 8
  elements instead with ``permuted=False``); with ``stages > 1`` a ``cp.async`` software
  pipeline, and with ``nested`` the fragment loads pipelined inside it (the next tile's first
  fragments loaded before the tile's last ``mma.sync``, TVM's nested pipelines);
* each warp's fragments in ``warp`` buffers in the fragment layout, loaded by ``ldmatrix``,
  multiplied by ``mma.sync``, zeroed and stored by the fill and store intrinsics.

Other blocks are left to the other rules.

Example::

    rule = MultiLevelTilingTensorCore(stages=3)
    (sch,) = rule.apply(sch, sch.get_block("C"))
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tilewright.ir import BufferLoad, BufferStore, Cast, IntImm, IterKind, Var
from tilewright.ir.expr import Add, Mul, PrimExpr
from tilewright.meta_schedule.analysis import COOPERATIVE_FETCH, WARP_EXECUTION, block_of
from tilewright.meta_schedule.schedule_rule.rule import ScheduleRule
from tilewright.schedule import BlockRV, ExprRV, LoopRV, Schedule, ScheduleError
from tilewright.schedule.tensor_intrin_cuda import (
    get_mma_intrin_group,
    shared_16x16_to_ldmatrix_32x8_layout,
)

if TYPE_CHECKING:
    from tilewright.meta_schedule.tune_context import TuneContext

Factor = int | None | ExprRV


@dataclass(frozen=True)
class Gemm:
    """What a block computes, when it is a tensor-core GEMM: its iterators (i, j, k) and
    layouts and dtypes."""

    iters: tuple[Var, Var, Var]
    trans_a: bool
    trans_b: bool
    in_dtype: str
    out_dtype: str


def fragment_layout(i, j):  # an index map: called with expressions, returns four
    """A 2-D tile's element (i, j) → (tile row, tile column, lane, register)."""
    return (i // 16, j // 16, *shared_16x16_to_ldmatrix_32x8_layout(i % 16, j % 16))


def gemm_of(sch: Schedule, block: BlockRV) -> Gemm | None:
    """The block as a tensor-core GEMM, or None when it is not one."""
    node = block_of(sch, block)
    if len(node.iter_vars) != 3 or not isinstance(node.body, BufferStore):
        return None
    kinds = [iv.kind for iv in node.iter_vars]
    if kinds.count(IterKind.REDUCE) != 1 or kinds.count(IterKind.SPATIAL) != 2:
        return None
    spatial = [iv.var for iv in node.iter_vars if iv.kind is IterKind.SPATIAL]
    (k,) = [iv.var for iv in node.iter_vars if iv.kind is IterKind.REDUCE]
    if any(
        not (isinstance(iv.dom.extent, IntImm) and iv.dom.extent.value % 16 == 0)
        for iv in node.iter_vars
    ):
        return None
    store = node.body
    if len(store.indices) != 2:
        return None
    i, j = store.indices
    if not (isinstance(i, Var) and isinstance(j, Var) and {i, j} == set(spatial)):
        return None
    value = store.value
    if not (isinstance(value, Add) and _is_load(value.a, store)):
        return None
    product = value.b
    if not isinstance(product, Mul):
        return None
    a, b = _uncast(product.a), _uncast(product.b)
    if a is None or b is None or a.buffer.dtype != b.buffer.dtype:
        return None
    trans_a = _layout(a, i, k)
    trans_b = _layout(b, k, j)
    if trans_a is None or trans_b is None:
        return None
    in_dtype, out_dtype = str(a.buffer.dtype), str(store.buffer.dtype)
    try:
        get_mma_intrin_group("shared", "global", in_dtype, out_dtype, trans_a, trans_b)
    except ValueError:
        return None
    return Gemm((i, j, k), trans_a, trans_b, in_dtype, out_dtype)


def _is_load(expr: PrimExpr, store: BufferStore) -> bool:
    return (
        isinstance(expr, BufferLoad)
        and expr.buffer is store.buffer
        and all(x is y for x, y in zip(expr.indices, store.indices, strict=True))
    )


def _uncast(expr: PrimExpr) -> BufferLoad | None:
    if isinstance(expr, Cast):
        expr = expr.value
    return expr if isinstance(expr, BufferLoad) and len(expr.indices) == 2 else None


def _layout(load: BufferLoad, row: Var, col: Var) -> bool | None:
    """False when ``load`` reads ``[row, col]``, True for ``[col, row]``, None otherwise."""
    first, second = load.indices
    if first is row and second is col:
        return False
    if first is col and second is row:
        return True
    return None


TileSizes = Callable[
    [Schedule, LoopRV, LoopRV, LoopRV],
    tuple[Sequence[Factor], Sequence[Factor], Sequence[Factor]],
]


def fixed_tile_sizes(
    warps_m: int, warps_n: int, frags_m: int, frags_n: int, k_frags: int
) -> TileSizes:
    """Tile sizes that do not depend on the loops: ``[None, warps, frags]`` for i and j,
    ``[None, k_frags]`` for k."""
    return lambda sch, i, j, k: (
        [None, warps_m, frags_m],
        [None, warps_n, frags_n],
        [None, k_frags],
    )


def tile_for_tensor_cores(
    sch: Schedule,
    block: BlockRV,
    gemm: Gemm,
    tile_sizes: TileSizes,
    *,
    fetch_threads: int | None = None,
    stages: int = 2,
    fragment_stages: int = 1,
    compute_first: bool = False,
    nested: bool = False,
    unroll: bool = True,
    permuted: bool = False,
    group_rows: int = 1,
) -> Schedule:
    """Schedule the GEMM ``block`` for the tensor cores (module docstring).

    ``tile_sizes(sch, i, j, k)``, given the loops over the 16-element tiles, returns the
    factors that split i and j into ``[block tiles, warps, fragments a warp]`` and k into
    ``[k0, fragments a step]`` (ints, ``None`` for one, or sampled ``ExprRV``s).
    ``fetch_threads`` (the warps a
    block) spreads the shared-memory fetch over the block's threads now; None leaves it to
    ``RewriteCooperativeFetch`` (the annotation). ``permuted`` stores the shared tiles
    XOR-swizzled (the ``permuted_layout`` annotation) instead of padding their rows.
    ``group_rows`` > 1 numbers the block tiles ``group_rows`` rows at a time, column by
    column (blocks running together share A's and B's tiles in L2); it must divide the
    block rows. ``nested`` (with ``stages`` > 1 and ``fragment_stages`` 2) nests the
    fragment pipeline in the fetch pipeline: each step multiplies tile k0's fragments but the
    last, fetches tile k0 + stages - 1, waits for tile k0 + 1 (one barrier) and loads its
    first fragments, then multiplies tile k0's last ones, so the ``ldmatrix`` after the
    barrier overlaps ``mma.sync`` work. Refused with ``ScheduleError``.
    """
    if nested and (stages < 2 or fragment_stages != 2):
        raise ScheduleError(
            "tensorize",
            "nested-pipeline",
            f"nested pipelines need stages > 1 and fragment_stages 2 (got {stages} and "
            f"{fragment_stages})",
        )
    group = get_mma_intrin_group(
        "shared", "global", gemm.in_dtype, gemm.out_dtype, gemm.trans_a, gemm.trans_b
    )
    loops = sch.get_loops(block)
    by_var = {}
    realize = sch.get_realize(block)
    for iv, value in zip(block_of(sch, block).iter_vars, realize.iter_values):
        by_var[iv.var] = value
    order = []
    for var in gemm.iters:
        value = by_var[var]
        match = [loop for loop in loops if getattr(sch.get(loop), "loop_var", None) is value]
        if len(match) != 1:
            raise ScheduleError("tensorize", "gemm-loops", "the GEMM's iterators are not loops")
        order.append(match[0])
    i, j, k = order
    sch.reorder(i, j, k)
    i, i_tc = sch.split(i, [None, 16])
    j, j_tc = sch.split(j, [None, 16])
    k, k_tc = sch.split(k, [None, 16])
    sch.reorder(i, j, k, i_tc, j_tc, k_tc)
    outer = sch.blockize(i_tc)
    i_factors, j_factors, k_factors = tile_sizes(sch, i, j, k)
    i0, i1, i2 = sch.split(i, list(i_factors))
    j0, j1, j2 = sch.split(j, list(j_factors))
    k0, k1 = sch.split(k, list(k_factors))
    sch.reorder(i0, j0, i1, j1, k0, k1, i2, j2)
    if group_rows > 1:  # i0 = (groups, rows of a group): groups, then columns, then rows
        groups, rows = sch.split(i0, [None, group_rows])
        sch.reorder(groups, j0, rows)
        sch.bind(sch.fuse(groups, j0, rows), "blockIdx.x")
    else:
        sch.bind(sch.fuse(i0, j0), "blockIdx.x")
    warp = sch.fuse(i1, j1)
    sch.bind(warp, "threadIdx.y")
    sch.annotate(outer, WARP_EXECUTION, 1)

    for index in (0, 1):
        tile = sch.cache_read(outer, index, "shared")
        sch.compute_at(tile, k0)
        if fetch_threads is None:
            sch.annotate(tile, COOPERATIVE_FETCH, 8)
        else:
            fused = sch.fuse(*sch.get_loops(tile)[-2:])
            _, ty, tx, lanes = sch.split(fused, [None, fetch_threads, 32, 8])
            sch.bind(ty, "threadIdx.y")
            sch.bind(tx, "threadIdx.x")
            sch.vectorize(lanes)
        if permuted:  # dense rows, chunks swizzled: conflict-free copies and ldmatrix
            sch.annotate(tile, "permuted_layout", 1)
        else:  # rows padded by 16 bytes: conflict-free ldmatrix, copies split over lines
            sch.storage_align(tile, 0, axis=-2, factor=32, offset=8)

    loads, unrolled = [], [k1, i2, j2]
    for index in (0, 1):
        fragment = sch.cache_read(outer, index, "warp")
        sch.compute_at(fragment, k1)
        loads.append(_fragments(sch, fragment, "write", unrolled))
    store = sch.cache_write(outer, 0, "warp")
    sch.reverse_compute_at(store, warp)
    a1 = _fragments(sch, store, "read", unrolled)
    init = sch.decompose_reduction(outer, k0)
    unrolled += sch.get_loops(init)[-2:]

    sch.tensorize(loads[0], group["load_a"])
    sch.tensorize(loads[1], group["load_b"])
    sch.tensorize(sch.get_loops(block)[-3], group["compute"])
    sch.tensorize(sch.get_loops(sch.get_child_blocks(init)[0])[-2], group["init"])
    sch.tensorize(a1, group["store"])
    if unroll:
        for loop in unrolled:
            sch.unroll(loop)
    if fragment_stages > 1:  # ldmatrix of step k1 + 1 while mma.sync computes step k1
        sch.annotate(k1, "software_pipeline_stage", [0, 0, fragment_stages - 1])
    if nested:
        _nest_pipelines(sch, k0, stages)
    elif stages > 1:  # fetch tile k0 + stages - 1 (cp.async) while computing tile k0
        sch.annotate(k0, "software_pipeline_stage", [0, 0, stages - 1])
        sch.annotate(k0, "software_pipeline_async_stages", [0])
        if compute_first:
            sch.annotate(k0, "software_pipeline_order", [1, 2, 0])
    return sch


def _nest_pipelines(sch: Schedule, k0: LoopRV, stages: int) -> None:
    """Annotate the fetch loop ``k0`` over the expanded fragment pipeline: its body counts
    the two fetches, the inner prologue (the first A and B fragments), the inner loop (a
    no-op when the k tile is one fragment: the annotation holds for every tile size the
    tuner may sample) and the inner epilogue (the last ``mma``)."""
    last = stages - 1
    # Statements: fetch A, fetch B, fragments A, fragments B, the inner loop, the last mma:
    # the loop first, then the fetches, then the next tile's first fragments (after the
    # wait), then the last mma.
    sch.annotate(k0, "software_pipeline_stage", [0, 0, last - 1, last - 1, last, last])
    sch.annotate(k0, "software_pipeline_order", [1, 2, 3, 4, 0, 5])
    sch.annotate(k0, "software_pipeline_async_stages", [0])


def _writes_a_parameter(sch: Schedule, block: BlockRV) -> bool:
    """Whether the block's output is a parameter of its function: the fragments are stored
    straight to it. An intermediate output (an epilogue reads it) would need the epilogue
    fused into a store through shared memory, not done yet, so such a GEMM is left to the
    other rules."""
    (written,) = [region.buffer for region in block_of(sch, block).writes]
    func = sch.mod[sch.func_working_on]
    return any(buffer is written for _, buffer in func.buffer_map)


def _fragments(sch: Schedule, copy: BlockRV, side: str, unrolled: list[LoopRV]) -> LoopRV:
    """Tile a warp copy's two loops by 16x16 fragments (loops over fragments outside, added
    to ``unrolled``), store its warp buffer (the ``side`` it writes or reads) in the
    fragment layout, and return the loop over one fragment's rows, which tensorize takes."""
    a, b = sch.get_loops(copy)[-2:]
    a0, a1 = sch.split(a, [None, 16])
    b0, b1 = sch.split(b, [None, 16])
    sch.reorder(a0, b0, a1, b1)
    sch.transform_layout(copy, (side, 0), fragment_layout)
    unrolled += [a0, b0]
    return a1


class MultiLevelTilingTensorCore(ScheduleRule):
    """Tile a GEMM block for the tensor cores with sampled tile sizes (module docstring);
    other blocks, and targets without ``mma.sync``/``cp.async`` (before sm_80), pass
    through unchanged.

    Args:
        max_fragments: bound on the fragments a warp holds along i and j, and the k
            fragments a pipeline step (the innermost factors; the warps are not bounded
            here: more threads or shared memory than the target has are rejected by
            ``VerifyGPUCode``).
        stages: shared-memory buffers of the ``cp.async`` pipeline (1: none).
        permuted: swizzled shared tiles (rows of 32 or 64 bytes or a multiple of 128, so
            a candidate whose tile rows are, say, 96 bytes fails to build); False pads the
            rows instead (any width, every copy split over two 128-byte lines).
        nested: each warp loads step k + 1's fragments while it multiplies step k's,
            across k tiles too (nested pipelines; with ``stages`` > 1).

    Example::

        rules = [MultiLevelTilingTensorCore(), MultiLevelTiling(...), ...]
    """

    def __init__(
        self,
        max_fragments: int = 4,
        stages: int = 3,
        permuted: bool = True,
        nested: bool = True,
    ) -> None:
        self.max_fragments = max_fragments
        self.stages = stages
        self.permuted = permuted
        self.nested = nested and stages > 1
        self.enabled = True

    def _initialize_with_tune_context(self, context: TuneContext) -> None:
        from tilewright.transform.lower_async_copy import supports_cp_async

        self.enabled = supports_cp_async(context.target)

    def apply(self, sch: Schedule, block: BlockRV) -> list[Schedule]:
        if not self.enabled:
            return [sch]
        gemm = gemm_of(sch, block)
        if gemm is None or not _writes_a_parameter(sch, block):
            return [sch]
        tiled = sch.copy()
        try:
            tile_for_tensor_cores(
                tiled,
                block,
                gemm,
                self._sample,
                stages=self.stages,
                permuted=self.permuted,
                fragment_stages=2 if self.nested else 1,
                nested=self.nested,
            )
        except ScheduleError:
            return [sch]
        return [tiled]

    def _sample(
        self, sch: Schedule, i: LoopRV, j: LoopRV, k: LoopRV
    ) -> tuple[list[ExprRV | None], list[ExprRV | None], list[ExprRV | None]]:
        """Tile counts of the 16-element tiles: i and j as [blocks, warps, fragments], k as
        [steps, fragments]."""
        fragments = self.max_fragments
        return (
            sch.sample_perfect_tile(i, n=3, max_innermost_factor=fragments),
            sch.sample_perfect_tile(j, n=3, max_innermost_factor=fragments),
            sch.sample_perfect_tile(k, n=2, max_innermost_factor=fragments),
        )

    def clone(self) -> MultiLevelTilingTensorCore:
        return MultiLevelTilingTensorCore(
            self.max_fragments, self.stages, self.permuted, self.nested
        )

    def __repr__(self) -> str:
        return (
            f"MultiLevelTilingTensorCore(max_fragments={self.max_fragments}, "
            f"stages={self.stages}, permuted={self.permuted}, nested={self.nested})"
        )
