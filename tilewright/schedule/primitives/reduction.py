"""Reductions: split a reduction block's init into its own block (``decompose_reduction``)
and factor a reduction loop into a partial-result buffer (``rfactor``)."""

from __future__ import annotations

from tilewright.ir.expr import PrimExpr, Var
from tilewright.ir.function import PrimFunc
from tilewright.ir.functor import collect_vars, substitute
from tilewright.ir.stmt import Block, BlockRealize, For, IterKind, IterVar, Stmt, seq
from tilewright.schedule.error import ScheduleError
from tilewright.schedule.tree import Site, update, with_child


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
    if set(collect_vars(realize.predicate)) & skipped:
        raise ScheduleError(
            "decompose_reduction",
            "location",
            f"the predicate of block {block.name!r} depends on a reduction loop under "
            f"{loop.loop_var.name!r}",
            func,
            block,
        )
    iter_vars: list[IterVar] = []
    values: list[PrimExpr] = []
    renamed: dict[Var, PrimExpr] = {}
    for iv, value in zip(block.iter_vars, realize.iter_values):
        if iv.kind is IterKind.REDUCE:
            continue
        new_var = Var(iv.var.name, iv.var.dtype)
        renamed[iv.var] = new_var
        iter_vars.append(update(iv, var=new_var))
        values.append(substitute(value, mapping))  # type: ignore[arg-type]
    init_name = f"{block.name}_init"
    update_name = f"{block.name}_update"
    init_block = Block(
        init_name,
        tuple(iter_vars),
        (),
        tuple(substitute(w, renamed) for w in block.writes),  # type: ignore[misc]
        substitute(block.init, renamed),  # type: ignore[arg-type]
    )
    stmt: Stmt = BlockRealize(
        tuple(values),
        substitute(realize.predicate, mapping),  # type: ignore[arg-type]
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
