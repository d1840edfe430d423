"""``TuneContext``: one tuning task, a module and a target, and the space generator that
makes its design space."""

from __future__ import annotations

import os
import random
from typing import TYPE_CHECKING

from tilewright.ir import IRModule, PrimFunc
from tilewright.target import Target

if TYPE_CHECKING:
    from tilewright.meta_schedule.space_generator import SpaceGenerator
    from tilewright.schedule import Schedule


class TuneContext:
    """A tuning task: the module, the target, the space generator and a seeded generator.

    Args:
        mod: the workload (a ``PrimFunc`` is wrapped as ``{"main": func}``).
        target: a ``Target`` or its string.
        space_generator: ``"post-order-apply"`` (the default rules, postprocessors and
            mutators of the target), a ``SpaceGenerator``, or a function ``fn(sch)`` (wrapped
            in ``ScheduleFn``).
        task_name: the task's name in logs.
        rand_state: seed of the context's generator (-1: a random seed).
        num_threads: cores for parallel work (``"physical"``: all of this machine's).

    Example::

        ctx = ms.TuneContext(mod=MyModule, target="llvm --num-cores=2",
                             space_generator="post-order-apply", task_name="main")
        spaces = ctx.generate_design_space()
        spaces[0].trace.show()
    """

    def __init__(
        self,
        mod: IRModule | PrimFunc | None = None,
        *,
        target: Target | str | None = None,
        space_generator: SpaceGenerator | str | object | None = None,
        search_strategy: object = None,
        task_name: str = "main",
        rand_state: int = -1,
        num_threads: int | str = "physical",
        logger: object = None,
    ) -> None:
        from tilewright.meta_schedule.space_generator import ScheduleFn, SpaceGenerator, create

        if isinstance(mod, PrimFunc):
            mod = IRModule({"main": mod})
        self.mod = mod
        self.target = Target(target) if isinstance(target, str) else target
        if space_generator is None or isinstance(space_generator, str):
            space_generator = create(space_generator or "post-order-apply")
        elif not isinstance(space_generator, SpaceGenerator):
            if not callable(space_generator):
                raise TypeError(
                    f"space_generator must be a SpaceGenerator, a name or a function, not "
                    f"{type(space_generator).__name__}"
                )
            space_generator = ScheduleFn(space_generator)
        self.space_generator: SpaceGenerator = space_generator
        self.search_strategy = search_strategy
        self.task_name = task_name
        self.rand_state = rand_state if rand_state >= 0 else random.randrange(1, 2**31 - 1)
        self.rng = random.Random(self.rand_state)
        if num_threads == "physical" or num_threads == "logical":
            num_threads = os.cpu_count() or 1
        self.num_threads = int(num_threads)
        self.logger = logger
        if self.mod is not None and self.target is not None:
            self.space_generator._initialize_with_tune_context(self)

    def __getstate__(self) -> dict[str, object]:
        # Worker processes get the task, not the session: the search strategy (with its
        # workers and database) and the logger stay in this process.
        state = dict(self.__dict__)
        state["search_strategy"] = None
        state["logger"] = None
        return state

    def fork_seed(self) -> int:
        return self.rng.randrange(1, 2**31 - 1)

    def generate_design_space(self) -> list[Schedule]:
        """The design space: schedules whose traces sample their decisions."""
        if self.mod is None or self.target is None:
            raise ValueError("TuneContext needs a module and a target to generate a design space")
        return self.space_generator.generate_design_space(self.mod)

    def clone(self) -> TuneContext:
        other = TuneContext.__new__(TuneContext)
        other.__dict__.update(self.__dict__)
        other.rng = random.Random(self.fork_seed())
        return other
