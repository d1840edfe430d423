"""``LaunchCache``: a CUDA function called again with arguments like an earlier call's.

A checked call (``check_arguments``, the host plan, the launches' argument packing) costs
tens of microseconds in Python, as much as a short kernel runs. What the checks and the
plan decide depends only on each argument's kind, dtype, device, shape and strides and on
the scalar values. So after a checked call succeeds, its launches are kept under that key
with the buffer pointers left as slots; a later call with the same key fills in the new
pointers (checking their alignment) and launches through ``RawLauncher``. Any other call
takes the checked path, which raises the usual errors.

A kernel's tensor-map parameters (``KernelInfo.tensor_maps``) are slots too: a cached
launch encodes the maps of the new arrays (``TensorMapCache``: once per address) and copies
them in.

Only torch CUDA tensors, tilewright ``NDArray`` and Python scalars make a key; other
arguments (cupy, objects exporting ``__cuda_array_interface__``) always take the checked
path. Kernels with bounds checks never use the cache (each call reads the error record).

Example::

    >>> f = rt_mod["main"]      # a DeviceFunc of a CUDA module
    >>> f(a, b)                 # checked, then remembered
    >>> f(a2, b2)               # same shapes and dtypes: launched from the cache
"""

from __future__ import annotations

import ctypes
import sys
import threading
from collections import OrderedDict
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

from tilewright.artifact import TENSOR_MAP, FuncSignature, KernelInfo, TensorMapParam
from tilewright.runtime.cuda_runtime.driver import KernelArgs, RawLauncher
from tilewright.runtime.cuda_runtime.tensor_map_args import (
    MapStorage,
    TensorMapCache,
    fill,
    map_storage,
)
from tilewright.runtime.module import Runner
from tilewright.runtime.ndarray import NDArray

# A tensor map the cached launch encodes again for the new pointer: (its storage in the
# packed arguments, the function parameter it describes, its record).
MapSlot = tuple[MapStorage, int, TensorMapParam]
# (kernel handle, kernel name, grid, block, dynamic shared bytes, packed arguments,
#  [(pointer slot, parameter index)], [map slot])
Step = tuple[
    int, str, tuple[int, ...], tuple[int, ...], int, KernelArgs, list[tuple[Any, int]],
    list[MapSlot],
]  # fmt: skip


class CUDARunner(Runner):
    """A bound CUDA call; ``steps`` are its launches as ``(function, launch, packed args)``."""

    __slots__ = ("steps",)

    def __init__(self, run: Any, arguments: Sequence[object], stream: int, steps: list) -> None:
        super().__init__(run, arguments, stream)
        self.steps = steps


