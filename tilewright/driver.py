"""``build``, ``build_artifact`` and ``lower``: an IRModule and a target in, a runnable module,
a loadable artifact, or lowered IR out.

A build is one named list of stages, the same for every target kind: the tile layer's
lowering (``lower_tirx``, for programs that use it), the backend's lowering passes, code
generation, compilation and loading. The backend table (``tilewright.backend``) says what
each stage does for the target's kind. Every stage is timed (``rt_mod.build_times``,
``rt_mod.build_report()``), dumped under ``TILEWRIGHT_DUMP_DIR`` when it is set (the input
program as ``<function>.00_input.txt``, then one file per stage, the source last), and an
error raised in a stage keeps its type and message and gains a note naming the stage and the
function.
"""

from __future__ import annotations

from tilewright.artifact import Artifact
from tilewright.backend import Backend, backend_for
from tilewright.ir import IRModule, PrimFunc
from tilewright.runtime import Module
from tilewright.target import Target
from tilewright.tirx import LowerTIRx, has_tirx
from tilewright.transform import StageLog, lower_module
from tilewright.transform.pass_context import bounds_check_requested


def _as_module(mod: IRModule | PrimFunc) -> IRModule:
    if isinstance(mod, PrimFunc):
        name = mod.attr("global_symbol", "main")
        return IRModule({str(name): mod})
    if isinstance(mod, IRModule):
        return mod
    raise TypeError(
        f"build expects an IRModule or a PrimFunc, got {type(mod).__name__}"
        " (did you pass a Schedule? use sch.mod)"
    )


def _resolve(target: str | Target | None) -> Target:
    if target is not None:
        return Target(target)
    return Target.current() or Target("c")


def _label(mod: IRModule) -> str:
    names = mod.get_global_vars()
    return names[0] if len(names) == 1 else "module"


def _lower(
    module: IRModule, target: Target, backend: Backend, log: StageLog, bounds_check: bool
) -> IRModule:
    for name, func in module.items():
        log.dump(name, 0, "input", func.script)
    log.number = 1
    if has_tirx(module):
        with log.stage("lower_tirx", _label(module)):
            module = LowerTIRx(target=target)(module)
        number = log.next_number()
        for name, func in module.items():
            log.dump(name, number, "lower_tirx", func.script)
    return lower_module(module, backend.lowering(target, bounds_check=bounds_check), log=log)


def lower(
    mod: IRModule | PrimFunc,
    target: str | Target | None = None,
    *,
    bounds_check: bool | None = None,
) -> IRModule:
    """The module lowered for ``target`` (the current target, else ``"c"``): the IR that
    code generation reads; ``bounds_check`` as for ``build``.

    Example::

        >>> tw.lower(MyModule, "c")["main"].show()
    """
    resolved = _resolve(target)
    checked = bounds_check_requested(bounds_check)
    return _lower(_as_module(mod), resolved, backend_for(resolved), StageLog(), checked)


def build_artifact(
    mod: IRModule | PrimFunc,
    target: str | Target | None = "c",
    *,
    log: StageLog | None = None,
    bounds_check: bool | None = None,
) -> Artifact:
    """Lower, generate and compile ``mod`` for ``target`` into an ``Artifact``: plain data
    that ``tw.runtime.load`` turns into a callable module, here or in another process.

    Arguments:
        mod: the program (``sch.mod`` after scheduling).
        target: as for ``build``.
        log: collects the stage times and dumps (a new ``StageLog`` by default).
        bounds_check: as for ``build``.

    Example::

        >>> art = tw.build_artifact(sch.mod, "cuda")
        >>> payload = art.to_bytes()                 # e.g. to a runner process
        >>> tw.runtime.load(tw.artifact.Artifact.from_bytes(payload))["main"](a, b, c)
    """
    resolved = _resolve(target)
    log = log or StageLog()
    module = _as_module(mod)
    checked = bounds_check_requested(bounds_check)
    lowered = _lower(module, resolved, backend_for(resolved), log, checked)
    return _compile(lowered, resolved, _label(module), log)


def _compile(lowered: IRModule, target: Target, label: str, log: StageLog) -> Artifact:
    backend = backend_for(target)
    number = log.next_number()
    with log.stage("codegen", label):
        artifact = backend.codegen(lowered, target)
        artifact = artifact.replace(kind=backend.name, device=backend.device, suffix=backend.suffix)
    log.dump(label, number, "source", artifact.source, backend.suffix)
    with log.stage("compile", label):
        return backend.compiler(artifact, target)


def _load(artifact: Artifact, target: Target, label: str, log: StageLog) -> Module:
    with log.stage("load", label):
        module = backend_for(target).loader(artifact)
    module.artifact = artifact
    module.build_times = dict(log.times)
    return module


def build(
    mod: IRModule | PrimFunc,
    target: str | Target | None = "c",
    *,
    bounds_check: bool | None = None,
) -> Module:
    """Compile ``mod`` for ``target`` into a runtime module.

    Arguments:
        mod: the program (``sch.mod`` after scheduling).
        target: ``"c"`` or its alias ``"llvm"`` for the CPU, ``"cuda"`` (or a tag such as
            ``"nvidia/h200"``), ``"opencl"``, ``"metal"``, or a ``Target``; ``None`` takes
            the current target (``with Target(...):``), else ``"c"``.
        bounds_check: check at run time every buffer access not proven in range; a call
            that goes out of range skips that access and then raises
            ``tw.runtime.BoundsError`` naming the buffer, the index and the kernel. ``None``
            (the default) takes the current ``tw.transform.PassContext``'s
            ``"tir.instrument_bound_checkers"``, else False. Accesses proven out of range
            are refused at lowering whatever this says (``OutOfBoundsError``).

    Example::

        >>> rt_mod = tw.build(MyModule, target="c")
        >>> rt_mod["main"](a, b, c)
        >>> print(rt_mod.build_report())             # seconds spent in each stage
        >>> tw.build(Gather, "c", bounds_check=True)["main"](a, bad_idx, b)  # BoundsError
    """
    resolved = _resolve(target)
    log = StageLog()
    artifact = build_artifact(mod, resolved, log=log, bounds_check=bounds_check)
    return _load(artifact, resolved, _label(_as_module(mod)), log)


def build_lowered(lowered: IRModule, target: str | Target | None = "c") -> Module:
    """The stages after lowering (code generation, compilation, loading) on a module that is
    already in lowered form (``tw.lower``'s output, or IR written in that form by hand).

    Example::

        >>> rt_mod = build_lowered(tw.lower(mod, "cuda"), "cuda")
    """
    resolved = _resolve(target)
    log = StageLog()
    label = _label(lowered)
    return _load(_compile(lowered, resolved, label, log), resolved, label, log)
