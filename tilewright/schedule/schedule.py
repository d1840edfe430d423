"""``Schedule``: the user-facing facade. Each method normalises its arguments, calls a pure
primitive, commits the new function, and appends a trace record; a refused call changes
nothing."""

from __future__ import annotations

import numbers
import random
from collections.abc import Sequence
from typing import Any, TypeGuard, cast, overload

from tilewright.ir.expr import IntImm, PrimExpr
from tilewright.ir.function import PrimFunc
from tilewright.ir.module import IRModule
from tilewright.ir.stmt import AttrValue, Block, BlockRealize, For
from tilewright.schedule.block_methods import BlockMethods
from tilewright.schedule.buffer_methods import BufferMethods
from tilewright.schedule.error import ScheduleError
from tilewright.schedule.instruction import Instruction, Ref
from tilewright.schedule.iter_methods import IterMethods
from tilewright.schedule.primitives import annotate as annotate_
from tilewright.schedule.primitives import for_kind, get, loops
from tilewright.schedule.reference import BlockRV, ExprRV, LoopRV, rv_value, rvs_in
from tilewright.schedule.reindex_methods import ReindexMethods
from tilewright.schedule.sampling_methods import SamplingMethods
from tilewright.schedule.state import ScheduleState
from tilewright.schedule.trace import Trace
from tilewright.schedule.tvm_phrases import with_tvm_phrases

BlockArg = BlockRV | str


