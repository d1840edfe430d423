"""Traces in, candidate decisions out: the ``sample_categorical`` instructions whose values a
trace uses in a given pattern (an annotation, a thread-bound split), and another index for
one of them."""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from typing import cast

from tilewright.schedule import ExprRV, Instruction, Trace


def categorical_producers(trace: Trace) -> dict[ExprRV, int]:
    """Each value a ``sample_categorical`` draws, with the index of that instruction.

    Example::

        >>> categorical_producers(sch.trace)   # v = sch.sample_categorical(...) at index 3
        {ExprRV(#12): 3}
    """
    found: dict[ExprRV, int] = {}
    for k, inst in enumerate(trace.insts):
        if inst.kind == "sample_categorical":
            (value,) = inst.outputs
            assert isinstance(value, ExprRV)
            found[value] = k
    return found


def annotated_categoricals(trace: Trace, keys: Iterable[str]) -> list[int]:
    """Indices (in trace order, each once) of the ``sample_categorical`` instructions whose
    value some ``annotate`` with one of ``keys`` sets.

    Example::

        >>> annotated_categoricals(sch.trace, ["meta_schedule.unroll_explicit"])
        [5]
    """
    wanted = set(keys)
    producers = categorical_producers(trace)
    found: list[int] = []
    for inst in trace.insts:
        if inst.kind != "annotate" or inst.attrs[0] not in wanted:
            continue
        value = inst.inputs[1]
        if isinstance(value, ExprRV) and value in producers and producers[value] not in found:
            found.append(producers[value])
    return sorted(found)


def only_annotated(trace: Trace, index: int) -> bool:
    """Whether the value drawn by instruction ``index`` is used by ``annotate`` calls only
    (so any other candidate replays: an annotation's value never makes a primitive refuse)."""
    (value,) = trace.insts[index].outputs
    for inst in trace.insts[index + 1 :]:
        if _mentions(inst.inputs, value) and (inst.kind != "annotate" or inst.inputs[0] is value):
            return False
    return True


def _mentions(inputs: object, value: object) -> bool:
    if inputs is value:
        return True
    if isinstance(inputs, list | tuple):
        return any(_mentions(v, value) for v in inputs)
    return False


def weights(inst: Instruction) -> list[float]:
    """The probabilities of a ``sample_categorical`` instruction's candidates."""
    probs = cast(Sequence[float], inst.attrs[1])
    return [float(p) for p in probs]


def can_change(inst: Instruction) -> bool:
    """Whether another candidate than the decided one has a positive probability."""
    probs = weights(inst)
    return any(p > 0 for i, p in enumerate(probs) if i != inst.decision)


def other_index(rng: random.Random, inst: Instruction) -> int:
    """An index other than the instruction's decision, drawn with the probabilities of the
    other candidates (TVM's mutators renormalise them the same way); the caller checks
    ``can_change`` first.

    Example::

        >>> other_index(random.Random(0), unroll_inst)   # decision 1 of [0, 16, 64]
        2
    """
    probs = weights(inst)
    others = [i for i in range(len(probs)) if i != inst.decision]
    return rng.choices(others, weights=[probs[i] for i in others])[0]
