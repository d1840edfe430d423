"""IRModule as scheduled → IRModule in lowered form: the ordered lists of lowering passes.

``cpu_stages(target)`` and ``gpu_stages(target)`` are the pass lists a backend row names
(``tilewright.backend``); ``lower_module(mod, stages)`` runs one over every function.
``StageLog`` is what every stage of a build shares: it times each stage, dumps the IR
after it (``TILEWRIGHT_DUMP_DIR``), and adds to any error a note naming the function and
the stage, keeping the error's own type and message.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Protocol

from tilewright import config
from tilewright.ir import IRModule, PrimFunc
from tilewright.target import Target
from tilewright.transform.compact_buffer_allocation import compact_buffer_allocation
from tilewright.transform.flatten_buffers import flatten_buffers
from tilewright.transform.inject_software_pipeline import inject_software_pipeline
from tilewright.transform.inject_thread_sync import inject_thread_sync
from tilewright.transform.inline_unit_loops import inline_unit_loops
from tilewright.transform.instrument_bounds import instrument_bounds
from tilewright.transform.lower_async_copy import lower_async_copy
from tilewright.transform.lower_blocks import lower_blocks
from tilewright.transform.lower_cross_thread_reduction import lower_cross_thread_reduction
from tilewright.transform.lower_init_block import lower_init_block
from tilewright.transform.lower_thread_allreduce import lower_thread_allreduce
from tilewright.transform.lower_vectorized import lower_vectorized
from tilewright.transform.lower_vthread import lower_vthread
from tilewright.transform.lower_warp_memory import lower_warp_memory
from tilewright.transform.permuted_layout import (
    collect_permuted_layout,
    inject_permuted_layout,
    plan_permuted_layout,
)
from tilewright.transform.plan_buffer_allocation import plan_buffer_allocation
from tilewright.transform.remove_no_op import remove_no_op
from tilewright.transform.simplify import simplify
from tilewright.transform.split_host_device import split_host_device
from tilewright.transform.storage_align import apply_storage_align, collect_storage_align
from tilewright.transform.unroll_loops import unroll_loops
from tilewright.transform.unroll_pragmas import apply_unroll_pragmas
from tilewright.transform.verify import verify_lowered
from tilewright.transform.verify_bounds import verify_bounds
from tilewright.transform.verify_gpu_code import verify_gpu_code

logger = logging.getLogger(__name__)

# A pass maps a function to a function; the host/device split maps one to a module of several.
Pass = Callable[[PrimFunc], "PrimFunc | IRModule"]


@dataclass(frozen=True)
class Stage:
    """One step of a pipeline: a name for dumps, timings and errors, and the pass it runs."""

    name: str
    run: Pass


class Lowering(Protocol):
    """A backend's lowering stages for a target: ``cpu_stages`` or ``gpu_stages``."""

    def __call__(self, target: Target, *, bounds_check: bool = False) -> tuple[Stage, ...]: ...


def add_note(err: BaseException, note: str) -> None:
    """Attach ``note`` to ``err`` (PEP 678; written by hand where Python is 3.10)."""
    if hasattr(err, "add_note"):
        err.add_note(note)
    else:  # Python 3.10: tracebacks will not print it, but pytest and str(notes) see it
        err.__notes__ = [*getattr(err, "__notes__", []), note]  # type: ignore[attr-defined]  # 3.10 exceptions have no such slot declared


@dataclass
class StageLog:
    """Times, dumps and error notes of the stages of one build.

    Attributes:
        dump_dir: where each stage's output is written (``None``: nowhere).
        times: seconds spent in each stage, by stage name, in first-run order.

    Example::

        >>> log = StageLog()
        >>> lowered = lower_module(mod, cpu_stages(Target("c")), log=log)
        >>> log.times["lower_blocks"]
    """

    dump_dir: Path | None = field(default_factory=lambda: config.get().dump_dir)
    times: dict[str, float] = field(default_factory=dict)
    number: int = 0

    def __post_init__(self) -> None:
        if self.dump_dir is not None:
            self.dump_dir = Path(self.dump_dir).expanduser()

    @contextmanager
    def stage(self, stage: str, function: str) -> Iterator[None]:
        """Time the enclosed step as ``stage``; errors get a note naming it and ``function``."""
        logger.debug("building %s: %s", function, stage)
        start = time.perf_counter()
        try:
            yield
        except Exception as err:
            add_note(err, f"while building {function!r}, stage {stage}")
            raise
        finally:
            self.times[stage] = self.times.get(stage, 0.0) + time.perf_counter() - start

    def next_number(self) -> int:
        """The number of the next stage's dump files (``00`` is the input)."""
        number = self.number
        self.number += 1
        return number

    def dump(
        self,
        name: str,
        number: int,
        stage: str,
        text: str | Callable[[], str],
        suffix: str = "txt",
    ) -> None:
        """Write ``text`` (or what calling it returns) as
        ``<dump_dir>/<name>.<NN>_<stage>.<suffix>``."""
        if self.dump_dir is None:
            return
        self.dump_dir.mkdir(parents=True, exist_ok=True)
        body = text() if callable(text) else text
        path = self.dump_dir / f"{name}.{number:02d}_{stage}.{suffix}"
        path.write_text(body.rstrip("\n") + "\n")


