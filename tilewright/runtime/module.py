"""Runtime modules: compiled kernels you can call, time, export and load back.

``Module`` is the base (source text, imported modules, ``time_evaluator``); ``CModule``
holds a shared library loaded with ctypes; ``SourceModule`` holds device source only.
"""

from __future__ import annotations

import ctypes
import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from tilewright import config
from tilewright.codegen.c import generate_c
from tilewright.codegen.signature import FuncSignature
from tilewright.ir import DataType, IRModule
from tilewright.runtime.arguments import check_arguments
from tilewright.runtime.c_compiler import atomic_copy, atomic_write, compile_c
from tilewright.runtime.device import Device, cpu
from tilewright.runtime.time_evaluator import ProfileResult, time_evaluator
from tilewright.target import Target

_FORMAT = "tilewright.c_module"
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
        """Check ``args`` and return a no-argument function that runs the kernel on them."""
        return self._launcher(check_arguments(self.signature, args, self.device))

    def __call__(self, *args: object) -> None:
        self.bind(*args)()

    def __repr__(self) -> str:
        params = ", ".join(p.name for p in self.signature.params)
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

    def __getitem__(self, name: str) -> PackedFunc:
        return self.get_function(name)

    def __contains__(self, name: object) -> bool:
        return name in self.function_names()

    def export_library(self, path: str | Path) -> Path:
        """Write this module as a loadable library (modules with a compiled library only)."""
        raise RuntimeError(f"a {self.type_key} module has no library to export to {path}")

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

    def __init__(
        self,
        library: Path,
        source: str,
        signatures: dict[str, FuncSignature],
        target: str = "c",
    ) -> None:
        super().__init__(source, "c")
        self.library_path = Path(library)
        self.signatures = dict(signatures)
        self.target = target
        self._lib = ctypes.CDLL(str(self.library_path))
        self._functions: dict[str, PackedFunc] = {}
        self.build_times: dict[str, float] = {}

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

    def __call__(self, *args: object) -> None:
        name = "main" if "main" in self.signatures else next(iter(self.signatures))
        self.get_function(name)(*args)

    def export_library(self, path: str | Path) -> Path:
        """Write the shared library to ``path`` and its description to ``path + ".json"``.

        Example::

            >>> rt_mod.export_library("/tmp/add.so")
            >>> tw.runtime.load_module("/tmp/add.so")["main"](a, b)
        """
        out = Path(path)
        out.parent.mkdir(parents=True, exist_ok=True)
        atomic_copy(self.library_path, out)
        meta = {
            "format": _FORMAT,
            "version": 1,
            "target": self.target,
            "functions": [sig.to_json() for sig in self.signatures.values()],
            "source": self.get_source(),
        }
        atomic_write(_meta_path(out), json.dumps(meta, indent=1))
        return out


def build_c_module(mod: IRModule, name: str = "main", target: Target | str = "c") -> CModule:
    """Generate C for a lowered module, compile it (cached) and load it.

    When ``tilewright.config.dump_dir`` is set, the source is also written there as
    ``<name>.source.c``.

    Arguments:
        mod: the output of ``tilewright.transform.pipeline.lower_module(mod, "c")``.
        name: a label for compile errors, dumps and the cached source file.
        target: the target (or its spelling), recorded in exported libraries.

    The returned module's ``build_times`` holds the seconds spent generating C
    (``codegen``), compiling it (``compile``, near zero on a cache hit) and loading it.

    Example::

        >>> rt_mod = build_c_module(lower_module(mod, "c"))
        >>> rt_mod["main"](a, b, c)
        >>> rt_mod.build_times["compile"]
    """
    start = time.perf_counter()
    source = generate_c(mod)
    generated = time.perf_counter()
    dump_dir = config.get().dump_dir
    if dump_dir is not None:
        Path(dump_dir).mkdir(parents=True, exist_ok=True)
        atomic_write(Path(dump_dir) / f"{name}.source.c", source.text)
    library = compile_c(source.text, name)
    compiled = time.perf_counter()
    module = CModule(library, source.text, source.signatures, str(target))
    module.build_times = {
        "codegen": generated - start,
        "compile": compiled - generated,
        "load": time.perf_counter() - compiled,
    }
    return module


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
            else:
                cargs.append(int(value))  # type: ignore[call-overload]

        def run() -> None:
            status = cfunc(*cargs)
            if status != 0:
                reason = _STATUS.get(status, f"status {status}")
                raise RuntimeError(f"kernel {sig.name} failed: {reason}")

        # `values` keeps the arrays (and any DLPack exporters) alive while `run` exists.
        run.arguments = values  # type: ignore[attr-defined]
        return run

    return launcher


def _meta_path(path: Path) -> Path:
    return path.with_name(path.name + ".json")


def load_module(path: str | Path) -> Module:
    """Load a library written by ``export_library``.

    Example::

        >>> m = tw.runtime.load_module("/tmp/add.so")
        >>> m["main"](a, b)
    """
    library = Path(path)
    meta_file = _meta_path(library)
    if not library.exists():
        raise FileNotFoundError(f"load_module: no library at {library}")
    if not meta_file.exists():
        raise FileNotFoundError(
            f"load_module: {library} has no description {meta_file.name}; "
            "export it with Module.export_library"
        )
    meta = json.loads(meta_file.read_text())
    if meta.get("format") != _FORMAT:
        raise ValueError(f"load_module: {meta_file} is not a tilewright module description")
    signatures = {f["name"]: FuncSignature.from_json(f) for f in meta["functions"]}
    return CModule(library, meta.get("source", ""), signatures, meta.get("target", "c"))
