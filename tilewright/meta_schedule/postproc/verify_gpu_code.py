"""``VerifyGPUCode``: rejects a GPU candidate that does not lower for its target or does not
fit the device (threads, shared memory, virtual threads, vector width, the thread-extent
range MultiLevelTiling asked for)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tilewright.backend import lowering_stages
from tilewright.ir import (
    Block,
    BufferLoad,
    BufferStore,
    Cast,
    For,
    IntImm,
    IRModule,
    Stmt,
    pre_order_visit,
)
from tilewright.meta_schedule.analysis import THREAD_EXTENT_HIGH, THREAD_EXTENT_LOW, annotation
from tilewright.meta_schedule.postproc.loops import root_block, thread_tag
from tilewright.meta_schedule.postproc.postproc import Postproc
from tilewright.schedule import Instruction, Schedule, ScheduleError
from tilewright.schedule.tree import children
from tilewright.target import Target
from tilewright.transform.pipeline import lower_module
from tilewright.transform.verify_bounds import OutOfBoundsError

if TYPE_CHECKING:
    from tilewright.meta_schedule.tune_context import TuneContext

MAX_VTHREAD = 8  # TVM's max_vthread: virtual threads in one kernel, all axes together
MAX_VECTOR_BYTES = 16  # TVM's max_vector_bytes: the widest vector load, store or cast
WARP_EXECUTION = "warp_execution"  # a block run by one warp: threadIdx.x is the warp size

# What lowering raises when it refuses a program: the verification errors of the passes
# (GPUCodeError, ThreadBindingError, ... are ValueErrors) and an access proven out of bounds.
REFUSALS = (ValueError, ScheduleError, OutOfBoundsError)


class VerifyGPUCode(Postproc):
    """Rejects candidates that cannot run on the target's GPU (TVM's ``VerifyGPUCode``).

    A candidate is rejected when a block annotated ``meta_schedule.thread_extent_low_inclusive``
    / ``high_inclusive`` runs under a threadIdx product outside that range, a threadIdx
    extent is not constant, virtual threads in one kernel multiply past 8, lowering for the
    target refuses it (our ``verify_gpu_code`` stage checks threads per block against
    ``max_num_threads`` and shared memory against the target's limit), or the lowered code
    moves more than 16 bytes in one vector access.

    Example::

        post = VerifyGPUCode()
        post._initialize_with_tune_context(ctx)   # ctx.target: "cuda"
        post.apply(sch)   # False for 32 x 64 threads per block
    """

    def __init__(self) -> None:
        self.target: Target | None = None
        self.reason = ""  # why the last candidate was rejected

    def _initialize_with_tune_context(self, context: TuneContext) -> None:
        if context.target is None:
            raise ValueError("VerifyGPUCode needs a target")
        self.target = context.target

    def early_check(self, inst: Instruction, sch: Schedule) -> bool:
        """After a ``bind`` or an annotation: the thread-extent range, the threads a block
        (at most the target's ``max_num_threads``) and the virtual-thread product, which
        later primitives cannot change."""
        if inst.kind not in ("bind", "annotate") or self.target is None:
            return True
        return self._check_threads(sch)

    def _check_threads(self, sch: Schedule) -> bool:
        assert self.target is not None
        warp = max(int(self.target.thread_warp_size), 1)
        self.reason = ""
        for _, func in sch.mod.items():
            root = root_block(func)
            body = func.body if root is None else root
            if not thread_extents_fit(body, warp):
                self.reason = "thread extent"
                return False
            if threads_per_block(body, warp) > int(self.target.max_num_threads):
                self.reason = "threads per block"
                return False
            if vthread_product(body) > MAX_VTHREAD:
                self.reason = "vthread"
                return False
        return True

    def apply(self, sch: Schedule) -> bool:
        if self.target is None:
            raise ValueError("VerifyGPUCode has no target: initialise it through a TuneContext")
        if not self._check_threads(sch):
            return False
        # Unrolling changes neither threads, shared memory nor vector widths, and writing out
        # a candidate's unrolled loops is most of the cost of lowering it: skip those stages.
        stages = [s for s in lowering_stages(self.target) if s.name not in _UNROLLING]
        try:
            lowered = lower_module(sch.mod, stages)
        except REFUSALS as err:
            self.reason = _short(err)
            return False
        if widest_vector_bytes(lowered) > MAX_VECTOR_BYTES:
            self.reason = "vector width"
            return False
        return True


def _short(err: Exception) -> str:
    """A rejection reason to count: the error's first words, without the numbers."""
    text = str(err).splitlines()[0] if str(err) else type(err).__name__
    if "shared memory" in text:
        return "shared memory"
    if "threads" in text:
        return "threads per block"
    return type(err).__name__


_UNROLLING = ("unroll_loops", "apply_unroll_pragmas")


def thread_extents_fit(stmt: Stmt, warp_size: int) -> bool:
    """Every threadIdx loop has a constant extent, and each block annotated with a
    thread-extent range runs under a threadIdx.x * y * z product inside it (TVM's
    ``ThreadExtentChecker``)."""

    def visit(node: Stmt, extents: dict[str, int]) -> bool:
        if isinstance(node, For) and thread_tag(node).startswith("threadIdx."):
            if not isinstance(node.extent, IntImm):
                return False
            extents = {**extents, thread_tag(node): node.extent.value}
        if isinstance(node, Block):
            if annotation(node, WARP_EXECUTION) is not None:
                extents = {**extents, "threadIdx.x": warp_size}
            low, high = annotation(node, THREAD_EXTENT_LOW), annotation(node, THREAD_EXTENT_HIGH)
            if low is not None and high is not None:
                product = 1
                for value in extents.values():
                    product *= value
                if not _as_int(low) <= product <= _as_int(high):
                    return False
        return all(visit(child, extents) for child in children(node))

    return visit(stmt, {})


def _as_int(value: object) -> int:
    if isinstance(value, IntImm):
        return value.value
    if isinstance(value, int):
        return value
    raise ValueError(f"thread extent bound {value!r} is not an integer")


def vthread_product(stmt: Stmt) -> int:
    """The largest product of the extents of distinct virtual-thread axes nested in one
    another (a symbolic extent counts as unlimited)."""
    return _largest_product(stmt, "vthread", MAX_VTHREAD + 1)


def threads_per_block(stmt: Stmt, warp_size: int) -> int:
    """The largest product of the extents of distinct threadIdx axes nested in one another
    (a block annotated ``warp_execution`` runs ``threadIdx.x`` over the warp; a symbolic
    extent counts as 1: ``thread_extents_fit`` refuses it).

    Example::

        >>> threads_per_block(func.body, 32)   # threadIdx.y 8 around a warp's block
        256
    """
    return _largest_product(stmt, "threadIdx.", 1, warp_size)


def _largest_product(stmt: Stmt, prefix: str, symbolic: int, warp_size: int = 0) -> int:
    """The largest product of the extents of distinct axes tagged ``prefix...`` nested in
    one another; a symbolic extent counts as ``symbolic``; with ``warp_size``, a
    ``warp_execution`` block binds ``threadIdx.x`` to it."""

    def visit(node: Stmt, extents: dict[str, int]) -> int:
        if isinstance(node, For) and thread_tag(node).startswith(prefix):
            extent = node.extent.value if isinstance(node.extent, IntImm) else symbolic
            extents = {**extents, thread_tag(node): extent}
        if warp_size and isinstance(node, Block) and annotation(node, WARP_EXECUTION) is not None:
            extents = {**extents, "threadIdx.x": warp_size}
        product = 1
        for value in extents.values():
            product *= value
        return max([product, *(visit(child, extents) for child in children(node))])

    return visit(stmt, {})


def widest_vector_bytes(mod: IRModule) -> int:
    """The most bytes one vector load, store or cast moves in the lowered module."""
    widest = 0

    def visit(node: object) -> bool:
        nonlocal widest
        if isinstance(node, BufferLoad | Cast | BufferStore):
            dtype = node.value.dtype if isinstance(node, BufferStore) else node.dtype
            if dtype.lanes > 1:
                widest = max(widest, dtype.bytes)
        return True

    for _, func in mod.items():
        pre_order_visit(func.body, visit)
    return widest