def cpu_stages(target: Target, *, bounds_check: bool = False) -> tuple[Stage, ...]:
    """The lowering stages of a CPU target, in the order they run (the auto-scheduler's
    unroll pragmas applied after the buffers are flat).

    ``bounds_check`` adds ``instrument_bounds``: accesses not proven in range are checked
    when the kernel runs (``tw.build(..., bounds_check=True)``).

    Example::

        >>> [s.name for s in cpu_stages(Target("c"))][:2]
        ['verify_bounds', 'lower_init_block']
    """
    return (
        Stage("verify_bounds", verify_bounds),
        Stage("lower_init_block", lower_init_block),
        Stage("collect_storage_align", collect_storage_align),
        Stage("lower_blocks", lower_blocks),
        Stage("inline_unit_loops", inline_unit_loops),
        # On the CPU a tile-sized global cache moves to its loop and shrinks to its tile.
        Stage("plan_buffer_allocation", partial(plan_buffer_allocation, keep_global=False)),
        Stage(
            "compact_buffer_allocation",
            partial(compact_buffer_allocation, scopes=("shared", "local", "global")),
        ),
        Stage("inject_software_pipeline", inject_software_pipeline),
        Stage("apply_storage_align", apply_storage_align),
        Stage("flatten_buffers", flatten_buffers),
        # The auto-scheduler's unroll pragmas, before simplify folds the written-out indices.
        Stage("apply_unroll_pragmas", apply_unroll_pragmas),
        Stage("simplify", simplify),
        # Vector stores the C printer writes as vector code; other vectorized loops stay.
        Stage("lower_vectorized", partial(lower_vectorized, keep_loops=True)),
        *([Stage("instrument_bounds", instrument_bounds)] if bounds_check else []),
        Stage("remove_no_op", remove_no_op),
        Stage("verify", verify_lowered),
    )


