"""Block access regions: a ``Block`` to the buffer regions it reads and writes.

Used by the parser when a block omits ``T.reads``/``T.writes``. Every index is put in a
linear form (``sum(coef * atom) + const``); loops inside the block are relaxed over their
constant ranges; the accesses of one buffer are united per dimension when their symbolic
parts agree (``A[vi]``, ``A[vi + 2]`` give ``A[vi : vi + 3]``) and widen to the whole
dimension otherwise.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from tilewright.ir import op
from tilewright.ir.buffer import Buffer, BufferRegion
from tilewright.ir.dtype import DataType, int32
from tilewright.ir.expr import (
    Add,
    BufferLoad,
    Call,
    FloorDiv,
    FloorMod,
    IntImm,
    Max,
    Min,
    Mul,
    PrimExpr,
    Ramp,
    Range,
    Sub,
    Var,
)
from tilewright.ir.functor import Visitor, collect_vars, substitute
from tilewright.ir.stmt import Block, BlockRealize, BufferStore, For, LetStmt
from tilewright.ir.structural import structural_hash

Bounds = dict[Var, tuple[int, int] | None]


@dataclass(frozen=True)
class Linear:
    """``sum(coef * atom) + const``; ``terms`` maps an atom key to (atom, coef)."""

    terms: tuple[tuple[tuple[str, int], PrimExpr, int], ...]
    const: int

    def key(self) -> tuple[tuple[tuple[str, int], int], ...]:
        """The symbolic part, for comparing two forms up to their constants."""
        return tuple(sorted((k, c) for k, _, c in self.terms))

    def plus(self, other: Linear, scale: int = 1) -> Linear:
        merged: dict[tuple[str, int], list] = {k: [a, c] for k, a, c in self.terms}
        for k, a, c in other.terms:
            entry = merged.setdefault(k, [a, 0])
            entry[1] += scale * c
        terms = tuple((k, a, c) for k, (a, c) in merged.items() if c != 0)
        return Linear(terms, self.const + scale * other.const)

    def times(self, factor: int) -> Linear:
        if factor == 0:
            return Linear((), 0)
        return Linear(tuple((k, a, c * factor) for k, a, c in self.terms), self.const * factor)

    def to_expr(self, dtype: DataType) -> PrimExpr:
        result: PrimExpr | None = None
        for _, atom, coef in self.terms:
            term = atom if coef == 1 else op.mul(atom, abs(coef))
            if result is None:
                result = term if coef > 0 else op.sub(IntImm(0, dtype), term)
            else:
                result = op.add(result, term) if coef > 0 else op.sub(result, term)
        if result is None:
            return IntImm(self.const, dtype)
        if self.const > 0:
            return op.add(result, self.const)
        if self.const < 0:
            return op.sub(result, -self.const)
        return result


def _atom(expr: PrimExpr) -> Linear:
    key = ("var", id(expr)) if isinstance(expr, Var) else ("expr", structural_hash(expr))
    return Linear(((key, expr, 1),), 0)


def linearize(expr: PrimExpr) -> Linear:
    """``expr`` as a linear form; non-linear parts become atoms."""
    if isinstance(expr, IntImm):
        return Linear((), expr.value)
    if isinstance(expr, Add):
        return linearize(expr.a).plus(linearize(expr.b))
    if isinstance(expr, Sub):
        return linearize(expr.a).plus(linearize(expr.b), -1)
    if isinstance(expr, Mul):
        if isinstance(expr.b, IntImm):
            return linearize(expr.a).times(expr.b.value)
        if isinstance(expr.a, IntImm):
            return linearize(expr.b).times(expr.a.value)
    return _atom(expr)


_BIT_OPS = ("bitwise_and", "bitwise_or", "bitwise_xor", "shift_left", "shift_right")


def const_bounds(
    expr: PrimExpr, bounds: Mapping[Var, tuple[int, int] | None]
) -> tuple[int, int] | None:
    """Constant ``(min, max)`` of an integer expression whose variables all have bounds
    (``+ - * // % min max``, and the bit operations of non-negative values)."""
    if isinstance(expr, IntImm):
        return expr.value, expr.value
    if isinstance(expr, Var):
        return bounds.get(expr)
    if isinstance(expr, Call) and expr.op.removeprefix("tir.") in _BIT_OPS and len(expr.args) == 2:
        name = expr.op.removeprefix("tir.")
        a, b = (const_bounds(x, bounds) for x in expr.args)
        if a is None or b is None or a[0] < 0 or b[0] < 0:
            return None
        if name == "bitwise_and":
            return 0, min(a[1], b[1])
        if name in ("bitwise_xor", "bitwise_or"):
            return 0, (1 << max(a[1], b[1]).bit_length()) - 1
        if name == "shift_left":
            return a[0] << b[0], a[1] << b[1]
        return a[0] >> b[1], a[1] >> b[0]
    if isinstance(expr, Add | Sub | Mul | Min | Max | FloorDiv | FloorMod):
        a, b = const_bounds(expr.a, bounds), const_bounds(expr.b, bounds)
        if a is None or b is None:
            return None
        if isinstance(expr, Add):
            return a[0] + b[0], a[1] + b[1]
        if isinstance(expr, Sub):
            return a[0] - b[1], a[1] - b[0]
        if isinstance(expr, Min):
            return min(a[0], b[0]), min(a[1], b[1])
        if isinstance(expr, Max):
            return max(a[0], b[0]), max(a[1], b[1])
        if isinstance(expr, Mul):
            products = [x * y for x in a for y in b]
            return min(products), max(products)
        if b[0] != b[1] or b[0] <= 0:
            return None
        if isinstance(expr, FloorDiv):
            return a[0] // b[0], a[1] // b[0]
        if a[1] - a[0] + 1 >= b[0] or a[0] % b[0] > a[1] % b[0]:
            return 0, b[0] - 1
        return a[0] % b[0], a[1] % b[0]
    return None


@dataclass(frozen=True)
class _Interval:
    """One dimension of one access: ``[low, high]`` (inclusive) and, when the access is a
    single unrelaxed index, that index as written."""

    low: Linear
    high: Linear
    written: PrimExpr | None


def _relax(form: Linear, bounds: Bounds, upper: bool) -> Linear | None:
    """Replace every relaxed variable by the bound that minimizes (or maximizes) ``form``."""
    result = Linear((), form.const)
    for key, atom, coef in form.terms:
        names = [v for v in collect_vars(atom) if v in bounds]
        if not names:
            result = result.plus(Linear(((key, atom, coef),), 0))
            continue
        span = const_bounds(atom, bounds)
        if span is None:
            return None
        pick = span[1] if (coef > 0) == upper else span[0]
        result = result.plus(Linear((), coef * pick))
    return result


def _interval(index: PrimExpr, bounds: Bounds) -> _Interval | None:
    if isinstance(index, Ramp):
        if not isinstance(index.stride, IntImm) or index.stride.value < 0:
            return None
        base = _interval(index.base, bounds)
        if base is None:
            return None
        last = Linear((), index.stride.value * (index.lanes - 1))
        return _Interval(base.low, base.high.plus(last), None)
    form = linearize(index)
    if not any(v in bounds for v in collect_vars(index)):
        return _Interval(form, form, index)
    low, high = _relax(form, bounds, upper=False), _relax(form, bounds, upper=True)
    if low is None or high is None:
        return None
    return _Interval(low, high, None)


class _Accesses(Visitor):
    """Collects, in order of first access, the intervals each buffer is read and written at."""

    def __init__(
        self,
        excluded: set[Buffer],
        matched: Mapping[Buffer, BufferRegion] | None = None,
        by_data: Mapping[Var, Buffer] | None = None,
    ) -> None:
        self.excluded = excluded
        self.matched = dict(matched or {})
        self.by_data = dict(by_data or {})
        self.bounds: Bounds = {}
        self.lets: dict[Var, PrimExpr] = {}
        self.reads: dict[Buffer, list[list[_Interval | None]]] = {}
        self.writes: dict[Buffer, list[list[_Interval | None]]] = {}

    def record(self, table: dict, buffer: Buffer, indices: tuple[PrimExpr, ...]) -> None:
        if buffer in self.matched:
            # As in TVM: an access through a match_buffer is an access to its whole source.
            self.record_region(table, self.matched[buffer])
            return
        if buffer in self.excluded:
            return
        if self.lets:
            indices = tuple(substitute(i, self.lets) for i in indices)
        table.setdefault(buffer, []).append([_interval(i, self.bounds) for i in indices])

    def record_region(self, table: dict, region: BufferRegion) -> None:
        if region.buffer in self.excluded:
            return
        dims: list[_Interval | None] = []
        for rng in region.region:
            low = _interval(rng.min, self.bounds)
            if low is None or not isinstance(rng.extent, IntImm):
                dims.append(None)
                continue
            high = low.high.plus(Linear((), rng.extent.value - 1))
            written = low.written if rng.extent.value == 1 else None
            dims.append(_Interval(low.low, high, written))
        table.setdefault(region.buffer, []).append(dims)

    def visit_BufferLoad(self, node: BufferLoad) -> None:
        self.generic_visit(node)
        self.record(self.reads, node.buffer, node.indices)

    def visit_Call(self, node: Call) -> None:
        # ``T.tvm_access_ptr(type, data, offset, extent, mask)``: as in TVM, the whole buffer,
        # read (mask bit 1), written (bit 2) or both.
        buffer = None
        if node.op == "tvm_access_ptr" and len(node.args) in (4, 5):  # the type may be kept
            data, mask = node.args[-4], node.args[-1]
            if isinstance(data, Var) and isinstance(mask, IntImm):
                buffer = self.by_data.get(data)
        if buffer is None:
            self.generic_visit(node)
            return
        self.visit(node.args[-3:-1])
        whole = BufferRegion(buffer, tuple(Range(IntImm(0, s.dtype), s) for s in buffer.shape))
        mask = node.args[-1]
        assert isinstance(mask, IntImm)
        if mask.value & 1:
            self.record_region(self.reads, whole)
        if mask.value & 2:
            self.record_region(self.writes, whole)

    def visit_BufferStore(self, node: BufferStore) -> None:
        self.visit(node.value)
        self.visit(node.indices)
        self.record(self.writes, node.buffer, node.indices)

    def visit_For(self, node: For) -> None:
        self.visit(node.min)
        self.visit(node.extent)
        if isinstance(node.min, IntImm) and isinstance(node.extent, IntImm):
            low = node.min.value
            self.bounds[node.loop_var] = (low, low + node.extent.value - 1)
        else:
            # A loop of unknown range: any index using it covers the whole dimension.
            self.bounds[node.loop_var] = None
        self.visit(node.body)
        self.bounds.pop(node.loop_var, None)

    def visit_LetStmt(self, node: LetStmt) -> None:
        self.visit(node.value)
        self.lets[node.var] = node.value
        self.visit(node.body)
        self.lets.pop(node.var, None)

    def visit_BlockRealize(self, node: BlockRealize) -> None:
        self.visit(node.iter_values)
        self.visit(node.predicate)
        inner = node.block
        binding = {iv.var: value for iv, value in zip(inner.iter_vars, node.iter_values)}
        for region in inner.reads:
            self.record_region(self.reads, substitute(region, binding))
        for region in inner.writes:
            self.record_region(self.writes, substitute(region, binding))


def _union(buffer: Buffer, accesses: list[list[_Interval | None]]) -> BufferRegion:
    ranges = []
    for dim, extent in enumerate(buffer.shape):
        items = [access[dim] if dim < len(access) else None for access in accesses]
        ranges.append(_dimension(items, extent))
    return BufferRegion(buffer, tuple(ranges))


def _dimension(items: list[_Interval | None], extent: PrimExpr) -> Range:
    whole = Range(IntImm(0, extent.dtype), extent)
    present = [item for item in items if item is not None]
    if len(present) != len(items):
        return whole
    first = present[0]
    key = first.low.key()
    if any(item.low.key() != key or item.high.key() != key for item in present):
        return whole
    low = min(item.low.const for item in present)
    high = max(item.high.const for item in present)
    start = next((i.written for i in present if i.written is not None and i.low.const == low), None)
    dtype = start.dtype if start is not None else _index_dtype(items)
    if start is None:
        start = Linear(first.low.terms, low).to_expr(dtype)
    return Range(start, IntImm(high - low + 1, dtype))


def _index_dtype(items: list[_Interval | None]) -> DataType:
    for item in items:
        if item is not None:
            for _, atom, _ in item.low.terms:
                return atom.dtype
    return int32


def block_access_regions(
    block: Block, buffers: Mapping[Var, Buffer] | None = None
) -> tuple[tuple[BufferRegion, ...], tuple[BufferRegion, ...]]:
    """The regions ``block`` reads and writes, one per buffer in order of first access.

    Loops inside the block are relaxed over their ranges, nested blocks contribute their
    declared regions (with their bindings substituted), and buffers the block allocates
    are left out. A buffer both read and written appears in both tuples, except the output of
    a block with an init (a reduction), which is listed among the writes only. As in TVM, an
    access through one of the block's ``match_buffer`` s is one to its whole source region,
    and ``T.tvm_access_ptr`` on the data of a buffer of ``buffers`` (data variable to
    buffer; the buffers the block reaches are always known) covers the whole buffer.

    Example::

        >>> # with T.block("C"): vi = T.axis.remap("S", [i]); B[vi] = A[vi] + A[vi + 2]
        >>> reads, writes = block_access_regions(block)
        >>> reads   # (A[vi : vi + 3],)
    """
    matched = {m.buffer: m.source for m in block.match_buffers}
    known = dict(buffers or {})
    for m in block.match_buffers:
        known.setdefault(m.source.buffer.data, m.source.buffer)
    walk = _Accesses(set(block.alloc_buffers), matched, known)
    if block.init is not None:
        walk.visit(block.init)
    walk.visit(block.body)
    # A reduction block (one with an init) reads its output only to accumulate into it; as
    # in TVM, the output is listed among the writes alone.
    reduced = set(walk.writes) if block.init is not None else set()
    reads = tuple(_union(buf, acc) for buf, acc in walk.reads.items() if buf not in reduced)
    writes = tuple(_union(buf, acc) for buf, acc in walk.writes.items())
    return _explicit(block, "read", reads), _explicit(block, "write", writes)


def _explicit(
    block: Block, kind: str, inferred: tuple[BufferRegion, ...]
) -> tuple[BufferRegion, ...]:
    """``inferred`` with the regions that ``annotate_buffer_access`` declared (the block's
    ``explicit_<kind>_region`` annotation lists their indices) kept as declared."""
    marked = dict(block.annotations).get(f"explicit_{kind}_region")
    declared = block.reads if kind == "read" else block.writes
    if not isinstance(marked, tuple):
        return inferred
    kept = {
        declared[k].buffer: declared[k]
        for k in marked
        if isinstance(k, int) and 0 <= k < len(declared)
    }
    return tuple(kept.get(r.buffer, r) for r in inferred)
