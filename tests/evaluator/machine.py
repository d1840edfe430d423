"""Compiles functions with the translators and runs them: in order, or as a kernel's grid of
thread blocks whose threads run in lockstep between barriers; the entry points tests call.

Every thread of a block is a generator (``threads.py``); each phase runs every thread up to
its next barrier, and the next phase starts when all of them wait there. A block whose threads
do not all reach a barrier raises ``BarrierDivergence``. A kernel's arrays, and the shared
arrays of its blocks, are watched for races: two threads of the launch touching one element,
one of them writing, with no barrier between them raise ``DataRace`` (``races.py``).
"""

from __future__ import annotations

import functools
import itertools
import linecache
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from tilewright import ir
from tilewright.ir import IntImm, IRModule, PrimFunc, Var, intrinsics

from .blocks import BlockTranslator
from .expressions import HELPERS
from .memory import (
    Block,
    Watched,
    address,
    allocate,
    check_lanes,
    copy_bytes,
    np_dtype,
    out_of_range,
    region,
    whole,
)
from .races import DataRace, Launch
from .statements import parameter_inputs
from .threads import ThreadTranslator

ORDERING = {intrinsics.SYNC_THREADS, intrinsics.CTA_SYNC}  # the barriers of a whole block
TAGS = ("blockIdx.x", "blockIdx.y", "blockIdx.z", "threadIdx.x", "threadIdx.y", "threadIdx.z")
_RUNTIME = {
    "_oob": out_of_range,
    "_check_lanes": check_lanes,
    "_alloc": allocate,
    "_address": address,
    "_region": region,
    "_whole": whole,
}


class BarrierDivergence(AssertionError):
    """Some threads of a block finished while others wait at a barrier."""


@dataclass(frozen=True)
class Compiled:
    """A translated function: ``function(machine, thread, *inputs)``."""

    function: Callable[..., Any]  # a generator function when compiled for threads
    inputs: tuple[Var, ...]
    source: str

    def arguments(self, values: dict[Var, object]) -> list[object]:
        missing = [v.name for v in self.inputs if v not in values]
        if missing:
            raise TypeError(f"evaluator: no value for {', '.join(missing)}")
        return [values[v] for v in self.inputs]


@functools.lru_cache(maxsize=64)
def compile_function(func: PrimFunc, threads: bool) -> Compiled:
    """``func`` as Python: run in order (``threads=False``) or as one thread of a kernel."""
    translator = (ThreadTranslator if threads else BlockTranslator)(func)
    source, inputs = translator.translate()
    # A file name per compilation puts the generated lines into tracebacks.
    filename = (
        f"<evaluator {func.attr('global_symbol', 'main')} #{compile_function.cache_info().misses}>"
    )
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    scope = {**HELPERS, **_RUNTIME, **translator.constants}
    exec(compile(source, filename, "exec"), scope)
    return Compiled(scope["_evaluate"], inputs, source)  # type: ignore[arg-type]


class Thread:
    """What a kernel's code knows of the thread that runs it."""

    def __init__(self, block: Block, id: int, index: dict[str, int], extents: dict[str, int]):
        self.block = block
        self.id = id
        self._index = index
        self._extents = extents

    def index(self, tag: str, extent: int) -> int:
        """The thread's index along ``tag``; a loop bound to it must span the launch."""
        if tag not in self._index:
            raise TypeError(f"evaluator: unknown thread tag {tag!r}")
        if extent != self._extents[tag]:
            raise AssertionError(f"{tag}: loop extent {extent}, launched {self._extents[tag]}")
        return self._index[tag]


