"""``Artifact`` → runtime ``Module``: the loader of each artifact format, in one table.

A backend's compiler names the format of what it produces; loading looks the format up
here, so a module built in one process (a tuner's builder) loads in another (its runner)
without lowering or generating code again.

Example::

    >>> rt_mod = load(artifact)              # from tw.backend.compile(...) or Artifact.load
    >>> rt_mod = load_module("matmul.so")    # written by rt_mod.export_library("matmul.so")
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from tilewright.artifact import SOURCE_FORMATS, Artifact, ArtifactError
from tilewright.runtime.gpu_module import DeviceSourceModule, load_gpu_module
from tilewright.runtime.module import CModule, Module


class Loader(Protocol):
    """Makes a callable module of an artifact (raises when this machine cannot)."""

    def __call__(self, artifact: Artifact) -> Module: ...


def load_c_library(artifact: Artifact) -> Module:
    """A shared library compiled from C, called through ctypes."""
    return CModule(artifact)


def load_cubin(artifact: Artifact) -> Module:
    """CUDA kernels (a cubin) under their host launch plans; the GPU is needed only to run.
    A CUDA artifact built where no CUDA compiler was found holds source only: readable, not
    callable."""
    if artifact.format in SOURCE_FORMATS:
        return load_device_source(artifact)
    from tilewright.runtime.cuda_runtime.module import CUDAModule

    return load_gpu_module(artifact, CUDAModule)


def load_opencl_source(artifact: Artifact) -> Module:
    """OpenCL kernels, built by the OpenCL driver on first use."""
    from tilewright.runtime.opencl_runtime import OpenCLModule

    return load_gpu_module(artifact, OpenCLModule)


def load_device_source(artifact: Artifact) -> Module:
    """Kernel source that no runtime here runs (Metal): readable, not callable."""
    return load_gpu_module(artifact, DeviceSourceModule)


# Artifact format → its loader.
LOADERS: dict[str, Loader] = {
    "c-library": load_c_library,
    "cubin": load_cubin,
    "opencl-source": load_opencl_source,
    "source": load_device_source,
}


def load(artifact: Artifact) -> Module:
    """The runtime module of ``artifact``. Example: ``load(art)["main"](a, b, c)``."""
    loader = LOADERS.get(artifact.format)
    if loader is None:
        raise ArtifactError(
            f"no loader for artifact format {artifact.format!r}; known: {', '.join(LOADERS)}"
        )
    module = loader(artifact)
    module.artifact = artifact
    return module


def load_module(path: str | Path) -> Module:
    """Load a module written by ``export_library`` (a relative path is from the current
    directory).

    Example::

        >>> m = tw.runtime.load_module("add.so")
        >>> m["main"](a, b)
    """
    return load(Artifact.load(path))
