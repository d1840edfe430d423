"""Target kind → ``Backend``: the one table saying how to build for each kind.

A row names the target kind (with its default attributes), the lowering stages, the
printer and code generator, the compiler, the loader, the device kind the kernels run on
and the source's file suffix. Nothing else in tilewright compares target-kind names: every
"which backend?" question is a lookup here (``backend_for(target)``).

Adding a backend is one row (see docs/architecture.md, "Adding a backend").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tilewright.artifact import Artifact
from tilewright.backend import compilers
from tilewright.codegen import (
    CLikePrinter,
    CPrinter,
    CUDAPrinter,
    DeviceSource,
    MetalPrinter,
    OpenCLPrinter,
    generate_cuda,
    generate_metal,
    generate_opencl,
)
from tilewright.codegen.artifacts import c_artifact, device_artifact
from tilewright.ir import IRModule
from tilewright.ir.intrinsics import Intrinsic
from tilewright.runtime import loader
from tilewright.runtime.loader import Loader
from tilewright.target import Target
from tilewright.target.tags import C_KIND, CUDA_KIND, METAL_KIND, OPENCL_KIND, KindSpec
from tilewright.transform import Lowering, Stage, cpu_stages, gpu_stages

CodeGenerator = Callable[[IRModule, Target], Artifact]
Compiler = Callable[[Artifact, Target], Artifact]


@dataclass(frozen=True)
class Backend:
    """How to build for one target kind.

    Attributes:
        kind: the target kind, with its spellings and default attributes.
        lowering: the lowering stages for a target of this kind.
        printer: the printer class (its emitter tables say which intrinsics it spells).
        codegen: lowered module → source artifact.
        compiler: source artifact → compiled artifact.
        loader: compiled artifact → runtime module.
        device: the kind of device the kernels run on (``tilewright.runtime.device``).
        suffix: the generated source's file suffix.
    """

    kind: KindSpec
    lowering: Lowering
    printer: type[CLikePrinter]
    codegen: CodeGenerator
    compiler: Compiler
    loader: Loader
    device: str
    suffix: str

    @property
    def name(self) -> str:
        return self.kind.name

    def supports(self, intrinsic: Intrinsic) -> bool:
        """Whether this backend's printer spells ``intrinsic``.

        Example: ``backend_for("cuda").supports(intrinsics.COPY_BYTES)`` is True.
        """
        printer = self.printer
        return (
            intrinsic in printer.emitters
            or intrinsic in printer.statement_emitters
            or intrinsic.name in printer.math_templates
        )


def _c_codegen(lowered: IRModule, target: Target) -> Artifact:
    return c_artifact(lowered, str(target))


def _device_codegen(generate: Callable[[IRModule], DeviceSource]) -> CodeGenerator:
    def codegen(lowered: IRModule, target: Target) -> Artifact:
        return device_artifact(lowered, generate, str(target), str(target.kind))

    return codegen


# The table: one row per target kind.
BACKENDS: dict[str, Backend] = {
    "c": Backend(
        kind=C_KIND,
        lowering=cpu_stages,
        printer=CPrinter,
        codegen=_c_codegen,
        compiler=compilers.compile_c_library,
        loader=loader.load_c_library,
        device="cpu",
        suffix="c",
    ),
    "cuda": Backend(
        kind=CUDA_KIND,
        lowering=gpu_stages,
        printer=CUDAPrinter,
        codegen=_device_codegen(generate_cuda),
        compiler=compilers.compile_cubin,
        loader=loader.load_cubin,
        device="cuda",
        suffix="cu",
    ),
    "opencl": Backend(
        kind=OPENCL_KIND,
        lowering=gpu_stages,
        printer=OpenCLPrinter,
        codegen=_device_codegen(generate_opencl),
        compiler=compilers.keep_opencl_source,
        loader=loader.load_opencl_source,
        device="opencl",
        suffix="cl",
    ),
    "metal": Backend(
        kind=METAL_KIND,
        lowering=gpu_stages,
        printer=MetalPrinter,
        codegen=_device_codegen(generate_metal),
        compiler=compilers.keep_source,
        loader=loader.load_device_source,
        device="metal",
        suffix="metal",
    ),
}


def backend_for(target: Target | str) -> Backend:
    """The backend row of ``target``'s kind.

    Example::

        >>> backend_for("nvidia/h200").suffix
        'cu'
    """
    kind = str(Target(target).kind)
    if kind not in BACKENDS:
        raise ValueError(
            f"target {target} (kind {kind}) has no backend; backends: {', '.join(BACKENDS)}"
        )
    return BACKENDS[kind]


def lowering_stages(target: Target | str) -> tuple[Stage, ...]:
    """The lowering stages of ``target``'s backend.

    Example: ``[s.name for s in lowering_stages("cuda")][-1]`` is ``'verify_split'``.
    """
    resolved = Target(target)
    return backend_for(resolved).lowering(resolved)


__all__ = ["BACKENDS", "Backend", "CodeGenerator", "Compiler", "backend_for", "lowering_stages"]
