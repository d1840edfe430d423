"""``MutateParallel``: a trace in, the same trace with another ``meta_schedule.parallel``
annotation value out, one with which ``RewriteParallelVectorizeUnroll`` makes different
parallel loops (fuses a different number of outer loops into them)."""

from __future__ import annotations

import random

from tilewright.ir import Block, BlockRealize, For, ForKind, IntImm, IRModule, Stmt
from tilewright.meta_schedule.analysis import PARALLEL, annotation
from tilewright.meta_schedule.mutator.replay import ReplayingMutator, design_space, generator
from tilewright.meta_schedule.postproc.loops import is_single_stmt, loop_iter_type
from tilewright.meta_schedule.postproc.rewrite_parallel_vectorize_unroll import (
    RewriteParallelVectorizeUnroll,
)
from tilewright.schedule import Instruction, Schedule, Trace
from tilewright.schedule.tree import children, walk

# Stands for the annotation value while the trace is replayed to find the annotated block.
_MARK = "meta_schedule.mutate_parallel.this_annotation"

# What the postprocessor made: for each block, the extents of the parallel loops above it.
Outcome = tuple[tuple[str, tuple[int, ...]], ...]


class MutateParallel(ReplayingMutator):
    """Change the value ``n`` of an ``annotate(block, "meta_schedule.parallel", n)`` of the
    trace (the rule ``ParallelizeVectorizeUnroll`` writes ``max_jobs_per_core * num_cores``
    there) so that the parallel loops change.

    ``RewriteParallelVectorizeUnroll`` fuses, above each block, the outer spatial loops up to
    the first whose extent takes their product past ``n``. As TVM does, the trace is
    replayed, and the values worth trying are the products of the leading fusible loop
    extents of each block (and 1), up to ``max_jobs_per_core * num_cores``. TVM groups them
    by a model of how many loops the postprocessor fuses; here the postprocessor itself runs
    on a copy of the replayed schedule for each value, so that values are grouped by the
    parallel loops they really make (the vectorized loops can take some of the fusible
    ones). The current outcome is dropped and one of the others drawn uniformly; its
    largest value is written.

    Args:
        max_jobs_per_core: jobs per core; the largest value is this times the target's
            ``num_cores`` (0 or less: the mutator changes nothing).

    Needs the task's module and target (a ``TuneContext``). The result ends before
    ``enter_postproc``; an annotation value never makes the replay refuse.

    Example::

        >>> mutator = MutateParallel(max_jobs_per_core=16)
        >>> mutator._initialize_with_tune_context(ms.TuneContext(mod, target="llvm -num-cores=4"))
        >>> mutator.apply(trace, random.Random(0)).insts[k].inputs[1]   # was 64
        2
    """

    def __init__(self, max_jobs_per_core: int = 16) -> None:
        super().__init__()
        self.max_jobs_per_core = int(max_jobs_per_core)

    def max_parallel_extent(self) -> int:
        """``max_jobs_per_core`` times the target's ``num_cores``."""
        if self._target is None:
            raise ValueError(
                "MutateParallel reads num_cores from the target: initialise it with a "
                "TuneContext that has one (_initialize_with_tune_context)"
            )
        return self.max_jobs_per_core * self._target.num_cores

    def apply(self, trace: Trace, rng: random.Random | None = None) -> Trace | None:
        rng = generator(rng)
        space = design_space(trace)
        annotations = [
            k
            for k, inst in enumerate(space.insts)
            if inst.kind == "annotate" and inst.attrs[0] == PARALLEL and _int(inst) is not None
        ]
        if not annotations or self.max_jobs_per_core <= 0:
            return None
        limit = self.max_parallel_extent()
        rng.shuffle(annotations)
        for k in annotations:
            current = _int(space.insts[k])
            assert current is not None
            outcomes = parallel_outcomes(space, k, self.module(), limit)
            others: dict[Outcome, int] = {}
            for value, outcome in sorted(outcomes.items()):
                if outcome != outcomes.get(current):
                    others[outcome] = value  # the largest value of each outcome
            if others:
                value = others[rng.choice(sorted(others))]
                insts = list(space.insts)
                insts[k] = _with_value(space.insts[k], value)
                return Trace(insts)
        return None

    def __repr__(self) -> str:
        return f"MutateParallel(max_jobs_per_core={self.max_jobs_per_core})"


