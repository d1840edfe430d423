"""Tensor-map kernel parameters at launch: a kernel that takes a TMA map by value
(``KernelInfo.tensor_maps``) gets, in its argument array, 128 bytes encoded on the host by
``cuTensorMapEncodeTiled`` from the array the caller passed (its device address, shape and
strides) and the map's dtype, box and swizzle.

``TensorMapCache`` encodes each distinct (address, dtype, shape, strides, box, swizzle) once
and keeps the bytes; ``map_storage`` is the 64-byte aligned storage a kernel argument points
at. The hardware's rules (``TensorMapSpec``) are checked before the driver is called, so a
box the tensor cannot take is refused, naming the kernel and the buffer, before anything
runs.

Example::

    >>> maps = TensorMapCache()
    >>> arg = maps.argument(TensorMapParam(2, "A", "float16", (128, 64), 128), a, "main_kernel")
    >>> ctypes.addressof(arg) % 64, len(bytes(arg))
    (0, 128)
"""

from __future__ import annotations

import ctypes
import threading
from collections import OrderedDict
from collections.abc import Hashable
from typing import Any

from tilewright.artifact import TensorMapParam
from tilewright.runtime.cuda_runtime import tensor_map
from tilewright.runtime.cuda_runtime.tensor_map import TENSOR_MAP_BYTES, TensorMapError
from tilewright.runtime.ndarray import NDArray

MAP_ALIGN = 64  # the alignment CUDA gives a tensor map (CUtensorMap is alignas(64))

MapStorage = ctypes.Array  # 128 unsigned bytes at a 64-byte aligned address


def map_storage(raw: bytes = b"") -> MapStorage:
    """128 bytes at a ``MAP_ALIGN``-aligned address (the ctypes array keeps its memory
    alive), holding ``raw`` when given.

    Example: ``ctypes.addressof(map_storage()) % 64`` is 0.
    """
    backing = (ctypes.c_ubyte * (TENSOR_MAP_BYTES + MAP_ALIGN))()
    offset = -ctypes.addressof(backing) % MAP_ALIGN
    out = (ctypes.c_ubyte * TENSOR_MAP_BYTES).from_buffer(backing, offset)
    if raw:
        fill(out, raw)
    return out


def fill(storage: MapStorage, raw: bytes) -> None:
    """Copy a 128-byte encoded map into ``storage``."""
    if len(raw) != TENSOR_MAP_BYTES:
        raise ValueError(f"a tensor map is {TENSOR_MAP_BYTES} bytes, not {len(raw)}")
    ctypes.memmove(storage, raw, TENSOR_MAP_BYTES)


def array_layout(value: object) -> tuple[int, tuple[int, ...], tuple[int, ...]]:
    """The device address, shape and strides (in elements) of a CUDA array argument: a torch
    tensor, a tilewright ``NDArray`` (compact) or an object exporting
    ``__cuda_array_interface__``.

    Example: ``array_layout(torch.empty(4, 8, device="cuda"))`` is ``(ptr, (4, 8), (8, 1))``.
    """
    if isinstance(value, NDArray):
        return int(value.buffer.ptr), value.shape, _compact(value.shape)  # type: ignore[attr-defined]
    array: Any = value
    if type(value).__module__.startswith("torch") and hasattr(value, "data_ptr"):
        return int(array.data_ptr()), tuple(array.shape), tuple(array.stride())
    if hasattr(value, "__cuda_array_interface__"):
        info = array.__cuda_array_interface__
        shape = tuple(int(s) for s in info["shape"])
        strides = info.get("strides")
        if strides is None:
            return int(info["data"][0]), shape, _compact(shape)
        import numpy as np

        item = np.dtype(info["typestr"]).itemsize
        return int(info["data"][0]), shape, tuple(int(s) // item for s in strides)
    raise TypeError(f"cannot describe a {type(value).__name__} with a tensor map")


def _compact(shape: tuple[int, ...]) -> tuple[int, ...]:
    out, step = [], 1
    for extent in reversed(shape):
        out.append(step)
        step *= extent
    return tuple(reversed(out))


class TensorMapCache:
    """Encoded tensor maps by (address, dtype, shape, strides, box, swizzle), at most
    ``limit`` of them (the least recently used is dropped).

    Example::

        >>> maps = TensorMapCache()
        >>> raw = maps.encode(param, a, "main_kernel")    # the driver called once
        >>> maps.encode(param, a, "main_kernel") is raw   # then looked up
        True
    """

    def __init__(self, limit: int = 256) -> None:
        self.limit = limit
        self.entries: OrderedDict[Hashable, bytes] = OrderedDict()
        self.lock = threading.Lock()

    def encode(self, param: TensorMapParam, value: object, kernel: str) -> bytes:
        """The 128 bytes of ``param``'s map of ``value`` (raises ``TensorMapError`` naming
        ``kernel`` and the buffer when the hardware cannot describe it)."""
        address, shape, strides = array_layout(value)
        key = (address, param.dtype, shape, strides, param.box, param.swizzle)
        with self.lock:
            raw = self.entries.get(key)
            if raw is not None:
                self.entries.move_to_end(key)
                return raw
        where = f"kernel {kernel}: the tensor map of argument {param.param}"
        try:
            spec = tensor_map.TensorMapSpec(param.dtype, shape, param.box, param.swizzle, strides)
        except TensorMapError as err:
            message = str(err).removeprefix("tensor map: ")
            raise TensorMapError(
                f"{where} (shape {shape}, box {param.box}, swizzle {param.swizzle}): {message}"
            ) from None
        if address % 16:
            raise TensorMapError(
                f"{where}: the array starts at {address:#x}, not a multiple of 16 bytes (TMA "
                "reads from 16-byte aligned addresses)"
            )
        raw = tensor_map.encode_tiled(spec, address)
        with self.lock:
            self.entries[key] = raw
            while len(self.entries) > self.limit:
                self.entries.popitem(last=False)
        return raw

    def argument(self, param: TensorMapParam, value: object, kernel: str) -> MapStorage:
        """Aligned storage holding ``param``'s map of ``value``: a kernel argument."""
        return map_storage(self.encode(param, value, kernel))
