"""Source ``Artifact`` → compiled ``Artifact``: the compiler of each backend.

Each takes the artifact code generation made (format ``"source"``) and the target, and
returns the artifact with its binary and the format its loader reads. Compiling needs no
device: a cubin is compiled for the GPU present, else for the target's ``arch``.
"""

from __future__ import annotations

from tilewright.artifact import Artifact
from tilewright.runtime.c_compiler import compile_c
from tilewright.target import Target


def compile_c_library(artifact: Artifact, target: Target) -> Artifact:
    """A shared library, with the system C compiler (cached by content)."""
    name = artifact.functions[0].name if len(artifact.functions) == 1 else "module"
    library = compile_c(artifact.source, name)
    return artifact.replace(format="c-library", binary=library.read_bytes(), local_file=library)


def compile_cubin(artifact: Artifact, target: Target) -> Artifact:
    """A cubin for the GPU present (or the target's ``arch``), with NVRTC or nvcc."""
    from tilewright.runtime.cuda_runtime import driver
    from tilewright.runtime.cuda_runtime.nvrtc import compile_cuda

    arch = driver.device_arch(0) or target.arch or "sm_90"
    cubin = compile_cuda(artifact.source, arch, list(artifact.kernels))
    return artifact.replace(format="cubin", binary=cubin, arch=arch)


def keep_opencl_source(artifact: Artifact, target: Target) -> Artifact:
    """OpenCL C stays source: the OpenCL driver compiles it for its device when loaded."""
    return artifact.replace(format="opencl-source")


def keep_source(artifact: Artifact, target: Target) -> Artifact:
    """Nothing here compiles this language (Metal): the artifact holds the source only."""
    return artifact.replace(format="source")
