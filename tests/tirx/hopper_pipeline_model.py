"""A CPU model of a lowered warp-specialised Hopper kernel (test support, no GPU).

``run_cta`` interprets the function ``LowerTIRx`` produced for one CTA: first the producer
thread (``threadIdx.x == 0``), whose TMA loads are decoded (box, swizzle, coordinates, the
mbarrier they complete on) and recorded per mbarrier phase, with the bytes TMA moves for a
box zero-filled outside the tensor; then each consumer warpgroup, where a wait on an
mbarrier applies that phase's loads to the shared storage (so a wgmma reads what the
producer put there), wgmmas run through ``wgmma_model`` and the epilogue's stores run once
per thread; a TMA-store epilogue runs its warpgroup's 128 threads in lockstep (the casts to
C's type, ``stmatrix`` warp by warp into the staging tiles, the TMA stores clipped at C's
edges, each element of C stored once). It checks the protocol as it goes: the parity a
thread waits for is the phase it expects, every phase's ``expect_tx`` equals the bytes of
its loads' whole boxes, and each ``empty`` barrier gets one arrival per consumer warpgroup
per use.
"""

from __future__ import annotations

import math
from collections import defaultdict

import ml_dtypes  # noqa: F401 - numpy knows bfloat16 once it is imported
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

# Integer operations as Python source: an expression is translated once into one lambda
# (the model evaluates the same index expressions for every thread and iteration).
_BINARY = {
    E.Add: "({} + {})",
    E.Sub: "({} - {})",
    E.Mul: "({} * {})",
    E.FloorDiv: "({} // {})",
    E.FloorMod: "({} % {})",
    E.Min: "min({}, {})",
    E.Max: "max({}, {})",
    E.EQ: "int({} == {})",
    E.NE: "int({} != {})",
    E.LT: "int({} < {})",
    E.LE: "int({} <= {})",
    E.GT: "int({} > {})",
    E.GE: "int({} >= {})",
    E.And: "int(bool({}) and bool({}))",
    E.Or: "int(bool({}) or bool({}))",
}
_BITWISE = {"bitwise_xor": "({} ^ {})", "bitwise_and": "({} & {})", "bitwise_or": "({} | {})"}
_COMPILED: dict[int, tuple[object, object]] = {}  # id(expr) -> (expr, its lambda)


def _source(expr: object) -> str:
    if isinstance(expr, int):
        return str(expr)
    if isinstance(expr, IntImm):
        return str(expr.value)
    if isinstance(expr, Var):
        return f"env[{expr.name!r}]"
    if isinstance(expr, Call) and expr.op == "if_then_else":
        cond, yes, no = (_source(x) for x in expr.args)
        return f"({yes} if {cond} else {no})"
    if isinstance(expr, Call) and expr.op in _BITWISE:
        return _BITWISE[expr.op].format(*(_source(x) for x in expr.args))
    if isinstance(expr, E.Not):
        return f"int(not {_source(expr.a)})"
    return _BINARY[type(expr)].format(_source(expr.a), _source(expr.b))  # type: ignore[attr-defined]


def ev(expr: object, env: dict[str, int]) -> int:
    """An integer expression's value, variables by name."""
    if isinstance(expr, int):
        return expr
    cached = _COMPILED.get(id(expr))
    if cached is None or cached[0] is not expr:
        # The expression is kept alive with its lambda, so that its id is not reused.
        cached = (expr, eval(f"lambda env: {_source(expr)}"))
        _COMPILED[id(expr)] = cached
    return cached[1](env)  # type: ignore[operator]


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
        # TMA stores not yet read: the open group, then the committed groups, oldest first.
        self.open_stores: list[tuple[Call, dict[str, int]]] = []
        self.store_groups: list[list[tuple[Call, dict[str, int]]]] = []

    def storage(self, name: str, size: int) -> np.ndarray:
        return self.shared.setdefault(name, np.full(size, np.nan))

    def commit_stores(self) -> None:
        self.store_groups.append(self.open_stores)
        self.open_stores = []

    def wait_stores(self, pending: int) -> None:
        """``bulk_wait_group_read(pending)``: the older groups' stores read now."""
        assert not self.open_stores, "a TMA store waited on before its group is committed"
        while len(self.store_groups) > pending:
            for call, env in self.store_groups.pop(0):
                _tma_store(self, call, env)

    def unread(self, name: str) -> set[int]:
        """Elements of staging buffer ``name`` that a TMA store still has to read."""
        stores = [s for group in self.store_groups for s in group] + self.open_stores
        return {
            index
            for call, env in stores
            if _store_source(call)[0] == name
            for index in _store_elements(call, env)
        }


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
    elif hopper.BULK_WAIT_GROUP_READ.matches(call):
        cta.wait_stores(ev(call.args[0], env))


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


def _calls_any(node: object, *intrinsics) -> bool:
    return _contains(
        node,
        lambda n: (
            isinstance(n, Evaluate)
            and isinstance(n.value, Call)
            and any(i.matches(n.value) for i in intrinsics)
        ),
    )


