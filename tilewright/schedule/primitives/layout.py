"""Layout: ``transform_layout`` stores a buffer of the function in a new layout.

Every access ``B[i, k]`` becomes ``B[f(i, k)]`` and the buffer's shape the box the images of
the old one span, for an index map ``f`` that is one to one on the old shape: permutations,
splits and fusions of the dimensions (checked with the affine iterator maps), maps no affine
analysis reads such as XOR swizzles (proved by evaluation, ``layout_swizzle``), and splits
that leave padding (``layout_padding``: the producer writes ``pad_value`` there). What the
function computes does not change; where each element lives does. A parameter buffer changes
its shape in the signature: the caller passes arrays in the new layout.
"""

from __future__ import annotations

from tilewright.arith.analyzer import Analyzer
from tilewright.arith.int_set import eval_set
from tilewright.arith.iter_map import detect_iter_map
from tilewright.ir import op
from tilewright.ir.buffer import Buffer, BufferRegion
from tilewright.ir.dtype import DataType, int32
from tilewright.ir.expr import BufferLoad, IntImm, PrimExpr, Range, Var
from tilewright.ir.function import PrimFunc
from tilewright.ir.functor import Mutator
from tilewright.ir.stmt import Block, BufferStore
from tilewright.schedule.dataflow import param_buffers
from tilewright.schedule.error import ScheduleError, register_rules
from tilewright.schedule.index_map import IndexMap
from tilewright.schedule.primitives import layout_padding, layout_symbolic
from tilewright.schedule.primitives.caching import _buffer
from tilewright.schedule.primitives.layout_padding import Padding, PadValue
from tilewright.schedule.primitives.layout_swizzle import (
    MAX_POINTS,
    Unprovable,
    enumerate_images,
    image_bounds,
)
from tilewright.schedule.tree import Site, walk

register_rules(
    {
        "index-map": (
            "the index map takes one index per dimension of the buffer (without explicit "
            "strides) and maps it one to one into a box counted from 0; over a symbolic shape, "
            "an affine map the iterator maps prove, or any map with "
            "assume_injective_transform=True"
        ),
        "match-buffer": "no block views the buffer (or is the buffer) through match_buffer",
        "injective-map": (
            f"an index map that is not affine (an XOR swizzle) is proved one to one by "
            f"evaluating it on the buffer's box, of at most {MAX_POINTS} elements; "
            "assume_injective_transform=True skips the proof"
        ),
    }
)


def transform_layout(
    site: Site,
    kind: str,
    index: int,
    index_map: IndexMap,
    pad_value: PadValue = None,
    assume_injective: bool = False,
) -> PrimFunc:
    """Store the block's ``index``-th read (``kind="read"``) or written buffer in the layout
    ``index_map`` gives; ``pad_value`` fills the padding a non-dividing split leaves.

    Example::

        sch.transform_layout(A_shared, ("write", 0), lambda i, k: (k, i))
        # A_shared: (128, 16) -> (16, 128); A_shared[v0, v1] -> A_shared[v1, v0]
        sch.transform_layout(B, ("write", 0), lambda i: (i // 4, i % 4), pad_value=0)
        # B: (14,) -> (4, 4); its producer stores 0 where 14 <= v0 * 4 + v1
    """
    block = site.node
    assert isinstance(block, Block)
    regions = block.reads if kind == "read" else block.writes
    buffer = _buffer("transform_layout", site, regions, index, f"{kind}s")
    is_param = buffer in param_buffers(site.func)
    shape, padding = _new_shape(site, buffer, index_map, assume_injective)
    if padding is not None and pad_value is None and assume_injective:
        # Implicit padding: the holes of the new box stay unwritten; no access reaches them.
        padding = None
    if padding is not None and pad_value is None:
        raise ScheduleError(
            "transform_layout",
            "pad-value",
            f"index map {index_map} stores buffer {buffer.name!r} of shape "
            f"{tuple(int(e) for e in buffer.shape)} in the box {tuple(shape)}, with padding: "
            "give pad_value (or assume_injective_transform=True to leave it unwritten)",
            site.func,
            block,
        )
    _refuse_views(site, buffer)
    dtype = index_dtype(buffer)
    new = buffer.replace(shape=tuple(IntImm(s, dtype) if isinstance(s, int) else s for s in shape))
    body = _Relayout(buffer, new, index_map).visit(site.func.body)
    func = site.func.with_body(body)
    if is_param:
        func = func.replace(
            buffer_map=tuple((v, new if b is buffer else b) for v, b in func.buffer_map)
        )
    if padding is not None:
        func = layout_padding.write_padding(site.func, func, buffer, new, padding, pad_value)
    return func


