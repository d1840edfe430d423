"""Trace records: one frozen ``Instruction`` per primitive call, and the literal table that
says how each kind of instruction is printed, serialised and replayed."""

from __future__ import annotations

from dataclasses import dataclass

from tilewright.schedule.reference import BlockRV, ExprRV, LoopRV

Ref = BlockRV | LoopRV | ExprRV


@dataclass(frozen=True)
class InstructionKind:
    """How a primitive appears in a trace.

    Attributes:
        name: the ``Schedule`` method.
        inputs: parameters that may hold references (``*name`` for a variadic one).
        attrs: parameters that hold plain values (strings, flags).
        outputs: ``"one"``, ``"many"`` (a list) or ``"none"``.
        pure: a query that changes nothing (dropped when its outputs are unused).
        sampling: draws a random decision, which the trace records.
        defaults: values of trailing attrs added after traces were first written (a JSON
            trace without them gets these; printed traces leave out attrs at their default).
    """

    name: str
    inputs: tuple[str, ...]
    attrs: tuple[str, ...] = ()
    outputs: str = "none"
    pure: bool = False
    sampling: bool = False
    defaults: tuple[tuple[str, object], ...] = ()


# Every instruction kind, by the name traces use (the Schedule method's name).
KINDS: dict[str, InstructionKind] = {
    k.name: k
    for k in (
        InstructionKind("get_block", (), ("name", "func_name"), "one", pure=True),
        InstructionKind("get_loops", ("block",), (), "many", pure=True),
        InstructionKind("get_child_blocks", ("block_or_loop",), (), "many", pure=True),
        InstructionKind(
            "split",
            ("loop", "factors"),
            ("preserve_unit_iters", "disable_predication"),
            "many",
        ),
        InstructionKind("fuse", ("*loops",), ("preserve_unit_iters",), "one"),
        InstructionKind("reorder", ("*ordered_loops",)),
        InstructionKind("parallel", ("loop",)),
        InstructionKind("vectorize", ("loop",)),
        InstructionKind("unroll", ("loop",)),
        InstructionKind("bind", ("loop",), ("thread_axis",)),
        InstructionKind("annotate", ("block_or_loop", "ann_val"), ("ann_key",)),
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
    modules call this at import); a name registered twice is an error."""
    for kind in kinds:
        if kind.name in KINDS:
            raise ValueError(f"instruction kind {kind.name!r} is already registered")
        KINDS[kind.name] = kind


@dataclass(frozen=True)
class Instruction:
    """One primitive call: its kind, inputs (references and values), attributes and outputs.

    ``decision`` is the choice a sampling instruction made; replaying with another decision
    explores the design space (tuning results are traces with decisions).
    """

    kind: str
    inputs: tuple[object, ...]
    attrs: tuple[object, ...]
    outputs: tuple[Ref, ...]
    decision: object = None

    def __post_init__(self) -> None:
        spec = KINDS.get(self.kind)
        if spec is None:
            raise ValueError(f"unknown instruction kind {self.kind!r}")
        if len(self.inputs) != len(spec.inputs) or len(self.attrs) != len(spec.attrs):
            raise ValueError(
                f"instruction {self.kind!r} takes inputs {spec.inputs} and attrs {spec.attrs}"
            )

    @property
    def spec(self) -> InstructionKind:
        return KINDS[self.kind]