def _is_epilogue(node: object) -> bool:
    """Per-thread work after the mainloop (no wgmma, no mbarrier wait inside): register
    stores (an activation, the conversion to C's type), C's stores, or the TMA-store
    epilogue's stmatrix and TMA stores."""
    per_thread = _calls_any(node, hopper.STMATRIX) or _contains(
        node, lambda n: isinstance(n, BufferStore)
    )
    return per_thread and not _calls_any(node, hopper.WGMMA_MMA_ASYNC, hopper.MBARRIER_WAIT)


_FLOAT = {
    E.Add: lambda a, b: a + b,
    E.Sub: lambda a, b: a - b,
    E.Mul: lambda a, b: a * b,
    E.Div: lambda a, b: a / b,
    E.Max: max,
    E.Min: min,
}


def _value(expr: object, env: dict[str, int], registers: dict, tensors: dict) -> float:
    """A thread's float value of ``expr`` (its registers, the kernel's input tensors such as
    a bias, constants, casts, erf)."""
    if isinstance(expr, E.BufferLoad):
        index = ev(expr.indices[0], env)
        if expr.buffer.name in tensors:
            return float(tensors[expr.buffer.name].reshape(-1)[index])
        return float(registers[expr.buffer.name][env["_t"], index])
    if isinstance(expr, Cast):
        value = _value(expr.value, env, registers, tensors)
        return float(np.asarray(value).astype(np.dtype(str(expr.dtype))))
    if isinstance(expr, E.FloatImm | IntImm):
        return float(expr.value)
    if isinstance(expr, Call) and expr.op == "erf":
        return math.erf(_value(expr.args[0], env, registers, tensors))
    operands = (expr.a, expr.b)  # type: ignore[attr-defined]
    a, b = (_value(x, env, registers, tensors) for x in operands)
    return _FLOAT[type(expr)](a, b)


def _stmatrix(cta: Cta, call: Call, envs: list[dict[str, int]], registers) -> None:
    """``stmatrix`` for whole warps: lane t gives two 16-bit registers a matrix; lane
    t < 8 num writes row t % 8 of matrix t // 8 (columns from lanes 4 (t % 8) + c)."""
    num, trans, pointer, source, offset = call.args
    count = ev(num, {})
    assert ev(trans, {}) == 0, "the model knows stmatrix without .trans"
    assert len(envs) % 32 == 0, "stmatrix is warp-collective: whole warps run it"
    regs = registers[source.args[0].buffer.name]
    data, address = pointer.args[:2]  # tvm_access_ptr(region_data(S[0], S[last]), offset, ...)
    name = data.args[0].buffer.name
    storage = cta.storage(name, 1 << 17)
    unread = cta.unread(name)
    for first in range(0, len(envs), 32):
        warp = envs[first : first + 32]
        offers = [regs[e["_t"], ev(offset, e) : ev(offset, e) + 2 * count] for e in warp]
        for lane, env in enumerate(warp[: 8 * count]):
            q, r = divmod(lane, 8)
            row = [offers[4 * r + c][2 * q + i] for c in range(4) for i in (0, 1)]
            start = ev(address, env)
            raced = unread.intersection(range(start, start + 8))
            assert not raced, (
                f"stmatrix writes {name}[{min(raced)}] before a TMA store of it has read it "
                "(no bulk_wait_group_read lets that store's group go first)"
            )
            storage[start : start + 8] = row


def _store_source(call: Call) -> tuple[str, object]:
    """A TMA store's staging buffer name and its first element's index expression."""
    (load,) = call.args[1].args
    return load.buffer.name, load.indices[0]


