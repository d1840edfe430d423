"""A reduction block and one of its loops → the reduction factored over that loop: block
``<name>_rf`` keeps one partial result per iteration of the loop in ``<B>_rf`` and the
original block, under the spatial loops and the factored one, reduces them (``rfactor``)."""

from __future__ import annotations

import contextlib

from tilewright.arith.analyzer import Analyzer
from tilewright.arith.int_set import IntervalSet
from tilewright.arith.iter_map import is_affine
from tilewright.arith.region import block_access_regions
from tilewright.ir import op
from tilewright.ir.buffer import Buffer, decl_buffer
from tilewright.ir.comm_reducer import OPERATORS, ReducerMismatch, split_update
from tilewright.ir.expr import BufferLoad, FloatImm, IntImm, PrimExpr, Range, Var
from tilewright.ir.function import PrimFunc
from tilewright.ir.functor import collect_vars, substitute
from tilewright.ir.stmt import (
    Block,
    BlockRealize,
    BufferStore,
    For,
    ForKind,
    IterKind,
    IterVar,
    Stmt,
    seq,
)
from tilewright.ir.structural import structural_equal
from tilewright.schedule.dataflow import (
    check_reduction_in_scope,
    check_single_writer,
    scope_blocks,
    scope_path,
)
from tilewright.schedule.error import ScheduleError, register_rules
from tilewright.schedule.region import access_regions, relax_region
from tilewright.schedule.tree import Path, Site, loop_domain, rebuild, update, walk, with_child

register_rules(
    {
        "stage-pipeline": (
            "rfactor needs a scope where every consumer reads only what its producers in the "
            "scope write"
        ),
        "reduction-index": "a reduction block stores at indices of its spatial iterators only",
        "serial-loop": "rfactor's loop must be serial",
        "predicate": "rfactor needs a block without predicate (T.where)",
        "init-update": "the init stores the element the update stores",
        "reducer-identity": (
            "the init of a sum or product stores the reducer's identity (0 or 1); a max or min "
            "may start from any constant"
        ),
        "unbound-loop": (
            "under the outermost loop that drives a reduction iterator, every loop of extent "
            "above 1 drives an iterator of the block"
        ),
    }
)

_IDENTITY = {"sum": 0, "prod": 1}


