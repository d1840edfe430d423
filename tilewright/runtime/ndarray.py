"""``NDArray``: an n-dimensional array on a device, exchanged with numpy and DLPack."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from tilewright.ir.dtype import FLOAT8_CODES, numpy_scalar_type
from tilewright.runtime.device import Device, cpu, device


def numpy_dtype(dtype: str | np.dtype) -> np.dtype:
    """The numpy dtype for a tilewright dtype name (bfloat16 through ml_dtypes).

    Example::

        >>> numpy_dtype("float16")
        dtype('float16')
    """
    if isinstance(dtype, np.dtype):
        return dtype
    if dtype == "bool":
        return np.dtype(np.bool_)
    if dtype == "bfloat16" or dtype in FLOAT8_CODES:
        return np.dtype(numpy_scalar_type(dtype))
    try:
        return np.dtype(dtype)
    except TypeError:
        raise ValueError(f"unknown dtype {dtype!r}") from None


def dtype_name(dtype: np.dtype) -> str:
    """The tilewright name of a numpy dtype (``bool``, ``float16``, ``bfloat16``, ...)."""
    return "bool" if dtype == np.bool_ else str(dtype)


class NDArray:
    """An array on a device. On the CPU it owns a C-contiguous numpy array.

    Example::

        >>> a = tw.nd.array(np.arange(4, dtype="float32"))
        >>> a.shape, a.dtype, a.device
        ((4,), 'float32', cpu(0))
        >>> a.numpy()
        array([0., 1., 2., 3.], dtype=float32)
    """

    __slots__ = ("_buffer", "_device", "_dtype", "_host", "_shape")

    def __init__(self, host: np.ndarray, dev: Device | None = None) -> None:
        self._host: np.ndarray | None = host
        self._device = dev or cpu(0)
        self._shape = tuple(int(s) for s in host.shape)
        self._dtype = dtype_name(host.dtype)
        self._buffer: object = None

    @classmethod
    def from_device_buffer(
        cls, buffer: object, shape: Sequence[int], dtype: str, dev: Device
    ) -> NDArray:
        """An array in device memory owned by ``buffer`` (for device runtimes).

        Example::

            >>> NDArray.from_device_buffer(allocation, (4,), "float32", tw.cuda(0))
        """
        out = cls.__new__(cls)
        out._host = None
        out._device = dev
        out._shape = tuple(int(s) for s in shape)
        out._dtype = dtype
        out._buffer = buffer
        return out

    @property
    def shape(self) -> tuple[int, ...]:
        return self._shape

    @property
    def dtype(self) -> str:
        return self._dtype

    @property
    def device(self) -> Device:
        return self._device

    @property
    def ndim(self) -> int:
        return len(self._shape)

    @property
    def buffer(self) -> object:
        """The device allocation of a non-CPU array (``None`` on the CPU)."""
        return self._buffer

    def host_array(self) -> np.ndarray:
        """The numpy array this CPU array owns (no copy)."""
        if self._host is None:
            raise RuntimeError(
                f"array on {self._device} has no host memory; copy it to the CPU first"
            )
        return self._host

    def numpy(self) -> np.ndarray:
        """A numpy copy of the contents (copied back from the device for a device array).

        Example::

            >>> tw.nd.array(np.ones(2)).numpy()
            array([1., 1.])
        """
        if self._host is None and hasattr(self._buffer, "copy_to_host"):
            out = np.empty(self._shape, dtype=numpy_dtype(self._dtype))
            self._buffer.copy_to_host(out)
            return out
        return self.host_array().copy()

    asnumpy = numpy

    def copyfrom(self, source: NDArray | np.ndarray | Sequence) -> NDArray:
        """Overwrite the contents with ``source`` (same shape, converted to this dtype).

        Example::

            >>> a = tw.nd.empty((2,), "float32")
            >>> a.copyfrom(np.array([1, 2], "float32"))
        """
        values = source.numpy() if isinstance(source, NDArray) else np.asarray(source)
        if tuple(values.shape) != self._shape:
            raise ValueError(f"copyfrom: shape {tuple(values.shape)} differs from {self._shape}")
        if self._host is None and hasattr(self._buffer, "copy_from_host"):
            converted = np.ascontiguousarray(values, dtype=numpy_dtype(self._dtype))
            self._buffer.copy_from_host(converted)
            return self
        self.host_array()[...] = values.astype(self.host_array().dtype, copy=False)
        return self

    def copyto(self, target: NDArray | Device) -> NDArray:
        """Copy into ``target`` (an array, or a new array on the given device)."""
        if isinstance(target, Device):
            return array(self, target)
        return target.copyfrom(self)

    @property
    def __cuda_array_interface__(self) -> dict[str, object]:
        """The CUDA array interface of an array on a CUDA device (torch and cupy read it)."""
        info, buffer = self._device.kind_info, self._buffer
        # A CUDA allocation has a device pointer; a CPU array has no buffer (None).
        if info is None or not info.cuda_pointers or not hasattr(buffer, "ptr"):
            raise AttributeError("only arrays on a CUDA device have __cuda_array_interface__")
        return {
            "shape": self._shape,
            "typestr": numpy_dtype(self._dtype).str,
            "data": (buffer.ptr, False),
            "strides": None,
            "version": 3,
        }

    def __dlpack__(self, **kwargs: Any) -> object:
        return self.host_array().__dlpack__(**kwargs)

    def __dlpack_device__(self) -> tuple[int, int]:
        return (self._device.device_type, self._device.device_id)

    def __array__(self, dtype: Any = None, copy: object = None) -> np.ndarray:
        host = self.host_array()
        return host if dtype is None else host.astype(dtype)

    def __repr__(self) -> str:
        body = repr(self._host) if self._host is not None else f"shape={self._shape}"
        return f"<tilewright.nd.NDArray {self._dtype} on {self._device}: {body}>"


def array(
    data: object,
    dev: Device | None = None,
    *,
    device: Device | None = None,
    dtype: str | None = None,
) -> NDArray:
    """A new array holding a copy of ``data`` (numpy array, NDArray, DLPack tensor, list).

    Arguments:
        data: the values.
        dev: where the array lives (``device=`` is accepted too); the CPU by default.
        dtype: convert to this dtype; ``data``'s dtype by default.

    Example::

        >>> tw.nd.array(np.zeros((2, 3), "float32"), tw.cpu(0)).shape
        (2, 3)
    """
    target = dev or device or cpu(0)
    values = _to_numpy(data)
    if dtype is not None:
        values = values.astype(numpy_dtype(dtype))
    if not target.is_host:
        host = np.ascontiguousarray(values)
        buffer = target.allocator()(host.nbytes, target.device_id)
        buffer.copy_from_host(host)
        return NDArray.from_device_buffer(buffer, host.shape, dtype_name(host.dtype), target)
    return NDArray(np.array(values, order="C", copy=True), target)


def empty(shape: Sequence[int] | int, dtype: str = "float32", dev: Device | None = None) -> NDArray:
    """A new array of uninitialized values.

    Example::

        >>> tw.nd.empty((4, 4), "float16").dtype
        'float16'
    """
    dims = (shape,) if isinstance(shape, int) else tuple(shape)
    target = dev or cpu(0)
    if not target.is_host:
        nbytes = int(np.prod(dims, dtype=np.int64)) * numpy_dtype(dtype).itemsize
        buffer = target.allocator()(nbytes, target.device_id)
        return NDArray.from_device_buffer(buffer, dims, dtype, target)
    return NDArray(np.empty(dims, dtype=numpy_dtype(dtype)), target)


def from_dlpack(tensor: object) -> NDArray:
    """A CPU array sharing memory with a DLPack tensor (no copy when it is contiguous).

    Example::

        >>> tw.nd.from_dlpack(np.arange(3))
    """
    values = _to_numpy(tensor)
    return NDArray(np.ascontiguousarray(values), cpu(0))


def _to_numpy(data: object) -> np.ndarray:
    if isinstance(data, NDArray):
        return data.host_array() if data.device.is_host else data.numpy()
    if isinstance(data, np.ndarray):
        return data
    if hasattr(data, "__dlpack_device__") and hasattr(data, "__dlpack__"):
        code, index = data.__dlpack_device__()
        where = device(int(code), int(index))
        if not where.is_host:
            raise ValueError(f"cannot read a tensor on {where} without a {where.kind} runtime")
        return np.from_dlpack(data)
    return np.asarray(data)
