"""Lowered GPU IRModule → ``GPUModule``: a host launcher over a device module of kernels.

``build_gpu_module`` generates the device source (CUDA, OpenCL or Metal), compiles what can
be compiled here (a CUDA cubin needs no GPU), and returns a module whose functions check
their arguments, evaluate the launch dimensions of the host function and launch each kernel.
``rt_mod.imported_modules[0]`` is the device module; its ``get_source()`` is the kernel code.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from pathlib import Path

from tilewright import config
from tilewright.codegen.device_printer import DeviceSource, vector_accessed_buffers
from tilewright.codegen.signature import FuncSignature, func_signature
from tilewright.ir import BufferStore, Call, IRModule, PrimFunc, Var, post_order_visit
from tilewright.runtime.c_compiler import atomic_write
from tilewright.runtime.device import Device, device
from tilewright.runtime.launch_plan import LAUNCH, HostProgram
from tilewright.runtime.module import Module, PackedFunc, SourceModule
from tilewright.runtime.time_evaluator import ProfileResult, time_evaluator
from tilewright.target import Target

_SUFFIX = {"cuda": "cu", "opencl": "cl", "metal": "metal"}


class DeviceFunc(PackedFunc):
    """A host function of a GPU module: checks that the device runtime is there, then the
    arguments, then launches the kernels in order."""

    def __init__(self, sig: FuncSignature, program: HostProgram, device_module: Module) -> None:
        self.program = program
        self.device_module = device_module
        dev = getattr(device_module, "device", None) or device(device_module.format or "cpu")
        super().__init__(sig, dev, self._launcher)

    def bind(self, *args: object) -> Callable[[], None]:
        prepare = getattr(self.device_module, "prepare", None)
        if prepare is None:
            raise RuntimeError(
                f"{self.name}: {self.device_module.format} kernels cannot run here (tilewright "
                "has no runtime for them on this system); "
                "rt_mod.imported_modules[0].get_source() holds the generated source"
            )
        prepare()
        return super().bind(*args)

    def _launcher(self, values: list[object]) -> Callable[[], None]:
        launches = self.program.launches(values)
        return self.device_module.runner(launches, values)  # type: ignore[attr-defined]


class GPUModule(Module):
    """Host functions (interpreted in Python) over one device module.

    Example::

        >>> rt_mod = tw.build(sch.mod, target="cuda")
        >>> rt_mod["main"](a, b)                       # arrays on tw.cuda(0), or torch tensors
        >>> print(rt_mod.imported_modules[0].get_source())
    """

    type_key = "gpu"

    def __init__(self, hosts: dict[str, PrimFunc], device_module: Module, target: str = "") -> None:
        super().__init__("", "gpu", [device_module])
        self.target = target
        kernels = getattr(device_module, "kernels", {})
        self.signatures = {
            name: _with_launch_facts(func_signature(name, f), f, kernels)
            for name, f in hosts.items()
        }
        self.programs = {name: HostProgram(name, f) for name, f in hosts.items()}
        for program in self.programs.values():
            known = getattr(device_module, "param_types", None)
            missing = [k for k in program.kernels if known is not None and k not in known]
            if missing:
                raise ValueError(
                    f"host function {program.name} launches {', '.join(missing)}, which the "
                    "module does not define"
                )
        self._functions: dict[str, DeviceFunc] = {}
        self.build_times: dict[str, float] = {}

    def get_source(self, fmt: str = "") -> str:
        """The device source (the host side is interpreted, it has no source)."""
        return self.imported_modules[0].get_source(fmt)

    def function_names(self) -> list[str]:
        return list(self.signatures)

    def get_function(self, name: str) -> PackedFunc:
        if name not in self.signatures:
            known = ", ".join(self.signatures) or "none"
            raise AttributeError(f"module has no function {name!r} (functions: {known})")
        if name not in self._functions:
            self._functions[name] = DeviceFunc(
                self.signatures[name], self.programs[name], self.imported_modules[0]
            )
        return self._functions[name]

    def time_evaluator(
        self,
        func_name: str,
        dev: Device,
        number: int = 10,
        repeat: int = 1,
        min_repeat_ms: float = 0,
    ) -> Callable[..., ProfileResult]:
        """Time ``func_name`` on the device (CUDA events on a GPU); see ``Module.time_evaluator``.

        Example::

            >>> rt_mod.time_evaluator("main", tw.cuda(0), number=100)(a, b).mean
        """
        measure = getattr(self.imported_modules[0], "measure", None)
        bind = self.get_function(func_name).bind
        return time_evaluator(bind, dev, number, repeat, min_repeat_ms, measure)

    def __repr__(self) -> str:
        return f"<GPUModule {', '.join(self.signatures)} on {self.imported_modules[0].format}>"


# Vector accesses of a buffer assume its first element is aligned to the widest vector.
VECTOR_ALIGN = 16


def _with_launch_facts(
    sig: FuncSignature, host: PrimFunc, kernels: dict[str, PrimFunc]
) -> FuncSignature:
    """``sig`` with, for each buffer, ``written`` set when some launched kernel stores into it
    (the host body itself stores nothing) and ``align`` when some kernel reads or writes it
    with vector accesses."""
    written: set[Var] = set()
    vectored: set[Var] = set()

    def visit(node: object) -> None:
        if not (isinstance(node, Call) and node.op == LAUNCH and node.args):
            return
        kernel = kernels.get(getattr(node.args[0], "value", ""))
        if kernel is None:
            return
        stored, vector = _stored_data(kernel), vector_accessed_buffers(kernel)
        for param, arg in zip(kernel.params, node.args[8:]):
            buf = kernel.buffer_of(param)
            if buf is None or not isinstance(arg, Var):
                continue
            if buf.data in stored:
                written.add(arg)
            if buf.data in vector:
                vectored.add(arg)

    post_order_visit(host.body, visit)  # type: ignore[arg-type]
    params = []
    for var, spec in zip(host.params, sig.params):
        buf = host.buffer_of(var)
        keys = {var} if buf is None else {var, buf.data}
        params.append(
            dataclasses.replace(
                spec,
                written=spec.written or bool(keys & written),
                align=VECTOR_ALIGN if keys & vectored else spec.align,
            )
        )
    return dataclasses.replace(sig, params=tuple(params))


def _stored_data(func: PrimFunc) -> set[Var]:
    found: set[Var] = set()

    def visit(node: object) -> None:
        if isinstance(node, BufferStore):
            found.add(node.buffer.data)

    post_order_visit(func.body, visit)  # type: ignore[arg-type]
    return found


def _param_types(source: DeviceSource) -> dict[str, list[str | None]]:
    out: dict[str, list[str | None]] = {}
    for name, func in source.kernels.items():
        out[name] = [None if func.buffer_of(v) is not None else str(v.dtype) for v in func.params]
    return out


def build_gpu_module(
    lowered: IRModule, target: Target | str, name: str = "main", compiler: str = "auto"
) -> GPUModule:
    """Generate, compile and wrap a module lowered for a GPU target.

    Arguments:
        lowered: host functions (calling ``tw.launch_kernel``) and device functions
            (``tir.is_kernel``), as ``lower_module(mod, kind)`` returns them for a GPU kind.
        target: a cuda, opencl or metal target (or its spelling).
        name: a label for dumps (``config.dump_dir/<name>.source.<ext>``).
        compiler: for CUDA, ``"nvrtc"``, ``"nvcc"`` or ``"auto"``.

    Example::

        >>> rt_mod = build_gpu_module(lowered, "cuda")
        >>> print(rt_mod.imported_modules[0].get_source())
    """
    resolved = Target(target)
    kind = str(resolved.kind)
    start = time.perf_counter()
    source = generate_device_source(lowered, kind)
    generated = time.perf_counter()
    dump_dir = config.get().dump_dir
    if dump_dir is not None:
        Path(dump_dir).mkdir(parents=True, exist_ok=True)
        atomic_write(Path(dump_dir) / f"{name}.source.{_SUFFIX[kind]}", source.text)
    hosts = {n: f for n, f in lowered.items() if not f.attr("tir.is_kernel", False)}
    types = _param_types(source)
    device_module: Module
    if kind == "cuda":
        from tilewright.runtime.cuda_runtime import driver
        from tilewright.runtime.cuda_runtime.module import CUDAModule
        from tilewright.runtime.cuda_runtime.nvrtc import compile_cuda

        arch = driver.device_arch(0) or resolved.arch or "sm_90"
        cubin = compile_cuda(source.text, arch, list(source.kernels), compiler)
        device_module = CUDAModule(source.text, cubin, arch, types)
        device_module.dyn_shared_bytes = dict(source.dyn_shared_bytes)
    elif kind == "opencl":
        from tilewright.runtime.opencl_runtime import OpenCLModule

        device_module = OpenCLModule(source.text, types)
    else:
        device_module = SourceModule(source.text, kind)
    # An extra attribute on whichever module class; GPUModule reads it back with getattr.
    device_module.kernels = source.kernels  # type: ignore[union-attr]
    module = GPUModule(hosts, device_module, resolved.spelling)
    module.build_times = {
        "codegen": generated - start,
        "compile": time.perf_counter() - generated,
    }
    return module


def generate_device_source(lowered: IRModule, kind: str) -> DeviceSource:
    """The device code of a lowered module in the language of target kind ``kind``.

    Example::

        >>> print(generate_device_source(lowered, "opencl").text)
    """
    if kind == "cuda":
        from tilewright.codegen.cuda import generate_cuda

        return generate_cuda(lowered)
    if kind == "opencl":
        from tilewright.codegen.opencl import generate_opencl

        return generate_opencl(lowered)
    if kind == "metal":
        from tilewright.codegen.metal import generate_metal

        return generate_metal(lowered)
    raise ValueError(f"{kind!r} is not a GPU target kind (cuda, opencl, metal)")
