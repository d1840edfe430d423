"""Padding layouts: an index map whose images leave holes in the new box, the value the holes
hold (``pad_value``) and the statement that writes it.

``lambda i: (i // 4, i % 4)`` stores 14 elements in a (4, 4) buffer: elements (3, 2) and
(3, 3) are padding. As in TVM, a padding layout needs ``pad_value`` (a constant of the
buffer's dtype, or a function of the new indices), and the producer writes it: a producer that
visits the buffer in row-major order and does nothing else iterates over the new box instead
and stores ``T.if_then_else(<padding>, pad_value, value)``; any other writer is followed by a
block ``<buffer>_padding`` storing the pad value under ``T.where(<padding>)``. The padding of
a parameter nothing in the function writes is the caller's to fill.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from tilewright.arith.analyzer import Analyzer
from tilewright.arith.iter_map import detect_iter_map
from tilewright.arith.region import block_access_regions
from tilewright.ir import op
from tilewright.ir.buffer import Buffer
from tilewright.ir.dtype import bool_, int32
from tilewright.ir.expr import (
    Add,
    FloatImm,
    FloorDiv,
    FloorMod,
    IntImm,
    Mul,
    PrimExpr,
    Range,
    Var,
)
from tilewright.ir.function import PrimFunc
from tilewright.ir.functor import collect_vars, post_order_visit, substitute
from tilewright.ir.stmt import (
    Block,
    BlockRealize,
    BufferStore,
    For,
    ForKind,
    IterKind,
    IterVar,
    SeqStmt,
    Stmt,
)
from tilewright.schedule.error import ScheduleError, register_rules
from tilewright.schedule.index_map import IndexMap, as_index_map
from tilewright.schedule.primitives.block_layout import _inverse
from tilewright.schedule.tree import Path, rebuild, update, walk

register_rules(
    {
        "pad-value": (
            "a layout that leaves padding in the new buffer needs pad_value: a constant of the "
            "buffer's dtype or an integer function of the new indices that reads no buffer; "
            "the index map must then be affine (splits of the old dimensions)"
        ),
        "pad-value-dtype": (
            "as in TVM, a typed pad_value (T.float16(0), a function of the new indices, whose "
            "values are int32) must have the buffer's dtype; plain Python numbers take it"
        ),
    }
)

PadValue = int | float | IndexMap | None


@dataclass(frozen=True)
class Padding:
    """A padding layout inverted: ``new_vars`` index the new box, ``inverse`` gives each old
    index in terms of them, and ``predicate`` holds exactly at the padding."""

    old_vars: tuple[Var, ...]
    new_vars: tuple[Var, ...]
    inverse: dict[Var, PrimExpr]
    predicate: PrimExpr


def padding_of(index_map: IndexMap, dims: list[int]) -> tuple[list[int], Padding] | None:
    """The new shape and the padding of an affine ``index_map`` that is one to one on the box
    ``dims`` padded up to a multiple of the divisors each dimension is split by; None when
    there is no such padding."""
    padded = [_round_up(e, _divisor(index_map, v)) for v, e in zip(index_map.initial_indices, dims)]
    if padded == dims:
        return None
    dom = {
        v: Range(IntImm(0, int32), IntImm(e, int32))
        for v, e in zip(index_map.initial_indices, padded)
    }
    result = detect_iter_map(index_map.final_indices, dom, check_level="bijective")
    if not result:
        return None
    shape: list[int] = []
    for total in result.indices:
        split = total.args[0] if len(total.args) == 1 else None
        size = _const(split.extent) if split is not None else None
        if split is None or split.scale != 1 or _const(total.base) != 0 or size is None:
            return None
        shape.append(size)
    new_vars = tuple(Var(f"v{k}", int32) for k in range(len(shape)))
    inverse = _inverse(list(result.indices), list(new_vars))
    analyzer = Analyzer()
    for v, e in zip(new_vars, shape):
        analyzer.bind(v, Range(IntImm(0, int32), IntImm(e, int32)))
    inverse = {v: analyzer.simplify(x) for v, x in inverse.items()}
    extents = dict(zip(new_vars, shape))
    outside = [
        _past_end(inverse.get(v, IntImm(0, int32)), e, extents)
        for v, e, p in zip(index_map.initial_indices, dims, padded)
        if p != e
    ]
    predicate = outside[0]
    for term in outside[1:]:
        predicate = op.logical_or(predicate, term)
    padding = Padding(index_map.initial_indices, new_vars, inverse, analyzer.simplify(predicate))
    return shape, padding


def _past_end(index: PrimExpr, extent: int, extents: dict[Var, int]) -> PrimExpr:
    """``index >= extent``; for a split ``o * f + i`` (``i`` below ``f``, ``o`` up to the last
    tile) TVM's per-dimension form ``o == extent // f and extent % f <= i``."""
    if isinstance(index, Add) and isinstance(index.a, Mul) and isinstance(index.b, Var):
        outer, factor, inner = index.a.a, index.a.b, index.b
        if isinstance(outer, Var) and isinstance(factor, IntImm) and factor.value > 0:
            f = factor.value
            last, rest = divmod(extent, f)
            if rest and extents.get(inner) == f and extents.get(outer) == last + 1:
                return op.logical_and(
                    op.eq(outer, IntImm(last, outer.dtype)), op.le(IntImm(rest, inner.dtype), inner)
                )
    return op.ge(index, IntImm(extent, int32))


