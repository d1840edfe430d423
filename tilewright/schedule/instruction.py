"""Trace records: one frozen ``Instruction`` per primitive call, and the literal table of
instruction kinds that says how each is printed, serialised and replayed.

A kind is known by two names: the ``Schedule`` method (``"split"``, the name traces were
always keyed by) and TVM's (``"Split"``, its ``InstructionKind.name``). ``InstructionKind`` is a
``str`` equal to the method name, so ``inst.kind == "split"`` and ``inst.kind.name == "Split"``
both hold, and ``InstructionKind.get`` accepts either name.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from tilewright.ir.expr import IntImm
from tilewright.schedule.reference import BlockRV, ExprRV, LoopRV

Ref = BlockRV | LoopRV | ExprRV

# TVM names that are not the method name in CamelCase.
_TVM_NAMES = {
    "rfactor": "RFactor",
    "reindex": "ReIndex",
    "unsafe_set_dtype": "UnsafeSetDType",
    "get_block": "GetSBlock",  # TVM calls blocks "SBlock"s since its s_tir namespace
}
# Other spellings of a kind: older TVM's, and the method names TVM prints.
_ALIASES = {
    "GetBlock": "get_block",
    "get_sblock": "get_block",
    "GetChildSBlocks": "get_child_blocks",
}
# The Schedule method a printed trace calls, when it is not the kind's method name.
_CALLS = {"get_block": "get_sblock"}


def tvm_name(method: str) -> str:
    """TVM's name of the instruction kind of a ``Schedule`` method.

    Example::

        >>> tvm_name("sample_perfect_tile"), tvm_name("get_block")
        ('SamplePerfectTile', 'GetSBlock')
    """
    return _TVM_NAMES.get(method) or "".join(p[:1].upper() + p[1:] for p in method.split("_"))


class InstructionKind(str):
    """How a primitive appears in a trace: a ``str`` equal to the ``Schedule`` method's name.

    Args:
        name: the ``Schedule`` method (the kind's value as a string, also ``.method``).
        inputs: parameters that may hold references (``*name`` for a variadic one).
        attrs: parameters that hold plain values (strings, flags).
        outputs: ``"one"``, ``"many"`` (a list) or ``"none"``.
        pure: a query that changes nothing (dropped by ``simplified`` when its outputs are
            unused).
        sampling: draws a random decision, which the trace records.
        defaults: parameters left out of printed traces at these values; trailing attrs among
            them may be left out of an instruction (a JSON trace written before they existed).
        fills: values of other trailing attrs an instruction may leave out (TVM versions
            that did not have them); unlike ``defaults`` they are always printed.
        printed: the order of keyword arguments in a printed trace when it is not inputs then
            attrs (``*name`` passes the value positionally).
        tvm: TVM's name, when it is not the method's name in CamelCase.

    ``.name`` is TVM's name (``"SamplePerfectTile"``), as in TVM; ``.method`` and ``str(kind)``
    are the method's; ``.call`` is the method a printed trace calls (TVM's spelling:
    ``get_sblock`` for ``get_block``). Kinds are compared, hashed and serialised as the
    method's name.

    Example::

        >>> kind = InstructionKind.get("SamplePerfectTile")
        >>> kind == "sample_perfect_tile", kind.name, kind.is_pure
        (True, 'SamplePerfectTile', True)
    """

    method: str
    name: str
    call: str
    inputs: tuple[str, ...]
    attrs: tuple[str, ...]
    outputs: str
    pure: bool
    sampling: bool
    defaults: tuple[tuple[str, object], ...]
    fills: tuple[tuple[str, object], ...]
    printed: tuple[str, ...]

    def __new__(
        cls,
        name: str,
        inputs: tuple[str, ...] = (),
        attrs: tuple[str, ...] = (),
        outputs: str = "none",
        pure: bool = False,
        sampling: bool = False,
        defaults: tuple[tuple[str, object], ...] = (),
        fills: tuple[tuple[str, object], ...] = (),
        printed: tuple[str, ...] = (),
        tvm: str | None = None,
    ) -> InstructionKind:
        self = super().__new__(cls, name)
        self.__dict__.update(
            method=str(name),
            name=tvm or tvm_name(name),
            call=_CALLS.get(str(name), str(name)),
            inputs=tuple(inputs),
            attrs=tuple(attrs),
            outputs=outputs,
            pure=pure,
            sampling=sampling,
            defaults=tuple(defaults),
            fills=tuple(fills),
            printed=tuple(printed),
        )
        return self

    def __setattr__(self, key: str, value: object) -> None:
        raise dataclasses.FrozenInstanceError(f"cannot assign to field {key!r}")

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        return (InstructionKind.get, (self.method,))  # the registered kind, by name

    @property
    def is_pure(self) -> bool:
        """TVM's flag: the instruction changes no IR (queries and sampling instructions)."""
        return self.pure or self.sampling

    @property
    def is_postproc(self) -> bool:
        """The kind that marks where postprocessing starts (``enter_postproc``)."""
        return self.method == "enter_postproc"

    @staticmethod
    def get(name: str) -> InstructionKind:
        """The registered kind named ``name``: TVM's (``"GetSBlock"``, or older TVM's
        ``"GetBlock"``) or the method's (``"get_block"``).

        Example::

            >>> InstructionKind.get("Split") is InstructionKind.get("split")
            True
        """
        kind = lookup(name)
        if kind is None:
            raise ValueError(f"unknown instruction kind {name!r}")
        return kind