def _store_elements(call: Call, env: dict[str, int]) -> list[int]:
    """The staging elements a TMA store reads, in the box's row-major order."""
    _, *box, swizzle = call.args[0].args
    start = ev(_store_source(call)[1], env)
    return [a // 2 for a in tma_bytes(tuple(b.value for b in box), 2, swizzle.value, start * 2)]


def _tma_store(cta: Cta, call: Call, env: dict[str, int]) -> None:
    """A TMA store: the staging box (swizzled as TMA reads it) into C, clipped at C's edges;
    each element of C is stored once."""
    _, *box, _ = call.args[0].args
    rows, cols = (b.value for b in box)
    coords = call.args[2:]
    storage = cta.storage(_store_source(call)[0], 1 << 17)
    values = np.array([storage[i] for i in _store_elements(call, env)]).reshape(rows, cols)
    col0, row0 = (ev(x, env) for x in coords)
    inside = cta.c[row0 : row0 + rows, col0 : col0 + cols]
    assert np.isnan(inside).all(), f"C[{row0}:, {col0}:] stored twice"
    part = values[: inside.shape[0], : inside.shape[1]]
    assert not np.isnan(part).any(), "a TMA store reads staging elements never written"
    inside[...] = part


def _lockstep(cta: Cta, node, envs: list[dict[str, int]], registers: dict) -> None:
    """Run ``node`` for the threads ``envs`` statement by statement (all of them before the
    next statement): what a warp-collective instruction in a uniform epilogue needs."""
    if node is None or not envs:
        return
    if isinstance(node, SeqStmt):
        for item in node.seq:
            _lockstep(cta, item, envs, registers)
    elif isinstance(node, For):
        start = ev(node.min, envs[0])
        for i in range(start, start + ev(node.extent, envs[0])):
            inner = [dict(e, **{node.loop_var.name: i}) for e in envs]
            _lockstep(cta, node.body, inner, registers)
    elif isinstance(node, IfThenElse):
        taken = [ev(node.condition, e) for e in envs]
        _lockstep(cta, node.then_case, [e for e, t in zip(envs, taken) if t], registers)
        _lockstep(cta, node.else_case, [e for e, t in zip(envs, taken) if not t], registers)
    elif isinstance(node, LetStmt):
        inner = [dict(e, **{node.var.name: ev(node.value, e)}) for e in envs]
        _lockstep(cta, node.body, inner, registers)
    elif isinstance(node, BufferStore):
        dtype = np.dtype(str(node.buffer.dtype))
        for e in envs:
            value = _value(node.value, e, registers, cta.tensors)
            value = float(np.asarray(value).astype(dtype))
            if node.buffer.name == "C":  # the direct epilogue's stores
                row, col = (ev(i, e) for i in node.indices)
                assert np.isnan(cta.c[row, col]), f"C[{row}, {col}] stored twice"
                cta.c[row, col] = value
            else:  # a register: an activation, the conversion to C's type
                if node.buffer.name not in registers:
                    registers[node.buffer.name] = np.full((128, 1024), np.nan)
                dst = registers[node.buffer.name]
                dst[e["_t"], ev(node.indices[0], e)] = value
    elif isinstance(node, Evaluate) and isinstance(node.value, Call):
        if hopper.STMATRIX.matches(node.value):
            _stmatrix(cta, node.value, envs, registers)
        elif hopper.TMA_STORE.matches(node.value):
            cta.open_stores += [(node.value, e) for e in envs]
        elif hopper.BULK_COMMIT_GROUP.matches(node.value):
            assert len(envs) == 1, "one thread issues and commits the TMA stores"
            cta.commit_stores()
        elif hopper.BULK_WAIT_GROUP_READ.matches(node.value):
            assert len(envs) == 1, "one thread issues and waits for the TMA stores"
            cta.wait_stores(ev(node.value.args[0], envs[0]))
    elif isinstance(node, BlockRealize):
        _lockstep(cta, node.block, envs, registers)
    elif isinstance(node, Block | DeclBuffer | AttrStmt):
        _lockstep(cta, node.body, envs, registers)


def _run(cta: Cta, node, env: dict[str, int], who: int, acc) -> None:
    if node is None:
        return
    if isinstance(node, SeqStmt):
        for item in node.seq:
            _run(cta, item, env, who, acc)
    elif isinstance(node, For):
        if node.thread_tag:  # blockIdx / threadIdx bindings: already in env
            _run(cta, node.body, env, who, acc)
            return
        if acc is not None and _is_epilogue(node):
            # The epilogue: the warpgroup's 128 threads in lockstep, each its own registers.
            envs = [
                dict(env, threadIdx_x=env["threadIdx_x"] + t, tid=env["tid"] + t, _t=t)
                for t in range(128)
            ]
            _lockstep(cta, node, envs, {"acc_1": acc})
            return
        for i in range(ev(node.min, env), ev(node.min, env) + ev(node.extent, env)):
            _run(cta, node.body, dict(env, **{node.loop_var.name: i}), who, acc)
    elif isinstance(node, IfThenElse):
        branch = node.then_case if ev(node.condition, env) else node.else_case
        _run(cta, branch, env, who, acc)
    elif isinstance(node, LetStmt):
        _run(cta, node.body, dict(env, **{node.var.name: ev(node.value, env)}), who, acc)
    elif isinstance(node, BlockRealize):
        _run(cta, node.block, env, who, acc)
    elif isinstance(node, Block | DeclBuffer | AttrStmt):
        _run(cta, node.body, env, who, acc)
    elif isinstance(node, Evaluate) and isinstance(node.value, Call):
        _evaluate(cta, node.value, env, who, acc)
    else:
        raise AssertionError(f"the model runs no {type(node).__name__} outside the epilogue")


def run_cta(func, bx: int, tensors: dict[str, np.ndarray], c: np.ndarray, regs: int) -> Cta:
    """Run CTA ``bx`` of the lowered ``func`` (producer first, then consumers 1 and 2),
    writing into ``c``; ``regs`` accumulator registers a thread."""
    cta = Cta(func, tensors, c)
    _run(cta, func.body, {"bx": bx, "threadIdx_x": 0}, 0, None)  # thread 0: init + producer
    for wg in (1, 2):
        acc = np.full((128, regs), np.nan)
        _run(cta, func.body, {"bx": bx, "threadIdx_x": 128 * wg}, wg, acc)
        assert not cta.store_groups and not cta.open_stores, (
            f"consumer {wg} ends with TMA stores that may still read their staging tiles"
        )
    for key, count in cta.arrivals.items():
        uses = cta.waits[(*key, 0)]  # the producer waited once per use of the stage
        assert count == 2 * uses, f"{key}: {count} arrivals for {uses} uses"
    return cta
