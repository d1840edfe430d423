"""A CPU model of a lowered warp-specialised Hopper kernel (test support, no GPU).

``run_cta`` interprets the function ``LowerTIRx`` produced for one CTA: first the producer
thread (``threadIdx.x == 0``), whose TMA loads are decoded (box, swizzle, coordinates, the
mbarrier they complete on) and recorded per mbarrier phase, with the bytes TMA moves for a
box zero-filled outside the tensor; then each consumer warpgroup, where a wait on an
mbarrier applies that phase's loads to the shared storage (so a wgmma reads what the
producer put there), wgmmas run through ``wgmma_model`` and the epilogue's stores run once
per thread. It checks the protocol as it goes: the parity a thread waits for is the phase it
expects, every phase's ``expect_tx`` equals the bytes of its loads' whole boxes, and each
``empty`` barrier gets one arrival per consumer warpgroup per use.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np
from copy_async_kernels import tma_bytes
from wgmma_model import run_wgmmas

from tilewright.ir import (
    Block,
    BlockRealize,
    BufferStore,
    Call,
    Cast,
    DeclBuffer,
    Evaluate,
    For,
    IfThenElse,
    IntImm,
    LetStmt,
    SeqStmt,
    Var,
)
from tilewright.ir import expr as E
from tilewright.ir import intrinsics_hopper as hopper
from tilewright.ir.stmt import AttrStmt

_BINARY = {
    E.Add: lambda a, b: a + b,
    E.Sub: lambda a, b: a - b,
    E.Mul: lambda a, b: a * b,
    E.FloorDiv: lambda a, b: a // b,
    E.FloorMod: lambda a, b: a % b,
    E.Min: min,
    E.Max: max,
    E.EQ: lambda a, b: int(a == b),
    E.NE: lambda a, b: int(a != b),
    E.LT: lambda a, b: int(a < b),
    E.LE: lambda a, b: int(a <= b),
    E.GT: lambda a, b: int(a > b),
    E.GE: lambda a, b: int(a >= b),
    E.And: lambda a, b: int(a and b),
    E.Or: lambda a, b: int(a or b),
}


def ev(expr: object, env: dict[str, int]) -> int:
    """An integer expression's value, variables by name."""
    if isinstance(expr, int):
        return expr
    if isinstance(expr, IntImm):
        return expr.value
    if isinstance(expr, Var):
        return env[expr.name]
    if isinstance(expr, Call) and expr.op == "if_then_else":
        cond, yes, no = expr.args
        return ev(yes, env) if ev(cond, env) else ev(no, env)
    if isinstance(expr, E.Not):
        return int(not ev(expr.a, env))
    return _BINARY[type(expr)](ev(expr.a, env), ev(expr.b, env))  # type: ignore[attr-defined]


class Cta:
    """The state of one CTA: shared storage (element arrays by buffer name, NaN = never
    written), the recorded loads per mbarrier phase, C, and protocol counters."""

    def __init__(self, func, tensors: dict[str, np.ndarray], c: np.ndarray) -> None:
        self.func, self.tensors, self.c = func, tensors, c
        self.shared: dict[str, np.ndarray] = {}
        self.loads: dict[tuple[str, int], list[list]] = defaultdict(list)  # phase -> loads
        self.expected: dict[tuple[str, int], list[int]] = defaultdict(list)
        self.waits: dict[tuple[str, int, int], int] = defaultdict(int)  # (bar, i, who) -> n
        self.arrivals: dict[tuple[str, int], int] = defaultdict(int)
        self.wgmmas_per_wait: list[int] = []

    def storage(self, name: str, size: int) -> np.ndarray:
        return self.shared.setdefault(name, np.full(size, np.nan))


def _barrier(address: Call, env: dict[str, int]) -> tuple[str, int]:
    (load,) = address.args
    return load.buffer.name, ev(load.indices[0], env)


def _tma_load(cta: Cta, call: Call, env: dict[str, int]) -> None:
    dst, tmap, bar, *coords = call.args
    (dst_load,) = dst.args
    data, *box, swizzle = tmap.args
    box, swizzle = [b.value for b in box], swizzle.value
    tensor = cta.tensors[data.name]
    start = ev(dst_load.indices[0], env)
    rows, cols = box
    col0, row0 = (ev(x, env) for x in coords)  # innermost first
    values = np.zeros((rows, cols))  # TMA's zero fill outside the tensor
    inside = tensor[row0 : row0 + rows, col0 : col0 + cols]
    values[: inside.shape[0], : inside.shape[1]] = inside
    addresses = tma_bytes((rows, cols), 2, swizzle, start * 2)
    key = _barrier(bar, env)
    phase = len(cta.expected[key]) - 1  # the phase the last expect_tx armed
    assert phase >= 0, f"a TMA load on {key} before its expect_tx"
    cta.loads[(key, phase)].append(
        (dst_load.buffer.name, addresses, values.ravel(), rows * cols * 2)
    )


