"""Runtime modules: compiled kernels you can call, time, export and load back.

``Module`` is the base (source text, imported modules, ``time_evaluator``,
``export_library``); ``CModule`` holds a shared library loaded with ctypes from a C
``Artifact``; ``SourceModule`` holds source only.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import cast

import numpy as np

from tilewright import config
from tilewright.artifact import Artifact, FuncSignature, atomic_write
from tilewright.ir import DataType
from tilewright.runtime.arguments import check_arguments
from tilewright.runtime.bounds import new_record, raise_recorded
from tilewright.runtime.device import Device, cpu
from tilewright.runtime.time_evaluator import ProfileResult, stage_table, time_evaluator

_CTYPES = {
    "bool": ctypes.c_bool,
    "int8": ctypes.c_int8,
    "int16": ctypes.c_int16,
    "int32": ctypes.c_int32,
    "int64": ctypes.c_int64,
    "uint8": ctypes.c_uint8,
    "uint16": ctypes.c_uint16,
    "uint32": ctypes.c_uint32,
    "uint64": ctypes.c_uint64,
    "float16": ctypes.c_float,  # the C target computes half precision in float
    "bfloat16": ctypes.c_float,
    "float32": ctypes.c_float,
    "float64": ctypes.c_double,
    "handle": ctypes.c_void_p,
}
_STATUS = {-1: "could not allocate memory for a local buffer"}


class Runner:
    """A kernel call with its arguments bound: ``run()`` launches it.

    ``arguments`` holds the checked argument values, so the arrays (and any DLPack exporters)
    stay alive while the runner exists; ``stream`` is the CUDA stream it launches on (0: the
    default stream, or a device without streams).
    """

    __slots__ = ("_run", "arguments", "stream")

    def __init__(
        self, run: Callable[[], None], arguments: Sequence[object], stream: int = 0
    ) -> None:
        self._run = run
        self.arguments = arguments
        self.stream = stream

    def __call__(self) -> None:
        self._run()


class PackedFunc:
    """A kernel function: calling it checks every argument, then runs the kernel.

    Example::

        >>> f = rt_mod["main"]
        >>> f(a, b, c)                 # numpy arrays, NDArrays or DLPack tensors
        >>> run = f.bind(a, b, c)      # check once ...
        >>> run()                      # ... launch many times
    """

    def __init__(
        self,
        signature: FuncSignature,
        dev: Device,
        launcher: Callable[[list[object]], Callable[[], None]],
    ) -> None:
        self.signature = signature
        self.device = dev
        self._launcher = launcher

    @property
    def name(self) -> str:
        return self.signature.name

    def bind(self, *args: object) -> Callable[[], None]:
        """Check ``args`` and return a no-argument function that runs the kernel on them.

        A function built with ``bounds_check=True`` also gets its hidden error record, and
        each run raises ``BoundsError`` when an access went out of range.
        """
        sig = self.signature
        if not sig.bounds_checks:
            return self._launcher(check_arguments(sig, args, self.device))
        if len(args) != len(sig.user_params):
            names = ", ".join(p.name for p in sig.user_params)
            raise TypeError(
                f"{sig.name} expects {len(sig.user_params)} arguments ({names}), got {len(args)}"
            )
        record = new_record(sig, self.device)
        values = check_arguments(sig, (*args, record), self.device)
        launch = self._launcher(values)

        def run() -> None:
            launch()
            raise_recorded(sig, record)

        return Runner(run, values, launch.stream if isinstance(launch, Runner) else 0)

    def __call__(self, *args: object) -> None:
        self.bind(*args)()

    def __repr__(self) -> str:
        params = ", ".join(p.name for p in self.signature.user_params)
        return f"<PackedFunc {self.name}({params}) on {self.device}>"


class Module:
    """A built module: look functions up by name, read the source, time a function.

    Example::

        >>> rt_mod = tw.build(mod, target="c")
        >>> rt_mod["main"](a, b, c)
        >>> print(rt_mod.get_source())
    """

    type_key = "module"

    def __init__(
        self, source: str = "", fmt: str = "", imported_modules: Sequence[Module] = ()
    ) -> None:
        self._source = source
        self.format = fmt
        self.imported_modules: list[Module] = list(imported_modules)
        self.artifact: Artifact | None = None  # what it was loaded from, when built
        self.build_times: dict[str, float] = {}  # stage → seconds, when tw.build made it

    def get_source(self, fmt: str = "") -> str:
        """The source this module was built from (``fmt`` is accepted for TVM compatibility)."""
        return self._source

    def get_function(self, name: str) -> PackedFunc:
        """The callable function ``name``; ``rt_mod[name]`` is the same.

        Example::

            >>> rt_mod.get_function("main")(a, b, c)
        """
        raise RuntimeError(f"a {self.type_key} module holds no callable functions")

    def function_names(self) -> list[str]:
        """The names of the callable functions, in module order."""
        return []

    def build_report(self) -> str:
        """The time ``tw.build`` spent in each stage, as a table.

        Example::

            >>> print(tw.build(mod, "c").build_report())
            stage             ms   share
            lower_blocks   0.412    1.0%
            ...
        """
        return stage_table(self.build_times)

    def __getitem__(self, name: str) -> PackedFunc:
        return self.get_function(name)

    def __call__(self, *args: object) -> None:
        """Call the entry function: ``main``, or the module's only function (as TVM's
        ``Module.__call__`` does).

        Example::

            >>> f = tw.build(add_one, target="c")   # a module of one function
            >>> f(a, b)                              # the same as f["add_one"](a, b)
        """
        names = self.function_names()
        if "main" in names:
            return self.get_function("main")(*args)
        if len(names) == 1:
            return self.get_function(names[0])(*args)
        raise RuntimeError(
            f"this {self.type_key} module has no entry function to call: no 'main' among "
            f"{names or 'no functions'}; call one by name, rt_mod[name](...)"
        )

    def __contains__(self, name: object) -> bool:
        return name in self.function_names()

    def export_library(self, path: str | Path) -> Path:
        """Write the built module to ``path`` (the library, cubin or source) and its
        description to ``path + ".json"``; ``tw.runtime.load_module(path)`` loads it back.

        Example::

            >>> rt_mod.export_library("/tmp/add.so")
            >>> tw.runtime.load_module("/tmp/add.so")["main"](a, b)
        """
        if self.artifact is None:
            raise RuntimeError(f"a {self.type_key} module has no built artifact to export")
        return self.artifact.save(path)

    def import_module(self, other: Module) -> None:
        """Attach ``other`` (device code, say) to ``imported_modules``."""
        self.imported_modules.append(other)

    def time_evaluator(
        self,
        func_name: str,
        dev: Device,
        number: int = 10,
        repeat: int = 1,
        min_repeat_ms: float = 0,
    ) -> Callable[..., ProfileResult]:
        """A function returning the timing of ``func_name`` on the given arguments.

        Arguments:
            func_name: the function to time.
            dev: the device it runs on.
            number: calls per repeat (raised until a repeat lasts ``min_repeat_ms``).
            repeat: timed batches; ``results`` has one mean per repeat, in seconds.
            min_repeat_ms: the shortest duration of one repeat.

        Example::

            >>> timer = rt_mod.time_evaluator("main", tw.cpu(0), number=10, repeat=3)
            >>> timer(a, b, c).mean
        """
        return time_evaluator(self.get_function(func_name).bind, dev, number, repeat,
                              min_repeat_ms)  # fmt: skip


class SourceModule(Module):
    """Source text without a way to run it here (device code built on a machine without the
    device, or a sub-module kept for reading)."""

    type_key = "source"

    def get_function(self, name: str) -> PackedFunc:
        raise RuntimeError(
            f"this module holds {self.format or 'source'} code only; function {name!r} cannot "
            "be called here"
        )


class CModule(Module):
    """Kernels compiled from C into a shared library, called through ctypes.

    ctypes releases the GIL during a call, so kernels run while other threads proceed.
    """

    type_key = "c"

    def __init__(self, artifact: Artifact) -> None:
        super().__init__(artifact.source, "c")
        self.artifact = artifact
        self.signatures = {sig.name: sig for sig in artifact.functions}
        self.target = artifact.target
        self.library_path = _materialize(artifact)
        self._lib = ctypes.CDLL(str(self.library_path))
        self._functions: dict[str, PackedFunc] = {}

    def function_names(self) -> list[str]:
        return list(self.signatures)

    def get_function(self, name: str) -> PackedFunc:
        if name not in self.signatures:
            known = ", ".join(self.signatures) or "none"
            raise AttributeError(f"module has no function {name!r} (functions: {known})")
        if name not in self._functions:
            sig = self.signatures[name]
            cfunc = getattr(self._lib, sig.symbol)
            types = [ctypes.c_void_p if p.is_buffer else _CTYPES[p.dtype] for p in sig.params]
            cfunc.argtypes = [*types, *([ctypes.c_int64] * len(sig.sym_vars))]
            cfunc.restype = ctypes.c_int32
            self._functions[name] = PackedFunc(sig, cpu(0), _c_launcher(sig, cfunc))
        return self._functions[name]

    def __repr__(self) -> str:
        return f"<CModule {', '.join(self.signatures)} from {self.library_path.name}>"


def _materialize(artifact: Artifact) -> Path:
    """The shared library of ``artifact`` as a file: the compiler's own when this process
    built it, else a copy named by the content's hash in the cache."""
    if artifact.local_file is not None and artifact.local_file.exists():
        return artifact.local_file
    path = Path(config.get().cache_dir) / "artifacts" / f"{artifact.digest}.so"
    if not path.exists():
        atomic_write(path, artifact.binary, mode=0o755)
    return path


def _c_launcher(
    sig: FuncSignature, cfunc: Callable[..., int]
) -> Callable[[list[object]], Callable[[], None]]:
    scalar_types = [None if p.is_buffer else DataType.parse(p.dtype) for p in sig.params]

    def launcher(values: list[object]) -> Callable[[], None]:
        cargs: list[object] = []
        for i, value in enumerate(values):
            if isinstance(value, np.ndarray):
                cargs.append(value.ctypes.data)
            elif i < len(scalar_types) and scalar_types[i] is not None:
                cargs.append(value)
            else:  # a symbolic size check_arguments appended
                cargs.append(int(cast(int, value)))

        def run() -> None:
            status = cfunc(*cargs)
            if status != 0:
                reason = _STATUS.get(status, f"status {status}")
                raise RuntimeError(f"kernel {sig.name} failed: {reason}")

        return Runner(run, values)

    return launcher
