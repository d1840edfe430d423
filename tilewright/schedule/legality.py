"""The rules primitives check before they change anything; each raises ``ScheduleError``."""

from __future__ import annotations

import itertools
import re

from tilewright.arith.iter_map import is_affine
from tilewright.ir.expr import IntImm, PrimExpr, Var
from tilewright.ir.functor import collect_vars
from tilewright.ir.scope import unknown_scope_message
from tilewright.ir.stmt import Block, BlockRealize, For, ForKind, IterKind, Stmt
from tilewright.ir.structural import structural_equal
from tilewright.schedule.error import ScheduleError, register_rules
from tilewright.schedule.tree import Path, Site, children, loop_domain, walk

register_rules(
    {
        "compact-dataflow": (
            "every block under a parallel or vectorized loop is complete (spatial, not reading "
            "what it writes) or a reduction (with an init), and the only writer there of its "
            "outputs"
        )
    }
)

THREAD_TAG = re.compile(r"^(blockIdx|threadIdx|vthread)\.[xyz]$|^vthread$")


def uses(expr: object, variables: set[Var]) -> bool:
    return any(v in variables for v in collect_vars(expr))


def check_plain_loop(primitive: str, site: Site) -> None:
    """Split and fuse: the loop starts at 0 and has no annotations or thread binding."""
    loop = site.node
    assert isinstance(loop, For)
    if loop.annotations or loop.kind is ForKind.THREAD_BINDING:
        what = f"is bound to {loop.thread_tag}" if loop.thread_tag else "has annotations"
        raise ScheduleError(
            primitive,
            "plain-loop",
            f"loop {loop.loop_var.name!r} {what}",
            site.func,
            loop,
        )
    if not (isinstance(loop.min, IntImm) and loop.min.value == 0):
        raise ScheduleError(
            primitive,
            "loop-from-zero",
            f"loop {loop.loop_var.name!r} starts at {loop.min!r}, not 0",
            site.func,
            loop,
        )


def check_storage_scope(primitive: str, site: Site, scope: object) -> None:
    """Cache and scope primitives: ``scope`` is a known storage scope ("did you mean")."""
    problem = unknown_scope_message(scope)
    if problem is not None:
        raise ScheduleError(primitive, "storage-scope", problem, site.func, site.node)


def check_distinct(primitive: str, sites: list[Site]) -> None:
    seen: set[int] = set()
    for site in sites:
        if id(site.node) in seen:
            name = site.loop.loop_var.name
            raise ScheduleError(
                primitive, "distinct-loops", f"loop {name!r} is given twice", site.func, site.node
            )
        seen.add(id(site.node))


def block_realizes(site: Site) -> list[Path]:
    """Paths to the block realizes under (and including) the node."""
    return [p for p in walk(site.node, site.path[:-1]) if isinstance(p[-1], BlockRealize)]


def check_blocks_affine(primitive: str, site: Site, check_kinds: bool) -> None:
    """Every block under the node has affine bindings (and, if asked, spatial or reduction
    iterators only)."""
    for path in block_realizes(site):
        realize = path[-1]
        assert isinstance(realize, BlockRealize)
        block = realize.block
        if check_kinds:
            for iv in block.iter_vars:
                if iv.kind not in (IterKind.SPATIAL, IterKind.REDUCE):
                    raise ScheduleError(
                        primitive,
                        "block-iter-kind",
                        f"block {block.name!r} has the {iv.kind.value} iterator {iv.var.name!r}",
                        site.func,
                        block,
                    )
        loops = site.at((*path, block)).enclosing_loops()
        reason = is_affine(realize.iter_values, loop_domain(loops), realize.predicate)
        if reason is not None:
            raise ScheduleError(
                primitive,
                "affine-binding",
                f"block {block.name!r} has a binding that is not affine: {reason}",
                site.func,
                block,
            )


def check_parallelizable(primitive: str, site: Site, thread_tag: str = "") -> None:
    """Parallel, vectorize and bind: only spatial block iterators depend on the loop."""
    loop = site.node
    assert isinstance(loop, For)
    check_blocks_affine(primitive, site, check_kinds=True)
    loop_vars = {loop.loop_var}
    cross_thread = thread_tag.startswith("threadIdx.")
    for path in block_realizes(site):
        realize = path[-1]
        assert isinstance(realize, BlockRealize)
        for iv, value in zip(realize.block.iter_vars, realize.iter_values):
            if iv.kind is IterKind.SPATIAL or not uses(value, loop_vars):
                continue
            if iv.kind is IterKind.REDUCE and cross_thread:
                continue
            raise ScheduleError(
                primitive,
                "data-parallel",
                f"loop {loop.loop_var.name!r} drives the {iv.kind.value} iterator "
                f"{iv.var.name!r} of block {realize.block.name!r}",
                site.func,
                loop,
            )