def rfactor(loop_site: Site, factor_axis: int) -> tuple[PrimFunc, str]:
    """Factor the reduction over ``loop`` into a buffer ``<B>_rf`` with one partial result
    per iteration of the loop (a new dimension at ``factor_axis``). Block ``<name>_rf``, under
    copies of all the block's loops, has the loop's iterator first (spatial), the block's
    spatial iterators and the reduction iterators that do not use the loop, and one new
    reduction iterator per other loop that the factored reduction iterators use; it has no
    init when all its iterators are spatial. The original block, under its loops less those
    that drive only reduction iterators (the factored loop stays), reduces ``<B>_rf`` with
    the loop's iterator first. Both keep the block's annotations.

    Returns the function and the name of the rf block.

    Example::

        B[vi] += A[vi, vk_0 * 4 + vk_1] over i, k_0, k_1; rfactor(k_1, 0)
        ->  B_rf[vk_1, vi] += A[vi, vk_0 * 4 + vk_1]   (vk_1, vi, vk_0 = remap("SSR", ...))
            B[vi] += B_rf[vk_1, vi]                      (vk_1, vi = remap("RS", [k_1, i]))
    """
    func = loop_site.func
    loop = loop_site.loop
    rpath, realize = loop_site.only_block("rfactor")
    block = realize.block
    block_site = loop_site.at((*rpath, block))
    start = block_site.scope_index() + 1
    nest = [s for s in rpath[start:-1] if isinstance(s, For)]
    _check_stage_pipeline(block_site, rpath[:start])
    spatial_vars, reduce_vars = _check_reduction_block(block_site, realize, nest)
    if loop.kind is not ForKind.SERIAL:
        raise ScheduleError(
            "rfactor",
            "serial-loop",
            f"loop {loop.loop_var.name!r} is {loop.kind.script_name}, not serial",
            func,
            loop,
        )
    if not (isinstance(realize.predicate, IntImm) and realize.predicate.value == 1):
        raise ScheduleError(
            "rfactor",
            "predicate",
            f"block {block.name!r} has the predicate {realize.predicate!r}: the partial "
            "results of iterations it skips would never be written",
            func,
            block,
        )
    check_reduction_in_scope("rfactor", block_site, realize, {f.loop_var for f in nest})
    _check_loops(loop_site, rpath, realize, nest, spatial_vars, reduce_vars)
    store, rhs, kind = _pattern(block_site, block)
    assert isinstance(block.init, BufferStore)
    if kind not in ("max", "min") and loop.loop_var not in reduce_vars and _extent(loop) != 1:
        raise ScheduleError(
            "rfactor",
            "rfactor-loop",
            f"loop {loop.loop_var.name!r} drives no iterator of block {block.name!r}: each of "
            f"its iterations repeats the whole {kind}, which the factored block would combine "
            f"{loop.extent} times",
            func,
            loop,
        )
    ndim = len(store.buffer.shape)
    if not -ndim - 1 <= factor_axis <= ndim:
        raise ScheduleError(
            "rfactor",
            "argument",
            f"factor_axis {factor_axis} is out of range for buffer {store.buffer.name!r} of "
            f"{ndim} dimensions",
            func,
            loop,
        )
    axis = factor_axis % (ndim + 1)
    if not (isinstance(loop.min, IntImm) and loop.min.value == 0):
        raise ScheduleError(
            "rfactor", "loop-from-zero", f"loop {loop.loop_var.name!r} must start at 0", func, loop
        )
    names = {p[-1].name for p in walk(func.body) if isinstance(p[-1], Block)}
    rf_name = f"{block.name}_rf"
    if rf_name in names:
        raise ScheduleError("rfactor", "unique-block-names", f"{rf_name!r} exists", func, block)

    buffer = store.buffer
    shape = (*buffer.shape[:axis], loop.extent, *buffer.shape[axis:])
    rf = decl_buffer(shape, buffer.dtype, f"{buffer.name}_rf", buffer.scope)
    combiner = OPERATORS[kind]
    rf_var = Var(f"v{loop.loop_var.name}", loop.loop_var.dtype)
    rf_realize = _rf_block(realize, nest, loop, rf_var, rf, axis, store, rhs, combiner, rf_name)

    # The write-back block: the loop's iterator (reduction) first, then fresh spatial ones.
    wb_var = Var(rf_var.name, rf_var.dtype)
    wb_iters = [IterVar(wb_var, Range(loop.min, loop.extent), IterKind.REDUCE)]
    wb_values: list[PrimExpr] = [loop.loop_var]
    spatial: dict[Var, PrimExpr] = {}
    for iv, value in zip(block.iter_vars, realize.iter_values):
        if iv.kind is IterKind.SPATIAL:
            var = Var(iv.var.name, iv.var.dtype)
            spatial[iv.var] = var
            wb_iters.append(update(iv, var=var))
            wb_values.append(value)
    index = tuple(substitute(i, spatial) for i in store.indices)
    rf_index = list(index)
    rf_index.insert(axis, wb_var)
    wb_block = update(
        block,
        iter_vars=tuple(wb_iters),
        body=BufferStore(
            buffer,
            combiner(BufferLoad(buffer, index), BufferLoad(rf, tuple(rf_index))),
            index,
        ),
        init=BufferStore(buffer, substitute(block.init.value, spatial), index),
    )
    reads, writes = block_access_regions(wb_block)
    wb_block = update(wb_block, reads=reads, writes=writes)
    wb: Stmt = BlockRealize(tuple(wb_values), op.const(True), wb_block)

    # The loops around the write-back block: those that drive no reduction iterator, and
    # the factored loop (the first loop driving one holds only this block, so the loops
    # dropped under it hold nothing else).
    top = next(k for k in range(start, len(rpath)) if rpath[k] is nest[0])
    old: Stmt = realize
    for k in range(len(rpath) - 2, top - 1, -1):
        node = rpath[k]
        if isinstance(node, For) and node is not loop and node.loop_var in reduce_vars:
            old = node
            continue
        wb = with_child(node, old, wb)
        old = node
    new_func = loop_site.at(rpath[: top + 1]).replaced(seq(rf_realize, wb))
    scope = rpath[start - 1]
    assert isinstance(scope, Block)
    for path in walk(new_func.body):
        if isinstance(path[-1], Block) and path[-1].name == scope.name:
            node = path[-1]
            new_scope = update(node, alloc_buffers=(*node.alloc_buffers, rf))
            return new_func.with_body(rebuild(path, new_scope)), rf_name
    raise AssertionError("scope block not found")


