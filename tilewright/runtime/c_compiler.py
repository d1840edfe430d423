"""C source → shared library, compiled with the system C compiler and cached by content hash.

The cache key is the sha256 of the source, the compiler command and the compiler's version,
so a changed compiler or flag never reuses a stale library. Libraries are written to a
temporary name and renamed into place: a concurrent build never sees a half-written file.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import shlex
import subprocess
import tempfile
from pathlib import Path

from tilewright import config
from tilewright.artifact import atomic_write


class CompileError(RuntimeError):
    """The C compiler rejected generated source; the message holds its output."""


def compile_c(source: str, name: str = "kernel") -> Path:
    """Compile ``source`` into a shared library (or reuse the cached one) and return its path.

    Arguments:
        source: a C translation unit.
        name: a label for error messages and the cached source file.

    Example::

        >>> path = compile_c(codegen_c(lowered))
        >>> ctypes.CDLL(str(path))
    """
    cc = tuple(shlex.split(config.get().cc))
    flags = compile_flags(cc, uses_openmp="#pragma omp" in source)
    version = compiler_version(cc)
    if "-march=native" in flags:
        # A cache shared between machines must not hand one CPU another's instructions.
        version += "\0" + _native_cpu(cc)
    key = hashlib.sha256("\0".join([source, " ".join((*cc, *flags)), version]).encode()).hexdigest()
    cache = Path(config.get().cache_dir) / "c"
    library = cache / f"{key[:40]}.so"
    if library.exists():
        return library
    cache.mkdir(parents=True, exist_ok=True)
    stem = re.sub(r"[^A-Za-z0-9_]", "_", name) or "kernel"
    with tempfile.TemporaryDirectory(prefix="tw-cc-") as work:
        src = Path(work) / f"{stem}.c"
        src.write_text(source)
        out = Path(work) / f"{stem}.so"
        command = [*cc, *flags, "-o", str(out), str(src), "-lm"]
        result = subprocess.run(command, capture_output=True, text=True)
        if result.returncode != 0:
            raise CompileError(_message(name, command, result.stderr, source, src.name))
        atomic_copy(out, library)
        atomic_write(cache / f"{key[:40]}.c", source)
    return library


def compile_flags(cc: tuple[str, ...], uses_openmp: bool) -> tuple[str, ...]:
    """The flags for ``cc``: optimization, position-independent shared library, and
    ``-march=native`` / ``-fopenmp`` when the compiler accepts them."""
    flags = ["-O3", "-std=gnu11", "-shared", "-fPIC"]
    if _accepts(cc, "-march=native"):
        flags.append("-march=native")
    # GCC 12 miscompiles if-converted vector loops whose guard is invariant in the loop (a
    # guarded copy after decompose_padding stored wrong values at -O3 with AVX2 and AVX-512;
    # tests/schedule/test_padding.py builds it): keep guarded loops as branches.
    if _accepts(cc, "-fno-tree-loop-if-convert"):
        flags.append("-fno-tree-loop-if-convert")
    if uses_openmp and _accepts(cc, "-fopenmp"):
        flags.append("-fopenmp")
    return tuple(flags)


@functools.cache
def compiler_version(cc: tuple[str, ...]) -> str:
    """The first line of ``cc --version`` (part of the cache key)."""
    try:
        result = subprocess.run([*cc, "--version"], capture_output=True, text=True)
    except OSError as err:
        raise CompileError(
            f"C compiler {' '.join(cc)!r} cannot be run ({err}); install one or set "
            "TILEWRIGHT_CC (tilewright.config.cc)"
        ) from None
    return (result.stdout or result.stderr).splitlines()[0] if result.returncode == 0 else ""


@functools.cache
def native_vector_bytes() -> int:
    """The width in bytes of the widest vector registers the configured C compiler targets
    with ``-march=native`` (64 with AVX-512, 32 with AVX, else 16).

    Example::

        >>> native_vector_bytes()
        64
    """
    cc = tuple(shlex.split(config.get().cc))
    flags = ["-march=native"] if _accepts(cc, "-march=native") else []
    command = [*cc, *flags, "-dM", "-E", "-x", "c", os.devnull]
    try:
        macros = subprocess.run(command, capture_output=True, text=True).stdout
    except OSError:
        return 16
    if "__AVX512F__" in macros:
        return 64
    return 32 if "__AVX__" in macros else 16


@functools.cache
def _native_cpu(cc: tuple[str, ...]) -> str:
    """The instruction-set flags ``-march=native`` expands to on this machine."""
    command = [*cc, "-march=native", "-E", "-v", "-x", "c", os.devnull, "-o", os.devnull]
    try:
        result = subprocess.run(command, capture_output=True, text=True)
    except OSError:
        return ""
    lines = [ln for ln in result.stderr.splitlines() if "cc1" in ln or "target-cpu" in ln]
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


@functools.cache
def _accepts(cc: tuple[str, ...], flag: str) -> bool:
    with tempfile.TemporaryDirectory(prefix="tw-probe-") as work:
        src = Path(work) / "probe.c"
        src.write_text("int tw_probe(void) { return 0; }\n")
        command = [*cc, flag, "-shared", "-fPIC", "-o", str(Path(work) / "probe.so"), str(src)]
        try:
            return subprocess.run(command, capture_output=True).returncode == 0
        except OSError:
            return False


def _message(name: str, command: list[str], stderr: str, source: str, filename: str) -> str:
    lines = source.splitlines()
    text = f"C compiler failed on kernel {name}:\n  $ {shlex.join(command)}\n{stderr.strip()}"
    match = re.search(re.escape(filename) + r":(\d+):(?:\d+:)? (?:fatal )?error", stderr)
    if match:
        number = int(match.group(1))
        if 1 <= number <= len(lines):
            text += f"\ngenerated source line {number}: {lines[number - 1].strip()}"
    return text


def atomic_copy(src: Path, dst: Path) -> None:
    """Copy ``src`` to ``dst`` so that readers see either nothing or the whole file."""
    atomic_write(dst, src.read_bytes(), mode=0o755)