def _apply(cta: Cta, key: tuple[str, int], phase: int) -> None:
    loads = cta.loads[(key, phase)]
    assert loads, f"{key} phase {phase} is waited on but no load completes on it"
    assert sum(n for *_, n in loads) == cta.expected[key][phase], (
        f"{key} phase {phase}: expect_tx {cta.expected[key][phase]} bytes, the boxes move "
        f"{sum(n for *_, n in loads)}"
    )
    for name, addresses, values, _ in loads:
        storage = cta.storage(name, 1 << 17)
        for address, value in zip(addresses, values):
            storage[address // 2] = value


def _evaluate(cta: Cta, call: Call, env: dict[str, int], who: int, acc: np.ndarray | None):
    if hopper.MBARRIER_ARRIVE_EXPECT_TX.matches(call):
        cta.expected[_barrier(call.args[0], env)].append(ev(call.args[1], env))
    elif hopper.TMA_LOAD.matches(call):
        _tma_load(cta, call, env)
    elif hopper.MBARRIER_WAIT.matches(call):
        key = _barrier(call.args[0], env)
        n = cta.waits[(*key, who)]
        cta.waits[(*key, who)] += 1
        parity = ev(call.args[1], env)
        if key[0] == "full":  # the consumer's n-th wait: phase n, parity n % 2
            assert parity == n % 2, f"wait {n} on {key} for parity {parity}"
            _apply(cta, key, n)
            cta.wgmmas_per_wait.append(0)
        else:  # the producer's n-th use waits for the release of use n - 1
            assert parity == (n - 1) % 2, f"producer wait {n} on {key} for parity {parity}"
    elif hopper.MBARRIER_ARRIVE.matches(call):
        cta.arrivals[_barrier(call.args[0], env)] += 1
    elif hopper.WGMMA_MMA_ASYNC.matches(call):
        assert acc is not None
        run_wgmmas([call], cta.shared, acc, env)
        cta.wgmmas_per_wait[-1] += 1


def _contains(node: object, found) -> bool:
    """Whether ``found(n)`` holds for a statement ``n`` in ``node`` (loops, ifs, lets)."""
    if found(node):
        return True
    children = {
        For: lambda n: [n.body],
        IfThenElse: lambda n: [n.then_case, n.else_case],
        SeqStmt: lambda n: n.seq,
        LetStmt: lambda n: [n.body],
    }
    for cls, get in children.items():
        if isinstance(node, cls):
            return any(_contains(child, found) for child in get(node) if child is not None)
    return False


def _is_epilogue(node: object) -> bool:
    """Stores to C and no intrinsic: the per-thread epilogue."""
    return _contains(
        node, lambda n: isinstance(n, BufferStore) and n.buffer.name == "C"
    ) and not _contains(node, lambda n: isinstance(n, Evaluate))


def _run(cta: Cta, node, env: dict[str, int], who: int, acc, thread_level: bool = False):
    if node is None:
        return
    if isinstance(node, SeqStmt):
        for item in node.seq:
            _run(cta, item, env, who, acc, thread_level)
    elif isinstance(node, For):
        if node.thread_tag:  # blockIdx / threadIdx bindings: already in env
            _run(cta, node.body, env, who, acc, thread_level)
            return
        if acc is not None and not thread_level and _is_epilogue(node):
            # The epilogue: each thread of the warpgroup runs it with its own registers.
            for t in range(128):
                local = dict(env, threadIdx_x=env["threadIdx_x"] + t, tid=env["tid"] + t)
                _run(cta, node, local, t, acc, True)
            return
        for i in range(ev(node.min, env), ev(node.min, env) + ev(node.extent, env)):
            _run(cta, node.body, dict(env, **{node.loop_var.name: i}), who, acc, thread_level)
    elif isinstance(node, IfThenElse):
        branch = node.then_case if ev(node.condition, env) else node.else_case
        _run(cta, branch, env, who, acc, thread_level)
    elif isinstance(node, LetStmt):
        _run(
            cta,
            node.body,
            dict(env, **{node.var.name: ev(node.value, env)}),
            who,
            acc,
            thread_level,
        )
    elif isinstance(node, BlockRealize):
        _run(cta, node.block, env, who, acc, thread_level)
    elif isinstance(node, Block | DeclBuffer | AttrStmt):
        _run(cta, node.body, env, who, acc, thread_level)
    elif isinstance(node, Evaluate) and isinstance(node.value, Call):
        _evaluate(cta, node.value, env, who, acc)
    elif isinstance(node, BufferStore):
        assert node.buffer.name == "C" and thread_level, node
        value = node.value.value if isinstance(node.value, Cast) else node.value
        register = ev(value.indices[0], env)
        row, col = (ev(i, env) for i in node.indices)
        assert np.isnan(cta.c[row, col]), f"C[{row}, {col}] stored twice"
        cta.c[row, col] = acc[who, register]


def run_cta(func, bx: int, tensors: dict[str, np.ndarray], c: np.ndarray, regs: int) -> Cta:
    """Run CTA ``bx`` of the lowered ``func`` (producer first, then consumers 1 and 2),
    writing into ``c``; ``regs`` accumulator registers a thread."""
    cta = Cta(func, tensors, c)
    _run(cta, func.body, {"bx": bx, "threadIdx_x": 0}, 0, None)  # thread 0: init + producer
    for wg in (1, 2):
        acc = np.full((128, regs), np.nan)
        _run(cta, func.body, {"bx": bx, "threadIdx_x": 128 * wg}, wg, acc)
    for key, count in cta.arrivals.items():
        uses = cta.waits[(*key, 0)]  # the producer waited once per use of the stage
        assert count == 2 * uses, f"{key}: {count} arrivals for {uses} uses"
    return cta