def index_dtype(buffer: Buffer) -> DataType:
    """The dtype of ``buffer``'s indices (its shape's; ``int32`` for a scalar buffer), which an
    index map for it takes: ``T.Buffer((T.int64(58),))`` gives ``int64``."""
    return buffer.shape[0].dtype if buffer.shape else int32


def buffer_spec(site: Site, buffer: object) -> tuple[str, int]:
    """``("read" | "write", index)`` of ``buffer`` among the block's regions: given as such a
    pair (a list from a JSON trace too), as the buffer's name, or as the ``Buffer``."""
    block = site.node
    assert isinstance(block, Block)
    if isinstance(buffer, tuple | list) and len(buffer) == 2 and buffer[0] in ("read", "write"):
        kind, index = str(buffer[0]), buffer[1]
        regions = block.reads if kind == "read" else block.writes
        _buffer("transform_layout", site, regions, index, f"{kind}s")  # checks the index
        return kind, int(index)
    found = [
        (kind, k)
        for kind, regions in (("read", block.reads), ("write", block.writes))
        for k, region in enumerate(regions)
        if region.buffer is buffer or region.buffer.name == buffer
    ]
    buffers = {_region(block, kind, k).buffer for kind, k in found}
    if not found or len(buffers) > 1:
        what = "no" if not found else "more than one"
        raise ScheduleError(
            "transform_layout",
            "buffer",
            f"block {block.name!r} accesses {what} buffer {_label(buffer)}; give "
            '("read", i) or ("write", i)',
            site.func,
            block,
        )
    writes = [f for f in found if f[0] == "write"]
    return (writes or found)[0]


def _region(block: Block, kind: str, index: int) -> BufferRegion:
    return (block.reads if kind == "read" else block.writes)[index]


def _label(buffer: object) -> str:
    return repr(buffer.name) if isinstance(buffer, Buffer) else repr(buffer)


def _fail(site: Site, message: str) -> ScheduleError:
    return ScheduleError("transform_layout", "index-map", message, site.func, site.node)


def _new_shape(
    site: Site, buffer: Buffer, index_map: IndexMap, assume_injective: bool
) -> tuple[list[int] | list[PrimExpr], Padding | None]:
    """The box ``index_map`` maps ``buffer``'s shape into, one to one, and its padding."""
    if buffer.strides:
        raise _fail(site, f"buffer {buffer.name!r} has explicit strides")
    if len(index_map.initial_indices) != len(buffer.shape):
        raise _fail(
            site,
            f"index map {index_map} takes {len(index_map.initial_indices)} indices; buffer "
            f"{buffer.name!r} has {len(buffer.shape)} dimensions",
        )
    if not all(isinstance(extent, IntImm) for extent in buffer.shape):
        return layout_symbolic.symbolic_shape(site, buffer, index_map, assume_injective), None
    dims = [e.value for e in buffer.shape if isinstance(e, IntImm)]
    variables = index_map.initial_indices
    dtype = index_dtype(buffer)
    dom = {v: Range(IntImm(0, dtype), IntImm(e, dtype)) for v, e in zip(variables, dims)}
    result = detect_iter_map(index_map.final_indices, dom, check_level="bijective")
    if result:
        shape: list[int] = []
        for expr, total in zip(index_map.final_indices, result.indices):
            size = _const(total.args[0].extent) if len(total.args) == 1 else None
            if size is None or total.args[0].scale != 1 or _const(total.base) != 0:
                raise _fail(
                    site, f"index map {index_map}: {expr} is not one dimension counted from 0"
                )
            shape.append(size)
        return shape, None
    padded = layout_padding.padding_of(index_map, dims)
    if padded is not None:
        return padded
    return _evaluated_shape(site, buffer, index_map, dims, assume_injective), None


