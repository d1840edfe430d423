"""Argument descriptions + a seed → random numpy arrays to run a candidate on.

Floats are uniform in [0.5, 1.5) and integers small and positive, so no value is zero (a
candidate that forgets to initialise an accumulator or reads the wrong element still
differs from the reference) and sums of products stay well inside float16's range.
The same seed gives the same arrays in every process: the runner's check and the
reference file agree on them.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from tilewright.meta_schedule.arg_info import TensorInfo
from tilewright.runtime.device import device
from tilewright.runtime.ndarray import numpy_dtype

# Used when the cache size cannot be read: larger than the last-level cache of most CPUs.
DEFAULT_CPU_CACHE_BYTES = 32 * 1024 * 1024
# A GPU's L2 (the H200 has 60 MB), rounded up.
GPU_CACHE_BYTES = 64 * 1024 * 1024
# The most argument sets a measurement rotates through.
MAX_ARGUMENT_SETS = 32


def random_arguments(args_info: Sequence[TensorInfo], seed: int) -> list[np.ndarray]:
    """One array per argument, drawn from ``seed``.

    Example::

        >>> a, = random_arguments([TensorInfo("float16", (2, 2))], seed=0)
        >>> a.dtype, bool((a >= 0.5).all() and (a < 1.5).all())
        (dtype('float16'), True)
    """
    rng = np.random.default_rng(seed)
    arrays = []
    for info in args_info:
        dtype = numpy_dtype(info.dtype)
        if dtype == np.bool_:
            values = np.ones(info.shape, dtype=dtype)
        elif np.issubdtype(dtype, np.integer):
            values = rng.integers(1, 4, size=info.shape).astype(dtype)
        else:  # float16/32/64 and ml_dtypes' bfloat16
            values = rng.uniform(0.5, 1.5, size=info.shape).astype(dtype)
        arrays.append(np.ascontiguousarray(values))
    return arrays


def save_arguments(file: object, arrays: Sequence[np.ndarray]) -> None:
    """Write ``arrays`` to an ``.npz`` (``arg0``, ``arg1``, ...). A dtype numpy's format
    does not know (ml_dtypes' ``bfloat16``, the float8 types) is saved as its raw bits with
    its name beside (``dtype1``), so that ``load_arguments`` gives it back as it was.

    Example::

        >>> save_arguments(path, [np.ones(2, ml_dtypes.bfloat16)])
        >>> load_arguments(path, 1)[0].dtype
        dtype(bfloat16)
    """
    entries: dict[str, np.ndarray] = {}
    for i, array in enumerate(arrays):
        if array.dtype.kind == "V" or array.dtype.name not in np.sctypeDict:
            entries[f"dtype{i}"] = np.array(str(array.dtype))
            array = array.view(f"u{array.dtype.itemsize}")
        entries[f"arg{i}"] = array
    np.savez(file, **entries)  # type: ignore[arg-type]


def load_arguments(path: str, count: int) -> list[np.ndarray]:
    """The ``count`` arrays ``save_arguments`` wrote to ``path``, in their own dtypes."""
    arrays = []
    with np.load(path) as saved:
        for i in range(count):
            array = saved[f"arg{i}"]
            if f"dtype{i}" in saved:
                array = array.view(numpy_dtype(str(saved[f"dtype{i}"])))
            arrays.append(array)
    return arrays


def argument_bytes(args_info: Sequence[TensorInfo]) -> int:
    """The bytes of one set of arguments."""
    return sum(
        int(np.prod(info.shape, dtype=np.int64)) * numpy_dtype(info.dtype).itemsize
        for info in args_info
    )


def last_level_cache_bytes(sysfs: str = "/sys/devices/system/cpu/cpu0/cache") -> int:
    """The size of the CPU's last-level cache, from sysfs (``DEFAULT_CPU_CACHE_BYTES``
    where it cannot be read)."""
    best_level, best_size = -1, 0
    try:
        for entry in Path(sysfs).glob("index*"):
            level = int((entry / "level").read_text())
            size = _parse_size((entry / "size").read_text().strip())
            if level > best_level or (level == best_level and size > best_size):
                best_level, best_size = level, size
    except (OSError, ValueError):
        return DEFAULT_CPU_CACHE_BYTES
    return best_size or DEFAULT_CPU_CACHE_BYTES


def _parse_size(text: str) -> int:
    units = {"K": 1024, "M": 1024**2, "G": 1024**3}
    if text and text[-1].upper() in units:
        return int(text[:-1]) * units[text[-1].upper()]
    return int(text)


def rotation_sets(args_info: Sequence[TensorInfo], device_type: str) -> int:
    """How many argument sets to cycle through so that together they exceed twice the
    device's last-level cache: then no call finds its inputs left in cache by the one
    before (at most ``MAX_ARGUMENT_SETS``).

    Example: a 1024² float32 matmul (12 MB a set) on a GPU rotates through 11 sets.
    """
    cache = last_level_cache_bytes() if device(device_type).is_host else GPU_CACHE_BYTES
    per_set = max(1, argument_bytes(args_info))
    return max(1, min(MAX_ARGUMENT_SETS, -(-2 * cache // per_set)))
