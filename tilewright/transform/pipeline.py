"""IRModule as scheduled → IRModule in lowered form: the ordered list of lowering passes."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from tilewright import config
from tilewright.ir import IRModule, PrimFunc
from tilewright.transform.compact_buffer_allocation import compact_buffer_allocation
from tilewright.transform.flatten_buffers import flatten_buffers
from tilewright.transform.inject_thread_sync import inject_thread_sync
from tilewright.transform.inline_unit_loops import inline_unit_loops
from tilewright.transform.lower_blocks import lower_blocks
from tilewright.transform.lower_init_block import lower_init_block
from tilewright.transform.lower_vectorized import lower_vectorized
from tilewright.transform.plan_buffer_allocation import plan_buffer_allocation
from tilewright.transform.remove_no_op import remove_no_op
from tilewright.transform.simplify import simplify
from tilewright.transform.split_host_device import split_host_device
from tilewright.transform.unroll_loops import unroll_loops
from tilewright.transform.verify import verify_lowered
from tilewright.transform.verify_gpu_code import verify_gpu_code

logger = logging.getLogger(__name__)

# A pass maps a function to a function; the host/device split maps one to a module of several.
Pass = Callable[[PrimFunc], "PrimFunc | IRModule"]


@dataclass(frozen=True)
class Stage:
    """One step of the pipeline: a name for dumps and logs, and the pass it runs."""

    name: str
    run: Pass


CPU_TARGET_KINDS = ("c", "llvm")
GPU_TARGET_KINDS = ("cuda", "opencl", "metal")


def stages(target_kind: str = "c") -> tuple[Stage, ...]:
    """The lowering stages for ``target_kind``, in the order they run.

    GPU kinds (``cuda``, ``opencl``, ``metal``) place and shrink shared/local buffers,
    vectorize, insert barriers, check the kernels against the target and split the function
    into a host function and its kernels (the last stage returns a module).

    Example::

        >>> [s.name for s in stages("c")][:2]
        ['lower_init_block', 'lower_blocks']
    """
    gpu = target_kind in GPU_TARGET_KINDS
    if target_kind not in CPU_TARGET_KINDS and not gpu:
        raise ValueError(
            f"no lowering pipeline for target kind {target_kind!r}; "
            f"known kinds: {', '.join(CPU_TARGET_KINDS + GPU_TARGET_KINDS)}"
        )
    return tuple(
        stage
        for stage, wanted in (
            (Stage("lower_init_block", lower_init_block), True),
            (Stage("lower_blocks", lower_blocks), True),
            (Stage("inline_unit_loops", inline_unit_loops), True),
            (Stage("plan_buffer_allocation", plan_buffer_allocation), True),
            (Stage("compact_buffer_allocation", compact_buffer_allocation), True),
            (Stage("flatten_buffers", flatten_buffers), True),
            (Stage("unroll_loops", unroll_loops), gpu),
            (Stage("simplify", simplify), True),
            (Stage("lower_vectorized", lower_vectorized), gpu),
            (Stage("inject_thread_sync", inject_thread_sync), gpu),
            (Stage("remove_no_op", remove_no_op), True),
            (Stage("verify", verify_lowered), True),
            (Stage("verify_gpu_code", partial(verify_gpu_code, target_kind=target_kind)), gpu),
            (Stage("split_host_device", partial(split_host_device, target_kind=target_kind)), gpu),
            # Host and kernels again: every variable a kernel reads must be a parameter.
            (Stage("verify_split", verify_lowered), gpu),
        )
        if wanted
    )


def lower_module(
    mod: IRModule | PrimFunc, target_kind: str = "c", *, dump_dir: Path | str | None = None
) -> IRModule:
    """Lower every function of ``mod`` into the form code generation reads.

    Args:
        mod: the module, as written or scheduled; a lone function is lowered as ``main``.
        target_kind: the target's kind (``"c"`` or ``"llvm"`` for the CPU; ``"cuda"``,
            ``"opencl"`` or ``"metal"``, whose lowered module holds for each function ``f``
            a host function ``f`` and its kernels ``f_kernel``, ``f_kernel_1``, ...).
        dump_dir: when set (default: ``tilewright.config.get().dump_dir``), each function's
            IR is written before the first stage and after each one as
            ``<dump_dir>/<kernel>.<NN>_<stage>.txt``.

    Example::

        >>> lowered = lower_module(mod, "c", dump_dir="/tmp/ir")
        >>> # writes /tmp/ir/main.00_input.txt, main.01_lower_init_block.txt, ...
    """
    pipeline = stages(target_kind)
    if isinstance(mod, PrimFunc):
        mod = IRModule({"main": mod})
    directory = Path(dump_dir) if dump_dir is not None else config.get().dump_dir
    lowered: dict[str, PrimFunc] = {}
    for name, func in mod.items():
        splits = any(stage.name == "split_host_device" for stage in pipeline)
        if splits and func.attr("global_symbol") is None:
            func = func.with_attr("global_symbol", name)  # kernels are named after it
        _dump(directory, name, 0, "input", func)
        current = [(name, func)]
        for number, stage in enumerate(pipeline, start=1):
            logger.debug("lowering %s: %s", name, stage.name)
            produced: list[tuple[str, PrimFunc]] = []
            for part_name, part in current:
                try:
                    result = stage.run(part)
                except ValueError as err:
                    # Passes name the block, buffer or variable; add which function and stage.
                    raise type(err)(f"lowering {name!r}, stage {stage.name}: {err}") from err
                parts: list[tuple[str, PrimFunc]]
                if isinstance(result, IRModule):
                    # The host function keeps the source's name; kernels follow it.
                    (_, host), *kernels = result.items()
                    parts = [(part_name, host), *kernels]
                else:
                    parts = [(part_name, result)]
                for out_name, out in parts:
                    _dump(directory, out_name, number, stage.name, out)
                    produced.append((out_name, out))
            current = produced
        for out_name, out in current:
            if out_name in lowered:
                raise ValueError(f"lowering {name!r}: function name {out_name!r} is taken twice")
            lowered[out_name] = out
    return IRModule(lowered)


def _dump(directory: Path | None, kernel: str, number: int, stage: str, func: PrimFunc) -> None:
    if directory is None:
        return
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{kernel}.{number:02d}_{stage}.txt"
    path.write_text(_text(func) + "\n")


def _text(func: PrimFunc) -> str:
    try:
        return func.script()
    except ImportError as err:
        # The printer lives in a later package; a dump without it still records the stage.
        logger.warning("IR dump without the printer (%s)", err)
        return f"# printer unavailable: {err}\n{func!r}"