def _evaluated_shape(
    site: Site, buffer: Buffer, index_map: IndexMap, dims: list[int], assume_injective: bool
) -> list[int]:
    """The box of a map the iterator maps cannot read, proved one to one by evaluation."""
    try:
        images = enumerate_images(index_map, dims, check=not assume_injective)
    except Unprovable as err:
        if not assume_injective:
            raise ScheduleError(
                "transform_layout",
                "injective-map",
                f"index map {index_map} is not affine and cannot be proved one to one on "
                f"buffer {buffer.name!r} of shape {tuple(dims)}: {err}",
                site.func,
                site.node,
            ) from None
        bounds = image_bounds(index_map, dims)
        if bounds is None:
            raise _fail(
                site, f"index map {index_map}: the box of its images cannot be bounded"
            ) from None
        lowest, shape = bounds
        images = None
    if images is not None:
        lowest, shape = list(images.lowest), list(images.shape)
    if images is not None and images.collision is not None:
        a, b, image = images.collision
        raise _fail(
            site,
            f"index map {index_map} does not re-tile the shape {tuple(dims)} of buffer "
            f"{buffer.name!r} one to one: {a} and {b} both map to {image}",
        )
    for expr, low in zip(index_map.final_indices, lowest):
        if low != 0:
            raise _fail(site, f"index map {index_map}: {expr} is not one dimension counted from 0")
    if images is not None and not images.fills and not assume_injective:
        raise ScheduleError(
            "transform_layout",
            "pad-value",
            f"index map {index_map} leaves holes in the box {tuple(shape)} it maps buffer "
            f"{buffer.name!r} into; padding is supported for splits of dimensions by "
            "constants only (an affine map, inverted on the box padded to their multiples)",
            site.func,
            site.node,
        )
    return shape


def _const(value: object) -> int | None:
    if isinstance(value, int):
        return value
    return value.value if isinstance(value, IntImm) else None


def _refuse_views(site: Site, buffer: Buffer) -> None:
    for path in walk(site.func.body):
        node = path[-1]
        if not isinstance(node, Block):
            continue
        if any(m.buffer is buffer for m in node.match_buffers):
            raise ScheduleError(
                "transform_layout",
                "match-buffer",
                f"buffer {buffer.name!r} is a view (match_buffer of block {node.name!r}); "
                "transform the buffer it views",
                site.func,
                node,
            )
        if any(m.source.buffer is buffer for m in node.match_buffers):
            raise ScheduleError(
                "transform_layout",
                "match-buffer",
                f"block {node.name!r} views buffer {buffer.name!r} through match_buffer; its "
                "layout cannot change under the view",
                site.func,
                node,
            )


class _Relayout(Mutator):
    """Points every access of ``old`` at ``new`` through ``index_map``."""

    def __init__(self, old: Buffer, new: Buffer, index_map: IndexMap) -> None:
        super().__init__()
        self.old = old
        self.new = new
        self.index_map = index_map
        self.analyzer = Analyzer()
        self.buffer_map[old] = new

    def _indices(self, indices: tuple[PrimExpr, ...]) -> tuple[PrimExpr, ...]:
        mapped = self.index_map.map_indices(self.visit(indices))
        return tuple(self.analyzer.simplify(e) for e in mapped)

    def visit_BufferLoad(self, node: BufferLoad) -> PrimExpr:
        if node.buffer is not self.old:
            return self.generic_visit(node)
        return BufferLoad(self.new, self._indices(node.indices))

    def visit_BufferStore(self, node: BufferStore) -> BufferStore:
        if node.buffer is not self.old:
            return self.generic_visit(node)
        value = self.visit(node.value)
        return node.replace(buffer=self.new, value=value, indices=self._indices(node.indices))

    def visit_BufferRegion(self, node: BufferRegion) -> BufferRegion:
        if node.buffer is not self.old:
            return self.generic_visit(node)
        region = self.visit(node.region)
        if all(isinstance(r.extent, IntImm) and r.extent.value == 1 for r in region):
            points = self._indices(tuple(r.min for r in region))
            return BufferRegion(self.new, tuple(Range(p, IntImm(1, p.dtype)) for p in points))
        # A box: the bounds of each new index over it.
        offsets = [Var(f"r{k}", r.extent.dtype) for k, r in enumerate(region)]
        dom = {v: Range(IntImm(0, r.extent.dtype), r.extent) for v, r in zip(offsets, region)}
        moved = self.index_map.map_indices([op.add(r.min, v) for r, v in zip(region, offsets)])
        ranges = []
        for expr, size in zip(moved, self.new.shape):
            bounds = eval_set(self.analyzer.simplify(expr), dom, self.analyzer)
            low, high = bounds.min_value, bounds.max_value
            if low is not None and high is not None:
                extent = self.analyzer.simplify(op.add(op.sub(high, low), 1))
                if isinstance(extent, IntImm) and not _covers(extent, size):
                    ranges.append(Range(self.analyzer.simplify(low), extent))
                    continue
            # Unbounded, or bounded only symbolically (an XOR of a box): the whole dimension.
            ranges.append(Range(IntImm(0, size.dtype), size))
        return BufferRegion(self.new, tuple(ranges))


def _covers(extent: IntImm, size: PrimExpr) -> bool:
    return isinstance(size, IntImm) and extent.value >= size.value