def _rf_block(
    realize: BlockRealize,
    nest: list[For],
    loop: For,
    rf_var: Var,
    rf: Buffer,
    axis: int,
    store: BufferStore,
    rhs: PrimExpr,
    combiner: type,
    name: str,
) -> Stmt:
    """The rf block under fresh copies of every loop of the nest."""
    block = realize.block
    by_var = {f.loop_var: f for f in nest}
    iters = [IterVar(rf_var, Range(loop.min, loop.extent), IterKind.SPATIAL)]
    values: list[PrimExpr] = [loop.loop_var]
    loop_iter: dict[Var, PrimExpr] = {loop.loop_var: rf_var}
    mapping: dict[Var, PrimExpr] = {}
    for iv, value in zip(block.iter_vars, realize.iter_values):
        used = collect_vars(value)
        if iv.kind is IterKind.SPATIAL or loop.loop_var not in used:
            iters.append(iv)
            values.append(value)
            continue
        # A reduction iterator over the factored loop splits into one iterator per loop.
        for var in used:
            f = by_var.get(var)
            if f is None or var in loop_iter:
                continue
            new = Var(f"v{var.name}", var.dtype)
            loop_iter[var] = new
            iters.append(IterVar(new, Range(f.min, f.extent), IterKind.REDUCE))
            values.append(var)
        mapping[iv.var] = substitute(value, loop_iter)
    rf_index = list(store.indices)
    rf_index.insert(axis, rf_var)
    idx = tuple(rf_index)
    assert isinstance(block.init, BufferStore)
    new_rhs = substitute(rhs, mapping)
    init: Stmt | None = None
    if any(iv.kind is IterKind.REDUCE for iv in iters):
        body = BufferStore(rf, combiner(BufferLoad(rf, idx), new_rhs), idx)
        init = BufferStore(rf, block.init.value, idx)
    else:  # every iterator spatial: each element is written once, from the value itself
        body = BufferStore(rf, new_rhs, idx)
    rf_block = Block(name, tuple(iters), (), (), body, init, annotations=block.annotations)
    reads, writes = block_access_regions(rf_block)
    rf_block = update(rf_block, reads=reads, writes=writes)
    fresh = {f.loop_var: Var(f.loop_var.name, f.loop_var.dtype) for f in nest}
    stmt: Stmt = BlockRealize(tuple(substitute(v, fresh) for v in values), op.const(True), rf_block)
    for f in reversed(nest):
        stmt = update(
            f,
            loop_var=fresh[f.loop_var],
            min=substitute(f.min, fresh),
            extent=substitute(f.extent, fresh),
            body=stmt,
        )
    return stmt


def _extent(loop: For) -> int | None:
    return loop.extent.value if isinstance(loop.extent, IntImm) else None