class Machine:
    """Runs compiled code; counts each effectful intrinsic run (over all threads) and keeps
    the shared arrays of the last block it ran."""

    def __init__(self, module: IRModule | None = None) -> None:
        self.module = module
        self.effects: Counter[intrinsics.Intrinsic] = Counter()
        self.shared: dict[str, np.ndarray] = {}

    def call(self, func: PrimFunc, values: dict[Var, object]) -> None:
        compiled = compile_function(func, False)
        compiled.function(self, None, *compiled.arguments(values))

    def grid(self, kernel: PrimFunc, values: dict[Var, object], dims: list[int]) -> None:
        """Runs ``kernel`` on a grid of ``dims[:3]`` blocks of ``dims[3:]`` threads, its arrays
        watched for races (``races.py``)."""
        compiled = compile_function(kernel, True)
        extents = dict(zip(TAGS, dims))
        grid, threads = dims[:3], dims[3:]
        launch = Launch(grid, threads)
        args = watch_arrays(kernel, launch, compiled.inputs, compiled.arguments(values))
        blocks = itertools.product(*(range(n) for n in reversed(grid)))
        for number, (bz, by, bx) in enumerate(blocks):
            launch.begin_block(number)
            block = Block(launch)
            running: list[Iterator[intrinsics.Intrinsic]] = []
            for tz, ty, tx in itertools.product(*(range(n) for n in reversed(threads))):
                index = dict(zip(TAGS, (bx, by, bz, tx, ty, tz)))
                thread = Thread(block, len(running), index, extents)
                running.append(compiled.function(self, thread, *args))
            self.lockstep(running, launch)
            self.shared = {array.name: array.data for array in block.shared.values()}
        launch.check()

    def lockstep(self, threads: list[Iterator[intrinsics.Intrinsic]], launch: Launch) -> None:
        while True:
            waiting = finished = 0
            # The phase's barriers, counted by runs of one intrinsic (hashing one is slow).
            last, run, ordered = None, 0, True
            for number, thread in enumerate(threads):
                launch.turn(number)
                try:
                    barrier = next(thread, None)
                except Exception as error:
                    # What the thread computed from a racing access may be what failed.
                    try:
                        launch.check()
                    except DataRace as race:
                        raise race from error
                    raise
                if barrier is None:
                    finished += 1
                    continue
                waiting += 1
                if barrier is not last:
                    if last is not None:
                        self.effects[last] += run
                    last, run = barrier, 0
                    ordered = ordered and barrier in ORDERING
                run += 1
            if last is not None:
                self.effects[last] += run
            if waiting and finished:
                raise BarrierDivergence(
                    f"{waiting} threads wait at a barrier that {finished} threads never reach"
                )
            if not waiting:
                return
            # Shuffles and allreduces exchange values; only barriers order memory accesses.
            if ordered:
                launch.barrier()

    # -- called by the generated code ----------------------------------------------------------
    def launch(self, name: str, *args: object) -> None:
        """``tw.launch_kernel``: (name, grid x y z, block x y z, dynamic shared bytes, *args)."""
        self.effects[intrinsics.LAUNCH_KERNEL] += 1
        if self.module is None:
            raise TypeError(f"evaluator: launching {name} needs the module: use run_module")
        kernel = self.module[name]
        params = parameter_inputs(kernel)
        if len(args) - 7 != len(params):
            raise TypeError(f"evaluator: {name} takes {len(params)} arguments, got {len(args) - 7}")
        self.grid(kernel, dict(zip(params, args[7:])), [int(d) for d in args[:6]])  # type: ignore[call-overload]

    def copy_bytes(self, dst: object, src: object, nbytes: int) -> None:
        self.effects[intrinsics.COPY_BYTES] += 1
        copy_bytes(dst, src, int(nbytes))  # type: ignore[arg-type]


@dataclass(frozen=True)
class KernelRun:
    """What ``run_kernel`` gives back: the arrays after the run, how often each effectful
    intrinsic ran (summed over threads) and the shared arrays of the last block, by name."""

    arrays: list[np.ndarray]
    effects: Counter[intrinsics.Intrinsic]
    shared: dict[str, np.ndarray]


@functools.lru_cache(maxsize=64)
def written_data(kernel: PrimFunc) -> frozenset[Var]:
    """The data variables ``kernel`` may write: stored to, handed to an effectful call (a byte
    copy's address), or viewed by a matched buffer."""
    found: set[Var] = set()

    def loads(node: object) -> None:
        if isinstance(node, ir.BufferLoad):
            found.add(node.buffer.data)

    def visit(node: object) -> None:
        if isinstance(node, ir.BufferStore):
            found.add(node.buffer.data)
        elif isinstance(node, ir.Call):
            intrinsic = intrinsics.lookup_or_none(node.op)
            if intrinsic is not None and intrinsic.effect is not intrinsics.Effect.PURE:
                ir.post_order_visit(node.args, loads)
            if intrinsic is intrinsics.ADDRESS_OF:
                loads(node.args[0])
        elif isinstance(node, ir.Block):
            found.update(match.source.buffer.data for match in node.match_buffers)

    ir.post_order_visit(kernel.body, visit)
    return frozenset(found)


