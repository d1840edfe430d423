"""Traces: the list of primitive calls that made a schedule, printed as runnable Python,
serialised to JSON, and replayed on the original module to rebuild the same IR."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from tilewright.ir.expr import FloatImm, IntImm, PrimExpr
from tilewright.schedule.error import ScheduleError
from tilewright.schedule.index_map import IndexMap
from tilewright.schedule.instruction import KINDS, Instruction, Ref
from tilewright.schedule.reference import BlockRV, ExprRV, LoopRV

if TYPE_CHECKING:
    from tilewright.schedule.schedule import Schedule

_PREFIX = {BlockRV: "b", LoopRV: "l", ExprRV: "v"}
_BY_PREFIX: dict[str, Callable[[], Ref]] = {"b": BlockRV, "l": LoopRV, "v": ExprRV}


class Trace:
    """An immutable sequence of ``Instruction`` records.

    Example::

        >>> sch.trace.show()
        b0 = sch.get_block(name="C", func_name="main")
        l1, = sch.get_loops(block=b0)
        l2, l3 = sch.split(loop=l1, factors=[None, 128], preserve_unit_iters=True, ...)
    """

    def __init__(self, insts: Iterable[Instruction] = ()) -> None:
        self.insts: tuple[Instruction, ...] = tuple(insts)

    def __len__(self) -> int:
        return len(self.insts)

    def __iter__(self) -> Iterator[Instruction]:
        return iter(self.insts)

    def append(self, inst: Instruction) -> Trace:
        return Trace((*self.insts, inst))

    def with_decision(self, index: int, decision: object) -> Trace:
        """This trace with instruction ``index``'s decision replaced."""
        insts = list(self.insts)
        old = insts[index]
        if not old.spec.sampling:
            raise ValueError(f"instruction {index} ({old.kind}) makes no decision")
        insts[index] = Instruction(old.kind, old.inputs, old.attrs, old.outputs, decision)
        return Trace(insts)

    def simplified(self, remove_postproc: bool = False) -> Trace:
        """This trace without queries (``get_block``, ``get_loops``, ...) whose outputs no
        later instruction uses.

        Example::

            >>> len(sch.trace.simplified()) <= len(sch.trace)
            True
        """
        used: set[Ref] = set()
        kept: list[Instruction] = []
        insts = self.insts
        if remove_postproc:
            cut = [k for k, inst in enumerate(insts) if inst.kind == "enter_postproc"]
            insts = insts[: cut[0]] if cut else insts
        for inst in reversed(insts):
            if inst.spec.pure and not any(ref in used for ref in inst.outputs):
                continue
            kept.append(inst)
            used.update(_refs_in(inst.inputs))
        return Trace(reversed(kept))

    def names(self) -> dict[Ref, str]:
        """Printable names of the references the trace creates: ``b0``, ``l1``, ..."""
        table: dict[Ref, str] = {}
        for inst in self.insts:
            for ref in inst.outputs:
                if ref not in table:
                    table[ref] = f"{_PREFIX[type(ref)]}{len(table)}"
        return table

    # ---- Python --------------------------------------------------------------------------
    def as_python(self) -> list[str]:
        """One line of Python per instruction, using ``sch`` for the schedule."""
        names = self.names()
        return [_python_line(inst, names) for inst in self.insts]

    def __str__(self) -> str:
        return "\n".join(self.as_python())

    __repr__ = __str__

    def show(self) -> None:
        """Print the trace as Python."""
        print(str(self))

    # ---- JSON ----------------------------------------------------------------------------
    def as_json(self) -> list[Any]:
        """``[instructions, decisions]``; each instruction is ``[kind, inputs, attrs,
        outputs]`` with references as their names, decisions are ``[index, decision]``."""
        names = self.names()
        insts = []
        decisions = []
        for k, inst in enumerate(self.insts):
            inputs = [_encode(v, names) for v in inst.inputs]
            attrs = [_plain(v, inst.kind) for v in inst.attrs]
            insts.append([inst.kind, inputs, attrs, [names[r] for r in inst.outputs]])
            if inst.decision is not None:
                decisions.append([k, inst.decision])
        return [insts, decisions]

    @staticmethod
    def from_json(data: list[Any] | str) -> Trace:
        """The trace that ``as_json`` wrote (its JSON text or the decoded list)."""
        decoded: list[Any] = json.loads(data) if isinstance(data, str) else data
        insts_json, decisions_json = decoded
        decisions = {int(k): d for k, d in decisions_json}
        refs: dict[str, Ref] = {}
        insts = []
        for k, (kind, inputs, attrs, outputs) in enumerate(insts_json):
            values = tuple(_decode(v, refs) for v in inputs)
            spec = KINDS.get(kind)
            if spec is not None and len(attrs) < len(spec.attrs):
                defaults = dict(spec.defaults)
                missing = spec.attrs[len(attrs) :]
                if all(name in defaults for name in missing):
                    attrs = [*attrs, *(defaults[name] for name in missing)]
            outs = []
            for name in outputs:
                refs[name] = _BY_PREFIX[name[0]]()
                outs.append(refs[name])
            insts.append(Instruction(kind, values, tuple(attrs), tuple(outs), decisions.get(k)))
        return Trace(insts)

    # ---- replay --------------------------------------------------------------------------
    def apply_to_schedule(
        self,
        sch: Schedule,
        remove_postproc: bool = False,
        decision_provider: Callable[[Instruction, object], object] | None = None,
        after_instruction: Callable[[Instruction, Schedule], None] | None = None,
    ) -> None:
        """Run every instruction on ``sch``; references map to the ones ``sch`` returns.

        Args:
            sch: a schedule of the module this trace was recorded on.
            remove_postproc: stop at ``enter_postproc``: replay the design space only.
            decision_provider: called as ``(instruction, decision)`` to choose another
                decision for a sampling instruction.
            after_instruction: called as ``(instruction, sch)`` after each instruction; it
                may raise ``ScheduleError`` to stop the replay early (a search rejecting a
                candidate as soon as a decision makes it unusable).
        """
        mapping: dict[Ref, Ref] = {}
        for inst in self.insts:
            if remove_postproc and inst.kind == "enter_postproc":
                break
            spec = inst.spec
            args: list[object] = []
            kwargs: dict[str, object] = {}
            for param, value in zip(spec.inputs, inst.inputs):
                value = _substitute(value, mapping)
                if param.startswith("*"):
                    args.extend(_items(value))
                else:
                    kwargs[param] = value
            kwargs.update(zip(spec.attrs, inst.attrs))
            if inst.decision is not None:
                decision = inst.decision
                if decision_provider is not None:
                    decision = decision_provider(inst, decision)
                kwargs["decision"] = decision
            result = getattr(sch, spec.name)(*args, **kwargs)
            outputs = (
                [] if spec.outputs == "none" else [result] if spec.outputs == "one" else result
            )
            if len(outputs) != len(inst.outputs):
                raise ScheduleError(
                    spec.name,
                    "stale-reference",
                    f"the trace expects {len(inst.outputs)} results of {spec.name}, the "
                    f"schedule gave {len(outputs)}: the trace does not fit this module",
                )
            for old, new in zip(inst.outputs, outputs):
                mapping[old] = new
            if after_instruction is not None:
                after_instruction(inst, sch)

    @staticmethod
    def apply_json_to_schedule(data: list[Any] | str, sch: Schedule) -> None:
        Trace.from_json(data).apply_to_schedule(sch)


