"""Space generators: how a module becomes a design space (a list of schedules whose traces
sample their decisions).

``PostOrderApply`` applies schedule rules to every block, consumers before producers,
forking where a rule returns several schedules; ``ScheduleFn`` runs a user's stochastic
schedule function; ``SpaceGeneratorUnion`` concatenates the spaces of several generators.
Each generator also carries the postprocessors and mutators that go with its space.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from tilewright.ir import Block, IRModule
from tilewright.meta_schedule.analysis import CUSTOM_RULE, annotation, block_of
from tilewright.meta_schedule.mutator.mutator import Mutator
from tilewright.meta_schedule.postproc.postproc import Postproc
from tilewright.meta_schedule.schedule_rule.rule import ApplyCustomRule, ScheduleRule
from tilewright.schedule import BlockRV, Schedule
from tilewright.schedule.tree import walk

if TYPE_CHECKING:
    from tilewright.meta_schedule.tune_context import TuneContext

FROM_TARGET = "from-target"


class SpaceGenerator:
    """Base of space generators; holds the rules, postprocessors and mutator probabilities.

    Args:
        sch_rules: rules, or ``"from-target"`` (the target's defaults).
        postprocs: postprocessors, or ``"from-target"``.
        mutator_probs: mutator → probability, or ``"from-target"``.
    """

    def __init__(
        self,
        sch_rules: Sequence[ScheduleRule] | str = FROM_TARGET,
        postprocs: Sequence[Postproc] | str = FROM_TARGET,
        mutator_probs: dict[Mutator, float] | str = FROM_TARGET,
    ) -> None:
        self._given = (sch_rules, postprocs, mutator_probs)
        self.sch_rules: list[ScheduleRule] = []
        self.postprocs: list[Postproc] = []
        self.mutator_probs: dict[Mutator, float] = {}
        self.seed = 0
        self._context: TuneContext | None = None

    def _initialize_with_tune_context(self, context: TuneContext) -> None:
        assert context.target is not None
        sch_rules, postprocs, mutator_probs = self._given
        if any(isinstance(given, str) for given in self._given):
            from tilewright.meta_schedule import defaults
        self.sch_rules = list(
            defaults.schedule_rules(context.target) if isinstance(sch_rules, str) else sch_rules
        )
        self.postprocs = list(
            defaults.postprocs(context.target) if isinstance(postprocs, str) else postprocs
        )
        self.mutator_probs = dict(
            defaults.mutator_probs(context.target)
            if isinstance(mutator_probs, str)
            else mutator_probs
        )
        for rule in self.sch_rules:
            rule._initialize_with_tune_context(context)
        for postproc in self.postprocs:
            postproc._initialize_with_tune_context(context)
        for mutator in self.mutator_probs:
            mutator._initialize_with_tune_context(context)
        self.seed = context.fork_seed()
        self._context = context

    def _fork_seed(self) -> int:
        if self._context is None:
            raise ValueError("initialise the space generator through a TuneContext first")
        return self._context.fork_seed()

    def generate_design_space(self, mod: IRModule) -> list[Schedule]:
        raise NotImplementedError

    def clone(self) -> SpaceGenerator:
        import copy

        return copy.deepcopy(self)


class PostOrderApply(SpaceGenerator):
    """Apply every rule, in order, to every block of the module's functions, the blocks
    visited consumers first (reverse program order, the root last).

    A block annotated ``schedule_rule`` is left to ``ApplyCustomRule`` (``"None"``: to no
    rule). ``f_block_filter(block) -> bool`` restricts the blocks visited.

    Example::

        space = ms.space_generator.PostOrderApply(
            sch_rules=[ms.schedule_rule.MultiLevelTiling(structure="SSRSRS")],
            postprocs=[], mutator_probs={})
    """

    def __init__(
        self,
        f_block_filter: Callable[[Block], bool] | None = None,
        sch_rules: Sequence[ScheduleRule] | str = FROM_TARGET,
        postprocs: Sequence[Postproc] | str = FROM_TARGET,
        mutator_probs: dict[Mutator, float] | str = FROM_TARGET,
    ) -> None:
        super().__init__(sch_rules, postprocs, mutator_probs)
        self.f_block_filter = f_block_filter

    def generate_design_space(self, mod: IRModule) -> list[Schedule]:
        result = [Schedule(mod, seed=self._fork_seed())]
        for func_name in mod:
            names = self._block_names(mod, func_name)
            for rule in self.sch_rules:
                result = [s for sch in result for s in self._apply(rule, sch, func_name, names)]
        return result

    def _block_names(self, mod: IRModule, func_name: str) -> list[str]:
        names = []
        for path in walk(mod[func_name].body):
            node = path[-1]
            if not isinstance(node, Block):
                continue
            if self.f_block_filter is None or self.f_block_filter(node):
                names.append(node.name)
        return list(reversed(names))

    def _apply(
        self, rule: ScheduleRule, sch: Schedule, func_name: str, names: list[str]
    ) -> list[Schedule]:
        current = [sch]
        for name in names:
            following: list[Schedule] = []
            for s in current:
                s.work_on(func_name)
                if name not in s.state.index(func_name).blocks:
                    following.append(s)  # inlined or otherwise gone
                    continue
                block = s.get_block(name, func_name)
                custom = annotation(block_of(s, block), CUSTOM_RULE)
                if custom is not None and not isinstance(rule, ApplyCustomRule):
                    following.append(s)
                    continue
                following.extend(rule.apply(s, block))
            current = following
        return current


class ScheduleFn(SpaceGenerator):
    """A design space written as a function: ``fn(sch)`` samples and schedules in place
    (returning None), or returns a schedule or a list of them.

    Example::

        def stochastic_schedule_mm(sch):
            block_C = sch.get_block("C", "main")
            i, j, k = sch.get_loops(block=block_C)
            j_factors = sch.sample_perfect_tile(loop=j, n=2)
            j_0, j_1 = sch.split(loop=j, factors=j_factors)
            sch.reorder(i, j_0, k, j_1)
            sch.decompose_reduction(block_C, k)
            return sch

        ctx = ms.TuneContext(mod=MyModule, target="llvm",
                             space_generator=ms.space_generator.ScheduleFn(stochastic_schedule_mm))
    """

    def __init__(
        self,
        sch_fn: Callable[[Schedule], Schedule | list[Schedule] | None],
        sch_rules: Sequence[ScheduleRule] | str = FROM_TARGET,
        postprocs: Sequence[Postproc] | str = FROM_TARGET,
        mutator_probs: dict[Mutator, float] | str = FROM_TARGET,
    ) -> None:
        super().__init__(sch_rules, postprocs, mutator_probs)
        self.sch_fn = sch_fn

    def generate_design_space(self, mod: IRModule) -> list[Schedule]:
        sch = Schedule(mod, seed=self._fork_seed())
        result = self.sch_fn(sch)
        if result is None:
            return [sch]
        if isinstance(result, Schedule):
            return [result]
        if isinstance(result, list | tuple) and all(isinstance(s, Schedule) for s in result):
            return list(result)
        raise TypeError(
            f"schedule function {getattr(self.sch_fn, '__name__', self.sch_fn)!r} returned "
            f"{type(result).__name__}; expected None, a Schedule or a list of Schedules"
        )


class SpaceGeneratorUnion(SpaceGenerator):
    """The design spaces of several generators, concatenated.

    Example::

        union = ms.space_generator.SpaceGeneratorUnion(
            [ms.space_generator.ScheduleFn(my_fn), ms.space_generator.PostOrderApply()])
    """

    def __init__(
        self,
        space_generators: Sequence[SpaceGenerator],
        sch_rules: Sequence[ScheduleRule] | str = FROM_TARGET,
        postprocs: Sequence[Postproc] | str = FROM_TARGET,
        mutator_probs: dict[Mutator, float] | str = FROM_TARGET,
    ) -> None:
        super().__init__(sch_rules, postprocs, mutator_probs)
        self.space_generators = list(space_generators)

    def _initialize_with_tune_context(self, context: TuneContext) -> None:
        super()._initialize_with_tune_context(context)
        for generator in self.space_generators:
            generator._initialize_with_tune_context(context)

    def generate_design_space(self, mod: IRModule) -> list[Schedule]:
        return [s for g in self.space_generators for s in g.generate_design_space(mod)]


# Names a TuneContext accepts for its space generator.
GENERATORS: dict[str, Callable[[], SpaceGenerator]] = {
    "post-order-apply": PostOrderApply,
    "post_order_apply": PostOrderApply,
}


def create(name: str) -> SpaceGenerator:
    if name not in GENERATORS:
        raise ValueError(f"unknown space generator {name!r}; known: {', '.join(GENERATORS)}")
    return GENERATORS[name]()


PySpaceGenerator = SpaceGenerator  # TVM's subclassable spelling

__all__ = [
    "PySpaceGenerator",
    "PostOrderApply",
    "ScheduleFn",
    "SpaceGenerator",
    "SpaceGeneratorUnion",
    "BlockRV",
]