def watch_arrays(
    kernel: PrimFunc, launch: Launch, inputs: tuple[Var, ...], args: list[object]
) -> list[object]:
    """``args`` with each array the kernel may write watched by ``launch`` under its buffer's
    name. An array no thread writes cannot race; one passed twice is watched once."""
    names = {buffer.data: buffer.name for _, buffer in kernel.buffer_map}
    written = written_data(kernel)
    watched: dict[int, Watched | None] = {
        id(value): None for var, value in zip(inputs, args) if var in written
    }
    result = []
    for var, value in zip(inputs, args):
        if isinstance(value, np.ndarray) and id(value) in watched:
            if watched[id(value)] is None:
                watched[id(value)] = launch.watch(value, names.get(var, var.name))
            value = watched[id(value)]
        result.append(value)
    return result


def bind_arguments(func: PrimFunc, args: tuple[object, ...]) -> tuple[dict[Var, object], list]:
    """Values of ``func``'s inputs for ``args`` (a copy of each array, a number per scalar),
    and the copies. An array's shape binds the symbolic dimensions of its buffer."""
    if len(args) != len(func.params):
        raise TypeError(f"evaluator: {len(func.params)} parameters, {len(args)} arguments")
    values: dict[Var, object] = {}
    copies = []
    for param, value in zip(func.params, args):
        buffer = func.buffer_of(param)
        if buffer is None:
            values[param] = value
            continue
        array = np.array(value, dtype=np_dtype(buffer.dtype), copy=True)
        copies.append(array)
        if array.ndim != buffer.ndim:
            raise ValueError(f"{buffer.name}: {array.ndim} dimensions, expected {buffer.ndim}")
        for dim, extent in zip(buffer.shape, array.shape):
            known = values.setdefault(dim, extent) if isinstance(dim, Var) else dim
            if isinstance(known, IntImm | int) and int(known) != extent:
                raise ValueError(f"{buffer.name}: shape {array.shape}, expected {buffer.shape}")
        values[buffer.data] = array.reshape(-1)
    return values, copies


def launch_dims(func: PrimFunc) -> list[int]:
    """Grid and block extents of a kernel, read from its thread-bound loops."""
    extents: dict[str, int] = {}

    def visit(node: object) -> None:
        if isinstance(node, ir.For) and node.kind is ir.ForKind.THREAD_BINDING:
            if not isinstance(node.extent, IntImm):
                raise TypeError(f"evaluator: {node.thread_tag} extent is not constant")
            if extents.setdefault(node.thread_tag, node.extent.value) != node.extent.value:
                raise TypeError(f"evaluator: loops bound to {node.thread_tag} differ in extent")

    ir.post_order_visit(func.body, visit)
    return [extents.get(tag, 1) for tag in TAGS]


def run(func: PrimFunc, *args: object) -> list[np.ndarray]:
    """Run ``func`` in order (thread-bound loops as plain loops) on copies of ``args`` (an array
    per buffer parameter, a number per scalar); return the copied arrays.

    Example: ``C = run(matmul, A, B, np.zeros((8, 8), "float32"))[2]``.
    """
    values, arrays = bind_arguments(func, args)
    Machine().call(func, values)
    return arrays


def run_kernel(func: PrimFunc, *args: object) -> KernelRun:
    """Run ``func`` as a kernel: thread by thread over the grid its thread-bound loops span.

    Example: ``B = run_kernel(LowerTIRx("cuda")(copy)["main"], A, np.zeros_like(A)).arrays[1]``.
    """
    values, arrays = bind_arguments(func, args)
    machine = Machine()
    machine.grid(func, values, launch_dims(func))
    return KernelRun(arrays, machine.effects, machine.shared)


def run_module(mod: IRModule, name: str, *args: object) -> list[np.ndarray]:
    """Run host function ``name`` of a lowered GPU module; its launches run their kernels.

    Example: ``got = run_module(lower_module(mod, "cuda"), "main", A, np.zeros(64, "f4"))``.
    """
    values, arrays = bind_arguments(mod[name], args)
    Machine(mod).call(mod[name], values)
    return arrays
