"""Source ``Artifact`` → compiled ``Artifact``: the compiler of each backend.

Each takes the artifact code generation made (format ``"source"``) and the target, and
returns the artifact with its binary and the format its loader reads. Compiling needs no
device: a cubin is compiled for the GPU present, else for the target's ``arch``.
"""

from __future__ import annotations

import functools
import logging

from tilewright.artifact import Artifact
from tilewright.runtime.c_compiler import compile_c
from tilewright.target import Target

logger = logging.getLogger(__name__)


def compile_c_library(artifact: Artifact, target: Target) -> Artifact:
    """A shared library, with the system C compiler (cached by content)."""
    name = artifact.functions[0].name if len(artifact.functions) == 1 else "module"
    library = compile_c(artifact.source, name)
    return artifact.replace(format="c-library", binary=library.read_bytes(), local_file=library)


def compile_cubin(artifact: Artifact, target: Target) -> Artifact:
    """A cubin for the GPU present (or the target's ``arch``), with NVRTC or nvcc.

    Without any CUDA compiler the artifact keeps the source only (it prints; calling it says
    what to install). A tag whose architecture the installed compiler no longer supports
    (``nvidia/tesla-p100``: sm_60) is compiled for the GPU present, else for the oldest
    supported architecture, with one logged note; the tag's limits still applied to the
    checks of lowering.
    """
    from tilewright.runtime.cuda_runtime import driver, nvrtc

    if not nvrtc.compiler_available():
        return artifact.replace(format="source", arch=artifact.arch or target.arch)
    arch = driver.device_arch(0) or target.arch or "sm_90"
    if artifact.arch:  # code for one architecture only (wgmma: sm_90a)
        if _arch_number(arch) != _arch_number(artifact.arch):
            raise ValueError(
                f"the kernels use instructions of {artifact.arch} only (wgmma, setmaxnreg), "
                f"and the GPU (or the target) is {arch}"
            )
        cubin = nvrtc.compile_cuda(artifact.source, artifact.arch, list(artifact.kernels))
        return artifact.replace(format="cubin", binary=cubin)
    supported = nvrtc.supported_archs()
    if supported and arch not in supported:
        chosen = next((a for a in supported if _arch_number(a) >= _arch_number(arch)), None)
        chosen = chosen or supported[-1]
        _note_arch_once(str(target), arch, chosen)
        arch = chosen
    cubin = nvrtc.compile_cuda(artifact.source, arch, list(artifact.kernels))
    return artifact.replace(format="cubin", binary=cubin, arch=arch)


def _arch_number(arch: str) -> int:
    digits = "".join(c for c in arch if c.isdigit())
    return int(digits) if digits else 0


@functools.cache
def _note_arch_once(target: str, wanted: str, chosen: str) -> None:
    logger.warning(
        "target %s is %s, which the installed CUDA compiler no longer supports; compiling for "
        "%s instead (the target's thread and shared-memory limits still apply)",
        target,
        wanted,
        chosen,
    )


def keep_opencl_source(artifact: Artifact, target: Target) -> Artifact:
    """OpenCL C stays source: the OpenCL driver compiles it for its device when loaded."""
    return artifact.replace(format="opencl-source")


def keep_source(artifact: Artifact, target: Target) -> Artifact:
    """Nothing here compiles this language (Metal): the artifact holds the source only."""
    return artifact.replace(format="source")
