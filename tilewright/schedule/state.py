"""The schedule state: the current IRModule and what each block and loop reference stands for.

Blocks are keyed by name (unique within a function) and loops by their loop variable, which
every primitive that keeps a loop also keeps; a reference whose loop or block is gone is
stale and using it raises ``ScheduleError``.
"""

from __future__ import annotations

from dataclasses import dataclass

from tilewright.ir.expr import Var
from tilewright.ir.function import PrimFunc
from tilewright.ir.module import IRModule
from tilewright.ir.stmt import Block, BlockRealize, For, Stmt
from tilewright.schedule.error import ScheduleError
from tilewright.schedule.reference import BlockRV, ExprRV, LoopRV
from tilewright.schedule.tree import Path, Site, walk


@dataclass(frozen=True)
class BlockKey:
    func_name: str
    name: str


@dataclass(frozen=True)
class LoopKey:
    func_name: str
    var: Var


@dataclass(frozen=True)
class MarkKey:
    """What a sampled compute location stands for when it is no loop: ``root`` (stay where
    the block is) or ``inline``."""

    mark: str


class _Index:
    """Paths to every block and loop of one function, built by a single walk."""

    def __init__(self, func: PrimFunc) -> None:
        self.func = func
        self.blocks: dict[str, Path] = {}
        self.loops: dict[Var, Path] = {}
        self.duplicate: str | None = None
        for path in walk(func.body):
            node = path[-1]
            if isinstance(node, Block):
                if node.name in self.blocks and self.duplicate is None:
                    self.duplicate = node.name
                self.blocks[node.name] = path
            elif isinstance(node, For):
                self.loops[node.loop_var] = path


class ScheduleState:
    """The module being scheduled and the table from references to blocks and loops."""

    def __init__(self, mod: IRModule) -> None:
        self.mod = mod
        self.refs: dict[BlockRV | LoopRV, BlockKey | LoopKey | MarkKey] = {}
        self.exprs: dict[ExprRV, int] = {}
        self.removed: set[BlockRV | LoopRV | ExprRV] = set()  # by remove_rv
        self._indices: dict[str, _Index] = {}
        for name, _ in mod.items():
            index = self.index(name)
            if index.duplicate is not None:
                raise ScheduleError(
                    "Schedule",
                    "unique-block-names",
                    f"function {name!r} has two blocks named {index.duplicate!r}",
                    index.func,
                )

    def copy(self) -> ScheduleState:
        other = ScheduleState.__new__(ScheduleState)
        other.mod = self.mod
        other.refs = dict(self.refs)
        other.exprs = dict(self.exprs)
        other.removed = set(self.removed)
        other._indices = dict(self._indices)
        return other

    def index(self, func_name: str) -> _Index:
        func = self.mod[func_name]
        cached = self._indices.get(func_name)
        if cached is None or cached.func is not func:
            cached = self._indices[func_name] = _Index(func)
        return cached

    def block_site(self, func_name: str, name: str, primitive: str) -> Site:
        if func_name not in self.mod:
            names = ", ".join(self.mod) or "none"
            raise ScheduleError(
                primitive, "unknown-block", f"the module has no function {func_name!r} ({names})"
            )
        index = self.index(func_name)
        path = index.blocks.get(name)
        if path is None:
            known = ", ".join(repr(n) for n in index.blocks) or "none"
            raise ScheduleError(
                primitive,
                "unknown-block",
                f"function {func_name!r} has no block named {name!r} (blocks: {known})",
                index.func,
            )
        return Site(func_name, index.func, path)

    def site(self, ref: BlockRV | LoopRV, primitive: str) -> Site:
        """Where ``ref``'s block (its ``Block`` node) or loop is now."""
        key = self.refs.get(ref)
        if key is None:
            raise ScheduleError(primitive, "stale-reference", self.unknown(ref))
        if isinstance(key, MarkKey):
            raise ScheduleError(
                primitive,
                "location-mark",
                f"{ref!r} is the compute location {key.mark!r}, not a loop",
            )
        index = self.index(key.func_name)
        if isinstance(key, BlockKey):
            path = index.blocks.get(key.name)
            what = f"block {key.name!r}"
        else:
            path = index.loops.get(key.var)
            what = f"loop {key.var.name!r}"
        if path is None:
            raise ScheduleError(
                primitive,
                "stale-reference",
                f"{what} no longer exists: a primitive such as split or fuse replaced it",
                index.func,
            )
        return Site(key.func_name, index.func, path)

    def loop_site(self, ref: object, primitive: str) -> Site:
        if not isinstance(ref, LoopRV):
            raise ScheduleError(primitive, "argument", f"expected a LoopRV, got {ref!r}")
        return self.site(ref, primitive)

    def block_ref_site(self, ref: object, primitive: str) -> Site:
        if not isinstance(ref, BlockRV):
            raise ScheduleError(primitive, "argument", f"expected a BlockRV, got {ref!r}")
        return self.site(ref, primitive)

    def any_site(self, ref: object, primitive: str) -> Site:
        if not isinstance(ref, BlockRV | LoopRV):
            raise ScheduleError(primitive, "argument", f"expected a BlockRV or LoopRV, got {ref!r}")
        return self.site(ref, primitive)

    def commit(self, func_name: str, func: PrimFunc) -> None:
        """Make ``func`` the current version of ``func_name``."""
        self.mod = self.mod.with_function(func_name, func)

    def block_ref(self, func_name: str, block: Stmt) -> BlockRV:
        if isinstance(block, BlockRealize):
            block = block.block
        assert isinstance(block, Block)
        name = block.name
        ref = BlockRV()
        self.refs[ref] = BlockKey(func_name, name)
        return ref

    def loop_ref(self, func_name: str, loop: For | Var) -> LoopRV:
        var = loop.loop_var if isinstance(loop, For) else loop
        ref = LoopRV()
        self.refs[ref] = LoopKey(func_name, var)
        return ref

    def mark_ref(self, mark: str) -> LoopRV:
        """A loop reference standing for the compute location ``root`` or ``inline``."""
        ref = LoopRV()
        self.refs[ref] = MarkKey(mark)
        return ref

    def mark_of(self, ref: object) -> str | None:
        """``root`` or ``inline`` when ``ref`` is such a mark, else None."""
        key = self.refs.get(ref) if isinstance(ref, LoopRV) else None
        return key.mark if isinstance(key, MarkKey) else None

    def unknown(self, ref: BlockRV | LoopRV | ExprRV) -> str:
        """Why ``ref`` stands for nothing in this schedule."""
        if ref in self.removed:
            return f"{ref!r} was removed from the schedule by remove_rv"
        return f"{ref!r} was not created by this schedule"

    def expr_ref(self, value: int) -> ExprRV:
        ref = ExprRV()
        self.exprs[ref] = value
        return ref

    def rename_block(self, func_name: str, old: str, new: str) -> None:
        """Point the references to block ``old`` at its new name ``new``."""
        for ref, key in list(self.refs.items()):
            if isinstance(key, BlockKey) and key.func_name == func_name and key.name == old:
                self.refs[ref] = BlockKey(func_name, new)

    def block_ref_named(self, func_name: str, name: str) -> BlockRV:
        """A new reference to the block named ``name``."""
        ref = BlockRV()
        self.refs[ref] = BlockKey(func_name, name)
        return ref
