"""A small interpreter of LowerTIRx output: one CTA's threads in turn, phases split at barriers.

Each thread runs as a generator that yields at ``tw.sync_threads()``; all threads run phase
one, then phase two, and so on. Memory is bytes in numpy arrays keyed by data variables;
``tw.cuda.copy_bytes`` moves bytes between them; ``local`` buffers are per thread.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from tilewright.ir import (
    LT,
    Add,
    Block,
    BlockRealize,
    Broadcast,
    BufferLoad,
    BufferStore,
    Call,
    Cast,
    Evaluate,
    FloorDiv,
    FloorMod,
    For,
    ForKind,
    IfThenElse,
    IntImm,
    LetStmt,
    Mul,
    PrimFunc,
    Ramp,
    SeqStmt,
    Sub,
    Var,
)

_BINARY = {
    Add: lambda a, b: a + b,
    Sub: lambda a, b: a - b,
    Mul: lambda a, b: a * b,
    FloorDiv: lambda a, b: a // b,
    FloorMod: lambda a, b: a % b,
    LT: lambda a, b: a < b,
}


class Machine:
    """Runs a lowered tile kernel (one function of ``LowerTIRx``'s output) on numpy arrays."""

    def __init__(self, func: PrimFunc, args: dict[str, np.ndarray]) -> None:
        self.func = func
        self.memory: dict[Var, np.ndarray] = {}
        self.dtypes: dict[Var, str] = {}
        for _, buffer in func.buffer_map:
            self.memory[buffer.data] = args[buffer.name].view(np.uint8).reshape(-1)
        self.shared: dict[Var, np.ndarray] = {}
        self.copies = 0

    def run(self) -> None:
        body = self.func.body
        local_allocs = []
        if isinstance(body, BlockRealize):
            block: Block = body.block
            for buffer in block.alloc_buffers:
                size = int(np.prod([d.value for d in buffer.shape])) * buffer.dtype.bits // 8
                if buffer.scope.startswith("shared"):
                    self.shared[buffer.data] = np.zeros(size, np.uint8)
                else:
                    local_allocs.append((buffer.data, size))
            body = block.body
        assert isinstance(body, For) and body.thread_tag == "blockIdx.x", body
        for b in range(body.extent.value):
            threads = body.body
            assert isinstance(threads, For) and threads.thread_tag == "threadIdx.x"
            gens = []
            for t in range(threads.extent.value):
                env = {body.loop_var: b, threads.loop_var: t}
                locals_ = {data: np.zeros(size, np.uint8) for data, size in local_allocs}
                gens.append(self.exec(threads.body, env, locals_))
            alive = gens
            while alive:
                alive = [g for g in alive if next(g, StopIteration) is not StopIteration]

    # -- statements ------------------------------------------------------------------------

    def exec(self, s: object, env: dict, local: dict) -> Iterator[None]:
        if isinstance(s, SeqStmt):
            for item in s.seq:
                yield from self.exec(item, env, local)
        elif isinstance(s, LetStmt):
            yield from self.exec(s.body, {**env, s.var: self.eval(s.value, env, local)}, local)
        elif isinstance(s, For):
            assert s.kind is ForKind.SERIAL
            lo = self.eval(s.min, env, local)
            for i in range(lo, lo + self.eval(s.extent, env, local)):
                yield from self.exec(s.body, {**env, s.loop_var: i}, local)
        elif isinstance(s, IfThenElse):
            if self.eval(s.condition, env, local):
                yield from self.exec(s.then_case, env, local)
            elif s.else_case is not None:
                yield from self.exec(s.else_case, env, local)
        elif isinstance(s, Evaluate):
            call = s.value
            assert isinstance(call, Call), call
            if call.op == "tw.sync_threads":
                yield None
            elif call.op == "tw.cuda.copy_bytes":
                (dst, d_off), (src, s_off) = (self.eval(a, env, local) for a in call.args[:2])
                n = call.args[2].value
                assert d_off % n == 0 and s_off % n == 0, "misaligned vector copy"
                dst[d_off : d_off + n] = src[s_off : s_off + n]
                self.copies += 1
            else:
                raise AssertionError(f"unknown intrinsic {call.op}")
        elif isinstance(s, BufferStore):
            index = s.indices[0]
            value = s.value
            if isinstance(index, Ramp):
                start = self.eval(index.base, env, local)
                assert isinstance(value, Broadcast)
                scalar = self.eval(value.value, env, local)
                for lane in range(index.lanes):
                    self.store(s.buffer, start + lane, scalar, local)
            else:
                self.store(
                    s.buffer, self.eval(index, env, local), self.eval(value, env, local), local
                )
        else:
            raise AssertionError(f"unsupported statement {type(s).__name__}")

    # -- memory ----------------------------------------------------------------------------

    def array(self, buffer, local: dict) -> np.ndarray:
        data = buffer.data
        raw = local.get(data)
        if raw is None:
            raw = self.shared.get(data)
        if raw is None:
            raw = self.memory[data]
        return raw

    def store(self, buffer, index: int, value: object, local: dict) -> None:
        self.array(buffer, local).view(str(buffer.dtype))[index] = value

    def eval(self, e: object, env: dict, local: dict) -> object:
        if isinstance(e, IntImm):
            return e.value
        if isinstance(e, Var):
            return env[e]
        if isinstance(e, Cast):
            return self.eval(e.value, env, local)
        if type(e) in _BINARY:
            return _BINARY[type(e)](self.eval(e.a, env, local), self.eval(e.b, env, local))
        if isinstance(e, BufferLoad):
            index = self.eval(e.indices[0], env, local)
            return self.array(e.buffer, local).view(str(e.buffer.dtype))[index]
        if isinstance(e, Call) and e.op == "tw.address_of":
            load = e.args[0]
            index = self.eval(load.indices[0], env, local)
            return self.array(load.buffer, local), index * load.buffer.dtype.bits // 8
        if isinstance(e, Call) and e.op == "bitwise_xor":
            a, b = (self.eval(x, env, local) for x in e.args)
            return a ^ b
        if hasattr(e, "value") and not hasattr(e, "a"):
            return e.value
        raise AssertionError(f"unsupported expression {type(e).__name__}")
