"""An unscheduled module + argument descriptions + a seed → the ``.npz`` file of its results.

The runner checks each candidate against these arrays (``ReferenceCheck``). They are
computed once per (module, seed) on the CPU, by the module compiled as C with the outermost
spatial loop of each block parallelized, in a child process, so that a crash or a hang
cannot take the tuner down; later calls reuse the file.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

from tilewright.ir import Block, IRModule, structural_hash
from tilewright.meta_schedule.arg_info import TensorInfo
from tilewright.meta_schedule.builder.process_pool import WorkerPool
from tilewright.meta_schedule.runner.arguments import random_arguments, save_arguments
from tilewright.schedule import Schedule, ScheduleError
from tilewright.schedule.tree import walk


def reference_path(
    mod: IRModule,
    args_info: Sequence[TensorInfo],
    seed: int,
    cache_dir: str,
    *,
    timeout_sec: float = 600.0,
) -> str:
    """The path of an ``.npz`` holding every argument (``arg0``, ``arg1``, ...) after the
    unscheduled ``mod`` ran on ``random_arguments(args_info, seed)``.

    The file is named by the module's structural hash and the seed, and reused when it is
    already in ``cache_dir``. Raises ``RuntimeError`` when computing it failed.

    Example::

        >>> infos = ArgInfo.from_entry_func(mod)
        >>> path = reference_path(mod, infos, seed=0, cache_dir="/tmp/refs")
        >>> np.load(path)["arg2"]          # C = A @ B on the seed's A and B
    """
    path = Path(cache_dir) / f"{structural_hash(mod) & (2**64 - 1):016x}-seed{seed}.npz"
    if path.exists():
        return str(path)
    pool = WorkerPool(1, what="reference")
    try:
        (outcome,) = pool.map(
            compute_reference, [(mod, tuple(args_info), seed, str(path))], timeout_sec
        )
    finally:
        pool.close()
    if outcome.error is not None:
        raise RuntimeError(f"computing the reference outputs failed: {outcome.error}")
    return str(path)


def compute_reference(mod: IRModule, args_info: Sequence[TensorInfo], seed: int, path: str) -> None:
    """Run ``mod`` (parallelized, as C) on the seed's arguments and save them to ``path``."""
    from tilewright.driver import build

    rt_mod = build(parallelize_outer_loops(mod), target="c")
    names = rt_mod.function_names()
    func = rt_mod["main" if "main" in names else names[0]]
    arrays = random_arguments(args_info, seed)
    func(*arrays)
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=out.parent, prefix=f".{out.stem}.", suffix=".npz")
    try:
        with os.fdopen(fd, "wb") as f:
            save_arguments(f, arrays)
        os.replace(tmp, out)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def parallelize_outer_loops(mod: IRModule) -> IRModule:
    """``mod`` with the outermost loop of each block parallel where that loop is spatial
    and ``sch.parallel`` accepts it; blocks where it refuses stay as they are.

    Example::

        >>> parallelize_outer_loops(matmul).script()     # for i in T.parallel(64): ...
    """
    from tilewright.meta_schedule.analysis import loop_iter_kinds

    sch = Schedule(mod)
    for func_name in mod:
        sch.work_on(func_name)
        names = [p[-1].name for p in walk(mod[func_name].body) if isinstance(p[-1], Block)]
        for name in names:
            block = sch.get_block(name, func_name)
            loops = sch.get_loops(block)
            if not loops:
                continue
            kinds = loop_iter_kinds(sch, block)
            _reductions_outward(sch, loops, kinds)
            try:
                if kinds[0] == "S":
                    sch.parallel(sch.get_loops(block)[0])
            except ScheduleError:
                continue
    return sch.mod


def _reductions_outward(sch: Schedule, loops: list, kinds: list[str]) -> None:
    """Move the reduction loops that follow a block's last spatial loop just outside it
    (``i, j, k`` becomes ``i, k, j``): the innermost loop then walks the output and the
    inputs contiguously, which makes the naive reference many times faster. Skipped when
    the last spatial loop is the outermost (it is the one parallelized) or when the
    primitive refuses."""
    spatial = [k for k, kind in enumerate(kinds) if kind == "S"]
    if len(spatial) < 2 or spatial[-1] == len(kinds) - 1:
        return
    last = spatial[-1]
    if any(kind != "R" for kind in kinds[last + 1 :]):
        return
    order = [*loops[:last], *loops[last + 1 :], loops[last]]
    with contextlib.suppress(ScheduleError):
        sch.reorder(*order)
