"""IRModule as scheduled → IRModule in lowered form: the ordered list of lowering passes."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tilewright import config
from tilewright.ir import IRModule, PrimFunc
from tilewright.transform.flatten_buffers import flatten_buffers
from tilewright.transform.inline_unit_loops import inline_unit_loops
from tilewright.transform.lower_blocks import lower_blocks
from tilewright.transform.lower_init_block import lower_init_block
from tilewright.transform.remove_no_op import remove_no_op
from tilewright.transform.simplify import simplify
from tilewright.transform.verify import verify_lowered

logger = logging.getLogger(__name__)

Pass = Callable[[PrimFunc], PrimFunc]


@dataclass(frozen=True)
class Stage:
    """One step of the pipeline: a name for dumps and logs, and the pass it runs."""

    name: str
    run: Pass


CPU_TARGET_KINDS = ("c", "llvm")


def stages(target_kind: str = "c") -> tuple[Stage, ...]:
    """The lowering stages for ``target_kind``, in the order they run.

    Passes for GPU kinds (thread bindings to launch dimensions, buffer compaction, barriers,
    host/device split) take their place in this one list when they exist.

    Example::

        >>> [s.name for s in stages("c")][:2]
        ['lower_init_block', 'lower_blocks']
    """
    if target_kind not in CPU_TARGET_KINDS:
        raise ValueError(
            f"no lowering pipeline for target kind {target_kind!r}; "
            f"known kinds: {', '.join(CPU_TARGET_KINDS)}"
        )
    return (
        Stage("lower_init_block", lower_init_block),
        Stage("lower_blocks", lower_blocks),
        Stage("inline_unit_loops", inline_unit_loops),
        Stage("flatten_buffers", flatten_buffers),
        Stage("simplify", simplify),
        Stage("remove_no_op", remove_no_op),
        Stage("verify", verify_lowered),
    )


def lower_module(
    mod: IRModule | PrimFunc, target_kind: str = "c", *, dump_dir: Path | str | None = None
) -> IRModule:
    """Lower every function of ``mod`` into the form code generation reads.

    Args:
        mod: the module, as written or scheduled; a lone function is lowered as ``main``.
        target_kind: the target's kind (``"c"`` or ``"llvm"`` for the CPU).
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
    lowered = {}
    for name, func in mod.items():
        _dump(directory, name, 0, "input", func)
        for number, stage in enumerate(pipeline, start=1):
            logger.debug("lowering %s: %s", name, stage.name)
            try:
                func = stage.run(func)
            except ValueError as err:
                # Passes name the block, buffer or variable; add which function and stage.
                raise type(err)(f"lowering {name!r}, stage {stage.name}: {err}") from err
            _dump(directory, name, number, stage.name, func)
        lowered[name] = func
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