def parallel_outcomes(trace: Trace, index: int, mod: IRModule, limit: int) -> dict[int, Outcome]:
    """The parallel loops ``RewriteParallelVectorizeUnroll`` makes when instruction
    ``index`` of ``trace`` (an ``annotate`` with key ``meta_schedule.parallel``) sets each
    value worth trying (and the value it sets now), up to ``limit``; values the
    postprocessor rejects are left out.

    Example::

        >>> parallel_outcomes(trace, k, mod, 64)   # matmul, i0 j0 i1 j1 of extents 2 1 2 4
        {1: (('root', ()), ('C', (2,))), 2: (('root', ()), ('C', (4,))),
         4: (('root', ()), ('C', (16,))), 16: ..., 64: (('root', ()), ('C', (16,)))}
    """
    insts = list(trace.insts)
    if insts[index].kind != "annotate" or insts[index].attrs[0] != PARALLEL:
        raise ValueError(f"instruction {index} is not an annotate with key {PARALLEL}")
    current = _int(insts[index])
    insts[index] = _with_value(insts[index], _MARK)
    sch = Schedule(mod, seed=0)
    Trace(insts).apply_to_schedule(sch)
    func_name, scope = _marked_block(sch)
    values = set(candidate_values(fusible_loops(scope), limit))
    if current is not None:
        values.add(current)
    outcomes: dict[int, Outcome] = {}
    for value in sorted(values):
        trial = sch.copy()
        trial.annotate(trial.get_block(scope.name, func_name), PARALLEL, value)
        if RewriteParallelVectorizeUnroll().apply(trial):
            outcomes[value] = _parallel_loops(trial.mod)
    return outcomes


def fusible_loops(scope: Block) -> list[tuple[int, ...]]:
    """For each block directly in ``scope``, the extents of the leading loops above it that
    the parallel postprocessor may fuse, outermost first: spatial, constant, serial and
    unannotated, and none after a loop whose body is several statements.

    Example::

        >>> fusible_loops(root)   # C[i, j] under loops i, j, k of extent 16
        [(16, 16)]
    """
    found = []
    for loops in _loop_nests(scope):
        extents: list[int] = []
        for loop in loops:
            if (
                not isinstance(loop.extent, IntImm)
                or loop_iter_type(loop) != "S"
                or loop.kind is not ForKind.SERIAL
                or loop.annotations
            ):
                break
            extents.append(loop.extent.value)
            if not is_single_stmt(loop.body):
                break
        if extents:
            found.append(tuple(extents))
    return found


def candidate_values(loops: list[tuple[int, ...]], limit: int) -> list[int]:
    """``1`` and every product of leading loop extents, up to ``limit``, ascending: a value
    between two of them fuses what the smaller one fuses.

    Example::

        >>> candidate_values([(4, 8, 16), (2, 2)], 64)
        [1, 2, 4, 32]
    """
    values = {1}
    for nest in loops:
        product = 1
        for extent in nest:
            product *= extent
            if product > limit:
                break
            values.add(product)
    return sorted(values)


def _loop_nests(scope: Block) -> list[list[For]]:
    """The loops from ``scope`` down to each block directly in it, outermost first."""
    nests: list[list[For]] = []

    def visit(stmt: Stmt, loops: list[For]) -> None:
        if isinstance(stmt, BlockRealize):
            nests.append(loops)
        elif isinstance(stmt, For):
            visit(stmt.body, [*loops, stmt])
        else:
            for child in children(stmt):
                visit(child, loops)

    for child in children(scope):
        visit(child, [])
    return nests


def _parallel_loops(mod: IRModule) -> Outcome:
    found = []
    for _, func in mod.items():
        for path in walk(func.body):
            node = path[-1]
            if isinstance(node, Block):
                extents = tuple(
                    s.extent.value
                    for s in path
                    if isinstance(s, For)
                    and s.kind is ForKind.PARALLEL
                    and isinstance(s.extent, IntImm)
                )
                found.append((node.name, extents))
    return tuple(found)


def _marked_block(sch: Schedule) -> tuple[str, Block]:
    for func_name, func in sch.mod.items():
        for path in walk(func.body):
            node = path[-1]
            if isinstance(node, Block) and annotation(node, PARALLEL) == _MARK:
                return func_name, node
    raise AssertionError("the replayed trace lost its parallel annotation")


def _int(inst: Instruction) -> int | None:
    value = inst.inputs[1]
    if isinstance(value, IntImm):
        return value.value
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _with_value(inst: Instruction, value: object) -> Instruction:
    return Instruction(inst.kind, (inst.inputs[0], value), inst.attrs, inst.outputs)