class LaunchCache:
    """Launches of earlier checked calls, keyed by what the checks depended on.

    Arguments:
        sig: the function's signature (which parameters are buffers, their alignment).
        launcher: the raw launcher of the function's device.
        limit: how many argument keys to keep (the oldest is dropped).
        kernels: the module's kernels (which of their parameters are tensor maps).
        maps: the encoded tensor maps (shared with the checked path).
    """

    def __init__(
        self,
        sig: FuncSignature,
        launcher: RawLauncher,
        limit: int = 16,
        *,
        kernels: Mapping[str, KernelInfo] | None = None,
        maps: TensorMapCache | None = None,
    ) -> None:
        self.arity = len(sig.params)
        self.buffers = [(i, max(1, p.align)) for i, p in enumerate(sig.params) if p.is_buffer]
        self.kernels = dict(kernels or {})
        self.maps = maps if maps is not None else TensorMapCache()
        self.launcher = launcher
        self.limit = limit
        self.entries: OrderedDict[Hashable, list[Step]] = OrderedDict()
        self.lock = threading.Lock()

    def launch(self, args: Sequence[object]) -> bool:
        """Launch from the cache and return True, or return False (take the checked path)."""
        key = self.key(args)
        steps = self.entries.get(key) if key is not None else None
        if steps is None:
            return False
        pointers: dict[int, int] = {}
        for i, align in self.buffers:
            address = _address(args[i])
            if address % align:
                return False  # the checked path names the misaligned argument
            pointers[i] = address
        # The maps of the new arrays (encoded once per address, then looked up).
        encoded = [
            [(storage, self.maps.encode(param, args[i], name)) for storage, i, param in maps]
            for _, name, _, _, _, _, _, maps in steps
        ]
        stream = _stream(args)
        launcher = self.launcher
        with self.lock:  # the slots are shared: fill and launch as one
            launcher.activate()
            for step, step_maps in zip(steps, encoded):
                function, name, grid, block, shared, packed, slots, _ = step
                for slot, index in slots:
                    slot.value = pointers[index]
                for storage, raw in step_maps:
                    fill(storage, raw)
                launcher.launch(function, name, grid, block, shared, stream, packed)
        return True

    def remember(self, args: Sequence[object], run: object) -> None:
        """Keep the launches of ``run``, a checked call of ``args`` that just succeeded."""
        key = self.key(args)
        if key is None or not isinstance(run, CUDARunner):
            return
        buffers = {id(run.arguments[i]): i for i, _ in self.buffers}
        steps: list[Step] = []
        for function, item, packed_before in run.steps:
            if min(*item.grid, *item.block) <= 0:
                continue  # an empty grid runs nothing
            values: list[ctypes._SimpleCData | ctypes.Array] = []
            slots: list[tuple[Any, int]] = []
            map_slots: list[MapSlot] = []
            info = self.kernels.get(item.kernel)
            kinds = info.params if info is not None else (None,) * len(item.args)
            records = {m.index: m for m in info.tensor_maps} if info is not None else {}
            for position, (value, old, kind) in enumerate(
                zip(item.args, packed_before.values, kinds)
            ):
                if kind == TENSOR_MAP:
                    if id(value) not in buffers:
                        return  # a map of something the key does not describe
                    storage = map_storage(bytes(old))
                    map_slots.append((storage, buffers[id(value)], records[position]))
                    values.append(storage)
                elif id(value) in buffers:
                    slot = ctypes.c_void_p(0)
                    slots.append((slot, buffers[id(value)]))
                    values.append(slot)
                elif isinstance(value, int | float | bool):
                    values.append(old)  # fixed by the key: scalars and sizes
                else:
                    return  # a value the key does not fix: no cache for these arguments
            handle = int(function)
            packed = KernelArgs(values)
            steps.append((handle, item.kernel, item.grid, item.block, item.dyn_shared_bytes,
                          packed, slots, map_slots))  # fmt: skip
        with self.lock:
            self.entries[key] = steps
            while len(self.entries) > self.limit:
                self.entries.popitem(last=False)

    def key(self, args: Sequence[object]) -> Hashable | None:
        """What the checked path's decisions depend on, or None for arguments it can't key."""
        if len(args) != self.arity:
            return None
        torch = sys.modules.get("torch")
        parts: list[Hashable] = []
        for arg in args:
            kind = type(arg)
            if kind is int or kind is float or kind is bool:
                parts.append((kind, arg))
            elif torch is not None and isinstance(arg, torch.Tensor):
                parts.append((arg.dtype, arg.device, arg.shape, arg.stride()))
            elif isinstance(arg, NDArray):
                parts.append((NDArray, arg.device, arg.dtype, arg.shape))
            else:
                return None
        return tuple(parts)


def _address(arg: object) -> int:
    if isinstance(arg, NDArray):
        return int(arg.buffer.ptr)  # type: ignore[attr-defined]  # keyed on a CUDA device
    return int(arg.data_ptr())  # type: ignore[attr-defined]  # a torch tensor


def _stream(args: Sequence[object]) -> int:
    """The current stream of the first torch tensor's device, else the default stream."""
    torch = sys.modules.get("torch")
    if torch is not None:
        for arg in args:
            if isinstance(arg, torch.Tensor):
                return torch_stream(arg)
    return 0


def torch_stream(tensor: Any) -> int:
    """torch's current stream on ``tensor``'s device, as a raw handle."""
    torch: Any = sys.modules["torch"]
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if raw is not None:
        return int(raw(tensor.get_device()))
    return int(torch.cuda.current_stream(tensor.device).cuda_stream)