# Every instruction kind, by the name traces use (the Schedule method's name).
KINDS: dict[str, InstructionKind] = {
    k: k
    for k in (
        InstructionKind("get_block", (), ("name", "func_name"), "one", pure=True),
        InstructionKind("get_loops", ("block",), (), "many", pure=True),
        InstructionKind(
            "get_child_blocks",
            ("block_or_loop",),
            (),
            "many",
            pure=True,
            printed=("*block_or_loop",),
        ),
        InstructionKind(
            "split",
            ("loop", "factors"),
            ("preserve_unit_iters", "disable_predication"),
            "many",
            fills=(("disable_predication", False),),
        ),
        InstructionKind("fuse", ("*loops",), ("preserve_unit_iters",), "one"),
        InstructionKind("reorder", ("*ordered_loops",)),
        InstructionKind("parallel", ("loop",)),
        InstructionKind("vectorize", ("loop",)),
        InstructionKind("unroll", ("loop",)),
        InstructionKind("bind", ("loop",), ("thread_axis",)),
        InstructionKind(
            "annotate",
            ("block_or_loop", "ann_val"),
            ("ann_key",),
            printed=("block_or_loop", "ann_key", "ann_val"),
        ),
        InstructionKind("unannotate", ("block_or_loop",), ("ann_key",)),
        InstructionKind("add_unit_loop", ("block_or_loop",), (), "one"),
        InstructionKind("get_producers", ("block",), (), "many", pure=True),
        InstructionKind("get_consumers", ("block",), (), "many", pure=True),
        InstructionKind("get_output_blocks", ("scope_block",), (), "many", pure=True),
        InstructionKind(
            "cache_read",
            ("block", "consumer_blocks"),
            ("read_buffer_index", "storage_scope"),
            "one",
            defaults=(("consumer_blocks", None),),
            printed=("block", "read_buffer_index", "storage_scope", "consumer_blocks"),
        ),
        InstructionKind("cache_write", ("block",), ("write_buffer_index", "storage_scope"), "one"),
        InstructionKind("set_scope", ("block",), ("buffer_index", "storage_scope")),
        InstructionKind("storage_align", ("block",), ("buffer_index", "axis", "factor", "offset")),
        InstructionKind(
            "transform_layout",
            ("block",),
            ("buffer", "index_map", "pad_value", "assume_injective_transform"),
        ),
        InstructionKind(
            "compute_at",
            ("block", "loop"),
            ("preserve_unit_loops", "index"),
            defaults=(("index", None),),
        ),
        InstructionKind(
            "reverse_compute_at",
            ("block", "loop"),
            ("preserve_unit_loops", "index"),
            defaults=(("index", None),),
        ),
        InstructionKind("compute_inline", ("block",)),
        InstructionKind("reverse_compute_inline", ("block",)),
        InstructionKind("decompose_reduction", ("block", "loop"), (), "one"),
        InstructionKind("rfactor", ("loop",), ("factor_axis",), "one"),
        InstructionKind("blockize", ("target",), ("preserve_unit_iters",), "one"),
        InstructionKind("tensorize", ("block_or_loop",), ("tensor_intrin", "preserve_unit_iters")),
        InstructionKind(
            "sample_perfect_tile", ("loop",), ("n", "max_innermost_factor"), "many", sampling=True
        ),
        InstructionKind("sample_categorical", (), ("candidates", "probs"), "one", sampling=True),
        InstructionKind("sample_compute_location", ("block",), (), "one", sampling=True),
        InstructionKind("enter_postproc", ()),
    )
}