def child_blocks(site: Site) -> list[Path]:
    """Paths to the blocks under the node that no other block under it encloses."""
    found: list[Path] = []
    stack: list[Path] = [site.path]
    while stack:
        path = stack.pop()
        if isinstance(path[-1], BlockRealize) and len(path) > len(site.path):
            found.append(path)
            continue
        stack.extend((*path, c) for c in reversed(children(path[-1])))
    return found


def check_compact_dataflow(primitive: str, site: Site) -> None:
    """TVM's compact data flow under a loop made parallel or vectorized: each block under it
    is complete (spatial iterators only, no buffer both read and written) or a reduction
    (an init, reduction iterators absent from its write indices), and is the only block under
    the loop writing its outputs. An in-place update such as ``A[i + 1] = A[i + 1] + A[i]``
    is neither: its iterations depend on each other."""
    loop = site.node
    assert isinstance(loop, For)
    blocks = [p[-1] for p in child_blocks(site)]
    for realize in blocks:
        assert isinstance(realize, BlockRealize)
        block = realize.block
        reason = _not_compact(block)
        if reason is None:
            writes = {r.buffer for r in block.writes}
            for other in blocks:
                assert isinstance(other, BlockRealize)
                shared = writes & {r.buffer for r in other.block.writes}
                if other is not realize and shared:
                    name = sorted(b.name for b in shared)[0]
                    reason = f"block {other.block.name!r} under it also writes {name!r}"
                    break
        if reason is not None:
            raise ScheduleError(
                primitive,
                "compact-dataflow",
                f"block {block.name!r} under loop {loop.loop_var.name!r} is neither complete nor "
                f"a reduction: {reason}",
                site.func,
                block,
            )


def _not_compact(block: Block) -> str | None:
    reduce = {iv.var for iv in block.iter_vars if iv.kind is IterKind.REDUCE}
    if block.init is None:
        both = {r.buffer for r in block.reads} & {r.buffer for r in block.writes}
        if reduce:
            return "it has reduction iterators but no init"
        if both:
            name = sorted(b.name for b in both)[0]
            return f"it reads buffer {name!r}, which it writes, without an init"
        return None
    for region in block.writes:
        if uses(tuple(r.min for r in region.region), reduce):
            return f"a reduction iterator indexes the buffer {region.buffer.name!r} it writes"
    return None


def check_thread_axis(primitive: str, site: Site, tag: str) -> None:
    """The tag is a thread axis, bound with the same extent everywhere in its kernel."""
    loop = site.node
    assert isinstance(loop, For)
    if not THREAD_TAG.match(tag):
        raise ScheduleError(
            primitive,
            "thread-axis",
            f"{tag!r} is not a thread axis (blockIdx.x, threadIdx.y, vthread.z, ...)",
            site.func,
            loop,
        )
    kernel = len(site.path) - 1
    for k, stmt in enumerate(site.path[:-1]):
        if isinstance(stmt, For) and stmt.kind is ForKind.THREAD_BINDING:
            kernel = k
            break
    others: list[Stmt] = [s for s in site.path[kernel:-1] if isinstance(s, For)]
    others += [p[-1] for p in walk(site.path[kernel], site.path[:kernel]) if p[-1] is not loop]
    for other in others:
        if not (isinstance(other, For) and other.kind is ForKind.THREAD_BINDING):
            continue
        if other.thread_tag == tag and not _same(other.extent, loop.extent):
            raise ScheduleError(
                primitive,
                "thread-axis",
                f"{tag} is already bound to loop {other.loop_var.name!r} with extent "
                f"{other.extent!r} in this kernel; loop {loop.loop_var.name!r} has extent "
                f"{loop.extent!r}",
                site.func,
                loop,
            )


def _same(a: PrimExpr, b: PrimExpr) -> bool:
    if isinstance(a, IntImm) and isinstance(b, IntImm):
        return a.value == b.value
    return structural_equal(a, b)


def check_reduction_order(primitive: str, site: Site, before: list[For], after: list[For]) -> None:
    """Loops that drive both spatial and reduction iterators of a block with an init keep
    their relative order, so that each output's first update still finds the reduction
    iterators at their start (where the init runs)."""
    position = {id(f): k for k, f in enumerate(after)}
    for path in block_realizes(site):
        realize = path[-1]
        assert isinstance(realize, BlockRealize)
        if realize.block.init is None:
            continue
        spatial: set[Var] = set()
        reduce: set[Var] = set()
        for iv, value in zip(realize.block.iter_vars, realize.iter_values):
            (reduce if iv.kind is IterKind.REDUCE else spatial).update(collect_vars(value))
        mixed = [f for f in before if f.loop_var in spatial and f.loop_var in reduce]
        for outer, inner in itertools.pairwise(mixed):
            if position[id(outer)] > position[id(inner)]:
                raise ScheduleError(
                    primitive,
                    "reduction-order",
                    f"loops {outer.loop_var.name!r} and {inner.loop_var.name!r} both drive "
                    f"spatial and reduction iterators of block {realize.block.name!r}; "
                    "swapping them would run updates before the init",
                    site.func,
                    inner,
                )
