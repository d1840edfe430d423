"""Traces: the list of primitive calls that made a schedule, printed as runnable Python,
serialised to JSON, and replayed on the original module to rebuild the same IR."""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from tilewright.ir.expr import FloatImm, IntImm, PrimExpr
from tilewright.ir.functor import substitute
from tilewright.schedule.error import ScheduleError
from tilewright.schedule.index_map import IndexMap
from tilewright.schedule.instruction import Instruction, InstructionKind, Ref
from tilewright.schedule.reference import (
    BlockRV,
    ExprRV,
    LoopRV,
    parse_rv_expr,
    rv_expr_text,
    rvs_in,
)

if TYPE_CHECKING:
    from tilewright.schedule.schedule import Schedule

_PREFIX = {BlockRV: "b", LoopRV: "l", ExprRV: "v"}
_BY_PREFIX: dict[str, Callable[[], Ref]] = {"b": BlockRV, "l": LoopRV, "v": ExprRV}


class Trace:
    """A sequence of ``Instruction`` records and the decisions of its sampling instructions.

    Each instruction carries its own decision (``inst.decision``); ``decisions`` gives them
    as TVM does, a dict keyed by instruction. As in TVM, ``append`` and ``pop`` change the
    trace in place; ``with_decision`` and ``simplified`` return new traces.

    Args:
        insts: the instructions, in order.
        decisions: ``{instruction: decision}`` (TVM's form). When given, it is the only
            source of decisions, as in TVM: an instruction missing from it has none, so
            ``Trace(insts, {})`` replays by drawing every sampling instruction anew from
            the schedule's generator. When left out, each instruction keeps its own.

    Example::

        >>> sch.trace.show()
        # from tvm import s_tir
        def apply_trace(sch: s_tir.Schedule) -> None:
          b0 = sch.get_sblock(name="C", func_name="main")
          l1, = sch.get_loops(block=b0)
          l2, l3 = sch.split(loop=l1, factors=[None, 128], preserve_unit_iters=True, ...)
    """

    def __init__(
        self,
        insts: Iterable[Instruction] = (),
        decisions: Mapping[Instruction, object] | None = None,
    ) -> None:
        given = tuple(insts)
        if decisions is not None:
            given = tuple(i.with_decision(decisions.get(i)) for i in given)
        self.insts: tuple[Instruction, ...] = given

    def __len__(self) -> int:
        return len(self.insts)

    def __iter__(self) -> Iterator[Instruction]:
        return iter(self.insts)

    @property
    def decisions(self) -> dict[Instruction, object]:
        """``{instruction: decision}`` for every instruction that carries a decision."""
        return {inst: inst.decision for inst in self.insts if inst.decision is not None}

    def get_decision(self, inst: Instruction) -> object:
        """The decision of ``inst`` in this trace (``None`` if it has none)."""
        for mine in self.insts:
            if mine == inst:
                return mine.decision
        return None

    def append(self, inst: Instruction, decision: object = None) -> None:
        """Add ``inst`` at the end (with ``decision``, if given), in place.

        Example::

            >>> trace.append(Instruction(InstructionKind.get("GetSBlock"), [], ["C", "main"], [b]))
        """
        self.insts = (*self.insts, inst if decision is None else inst.with_decision(decision))

    def pop(self) -> Instruction | None:
        """Remove and return the last instruction, in place (``None`` if there is none)."""
        if not self.insts:
            return None
        last = self.insts[-1]
        self.insts = self.insts[:-1]
        return last

    def with_decision(
        self, inst: Instruction | int, decision: object, remove_postproc: bool = False
    ) -> Trace:
        """A new trace with the decision of ``inst`` (an instruction of this trace or its
        index) replaced; without the postprocessing part if ``remove_postproc``.

        Example::

            >>> tile = next(i for i in trace.insts if i.kind.name == "SamplePerfectTile")
            >>> trace.with_decision(tile, [4, 8], remove_postproc=True).get_decision(tile)
            [4, 8]
        """
        insts = list(self._design_space() if remove_postproc else self.insts)
        if not isinstance(inst, int) and inst not in insts:
            raise ValueError(f"{inst!r} is not an instruction of this trace")
        index = inst if isinstance(inst, int) else insts.index(inst)
        old = insts[index]
        if not old.kind.sampling:
            raise ValueError(f"instruction {index} ({old.kind}) makes no decision")
        insts[index] = old.with_decision(decision)
        return Trace(insts)

    def simplified(self, remove_postproc: bool = False) -> Trace:
        """This trace without queries (``get_block``, ``get_loops``, ...) whose outputs no
        later instruction uses; without the postprocessing part if ``remove_postproc``.

        Example::

            >>> len(sch.trace.simplified()) <= len(sch.trace)
            True
        """
        used: set[Ref] = set()
        kept: list[Instruction] = []
        insts = self._design_space() if remove_postproc else self.insts
        for inst in reversed(insts):
            if inst.kind.pure and not any(ref in used for ref in inst.outputs):
                continue
            kept.append(inst)
            used.update(_refs_in(inst.inputs))
        return Trace(reversed(kept))

    def _design_space(self) -> tuple[Instruction, ...]:
        cut = next((k for k, i in enumerate(self.insts) if i.kind.is_postproc), None)
        return self.insts if cut is None else self.insts[:cut]

    def names(self) -> dict[Ref, str]:
        """Printable names of the references the trace creates: ``b0``, ``l1``, ...; an
        output that is no reference (the ``None`` tile of a symbolic loop) is ``_`` and
        takes a number, as in TVM."""
        table: dict[Ref, str] = {}
        blanks = 0
        for inst in self.insts:
            for ref in inst.outputs:
                if ref is None:
                    blanks += 1
                elif ref not in table:
                    table[ref] = f"{_PREFIX[type(ref)]}{len(table) + blanks}"
        return table

    # ---- Python --------------------------------------------------------------------------
    def as_python(self, remove_postproc: bool = False) -> list[str]:
        """One line of Python per instruction, using ``sch`` for the schedule.

        Example::

            >>> exec("\\n".join(trace.as_python()), {"sch": Schedule(mod)})
        """
        names = self.names()
        insts = self._design_space() if remove_postproc else self.insts
        return [_python_line(inst, names) for inst in insts]

    def __str__(self) -> str:
        body = [f"  {line}" for line in self.as_python()] or ["  pass"]
        return "\n".join(
            ["# from tvm import s_tir", "def apply_trace(sch: s_tir.Schedule) -> None:", *body]
        )

    __repr__ = __str__

    def show(self, style: str | None = None, black_format: bool = False) -> None:
        """Print the trace as TVM does: a function ``apply_trace(sch)`` of its calls
        (``style`` and ``black_format`` are accepted for TVM's signature and ignored)."""
        print(str(self))

    # ---- JSON ----------------------------------------------------------------------------
    def as_json(self, remove_postproc: bool = False) -> list[Any]:
        """``[instructions, decisions]``; each instruction is ``[kind, inputs, attrs,
        outputs]`` with the kind's TVM name and references as their names, decisions are
        ``[index, decision]``.

        Example::

            >>> trace.as_json()[0][0]
            ['GetSBlock', [], ['C', 'main'], ['b0']]
        """
        names = self.names()
        insts = []
        decisions = []
        chosen = self._design_space() if remove_postproc else self.insts
        for k, inst in enumerate(chosen):
            inputs = [_encode(v, names) for v in inst.inputs]
            attrs = [_plain(v, inst.kind) for v in inst.attrs]
            insts.append([inst.kind.name, inputs, attrs, [_name(r, names) for r in inst.outputs]])
            if inst.decision is not None:
                decisions.append([k, inst.decision])
        return [insts, decisions]

    @staticmethod
    def from_json(data: list[Any] | str) -> Trace:
        """The trace that ``as_json`` wrote (its JSON text or the decoded list). Kinds may
        be named as TVM or as the ``Schedule`` methods (older traces)."""
        decoded: list[Any] = json.loads(data) if isinstance(data, str) else data
        insts_json, decisions_json = decoded
        decisions = {int(k): d for k, d in decisions_json}
        refs: dict[str, Ref] = {}
        insts = []
        for k, (kind, inputs, attrs, outputs) in enumerate(insts_json):
            values = tuple(_decode(v, refs) for v in inputs)
            outs: list[Ref | None] = []
            for name in outputs:
                if name == "_":  # no reference: the None tile of a symbolic loop
                    outs.append(None)
                    continue
                refs[name] = _BY_PREFIX[name[0]]()
                outs.append(refs[name])
            spec = InstructionKind.get(kind)
            insts.append(Instruction(spec, values, tuple(attrs), tuple(outs), decisions.get(k)))
        return Trace(insts)

    # ---- replay --------------------------------------------------------------------------
    def apply_to_schedule(
        self,
        sch: Schedule,
        remove_postproc: bool = False,
        decision_provider: Callable[..., object] | None = None,
        after_instruction: Callable[[Instruction, Schedule], None] | None = None,
    ) -> None:
        """Run every instruction on ``sch``; references map to the ones ``sch`` returns.

        Args:
            sch: a schedule of the module this trace was recorded on.
            remove_postproc: stop at ``enter_postproc``: replay the design space only.
            decision_provider: chooses the decision of a sampling instruction. TVM's form,
                ``(instruction, inputs, attrs, decision)``, is called for every instruction
                (inputs are the references of ``sch``); the two-argument form
                ``(instruction, decision)`` only for instructions with a decision.
            after_instruction: called as ``(instruction, sch)`` after each instruction; it
                may raise ``ScheduleError`` to stop the replay early (a search rejecting a
                candidate as soon as a decision makes it unusable).

        Example::

            >>> trace.apply_to_schedule(Schedule(mod), remove_postproc=False)
        """
        mapping: dict[Ref, Ref] = {}
        tvm_provider = decision_provider is not None and _arity(decision_provider) >= 4
        for inst in self.insts:
            if remove_postproc and inst.kind.is_postproc:
                break
            spec = inst.kind
            inputs = [_substitute(value, mapping) for value in inst.inputs]
            args: list[object] = []
            kwargs: dict[str, object] = {}
            for param, value in zip(spec.inputs, inputs):
                if param.startswith("*"):
                    args.extend(_items(value))
                else:
                    kwargs[param] = value
            kwargs.update(zip(spec.attrs, inst.attrs))
            decision = inst.decision
            if decision_provider is not None and tvm_provider:
                decision = decision_provider(inst, inputs, list(inst.attrs), decision)
            elif decision_provider is not None and decision is not None:
                decision = decision_provider(inst, decision)
            if decision is not None and spec.sampling:
                kwargs["decision"] = decision
            result = getattr(sch, spec.method)(*args, **kwargs)
            outputs = (
                [] if spec.outputs == "none" else [result] if spec.outputs == "one" else result
            )
            if len(outputs) != len(inst.outputs):
                raise ScheduleError(
                    spec.method,
                    "stale-reference",
                    f"the trace expects {len(inst.outputs)} results of {spec.method}, the "
                    f"schedule gave {len(outputs)}: the trace does not fit this module",
                )
            for old, new in zip(inst.outputs, outputs):
                if old is not None:
                    mapping[old] = new
            if after_instruction is not None:
                after_instruction(inst, sch)

    @staticmethod
    def apply_json_to_schedule(json_obj: list[Any] | str, sch: Schedule) -> None:
        """Replay the trace that ``as_json`` wrote on ``sch``.

        Example::

            >>> Trace.apply_json_to_schedule(trace.as_json(), Schedule(mod))
        """
        Trace.from_json(json_obj).apply_to_schedule(sch)