def register_kinds(*kinds: InstructionKind) -> None:
    """Add the instruction kinds of primitives defined outside this table (their method
    modules call this at import); a name registered twice is an error. TVM's name of each
    is derived (``"merge"`` -> ``"Merge"``) unless the kind gives ``tvm=``.

    Example::

        register_kinds(InstructionKind("merge", ("*loops",), (), "one"))
    """
    for kind in kinds:
        if kind.method in KINDS:
            raise ValueError(f"instruction kind {kind.method!r} is already registered")
        KINDS[kind.method] = kind


def lookup(name: str) -> InstructionKind | None:
    """The registered kind with the method name or TVM name ``name``, or ``None``."""
    kind = KINDS.get(name)
    if kind is not None:
        return kind
    if name in _ALIASES:
        return KINDS.get(_ALIASES[name])
    return next((k for k in KINDS.values() if k.name == name), None)


def _tvm_inputs(kind: InstructionKind, inputs: tuple[object, ...]) -> tuple[object, ...]:
    # TVM lists the loops of fuse/reorder and the factors of split (loop_partition) flat,
    # after the loop; it calls an empty consumer list "every consumer", and gives
    # cache_write a consumer list we do not take.
    spec = kind.inputs
    if len(spec) == 1 and spec[0].startswith("*"):
        if len(inputs) == 1 and isinstance(inputs[0], list | tuple):
            return (tuple(inputs[0]),)
        return (tuple(inputs),)
    flat = spec[-1:] == ("factors",) and len(spec) == 2
    if flat and not (len(inputs) == 2 and isinstance(inputs[1], list | tuple)):
        return (inputs[0], tuple(inputs[1:])) if inputs else inputs
    if kind.method == "cache_read" and len(inputs) == 2 and inputs[1] in ([], ()):
        return (inputs[0], None)
    if kind.method == "cache_write" and len(inputs) == 2:
        if inputs[1] not in (None, [], ()):
            raise ValueError("instruction 'cache_write': consumer_blocks are not supported")
        return inputs[:1]
    return inputs


def _flag(value: object) -> object:
    # TVM builds flags as boolean immediates (``T.bool(True)``); the methods take bools.
    if isinstance(value, IntImm) and str(value.dtype) == "bool":
        return bool(value.value)
    return value


def _fill_attrs(kind: InstructionKind, attrs: tuple[object, ...]) -> tuple[object, ...]:
    if len(attrs) >= len(kind.attrs):
        return attrs
    known = dict(kind.defaults) | dict(kind.fills)
    missing = kind.attrs[len(attrs) :]
    if all(name in known for name in missing):
        return (*attrs, *(known[name] for name in missing))
    return attrs


