"""Reductions: split a reduction block's init into its own block (``decompose_reduction``)
and factor a reduction loop into a partial-result buffer (``rfactor``)."""

from __future__ import annotations

from tilewright.arith.region import block_access_regions
from tilewright.arith.simplify import simplify
from tilewright.ir import op
from tilewright.ir.buffer import decl_buffer
from tilewright.ir.comm_reducer import OPERATORS, ReducerMismatch, split_update
from tilewright.ir.expr import And, BufferLoad, IntImm, PrimExpr, Range, Var
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
from tilewright.schedule.dataflow import check_reduction_in_scope
from tilewright.schedule.error import ScheduleError
from tilewright.schedule.tree import Site, rebuild, update, walk, with_child


def decompose_reduction(block_site: Site, loop_site: Site) -> tuple[PrimFunc, str, str]:
    """Move the block's init into a new block ``<name>_init`` placed just before ``loop``,
    under copies (``<loop>_init``) of the loops between ``loop`` and the block that drive no
    reduction iterator; the block, now without init, is renamed ``<name>_update``.

    Returns the function, the init block's name and the update block's new name.

    Example::

        sch.decompose_reduction(block_C, k0)   # C_init over i_2_init, j_2_init; C_update
    """
    func = block_site.func
    block = block_site.node
    assert isinstance(block, Block)
    realize = block_site.path[-2]
    assert isinstance(realize, BlockRealize)
    loop = loop_site.loop
    if block.init is None:
        raise ScheduleError(
            "decompose_reduction",
            "reduction-block",
            f"block {block.name!r} has no init: it is not a reduction block",
            func,
            block,
        )
    position = next((k for k, s in enumerate(block_site.path) if s is loop), None)
    start = block_site.scope_index() + 1
    if position is None or position < start:
        raise ScheduleError(
            "decompose_reduction",
            "location",
            f"loop {loop.loop_var.name!r} is not above block {block.name!r} in its scope",
            func,
            loop,
        )
    reduce_vars: set[Var] = set()
    spatial_vars: set[Var] = set()
    for iv, value in zip(block.iter_vars, realize.iter_values):
        target = reduce_vars if iv.kind is IterKind.REDUCE else spatial_vars
        target.update(collect_vars(value))
    above = [s for s in block_site.path[start:position] if isinstance(s, For)]
    for f in above:
        if f.loop_var in reduce_vars:
            raise ScheduleError(
                "decompose_reduction",
                "location",
                f"loop {f.loop_var.name!r} above loop {loop.loop_var.name!r} drives a reduction "
                f"iterator of block {block.name!r}; the init would run more than once",
                func,
                f,
            )
    below = [s for s in block_site.path[position:-2] if isinstance(s, For)]
    scope_loops = {f.loop_var for f in (*above, *below)}
    check_reduction_in_scope("decompose_reduction", block_site, realize, scope_loops)
    copied: list[For] = []
    mapping: dict[Var, PrimExpr] = {}
    for f in below:
        if f.loop_var in reduce_vars:
            if f.loop_var in spatial_vars:
                raise ScheduleError(
                    "decompose_reduction",
                    "location",
                    f"loop {f.loop_var.name!r} drives both spatial and reduction iterators of "
                    f"block {block.name!r}",
                    func,
                    f,
                )
            continue
        var = Var(f"{f.loop_var.name}_init", f.loop_var.dtype)
        mapping[f.loop_var] = var
        copied.append(f)
    skipped = {f.loop_var for f in below if f.loop_var not in mapping}
    # As TVM does: the init keeps the conjuncts of the predicate over spatial loops only.
    # Those over reduction loops bound the reduction (a split's `k_0 * 4 + k_1 < 10`), which
    # its first iteration satisfies.
    init_predicate = op.const(True)
    for term in _conjuncts(realize.predicate):
        if not set(collect_vars(term)) & skipped:
            init_predicate = op.logical_and(init_predicate, term)
    iter_vars: list[IterVar] = []
    values: list[PrimExpr] = []
    renamed: dict[Var, PrimExpr] = {}
    for iv, value in zip(block.iter_vars, realize.iter_values):
        if iv.kind is IterKind.REDUCE:
            continue
        new_var = Var(iv.var.name, iv.var.dtype)
        renamed[iv.var] = new_var
        iter_vars.append(update(iv, var=new_var))
        values.append(substitute(value, mapping))
    init_name = f"{block.name}_init"
    update_name = f"{block.name}_update"
    init_block = Block(
        init_name,
        tuple(iter_vars),
        (),
        tuple(substitute(w, renamed) for w in block.writes),
        substitute(block.init, renamed),
    )
    stmt: Stmt = BlockRealize(
        tuple(values),
        substitute(init_predicate, mapping),
        init_block,
    )
    for f in reversed(copied):
        stmt = update(f, loop_var=mapping[f.loop_var], body=stmt)
    # Without its init the block reads what it accumulates into (TVM lists it first).
    have = {r.buffer for r in block.reads}
    reads = (*(w for w in block.writes if w.buffer not in have), *block.reads)
    new_block = update(block, name=update_name, init=None, reads=reads)
    path = block_site.path
    body: Stmt = update(realize, block=new_block)
    for k in range(len(path) - 3, position - 1, -1):
        body = with_child(path[k], path[k + 1], body)
    new_loop = body
    outer = block_site.at(path[: position + 1])
    return outer.replaced(seq(stmt, new_loop)), init_name, update_name


