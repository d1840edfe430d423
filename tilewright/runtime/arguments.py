"""Call arguments + ``FuncSignature`` → checked values in the kernel's argument order.

Every check runs before the kernel does: arity, then per parameter its kind, device, dtype,
rank, shape (binding symbolic sizes consistently across arguments), strides and
writability, and for scalars type and range. Errors name the function and the argument.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import numpy as np

from tilewright.artifact import Dim, FuncSignature, ParamSpec
from tilewright.ir import DataType
from tilewright.runtime.device import Device, device
from tilewright.runtime.ndarray import NDArray, dtype_name, numpy_dtype

_FLOAT_MAX = {16: 65504.0, 32: float(np.finfo(np.float32).max), 64: float("inf")}


class _CUDAArray(Protocol):
    """An array that exports the CUDA array interface (torch, cupy, numba, NDArray)."""

    @property
    def __cuda_array_interface__(self) -> Mapping[str, Any]: ...


class _ArrayView:
    """What the checks need to know about an array argument, whatever its type."""

    def __init__(self, host: np.ndarray | None, where: Device, shape: tuple[int, ...],
                 dtype: str, source: object) -> None:  # fmt: skip
        self.host = host
        self.device = where
        self.shape = shape
        self.dtype = dtype
        self.source = source


def check_arguments(sig: FuncSignature, args: Sequence[object], dev: Device) -> list[object]:
    """Check ``args`` against ``sig`` and return the kernel's argument values.

    Buffers come back as numpy arrays (CPU kernels) or ``NDArray`` (device kernels),
    scalars as Python numbers, then one ``int`` per symbolic size.

    Arguments:
        sig: the kernel's contract.
        args: what the caller passed.
        dev: where the kernel runs.

    Example::

        >>> check_arguments(sig, (a, b), cpu(0))   # raises ValueError on a shape mismatch
    """
    fn = sig.name
    if len(args) != len(sig.params):
        names = ", ".join(p.name for p in sig.params)
        raise TypeError(f"{fn} expects {len(sig.params)} arguments ({names}), got {len(args)}")
    env: dict[str, int] = {}
    origin: dict[str, str] = {}
    values: list[object] = [None] * len(args)
    for i, (p, arg) in enumerate(zip(sig.params, args)):
        if not p.is_buffer:
            values[i] = value = _scalar(fn, p, arg)
            if isinstance(value, int) and not isinstance(value, bool):
                env[p.name] = value
                origin[p.name] = f"argument {p.name}"
    views: list[tuple[ParamSpec, _ArrayView]] = []
    for i, (p, arg) in enumerate(zip(sig.params, args)):
        if p.is_buffer:
            view = _view(fn, p, arg, dev)
            _check_shape(fn, p, view, env, origin)
            views.append((p, view))
            values[i] = view.host if view.host is not None else view.source
    for p, view in views:
        _check_expressions(fn, p, view, env)
    for sym in sig.sym_vars:
        values.append(env[sym])
    return values


def _view(fn: str, p: ParamSpec, arg: object, dev: Device) -> _ArrayView:
    if isinstance(arg, NDArray):
        host = arg.host_array() if arg.device.is_host else None
        view = _ArrayView(host, arg.device, arg.shape, arg.dtype, arg)
    elif isinstance(arg, np.ndarray):
        view = _ArrayView(arg, device("cpu"), arg.shape, dtype_name(arg.dtype), arg)
    elif hasattr(arg, "__dlpack_device__") and hasattr(arg, "__dlpack__"):
        code, index = arg.__dlpack_device__()
        try:
            where = device(int(code), int(index))
        except ValueError:
            where = Device(int(code), int(index))
        info, runs_on = where.kind_info, dev.kind_info
        on_gpu = info is not None and info.cuda_pointers and info == runs_on
        if on_gpu and _is_torch(arg):
            view = _torch_view(fn, p, arg, where)
        elif on_gpu and hasattr(arg, "__cuda_array_interface__"):
            view = _cuda_view(fn, p, arg, where)
        elif not where.is_host:
            raise ValueError(f"{fn}: argument {p.name} is on {where} but the kernel runs on {dev}")
        else:
            host = np.from_dlpack(arg)
            view = _ArrayView(host, where, host.shape, dtype_name(host.dtype), arg)
    elif hasattr(arg, "__cuda_array_interface__"):
        view = _cuda_view(fn, p, arg, device("cuda", 0))
    else:
        raise TypeError(
            f"{fn}: argument {p.name} must be an array (tilewright NDArray, numpy.ndarray or a "
            f"DLPack tensor), got {type(arg).__name__}"
        )
    if not dev.same_memory(view.device):
        kernel_on = dev.kind if dev.is_host else str(dev)
        raise ValueError(
            f"{fn}: argument {p.name} is on {view.device} but the kernel runs on {kernel_on}"
        )
    if view.dtype != p.dtype:
        raise TypeError(f"{fn}: argument {p.name} has dtype {view.dtype}, expected {p.dtype}")
    if p.align > 1:
        address = _address(view)
        if address is not None and address % p.align:
            raise ValueError(
                f"{fn}: argument {p.name} starts at address {address:#x}, not a multiple of "
                f"{p.align} bytes, and the kernel accesses it with {p.align}-byte vectors; "
                "pass an array that starts at its allocation (e.g. a copy)"
            )
    host = view.host
    if host is not None:
        if p.written and not host.flags.writeable:
            raise ValueError(f"{fn}: argument {p.name} is read-only but the kernel writes it")
        if p.strides is None and not host.flags.c_contiguous:
            raise ValueError(
                f"{fn}: argument {p.name} must be C-contiguous (row-major, without gaps); "
                "pass numpy.ascontiguousarray(...) or a copy"
            )
    return view


def _address(view: _ArrayView) -> int | None:
    """The address of the first element, where the array kind tells it."""
    if view.host is not None:
        return int(view.host.ctypes.data)
    source: Any = view.source
    if _is_torch(source):
        return int(source.data_ptr())
    try:
        return int(source.__cuda_array_interface__["data"][0])
    except (AttributeError, KeyError, TypeError):
        return None  # e.g. an OpenCL buffer: allocations are aligned, views do not exist


def _is_torch(arg: object) -> bool:
    return type(arg).__module__.startswith("torch")


def _torch_view(fn: str, p: ParamSpec, arg: object, where: Device) -> _ArrayView:
    """A torch CUDA tensor, read through its attributes (its array interface is slower)."""
    tensor: Any = arg
    if p.strides is None and not tensor.is_contiguous():
        raise ValueError(
            f"{fn}: argument {p.name} must be C-contiguous (row-major, without gaps); "
            "pass tensor.contiguous() or a copy"
        )
    dtype = str(tensor.dtype).removeprefix("torch.")
    return _ArrayView(None, where, tuple(tensor.shape), dtype, arg)


def _cuda_view(fn: str, p: ParamSpec, arg: _CUDAArray, where: Device) -> _ArrayView:
    """A CUDA tensor (torch, cupy, ...) described by its ``__cuda_array_interface__``."""
    info = arg.__cuda_array_interface__
    shape = tuple(int(s) for s in info["shape"])
    try:
        dtype = dtype_name(np.dtype(info["typestr"]))
    except TypeError:
        dtype = str(info["typestr"])
    strides = info.get("strides")
    if strides is not None and p.strides is None:
        item = np.dtype(info["typestr"]).itemsize
        compact, step = [], item
        for size in reversed(shape):
            compact.append(step)
            step *= size
        if any(a != b for a, b, n in zip(strides, reversed(compact), shape) if n > 1):
            raise ValueError(
                f"{fn}: argument {p.name} must be C-contiguous (row-major, without gaps); "
                "pass tensor.contiguous() or a copy"
            )
    if p.written and info["data"][1]:
        raise ValueError(f"{fn}: argument {p.name} is read-only but the kernel writes it")
    return _ArrayView(None, where, shape, dtype, arg)


def _format(dims: tuple[Dim, ...]) -> str:
    text = ", ".join(_dim_text(d) for d in dims)
    return f"({text},)" if len(dims) == 1 else f"({text})"


def _dim_text(d: Dim) -> str:
    if isinstance(d, tuple):
        symbols = {"add": "+", "sub": "-", "mul": "*", "floordiv": "//", "floormod": "%"}
        if d[0] in symbols:
            return f"{_dim_text(d[1])} {symbols[d[0]]} {_dim_text(d[2])}"
        return f"{d[0]}({_dim_text(d[1])}, {_dim_text(d[2])})"
    return str(d)


def _strides_of(view: _ArrayView) -> tuple[int, ...]:
    if view.host is None:
        out, step = [], 1
        for size in reversed(view.shape):
            out.append(step)
            step *= size
        return tuple(reversed(out))
    item = view.host.itemsize
    return tuple(s // item for s in view.host.strides)


def _check_shape(
    fn: str, p: ParamSpec, view: _ArrayView, env: dict[str, int], origin: dict[str, str]
) -> None:
    assert p.shape is not None
    if len(view.shape) != len(p.shape):
        raise ValueError(
            f"{fn}: argument {p.name} must have {len(p.shape)} dimensions {_format(p.shape)}, "
            f"got shape {tuple(view.shape)}"
        )
    pairs = list(zip(p.shape, view.shape, ("dimension",) * len(p.shape), range(len(p.shape))))
    if p.strides is not None:
        strides = _strides_of(view)
        pairs += list(zip(p.strides, strides, ("stride",) * len(strides), range(len(strides))))
    for dim, actual, what, axis in pairs:
        if isinstance(dim, int) and dim != actual:
            raise ValueError(
                f"{fn}: argument {p.name} has shape {tuple(view.shape)}; expected "
                f"{_format(p.shape)} ({what} {axis} must be {dim}, got {actual})"
            )
        if isinstance(dim, str):
            if dim not in env:
                env[dim] = int(actual)
                origin[dim] = f"argument {p.name}"
            elif env[dim] != actual:
                raise ValueError(
                    f"{fn}: argument {p.name} has shape {tuple(view.shape)}; expected "
                    f"{_format(p.shape)} ({what} {axis} must be {dim} = {env[dim]} as given by "
                    f"{origin[dim]}, got {actual})"
                )


def _check_expressions(fn: str, p: ParamSpec, view: _ArrayView, env: dict[str, int]) -> None:
    assert p.shape is not None
    for axis, (dim, actual) in enumerate(zip(p.shape, view.shape)):
        if isinstance(dim, tuple) and _evaluate(dim, env) != actual:
            raise ValueError(
                f"{fn}: argument {p.name} has shape {tuple(view.shape)}; expected "
                f"{_format(p.shape)} (dimension {axis} must be {_dim_text(dim)} = "
                f"{_evaluate(dim, env)}, got {actual})"
            )


def _evaluate(dim: Dim, env: dict[str, int]) -> int:
    if isinstance(dim, int):
        return dim
    if isinstance(dim, str):
        return env[dim]
    a, b = _evaluate(dim[1], env), _evaluate(dim[2], env)
    ops = {
        "add": lambda: a + b,
        "sub": lambda: a - b,
        "mul": lambda: a * b,
        "floordiv": lambda: a // b if b else 0,
        "floormod": lambda: a % b if b else 0,
        "min": lambda: min(a, b),
        "max": lambda: max(a, b),
    }
    return ops[dim[0]]()


def _scalar(fn: str, p: ParamSpec, value: object) -> object:
    dt = DataType.parse(p.dtype)
    where = f"{fn}: argument {p.name}"
    if dt.is_handle:
        if isinstance(value, NDArray):
            value = value.host_array()
        if isinstance(value, np.ndarray):
            return value
        if isinstance(value, int) or value is None:
            return value
        raise TypeError(f"{where} must be an array or an address, got {type(value).__name__}")
    if dt.is_bool:
        if isinstance(value, bool | np.bool_) or (isinstance(value, int) and value in (0, 1)):
            return bool(value)
        raise TypeError(f"{where} must be a bool, got {value!r}")
    if dt.is_integer:
        if not isinstance(value, int | np.integer) or isinstance(value, bool | np.bool_):
            raise TypeError(f"{where} must be an integer ({dt}), got {type(value).__name__}")
        lo, hi = (
            (0, 2**dt.bits - 1) if dt.is_uint else (-(2 ** (dt.bits - 1)), 2 ** (dt.bits - 1) - 1)
        )
        if not lo <= int(value) <= hi:
            raise ValueError(f"{where} = {int(value)} does not fit {dt} ([{lo}, {hi}])")
        return int(value)
    if dt.is_float:
        if not isinstance(value, int | float | np.integer | np.floating) or isinstance(
            value, bool | np.bool_
        ):
            raise TypeError(f"{where} must be a number ({dt}), got {type(value).__name__}")
        number = float(value)
        limit = float(np.finfo(np.dtype("float32")).max) if dt.code == "bfloat" else None
        limit = limit or _FLOAT_MAX[dt.bits]
        if np.isfinite(number) and abs(number) > limit:
            raise ValueError(f"{where} = {number} does not fit {dt}")
        if dt.bits == 16:
            storage = numpy_dtype("float16" if dt.code == "float" else "bfloat16")
            return float(np.array(number).astype(storage))
        return number
    raise TypeError(f"{where} has unsupported dtype {dt}")