class Instruction:
    """One primitive call: its kind, inputs (references and values), attributes and outputs.

    ``decision`` is the choice a sampling instruction made; replaying with another decision
    explores the design space (tuning results are traces with decisions).

    As in TVM, an instruction is an object with an identity: two instructions are equal when
    one is the other, or one is the other with another decision (``with_decision``), so an
    instruction keys a trace's ``decisions`` whatever its decision. ``kind`` may be given as
    an ``InstructionKind``, TVM's name or the method's; ``inst.kind`` is always the registered
    ``InstructionKind`` (equal to the method's name: ``inst.kind == "split"``,
    ``inst.kind.name == "Split"``). Inputs may be laid out as TVM lays them out (split's
    factors flat after the loop, fuse's loops flat); they are stored as the ``Schedule``
    method takes them. Instructions are immutable.

    Example::

        >>> b0, l1 = BlockRV(), LoopRV()
        >>> inst = Instruction(InstructionKind.get("GetLoops"), [b0], [], [l1])
        >>> inst.kind.name, inst.kind == "get_loops"
        ('GetLoops', True)
    """

    __slots__ = ("_key", "attrs", "decision", "inputs", "kind", "outputs")

    kind: InstructionKind
    inputs: tuple[object, ...]
    attrs: tuple[object, ...]
    outputs: tuple[Ref | None, ...]
    decision: object
    _key: object

    def __init__(
        self,
        kind: InstructionKind | str,
        inputs: Sequence[object],
        attrs: Sequence[object],
        outputs: Sequence[Ref | None],
        decision: object = None,
    ) -> None:
        spec = lookup(str(kind))
        if spec is None:
            raise ValueError(f"unknown instruction kind {str(kind)!r}")
        given_inputs = _tvm_inputs(spec, tuple(inputs))
        given_attrs = _fill_attrs(spec, tuple(_flag(a) for a in attrs))
        if len(given_inputs) != len(spec.inputs) or len(given_attrs) != len(spec.attrs):
            raise ValueError(
                f"instruction {spec.method!r} takes inputs {spec.inputs} and attrs {spec.attrs}"
            )
        for field, value in (
            ("kind", spec),
            ("inputs", given_inputs),
            ("attrs", given_attrs),
            ("outputs", tuple(outputs)),
            ("decision", decision),
            ("_key", object()),
        ):
            object.__setattr__(self, field, value)

    def __setattr__(self, key: str, value: object) -> None:
        raise dataclasses.FrozenInstanceError(f"cannot assign to field {key!r}")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Instruction) and other._key is self._key

    def __hash__(self) -> int:
        return id(self._key)

    def __reduce__(self) -> tuple[Any, tuple[object, ...]]:
        return (
            _rebuild,
            (self.kind.method, self.inputs, self.attrs, self.outputs, self.decision, self._key),
        )

    def __str__(self) -> str:
        """The call as TVM prints an instruction: every reference is ``_``, no decision
        (``_ = sch.get_sblock(name="C", func_name="main")``)."""
        from tilewright.schedule.trace import python_call  # the printer imports this module

        return python_call(self)

    def __repr__(self) -> str:
        return (
            f"Instruction({self.kind.name}, inputs={list(self.inputs)!r}, "
            f"attrs={list(self.attrs)!r}, outputs={list(self.outputs)!r}"
            + ("" if self.decision is None else f", decision={self.decision!r}")
            + ")"
        )

    @property
    def spec(self) -> InstructionKind:
        """The kind (kept for code written before ``kind`` was the kind object)."""
        return self.kind

    def same_as(self, other: object) -> bool:
        """TVM's identity test: this instruction, whatever its decision."""
        return self == other

    def with_decision(self, decision: object) -> Instruction:
        """This instruction (equal to it) with ``decision``."""
        copy = _rebuild(
            self.kind.method, self.inputs, self.attrs, self.outputs, decision, self._key
        )
        return copy


def _rebuild(
    kind: str,
    inputs: tuple[object, ...],
    attrs: tuple[object, ...],
    outputs: tuple[Ref | None, ...],
    decision: object,
    key: object,
) -> Instruction:
    inst = Instruction(kind, inputs, attrs, outputs, decision)
    object.__setattr__(inst, "_key", key)
    return inst
