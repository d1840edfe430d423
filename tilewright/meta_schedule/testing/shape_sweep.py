"""The shape sweeps of the library's kernels: for each kernel configuration, the problems that
hit every residue of every tile size, sub-tile problems, more tiles than CTAs and fewer, and
each ``grid`` / ``group_m`` setting; how to build a case and what it computes.

A ``KernelSweep`` is one configuration of one kernel (its function, fixed arguments, target
and dimensions); ``cases()`` lists its problems. A dimension (``Dim``) has a tile, a step
between the sizes the kernel takes (8 elements where a TMA row must be a multiple of 16
bytes; the tile itself for kernels that take whole tiles only) and a least size. Case ``i``
takes residue ``(i * p) % r`` of each dimension's ``r`` residues (``p`` a stride prime to
``r``, different for each dimension, so that residues meet in many combinations), on top of
a cycling number of whole tiles; then come the sub-tile problems (sizes 1 to 16 where the
kernel takes them) and problems with more tiles than the H200's 132 SMs. Every case is
checked against a float64 product (``benchmarks/gpu_shape_sweep.py``; ``reference`` here).

Example::

    sweep = SWEEPS["tile_hopper_gemm/f16-tma"]
    case = sweep.cases()[41]          # Case(shape=(m, n, k), settings={'grid': 3, ...})
    func = sweep.build(case)          # a PrimFunc for tw.build(func, target=sweep.target)
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tilewright.ir import IRModule, PrimFunc

SMS = 132  # the H200's SMs: a persistent kernel's default grid
SUB_TILE = range(1, 17)  # the sub-tile problem sizes


@dataclass(frozen=True)
class Dim:
    """One problem dimension: ``tile`` (its block size), ``step`` (sizes are multiples of
    it), ``least`` (the smallest size the kernel takes) and ``tiles`` (whole tiles cycled
    before the residue: ``0 .. tiles - 1``)."""

    tile: int
    step: int = 1
    least: int = 1
    tiles: int = 4

    @property
    def residues(self) -> list[int]:
        return list(range(0, self.tile, self.step))

    def size(self, residue: int, whole: int) -> int:
        """``whole`` tiles and ``residue``, raised by whole tiles to at least ``least``."""
        size = whole * self.tile + residue
        if size < self.least:
            size += -(-(self.least - size) // self.tile) * self.tile
        return size

    def sub_tile(self, size: int) -> int:
        """The size nearest ``size`` (1 to 16) that the kernel takes: a multiple of the
        step, at least ``least``; still less than a tile where the tile allows it."""
        return max(-(-size // self.step) * self.step, self.least)


@dataclass(frozen=True)
class Case:
    """One problem of a sweep: its sizes and the per-case keyword arguments (``grid``,
    ``group_m``)."""

    shape: tuple[int, ...]
    settings: tuple[tuple[str, int], ...] = ()

    @property
    def kwargs(self) -> dict[str, int]:
        return dict(self.settings)

    def __str__(self) -> str:
        extra = "".join(f" {k}={v}" for k, v in self.settings)
        return "x".join(map(str, self.shape)) + extra


@dataclass(frozen=True)
class KernelSweep:
    """One configuration of one library kernel and its problems.

    ``kind`` says what the kernel computes: ``"gemm_bt"`` (``C = act(A @ Bt.T + Bias)``,
    A ``m x k``, Bt ``n x k``), ``"gemm_b"`` (``C = A @ B``, A ``m x k``, B ``k x n``) or
    ``"copy"`` (``B = A``, ``m x n``)."""

    name: str
    make: Callable[..., PrimFunc | IRModule]
    dims: tuple[Dim, ...]
    kind: str
    target: str = "cuda"
    fixed: dict[str, Any] = field(default_factory=dict)
    settings: tuple[dict[str, int], ...] = ({},)
    in_dtype: str = "float16"
    out_dtype: str = "float32"
    activation: str | None = None
    bias: bool = False
    count: int = 300  # residue cases; sub-tile and many-tile cases come on top
    sub_tile: bool = True
    reported: tuple[tuple[int, ...], ...] = ()  # problems users reported wrong, always in

    def cases(self) -> list[Case]:
        """The sweep's problems (module docstring), each once."""
        rng = np.random.default_rng(len(self.name))
        shapes: dict[tuple[int, ...], None] = {}
        i = 0
        while len(shapes) < self.count and i < 50 * self.count:
            shape = []
            for d, dim in enumerate(self.dims):
                residues = dim.residues
                residue = residues[(i * _prime_stride(len(residues), d)) % len(residues)]
                shape.append(dim.size(residue, int(rng.integers(0, dim.tiles))))
            shapes[tuple(shape)] = None
            i += 1
        if self.sub_tile:
            # Problems smaller than one tile in every dimension that allows it.
            for size in SUB_TILE:
                shapes[tuple(dim.sub_tile(size) for dim in self.dims)] = None
        # More tiles than the SMs: 16 x 12 tiles and more.
        for extra in range(4):
            counts = (16 + extra, 12 + extra) + (2,) * (len(self.dims) - 2)
            many = tuple(
                dim.size(dim.residues[(extra * 3) % len(dim.residues)], c)
                for dim, c in zip(self.dims, counts)
            )
            shapes[many] = None
        for reported in self.reported:
            shapes[reported] = None
        return [
            Case(shape, tuple(sorted(self.settings[i % len(self.settings)].items())))
            for i, shape in enumerate(shapes)
        ]

    def build(self, case: Case) -> PrimFunc | IRModule:
        """The case's function (or scheduled module) for ``tw.build(..., target)``."""
        return self.make(*case.shape, **self.fixed, **case.kwargs)

    def operand_shapes(self, case: Case) -> dict[str, tuple[int, ...]]:
        """Each argument's shape, by name, in call order (the output last but Bias)."""
        if self.kind == "copy":
            m, n = case.shape
            return {"A": (m, n), "B": (m, n)}
        m, n, k = case.shape
        if self.kind == "gemm_b":
            return {"A": (m, k), "B": (k, n), "C": (m, n)}
        shapes: dict[str, tuple[int, ...]] = {"A": (m, k), "Bt": (n, k), "C": (m, n)}
        if self.bias:
            shapes["Bias"] = (n,)
        return shapes

    @property
    def output(self) -> str:
        return "B" if self.kind == "copy" else "C"


