"""Scheduled candidates -> feature matrices, one row per store (TVM's ``PerStoreFeature``).

Each row describes one ``BufferStore`` of the scheduled, postprocessed program (not
lowered) in five groups; magnitudes are ``log2(1 + x)``, flags and one-hots stay 0/1:

1. Arithmetic and loops (32): float and int operation counts by class (add/sub, mul,
   div/mod, compare/min/max, math call, other call), bool and select operations, each
   multiplied by the trip count of the loops around the store; vectorized, unrolled and
   parallel loops (how many, product of extents, innermost extent; whether the innermost
   loop is vectorized); whether the program is bound to GPU threads and the extents of
   ``blockIdx.x/y/z``, ``threadIdx.x/y/z`` and ``vthread``.
2. Buffer accesses (18 per buffer, ``buf_cache_size`` buffers, largest ``bytes`` first,
   zeros for missing ones): access type (read / write / read-write), bytes accessed,
   unique bytes, cache lines, unique lines, reuse type (a loop the access does not depend
   on / several reads in one store / none), reuse distance in iterations and bytes, reuse
   count, the four sizes divided by the reuse count, and the stride (elements) of the
   innermost loop the access moves with.
3. Arithmetic intensity curve (``arith_intensity_curve_num_samples``): float operations
   per byte touched, sampled at evenly spaced fractions of the store's total work.
4. Allocation (6): whether the stored buffer is allocated by the program, its size in
   bytes (the region its accesses touch under their common loops), how often that loop
   nest refills it, the store's iterations per refill; the program's shared and local
   bytes.
5. Outer (5): the store's trip count, its number of loops, the ``pragma_auto_unroll_max_step``
   and ``pragma_unroll_explicit`` above it, and the program's total float operations.

With the defaults the width is 32 + 18 * 5 + 10 + 6 + 5 = 143 (``feature_names``).

Example::

    >>> rows = per_store_features(sch.mod)          # (stores, 143) float32
    >>> extractor = PerStoreFeature()
    >>> matrices = extractor.extract_from(context, candidates)
"""

from __future__ import annotations

import math
from concurrent.futures import ProcessPoolExecutor
from typing import TYPE_CHECKING

import numpy as np

from tilewright.ir import IRModule, PrimFunc
from tilewright.ir.buffer import Buffer
from tilewright.ir.expr import Var
from tilewright.ir.stmt import ForKind
from tilewright.meta_schedule.feature_extractor.feature_extractor import FeatureExtractor
from tilewright.meta_schedule.feature_extractor.store_analysis import (
    OP_CLASSES,
    Access,
    FunctionRecords,
    Interval,
    IntervalEvaluator,
    StoreRecord,
    collect_stores,
)

if TYPE_CHECKING:
    from tilewright.meta_schedule.search_strategy.search_strategy import MeasureCandidate
    from tilewright.meta_schedule.tune_context import TuneContext

THREAD_TAGS = (
    "blockIdx.x", "blockIdx.y", "blockIdx.z", "threadIdx.x", "threadIdx.y", "threadIdx.z",
    "vthread",
)  # fmt: skip
_GROUP1 = (
    [f"float_{c}" for c in OP_CLASSES]
    + [f"int_{c}" for c in OP_CLASSES]
    + ["bool_op", "select_op", "vec_num", "vec_prod", "vec_len", "vec_innermost"]
    + ["unroll_num", "unroll_prod", "unroll_len", "parallel_num", "parallel_prod"]
    + ["parallel_len", "is_gpu"]
    + [f"{tag}_len" for tag in THREAD_TAGS]
)
_BUFFER = (
    "acc_read", "acc_write", "acc_rw", "bytes", "unique_bytes", "lines", "unique_lines",
    "reuse_loop", "reuse_serial", "reuse_none", "reuse_dis_iter", "reuse_dis_bytes",
    "reuse_ct", "bytes_d_reuse_ct", "unique_bytes_d_reuse_ct", "lines_d_reuse_ct",
    "unique_lines_d_reuse_ct", "stride",
)  # fmt: skip
_ALLOC = (
    "is_alloc", "alloc_bytes", "alloc_outer_prod", "alloc_inner_prod", "shared_bytes",
    "local_bytes",
)  # fmt: skip
_OUTER = ("outer_prod", "num_loops", "auto_unroll_max_step", "unroll_explicit", "total_flops")
_FLAGS = frozenset(
    ("vec_innermost", "is_gpu", "acc_read", "acc_write", "acc_rw", "reuse_loop", "reuse_serial",
     "reuse_none", "is_alloc", "unroll_explicit")
)  # fmt: skip


