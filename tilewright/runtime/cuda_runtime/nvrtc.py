"""CUDA C source + arch → cubin bytes: NVRTC through cuda-bindings, else ``nvcc -cubin``.

Cubins are cached under ``config.get().cache_dir / "cuda"`` by a hash of the source, the
arch, the compiler's identity and the options, so a rebuild of the same kernel is a file read.
"""

from __future__ import annotations

import functools
import hashlib
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol

from tilewright import config
from tilewright.runtime.c_compiler import atomic_write


class CUDACompileError(RuntimeError):
    """NVRTC or nvcc rejected generated CUDA (or neither is available); the message holds
    the kernels' names and the compiler's log."""


class _ResultCodes(Protocol):
    NVRTC_SUCCESS: object


class _NVRTC(Protocol):
    """The functions of cuda-bindings' ``nvrtc`` used here (the package ships no stubs).
    Each returns its status code first, then its outputs."""

    nvrtcResult: _ResultCodes

    def nvrtcVersion(self) -> tuple[object, int, int]: ...
    def nvrtcGetErrorString(self, result: object) -> tuple[object, bytes]: ...
    def nvrtcCreateProgram(
        self, src: bytes, name: bytes, num_headers: int, headers: list[bytes], names: list[bytes]
    ) -> tuple[object, object]: ...
    def nvrtcCompileProgram(
        self, program: object, num_options: int, options: list[bytes]
    ) -> tuple[object]: ...
    def nvrtcGetProgramLogSize(self, program: object) -> tuple[object, int]: ...
    def nvrtcGetProgramLog(self, program: object, log: bytes) -> tuple[object]: ...
    def nvrtcGetCUBINSize(self, program: object) -> tuple[object, int]: ...
    def nvrtcGetCUBIN(self, program: object, cubin: bytes) -> tuple[object]: ...
    def nvrtcDestroyProgram(self, program: object) -> tuple[object]: ...
    def nvrtcGetSupportedArchs(self) -> tuple[object, list[int]]: ...


@functools.cache
def _nvrtc() -> _NVRTC | None:
    try:
        try:
            from cuda.bindings import nvrtc
        except ImportError:  # cuda-python before 12.6 named the module cuda.nvrtc
            from cuda import nvrtc

        result = nvrtc.nvrtcVersion()[0]
    except Exception:  # a missing wheel or a missing libnvrtc both mean "use nvcc"
        return None
    if result != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        return None
    return nvrtc


def nvrtc_version() -> str | None:
    """``"13.5"`` when NVRTC can be loaded, else None. Example: ``nvrtc_version()``."""
    nvrtc = _nvrtc()
    if nvrtc is None:
        return None
    _, major, minor = nvrtc.nvrtcVersion()
    return f"{major}.{minor}"


@functools.cache
def nvcc_version() -> str | None:
    """The first line naming nvcc's release, when ``nvcc`` is on the PATH."""
    path = shutil.which("nvcc")
    if path is None:
        return None
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = [line for line in out.stdout.splitlines() if "release" in line]
    return lines[-1].strip() if lines else out.stdout.strip()


def compiler_available() -> bool:
    """Whether NVRTC or nvcc can compile CUDA here. Example: ``compiler_available()``."""
    return nvrtc_version() is not None or nvcc_version() is not None