def _prime_stride(count: int, d: int) -> int:
    """A stride prime to ``count`` (``count`` residues of dimension ``d``): 1, 5, 7, ..."""
    for stride in (1, 5, 7, 11, 13, 17)[d:]:
        if math.gcd(stride, count) == 1:
            return stride
    return 1


def reference(sweep: KernelSweep, inputs: dict[str, Any], xp: Any = np) -> Any:
    """What ``sweep``'s kernel computes from ``inputs`` (arrays of ``xp``, numpy or torch, by
    argument name), in float64: the product, plus the bias, then the activation."""
    if sweep.kind == "copy":
        return inputs["A"].astype(np.float64) if xp is np else inputs["A"].double()
    as64 = (lambda a: a.astype(np.float64)) if xp is np else (lambda a: a.double())
    a = as64(inputs["A"])
    out = a @ as64(inputs["B"]) if sweep.kind == "gemm_b" else a @ as64(inputs["Bt"]).T
    if sweep.bias:
        out = out + as64(inputs["Bias"])[None, :]
    if sweep.activation == "relu":
        out = xp.maximum(out, xp.zeros_like(out)) if xp is not np else np.maximum(out, 0)
    elif sweep.activation == "gelu":
        erf = np.vectorize(math.erf) if xp is np else xp.special.erf
        out = out * (1 + erf(out / math.sqrt(2))) / 2
    return out


# A 16-bit C rounds to half an ulp: 2^-11 of the value (float16), 2^-8 (bfloat16); float32
# and float64 products of small integers are exact.
TOLERANCE = {"float16": 2.0**-10, "bfloat16": 2.0**-7, "float32": 2.0**-20}


def _tile_hopper(m: int, n: int, k: int, **kwargs: Any) -> PrimFunc:
    from tilewright.tirx.tile_hopper_gemm import tile_hopper_gemm

    return tile_hopper_gemm(m, n, k, **kwargs)


def _raw_hopper(m: int, n: int, k: int, **kwargs: Any) -> PrimFunc:
    from tilewright.tirx.hopper_gemm import hopper_gemm

    return hopper_gemm(m, n, k, **kwargs)


def _tile_gemm(m: int, n: int, k: int, **kwargs: Any) -> PrimFunc:
    from tilewright.tirx.tile_gemm import tile_gemm

    return tile_gemm(m, n, k, **kwargs)


def _tile_gemm_mma(m: int, n: int, k: int, **kwargs: Any) -> PrimFunc:
    from tilewright.tirx.tile_gemm_mma import tile_gemm_mma

    return tile_gemm_mma(m, n, k, **kwargs)


def _mma_schedule(m: int, n: int, k: int, **kwargs: Any) -> IRModule:
    from tilewright.meta_schedule.testing.tensor_core import mma_matmul, schedule_mma
    from tilewright.schedule import Schedule

    sch = Schedule(mma_matmul(m, n, k))
    return schedule_mma(sch, **kwargs).mod


def _tma_copy(m: int, n: int) -> PrimFunc:
    from tilewright.tirx.tile_copy_async import tma_copy

    return tma_copy(m, n)


def _cp_async_copy(m: int, n: int) -> PrimFunc:
    from tilewright.tirx.tile_copy_async import cp_async_copy

    return cp_async_copy(m, n)