def _arity(func: Callable[..., object]) -> int:
    try:
        params = inspect.signature(func).parameters.values()
    except (TypeError, ValueError):
        return 2
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return 4
    return sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params)


def _items(value: object) -> list[object]:
    return list(value) if isinstance(value, list | tuple) else [value]


def _refs_in(value: object) -> list[Ref]:
    if isinstance(value, BlockRV | LoopRV | ExprRV):
        return [value]
    if isinstance(value, PrimExpr):
        return list(rvs_in(value))  # an expression of sampled values, such as v0 * v1
    if isinstance(value, list | tuple):
        return [r for v in value for r in _refs_in(v)]
    return []


def _substitute(value: object, mapping: dict[Ref, Ref]) -> object:
    if isinstance(value, BlockRV | LoopRV | ExprRV):
        if value not in mapping:
            raise ValueError(f"{value!r} is used before an instruction of the trace creates it")
        return mapping[value]
    if isinstance(value, PrimExpr) and rvs_in(value):
        used = {rv: _substitute(rv, mapping) for rv in rvs_in(value)}
        return substitute(value, used)  # type: ignore[arg-type]
    if isinstance(value, list | tuple):
        return [_substitute(v, mapping) for v in value]
    return value


def _python_value(value: object, names: dict[Ref, str]) -> str:
    if isinstance(value, BlockRV | LoopRV | ExprRV):
        return names.get(value, "None")
    if isinstance(value, PrimExpr) and rvs_in(value):
        return rv_expr_text(value, names)  # type: ignore[arg-type]
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_python_value(v, names) for v in value) + "]"
    if isinstance(value, IntImm | FloatImm):
        return repr(_number(value))
    return repr(value)