@functools.cache
def supported_archs() -> tuple[str, ...]:
    """The architectures (``"sm_75"``, ...) the available compiler builds for, oldest first;
    empty when it cannot say (or there is no compiler).

    Example::

        >>> supported_archs()[:2]
        ('sm_75', 'sm_80')
    """
    nvrtc = _nvrtc()
    if nvrtc is not None and hasattr(nvrtc, "nvrtcGetSupportedArchs"):
        status, archs = nvrtc.nvrtcGetSupportedArchs()
        if status == nvrtc.nvrtcResult.NVRTC_SUCCESS:
            return tuple(f"sm_{a}" for a in sorted(archs))
    path = shutil.which("nvcc")
    if path is None:
        return ()
    try:
        out = subprocess.run([path, "--list-gpu-code"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return ()
    codes = {int(w[3:]) for w in out.stdout.split() if w.startswith("sm_") and w[3:].isdigit()}
    return tuple(f"sm_{c}" for c in sorted(codes))


@functools.cache
def include_dirs() -> tuple[str, ...]:
    """Directories holding cuda_fp16.h / cuda_bf16.h (pip wheels or a CUDA toolkit)."""
    found: list[str] = []
    try:
        from cuda import pathfinder

        where = pathfinder.find_nvidia_header_directory("cudart")
        if where:
            found.append(str(where))
    except Exception:  # cuda-pathfinder absent or unable to look: try nvcc's toolkit
        pass
    nvcc = shutil.which("nvcc")
    if nvcc is not None:
        for root in (Path(nvcc).resolve().parent.parent, Path("/usr/local/cuda")):
            if (root / "include" / "cuda_fp16.h").exists():
                found.append(str(root / "include"))
    return tuple(dict.fromkeys(found))


def compile_cuda(
    source: str,
    arch: str,
    kernels: Sequence[str] = (),
    compiler: str = "auto",
    options: Sequence[str] = (),
) -> bytes:
    """Compile CUDA C into a cubin for ``arch`` (cached by content hash).

    Arguments:
        source: a CUDA translation unit.
        arch: the GPU architecture, e.g. ``"sm_90"``.
        kernels: the kernel names, quoted in error messages.
        compiler: ``"nvrtc"``, ``"nvcc"``, ``"cupy"`` (the NVRTC cupy loads) or ``"auto"``
            (NVRTC through cuda-bindings when it loads, else nvcc, else cupy's NVRTC).
        options: extra compiler options.

    Example::

        >>> cubin = compile_cuda(generate_cuda(lowered).text, "sm_90", ["main_kernel"])
    """
    label = ", ".join(kernels) or "kernel"
    if compiler not in ("auto", "nvrtc", "nvcc", "cupy"):
        raise ValueError(
            f"compile_cuda: compiler must be auto, nvrtc, nvcc or cupy, got {compiler!r}"
        )
    use = compiler
    if use == "auto":
        use = "nvrtc" if _nvrtc() is not None else "nvcc" if nvcc_version() else "cupy"
    versions: dict[str, Callable[[], str | None]] = {
        "nvrtc": nvrtc_version,
        "nvcc": nvcc_version,
        "cupy": cupy_nvrtc_version,
    }
    identity = versions[use]()
    if identity is None:
        missing = {
            "nvrtc": "NVRTC could not be loaded (pip install cuda-bindings nvidia-cuda-nvrtc)",
            "nvcc": "nvcc is not on the PATH",
            "cupy": "cupy's NVRTC could not be loaded",
        }.get(compiler, "")
        if compiler == "auto":
            missing = (
                "neither NVRTC (pip install cuda-bindings nvidia-cuda-nvrtc), nvcc nor cupy "
                "is available"
            )
        raise CUDACompileError(f"cannot compile CUDA kernel {label}: {missing}")
    flags = [f"--gpu-architecture={arch}", "-std=c++17", *options]
    if use != "nvcc":  # nvcc finds its own toolkit's headers
        flags += [f"-I{d}" for d in include_dirs()]
    key = hashlib.sha256("\0".join([source, arch, use, identity, *flags]).encode()).hexdigest()
    cached = Path(config.get().cache_dir) / "cuda" / f"{key}.cubin"
    if cached.exists():
        return cached.read_bytes()
    if use == "nvrtc":
        cubin = _compile_nvrtc(source, flags, label, arch)
    elif use == "cupy":
        cubin = _compile_cupy(source, flags, label, arch)
    else:
        cubin = _compile_nvcc(source, flags, label, arch)
    cached.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(cached, cubin)
    return cubin


def _compile_nvrtc(source: str, flags: list[str], label: str, arch: str) -> bytes:
    nvrtc = _nvrtc()
    assert nvrtc is not None  # compile_cuda chose NVRTC because it loads
    ok = nvrtc.nvrtcResult.NVRTC_SUCCESS

    def check(result: tuple, call: str) -> tuple:
        if result[0] != ok:
            _, text = nvrtc.nvrtcGetErrorString(result[0])
            raise CUDACompileError(f"CUDA kernel {label}: {call} failed: {text.decode()}")
        return result[1:]

    (program,) = check(
        nvrtc.nvrtcCreateProgram(source.encode(), b"tilewright.cu", 0, [], []),
        "nvrtcCreateProgram",
    )
    try:
        encoded = [f.encode() for f in flags]
        (status,) = nvrtc.nvrtcCompileProgram(program, len(encoded), encoded)
        if status != ok:
            (size,) = check(nvrtc.nvrtcGetProgramLogSize(program), "nvrtcGetProgramLogSize")
            log = b" " * size
            check(nvrtc.nvrtcGetProgramLog(program, log), "nvrtcGetProgramLog")
            text = log.decode(errors="replace").rstrip("\0 \n")
            raise CUDACompileError(
                f"NVRTC failed to compile CUDA kernel {label} for {arch}:\n{text}\n"
                f"--- source ---\n{_numbered(source)}"
            )
        (size,) = check(nvrtc.nvrtcGetCUBINSize(program), "nvrtcGetCUBINSize")
        cubin = b" " * size
        check(nvrtc.nvrtcGetCUBIN(program, cubin), "nvrtcGetCUBIN")
        return cubin
    finally:
        nvrtc.nvrtcDestroyProgram(program)


def cupy_nvrtc_version() -> str | None:
    """The NVRTC version cupy loads (a fallback where cuda-bindings has no NVRTC)."""
    try:
        from cupy_backends.cuda.libs import nvrtc

        major, minor = nvrtc.getVersion()
    except Exception:  # cupy absent, or its NVRTC missing
        return None
    return f"cupy-{major}.{minor}"


def _compile_cupy(source: str, flags: list[str], label: str, arch: str) -> bytes:
    from cupy_backends.cuda.libs import nvrtc

    program = nvrtc.createProgram(source, "tilewright.cu", (), ())
    try:
        try:
            nvrtc.compileProgram(program, flags)
        except nvrtc.NVRTCError:
            log = nvrtc.getProgramLog(program)
            raise CUDACompileError(
                f"NVRTC (through cupy) failed to compile CUDA kernel {label} for {arch}:\n"
                f"{log}\n--- source ---\n{_numbered(source)}"
            ) from None
        return bytes(nvrtc.getCUBIN(program))
    finally:
        nvrtc.destroyProgram(program)


def _compile_nvcc(source: str, flags: list[str], label: str, arch: str) -> bytes:
    nvcc = shutil.which("nvcc")
    assert nvcc is not None  # nvcc_version() found it
    with tempfile.TemporaryDirectory(prefix="tw-nvcc-") as tmp:
        src, out = Path(tmp) / "kernel.cu", Path(tmp) / "kernel.cubin"
        src.write_text(source)
        args = [nvcc, "-cubin", f"-arch={arch}", *flags[1:], "-o", str(out), str(src)]
        try:
            done = subprocess.run(args, capture_output=True, text=True, timeout=600)
        except subprocess.TimeoutExpired:
            raise CUDACompileError(f"nvcc timed out compiling CUDA kernel {label}") from None
        if done.returncode != 0:
            raise CUDACompileError(
                f"nvcc failed to compile CUDA kernel {label} for {arch}:\n"
                f"{(done.stderr + done.stdout).strip()}\n--- source ---\n{_numbered(source)}"
            )
        return out.read_bytes()


def _numbered(source: str) -> str:
    return "\n".join(f"{i:4d}  {line}" for i, line in enumerate(source.splitlines(), 1))
