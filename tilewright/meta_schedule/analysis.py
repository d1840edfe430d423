"""What the rules and postprocessors ask of a block or loop: its iterator kinds, whether its
bindings are trivial, whether it reuses data, the extents and bindings of its loops.

Every function reads the schedule's current IR and changes nothing.
"""

from __future__ import annotations

from tilewright.ir import Block, For, ForKind, IntImm, IterKind, PrimFunc, Var, collect_vars
from tilewright.schedule import BlockRV, LoopRV, Schedule
from tilewright.schedule.dataflow import consumers_of, scope_blocks, scope_path

# Annotations the rules and postprocessors exchange (TVM's names).
TILING_STRUCTURE = "meta_schedule.tiling_structure"
COOPERATIVE_FETCH = "meta_schedule.cooperative_fetch"
# A block whose threadIdx.x is a warp's 32 lanes, bound inside its tensor intrinsics.
WARP_EXECUTION = "warp_execution"
PARALLEL = "meta_schedule.parallel"
VECTORIZE = "meta_schedule.vectorize"
UNROLL_EXPLICIT = "meta_schedule.unroll_explicit"
UNROLL_IMPLICIT = "meta_schedule.unroll_implicit"
THREAD_EXTENT_LOW = "meta_schedule.thread_extent_low_inclusive"
THREAD_EXTENT_HIGH = "meta_schedule.thread_extent_high_inclusive"
CUSTOM_RULE = "schedule_rule"
AUTO_UNROLL_MAX_STEP = "pragma_auto_unroll_max_step"
UNROLL_EXPLICIT_PRAGMA = "pragma_unroll_explicit"


def block_of(sch: Schedule, block: BlockRV) -> Block:
    node = sch.get(block)
    assert isinstance(node, Block)
    return node


def loop_of(sch: Schedule, loop: LoopRV) -> For:
    node = sch.get(loop)
    assert isinstance(node, For)
    return node


def annotation(node: Block | For, key: str) -> object:
    """The value of annotation ``key`` (None when absent)."""
    return dict(node.annotations).get(key)


def is_root(sch: Schedule, block: BlockRV) -> bool:
    func = sch.mod[sch.func_working_on]
    body = func.body
    root = body.block if hasattr(body, "block") else body
    return isinstance(root, Block) and block_of(sch, block).name == root.name


def iter_kinds(block: Block) -> str:
    """One letter per iterator: ``S`` spatial, ``R`` reduction, ``O`` other."""
    letters = {IterKind.SPATIAL: "S", IterKind.REDUCE: "R"}
    return "".join(letters.get(iv.kind, "O") for iv in block.iter_vars)


def is_spatial(block: Block) -> bool:
    return all(iv.kind is IterKind.SPATIAL for iv in block.iter_vars)


def is_reduction(block: Block) -> bool:
    """A reduction block: spatial and reduction iterators only, at least one of each kind
    or an init."""
    kinds = iter_kinds(block)
    return "O" not in kinds and "R" in kinds and block.init is not None


def loop_iter_kinds(sch: Schedule, block: BlockRV) -> list[str]:
    """For each loop above the block (outermost first): ``S`` when it drives only spatial
    iterators, ``R`` only reduction ones, ``-`` none, ``X`` both or other kinds."""
    node = block_of(sch, block)
    realize = sch.get_realize(block)
    loops = [loop_of(sch, lp) for lp in sch.get_loops(block)]
    result = []
    for loop in loops:
        kinds = {
            iv.kind
            for iv, value in zip(node.iter_vars, realize.iter_values)
            if loop.loop_var in collect_vars(value)
        }
        if not kinds:
            result.append("-")
        elif kinds == {IterKind.SPATIAL}:
            result.append("S")
        elif kinds == {IterKind.REDUCE}:
            result.append("R")
        else:
            result.append("X")
    return result


def is_trivial_binding(sch: Schedule, block: BlockRV) -> bool:
    """Each iterator is bound to a distinct loop variable of the loops above the block."""
    realize = sch.get_realize(block)
    loop_vars = {loop_of(sch, lp).loop_var for lp in sch.get_loops(block)}
    values = realize.iter_values
    return all(isinstance(v, Var) and v in loop_vars for v in values) and len(
        {v for v in values if isinstance(v, Var)}
    ) == len(values)


def needs_multi_level_tiling(sch: Schedule, block: BlockRV) -> bool:
    """A block worth tiling at several levels: one output, trivial bindings, a reduction,
    and some input not indexed by every non-unit spatial iterator (so tiles reuse data)."""
    node = block_of(sch, block)
    if annotation(node, TILING_STRUCTURE) is not None:
        return False
    if len(node.writes) != 1 or not node.reads or is_spatial(node):
        return False
    if "O" in iter_kinds(node) or not is_trivial_binding(sch, block):
        return False
    write = node.writes[0].buffer
    spatial = [
        iv.var
        for iv in node.iter_vars
        if iv.kind is IterKind.SPATIAL
        and not (isinstance(iv.dom.extent, IntImm) and iv.dom.extent.value == 1)
    ]
    seen = set()
    unused = 0
    for region in node.reads:
        if region.buffer in seen:
            return False
        seen.add(region.buffer)
        if region.buffer is write or region.buffer == write:
            continue
        used: set[Var] = set()
        for r in region.region:
            if not isinstance(r.extent, IntImm):
                return False
            used.update(collect_vars(r.min))
        unused += sum(1 for v in spatial if v not in used)
    return unused >= 1


def extent_of(sch: Schedule, loop: LoopRV) -> int | None:
    """The loop's constant extent (None when symbolic)."""
    extent = loop_of(sch, loop).extent
    return extent.value if isinstance(extent, IntImm) else None


def spatial_and_reduce_extents(sch: Schedule, block: BlockRV) -> tuple[int, int]:
    """Products of the block's spatial and of its reduction iterator domains (symbolic: 0)."""
    space, reduce = 1, 1
    for iv in block_of(sch, block).iter_vars:
        extent = iv.dom.extent
        size = extent.value if isinstance(extent, IntImm) else 0
        if iv.kind is IterKind.SPATIAL:
            space *= size
        elif iv.kind is IterKind.REDUCE:
            reduce *= size
    return space, reduce


def is_output_block(sch: Schedule, block: BlockRV) -> bool:
    """The block writes a buffer of the function's parameters."""
    func: PrimFunc = sch.mod[sch.func_working_on]
    params = {buf for _, buf in func.buffer_map}
    return any(region.buffer in params for region in block_of(sch, block).writes)


def has_consumers(sch: Schedule, block: BlockRV) -> bool:
    site = sch.state.block_ref_site(block, "has_consumers")
    return bool(consumers_of(scope_blocks(scope_path(site)), site.block))


def is_thread_bound(loop: For) -> bool:
    return loop.kind is ForKind.THREAD_BINDING


def bound_tags(sch: Schedule, block: BlockRV) -> dict[str, int]:
    """Thread tags bound by loops above the block (whole function, not only its scope),
    with their constant extents."""
    site = sch.state.block_ref_site(block, "bound_tags")
    found: dict[str, int] = {}
    for node in site.path:
        if isinstance(node, For) and is_thread_bound(node) and isinstance(node.extent, IntImm):
            found[node.thread_tag] = node.extent.value
    return found
