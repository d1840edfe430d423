"""Checks every schedule test runs: expected IR, trace replay (Python and JSON), printing
round trip, and numeric equality with the unscheduled program in the reference evaluator."""

from __future__ import annotations

import json
from collections.abc import Callable

import numpy as np
import pytest
from evaluator import run
from schedule_corpus import Program

import tilewright as tw
from tilewright.ir import (
    Block,
    BlockRealize,
    For,
    IRModule,
    PrimFunc,
    Stmt,
    Var,
    assert_structural_equal,
    collect_vars,
    pre_order_visit,
)
from tilewright.schedule import Schedule, ScheduleError, Trace
from tilewright.schedule.tree import children


def block_names(tree: object) -> list[str]:
    """The names of the blocks in ``tree``, parents first."""
    names: list[str] = []
    pre_order_visit(tree, lambda n: names.append(n.name) if isinstance(n, Block) else None)
    return names


def assert_equal_named(lhs: object, rhs: object) -> None:
    """Structurally equal and with the same block names: TVM's structural equality ignores a
    block's name, but a schedule's result is reached by name (``get_block``)."""
    assert_structural_equal(lhs, rhs)
    assert block_names(lhs) == block_names(rhs)


def as_module(mod: IRModule | PrimFunc) -> IRModule:
    return IRModule({"main": mod}) if isinstance(mod, PrimFunc) else mod


def check_replay(sch: Schedule, original: IRModule | PrimFunc) -> None:
    """The trace, replayed directly, from its JSON, and from its Python text, rebuilds the
    scheduled module."""
    replayed = Schedule(original)
    sch.trace.apply_to_schedule(replayed)
    assert_equal_named(replayed.mod, sch.mod)

    text = json.dumps(sch.trace.as_json())
    from_json = Schedule(original)
    Trace.from_json(text).apply_to_schedule(from_json)
    assert_equal_named(from_json.mod, sch.mod)
    assert Trace.from_json(text).as_json() == json.loads(text)

    from_python = Schedule(original)
    exec("\n".join(sch.trace.as_python()), {"sch": from_python})
    assert_equal_named(from_python.mod, sch.mod)


def check_numeric(sch: Schedule, original: IRModule | PrimFunc, seed: int = 0) -> None:
    """Every function computes the same outputs scheduled and unscheduled."""
    before = as_module(original)
    for name, func in sch.mod.items():
        buffers = [func.buffer_of(p) for p in func.params if func.buffer_of(p) is not None]
        rng = np.random.default_rng(seed)
        inputs = [
            rng.standard_normal(tuple(int(s) for s in b.shape)).astype(str(b.dtype))  # type: ignore[union-attr]
            for b in buffers
        ]
        want = run(before[name], *inputs)
        got = run(func, *inputs)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)


def check_well_formed(func: PrimFunc) -> None:
    """Loops define distinct variables; blocks have unique names and one binding per
    iterator; bindings and predicates use only enclosing loops and the function's symbols."""
    symbols = set(func.params)
    for _, buf in func.buffer_map:
        symbols.update(collect_vars(buf.shape))
    loop_vars: set[Var] = set()
    names: set[str] = set()

    def walk(stmt: Stmt, scope: frozenset[Var]) -> None:
        if isinstance(stmt, For):
            assert stmt.loop_var not in loop_vars, f"loop {stmt.loop_var.name} defined twice"
            loop_vars.add(stmt.loop_var)
            walk(stmt.body, scope | {stmt.loop_var})
            return
        if isinstance(stmt, BlockRealize):
            block = stmt.block
            assert block.name not in names, f"two blocks named {block.name}"
            names.add(block.name)
            assert len(stmt.iter_values) == len(block.iter_vars), block.name
            used = set(collect_vars((stmt.iter_values, stmt.predicate)))
            stray = used - scope - symbols
            assert not stray, f"block {block.name} binds {sorted(v.name for v in stray)}"
            inner = scope | {iv.var for iv in block.iter_vars}
            for child in children(block):
                walk(child, inner)
            return
        for child in children(stmt):
            walk(child, scope)

    walk(func.body, frozenset())


def check_schedule(
    sch: Schedule,
    original: IRModule | PrimFunc,
    expected: IRModule | PrimFunc | None = None,
    *,
    numeric: bool = True,
) -> None:
    """The scheduled module equals ``expected``, replays, prints and parses back, and computes
    what the original computes."""
    for _, func in sch.mod.items():
        check_well_formed(func)
    if expected is not None:
        assert_equal_named(sch.mod, as_module(expected))
    check_replay(sch, original)
    assert_equal_named(tw.script.from_source(sch.mod.script()), sch.mod)
    if numeric:
        check_numeric(sch, original)


def check_refused(sch: Schedule, call: Callable[[], object], match: str) -> ScheduleError:
    """``call`` raises ``ScheduleError`` matching ``match`` and changes nothing: the module is
    the same object and only ``get_block`` lookups were recorded."""
    before, length = sch.mod, len(sch.trace)
    with pytest.raises(ScheduleError, match=match) as info:
        call()
    assert sch.mod is before
    assert {i.kind for i in sch.trace.insts[length:]} <= {"get_block"}
    return info.value


def check_fuzzed(sch: Schedule, program: Program, case: int, *, print_every: int) -> None:
    """A randomly scheduled corpus program is well formed, matches its numpy reference on the
    inputs of seed ``case``, and replays from its trace; every ``print_every``-th case it also
    prints and parses back, every fourth it replays from the trace's JSON."""
    check_well_formed(sch.mod["main"])
    inputs = program.inputs(np.random.default_rng(case))
    outputs = run(sch.mod["main"], *inputs)
    for got, want in zip(outputs, program.reference(*inputs)):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4, err_msg=str(sch.trace))

    replayed = Schedule(program.func)
    sch.trace.apply_to_schedule(replayed)
    assert_equal_named(replayed.mod, sch.mod)
    if case % print_every == 0:
        assert_equal_named(tw.script.from_source(sch.mod.script()), sch.mod)
    if case % 4 == 0:
        from_json = Schedule(program.func)
        Trace.from_json(json.dumps(sch.trace.as_json())).apply_to_schedule(from_json)
        assert_equal_named(from_json.mod, sch.mod)
