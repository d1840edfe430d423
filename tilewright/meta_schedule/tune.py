"""``tune_tir`` / ``tune_tasks``: the tuner's entry points (TVM's ``ms.tune_tir`` in its two
forms).

Today's TVM form returns the database::

    database = ms.tune_tir(mod=MyModule, target="llvm --num-cores=2",
                           max_trials_global=200, num_trials_per_iter=32, work_dir="./tune")
    sch = ms.tir_integration.compile_tir(database, MyModule, "llvm --num-cores=2")

The older form, with a ``TuneConfig``, returns the best schedule::

    sch = ms.tune_tir(mod=MyModule, target="cuda", work_dir="./tune", task_name="main",
                      config=ms.TuneConfig(max_trials_global=64, num_trials_per_iter=64))
    sch.mod.show()

A module with several functions becomes one task per function. Each candidate's results
are checked against the unscheduled module's before its time counts.
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
import warnings
from typing import Any

from tilewright.ir import IRModule, PrimFunc
from tilewright.meta_schedule.arg_info import ArgInfo
from tilewright.meta_schedule.builder.builder import Builder
from tilewright.meta_schedule.cost_model.cost_model import CostModel
from tilewright.meta_schedule.database.database import Database
from tilewright.meta_schedule.flop_count import estimate_flops
from tilewright.meta_schedule.measure_callback import MeasureCallback, default_callbacks
from tilewright.meta_schedule.runner.runner import ReferenceCheck, Runner
from tilewright.meta_schedule.search_strategy.search_strategy import SearchStrategy
from tilewright.meta_schedule.task_scheduler import GradientBased, RoundRobin, TaskScheduler
from tilewright.meta_schedule.task_scheduler.task_scheduler import TaskRecord
from tilewright.meta_schedule.task_scheduler.time_budget import TimeBudget
from tilewright.meta_schedule.tune_context import TuneContext
from tilewright.meta_schedule.tune_log import TaskStat, TuneLog
from tilewright.schedule import Schedule
from tilewright.target import Target


@dataclasses.dataclass
class TuneConfig:
    """The older API's tuning budget (``ms.TuneConfig``).

    Args:
        max_trials_global: trials over all tasks.
        num_trials_per_iter: candidates measured per batch.
        max_trials_per_task: trials per task (default: the global budget).
        task_scheduler: ``"gradient"`` or ``"round-robin"``.
        strategy: ``"evolutionary"``, ``"replay-trace"`` or ``"replay-func"``.
        population_size: the evolutionary search's population (default 128).
    """

    max_trials_global: int
    num_trials_per_iter: int = 64
    max_trials_per_task: int | None = None
    task_scheduler: str = "gradient"
    strategy: str = "evolutionary"
    population_size: int | None = None
    strategy_config: dict[str, Any] = dataclasses.field(default_factory=dict)


def _device_type(target: Target) -> str:
    """The device the target's kernels run on (the backend table's ``device``)."""
    from tilewright.backend import backend_for

    return backend_for(target).device


def _make_database(database: Database | str, work_dir: str | None) -> Database:
    from tilewright.meta_schedule import database as db

    if isinstance(database, Database):
        return database
    if database == "json":
        if work_dir is None:
            raise ValueError("tune_tir: the JSON database needs a work_dir")
        return db.JSONDatabase(work_dir=work_dir)
    if database == "memory":
        return db.MemoryDatabase()
    raise ValueError(f"tune_tir: unknown database {database!r} (json, memory)")


def _make_cost_model(cost_model: CostModel | str, seed: int | None) -> CostModel:
    from tilewright.meta_schedule import cost_model as cm

    if isinstance(cost_model, CostModel):
        return cost_model
    if cost_model == "xgb":
        try:
            return cm.XGBModel()
        except ImportError as err:
            warnings.warn(f"{err}; tuning with RandomModel instead", stacklevel=3)
            return cm.RandomModel(seed=seed)
    if cost_model == "random":
        return cm.RandomModel(seed=seed)
    raise ValueError(f"tune_tir: unknown cost model {cost_model!r} (xgb, random)")


def _make_strategy(strategy: SearchStrategy | str, population: int | None, extra: dict) -> Any:
    from tilewright.meta_schedule import search_strategy as ss

    if isinstance(strategy, SearchStrategy):
        return strategy
    if strategy == "evolutionary":
        # TVM's population is 512; our replays cost more, and 128 keeps a round of the
        # search near the time its batch takes to build and run.
        return ss.EvolutionarySearch(population_size=population or 128, **extra)
    if strategy == "replay-trace":
        return ss.ReplayTrace(**extra)
    if strategy == "replay-func":
        return ss.ReplayFunc(**extra)
    raise ValueError(
        f"tune_tir: unknown strategy {strategy!r} (evolutionary, replay-trace, replay-func)"
    )


def _split_tasks(mod: IRModule | PrimFunc, task_name: str) -> list[tuple[str, IRModule]]:
    if isinstance(mod, PrimFunc):
        mod = IRModule({"main": mod})
    if not isinstance(mod, IRModule):
        raise TypeError(f"tune_tir: mod must be an IRModule or a PrimFunc, not {type(mod)}")
    items = list(mod.items())
    if not items:
        raise ValueError("tune_tir: the module has no function")
    if len(items) == 1:
        return [(task_name, mod)]
    return [(f"{task_name}:{name}", IRModule({name: func})) for name, func in items]


def tune_tasks(
    *,
    tasks: list[TuneContext],
    task_weights: list[float] | None = None,
    work_dir: str | None,
    max_trials_global: int,
    max_trials_per_task: int | None = None,
    num_trials_per_iter: int = 64,
    builder: Builder | str = "local",
    runner: Runner | str = "local",
    database: Database | str = "json",
    cost_model: CostModel | str = "xgb",
    measure_callbacks: list[MeasureCallback] | str = "default",
    task_scheduler: TaskScheduler | str = "gradient",
    check_results: bool = True,
    seed: int = 0,
    progress: bool = True,
    max_seconds: float | TimeBudget | None = None,
) -> Database:
    """Tune several tasks into one database (TVM's ``ms.tune_tasks``); see ``tune_tir``."""
    from tilewright.meta_schedule.builder import LocalBuilder
    from tilewright.meta_schedule.runner import LocalRunner
    from tilewright.meta_schedule.runner.reference import reference_path

    # The clock starts here: the references and the pools' start count.
    budget = max_seconds if isinstance(max_seconds, TimeBudget) else TimeBudget(max_seconds)
    if max_trials_global <= 0 or num_trials_per_iter <= 0:
        raise ValueError("tune: max_trials_global and num_trials_per_iter must be positive")
    weights = task_weights or [1.0] * len(tasks)
    if len(weights) != len(tasks):
        raise ValueError(f"tune: {len(tasks)} tasks but {len(weights)} weights")
    if work_dir is not None:
        os.makedirs(work_dir, exist_ok=True)
    db = _make_database(database, work_dir)
    model = _make_cost_model(cost_model, seed)
    the_builder = LocalBuilder() if builder == "local" else builder
    the_runner = LocalRunner() if runner == "local" else runner
    if isinstance(the_builder, str) or isinstance(the_runner, str):
        raise ValueError(f"tune: unknown builder {builder!r} or runner {runner!r} (local)")
    callbacks = default_callbacks() if measure_callbacks == "default" else measure_callbacks
    if isinstance(callbacks, str):
        raise ValueError(f"tune: unknown measure_callbacks {measure_callbacks!r}")
    scheduler: TaskScheduler
    if isinstance(task_scheduler, TaskScheduler):
        scheduler = task_scheduler
    elif task_scheduler in ("gradient", "gradient-based"):
        scheduler = GradientBased()
    elif task_scheduler in ("round-robin", "round_robin"):
        scheduler = RoundRobin()
    else:
        raise ValueError(f"tune: unknown task scheduler {task_scheduler!r}")
    cache_dir = os.path.join(work_dir, "reference") if work_dir else tempfile.mkdtemp()

    records: list[TaskRecord] = []
    stats: list[TaskStat] = []
    for context, weight in zip(tasks, weights):
        if context.mod is None or context.target is None:
            raise ValueError(f"task {context.task_name!r} has no module or no target")
        args_info = tuple(ArgInfo.from_entry_func(context.mod))
        strategy = context.search_strategy
        if not isinstance(strategy, SearchStrategy):
            raise TypeError(f"task {context.task_name!r}: no search strategy")
        strategy._initialize_with_tune_context(context)
        check = None
        if check_results:
            path = reference_path(context.mod, list(args_info), seed, cache_dir)
            check = ReferenceCheck(path, seed)
        flops = estimate_flops(context.mod)
        workload = db.commit_workload(context.mod)
        records.append(
            TaskRecord(
                context,
                strategy,
                workload,
                args_info,
                _device_type(context.target),
                weight,
                check,
                flops,
            )
        )
        stats.append(TaskStat(context.task_name, flops, weight))
    total = max_trials_global
    if max_trials_per_task:
        total = min(total, max_trials_per_task * len(tasks))
    log = TuneLog(work_dir, total, stats, progress=progress)
    scheduler._builder = the_builder
    scheduler._runner = the_runner
    try:
        scheduler.tune(
            records,
            max_trials_global=max_trials_global,
            max_trials_per_task=max_trials_per_task,
            num_trials_per_iter=num_trials_per_iter,
            builder=the_builder,
            runner=the_runner,
            measure_callbacks=callbacks,
            database=db,
            cost_model=model,
            log=log,
            max_seconds=budget,
        )
    finally:
        log.close()
    return db


def tune_tir(
    mod: IRModule | PrimFunc,
    target: Target | str,
    work_dir: str | None = None,
    max_trials_global: int | None = None,
    *,
    config: TuneConfig | None = None,
    num_trials_per_iter: int = 64,
    max_trials_per_task: int | None = None,
    builder: Builder | str = "local",
    runner: Runner | str = "local",
    database: Database | str = "json",
    cost_model: CostModel | str = "xgb",
    measure_callbacks: list[MeasureCallback] | str = "default",
    task_scheduler: TaskScheduler | str = "gradient",
    space: object = "post-order-apply",
    strategy: SearchStrategy | str = "evolutionary",
    task_name: str = "main",
    seed: int | None = None,
    num_tuning_cores: int | str = "physical",
    check_results: bool = True,
    progress: bool = True,
    max_seconds: float | TimeBudget | None = None,
) -> Any:
    """Tune a TIR module (see the module docstring for both forms).

    Args:
        mod: the workload (``IRModule`` or ``PrimFunc``); each function becomes a task.
        target: where it runs (``"llvm --num-cores=2"``, ``"cuda"``, ``"nvidia/h200"``).
        work_dir: database, logs and tuning curve (a rerun resumes from its database).
        max_trials_global: trials over all tasks (or ``config.max_trials_global``).
        config: the older API's ``TuneConfig``; when given, the best ``Schedule`` is returned
            instead of the database.
        space: ``"post-order-apply"``, a ``SpaceGenerator`` or a function ``fn(sch)``.
        strategy: ``"evolutionary"``, ``"replay-trace"``, ``"replay-func"`` or a strategy.
        check_results: compare each candidate with the unscheduled module before timing.
        max_seconds: a wall-time budget for the whole call (beyond TVM): a round takes only
            the candidates its estimated cost lets finish in time, runs stop at the deadline,
            and ``work_dir/logs/tune.log`` says how the session ended against it. A
            ``TimeBudget`` (its own clock) may stand in for the seconds.

    Returns:
        The database, or with ``config`` the best schedule (None when no candidate ran).
    """
    target = Target(target) if isinstance(target, str) else target
    population = None
    strategy_config: dict[str, Any] = {}
    if config is not None:
        max_trials_global = config.max_trials_global
        num_trials_per_iter = config.num_trials_per_iter
        max_trials_per_task = config.max_trials_per_task or max_trials_per_task
        task_scheduler = config.task_scheduler
        strategy = config.strategy if strategy == "evolutionary" else strategy
        population = config.population_size
        strategy_config = config.strategy_config
    if max_trials_global is None:
        raise ValueError("tune_tir: give max_trials_global (or a TuneConfig)")
    if database == "json" and work_dir is None:
        work_dir = tempfile.mkdtemp(prefix="tilewright-tune-")
    rand = seed if seed is not None else 0
    contexts: list[TuneContext] = []
    for name, task_mod in _split_tasks(mod, task_name):
        contexts.append(
            TuneContext(
                task_mod,
                target=target,
                space_generator=space,
                search_strategy=_make_strategy(strategy, population, dict(strategy_config)),
                task_name=name,
                rand_state=rand + len(contexts),
                num_threads=num_tuning_cores,
            )
        )
    db = tune_tasks(
        tasks=contexts,
        work_dir=work_dir,
        max_trials_global=max_trials_global,
        max_trials_per_task=max_trials_per_task,
        num_trials_per_iter=num_trials_per_iter,
        builder=builder,
        runner=runner,
        database=database,
        cost_model=cost_model,
        measure_callbacks=measure_callbacks,
        task_scheduler=task_scheduler,
        check_results=check_results,
        seed=rand,
        progress=progress,
        max_seconds=max_seconds,
    )
    if config is None:
        return db
    return best_schedule(db, mod, target)


def best_schedule(db: Database, mod: IRModule | PrimFunc, target: Target | str) -> Schedule | None:
    """``mod`` with the best measured trace of each function replayed (None when a function
    has no valid record)."""
    if isinstance(mod, PrimFunc):
        mod = IRModule({"main": mod})
    items = list(mod.items())
    if len(items) == 1:
        return db.query_schedule(mod, target)
    funcs = {}
    for name, func in items:
        sch = db.query_schedule(IRModule({name: func}), target)
        if sch is None:
            return None
        funcs[name] = sch.mod[name]
    return Schedule(IRModule(funcs))