def _number(value: IntImm | FloatImm) -> bool | int | float:
    # A boolean immediate (``T.bool(False)``) is a flag: printed and written as ``False``.
    return bool(value.value) if str(value.dtype) == "bool" else value.value


def python_call(inst: Instruction) -> str:
    """``inst`` as TVM prints one instruction: its call with every reference named ``_`` and
    without its decision.

    Example::

        >>> python_call(Instruction("GetLoops", [BlockRV()], [], [LoopRV(), LoopRV()]))
        '_, _ = sch.get_loops(block=_)'
    """
    blank = {ref: "_" for ref in (*_refs_in(inst.inputs), *inst.outputs) if ref is not None}
    return _python_line(inst, blank, with_decision=False)


def _python_line(inst: Instruction, names: dict[Ref, str], with_decision: bool = True) -> str:
    # Keyword arguments in the order TVM prints them; defaults left out.
    spec = inst.kind
    values = dict(zip(spec.inputs, inst.inputs)) | dict(zip(spec.attrs, inst.attrs))
    defaults = dict(spec.defaults)
    parts: list[str] = []
    for param in spec.printed or (*spec.inputs, *spec.attrs):
        key = param.lstrip("*")
        value = values[param] if param in values else values[key]
        if param.startswith("*"):
            parts.extend(_python_value(v, names) for v in _items(value))
        elif not (key in defaults and value == defaults[key]):
            parts.append(f"{key}={_python_value(value, names)}")
    if with_decision and inst.decision is not None:
        parts.append(f"decision={_python_value(inst.decision, names)}")
    call = f"sch.{spec.call}({', '.join(parts)})"
    outs = [_name(r, names) for r in inst.outputs]
    if spec.outputs == "one":
        return f"{outs[0]} = {call}"
    if spec.outputs == "many":
        if not outs:
            return f"_ = {call}"
        return f"{outs[0]}, = {call}" if len(outs) == 1 else f"{', '.join(outs)} = {call}"
    return call


