"""Buffer-access signatures: ``unsafe_hide_buffer_access`` drops regions from a block's
``T.reads``/``T.writes``; ``annotate_buffer_access`` replaces one region by a given box and
marks the block so that the box is kept (``explicit_read_region``/``explicit_write_region``).

Both change only what the block declares, never what it computes: they tell the analyses a
block accesses less (hidden) or another region (annotated) than its body does, which is the
caller's responsibility to make true (TVM's primitives of the same names).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from tilewright.arith.analyzer import Analyzer
from tilewright.ir import op
from tilewright.ir.buffer import BufferRegion
from tilewright.ir.dtype import int32
from tilewright.ir.expr import IntImm, PrimExpr, Range, Var
from tilewright.ir.function import PrimFunc
from tilewright.ir.functor import substitute
from tilewright.ir.stmt import attrs
from tilewright.schedule.error import ScheduleError, register_rules
from tilewright.schedule.index_map import IndexMap
from tilewright.schedule.primitives.caching import _buffer
from tilewright.schedule.tree import Site, update

register_rules(
    {
        "buffer-type": 'a buffer type is "read" or "write"',
        "access-region": (
            "annotate_buffer_access gives one (start, stop) pair (or one index) per dimension "
            "of the buffer, as integer expressions of the block's iterators"
        ),
    }
)

EXPLICIT_KEYS = {"read": "explicit_read_region", "write": "explicit_write_region"}


def check_buffer_type(primitive: str, value: object) -> str:
    """``"read"`` or ``"write"`` (TVM also accepts ``0``/``1``, its ``BufferIndexType``)."""
    if value in ("read", 0):
        return "read"
    if value in ("write", 1):
        return "write"
    raise ScheduleError(primitive, "buffer-type", f'buf_type {value!r} is not "read" or "write"')


def unsafe_hide_buffer_access(site: Site, buf_type: str, indices: Sequence[int]) -> PrimFunc:
    """The block without its ``indices``-th read (``buf_type="read"``) or write regions.

    Example::

        sch.unsafe_hide_buffer_access(block_C, "read", [1])
        # T.reads(A[vi, vk], B[vk, vj]) -> T.reads(A[vi, vk])
    """
    block = site.block
    regions = block.reads if buf_type == "read" else block.writes
    for index in indices:
        _buffer("unsafe_hide_buffer_access", site, regions, index, f"{buf_type}s")
    hidden = set(indices)
    kept = tuple(r for k, r in enumerate(regions) if k not in hidden)
    new = update(block, reads=kept) if buf_type == "read" else update(block, writes=kept)
    return site.replaced(new)


def access_map(
    primitive: str, site: Site, value: IndexMap | str | Callable[..., object], ndim: int
) -> IndexMap:
    """The map from the block's iterators to ``[start0, stop0, start1, stop1, ...]``: from an
    ``IndexMap`` (its text) giving that list, or a function returning one pair (or one index)
    per dimension."""
    block = site.block
    if isinstance(value, str):
        value = IndexMap.parse(value)
    if isinstance(value, IndexMap):
        if len(value.initial_indices) != len(block.iter_vars):
            raise _region_error(
                site, f"map {value} takes {len(value.initial_indices)} iterators, not "
                f"{len(block.iter_vars)}"
            )  # fmt: skip
        items: Sequence[object] = value.final_indices
        variables = list(value.initial_indices)
    elif callable(value):
        variables = [Var(iv.var.name, iv.var.dtype) for iv in block.iter_vars]
        try:
            result = value(*variables)
        except TypeError as err:
            raise _region_error(
                site, f"gen_new_ranges cannot be called on the iterators: {err}"
            ) from None
        items = result if isinstance(result, list | tuple) else [result]
    else:
        raise ScheduleError(primitive, "argument", f"gen_new_ranges {value!r} is not callable")
    flat: list[PrimExpr] = []
    if len(items) == ndim and not all(isinstance(x, PrimExpr | int) for x in items):
        for item in items:
            pair = item if isinstance(item, list | tuple) else (item, op.add(_int(item), 1))
            if len(pair) != 2:
                raise _region_error(site, f"range {item!r} is not a (start, stop) pair")
            flat += [_int(pair[0]), _int(pair[1])]
    elif len(items) == 2 * ndim:
        flat = [_int(x) for x in items]
    elif len(items) == ndim:
        for x in items:
            flat += [_int(x), op.add(_int(x), 1)]
    else:
        raise _region_error(
            site, f"gen_new_ranges gives {len(items)} items for a buffer of {ndim} dimensions"
        )
    return IndexMap(variables, flat)


def _int(value: object) -> PrimExpr:
    if isinstance(value, bool) or not isinstance(value, int | PrimExpr):
        raise TypeError(f"{value!r} is not an integer expression")
    return op.convert(value, int32) if isinstance(value, int) else value


def _region_error(site: Site, detail: str) -> ScheduleError:
    return ScheduleError(
        "annotate_buffer_access",
        "access-region",
        f"block {site.block.name!r}: {detail}",
        site.func,
        site.block,
    )


def annotate_buffer_access(site: Site, index: int, buf_type: str, ranges: IndexMap) -> PrimFunc:
    """The block declaring the box ``ranges`` gives for its ``index``-th read (or write)
    region, and annotated so that region analyses keep it.

    Example::

        sch.annotate_buffer_access(B, 0, "read", lambda vi, vj: ((vi - 1, vi + 1), (vj, vj + 1)))
        # T.reads(A[vi - 1:vi + 1, vj]); T.block_attr({"explicit_read_region": [0]})
    """
    block = site.block
    regions = block.reads if buf_type == "read" else block.writes
    buffer = _buffer("annotate_buffer_access", site, regions, index, f"{buf_type}s")
    table = {v: iv.var for v, iv in zip(ranges.initial_indices, block.iter_vars)}
    bounds = [substitute(e, table) for e in ranges.final_indices]
    analyzer = Analyzer()
    new_ranges = []
    for start, stop in zip(bounds[::2], bounds[1::2]):
        extent = analyzer.simplify(op.sub(stop, start))
        if isinstance(extent, IntImm) and extent.value <= 0:
            raise _region_error(site, f"the range [{start}, {stop}) of {buffer.name!r} is empty")
        new_ranges.append(Range(start, extent))
    if len(new_ranges) != len(buffer.shape):
        raise _region_error(
            site, f"{len(new_ranges)} ranges for buffer {buffer.name!r} of {buffer.ndim} dims"
        )
    region = BufferRegion(buffer, tuple(new_ranges))
    items = tuple(region if k == index else r for k, r in enumerate(regions))
    key = EXPLICIT_KEYS[buf_type]
    merged = dict(block.annotations)
    marked = merged.get(key, ())
    listed = [int(x) for x in marked] if isinstance(marked, tuple) else []
    merged[key] = tuple(sorted({*listed, index}))
    changes = {"reads" if buf_type == "read" else "writes": items, "annotations": attrs(merged)}
    return site.replaced(update(block, **changes))
