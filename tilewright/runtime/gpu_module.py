"""A GPU ``Artifact`` → ``GPUModule``: host launch plans over a device module of kernels.

``GPUModule`` functions check their arguments, evaluate the host plan's launch dimensions
and launch each kernel through the device module (``CUDAModule``, ``OpenCLModule``, or a
``DeviceSourceModule`` that only holds the text). ``rt_mod.imported_modules[0]`` is the
device module; its ``get_source()`` is the kernel code.
"""

from __future__ import annotations

import time
from abc import abstractmethod
from collections.abc import Callable, Sequence
from typing import Protocol

from tilewright.artifact import Artifact, FuncSignature, HostPlan, KernelInfo, Launch
from tilewright.runtime.device import Device, device
from tilewright.runtime.module import Module, PackedFunc
from tilewright.runtime.time_evaluator import ProfileResult, time_evaluator


class DeviceModule(Module):
    """The kernels of a GPU module on one device: what ``GPUModule`` launches through.

    Arguments:
        artifact: the built module (its ``kernels`` give each kernel's parameter types).
        dev: the device the kernels run on.
    """

    type_key = "device"

    def __init__(self, artifact: Artifact, dev: Device) -> None:
        super().__init__(artifact.source, artifact.kind)
        self.artifact = artifact
        self.device = dev
        self.kernels: dict[str, KernelInfo] = dict(artifact.kernels)

    @abstractmethod
    def prepare(self) -> None:
        """Raise, with the reason, unless the kernels can run here now."""

    @abstractmethod
    def runner(self, launches: Sequence[Launch], values: Sequence[object]) -> Callable[[], None]:
        """A function running ``launches`` on checked argument ``values``."""

    def call_cache(self, sig: FuncSignature) -> CallCache | None:
        """Where repeated calls of ``sig`` can skip the checks (None: every call is checked)."""
        return None

    def measure(self, run: Callable[[], None], count: int) -> float:
        """Seconds for ``count`` calls of ``run`` (the host's clock, the device drained at the
        end; a device with its own clock overrides this)."""
        start = time.perf_counter()
        for _ in range(count):
            run()
        self.device.sync()
        return time.perf_counter() - start


class DeviceSourceModule(DeviceModule):
    """Kernel source that nothing here can run (Metal; a GPU module built elsewhere)."""

    type_key = "source"

    def prepare(self) -> None:
        raise RuntimeError(
            f"{self.format} kernels cannot run here: this module holds their source only (no "
            "compiler or runtime for them was found when it was built; for CUDA, pip install "
            "'tilewright[cuda]'); rt_mod.imported_modules[0].get_source() is the source"
        )

    def runner(self, launches: Sequence[Launch], values: Sequence[object]) -> Callable[[], None]:
        self.prepare()
        raise AssertionError("unreachable: prepare raised")


class CallCache(Protocol):
    """Launches remembered from checked calls (``cuda_runtime.launch_cache.LaunchCache``)."""

    def launch(self, args: Sequence[object]) -> bool: ...
    def remember(self, args: Sequence[object], run: object) -> None: ...


class DeviceFunc(PackedFunc):
    """A host function of a GPU module: checks that the device runtime is there, then the
    arguments, then launches the kernels in order.

    A call whose arguments match an earlier call's kinds, dtypes, shapes, strides and scalar
    values (the device module's ``call_cache``) launches the remembered kernels directly.
    """

    def __init__(self, sig: FuncSignature, plan: HostPlan, device_module: DeviceModule) -> None:
        self.plan = plan
        self.device_module = device_module
        super().__init__(sig, device_module.device, self._launcher)
        self._cache: CallCache | None = None
        self._cache_made = False

    def __call__(self, *args: object) -> None:
        if not self._cache_made:
            self.device_module.prepare()
            self._cache = self.device_module.call_cache(self.signature)
            self._cache_made = True
        cache = self._cache
        if cache is not None and cache.launch(args):
            return
        run = self.bind(*args)
        run()
        if cache is not None:
            cache.remember(args, run)

    def bind(self, *args: object) -> Callable[[], None]:
        self.device_module.prepare()
        return super().bind(*args)

    def _launcher(self, values: list[object]) -> Callable[[], None]:
        return self.device_module.runner(self.plan.launches(values), values)


class GPUModule(Module):
    """Host functions (launch plans evaluated in Python) over one device module.

    Example::

        >>> rt_mod = tw.build(sch.mod, target="cuda")
        >>> rt_mod["main"](a, b)                       # arrays on tw.cuda(0), or torch tensors
        >>> print(rt_mod.imported_modules[0].get_source())
    """

    type_key = "gpu"

    def __init__(self, artifact: Artifact, device_module: DeviceModule) -> None:
        super().__init__("", "gpu", [device_module])
        self.artifact = artifact
        self.target = artifact.target
        self.signatures = {sig.name: sig for sig in artifact.functions}
        self.plans = {plan.name: plan for plan in artifact.host_plans}
        self._functions: dict[str, DeviceFunc] = {}

    @property
    def device_module(self) -> DeviceModule:
        module = self.imported_modules[0]
        assert isinstance(module, DeviceModule)  # the constructor put it there
        return module

    def get_source(self, fmt: str = "") -> str:
        """The device source (the host side is a launch plan, it has no source)."""
        return self.imported_modules[0].get_source(fmt)

    def function_names(self) -> list[str]:
        return list(self.signatures)

    def get_function(self, name: str) -> PackedFunc:
        if name not in self.signatures:
            known = ", ".join(self.signatures) or "none"
            raise AttributeError(f"module has no function {name!r} (functions: {known})")
        if name not in self._functions:
            self._functions[name] = DeviceFunc(
                self.signatures[name], self.plans[name], self.device_module
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
        bind = self.get_function(func_name).bind
        return time_evaluator(bind, dev, number, repeat, min_repeat_ms, self.device_module.measure)

    def __repr__(self) -> str:
        return f"<GPUModule {', '.join(self.signatures)} on {self.imported_modules[0].format}>"


def load_gpu_module(artifact: Artifact, device_module: type[DeviceModule]) -> GPUModule:
    """A ``GPUModule`` over ``device_module`` built from ``artifact``.

    Example: ``load_gpu_module(art, CUDAModule)["main"](a, b)``.
    """
    return GPUModule(artifact, device_module(artifact, device(artifact.device, 0)))