def _name(ref: Ref | None, names: dict[Ref, str]) -> str:
    return "_" if ref is None else names[ref]


def _plain(value: object, kind: str) -> object:
    if isinstance(value, IntImm | FloatImm):
        return _number(value)
    if isinstance(value, IndexMap):
        return str(value)  # its lambda's text; transform_layout parses it back
    if isinstance(value, PrimExpr):
        raise ValueError(f"instruction {kind!r}: the expression {value!r} has no JSON form")
    if isinstance(value, list | tuple):
        return [_plain(v, kind) for v in value]
    return value


def _encode(value: object, names: dict[Ref, str]) -> object:
    if isinstance(value, BlockRV | LoopRV | ExprRV):
        return names[value]
    if isinstance(value, PrimExpr) and rvs_in(value):
        return {"expr": rv_expr_text(value, names)}  # type: ignore[arg-type]
    if isinstance(value, str):
        return {"str": value}
    if isinstance(value, list | tuple):
        return [_encode(v, names) for v in value]
    if isinstance(value, dict):
        return {"dict": [[str(k), _encode(v, names)] for k, v in value.items()]}
    return _plain(value, "input")


def _decode(value: object, refs: dict[str, Ref]) -> object:
    if isinstance(value, str):
        if value not in refs and value.startswith('"'):
            return json.loads(value)  # TVM writes a string input as its quoted text
        if value == "None" and value not in refs:
            return None  # TVM writes a missing input (a split's inferred factor) so
        return refs[value]
    if isinstance(value, dict) and "dict" in value:
        return {k: _decode(v, refs) for k, v in value["dict"]}
    if isinstance(value, dict):
        return parse_rv_expr(value["expr"], refs) if "expr" in value else value["str"]
    if isinstance(value, list):
        return tuple(_decode(v, refs) for v in value)
    return value
