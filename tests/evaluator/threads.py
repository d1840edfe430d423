"""The GPU layer: a kernel body as one thread runs it, on top of the block layer.

The function becomes a generator: a thread-bound loop reads the thread's index (and checks its
extent against the launch), a barrier yields, so that the machine can run a block's threads in
lockstep, phase by phase (warp-collective intrinsics yield too, ``warps.py``). ``shared``
buffers exist once per block, and their accesses go through ``memory.Watched`` to the race
checks (``races.py``); ``local`` ones are allocated per thread.
"""

from __future__ import annotations

from tilewright import ir
from tilewright.ir import Buffer, intrinsics

from .async_copies import AsyncCopyTranslator
from .blocks import BlockTranslator
from .memory import np_dtype
from .tensor_cores import TensorCoreTranslator
from .warps import WarpTranslator


def is_shared(buffer: Buffer) -> bool:
    return buffer.scope.startswith("shared")


class ThreadTranslator(TensorCoreTranslator, AsyncCopyTranslator, WarpTranslator, BlockTranslator):
    """Statements as one thread of a kernel runs them (shuffles and allreduces: ``warps.py``;
    ``cp.async``: ``async_copies.py``; ``ldmatrix``, ``mma`` and friends: ``tensor_cores.py``)."""

    def prologue(self) -> None:
        self.emit("_tid = _t.id")
        self.emit("if False:")
        self.emit("    yield  # a generator, barriers or not")

    def stmt_For(self, s: ir.For) -> None:
        if s.kind is not ir.ForKind.THREAD_BINDING:
            super().stmt_For(s)
            return
        index = f"_t.index({s.thread_tag!r}, {self.expr(s.extent)})"
        self.emit(f"{self.name(s.loop_var)} = {self.expr(s.min)} + {index}")
        self.stmt(s.body)

    def barrier(self, intrinsic: intrinsics.Intrinsic) -> None:
        if intrinsic is intrinsics.THREAD_ALLREDUCE:
            raise TypeError("evaluator: tvm_thread_allreduce outside its reduce_scope attribute")
        self.emit(f"yield {self.constant(intrinsic)}")

    def launch(self, call: ir.Call) -> None:
        raise TypeError(f"evaluator: a kernel cannot {call.op}")

    def allocation(self, buffer: Buffer) -> str:
        if is_shared(buffer):
            key, dtype = self.name(buffer.data), self.constant(np_dtype(buffer.dtype))
            return f"_t.block.shared_array({key!r}, {buffer.name!r}, {self.size(buffer)}, {dtype})"
        if buffer.scope != "local":
            raise TypeError(f"evaluator: a kernel allocates {buffer.name} in {buffer.scope!r}")
        return super().allocation(buffer)

    def bind_storage(self, buffer: Buffer, source: str | None) -> None:
        if is_shared(buffer) and len(self.dtypes_of[buffer.data]) > 1:
            raise TypeError(f"evaluator: shared {buffer.name} is read as several element types")
        super().bind_storage(buffer, source)

    # -- shared memory goes through the race checks ------------------------------------------
    def load(self, buffer: Buffer, indices: tuple[ir.PrimExpr, ...]) -> str:
        if not is_shared(buffer):
            return super().load(buffer, indices)
        storage, offset = self.locate(buffer, indices)
        return f"{storage}.load({offset}, _tid)"

    def store(self, buffer: Buffer, indices: tuple[ir.PrimExpr, ...], value: str) -> str:
        if not is_shared(buffer):
            return super().store(buffer, indices, value)
        storage, offset = self.locate(buffer, indices)
        return f"{storage}.store({offset}, {value}, _tid)"

    def address(self, buffer: Buffer, indices: tuple[ir.PrimExpr, ...]) -> str:
        if not is_shared(buffer):
            return super().address(buffer, indices)
        storage, offset = self.locate(buffer, indices)
        return f"{storage}.address({offset}, _tid)"
