"""TMA tensor maps: the 128-byte descriptor of a global tile that ``cp.async.bulk.tensor``
copies (``tw.cuda.tma_load`` / ``tma_store``), encoded on the host by the driver's
``cuTensorMapEncodeTiled``.

``TensorMapSpec`` is the description, checked against the hardware's rules before any driver
call (box at most 256 elements a dimension, its innermost row a multiple of 16 bytes and, with
a swizzle, at most the swizzle's width; strides multiples of 16 bytes); ``encode_tiled``
returns the descriptor's bytes for a device pointer. A kernel may read the descriptor from
global memory (``tensor_map_array`` copies it there) or take it by value as a
``__grid_constant__`` parameter (``tw.cuda.tensor_map``; ``tensor_map_args.py`` encodes
those at launch).

Example::

    spec = TensorMapSpec("float16", shape=(4096, 4096), box=(64, 64), swizzle=128)
    raw = encode_tiled(spec, a.data_ptr())        # 128 bytes
    tmap = tensor_map_array(spec, a.data_ptr())   # a uint8 device array holding them
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

TENSOR_MAP_BYTES = 128
SWIZZLES = (0, 32, 64, 128)  # bytes; 0: none
_DTYPES = {  # dtype → (CUtensorMapDataType member, bytes)
    "uint8": ("CU_TENSOR_MAP_DATA_TYPE_UINT8", 1),
    "int8": ("CU_TENSOR_MAP_DATA_TYPE_UINT8", 1),
    "float8_e4m3fn": ("CU_TENSOR_MAP_DATA_TYPE_UINT8", 1),
    "float8_e5m2": ("CU_TENSOR_MAP_DATA_TYPE_UINT8", 1),
    "uint16": ("CU_TENSOR_MAP_DATA_TYPE_UINT16", 2),
    "float16": ("CU_TENSOR_MAP_DATA_TYPE_FLOAT16", 2),
    "bfloat16": ("CU_TENSOR_MAP_DATA_TYPE_BFLOAT16", 2),
    "int32": ("CU_TENSOR_MAP_DATA_TYPE_INT32", 4),
    "uint32": ("CU_TENSOR_MAP_DATA_TYPE_UINT32", 4),
    "float32": ("CU_TENSOR_MAP_DATA_TYPE_FLOAT32", 4),
    "int64": ("CU_TENSOR_MAP_DATA_TYPE_INT64", 8),
    "uint64": ("CU_TENSOR_MAP_DATA_TYPE_UINT64", 8),
    "float64": ("CU_TENSOR_MAP_DATA_TYPE_FLOAT64", 8),
}


class TensorMapError(ValueError):
    """A tensor map the hardware cannot describe (which rule, which dimension)."""


@dataclasses.dataclass(frozen=True)
class TensorMapSpec:
    """A tiled tensor map: a row-major global tensor of ``shape`` (outermost first, as numpy
    writes it; ``strides`` in elements, row-major when None) read or written a ``box`` at a
    time; ``swizzle`` the shared-memory swizzle width in bytes (0, 32, 64, 128); out-of-range
    elements of a box read as zero."""

    dtype: str
    shape: tuple[int, ...]
    box: tuple[int, ...]
    swizzle: int = 0
    strides: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        check(self)

    @property
    def element_bytes(self) -> int:
        return _DTYPES[self.dtype][1]

    @property
    def box_bytes(self) -> int:
        """The bytes one copy moves (what an mbarrier's expect_tx counts)."""
        return math.prod(self.box) * self.element_bytes

    def element_strides(self) -> tuple[int, ...]:
        if self.strides is not None:
            return self.strides
        out, step = [], 1
        for extent in reversed(self.shape):
            out.append(step)
            step *= extent
        return tuple(reversed(out))


def check(spec: TensorMapSpec) -> None:
    """Raise ``TensorMapError`` naming the first rule ``spec`` breaks."""
    if spec.dtype not in _DTYPES:
        raise TensorMapError(f"tensor map: no TMA element type for {spec.dtype}")
    rank = len(spec.shape)
    if not 1 <= rank <= 5:
        raise TensorMapError(f"tensor map: rank {rank} (TMA takes 1 to 5 dimensions)")
    if len(spec.box) != rank:
        raise TensorMapError(f"tensor map: box {spec.box} has not {rank} dimensions")
    if spec.strides is not None and (len(spec.strides) != rank or spec.strides[-1] != 1):
        raise TensorMapError(
            f"tensor map: strides {spec.strides} must give one per dimension, the last 1"
        )
    size = spec.element_bytes
    for dim, (extent, box) in enumerate(zip(spec.shape, spec.box)):
        if not 1 <= box <= 256 or box > extent:
            raise TensorMapError(
                f"tensor map: box dimension {dim} is {box} (1 to 256, at most the extent {extent})"
            )
    for dim, stride in enumerate(spec.element_strides()[:-1]):
        if stride * size % 16:
            raise TensorMapError(
                f"tensor map: dimension {dim}'s stride is {stride * size} bytes, not a "
                "multiple of 16"
            )
    inner = spec.box[-1] * size
    if inner % 16:
        raise TensorMapError(f"tensor map: the box's rows are {inner} bytes, not a multiple of 16")
    if spec.swizzle not in SWIZZLES:
        raise TensorMapError(f"tensor map: swizzle {spec.swizzle} (one of {SWIZZLES} bytes)")
    if spec.swizzle and inner > spec.swizzle:
        raise TensorMapError(
            f"tensor map: the box's rows are {inner} bytes, wider than the {spec.swizzle}-byte "
            "swizzle"
        )


def encode_arguments(spec: TensorMapSpec, address: int) -> tuple:
    """The arguments of ``cuTensorMapEncodeTiled`` (enum members by name), innermost
    dimension first as the driver counts them."""
    size = spec.element_bytes
    strides = spec.element_strides()
    return (
        _DTYPES[spec.dtype][0],
        len(spec.shape),
        address,
        list(reversed(spec.shape)),
        [s * size for s in reversed(strides[:-1])],  # bytes; the innermost is implied
        list(reversed(spec.box)),
        [1] * len(spec.shape),
        "CU_TENSOR_MAP_INTERLEAVE_NONE",
        {0: "CU_TENSOR_MAP_SWIZZLE_NONE", 32: "CU_TENSOR_MAP_SWIZZLE_32B",
         64: "CU_TENSOR_MAP_SWIZZLE_64B", 128: "CU_TENSOR_MAP_SWIZZLE_128B"}[spec.swizzle],
        "CU_TENSOR_MAP_L2_PROMOTION_L2_128B",
        "CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE",
    )  # fmt: skip


def encode_tiled(spec: TensorMapSpec, address: int) -> bytes:
    """The 128 bytes of the tensor map of the tensor at device ``address``."""
    from tilewright.runtime.cuda_runtime import driver

    args = encode_arguments(spec, address)
    # The enums by name; the arrays element by element as the binding's integer types (a
    # plain int list is refused with "Cannot convert int to cuuint32_t").
    kinds = (
        "CUtensorMapDataType",
        None,
        None,
        "cuuint64_t",
        "cuuint64_t",
        "cuuint32_t",
        "cuuint32_t",
        "CUtensorMapInterleave",
        "CUtensorMapSwizzle",
        "CUtensorMapL2promotion",
        "CUtensorMapFloatOOBfill",
    )
    values = [
        arg if kind is None
        else [driver.scalar(kind, v) for v in arg] if isinstance(arg, list)
        else driver.enum(kind, arg)
        for kind, arg in zip(kinds, args)
    ]  # fmt: skip
    (tensor_map,) = driver.call("cuTensorMapEncodeTiled", *values)
    raw = np.array([int(word) for word in tensor_map.opaque], dtype=np.uint64)
    return raw.tobytes()


def tensor_map_array(spec: TensorMapSpec, address: int, device_index: int = 0) -> object:
    """The tensor map in device memory: a ``uint8`` array of 128 bytes, for kernels that
    read it from global memory (``T.address_of(TM[0])`` as ``tma_load``'s map)."""
    from tilewright.runtime import array, device

    raw = np.frombuffer(encode_tiled(spec, address), dtype=np.uint8).copy()
    return array(raw, device("cuda", device_index))
