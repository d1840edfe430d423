"""Lowered GPU module (host + kernels) + numpy arrays → arrays updated as the device would.

The host function's launches run each kernel over its grid. Every thread of a block is a
Python generator that executes the kernel body and yields at each barrier; the block's threads
run in lockstep: each in turn up to its next barrier, then the next phase starts. Shared
buffers live once per block, local ones per thread (fresh, NaN-poisoned, at each allocation).

Shared memory is checked for races: a thread that reads an element another thread wrote in the
same phase, or writes an element another thread read in the same phase, gets (or leaves) NaN —
so a missing barrier shows up as a wrong result, whatever order the threads happen to run in.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import numpy as np

from tilewright import ir
from tilewright.ir import Buffer, IRModule, PrimFunc, Var

from .interpreter import _Machine, np_dtype

SYNC_OPS = ("tw.sync_threads",)
LAUNCH_OP = "tw.launch_kernel"
TAGS = ("blockIdx.x", "blockIdx.y", "blockIdx.z", "threadIdx.x", "threadIdx.y", "threadIdx.z")


class BarrierDivergence(AssertionError):
    """Some threads of a block finished while others wait at a barrier."""


def run_module(mod: IRModule, name: str, *args: object) -> list[np.ndarray]:
    """Run host function ``name`` of a lowered GPU module; return copies of the arrays.

    ``args`` follow the function's parameters: an array for each buffer (copied, and its shape
    binds symbolic dimensions), a number for each scalar.
    """
    host = mod[name]
    assert len(host.params) == len(args), "one argument per parameter"
    copies: list[np.ndarray] = []
    memory: dict[Var, np.ndarray] = {}
    env: dict[Var, object] = {}
    for param, value in zip(host.params, args):
        buffer = host.buffer_of(param)
        if buffer is None:
            env[param] = value
            continue
        array = np.array(value, copy=True)
        copies.append(array)
        assert len(buffer.shape) == array.ndim, buffer.name
        for dim, extent in zip(buffer.shape, array.shape):
            if isinstance(dim, Var):
                env[dim] = extent
            else:
                assert int(dim) == extent, f"{buffer.name}: shape {array.shape}"  # type: ignore[call-overload]
        memory[buffer.data] = array.reshape(-1)
    machine = _Host(mod, memory)
    machine.env.update(env)
    machine.exec(host.body)
    return copies


class _Host(_Machine):
    def __init__(self, mod: IRModule, memory: dict[Var, np.ndarray]) -> None:
        super().__init__()
        self.mod = mod
        self.storage = memory

    def exec_Evaluate(self, stmt: ir.Evaluate) -> None:
        call = stmt.value
        if isinstance(call, ir.Call) and call.op == LAUNCH_OP:
            self.launch(call)
        else:
            super().exec_Evaluate(stmt)

    def launch(self, call: ir.Call) -> None:
        name = call.args[0]
        assert isinstance(name, ir.StringImm)
        kernel = self.mod[name.value]
        dims = [int(self.eval(a)) for a in call.args[1:7]]
        args = call.args[8:]
        assert len(args) == len(kernel.params), f"{name.value}: argument count"
        memory: dict[Var, np.ndarray] = {}
        scalars: dict[Var, object] = {}
        for param, arg in zip(kernel.params, args):
            buffer = kernel.buffer_of(param)
            if buffer is None:
                scalars[param] = self.eval(arg)
            else:
                assert isinstance(arg, Var) and arg in self.storage, f"{name.value}: {arg}"
                memory[buffer.data] = self.storage[arg]
        grid, block = dims[:3], dims[3:]
        for bz, by, bx in itertools.product(*(range(n) for n in reversed(grid))):
            _run_block(
                kernel,
                memory,
                scalars,
                {"blockIdx.x": bx, "blockIdx.y": by, "blockIdx.z": bz},
                block,
            )


def _run_block(
    kernel: PrimFunc,
    memory: dict[Var, np.ndarray],
    scalars: dict[Var, object],
    block_index: dict[str, int],
    block_dims: list[int],
) -> None:
    state = _BlockState()
    threads = []
    extents = dict(zip(TAGS, [0, 0, 0, *block_dims]))
    for tz, ty, tx in itertools.product(*(range(n) for n in reversed(block_dims))):
        index = {**block_index, "threadIdx.x": tx, "threadIdx.y": ty, "threadIdx.z": tz}
        thread = _Thread(state, len(threads), index, extents, memory, scalars)
        threads.append(thread.run(kernel.body))
    while True:
        waiting, finished = 0, 0
        for gen in threads:
            try:
                next(gen)
                waiting += 1
            except StopIteration:
                finished += 1
        if waiting and finished:
            raise BarrierDivergence(
                f"{waiting} threads wait at a barrier that {finished} threads never reach"
            )
        if not waiting:
            return
        state.phase += 1


class _BlockState:
    """Shared memory of one thread block and, per element, who last wrote and read it."""

    def __init__(self) -> None:
        self.phase = 0
        self.shared: dict[Var, np.ndarray] = {}
        self.writer: dict[Var, np.ndarray] = {}
        self.write_phase: dict[Var, np.ndarray] = {}
        self.reader: dict[Var, np.ndarray] = {}  # thread id, or -2 for several threads
        self.read_phase: dict[Var, np.ndarray] = {}

    def allocate(self, data: Var, size: int, dtype: np.dtype) -> None:
        if data in self.shared:
            return  # one array per block, whichever thread gets there first
        fill = np.nan if dtype.kind == "f" else 0
        self.shared[data] = np.full(size, fill, dtype=dtype)
        for table in (self.writer, self.write_phase, self.reader, self.read_phase):
            table[data] = np.full(size, -1, dtype=np.int64)

    def load(self, data: Var, offset: object, thread: int) -> object:
        at = np.asarray(offset)
        values = np.array(self.shared[data][at], copy=True)
        raced = (self.write_phase[data][at] == self.phase) & (self.writer[data][at] != thread)
        if np.any(raced):
            values = np.where(raced, np.nan, values)
        fresh = self.read_phase[data][at] != self.phase
        others = ~fresh & (self.reader[data][at] != thread)
        self.reader[data][at] = np.where(fresh, thread, np.where(others, -2, thread))
        self.read_phase[data][at] = self.phase
        return values if values.ndim else values[()]

    def store(self, data: Var, offset: object, value: object, thread: int) -> None:
        at = np.asarray(offset)
        read_now = self.read_phase[data][at] == self.phase
        raced = read_now & (self.reader[data][at] != thread)
        stored = np.where(raced, np.nan, value) if np.any(raced) else value
        self.shared[data][at] = stored
        self.writer[data][at] = thread
        self.write_phase[data][at] = self.phase


class _Thread(_Machine):
    """One GPU thread: the reference interpreter with statements as generators."""

    def __init__(
        self,
        state: _BlockState,
        thread_id: int,
        index: dict[str, int],
        extents: dict[str, int],
        memory: dict[Var, np.ndarray],
        scalars: dict[Var, object],
    ) -> None:
        super().__init__()
        self.state = state
        self.thread_id = thread_id
        self.index = index
        self.extents = extents
        self.storage = dict(memory)
        self.env.update(scalars)

    def run(self, stmt: ir.Stmt) -> Iterator[None]:
        return self.step(stmt)

    def step(self, stmt: ir.Stmt) -> Iterator[None]:
        method = getattr(self, f"step_{type(stmt).__name__}", None)
        if method is None:
            self.exec(stmt)
            return iter(())
        return method(stmt)

    def step_SeqStmt(self, stmt: ir.SeqStmt) -> Iterator[None]:
        for s in stmt.seq:
            yield from self.step(s)

    def step_For(self, loop: ir.For) -> Iterator[None]:
        start = int(self.eval(loop.min))
        if loop.kind is ir.ForKind.THREAD_BINDING:
            tag = loop.thread_tag
            extent = int(self.eval(loop.extent))
            if tag.startswith("threadIdx"):
                assert extent == self.extents[tag], f"{tag}: loop extent {extent} vs launch"
            self.env[loop.loop_var] = start + self.index[tag]
            yield from self.step(loop.body)
            return
        for value in range(start, start + int(self.eval(loop.extent))):
            self.env[loop.loop_var] = value
            yield from self.step(loop.body)

    def step_IfThenElse(self, stmt: ir.IfThenElse) -> Iterator[None]:
        if self.eval(stmt.condition):
            yield from self.step(stmt.then_case)
        elif stmt.else_case is not None:
            yield from self.step(stmt.else_case)

    def step_LetStmt(self, stmt: ir.LetStmt) -> Iterator[None]:
        self.env[stmt.var] = self.eval(stmt.value)
        yield from self.step(stmt.body)

    def step_AttrStmt(self, stmt: ir.AttrStmt) -> Iterator[None]:
        yield from self.step(stmt.body)

    def step_Allocate(self, stmt: ir.Allocate) -> Iterator[None]:
        buffer = stmt.buffer
        if buffer.scope.startswith("shared"):
            size = int(np.prod([int(self.eval(s)) for s in buffer.shape]))
            self.state.allocate(buffer.data, size, np_dtype(buffer.dtype))
        else:
            assert buffer.scope == "local", f"{buffer.name}: scope {buffer.scope} in a kernel"
            self.allocate(buffer)
        yield from self.step(stmt.body)

    def step_Evaluate(self, stmt: ir.Evaluate) -> Iterator[None]:
        value = stmt.value
        if isinstance(value, ir.Call) and value.op in SYNC_OPS:
            yield
            return
        self.eval(value)

    # -- shared memory goes through the race checks ------------------------------------------
    def is_shared(self, buffer: Buffer) -> bool:
        return buffer.data in self.state.shared

    def checked_offset(self, buffer: Buffer, index: object) -> object:
        size = self.state.shared[buffer.data].size
        assert np.all(np.asarray(index) >= 0) and np.all(np.asarray(index) < size), (
            f"{buffer.name}: index {index} out of [0, {size})"
        )
        return index

    def exec_BufferStore(self, store: ir.BufferStore) -> None:
        if not self.is_shared(store.buffer):
            super().exec_BufferStore(store)
            return
        (index,) = (self.eval(i) for i in store.indices)
        offset = self.checked_offset(store.buffer, index)
        self.state.store(store.buffer.data, offset, self.eval(store.value), self.thread_id)

    def eval_BufferLoad(self, load: ir.BufferLoad) -> object:
        if not self.is_shared(load.buffer):
            return super().eval_BufferLoad(load)
        (index,) = (self.eval(i) for i in load.indices)
        offset = self.checked_offset(load.buffer, index)
        return self.state.load(load.buffer.data, offset, self.thread_id)