def _items(value: object) -> list[object]:
    return list(value) if isinstance(value, list | tuple) else [value]


def _refs_in(value: object) -> list[Ref]:
    if isinstance(value, BlockRV | LoopRV | ExprRV):
        return [value]
    if isinstance(value, list | tuple):
        return [r for v in value for r in _refs_in(v)]
    return []


def _substitute(value: object, mapping: dict[Ref, Ref]) -> object:
    if isinstance(value, BlockRV | LoopRV | ExprRV):
        if value not in mapping:
            raise ValueError(f"{value!r} is used before an instruction of the trace creates it")
        return mapping[value]
    if isinstance(value, list | tuple):
        return [_substitute(v, mapping) for v in value]
    return value


def _python_value(value: object, names: dict[Ref, str]) -> str:
    if isinstance(value, BlockRV | LoopRV | ExprRV):
        return names.get(value, "None")
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_python_value(v, names) for v in value) + "]"
    if isinstance(value, IntImm | FloatImm):
        return repr(value.value)
    return repr(value)


def _python_line(inst: Instruction, names: dict[Ref, str]) -> str:
    spec = inst.spec
    parts: list[str] = []
    for param, value in zip(spec.inputs, inst.inputs):
        if param.startswith("*"):
            parts.extend(_python_value(v, names) for v in _items(value))
        else:
            parts.append(f"{param}={_python_value(value, names)}")
    defaults = dict(spec.defaults)
    parts += [
        f"{p}={_python_value(v, names)}"
        for p, v in zip(spec.attrs, inst.attrs)
        if not (p in defaults and v == defaults[p])
    ]
    if inst.decision is not None:
        parts.append(f"decision={_python_value(inst.decision, names)}")
    call = f"sch.{spec.name}({', '.join(parts)})"
    outs = [names[r] for r in inst.outputs]
    if spec.outputs == "one":
        return f"{outs[0]} = {call}"
    if spec.outputs == "many":
        if not outs:
            return f"_ = {call}"
        return f"{outs[0]}, = {call}" if len(outs) == 1 else f"{', '.join(outs)} = {call}"
    return call


def _plain(value: object, kind: str) -> object:
    if isinstance(value, IntImm | FloatImm):
        return value.value
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
    if isinstance(value, str):
        return {"str": value}
    if isinstance(value, list | tuple):
        return [_encode(v, names) for v in value]
    return _plain(value, "input")


def _decode(value: object, refs: dict[str, Ref]) -> object:
    if isinstance(value, str):
        return refs[value]
    if isinstance(value, dict):
        return value["str"]
    if isinstance(value, list):
        return tuple(_decode(v, refs) for v in value)
    return value