def _divisor(index_map: IndexMap, var: Var) -> int:
    """The least common multiple of the constants ``var`` alone is divided by or reduced
    modulo in the map (1 when none)."""
    found = [1]

    def visit(node: object) -> None:
        if not isinstance(node, FloorDiv | FloorMod) or not isinstance(node.b, IntImm):
            return
        if node.b.value > 0 and set(collect_vars(node.a)) == {var}:
            found.append(node.b.value)

    for e in index_map.final_indices:
        post_order_visit(e, visit)
    return math.lcm(*found)


def _const(value: object) -> int | None:
    if isinstance(value, int):
        return value
    return value.value if isinstance(value, IntImm) else None


def _round_up(value: int, factor: int) -> int:
    return -(-value // factor) * factor


# ---- pad_value ----------------------------------------------------------------------------


def normalize_pad_value(buffer: Buffer, value: object, ndim: int) -> PadValue:
    """``pad_value`` as the trace records it: None, a number of the buffer's kind, or an
    ``IndexMap`` of ``ndim`` new indices giving one integer (a string is such a map's text)."""
    if value is None:
        return None
    dtype = buffer.dtype
    if isinstance(value, IntImm | FloatImm):
        if value.dtype != dtype:
            raise _refuse(
                f"pad_value {value!r} has dtype {value.dtype}; "
                f"buffer {buffer.name!r} holds {dtype}",
                rule="pad-value-dtype",
            )
        value = value.value
    if isinstance(value, int | float):  # bool too
        number = float(value) if dtype.is_float else value
        if not dtype.is_float and not float(value).is_integer():
            raise _refuse(
                f"pad_value {value!r} is not an integer; buffer {buffer.name!r} holds {dtype}"
            )
        return int(number) if not dtype.is_float else number
    if isinstance(value, PrimExpr):
        raise _refuse(
            f"pad_value {value!r} is an expression: give a constant or a function of the new "
            "indices (lambda i, j: ...)"
        )
    if isinstance(value, str | IndexMap) or callable(value):
        try:
            mapping = as_index_map(value, ndim)
        except (ValueError, TypeError) as err:
            raise _refuse(f"pad_value {value!r}: {err}") from None
        if len(mapping.final_indices) != 1 or len(mapping.initial_indices) != ndim:
            raise _refuse(
                f"pad_value {mapping} must take the {ndim} new indices and give one value"
            )
        result = mapping.final_indices[0].dtype
        if result != dtype:
            raise _refuse(
                f"pad_value {mapping} gives {result} values; buffer {buffer.name!r} holds {dtype}",
                rule="pad-value-dtype",
            )
        return mapping
    raise _refuse(f"pad_value {value!r} is neither a constant nor a function of the new indices")


def _refuse(
    detail: str,
    func: PrimFunc | None = None,
    node: Stmt | None = None,
    rule: str = "pad-value",
) -> ScheduleError:
    return ScheduleError("transform_layout", rule, detail, func, node)


def pad_expr(buffer: Buffer, value: PadValue, indices: tuple[PrimExpr, ...]) -> PrimExpr:
    """The pad value at the new ``indices``, in the buffer's dtype."""
    assert value is not None  # only a padding layout asks, and it was refused without one
    if isinstance(value, IndexMap):
        return op.cast(value.map_indices(indices)[0], buffer.dtype)
    return op.const(value, buffer.dtype)


# ---- who writes the padding ---------------------------------------------------------------


def write_padding(
    before: PrimFunc, func: PrimFunc, old: Buffer, new: Buffer, padding: Padding, value: PadValue
) -> PrimFunc:
    """``func`` (``before`` relaid out) with the padding of ``new`` written with ``value``."""
    writers = _writers(before.body, old)
    if not writers:
        return func  # an input: the caller fills the padding
    if len(writers) == 1:
        nest = _row_major_nest(writers[0], old)
        rewrite = _rewrite_producer
        if nest is None:
            nest, rewrite = _opaque_nest(writers[0], old), _rewrite_opaque
        if nest is not None:
            name = _block(writers[0]).name
            (path,) = [p for p in _writers(func.body, new) if _block(p).name == name]
            return func.with_body(rewrite(path, len(nest), new, padding, value))
    return func.with_body(_padding_block(func.body, new, padding, value))


def _writers(body: Stmt, buffer: Buffer) -> list[Path]:
    """Paths to the blocks whose own statements (not nested blocks') store into ``buffer``."""
    found: list[Path] = []
    for path in walk(body):
        node = path[-1]
        if isinstance(node, BufferStore) and node.buffer is buffer:
            realize = next(
                i for i in range(len(path) - 1, -1, -1) if isinstance(path[i], BlockRealize)
            )
            if path[: realize + 1] not in found:
                found.append(path[: realize + 1])
    return found


def _block(path: Path) -> Block:
    realize = path[-1]
    assert isinstance(realize, BlockRealize)  # a path _writers found
    return realize.block


def _row_major_nest(path: Path, buffer: Buffer) -> list[For] | None:
    """The loops of a producer that visits ``buffer`` in row-major order with nothing else to
    do: its body (and init) one store at its spatial iterators in order, each iterator bound
    to its own plain loop over the whole dimension, spatial loops outside reduction loops."""
    realize = path[-1]
    assert isinstance(realize, BlockRealize)
    block = realize.block
    spatial = [iv for iv in block.iter_vars if iv.kind is IterKind.SPATIAL]
    others = [iv for iv in block.iter_vars if iv.kind is not IterKind.SPATIAL]
    if any(iv.kind is not IterKind.REDUCE for iv in others) or len(spatial) != buffer.ndim:
        return None
    if list(block.iter_vars) != spatial + others or block.alloc_buffers or block.match_buffers:
        return None
    for stmt in (block.body, block.init):
        if stmt is None:
            continue
        if not isinstance(stmt, BufferStore) or stmt.buffer is not buffer:
            return None
        if len(stmt.indices) != len(spatial) or any(
            x is not iv.var for x, iv in zip(stmt.indices, spatial)
        ):
            return None
    if not (isinstance(realize.predicate, IntImm) and realize.predicate.value == 1):
        return None
    loops = [s for s in path[-1 - len(block.iter_vars) : -1] if isinstance(s, For)]
    if len(loops) != len(block.iter_vars):
        return None
    for k, (loop, iv, bound) in enumerate(zip(loops, block.iter_vars, realize.iter_values)):
        plain = loop.kind is ForKind.SERIAL and not loop.annotations
        inner = loops[k + 1] if k + 1 < len(loops) else realize
        if not plain or bound is not loop.loop_var or not _from_zero(loop, iv):
            return None
        if loop.body is not inner:
            return None
    for iv, dim in zip(spatial, buffer.shape):
        if _const(iv.dom.extent) is None or _const(iv.dom.extent) != _const(dim):
            return None
    return loops


def _from_zero(loop: For, iv: IterVar) -> bool:
    """The loop and the iterator both range over [0, the same constant)."""
    extent = _const(loop.extent)
    return (
        _const(loop.min) == _const(iv.dom.min) == 0
        and extent is not None
        and extent == _const(iv.dom.extent)
    )


def _rewrite_producer(
    path: Path, depth: int, new: Buffer, padding: Padding, value: PadValue
) -> Stmt:
    """The producer's nest iterating over the new box: each old spatial iterator the inverse
    map of new ones, the stored value replaced by the pad value in the padding."""
    realize = path[-1]
    assert isinstance(realize, BlockRealize)
    block = realize.block
    spatial = [iv for iv in block.iter_vars if iv.kind is IterKind.SPATIAL]
    reduce_ivs = [iv for iv in block.iter_vars if iv.kind is not IterKind.SPATIAL]
    shape = _shape(new)
    new_ivs = tuple(
        IterVar(v, Range(IntImm(0, int32), IntImm(e, int32)), IterKind.SPATIAL)
        for v, e in zip(padding.new_vars, shape)
    )
    analyzer = Analyzer()
    for iv in (*new_ivs, *reduce_ivs):
        analyzer.bind(iv.var, iv.dom)
    # Old iterator k is old index k (the producer stores at its iterators in order).
    table = {
        iv.var: padding.inverse.get(old, IntImm(0, int32))
        for iv, old in zip(spatial, padding.old_vars)
    }
    indices = tuple(padding.new_vars)
    pad = pad_expr(new, value, indices)

    def relaid(stmt: Stmt | None) -> Stmt | None:
        if stmt is None:
            return None
        assert isinstance(stmt, BufferStore)
        stored = analyzer.simplify(substitute(stmt.value, table))
        chosen = op.if_then_else(padding.predicate, pad, stored)
        return BufferStore(new, chosen, indices)

    body = relaid(block.body)
    assert body is not None
    new_block = update(block, iter_vars=(*new_ivs, *reduce_ivs), body=body, init=relaid(block.init))
    reads, writes = block_access_regions(new_block)
    new_block = update(new_block, reads=reads, writes=writes)
    loops = path[-1 - depth : -1]
    loop_vars = [Var(f"ax{k}", int32) for k in range(len(shape))]
    reduce_loops = [lp for lp in loops[len(spatial) :] if isinstance(lp, For)]
    stmt: Stmt = BlockRealize(
        (*loop_vars, *(lp.loop_var for lp in reduce_loops)), IntImm(1, bool_), new_block
    )
    for lp in reversed(reduce_loops):
        stmt = update(lp, body=stmt)
    for var, e in reversed(list(zip(loop_vars, shape))):
        stmt = For(var, IntImm(0, int32), IntImm(e, int32), ForKind.SERIAL, stmt)
    return rebuild(path[:-depth], stmt)  # in place of the outermost loop


def _opaque_nest(path: Path, buffer: Buffer) -> list[For] | None:
    """The loops of an opaque producer (no iterators) that stores ``buffer`` at its loops'
    variables in order and does nothing else, each loop plain over the whole dimension."""
    realize = path[-1]
    assert isinstance(realize, BlockRealize)
    block = realize.block
    store = block.body
    if block.iter_vars or block.init is not None or block.alloc_buffers or block.match_buffers:
        return None
    if not isinstance(store, BufferStore) or store.buffer is not buffer:
        return None
    if not (isinstance(realize.predicate, IntImm) and realize.predicate.value == 1):
        return None
    loops = list(path[-1 - buffer.ndim : -1])
    if len(loops) != buffer.ndim or len(store.indices) != buffer.ndim:
        return None
    for k, (loop, index, dim) in enumerate(zip(loops, store.indices, buffer.shape)):
        inner = loops[k + 1] if k + 1 < len(loops) else realize
        if not isinstance(loop, For) or loop.kind is not ForKind.SERIAL or loop.annotations:
            return None
        if index is not loop.loop_var or loop.body is not inner or _const(loop.min) != 0:
            return None
        if _const(loop.extent) is None or _const(loop.extent) != _const(dim):
            return None
    return [lp for lp in loops if isinstance(lp, For)]


def _rewrite_opaque(path: Path, depth: int, new: Buffer, padding: Padding, value: PadValue) -> Stmt:
    """An opaque producer's nest over the new box: each old loop variable the inverse map of
    the new ones, the stored value replaced by the pad value in the padding (TVM's)."""
    realize = path[-1]
    assert isinstance(realize, BlockRealize)
    block = realize.block
    store = block.body
    assert isinstance(store, BufferStore)
    loops = [lp for lp in path[-1 - depth : -1] if isinstance(lp, For)]
    shape = _shape(new)
    loop_vars = [Var(f"ax{k}", int32) for k in range(len(shape))]
    to_loops = dict(zip(padding.new_vars, loop_vars))
    analyzer = Analyzer()
    for var, e in zip(loop_vars, shape):
        analyzer.bind(var, Range(IntImm(0, int32), IntImm(e, int32)))
    table = {
        lp.loop_var: substitute(padding.inverse.get(old, IntImm(0, int32)), to_loops)
        for lp, old in zip(loops, padding.old_vars)
    }
    stored = analyzer.simplify(substitute(store.value, table))
    pad = pad_expr(new, value, tuple(loop_vars))
    chosen = op.if_then_else(substitute(padding.predicate, to_loops), pad, stored)
    new_block = update(block, body=BufferStore(new, chosen, tuple(loop_vars)))
    reads, writes = block_access_regions(new_block)
    new_block = update(new_block, reads=reads, writes=writes)
    stmt: Stmt = update(realize, block=new_block)
    for var, e in reversed(list(zip(loop_vars, shape))):
        stmt = For(var, IntImm(0, int32), IntImm(e, int32), ForKind.SERIAL, stmt)
    return rebuild(path[:-depth], stmt)  # in place of the outermost loop


def _shape(buffer: Buffer) -> list[int]:
    dims = [_const(e) for e in buffer.shape]
    assert all(d is not None for d in dims)  # transform_layout gave it a constant shape
    return [d for d in dims if d is not None]


def _padding_block(body: Stmt, new: Buffer, padding: Padding, value: PadValue) -> Stmt:
    """``body`` with a block storing the pad value at the padding of ``new`` after the last
    top-level statement of its scope that writes ``new``."""
    stores = [p for p in walk(body) if isinstance(p[-1], BufferStore) and p[-1].buffer is new]
    last = stores[-1]  # walk visits statements in program order
    blocks = [k for k, s in enumerate(last) if isinstance(s, Block)]
    # The scope that allocates the buffer (a parameter's: the root block).
    owner = blocks[0]
    for k in blocks:
        scope = last[k]
        if isinstance(scope, Block) and new in scope.alloc_buffers:
            owner = k
    shape = _shape(new)
    ivs = tuple(
        IterVar(v, Range(IntImm(0, int32), IntImm(e, int32)), IterKind.SPATIAL)
        for v, e in zip(padding.new_vars, shape)
    )
    indices = tuple(padding.new_vars)
    store = BufferStore(new, pad_expr(new, value, indices), indices)
    names = {p[-1].name for p in walk(body) if isinstance(p[-1], Block)}
    name, k = f"{new.name}_padding", 0
    while name in names:
        k += 1
        name = f"{new.name}_padding_{k}"
    block = Block(name, ivs, (), (), store)
    reads, writes = block_access_regions(block)
    block = update(block, reads=reads, writes=writes)
    loop_vars = [Var(f"ax{k}", int32) for k in range(len(shape))]
    where = substitute(padding.predicate, dict(zip(padding.new_vars, loop_vars)))
    nest: Stmt = BlockRealize(tuple(loop_vars), where, block)
    for var, e in reversed(list(zip(loop_vars, shape))):
        nest = For(var, IntImm(0, int32), IntImm(e, int32), ForKind.SERIAL, nest)
    top = last[owner + 1]
    if isinstance(top, SeqStmt):
        child = last[owner + 2]
        items = list(top.seq)
        at = next(i for i, s in enumerate(items) if s is child)
        items.insert(at + 1, nest)
        return rebuild(last[: owner + 2], SeqStmt(tuple(items)))
    return rebuild(last[: owner + 2], SeqStmt((top, nest)))