def feature_names(
    buf_cache_size: int = 5, arith_intensity_curve_num_samples: int = 10
) -> list[str]:
    """The name of every column of a feature row, in order."""
    names = list(_GROUP1)
    for slot in range(buf_cache_size):
        names += [f"B{slot}.{name}" for name in _BUFFER]
    names += [f"arith_intensity_{i}" for i in range(arith_intensity_curve_num_samples)]
    return names + list(_ALLOC) + list(_OUTER)


class PerStoreFeature(FeatureExtractor):
    """One row of ``len(feature_names())`` features per store of each candidate.

    Args:
        buf_cache_size: how many buffers (largest first) each row describes.
        arith_intensity_curve_num_samples: points of the arithmetic-intensity curve.
        cache_line_bytes: the cache line the ``lines`` features count in.
        n_jobs: worker processes for ``extract_from`` when there are at least
            ``parallel_threshold`` candidates (None: the context's ``num_threads``;
            1: in this process).
        parallel_threshold: the fewest candidates worth a process pool.

    Example::

        >>> extractor = PerStoreFeature()
        >>> [m.shape for m in extractor.extract_from(ctx, candidates)]
        [(4, 143), (4, 143)]
    """

    def __init__(
        self,
        buf_cache_size: int = 5,
        arith_intensity_curve_num_samples: int = 10,
        cache_line_bytes: int = 64,
        n_jobs: int | None = None,
        parallel_threshold: int = 64,
    ) -> None:
        self.buf_cache_size = buf_cache_size
        self.arith_intensity_curve_num_samples = arith_intensity_curve_num_samples
        self.cache_line_bytes = cache_line_bytes
        self.n_jobs = n_jobs
        self.parallel_threshold = parallel_threshold

    @property
    def feature_names(self) -> list[str]:
        return feature_names(self.buf_cache_size, self.arith_intensity_curve_num_samples)

    @property
    def width(self) -> int:
        return len(self.feature_names)

    def extract_from(
        self, context: TuneContext | None, candidates: list[MeasureCandidate]
    ) -> list[np.ndarray]:
        """One ``(stores, width)`` float32 matrix per candidate (``candidate.sch.mod``)."""
        mods = [candidate.sch.mod for candidate in candidates]
        options = (
            self.buf_cache_size,
            self.arith_intensity_curve_num_samples,
            self.cache_line_bytes,
        )
        jobs = self.n_jobs
        if jobs is None:
            jobs = getattr(context, "num_threads", 1) if context is not None else 1
        if jobs > 1 and len(mods) >= self.parallel_threshold:
            chunk = max(1, len(mods) // (4 * jobs))
            with ProcessPoolExecutor(jobs) as pool:
                work = [(mod, *options) for mod in mods]
                return list(pool.map(_extract_job, work, chunksize=chunk))
        return [per_store_features(mod, *options) for mod in mods]


def _extract_job(job: tuple[IRModule, int, int, int]) -> np.ndarray:
    return per_store_features(*job)


def per_store_features(
    mod: IRModule | PrimFunc,
    buf_cache_size: int = 5,
    arith_intensity_curve_num_samples: int = 10,
    cache_line_bytes: int = 64,
) -> np.ndarray:
    """The ``(stores, width)`` float32 feature matrix of a scheduled module or function.

    Example::

        >>> per_store_features(sch.mod).shape
        (3, 143)
    """
    funcs = [mod] if isinstance(mod, PrimFunc) else [f for _, f in mod.items()]
    names = feature_names(buf_cache_size, arith_intensity_curve_num_samples)
    rows: list[list[float]] = []
    for func in funcs:
        records = collect_stores(func)
        analysis = _FunctionAnalysis(records, cache_line_bytes)
        for store in records.stores:
            rows.append(analysis.row(store, buf_cache_size, arith_intensity_curve_num_samples))
    matrix = np.array(rows, dtype=np.float64).reshape(len(rows), len(names))
    magnitude = np.array([name.split(".")[-1] not in _FLAGS for name in names])
    matrix[:, magnitude] = np.log2(1.0 + np.maximum(matrix[:, magnitude], 0.0))
    return matrix.astype(np.float32)


def _prod(values: list[int] | tuple[int, ...]) -> int:
    return math.prod(values) if values else 1


class _FunctionAnalysis:
    """The per-function facts rows need: interval evaluator, allocation sizes, totals."""

    def __init__(self, records: FunctionRecords, line: int) -> None:
        self.records = records
        self.line = line
        self.ev = IntervalEvaluator(records.bindings)
        self.is_gpu = any(
            loop.kind is ForKind.THREAD_BINDING for s in records.stores for loop in s.loops
        )
        self.alloc: dict[Buffer, tuple[int, int]] = {}  # buffer -> (bytes, refills)
        for buffer in records.allocated:
            self.alloc[buffer] = self._allocation(buffer)
        self.scope_bytes = {"shared": 0, "local": 0}
        for buffer, (size, _) in self.alloc.items():
            scope = buffer.scope.split(".")[0]
            if scope in self.scope_bytes:
                self.scope_bytes[scope] += size
        self.total_flops = sum(
            _float_ops(s) * _prod([loop.extent for loop in s.loops]) for s in records.stores
        )

    def _allocation(self, buffer: Buffer) -> tuple[int, int]:
        sites = [(s, a) for s in self.records.stores for a in s.accesses if a.buffer is buffer]
        if not sites:
            return (_elements(buffer) * buffer.dtype.bytes, 1)
        common = list(sites[0][0].loops)
        for store, _ in sites[1:]:
            keep = 0
            while keep < min(len(common), len(store.loops)):
                if common[keep].var is not store.loops[keep].var:
                    break
                keep += 1
            del common[keep:]
        # The threads of a block share its shared memory (the region spans them); each
        # virtual thread keeps its own copy of a local buffer.
        shared = buffer.scope.startswith("shared")
        spread = ("threadIdx", "vthread") if shared else ("\0",)
        fixed = {loop.var for loop in common if not loop.thread_tag.startswith(spread)}
        virtual = [c.extent for c in common if c.thread_tag.startswith("vthread")]
        copies = 1 if shared else _prod(virtual)
        hull: list[Interval] | None = None
        for store, access in sites:
            ranges = {
                loop.var: (0, 0) if loop.var in fixed else (0, loop.extent - 1)
                for loop in store.loops
            }
            box = [self.ev.bounds(index, ranges) for index in access.indices]
            hull = box if hull is None else [_hull(a, b) for a, b in zip(hull, box)]
        size = _prod([hi - lo + 1 for lo, hi in hull or []]) * buffer.dtype.bytes * copies
        refills = _prod(
            [c.extent for c in common if c.var in fixed and not c.thread_tag.startswith("vthread")]
        )
        return (size, refills)

    def row(self, store: StoreRecord, num_buffers: int, num_samples: int) -> list[float]:
        loops = store.loops
        extents = [loop.extent for loop in loops]
        outer = _prod(extents)
        row: list[float] = [store.ops[f"float_{c}"] * outer for c in OP_CLASSES]
        row += [store.ops[f"int_{c}"] * outer for c in OP_CLASSES]
        row += [store.ops["bool_op"] * outer, store.ops["select_op"] * outer]
        for kind in (ForKind.VECTORIZED, ForKind.UNROLLED, ForKind.PARALLEL):
            chosen = [loop.extent for loop in loops if loop.kind is kind]
            row += [len(chosen), _prod(chosen) if chosen else 0, chosen[-1] if chosen else 0]
            if kind is ForKind.VECTORIZED:
                row.append(float(bool(loops) and loops[-1].kind is kind))
        row.append(float(self.is_gpu))
        for tag in THREAD_TAGS:
            bound = [loop.extent for loop in loops if loop.thread_tag.startswith(tag)]
            row.append(max(bound) if bound else 0)

        footprints = _Footprints(self.ev, store, self.line)
        buffers = footprints.buffer_features(outer)
        buffers.sort(key=lambda feats: -feats[3])
        for slot in range(num_buffers):
            row += buffers[slot] if slot < len(buffers) else [0.0] * len(_BUFFER)

        row += footprints.intensity_curve(_float_ops(store), num_samples)

        size, refills = self.alloc.get(store.store.buffer, (0, 0))
        row += [float(store.store.buffer in self.alloc), size, refills]
        row += [outer / refills if refills else 0, *self.scope_bytes.values()]

        step = explicit = 0
        for attrs in [loop.annotations for loop in loops] + [store.block_annotations]:
            step = max(step, _as_int(attrs.get("pragma_auto_unroll_max_step")))
            explicit = max(explicit, _as_int(attrs.get("pragma_unroll_explicit")))
        row += [outer, len(loops), step, float(explicit > 0), self.total_flops]
        return [float(x) for x in row]


def _as_int(value: object) -> int:
    value = getattr(value, "value", value)
    return int(value) if isinstance(value, int | float) else 0


def _float_ops(store: StoreRecord) -> int:
    return sum(store.ops[f"float_{c}"] for c in OP_CLASSES)


def _elements(buffer: Buffer) -> int:
    return _prod([_as_int(dim) for dim in buffer.shape])


def _hull(a: Interval, b: Interval) -> Interval:
    return (min(a[0], b[0]), max(a[1], b[1]))


class _Footprints:
    """Regions one store's accesses touch while the loops from a depth inward run."""

    def __init__(self, ev: IntervalEvaluator, store: StoreRecord, line: int) -> None:
        self.ev = ev
        self.store = store
        self.line = line
        self.loops = store.loops
        self.groups: dict[Buffer, list[Access]] = {}
        for access in store.accesses:
            self.groups.setdefault(access.buffer, []).append(access)
        self._cache: dict[tuple[Buffer, int], list[Interval]] = {}

    def box(self, buffer: Buffer, depth: int) -> list[Interval]:
        """Per dimension, the index range touched while the loops from ``depth`` inward
        run (outer loops at their first iteration)."""
        key = (buffer, depth)
        hit = self._cache.get(key)
        if hit is None:
            ranges = {
                loop.var: (0, 0) if n < depth else (0, loop.extent - 1)
                for n, loop in enumerate(self.loops)
            }
            hit = []
            for access in self.groups[buffer]:
                box = [self.ev.bounds(index, ranges) for index in access.indices]
                hit = box if not hit else [_hull(a, b) for a, b in zip(hit, box)]
            self._cache[key] = hit
        return hit

    def touched(self, buffer: Buffer, depth: int) -> tuple[int, int]:
        """(bytes, cache lines) of the region ``box(buffer, depth)``."""
        box = self.box(buffer, depth)
        elem = buffer.dtype.bytes
        if not box:
            return (elem, 1)
        extents = [hi - lo + 1 for lo, hi in box]
        rows = _prod(extents[:-1])
        return (rows * extents[-1] * elem, rows * -(-(extents[-1] * elem) // self.line))

    def stride(self, access: Access) -> tuple[int, int]:
        """(stride in elements, loop depth) of the innermost loop the access moves with."""
        shape = [_as_int(dim) for dim in access.buffer.shape]
        steps = [_prod(shape[d + 1 :]) for d in range(len(shape))]
        zero = {loop.var: (0, 0) for loop in self.loops}
        base = self._offset(access, zero, steps)
        for depth in range(len(self.loops) - 1, -1, -1):
            loop = self.loops[depth]
            if loop.extent <= 1:
                continue
            moved = dict(zero)
            moved[loop.var] = (1, 1)
            delta = abs(self._offset(access, moved, steps) - base)
            if delta:
                return (delta, depth)
        return (0, -1)

    def _offset(self, access: Access, ranges: dict[Var, Interval], steps: list[int]) -> int:
        return sum(self.ev.bounds(i, ranges)[0] * s for i, s in zip(access.indices, steps))

    def buffer_features(self, outer: int) -> list[list[float]]:
        loops = self.loops
        depth_all = len(loops)
        result = []
        for buffer, accesses in self.groups.items():
            writes = sum(a.is_write for a in accesses)
            reads = len(accesses) - writes
            elem = buffer.dtype.bytes
            total_bytes = outer * len(accesses) * elem
            unique_bytes, unique_lines = self.touched(buffer, 0)
            stride, depth = self.stride(accesses[-1])
            inner = _prod([loop.extent for loop in loops[depth + 1 :]]) if depth >= 0 else outer
            per_line = max(1, self.line // max(elem, stride * elem))
            lines = len(accesses) * (outer // max(inner, 1)) / (per_line if depth >= 0 else 1)
            used = self.ev.loop_vars
            deps = frozenset().union(*(used(i) for a in accesses for i in a.indices))
            reuse = [0.0, 0.0, 1.0, 0.0, 0.0, 0.0]
            for n in range(depth_all - 1, -1, -1):
                if loops[n].extent > 1 and loops[n].var not in deps:
                    dis_bytes = sum(self.touched(b, n + 1)[0] for b in self.groups)
                    iters = _prod([loop.extent for loop in loops[n + 1 :]])
                    reuse = [1.0, 0.0, 0.0, iters, dis_bytes, loops[n].extent]
                    break
            else:
                if reads > 1:
                    dis_bytes = sum(self.touched(b, depth_all)[0] for b in self.groups)
                    reuse = [0.0, 1.0, 0.0, 1, dis_bytes, reads]
            count = max(reuse[5], 1.0)
            access_type = [float(writes == 0), float(reads == 0), float(reads > 0 and writes > 0)]
            sizes = [total_bytes, unique_bytes, lines, unique_lines]
            result.append(
                access_type + sizes + reuse + [s / count for s in sizes] + [float(stride)]
            )
        return result

    def intensity_curve(self, float_ops: int, samples: int) -> list[float]:
        """Float operations per byte touched at each loop depth, sampled at ``samples``
        evenly spaced points of log2(work)."""
        if float_ops == 0 or samples == 0:
            return [0.0] * samples
        xs, ys = [], []
        for depth in range(len(self.loops), -1, -1):
            work = float_ops * _prod([loop.extent for loop in self.loops[depth:]])
            footprint = sum(self.touched(b, depth)[0] for b in self.groups)
            xs.append(math.log2(1 + work))
            ys.append(work / footprint if footprint else 0.0)
        points = np.linspace(xs[-1] / samples, xs[-1], samples)
        return [float(v) for v in np.interp(points, xs, ys)]