def gpu_stages(target: Target, *, bounds_check: bool = False) -> tuple[Stage, ...]:
    """The lowering stages of a GPU target: reductions across threads made allreduces (warp
    shuffles, shared memory), shared and local buffers placed and shrunk, virtual threads
    lowered, loops unrolled (``T.unroll`` loops and the auto-scheduler's pragmas) and
    vectorized, barriers inserted, the kernels checked against the target, and each function
    split into a host function and its kernels (the last stage returns a module).
    ``bounds_check`` adds ``instrument_bounds`` after the barriers are placed (so that no
    check moves one).

    Example::

        >>> [s.name for s in gpu_stages(Target("cuda"))][-3:]
        ['verify_gpu_code', 'split_host_device', 'verify_split']
    """
    return (
        Stage("verify_bounds", verify_bounds),
        # A reduction over threadIdx-bound loops becomes an allreduce while blocks remain.
        Stage("lower_cross_thread_reduction", lower_cross_thread_reduction),
        Stage("lower_init_block", lower_init_block),
        Stage("collect_storage_align", collect_storage_align),
        Stage("collect_permuted_layout", collect_permuted_layout),
        Stage("lower_blocks", lower_blocks),
        Stage("inline_unit_loops", inline_unit_loops),
        Stage("plan_buffer_allocation", plan_buffer_allocation),
        Stage("compact_buffer_allocation", compact_buffer_allocation),
        # Buffers are placed and compacted but still N-d: a virtual thread's slice of a buffer
        # allocated under it is a new leading dimension.
        Stage("lower_vthread", lower_vthread),
        # Pipelined loops multi-buffer what their stages pass on: buffers placed and sized,
        # virtual threads already inside the stages (they would wrap a whole pipeline).
        Stage("inject_software_pipeline", partial(inject_software_pipeline, asynchronous=True)),
        # Strides for storage_align, once the allocations have their final shapes.
        Stage("apply_storage_align", apply_storage_align),
        # Swizzled shared tiles: each row's length, read off the final N-d allocations.
        Stage("plan_permuted_layout", plan_permuted_layout),
        # Warp fragments become each lane's registers while buffers are still N-d.
        Stage("lower_warp_memory", lower_warp_memory),
        Stage("flatten_buffers", flatten_buffers),
        # Its shared buffers are flat and sized: after the allocation passes, before barriers.
        Stage("lower_thread_allreduce", partial(lower_thread_allreduce, target=target)),
        Stage("unroll_loops", unroll_loops),
        # After unroll_loops: the loops a pragma only marks must stay loops.
        Stage("apply_unroll_pragmas", apply_unroll_pragmas),
        Stage("simplify", simplify),
        Stage("lower_vectorized", lower_vectorized),
        Stage("inject_thread_sync", inject_thread_sync),
        # After the barriers, placed as if the pipeline's copies were plain stores.
        Stage("lower_async_copy", partial(lower_async_copy, target=target)),
        # Indices flat and copies explicit (cp.async destinations, ldmatrix lane addresses).
        Stage("inject_permuted_layout", inject_permuted_layout),
        *([Stage("instrument_bounds", instrument_bounds)] if bounds_check else []),
        Stage("remove_no_op", remove_no_op),
        Stage("verify", verify_lowered),
        Stage("verify_gpu_code", partial(verify_gpu_code, target=target)),
        Stage("split_host_device", partial(split_host_device, target=target)),
        # Host and kernels again: every variable a kernel reads must be a parameter.
        Stage("verify_split", verify_lowered),
    )


def lower_module(
    mod: IRModule | PrimFunc, stages: Sequence[Stage], *, log: StageLog | None = None
) -> IRModule:
    """Lower every function of ``mod`` through ``stages`` into the form code generation reads.

    Args:
        mod: the module, as written or scheduled; a lone function is lowered as ``main``.
        stages: the pass list (a backend's ``lowering(target)``: ``cpu_stages`` or
            ``gpu_stages``); a GPU list leaves, for each function ``f``, a host function ``f``
            and its kernels ``f_kernel``, ``f_kernel_1``, ...
        log: times and dumps the stages (by default a new ``StageLog``, which dumps to
            ``tilewright.config.get().dump_dir`` when set: each function's IR before the
            first stage and after each one, as ``<dump_dir>/<function>.<NN>_<stage>.txt``).

    Example::

        >>> lowered = lower_module(mod, cpu_stages(Target("c")))
        >>> # TILEWRIGHT_DUMP_DIR=/tmp/ir: /tmp/ir/main.00_input.txt, main.01_lower_init_block.txt
    """
    log = log or StageLog()
    if isinstance(mod, PrimFunc):
        mod = IRModule({"main": mod})
    splits = any(stage.name == "split_host_device" for stage in stages)
    if log.number == 0:
        for name, func in mod.items():
            log.dump(name, 0, "input", func.script)
        log.number = 1
    first = log.number
    lowered: dict[str, PrimFunc] = {}
    for name, func in mod.items():
        if splits and func.attr("global_symbol") is None:
            func = func.with_attr("global_symbol", name)  # kernels are named after it
        current = [(name, func)]
        for number, stage in enumerate(stages, start=first):
            produced: list[tuple[str, PrimFunc]] = []
            for part_name, part in current:
                with log.stage(stage.name, part_name):
                    result = stage.run(part)
                parts: list[tuple[str, PrimFunc]]
                if isinstance(result, IRModule):
                    # The host function keeps the source's name; kernels follow it.
                    (_, host), *kernels = result.items()
                    parts = [(part_name, host), *kernels]
                else:
                    parts = [(part_name, result)]
                for out_name, out in parts:
                    log.dump(out_name, number, stage.name, out.script)
                    produced.append((out_name, out))
            current = produced
        for out_name, out in current:
            if out_name in lowered:
                raise ValueError(f"lowering {name!r}: function name {out_name!r} is taken twice")
            lowered[out_name] = out
    log.number = first + len(stages)
    return IRModule(lowered)
