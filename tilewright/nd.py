"""``tw.nd``: create arrays on a device from numpy arrays, DLPack tensors or shapes."""

from tilewright.runtime.ndarray import NDArray, array, empty, from_dlpack, numpy_dtype

__all__ = ["NDArray", "array", "empty", "from_dlpack", "numpy_dtype"]
