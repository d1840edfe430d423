"""``MultiLevelTiling``: tile a block with data reuse (a matmul, a convolution) at several
levels, bind the outer spatial levels to GPU threads, and cache reads and writes.

The tiling structure is a string of ``S`` (spatial) and ``R`` (reduction) levels, outermost
first: ``"SSRSRS"`` on CPUs, ``"SSSRRSRS"`` on GPUs. Every loop of the block is split into
as many tiles as its kind has levels (``sample_perfect_tile``), and the tiles are reordered
level by level. Reuse is configured per direction with ``ReuseType``: whether a cache is
required (``"must"``), optional (``"may"``, the space forks) or absent (``"no"``), the
levels whose last loop the cache is computed at (1-based), and its storage scope.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from math import ceil, gcd
from typing import TYPE_CHECKING

from tilewright.ir import Block, IntImm, IterKind, SeqStmt, collect_vars
from tilewright.meta_schedule.analysis import (
    COOPERATIVE_FETCH,
    THREAD_EXTENT_HIGH,
    THREAD_EXTENT_LOW,
    TILING_STRUCTURE,
    block_of,
    loop_iter_kinds,
    loop_of,
    needs_multi_level_tiling,
)
from tilewright.meta_schedule.schedule_rule.rule import ScheduleRule
from tilewright.schedule import BlockRV, LoopRV, Schedule, ScheduleError

if TYPE_CHECKING:
    from tilewright.meta_schedule.tune_context import TuneContext


@dataclass(frozen=True)
class ReuseType:
    """How a tiled block caches one direction of its data.

    Args:
        req: ``"no"``, ``"may"`` or ``"must"``.
        levels: the tiling levels (1-based) at whose last loop the cache may sit.
        scope: the cache's storage scope (``"shared"``, ``"local"``, ``"global"``).
        buffers: which inputs a read cache takes: ``"all"`` (TVM's behaviour), or
            ``"vector"``: only those whose last index is the block's innermost spatial
            iterator, the rows a vectorized inner loop streams (packing them makes them
            contiguous; the others are read as scalars).

    Example::

        ReuseType(req="must", levels=[4], scope="shared")
    """

    req: str = "no"
    levels: Sequence[int] = ()
    scope: str = "global"
    buffers: str = "all"

    def __post_init__(self) -> None:
        if self.req not in ("no", "may", "must"):
            raise ValueError(f"ReuseType.req is 'no', 'may' or 'must', not {self.req!r}")
        if self.buffers not in ("all", "vector"):
            raise ValueError(f"ReuseType.buffers is 'all' or 'vector', not {self.buffers!r}")
        object.__setattr__(self, "levels", tuple(int(v) for v in self.levels))


@dataclass
class _State:
    """One branch of the rule's work on a block."""

    sch: Schedule
    block: BlockRV
    structure: str
    write_cache: BlockRV | None = None
    write_level: int = 0
    tiles: list[list[LoopRV]] = field(default_factory=list)


class MultiLevelTiling(ScheduleRule):
    """Multi-level tiling with reuse (TVM's rule of the same name).

    Args:
        structure: levels, e.g. ``"SSRSRS"`` (CPU) or ``"SSSRRSRS"`` (GPU); several
            structures (a sequence) fork the space, one branch per structure.
        tile_binds: thread axes for the first spatial levels, e.g.
            ``["blockIdx.x", "vthread.x", "threadIdx.x"]`` (each level's loops fused first).
        max_innermost_factor: bound on the innermost tile of every loop.
        vector_load_lens: vector lengths the cooperative fetch of a read cache may use.
        reuse_read: caching of the inputs (``ReuseType``).
        reuse_write: caching of the output.
        vector_bytes: beyond TVM, for CPUs: the width of the machine's vector registers. The
            block's last spatial loop (the one its output is contiguous along) is first split
            by the lanes such a register holds (as many as divide the extent), and only the
            outer part is tiled: the innermost tile stays a whole number of vector registers
            whatever the sampled factors (TVM samples it freely, and most draws leave the
            vectorized loop a few lanes long).

    Example::

        rule = MultiLevelTiling(
            structure="SSSRRSRS",
            tile_binds=["blockIdx.x", "vthread.x", "threadIdx.x"],
            max_innermost_factor=64,
            vector_load_lens=[1, 2, 3, 4, 8, 16],
            reuse_read=ReuseType(req="must", levels=[4], scope="shared"),
            reuse_write=ReuseType(req="must", levels=[3], scope="local"),
        )
    """

    def __init__(
        self,
        structure: str | Sequence[str],
        tile_binds: Sequence[str] | None = None,
        max_innermost_factor: int | None = None,
        vector_load_lens: Sequence[int] | None = None,
        reuse_read: ReuseType | None = None,
        reuse_write: ReuseType | None = None,
        filter_fn: object = None,
        vector_bytes: int | None = None,
        pipeline_stages: int = 0,
    ) -> None:
        structures = (structure,) if isinstance(structure, str) else tuple(structure)
        if not structures:
            raise ValueError("MultiLevelTiling needs a tiling structure")
        self.tile_binds = list(tile_binds or [])
        for text in structures:
            if not text or set(text) - {"S", "R"}:
                raise ValueError(f"tiling structure {text!r} is made of S and R only")
            if len(self.tile_binds) > text.count("S"):
                raise ValueError(f"{len(self.tile_binds)} tile binds for structure {text!r}")
        self.structures = structures
        self.structure = structures[0]
        self.max_innermost_factor = max_innermost_factor or 0
        self.vector_load_lens = list(vector_load_lens or [])
        self.reuse_read = reuse_read or ReuseType()
        self.reuse_write = reuse_write or ReuseType()
        self.filter_fn = filter_fn
        self.vector_bytes = vector_bytes or 0
        self.pipeline_stages = pipeline_stages
        self.pipelined = False  # set by the target: only where copies are asynchronous
        self.thread_warp_size = 0
        self.max_threads_per_block = 0

    def _initialize_with_tune_context(self, context: TuneContext) -> None:
        target = context.target
        if target is not None and self.tile_binds:
            self.thread_warp_size = target.thread_warp_size
            self.max_threads_per_block = target.max_num_threads
        from tilewright.transform.lower_async_copy import supports_cp_async

        self.pipelined = self.pipeline_stages > 1 and supports_cp_async(target)

    def __repr__(self) -> str:
        shown = self.structure if len(self.structures) == 1 else list(self.structures)
        return f"MultiLevelTiling(structure={shown!r}, tile_binds={self.tile_binds})"

    def apply(self, sch: Schedule, block: BlockRV) -> list[Schedule]:
        if not needs_multi_level_tiling(sch, block):
            return [sch]
        if self.filter_fn is not None and not self.filter_fn(sch, block):  # type: ignore[operator]
            return [sch]
        states = []
        for structure in self.structures:
            branch = sch.copy() if len(self.structures) > 1 else sch
            branch.annotate(block, TILING_STRUCTURE, structure)
            states.append(_State(branch, block, structure))
        states = [s for state in states for s in self._add_write_reuse(state)]
        states = [s for state in states for s in self._tile(state)]
        states = [s for state in states for s in self._add_read_reuse(state)]
        states = [s for state in states for s in self._place_write_cache(state)]
        return [state.sch for state in states]

    # ---- steps -----------------------------------------------------------------------------
    def _add_write_reuse(self, state: _State) -> list[_State]:
        reuse = self.reuse_write
        if reuse.req == "no" or not reuse.levels:
            return [state]
        result = [state] if reuse.req == "may" else []
        for level in reuse.levels:
            sch = state.sch.copy() if reuse.req == "may" or len(reuse.levels) > 1 else state.sch
            try:
                cache = sch.cache_write(state.block, 0, reuse.scope)
            except ScheduleError:
                continue
            result.append(replace(state, sch=sch, write_cache=cache, write_level=level))
        return result

    def _tile(self, state: _State) -> list[_State]:
        sch, block = state.sch, state.block
        kinds = loop_iter_kinds(sch, block)
        loops = sch.get_loops(block)
        s_levels = [i for i, c in enumerate(state.structure) if c == "S"]
        r_levels = [i for i, c in enumerate(state.structure) if c == "R"]
        tiles: list[list[LoopRV]] = [[] for _ in state.structure]
        spatial = [k for k, kind in enumerate(kinds) if kind == "S"]
        lanes_part = None
        for k, (loop, kind) in enumerate(zip(loops, kinds)):
            levels = s_levels if kind == "S" else r_levels if kind == "R" else None
            if levels is None:
                continue  # a unit loop driving no iterator stays where it is
            if spatial and k == spatial[-1]:
                loop, lanes_part = self._split_lanes(sch, block, loop)
            if len(levels) == 1:  # one level: nothing to choose
                tiles[levels[0]].append(loop)
                continue
            factors = sch.sample_perfect_tile(loop, len(levels), self.max_innermost_factor)
            for level, part in zip(levels, sch.split(loop, factors)):
                tiles[level].append(part)
        if lanes_part is not None:
            tiles[s_levels[-1]].append(lanes_part)
        sch.reorder(*[loop for level in tiles for loop in level])
        for k, tag in enumerate(self.tile_binds):
            level = s_levels[k]
            if not tiles[level]:
                return []  # no spatial loop to bind (needs_multi_level_tiling excludes this)
            fused = sch.fuse(*tiles[level]) if len(tiles[level]) > 1 else tiles[level][0]
            sch.bind(fused, tag)
            tiles[level] = [fused]
        if self.tile_binds and self.max_threads_per_block:
            sch.annotate(block, THREAD_EXTENT_LOW, self.thread_warp_size)
            sch.annotate(block, THREAD_EXTENT_HIGH, self.max_threads_per_block)
        return [replace(state, tiles=tiles)]

    def _split_lanes(
        self, sch: Schedule, block: BlockRV, loop: LoopRV
    ) -> tuple[LoopRV, LoopRV | None]:
        """``loop`` split into (outer, vector lanes: ``register_lanes``), when
        ``vector_bytes`` asks for it and some lanes divide the extent; else ``(loop, None)``."""
        if not self.vector_bytes or self.tile_binds:
            return loop, None
        extent = loop_of(sch, loop).extent
        writes = block_of(sch, block).writes
        if not isinstance(extent, IntImm) or not writes:
            return loop, None
        bits = writes[0].buffer.dtype.bits
        lanes = register_lanes(extent.value, max(1, self.vector_bytes * 8 // bits), bits)
        if lanes < 2 or lanes == extent.value:
            return loop, None
        outer, inner = sch.split(loop, [None, lanes])
        return outer, inner

    def _location(self, state: _State, level: int) -> LoopRV | None:
        """The last loop of tiling level ``level`` (1-based), or of the nearest level above
        it that has loops."""
        for k in range(level - 1, -1, -1):
            if state.tiles[k]:
                return state.tiles[k][-1]
        return None

    def _add_read_reuse(self, state: _State) -> list[_State]:
        reuse = self.reuse_read
        if reuse.req == "no" or not reuse.levels:
            return [state]
        result = [state] if reuse.req == "may" else []
        for level in reuse.levels:
            sch = state.sch.copy() if reuse.req == "may" or len(reuse.levels) > 1 else state.sch
            location = self._location(state, level)
            if location is None:
                continue
            reads = len(block_of(sch, state.block).reads)
            tiles = [list(t) for t in state.tiles]
            for index in range(reads):
                buffer = block_of(sch, state.block).reads[index].buffer
                if any(buffer == w.buffer for w in block_of(sch, state.block).writes):
                    continue
                if reuse.buffers == "vector" and not _streamed(block_of(sch, state.block), index):
                    continue
                at = location
                if reuse.buffers == "vector":
                    at = _reuse_order(sch, state.block, index, tiles[level - 1]) or location
                cache = sch.cache_read(state.block, index, reuse.scope)
                sch.compute_at(cache, at, preserve_unit_loops=True)
                if self.vector_load_lens:
                    n = len(self.vector_load_lens)
                    vec = sch.sample_categorical(self.vector_load_lens, [1.0 / n] * n)
                    sch.annotate(cache, COOPERATIVE_FETCH, vec)
            if self.pipelined and reuse.scope.startswith("shared"):
                self._pipeline(sch, location)
            result.append(replace(state, sch=sch, tiles=tiles))
        return result

    def _pipeline(self, sch: Schedule, loop: LoopRV) -> None:
        """Beyond TVM's rule: the loop holding the shared-memory fetches becomes a
        ``pipeline_stages``-deep ``cp.async`` pipeline, ordered compute first (the fetch of
        step k + stages - 1 after the compute of step k: one barrier a step)."""
        body = sch.get(loop).body
        count = len(body.seq) if isinstance(body, SeqStmt) else 1
        if count < 2:
            return
        fetches = count - 1
        sch.annotate(loop, "software_pipeline_stage", [0] * fetches + [self.pipeline_stages - 1])
        sch.annotate(loop, "software_pipeline_order", [*range(1, count), 0])
        sch.annotate(loop, "software_pipeline_async_stages", [0])

    def _place_write_cache(self, state: _State) -> list[_State]:
        if state.write_cache is None:
            return [state]
        location = self._location(state, state.write_level)
        if location is None:
            return [state]
        state.sch.reverse_compute_at(state.write_cache, location, preserve_unit_loops=True)
        return [state]


def _reuse_order(sch: Schedule, block: BlockRV, index: int, level: list[LoopRV]) -> LoopRV | None:
    """Reorder one tiling level's loops so that those the block's ``index``-th input does
    not depend on come last, and return the last loop it does depend on: a panel packed
    there is reused by every iteration of the loops after it (B's columns packed once for
    all rows of A in a matmul, rather than once per row tile). None when there is nothing to
    reorder. ``level`` is updated in place."""
    node = block_of(sch, block)
    used = {v for r in node.reads[index].region for v in collect_vars(r.min)}
    realize = sch.get_realize(block)

    def feeds(loop: LoopRV) -> bool:
        var = loop_of(sch, loop).loop_var
        return any(
            iv.var in used and var in collect_vars(value)
            for iv, value in zip(node.iter_vars, realize.iter_values)
        )

    first = [lp for lp in level if feeds(lp)]
    last = [lp for lp in level if not feeds(lp)]
    if not first or not last:
        return None
    if level != first + last:
        try:
            sch.reorder(*first, *last)
        except ScheduleError:  # a block attached there earlier binds a window (j_0 + ax2)
            return None
        level[:] = first + last
    return first[-1]


def _streamed(block: Block, index: int) -> bool:
    """The block's ``index``-th input is indexed last by its innermost spatial iterator."""
    spatial = [iv.var for iv in block.iter_vars if iv.kind is IterKind.SPATIAL]
    region = block.reads[index].region
    return bool(spatial and region) and spatial[-1] in collect_vars(region[-1].min)


def register_lanes(extent: int, native: int, bits: int = 32) -> int:
    """How many lanes to split a vectorized loop of ``extent`` by, given ``native`` lanes per
    vector register of ``bits``-bit elements: ``native`` where it divides the extent; else the
    divisor of the extent, up to four registers wide, that C vector code writes with the
    fewest instructions per lane (``codegen.c_vector.lane_parts``: powers of two, none under
    128 bits). 1000 float32 with 16-lane registers: 40 (two full registers and a half one,
    3 instructions for 40 lanes) rather than 8 (one half register for 8).

    Example::

        >>> register_lanes(1024, 16), register_lanes(1000, 16), register_lanes(1001, 16)
        (16, 40, 1)
    """
    fallback = gcd(extent, native)
    if fallback == native:
        return native
    smallest = max(1, 128 // bits)

    def instructions_per_lane(lanes: int) -> float:
        parts = [1 << b for b in range(lanes.bit_length()) if lanes >> b & 1]
        if lanes == fallback:
            return ceil(lanes / native) / lanes
        if min(parts) < smallest:
            return float("inf")
        return sum(ceil(p / native) for p in parts) / lanes

    wider = [d for d in range(native + 1, 4 * native + 1) if extent % d == 0]
    return min([fallback, *wider], key=lambda d: (instructions_per_lane(d), d))