# The persistent GEMMs' settings, cycled over the cases: the default grid (fewer tiles than
# CTAs for small problems), grids far smaller than the tiles, and group sizes that divide
# the tile rows or leave a short last group.
PERSISTENT = (
    {"grid": SMS, "group_m": 8},
    {"grid": 1, "group_m": 8},
    {"grid": 3, "group_m": 1},
    {"grid": 5, "group_m": 3},
    {"grid": 16, "group_m": 2},
    {"grid": SMS, "group_m": 1},
)
M128 = Dim(128)  # rows: any size
K_TMA = Dim(64, step=8, least=64)  # TMA rows of 16 bytes; at least one whole k tile


def _hopper(name: str, block_n: int, tma: bool, **fixed: Any) -> KernelSweep:
    n_dim = Dim(block_n, step=8, least=64) if tma else Dim(block_n)
    in_dtype = fixed.get("in_dtype", "float16")
    out_dtype = fixed.get("out_dtype", "float16")
    return KernelSweep(
        f"tile_hopper_gemm/{name}",
        _tile_hopper,
        (M128, n_dim, K_TMA),
        "gemm_bt",
        fixed={"block_n": block_n, "epilogue": "tma" if tma else "direct", **fixed},
        settings=PERSISTENT,
        in_dtype=in_dtype,
        out_dtype=out_dtype,
        activation=fixed.get("activation"),
        bias=fixed.get("bias", False),
        # N % 256 = 40 stored wrong columns through the TMA-store epilogue (issue 29), and
        # the benchmark's own tail problem.
        reported=((1000, 1320, 520), (1024, 1320, 512), (1000, 704, 520)),
    )


def _whole(tile: int, tiles: int = 10) -> Dim:
    return Dim(tile, step=tile, least=tile, tiles=tiles)


SWEEPS: dict[str, KernelSweep] = {
    s.name: s
    for s in (
        # The tile-layer Hopper GEMM: each epilogue, activation, dtype and a bias, at block_n
        # 256 (four TMA chunks), 192 (an odd number of chunks), 128 and 64.
        _hopper("f16-tma", 256, True),
        _hopper("f16-direct", 256, False),
        _hopper(
            "bf16-tma-gelu", 256, True, in_dtype="bfloat16", out_dtype="bfloat16", activation="gelu"
        ),
        _hopper(
            "bf16-f32-direct-relu",
            256,
            False,
            in_dtype="bfloat16",
            out_dtype="float32",
            activation="relu",
        ),
        _hopper("f16-tma-bias-relu-128", 128, True, stages=3, bias=True, activation="relu"),
        _hopper(
            "bf16-tma-bias-192", 192, True, in_dtype="bfloat16", out_dtype="bfloat16", bias=True
        ),
        _hopper(
            "f16-bf16-direct-bias-gelu-64",
            64,
            False,
            out_dtype="bfloat16",
            bias=True,
            activation="gelu",
            stages=2,
        ),
        # The raw-intrinsic Hopper GEMM: whole 128 x 128 x 64 tiles.
        KernelSweep(
            "hopper_gemm/f16",
            _raw_hopper,
            (_whole(128, 16), _whole(128, 12), _whole(64, 10)),
            "gemm_bt",
            settings=PERSISTENT,
            out_dtype="float16",
            sub_tile=False,
        ),
        # The tile-layer GEMMs without pipelining: whole tiles.
        KernelSweep(
            "tile_gemm/f16",
            _tile_gemm,
            (_whole(128, 16), _whole(128, 12), _whole(64, 10)),
            "gemm_bt",
            sub_tile=False,
        ),
        KernelSweep(
            "tile_gemm_mma/bf16",
            _tile_gemm_mma,
            (_whole(64, 20), _whole(64, 16), _whole(64, 10)),
            "gemm_bt",
            fixed={"dtype": "bfloat16"},
            in_dtype="bfloat16",
            sub_tile=False,
        ),
        # The mma.sync TensorIR schedule (ldmatrix, cp.async pipeline): 128 x 128 x 32 tiles.
        KernelSweep(
            "mma_sync_schedule/f16",
            _mma_schedule,
            (_whole(128, 12), _whole(128, 12), _whole(32, 12)),
            "gemm_b",
            sub_tile=False,
        ),
        # The tile copies: whole tiles.
        KernelSweep(
            "tma_copy/f16",
            _tma_copy,
            (_whole(128, 24), _whole(64, 24)),
            "copy",
            out_dtype="float16",
            sub_tile=False,
        ),
        KernelSweep(
            "cp_async_copy/f16",
            _cp_async_copy,
            (_whole(64, 24), _whole(64, 24)),
            "copy",
            out_dtype="float16",
            sub_tile=False,
        ),
    )
}