def _conjuncts(cond: PrimExpr) -> list[PrimExpr]:
    """The terms of ``a and b and ...``."""
    if isinstance(cond, And):
        return [*_conjuncts(cond.a), *_conjuncts(cond.b)]
    return [cond]


def _pattern(site: Site, block: Block) -> tuple[BufferStore, PrimExpr, type]:
    """``B[idx] = B[idx] <op> rhs`` with op one of +, *, max, min: the store, rhs and op."""
    body = block.body
    if isinstance(body, BufferStore):
        try:
            kind, rhs = split_update(body)
        except ReducerMismatch:
            pass
        else:
            return body, rhs, OPERATORS[kind]
    raise ScheduleError(
        "rfactor",
        "reduction-pattern",
        f"block {block.name!r} is not B[...] = B[...] op rhs with op one of +, *, max, min",
        site.func,
        block,
    )


def rfactor(loop_site: Site, factor_axis: int) -> tuple[PrimFunc, str]:
    """Factor the reduction over ``loop`` into a buffer ``<B>_rf`` that keeps one partial
    result per iteration of the loop (a new dimension at ``factor_axis``): block ``<name>_rf``
    computes the partial results under the original loops and the original block, under
    copies of its spatial loops and ``loop``, reduces them into ``B``.

    Example::

        B[vi] += A[vi, vk] over k_0, k_1; rfactor(k_1, 0)
        ->  B_rf[vk_1, vi] += A[vi, vk_0 * 4 + vk_1];  B[vi] += B_rf[vk_1, vi]
    """
    func = loop_site.func
    loop = loop_site.loop
    rpath, realize = loop_site.only_block("rfactor")
    block = realize.block
    if block.init is None:
        raise ScheduleError(
            "rfactor",
            "reduction-block",
            f"block {block.name!r} has no init: it is not a reduction block",
            func,
            block,
        )
    store, rhs, combiner = _pattern(loop_site, block)
    block_site = loop_site.at((*rpath, block))
    start = block_site.scope_index() + 1
    nest = [s for s in rpath[start:-1] if isinstance(s, For)]
    top = next(k for k in range(start, len(rpath)) if isinstance(rpath[k], For))
    if len([p for p in walk(rpath[top]) if isinstance(p[-1], BlockRealize)]) != 1:
        raise ScheduleError(
            "rfactor",
            "rfactor-block",
            f"the loop nest of block {block.name!r} holds other blocks",
            func,
            rpath[top],
        )
    reduce_vars: set[Var] = set()
    spatial_vars: set[Var] = set()
    for iv, value in zip(block.iter_vars, realize.iter_values):
        if iv.kind not in (IterKind.SPATIAL, IterKind.REDUCE):
            raise ScheduleError(
                "rfactor", "block-iter-kind", f"block {block.name!r} has {iv.kind.value}", func
            )
        (reduce_vars if iv.kind is IterKind.REDUCE else spatial_vars).update(collect_vars(value))
    if loop.loop_var not in reduce_vars or loop.loop_var in spatial_vars:
        raise ScheduleError(
            "rfactor",
            "rfactor-loop",
            f"loop {loop.loop_var.name!r} must drive reduction iterators of block "
            f"{block.name!r} and no spatial one",
            func,
            loop,
        )
    for f in nest:
        if f.loop_var in reduce_vars and f.loop_var in spatial_vars:
            raise ScheduleError(
                "rfactor",
                "rfactor-loop",
                f"loop {f.loop_var.name!r} drives both spatial and reduction iterators",
                func,
                f,
            )
    check_reduction_in_scope("rfactor", block_site, realize, {f.loop_var for f in nest})
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
    buffer = store.buffer
    names = {p[-1].name for p in walk(func.body) if isinstance(p[-1], Block)}
    rf_name = f"{block.name}_rf"
    if rf_name in names:
        raise ScheduleError("rfactor", "unique-block-names", f"{rf_name!r} exists", func, block)
    shape = (*buffer.shape[:axis], loop.extent, *buffer.shape[axis:])
    rf = decl_buffer(shape, buffer.dtype, f"{buffer.name}_rf", buffer.scope)

    # The rf block: spatial iterators, one per reduction loop (the factored one spatial).
    spatial_ivs = [iv for iv in block.iter_vars if iv.kind is IterKind.SPATIAL]
    new_spatial = {iv.var: Var(iv.var.name, iv.var.dtype) for iv in spatial_ivs}
    loop_ivs: dict[Var, Var] = {}
    rf_iters: list[IterVar] = [update(iv, var=new_spatial[iv.var]) for iv in spatial_ivs]
    rf_values: list[PrimExpr] = [
        v for iv, v in zip(block.iter_vars, realize.iter_values) if iv.kind is IterKind.SPATIAL
    ]
    for f in nest:
        if f.loop_var not in reduce_vars:
            continue
        var = Var(f"v{f.loop_var.name}", f.loop_var.dtype)
        loop_ivs[f.loop_var] = var
        kind = IterKind.SPATIAL if f is loop else IterKind.REDUCE
        rf_iters.append(IterVar(var, Range(f.min, f.extent), kind))
        rf_values.append(f.loop_var)
    body_map: dict[Var, PrimExpr] = dict(new_spatial)
    for iv, v in zip(block.iter_vars, realize.iter_values):
        if iv.kind is IterKind.REDUCE:
            body_map[iv.var] = substitute(v, loop_ivs)
    rf_index = [substitute(i, body_map) for i in store.indices]
    rf_index.insert(axis, loop_ivs[loop.loop_var])
    rf_idx = tuple(rf_index)
    rf_load = BufferLoad(rf, rf_idx)
    assert isinstance(block.init, BufferStore)
    rf_block = Block(
        rf_name,
        tuple(rf_iters),
        (),
        (),
        BufferStore(rf, combiner(rf_load, substitute(rhs, body_map)), rf_idx),
        BufferStore(rf, substitute(block.init.value, body_map), rf_idx),
    )
    reads, writes = block_access_regions(rf_block)
    rf_block = update(rf_block, reads=reads, writes=writes)
    rf_realize = BlockRealize(tuple(rf_values), realize.predicate, rf_block)
    rf_nest = rebuild(rpath[top:], rf_realize)

    # The write-back block under copies of the spatial loops and the factored loop.
    copies = {f.loop_var: Var(f.loop_var.name, f.loop_var.dtype) for f in nest}
    kept = [f for f in nest if f is loop or f.loop_var not in reduce_vars]
    wb_var = Var(f"v{loop.loop_var.name}", loop.loop_var.dtype)
    wb_index = list(store.indices)
    wb_index.insert(axis, wb_var)
    wb_iters = (*spatial_ivs, IterVar(wb_var, Range(loop.min, loop.extent), IterKind.REDUCE))
    wb_values = [substitute(v, copies) for v in rf_values[: len(spatial_ivs)]]
    wb_values.append(copies[loop.loop_var])
    wb_block = update(
        block,
        iter_vars=wb_iters,
        body=BufferStore(
            buffer,
            combiner(BufferLoad(buffer, store.indices), BufferLoad(rf, tuple(wb_index))),
            store.indices,
        ),
    )
    reads, writes = block_access_regions(wb_block)
    wb_block = update(wb_block, reads=reads, writes=writes)
    # A partial result exists when some iteration of the other reduction loops passes the
    # predicate; a split's bound is weakest at their start, so test it there.
    firsts: dict[Var, PrimExpr] = {f.loop_var: f.min for f in nest if f not in kept}
    firsts.update({v: copies[v] for v in (f.loop_var for f in kept)})
    wb_predicate = simplify(substitute(realize.predicate, firsts))
    wb: Stmt = BlockRealize(tuple(wb_values), wb_predicate, wb_block)
    for f in reversed(kept):
        loop_kind = ForKind.SERIAL if f is loop else f.kind
        tag = "" if f is loop else f.thread_tag
        wb = update(f, loop_var=copies[f.loop_var], body=wb, kind=loop_kind, thread_tag=tag)
    new_func = loop_site.at(rpath[: top + 1]).replaced(seq(rf_nest, wb))
    scope = rpath[start - 1]
    assert isinstance(scope, Block)
    for path in walk(new_func.body):
        if isinstance(path[-1], Block) and path[-1].name == scope.name:
            node = path[-1]
            new_scope = update(node, alloc_buffers=(*node.alloc_buffers, rf))
            return new_func.with_body(rebuild(path, new_scope)), rf_name
    raise AssertionError("scope block not found")