@with_tvm_phrases  # TVM's wording next to ours in every ScheduleError
class Schedule(BlockMethods, SamplingMethods, IterMethods, BufferMethods, ReindexMethods):
    """Transforms the functions of a module without changing what they compute.

    Args:
        mod: an ``IRModule`` or a ``PrimFunc`` (scheduled as ``{"main": func}``).
        seed: seeds the generator the ``sample_*`` methods draw from (None: a random seed).

    Example::

        sch = Schedule(mod)
        (i,) = sch.get_loops(sch.get_block("C"))
        i0, i1 = sch.split(i, [None, 128])
        sch.bind(i0, "blockIdx.x")
        sch.mod.show()
    """

    def __init__(
        self,
        mod: IRModule | PrimFunc,
        *,
        seed: int | None = None,
        debug_mask: str | int = "all",
        error_render_level: str = "detail",
        enable_check: bool = True,
    ) -> None:
        if isinstance(mod, PrimFunc):
            mod = IRModule({"main": mod})
        if not isinstance(mod, IRModule):
            raise TypeError(f"Schedule takes an IRModule or a PrimFunc, not {type(mod).__name__}")
        self._state = ScheduleState(mod)
        self._insts: list[Instruction] = []
        names = list(mod)
        self._func_name = names[0] if len(names) == 1 else "main"
        self._rng = random.Random(seed if seed is not None and seed >= 0 else None)

    # ---- state ---------------------------------------------------------------------------
    @property
    def mod(self) -> IRModule:
        """The module as scheduled so far."""
        return self._state.mod

    @property
    def state(self) -> ScheduleState:
        """The module and the table of references (what analyses read; TVM's ``sch.state``)."""
        return self._state

    @property
    def trace(self) -> Trace:
        """The primitive calls made so far."""
        return Trace(self._insts)

    @property
    def func_working_on(self) -> str:
        return self._func_name

    def work_on(self, func_name: str) -> None:
        """Make ``func_name`` the default function of ``get_block``."""
        if func_name not in self.mod:
            raise ScheduleError("work_on", "unknown-block", f"no function {func_name!r}")
        self._func_name = func_name

    def copy(self) -> Schedule:
        """An independent schedule in the same state; existing references stay valid in it.
        Its generator is seeded from this one's (``fork_seed``)."""
        other = Schedule.__new__(Schedule)
        other._state = self._state.copy()
        other._insts = list(self._insts)
        other._func_name = self._func_name
        other._rng = random.Random(self.fork_seed())
        return other

    @overload
    def get(self, ref: PrimExpr) -> int: ...
    @overload
    def get(self, ref: BlockRV | LoopRV) -> Block | For: ...
    def get(self, ref: BlockRV | LoopRV | PrimExpr) -> Block | For | int:
        """The IR node a reference stands for now, or the value a sampled ``ExprRV`` took
        (of an expression of them, such as ``v0 * v1``, its value, as in TVM)."""
        if isinstance(ref, PrimExpr):
            return self._expr(ref, "get")
        node = self._state.any_site(ref, "get").node
        assert isinstance(node, Block | For)
        return node

    def get_realize(self, block: BlockRV) -> BlockRealize:
        """The ``BlockRealize`` around a block now: its bindings and predicate.

        Example::

            realize = sch.get_realize(sch.get_block("C"))
            realize.iter_values   # (i, j, k)
        """
        site = self._state.block_ref_site(block, "get_realize")
        parent = site.path[-2] if len(site.path) > 1 else None
        if not isinstance(parent, BlockRealize):
            raise ScheduleError("get_realize", "root-block", f"{block!r} is the root block")
        return parent

    def enter_postproc(self) -> None:
        """Mark the end of the design space in the trace: what follows was added by
        postprocessors (``Trace.apply_to_schedule(..., remove_postproc=True)`` stops here)."""
        self._record("enter_postproc", (), ())

    def show(self) -> None:
        """Print the scheduled module."""
        self.mod.show()

    def _record(
        self,
        kind: str,
        inputs: Sequence[object],
        attrs: Sequence[object],
        outputs: Sequence[Ref | None] = (),
        decision: object = None,
    ) -> None:
        self._insts.append(Instruction(kind, tuple(inputs), tuple(attrs), tuple(outputs), decision))

    def _expr(self, ref: PrimExpr, primitive: str) -> int:
        for rv in [ref] if isinstance(ref, ExprRV) else rvs_in(ref):
            if rv not in self._state.exprs:
                raise ScheduleError(primitive, "stale-reference", self._state.unknown(rv))
        if isinstance(ref, ExprRV):
            return self._state.exprs[ref]
        value = rv_value(ref, self._state.exprs)
        if value is None:
            raise ScheduleError(primitive, "argument", f"{ref} is not an integer of ExprRVs")
        return value

    @overload
    def _target(self, ref: BlockArg) -> BlockRV: ...
    @overload
    def _target(self, ref: LoopRV) -> LoopRV: ...
    def _target(self, ref: BlockArg | LoopRV) -> BlockRV | LoopRV:
        # TVM accepts a block's name wherever a block is expected; it records a get_block.
        return self.get_block(ref) if isinstance(ref, str) else ref

    # ---- queries -------------------------------------------------------------------------
    def get_block(self, name: str, func_name: str | None = None) -> BlockRV:
        """A reference to the block named ``name``.

        Args:
            name: the block's name (unique within its function).
            func_name: the function; by default the one worked on (``main``).

        Example::

            block_C = sch.get_block("C")
        """
        func_name = func_name or self._func_name
        site = self._state.block_site(func_name, name, "get_block")
        ref = self._state.block_ref(func_name, site.node)
        self._record("get_block", (), (name, func_name), (ref,))
        return ref

    get_sblock = get_block

    def get_loops(self, block: BlockArg) -> list[LoopRV]:
        """References to the loops above ``block`` up to its enclosing block, outermost first.

        Example::

            i, j, k = sch.get_loops(sch.get_block("C"))
        """
        target = self._target(block)
        site = self._state.block_ref_site(target, "get_loops")
        refs = [self._state.loop_ref(site.func_name, f) for f in get.get_loops(site)]
        self._record("get_loops", (target,), (), refs)
        return refs

    def get_child_blocks(self, block_or_loop: BlockArg | LoopRV) -> list[BlockRV]:
        """The blocks directly under a block or loop (not inside other blocks), in order.

        Example::

            producer, consumer = sch.get_child_blocks(sch.get_block("root"))
        """
        target = self._target(block_or_loop)
        site = self._state.any_site(target, "get_child_blocks")
        refs = [self._state.block_ref(site.func_name, b) for b in get.get_child_blocks(site)]
        self._record("get_child_blocks", (target,), (), refs)
        return refs

    # ---- loop transformations ------------------------------------------------------------
    def split(
        self,
        loop: LoopRV,
        factors: Sequence[int | IntImm | ExprRV | None],
        preserve_unit_iters: bool = True,
        disable_predication: bool = False,
    ) -> list[LoopRV]:
        """Split ``loop`` into nested loops ``<name>_0, <name>_1, ...`` of the given extents.

        Args:
            loop: a loop that starts at 0, without annotations or thread binding.
            factors: positive extents, outermost first; one may be ``None`` (inferred). A
                product above the loop's extent adds a ``T.where`` predicate to the blocks.
                A factor may be an ``ExprRV`` from ``sample_perfect_tile``.
            preserve_unit_iters: keep loops of extent 1 in the block bindings.
            disable_predication: do not add the predicate (the caller knows it holds).

        Example::

            i0, i1 = sch.split(i, [None, 128])   # vi = T.axis.spatial(1024, i_0 * 128 + i_1)
        """
        site = self._state.loop_site(loop, "split")
        given = tuple(f if isinstance(f, ExprRV) else _factor(f) for f in factors)
        values = tuple(self._expr(f, "split") if _sampled(f) else f for f in given)
        func, new_vars = loops.split(site, values, preserve_unit_iters, disable_predication)
        self._state.commit(site.func_name, func)
        refs = [self._state.loop_ref(site.func_name, v) for v in new_vars]
        self._record(
            "split", (loop, given), (bool(preserve_unit_iters), bool(disable_predication)), refs
        )
        return refs

    def fuse(self, *loops_: LoopRV, preserve_unit_iters: bool = True) -> LoopRV:
        """Fuse nested loops, outermost first, each the only child of the previous one.

        Args:
            loops_: the loops; each starts at 0 and has no annotations or thread binding.
            preserve_unit_iters: keep loops of extent 1 in the block bindings.

        Example::

            tx = sch.fuse(i1, j1)   # i_1 -> i_1_j_1_fused // 8, j_1 -> i_1_j_1_fused % 8
        """
        given = _flatten(loops_)
        sites = [self._state.loop_site(r, "fuse") for r in given]
        func, var = loops.fuse(sites, preserve_unit_iters)
        self._state.commit(sites[0].func_name, func)
        ref = self._state.loop_ref(sites[0].func_name, var)
        self._record("fuse", (tuple(given),), (bool(preserve_unit_iters),), (ref,))
        return ref

    def reorder(self, *ordered_loops: LoopRV) -> None:
        """Reorder loops of one single-child chain; loops not given keep their places.

        Example::

            sch.reorder(i0, j0, i1, j1, k0, k1, i2, j2)
        """
        given = _flatten(ordered_loops)
        sites = [self._state.loop_site(r, "reorder") for r in given]
        func = loops.reorder(sites)
        self._state.commit(sites[0].func_name, func)
        self._record("reorder", (tuple(given),), ())

    def add_unit_loop(self, block_or_loop: BlockArg | LoopRV) -> LoopRV:
        """Wrap a block or loop in a new loop ``u`` of extent 1 and return it.

        Example::

            u = sch.add_unit_loop(sch.get_block("C"))
        """
        target = self._target(block_or_loop)
        site = self._state.any_site(target, "add_unit_loop")
        func, var = loops.add_unit_loop(site)
        self._state.commit(site.func_name, func)
        ref = self._state.loop_ref(site.func_name, var)
        self._record("add_unit_loop", (target,), (), (ref,))
        return ref

    # ---- loop kinds ----------------------------------------------------------------------
    def parallel(self, loop: LoopRV) -> None:
        """Run ``loop`` in parallel on CPU threads; it may drive only spatial iterators.

        Example::

            sch.parallel(i0)   # for i_0 in T.parallel(16):
        """
        site = self._state.loop_site(loop, "parallel")
        self._state.commit(site.func_name, for_kind.parallel(site))
        self._record("parallel", (loop,), ())

    def vectorize(self, loop: LoopRV) -> None:
        """Mark ``loop`` vectorized; it may drive only spatial iterators.

        Example::

            sch.vectorize(j1)   # for j_1 in T.vectorized(8):
        """
        site = self._state.loop_site(loop, "vectorize")
        self._state.commit(site.func_name, for_kind.vectorize(site))
        self._record("vectorize", (loop,), ())

    def unroll(self, loop: LoopRV) -> None:
        """Mark ``loop`` to be unrolled.

        Example::

            sch.unroll(k1)   # for k_1 in T.unroll(4):
        """
        site = self._state.loop_site(loop, "unroll")
        self._state.commit(site.func_name, for_kind.unroll(site))
        self._record("unroll", (loop,), ())

    def bind(self, loop: LoopRV, thread_axis: str) -> None:
        """Bind ``loop`` to a GPU thread axis.

        Args:
            loop: a loop driving only spatial iterators (or reductions, for ``threadIdx``).
            thread_axis: ``blockIdx``, ``threadIdx`` or ``vthread`` with ``.x/.y/.z``; one
                extent per axis within a kernel.

        Example::

            sch.bind(i0, "blockIdx.x")   # for i_0 in T.thread_binding(8, thread="blockIdx.x"):
        """
        site = self._state.loop_site(loop, "bind")
        if not isinstance(thread_axis, str):
            raise ScheduleError("bind", "argument", f"thread_axis {thread_axis!r} is not a str")
        self._state.commit(site.func_name, for_kind.bind(site, thread_axis))
        self._record("bind", (loop,), (thread_axis,))

    # ---- annotations ---------------------------------------------------------------------
    def annotate(
        self,
        block_or_loop: BlockArg | LoopRV,
        ann_key: str,
        ann_val: AttrValue | ExprRV | list[Any],
    ) -> None:
        """Set annotation ``ann_key`` of a block or loop to ``ann_val`` (an ``ExprRV``
        annotates the value it was sampled as; the trace keeps the reference).

        Example::

            sch.annotate(k0, "pragma_auto_unroll_max_step", 16)
        """
        target = self._target(block_or_loop)
        site = self._state.any_site(target, "annotate")
        given = ann_val if isinstance(ann_val, ExprRV) else _annotation_value(ann_val)
        value = self._expr(given, "annotate") if _sampled(given) else given
        self._state.commit(site.func_name, annotate_.annotate(site, str(ann_key), value))
        self._record("annotate", (target, given), (str(ann_key),))

    def unannotate(self, block_or_loop: BlockArg | LoopRV, ann_key: str) -> None:
        """Remove annotation ``ann_key`` from a block or loop.

        Example::

            sch.unannotate(k0, "pragma_auto_unroll_max_step")
        """
        target = self._target(block_or_loop)
        site = self._state.any_site(target, "unannotate")
        self._state.commit(site.func_name, annotate_.unannotate(site, str(ann_key)))
        self._record("unannotate", (target,), (str(ann_key),))


def _flatten(loops_: Sequence[object]) -> list[LoopRV]:
    if len(loops_) == 1 and isinstance(loops_[0], list | tuple):
        return list(loops_[0])
    return [cast(LoopRV, r) for r in loops_]  # the primitive checks each one


def _sampled(value: object) -> TypeGuard[PrimExpr]:
    """An ``ExprRV``, or an expression of them, that stands for a sampled integer."""
    return isinstance(value, PrimExpr) and bool(rvs_in(value))


def _factor(value: object) -> int | PrimExpr | None:
    if value is None or isinstance(value, PrimExpr):
        return value
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ScheduleError("split", "split-factors", f"factor {value!r} is not an integer or None")
    return int(value)


def _annotation_value(value: object) -> AttrValue | dict[str, Any]:
    if isinstance(value, list | tuple):
        return tuple(_annotation_value(v) for v in value)
    if isinstance(value, dict):  # TVM's Map value, kept by the trace; the IR sorts its keys
        return {str(k): _annotation_value(v) for k, v in value.items()}
    if isinstance(value, bool | int | float | str | PrimExpr):
        return value
    raise ScheduleError(
        "annotate",
        "argument",
        f"annotation value {value!r} is not a bool, int, float, str, expression, list or dict",
    )
