"""Reductions: split a reduction block's init into its own block (``decompose_reduction``);
``rfactor`` lives in ``rfactor.py`` and is re-exported here."""

from __future__ import annotations

from tilewright.ir import op
from tilewright.ir.expr import And, PrimExpr, Var
from tilewright.ir.function import PrimFunc
from tilewright.ir.functor import collect_vars, substitute
from tilewright.ir.stmt import (
    Block,
    BlockRealize,
    For,
    IterKind,
    IterVar,
    Stmt,
    seq,
)
from tilewright.schedule.dataflow import check_reduction_in_scope
from tilewright.schedule.error import ScheduleError
from tilewright.schedule.primitives.rfactor import rfactor
from tilewright.schedule.tree import Site, update, with_child

__all__ = ["decompose_reduction", "rfactor"]


def decompose_reduction(block_site: Site, loop_site: Site) -> tuple[PrimFunc, str, str]:
    """Move the block's init into a new block ``<name>_init`` placed just before ``loop``,
    under copies (``<loop>_init``, without annotations) of the loops from ``loop`` down to
    the block that its spatial bindings use, with the block's spatial iterators and
    annotations; the block, now without init, is renamed ``<name>_update``.

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
    # As TVM does, the init runs under copies of the loops its spatial bindings use (a
    # loop that also drives a reduction iterator too: the init nest ends before the updates
    # begin); the others (reduction loops, loops that drive nothing) are dropped.
    copied: list[For] = []
    mapping: dict[Var, PrimExpr] = {}
    for f in below:
        if f.loop_var not in spatial_vars:
            continue
        var = Var(f"{f.loop_var.name}_init", f.loop_var.dtype)
        mapping[f.loop_var] = var
        copied.append(f)
    skipped = {f.loop_var for f in below if f.loop_var not in mapping}
    # As TVM does: the init keeps the conjuncts of the predicate over its own loops only.
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
        annotations=block.annotations,
    )
    stmt: Stmt = BlockRealize(
        tuple(values),
        substitute(init_predicate, mapping),
        init_block,
    )
    for f in reversed(copied):
        stmt = update(f, loop_var=mapping[f.loop_var], body=stmt, annotations=())
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