def _check_reduction_block(
    site: Site, realize: BlockRealize, nest: list[For]
) -> tuple[set[Var], set[Var]]:
    """TVM's reduction block: an init, spatial and reduction iterators only, quasi-affine
    bindings, the only writer of its outputs, and stores at spatial iterators. Returns the
    loop variables that the spatial and the reduction iterators use."""
    block = realize.block
    func = site.func
    if block.init is None:
        raise ScheduleError(
            "rfactor",
            "reduction-block",
            f"block {block.name!r} has no init: it is not a reduction block",
            func,
            block,
        )
    spatial_vars: set[Var] = set()
    reduce_vars: set[Var] = set()
    reduce_iters: set[Var] = set()
    for iv, value in zip(block.iter_vars, realize.iter_values):
        if iv.kind not in (IterKind.SPATIAL, IterKind.REDUCE):
            raise ScheduleError(
                "rfactor",
                "block-iter-kind",
                f"block {block.name!r} has the {iv.kind.value} iterator {iv.var.name!r}",
                func,
                block,
            )
        if iv.kind is IterKind.REDUCE:
            reduce_iters.add(iv.var)
            reduce_vars.update(collect_vars(value))
        else:
            spatial_vars.update(collect_vars(value))
    reason = is_affine(realize.iter_values, loop_domain(nest), realize.predicate)
    if reason is not None:
        raise ScheduleError(
            "rfactor",
            "affine-binding",
            f"block {block.name!r} has a binding that is not quasi-affine: {reason}",
            func,
            block,
        )
    check_single_writer("rfactor", site, scope_blocks(scope_path(site)), block)
    for region in block.writes:
        for rng in region.region:
            stray = [v for v in collect_vars((rng.min, rng.extent)) if v in reduce_iters]
            if stray:
                raise ScheduleError(
                    "rfactor",
                    "reduction-index",
                    f"block {block.name!r} writes {region.buffer.name!r} at an index that "
                    f"uses its reduction iterator {stray[0].name!r}",
                    func,
                    block,
                )
    return spatial_vars, reduce_vars


def _check_stage_pipeline(site: Site, scope: Path) -> None:
    """Every consumer in the scope reads only elements its producers there write (refused
    when provably not)."""
    blocks = scope_blocks(scope)
    ana = Analyzer()
    for consumer in blocks:
        for read in consumer.block.reads:
            producers = [
                b for b in blocks if b.block is not consumer.block and read.buffer in b.writes
            ]
            if not producers:
                continue
            need = relax_region(
                access_regions(consumer.realize, read.buffer, reads=True),
                _domain(consumer.path, len(scope)),
                ana,
            )
            have: list[IntervalSet] | None = None
            for producer in producers:
                written = relax_region(
                    access_regions(producer.realize, read.buffer, reads=False),
                    _domain(producer.path, len(scope)),
                    ana,
                )
                if written is None:
                    continue
                have = written if have is None else [a.union(b, ana) for a, b in zip(have, written)]
            if need is None or have is None:
                continue
            if any(_beyond(want, got, ana) for want, got in zip(need, have)):
                raise ScheduleError(
                    "rfactor",
                    "stage-pipeline",
                    f"block {consumer.block.name!r} reads {read.buffer.name!r} beyond what "
                    "its producers in the scope write",
                    site.func,
                    consumer.block,
                )


def _beyond(want: IntervalSet, got: IntervalSet, ana: Analyzer) -> bool:
    """Whether ``want`` provably reaches outside ``got`` (unknown bounds: no)."""
    low, floor = want.min_value, got.min_value
    high, ceiling = want.max_value, got.max_value
    if low is not None and floor is not None and ana.can_prove(op.lt(low, floor)):
        return True
    return high is not None and ceiling is not None and ana.can_prove(op.gt(high, ceiling))


def _domain(path: Path, start: int) -> dict[Var, Range]:
    return loop_domain([s for s in path[start:] if isinstance(s, For)])


