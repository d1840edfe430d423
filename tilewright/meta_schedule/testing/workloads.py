"""Names in, workloads out: the auto-scheduler's corpus of programs, sizes and numpy references.

``WORKLOADS`` maps a name to a ``Workload``: a maker of the block-level program
(``workload_programs.py``), its realistic sizes (``sizes``), small sizes for tests that run
programs in a Python interpreter (``small``: every loop nest a few thousand iterations at
most, extents that matter kept odd or prime), a numpy reference and a flop count.

Example::

    >>> w = WORKLOADS["matmul"]
    >>> f = w.func(**w.small)
    >>> args = w.inputs(np.random.default_rng(0), **w.small)   # outputs full of NaN
    >>> expected = w.reference(*args)                          # every parameter's final value
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from tilewright.ir import IntImm, PrimFunc
from tilewright.meta_schedule.testing import workload_programs as programs
from tilewright.meta_schedule.testing.workload_programs import LAYER_NORM_EPS

Shape = tuple[int, ...]


@dataclass(frozen=True)
class Workload:
    """One program of the corpus at any size.

    ``func(**sizes)`` makes the program; ``reference(*arrays)`` takes one array per buffer
    parameter (as ``inputs`` makes them) and returns every parameter's final value, inputs
    unchanged; ``flops(**sizes)`` counts its floating-point operations; the last ``outputs``
    parameters are the ones the program writes.

    Example::

        >>> w = WORKLOADS["softmax"]
        >>> func, shapes = w.instantiate(small=True)       # shapes: ((7, 13), (7, 13))
    """

    name: str
    func: Callable[..., PrimFunc]
    sizes: Mapping[str, int]
    small: Mapping[str, int]
    reference: Callable[..., list[np.ndarray]]
    flops: Callable[..., int]
    outputs: int = 1

    def __post_init__(self) -> None:
        # The tables are shared by every caller: freeze them.
        object.__setattr__(self, "sizes", MappingProxyType(dict(self.sizes)))
        object.__setattr__(self, "small", MappingProxyType(dict(self.small)))
        if set(self.sizes) != set(self.small):
            raise ValueError(
                f"workload {self.name}: sizes {sorted(self.sizes)} and small sizes "
                f"{sorted(self.small)} name different dimensions"
            )

    def instantiate(self, small: bool = False) -> tuple[PrimFunc, tuple[Shape, ...]]:
        """The program at the default (or small) sizes and the shape of each buffer parameter.

        Example: ``WORKLOADS["vector_add"].instantiate()[1]`` is ``((1048576,),) * 3``.
        """
        func = self.func(**(self.small if small else self.sizes))
        return func, param_shapes(func)

    def inputs(self, rng: np.random.Generator, **sizes: int) -> list[np.ndarray]:
        """One float32 array per buffer parameter: standard normal values for the inputs,
        NaN for the outputs, so that an element the program never writes shows.

        Example: ``WORKLOADS["row_sum_127"].inputs(rng, m=3, n=127)[1]`` is ``[nan] * 3``.
        """
        shapes = param_shapes(self.func(**self._sizes(sizes)))
        n_in = len(shapes) - self.outputs
        arrays = [rng.standard_normal(s).astype("float32") for s in shapes[:n_in]]
        return arrays + [np.full(s, np.nan, dtype="float32") for s in shapes[n_in:]]

    def _sizes(self, sizes: Mapping[str, int]) -> dict[str, int]:
        if set(sizes) != set(self.sizes):
            raise TypeError(
                f"workload {self.name} takes sizes {sorted(self.sizes)}, got {sorted(sizes)}"
            )
        return dict(sizes)


def param_shapes(func: PrimFunc) -> tuple[Shape, ...]:
    """The constant shape of each buffer parameter of ``func``, in parameter order."""
    shapes = []
    for param in func.params:
        buf = func.buffer_of(param)
        if buf is None:
            where = func.name or "the function"
            raise ValueError(f"parameter {param.name} of {where} is not a buffer")
        dims = []
        for d in buf.shape:
            if not isinstance(d, IntImm):
                raise ValueError(f"buffer {buf.name} has a symbolic shape {buf.shape}")
            dims.append(d.value)
        shapes.append(tuple(dims))
    return tuple(shapes)


# numpy references: float64 arithmetic, float32 results; the outputs replace the last arrays.


def _f32(x: np.ndarray) -> np.ndarray:
    return np.asarray(x, dtype=np.float64).astype(np.float32)


def _matmul(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> list[np.ndarray]:
    return [a, b, _f32(a.astype(np.float64) @ b)]


def _vector_add(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> list[np.ndarray]:
    return [a, b, _f32(a.astype(np.float64) + b)]


def _window_sum(a: np.ndarray, b: np.ndarray) -> list[np.ndarray]:
    a64 = a.astype(np.float64)
    return [a, _f32(a64[:-2] + a64[1:-1] + a64[2:])]


def _matmul_bias_relu(
    a: np.ndarray, b: np.ndarray, bias: np.ndarray, out: np.ndarray
) -> list[np.ndarray]:
    return [a, b, bias, _f32(np.maximum(a.astype(np.float64) @ b + bias, 0.0))]


def _batch_matmul(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> list[np.ndarray]:
    return [a, b, _f32(np.matmul(a.astype(np.float64), b))]


def _conv2d_nhwc(
    data: np.ndarray, weight: np.ndarray, out: np.ndarray, stride: int = 1
) -> list[np.ndarray]:
    padded = np.pad(data.astype(np.float64), ((0, 0), (1, 1), (1, 1), (0, 0)))
    oh, ow = out.shape[1:3]
    result = np.zeros(out.shape)
    for dy in range(3):
        for dx in range(3):
            rows = padded[:, dy : dy + stride * (oh - 1) + 1 : stride]
            result += rows[:, :, dx : dx + stride * (ow - 1) + 1 : stride, :] @ weight[dy, dx]
    return [data, weight, _f32(result)]


def conv2d_nhwc_reference(stride: int) -> Callable[..., list[np.ndarray]]:
    """The numpy reference of ``conv2d_nhwc(..., stride=stride)``."""
    return lambda data, weight, out: _conv2d_nhwc(data, weight, out, stride)


def _depthwise_conv2d(data: np.ndarray, kernel: np.ndarray, out: np.ndarray) -> list[np.ndarray]:
    padded = np.pad(data.astype(np.float64), ((0, 0), (1, 1), (1, 1), (0, 0)))
    h, w = data.shape[1:3]
    result = np.zeros(out.shape)
    for dy in range(3):
        for dx in range(3):
            result += padded[:, dy : dy + h, dx : dx + w, :] * kernel[dy, dx]
    return [data, kernel, _f32(result)]


def _softmax(a: np.ndarray, out: np.ndarray) -> list[np.ndarray]:
    a64 = a.astype(np.float64)
    e = np.exp(a64 - a64.max(axis=1, keepdims=True))
    return [a, _f32(e / e.sum(axis=1, keepdims=True))]


def _layer_norm(
    a: np.ndarray, gamma: np.ndarray, beta: np.ndarray, out: np.ndarray
) -> list[np.ndarray]:
    a64 = a.astype(np.float64)
    mean = a64.mean(axis=1, keepdims=True)
    var = (a64 * a64).mean(axis=1, keepdims=True) - mean * mean
    normed = (a64 - mean) / np.sqrt(var + LAYER_NORM_EPS)
    return [a, gamma, beta, _f32(normed * gamma + beta)]


def _transpose(a: np.ndarray, out: np.ndarray) -> list[np.ndarray]:
    return [a, np.ascontiguousarray(a.T)]


def _row_sum(a: np.ndarray, out: np.ndarray) -> list[np.ndarray]:
    return [a, _f32(a.astype(np.float64).sum(axis=1))]


def _matmul_flops(m: int, n: int, k: int) -> int:
    return 2 * m * n * k


# A flop is one add, multiply, max, exp or rsqrt of an element; padding and copies count
# none, except that the transpose counts one per element moved so that its rate reads as
# elements per second.
WORKLOADS: dict[str, Workload] = {
    "matmul": Workload(
        "matmul",
        programs.matmul,
        sizes={"m": 1024, "n": 1024, "k": 1024},
        small={"m": 16, "n": 16, "k": 16},
        reference=_matmul,
        flops=_matmul_flops,
    ),
    "vector_add": Workload(
        "vector_add",
        programs.vector_add,
        sizes={"n": 2**20},
        small={"n": 1024},
        reference=_vector_add,
        flops=lambda n: n,
    ),
    "window_sum": Workload(
        "window_sum",
        programs.window_sum,
        sizes={"n": 2**20},
        small={"n": 1024},
        reference=_window_sum,
        flops=lambda n: 2 * n,
    ),
    "matmul_bias_relu": Workload(
        "matmul_bias_relu",
        programs.matmul_bias_relu,
        sizes={"m": 1024, "n": 1024, "k": 1024},
        small={"m": 8, "n": 16, "k": 16},
        reference=_matmul_bias_relu,
        flops=lambda m, n, k: 2 * m * n * k + 2 * m * n,
    ),
    "batch_matmul": Workload(
        "batch_matmul",
        programs.batch_matmul,
        sizes={"b": 16, "m": 512, "n": 512, "k": 512},
        small={"b": 2, "m": 8, "n": 12, "k": 16},
        reference=_batch_matmul,
        flops=lambda b, m, n, k: 2 * b * m * n * k,
    ),
    "conv2d_nhwc": Workload(
        "conv2d_nhwc",
        programs.conv2d_nhwc,
        sizes={"n": 1, "h": 56, "w": 56, "ci": 64, "co": 64},
        small={"n": 1, "h": 5, "w": 5, "ci": 4, "co": 4},
        reference=_conv2d_nhwc,
        flops=lambda n, h, w, ci, co: 2 * n * h * w * co * ci * 9,
    ),
    "depthwise_conv2d": Workload(
        "depthwise_conv2d",
        programs.depthwise_conv2d,
        sizes={"n": 1, "h": 112, "w": 112, "c": 32},
        small={"n": 1, "h": 7, "w": 7, "c": 8},
        reference=_depthwise_conv2d,
        flops=lambda n, h, w, c: 2 * n * h * w * c * 9,
    ),
    "softmax": Workload(
        "softmax",
        programs.softmax,
        sizes={"m": 4096, "n": 4096},
        small={"m": 8, "n": 64},
        reference=_softmax,
        # max, subtract, exp, sum, divide
        flops=lambda m, n: 5 * m * n,
    ),
    "layer_norm": Workload(
        "layer_norm",
        programs.layer_norm,
        sizes={"m": 4096, "n": 4096},
        small={"m": 8, "n": 64},
        reference=_layer_norm,
        # sum, square and sum; subtract the mean, scale by rstd and gamma, add beta
        flops=lambda m, n: 7 * m * n,
    ),
    "transpose": Workload(
        "transpose",
        programs.transpose,
        sizes={"m": 4096, "n": 4096},
        small={"m": 32, "n": 64},
        reference=_transpose,
        flops=lambda m, n: m * n,
    ),
    "matmul_1000": Workload(
        "matmul_1000",
        programs.matmul,
        sizes={"m": 1000, "n": 1000, "k": 1000},
        small={"m": 13, "n": 17, "k": 19},
        reference=_matmul,
        flops=_matmul_flops,
    ),
    "row_sum_127": Workload(
        "row_sum_127",
        programs.row_sum,
        sizes={"m": 4096, "n": 127},
        small={"m": 13, "n": 127},
        reference=_row_sum,
        flops=lambda m, n: m * n,
    ),
}
