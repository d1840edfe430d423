"""Loop transformations: split, fuse, reorder and add_unit_loop, as pure functions."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import cast

from tilewright.arith.analyzer import Analyzer
from tilewright.arith.iter_map import IterSum, detect_iter_map, is_affine
from tilewright.ir import op
from tilewright.ir.dtype import DataType, int32, int64
from tilewright.ir.expr import GE, GT, LE, LT, And, IntImm, PrimExpr, Range, Var
from tilewright.ir.function import PrimFunc
from tilewright.ir.functor import collect_vars
from tilewright.ir.stmt import Block, BlockRealize, For, ForKind, IterKind, Stmt
from tilewright.ir.structural import structural_equal
from tilewright.schedule.error import ScheduleError
from tilewright.schedule.legality import (
    block_realizes,
    check_distinct,
    check_plain_loop,
    check_reduction_order,
    uses,
)
from tilewright.schedule.primitives.bindings import block_scope_domain, rewrite_loops
from tilewright.schedule.tree import Site, children, loop_domain, update, with_child

Factor = int | PrimExpr | None


def _const(x: PrimExpr) -> int | None:
    return x.value if isinstance(x, IntImm) else None


def _times(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    if _const(a) == 1:
        return b
    if _const(b) == 1:
        return a
    return op.mul(a, b)


def _minus_one(x: PrimExpr) -> PrimExpr:
    return op.const(x.value - 1, x.dtype) if isinstance(x, IntImm) else op.sub(x, 1)


def _split_factors(site: Site, factors: Sequence[Factor]) -> list[PrimExpr]:
    loop = site.node
    assert isinstance(loop, For)
    name = loop.loop_var.name

    def fail(detail: str) -> ScheduleError:
        return ScheduleError("split", "split-factors", detail, site.func, loop)

    if len(factors) < 1:
        raise fail(f"loop {name!r}: no factors given")
    if sum(f is None for f in factors) > 1:
        raise fail(f"loop {name!r}: at most one factor may be None, got {list(factors)}")
    known: list[PrimExpr | None] = []
    for f in factors:
        if f is None:
            known.append(None)
            continue
        value = op.convert(f, loop.loop_var.dtype) if isinstance(f, int) else f
        if isinstance(f, bool) or not isinstance(value, PrimExpr) or not value.dtype.is_int:
            raise fail(f"loop {name!r}: factor {f!r} is not an integer")
        if isinstance(value, IntImm) and value.value <= 0:
            raise fail(f"loop {name!r}: factor {value.value} is not positive")
        known.append(op.cast(value, loop.loop_var.dtype))
    product: PrimExpr = op.const(1, loop.loop_var.dtype)
    for f in known:
        if f is not None:
            product = _times(product, f)
    given = [f for f in known if f is not None]
    if len(given) < len(known):
        extent = loop.extent
        if isinstance(extent, IntImm) and isinstance(product, IntImm):
            inferred: PrimExpr = op.const(-(-extent.value // product.value), extent.dtype)
        elif _const(product) == 1:  # [None, 1, ...]: a symbolic loop's sampled tiles
            inferred = extent
        else:
            # TVM simplifies the ceiling: (n * 32 + 31) // 32 is n.
            inferred = Analyzer().simplify(
                op.floordiv(op.add(extent, _minus_one(product)), product)
            )
        return [inferred if f is None else f for f in known]
    total, size = _const(product), _const(loop.extent)
    if total is not None and size is not None and total < size:
        raise fail(
            f"loop {name!r}: the factors {[_const(f) for f in given]} multiply to {total}, "
            f"less than the extent {size}"
        )
    symbolic = total is None or size is None
    if symbolic and product is not loop.extent and not structural_equal(product, loop.extent):
        raise fail(f"loop {name!r}: cannot prove that the factors cover the extent {loop.extent!r}")
    return given


def _covers_exactly(factors: list[PrimExpr], extent: PrimExpr) -> bool:
    product: PrimExpr = op.const(1, extent.dtype)
    for f in factors:
        product = _times(product, f)
    if _const(product) is not None and _const(extent) is not None:
        return _const(product) == _const(extent)
    return structural_equal(product, extent)


def split(
    site: Site,
    factors: Sequence[Factor],
    preserve_unit_iters: bool = True,
    disable_predication: bool = False,
) -> tuple[PrimFunc, list[Var]]:
    """Split the loop at ``site`` into ``len(factors)`` nested loops ``<name>_0, <name>_1, ...``.

    Returns the new function and the new loop variables, outermost first.

    Example (``factors=[None, 128]`` on a loop of 1024)::

        for i in range(1024):                    for i_0, i_1 in T.grid(8, 128):
            with T.block("C"):             ->        with T.block("C"):
                vi = T.axis.remap("S", [i])              vi = T.axis.spatial(1024, i_0 * 128 + i_1)
    """
    loop = site.node
    assert isinstance(loop, For)
    check_plain_loop("split", site)
    values = _split_factors(site, factors)
    var = loop.loop_var
    new_vars = [Var(f"{var.name}_{k}", var.dtype) for k in range(len(values))]
    # i -> (i_0 * f1 + i_1) * f2 + i_2 (Horner form, as the predicate prints); unit loops
    # are left out unless preserved. Block bindings are re-simplified below.
    value: PrimExpr | None = None
    for new, f in zip(new_vars, values):
        if value is not None:
            value = _times(value, f)
        if preserve_unit_iters or _const(f) != 1:
            value = new if value is None else op.add(value, new)
    if value is None:
        value = op.const(0, var.dtype)
    body = loop.body
    if not disable_predication and not _covers_exactly(values, loop.extent):
        body = _add_predicate(body, op.lt(value, loop.extent))
    dom = block_scope_domain(site.path[:-1])
    for new, f in zip(new_vars, values):
        dom[new] = Range(op.const(0, var.dtype), f)
    new_body = rewrite_loops(body, {var: value}, dom, drop_unit_iters=not preserve_unit_iters)
    for new, f in reversed(list(zip(new_vars, values))):
        new_body = For(new, op.const(0, var.dtype), f, ForKind.SERIAL, new_body)
    return site.replaced(new_body), new_vars


def _add_predicate(stmt: Stmt, condition: PrimExpr) -> Stmt:
    """Every block realize in ``stmt`` (not inside other blocks) also requires ``condition``."""
    if isinstance(stmt, BlockRealize):
        return update(stmt, predicate=op.logical_and(stmt.predicate, condition))
    result = stmt
    for child in children(stmt):
        new = _add_predicate(child, condition)
        if new is not child:
            result = with_child(result, child, new)
    return result


def fuse(sites: list[Site], preserve_unit_iters: bool = True) -> tuple[PrimFunc, Var]:
    """Fuse consecutive nested loops into one loop named ``<a>_<b>_fused``.

    Returns the new function and the fused loop's variable.

    Example::

        for i, j in T.grid(16, 8):             for i_j_fused in range(128):
            with T.block("B"):           ->        with T.block("B"):
                vi, vj = T.axis.remap(...)             vi = T.axis.spatial(16, i_j_fused // 8)
                                                       vj = T.axis.spatial(8, i_j_fused % 8)
    """
    if not sites:
        raise ScheduleError("fuse", "argument", "fuse needs at least one loop")
    check_distinct("fuse", sites)
    loops = [s.loop for s in sites]
    for site in sites:
        check_plain_loop("fuse", site)
    outer = sites[0]
    for k in range(1, len(sites)):
        parent, child = loops[k - 1], loops[k]
        _check_fuse_pair(outer, parent, child, sites[k].path[:-1])
        outer_vars = {f.loop_var for f in loops[:k]}
        if uses((child.min, child.extent), outer_vars):
            raise ScheduleError(
                "fuse",
                "independent-extents",
                f"the range of loop {child.loop_var.name!r} depends on an outer loop being fused",
                outer.func,
                child,
            )
    first = loops[0]
    dtype = first.loop_var.dtype
    if any(f.loop_var.dtype.bits == 64 for f in loops):
        dtype = int64
    fused = Var("_".join(f.loop_var.name for f in loops) + "_fused", dtype)
    extents = [op.cast(f.extent, dtype) for f in loops]
    total: PrimExpr = op.const(1, dtype)
    for e in extents:
        total = _times(total, e)
    total = Analyzer().simplify(total)  # n * 128 * 128 is n * 16384, as TVM prints it
    mapping: dict[Var, PrimExpr] = {}
    below: PrimExpr = op.const(1, dtype)
    for f, e in reversed(list(zip(loops, extents))):
        assert isinstance(f, For)
        if _const(e) == 1:
            mapping[f.loop_var] = op.const(0, f.loop_var.dtype)
            continue
        # TVM's form: ``f // below`` for the outermost loop, ``f % e`` for the innermost,
        # ``f % (below * e) // below`` between (what the iterator maps print too).
        value: PrimExpr = fused
        if f is not first:
            value = op.floormod(value, _times(below, e))
        if _const(below) != 1:
            value = op.floordiv(value, below)
        mapping[f.loop_var] = op.cast(value, f.loop_var.dtype)
        below = _times(below, e)
    dom = block_scope_domain(outer.path[:-1])
    dom[fused] = Range(op.const(0, dtype), total)
    inner = loops[-1]
    assert isinstance(inner, For)
    body = rewrite_loops(inner.body, mapping, dom, drop_unit_iters=not preserve_unit_iters)
    new_loop = For(fused, op.const(0, dtype), total, ForKind.SERIAL, body)
    return outer.replaced(new_loop), fused


def _check_fuse_pair(outer: Site, parent: For, child: For, ancestors: tuple[Stmt, ...]) -> None:
    names = f"loop {child.loop_var.name!r} is not directly inside loop {parent.loop_var.name!r}"
    if parent not in ancestors:
        raise ScheduleError("fuse", "consecutive-loops", names, outer.func, child)
    between = ancestors[ancestors.index(parent) + 1 :]
    if between and all(isinstance(s, For) for s in between):
        names += f": loop {cast(For, between[0]).loop_var.name!r} lies between them"
        raise ScheduleError("fuse", "consecutive-loops", names, outer.func, child)
    if between:
        kinds = ", ".join(sorted({type(s).__name__ for s in between if not isinstance(s, For)}))
        names += f": a {kinds} lies between them"
        raise ScheduleError("fuse", "loop-chain", names, outer.func, parent)


def reorder(sites: list[Site]) -> PrimFunc:
    """Reorder loops of one single-child chain; loops not given keep their places.

    Example (``reorder(k, i)`` on ``for i, j, k``)::

        for i, j, k in T.grid(4, 8, 16):   ->   for k, j, i in T.grid(16, 8, 4):
    """
    if not sites:
        raise ScheduleError("reorder", "argument", "reorder needs at least one loop")
    check_distinct("reorder", sites)
    by_depth = sorted(sites, key=lambda s: len(s.path))
    top, bottom = by_depth[0], by_depth[-1]
    chain_path = bottom.path[len(top.path) - 1 :]
    for site in sites:
        if site.path != bottom.path[: len(site.path)]:
            raise ScheduleError(
                "reorder",
                "loop-chain",
                f"loops {site.loop.loop_var.name!r} and {bottom.loop.loop_var.name!r} are not "
                "nested one inside the other",
                top.func,
                site.node,
            )
    for parent, child in itertools.pairwise(chain_path):
        # The first offending pair starts at a loop: every earlier child was a loop.
        assert isinstance(parent, For)
        if not isinstance(child, For):
            raise ScheduleError(
                "reorder",
                "loop-chain",
                f"the loops are not a single-child chain: loop {parent.loop_var.name!r} holds "
                f"a {type(child).__name__} instead of just the next loop",
                top.func,
                parent,
            )
    chain = [f for f in chain_path if isinstance(f, For)]  # all loops: checked above
    given = {id(s.node) for s in sites}
    slots = [k for k, f in enumerate(chain) if id(f) in given]
    order = list(chain)
    for slot, site in zip(slots, sites):
        order[slot] = site.loop
    for k, f in enumerate(order):
        inner_vars = {g.loop_var for g in order[k + 1 :]}
        if uses((f.min, f.extent), inner_vars):
            raise ScheduleError(
                "reorder",
                "independent-extents",
                f"the range of loop {f.loop_var.name!r} would depend on a loop inside it",
                top.func,
                f,
            )
    check_partial_affine(top)
    check_reduction_order("reorder", top, chain, order)
    body: Stmt = chain[-1].body
    for f in reversed(order):
        body = update(f, body=body)
    return top.replaced(body)


def check_partial_affine(top: Site) -> None:
    """TVM's rule for reorder: every block under the outermost reordered loop has spatial and
    reduction iterators only, bindings affine in the loops from that loop down (the loops
    above it count as constants: ``v0 * v0 + v1`` allows reordering the loops under ``v0``),
    and no predicate that bounds a sum of several of those loops unless that sum is itself a
    binding (``T.where(i * 16 + j < 100)`` with ``vi = i``, ``vj = j`` ties the loops
    together; a split's ``T.where(i_0 * 8 + i_1 < 100)`` bounds its own binding)."""
    for path in block_realizes(top):
        realize = path[-1]
        assert isinstance(realize, BlockRealize)
        block = realize.block
        for iv in block.iter_vars:
            if iv.kind not in (IterKind.SPATIAL, IterKind.REDUCE):
                raise ScheduleError(
                    "reorder",
                    "block-iter-kind",
                    f"block {block.name!r} has the {iv.kind.value} iterator {iv.var.name!r}",
                    top.func,
                    block,
                )
        loops = [s for s in path[len(top.path) - 1 :] if isinstance(s, For)]
        dom = loop_domain(loops)
        reason = is_affine(realize.iter_values, dom, realize.predicate)
        if reason is not None:
            raise ScheduleError(
                "reorder",
                "affine-binding",
                f"block {block.name!r} has a binding that is not affine in the loops being "
                f"reordered: {reason}",
                top.func,
                block,
            )
        for value in realize.iter_values:
            reason = _unfused(value, dom, realize.predicate)
            if reason is not None:
                raise ScheduleError(
                    "reorder",
                    "affine-binding",
                    f"block {block.name!r} has a binding that is not affine in the loops being "
                    f"reordered: {value}: {reason}",
                    top.func,
                    block,
                )
        marks = _mark_sources(realize.iter_values, dom, realize.predicate)
        for lhs in _bounded_sums(realize.predicate):
            if len({v for v in collect_vars(lhs) if v in dom}) < 2:
                continue
            if not _mark_sources([lhs], dom, None) & marks:
                raise ScheduleError(
                    "reorder",
                    "affine-binding",
                    f"the predicate {realize.predicate} of block {block.name!r} bounds "
                    f"{lhs}, a sum of the loops being reordered that no binding equals: the "
                    "loops are not independent",
                    top.func,
                    block,
                )


def _unfused(value: PrimExpr, dom: dict[Var, Range], predicate: PrimExpr | None) -> str | None:
    """Why the binding ``value`` is no single iterator of one fused space of its loops (TVM's
    affine binding: ``i + j`` over two loops of 16 is a sum, not a fused ``i * 16 + j``), or
    None; bindings with symbolic extents or coefficients are left to ``is_affine``."""
    if any(v not in dom for v in collect_vars(value)):
        return None
    if any(_const(dom[v].extent) is None for v in collect_vars(value)):
        return None
    found = detect_iter_map([value], dom, predicate)
    return None if found else found.errors[0]


def _mark_sources(
    exprs: Sequence[PrimExpr], dom: dict[Var, Range], predicate: PrimExpr | None
) -> set[object]:
    """The fused sums (``IterSum``s of several loops) the normalized ``exprs`` take pieces of."""
    found: set[object] = set()
    stack = [
        split
        for expr in exprs
        for total in detect_iter_map([expr], dom, predicate).indices
        for split in total.args
    ]
    while stack:
        split = stack.pop()
        source = split.mark.source
        if isinstance(source, IterSum) and source not in found:
            found.add(IterSum(source.args, 0))
            stack.extend(source.args)
    return found


def _bounded_sums(predicate: PrimExpr) -> list[PrimExpr]:
    """The left sides of the conjuncts ``lhs < c`` (``<=``, ``>``, ``>=``) of ``predicate``."""
    found: list[PrimExpr] = []
    stack = [predicate]
    while stack:
        cond = stack.pop()
        if isinstance(cond, And):
            stack += [cond.a, cond.b]
        elif isinstance(cond, LT | LE):
            found.append(cond.a)
        elif isinstance(cond, GT | GE):
            found.append(cond.b)
    return found


def add_unit_loop(site: Site) -> tuple[PrimFunc, Var]:
    """Wrap a loop or block in a new loop ``u`` of extent 1.

    Example::

        with T.block("C"): ...   ->   for u in range(1):
                                          with T.block("C"): ...
    """
    node = site.node
    path = site.path
    if isinstance(node, Block):
        if len(path) == 2:
            raise ScheduleError(
                "add_unit_loop",
                "root-block",
                f"block {node.name!r} is the function's root block",
                site.func,
                node,
            )
        path = path[:-1]
        node = path[-1]
    var = Var("u", _index_dtype(node))
    new = For(var, op.const(0, var.dtype), op.const(1, var.dtype), ForKind.SERIAL, node)
    return site.at(path).replaced(new), var


def _index_dtype(node: Stmt) -> DataType:
    if isinstance(node, For):
        return node.loop_var.dtype
    vals = [v for e in getattr(node, "iter_values", ()) for v in collect_vars(e)]
    return vals[0].dtype if vals else int32