def _check_loops(
    site: Site,
    rpath: Path,
    realize: BlockRealize,
    nest: list[For],
    spatial_vars: set[Var],
    reduce_vars: set[Var],
) -> None:
    """TVM's loop rules: the block comes first under the outermost loop; no loop drives both
    kinds of iterator; the factored loop drives no spatial one; the outermost loop driving a
    reduction iterator holds only this block; under it, loops that drive nothing are units."""
    func = site.func
    loop = site.loop
    block = realize.block
    first = next(p[-1] for p in walk(nest[0]) if isinstance(p[-1], BlockRealize))
    if first is not realize:
        raise ScheduleError(
            "rfactor",
            "rfactor-block",
            f"block {block.name!r} is not the first block under the outermost loop "
            f"{nest[0].loop_var.name!r} around it",
            func,
            nest[0],
        )
    met_reduction = False
    for f in nest:
        spatial, reduce = f.loop_var in spatial_vars, f.loop_var in reduce_vars
        if spatial and reduce:
            raise ScheduleError(
                "rfactor",
                "rfactor-loop",
                f"loop {f.loop_var.name!r} drives both spatial and reduction iterators of "
                f"block {block.name!r}",
                func,
                f,
            )
        if spatial and f is loop:
            raise ScheduleError(
                "rfactor",
                "rfactor-loop",
                f"loop {f.loop_var.name!r} must drive reduction iterators of block "
                f"{block.name!r} and no spatial one",
                func,
                f,
            )
        if reduce and not met_reduction:
            met_reduction = True
            others = [p for p in walk(f) if isinstance(p[-1], BlockRealize)]
            if len(others) != 1:
                raise ScheduleError(
                    "rfactor",
                    "rfactor-block",
                    f"loop {f.loop_var.name!r}, the outermost driving a reduction iterator of "
                    f"block {block.name!r}, holds {len(others)} blocks",
                    func,
                    f,
                )
        elif met_reduction and not spatial and not reduce and _extent(f) != 1:
            raise ScheduleError(
                "rfactor",
                "unbound-loop",
                f"loop {f.loop_var.name!r} drives no iterator of block {block.name!r} and lies "
                "under a loop that drives a reduction iterator",
                func,
                f,
            )


def _same_vars(a: tuple[PrimExpr, ...], b: tuple[PrimExpr, ...]) -> bool:
    """The indices use the same variables in the same places (structural equality alone
    would match ``[vi, vj]`` with ``[vj, vi]``)."""
    found_a, found_b = collect_vars(a), collect_vars(b)
    return len(found_a) == len(found_b) and all(x is y for x, y in zip(found_a, found_b))


def _pattern(site: Site, block: Block) -> tuple[BufferStore, PrimExpr, str]:
    """``B[idx] = B[idx] <op> rhs`` with init ``B[idx] = identity``: the store, rhs and op."""
    body, init = block.body, block.init
    kind = rhs = None
    if isinstance(body, BufferStore):
        with contextlib.suppress(ReducerMismatch):
            kind, rhs = split_update(body)
    if kind is None or rhs is None or not isinstance(body, BufferStore):
        raise ScheduleError(
            "rfactor",
            "reduction-pattern",
            f"block {block.name!r} is not B[...] = B[...] op rhs with op one of +, *, max, min",
            site.func,
            block,
        )
    if not (
        isinstance(init, BufferStore)
        and init.buffer is body.buffer
        and structural_equal(init.indices, body.indices)
        and _same_vars(init.indices, body.indices)
    ):
        where = (
            f"{init.buffer.name}{list(init.indices)}"
            if isinstance(init, BufferStore)
            else "no single element"
        )
        raise ScheduleError(
            "rfactor",
            "init-update",
            f"the init of block {block.name!r} stores {where}, the update "
            f"{body.buffer.name}{list(body.indices)}",
            site.func,
            block,
        )
    value = init.value
    if not isinstance(value, IntImm | FloatImm) or value.value != _IDENTITY.get(kind, value.value):
        raise ScheduleError(
            "rfactor",
            "reducer-identity",
            f"the init of block {block.name!r} stores {value!r}, not the identity of its "
            f"{kind} (factoring would count it once per partial result)",
            site.func,
            block,
        )
    return body, rhs, kind
