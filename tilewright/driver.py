"""``build`` and ``lower``: an IRModule and a target in, a runnable module (or lowered IR) out."""

from __future__ import annotations

from tilewright.ir import IRModule, PrimFunc
from tilewright.runtime import Module, build_c_module
from tilewright.runtime.gpu_module import build_gpu_module
from tilewright.target import Target
from tilewright.transform import lower_module


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


def lower(mod: IRModule | PrimFunc, target: str | Target | None = None) -> IRModule:
    """Run the lowering pipeline for ``target`` and return the lowered module.

    Example::

        >>> tw.lower(MyModule, "c")["main"].show()
    """
    resolved = Target(target) if target is not None else Target.current() or Target("c")
    with resolved:
        kind = str(resolved.kind)
        return lower_module(_lower_tile_ops(_as_module(mod), kind), kind)


def build(mod: IRModule | PrimFunc, target: str | Target | None = "c") -> Module:
    """Compile ``mod`` for ``target`` into a runtime module.

    Arguments:
        mod: the program (``sch.mod`` after scheduling).
        target: ``"c"`` or its alias ``"llvm"`` for the CPU, ``"cuda"`` (or a tag such as
            ``"nvidia/h200"``), ``"opencl"``, ``"metal"``, or a ``Target``; the target is
            current (``Target.current()``) while the passes run. GPU builds call
            ``lower_module(mod, kind)`` then ``build_gpu_module(lowered, target)``.

    Example::

        >>> rt_mod = tw.build(MyModule, target="c")
        >>> rt_mod["main"](a, b, c)
    """
    resolved = Target(target) if target is not None else Target.current() or Target("c")
    module = _as_module(mod)
    with resolved:
        lowered = lower_module(_lower_tile_ops(module, str(resolved.kind)), str(resolved.kind))
        if resolved.kind == "c":
            return build_c_module(lowered, _label(module), resolved.spelling)
        if resolved.kind in ("cuda", "opencl", "metal"):
            return build_gpu_module(lowered, resolved, _label(module))
    raise ValueError(
        f"target {resolved.spelling!r} (kind {resolved.kind}) has no code generator yet;"
        " build for 'c' (or its alias 'llvm')"
    )


def _lower_tile_ops(mod: IRModule, kind: str) -> IRModule:
    """Tile-layer programs (``Tx.*`` ops, ``T.device_entry``) become plain loops first."""
    from tilewright.tirx import LowerTIRx, has_tirx

    return LowerTIRx(kind)(mod) if has_tirx(mod) else mod


def _label(mod: IRModule) -> str:
    names = mod.get_global_vars()
    return names[0] if len(names) == 1 else "module"
