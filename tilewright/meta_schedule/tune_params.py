"""Tuning a kernel's parameters: a function that makes a kernel from parameters (a tile
kernel's tile shape, stages, raster order...) and a grid of values in; every configuration
built by the tuner's builder, measured by its runner (each output checked against a
reference first), the fastest out.

This is what a tile-layer kernel needs where ``tune_tir`` searches schedules: the kernel is
written by hand, and its few parameters are swept exhaustively. Configurations the factory
refuses (a ``ValueError``) are recorded as refused, with the reason; a configuration whose
build or run fails is recorded as failed; the sweep goes on.

Example::

    from tilewright import meta_schedule as ms
    from tilewright.tirx.hopper_gemm import hopper_gemm

    def reference(a, bt, c):        # called like the kernel, on numpy arrays
        c[...] = a.astype("float32") @ bt.astype("float32").T

    result = ms.tune_params(
        lambda **p: hopper_gemm(4096, 4096, 4096, **p),
        {"block_n": [128, 256], "stages": [3, 4]},
        target="cuda",
        reference=reference,
        rtol=2e-2,
    )
    print(result.table())
    func = hopper_gemm(4096, 4096, 4096, **result.best.params)
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from tilewright.ir import IRModule, PrimFunc
from tilewright.meta_schedule.arg_info import ArgInfo, TensorInfo
from tilewright.meta_schedule.builder import Builder, BuilderInput, LocalBuilder
from tilewright.meta_schedule.measure_callback import remove_artifacts
from tilewright.meta_schedule.runner import LocalRunner, ReferenceCheck, Runner, RunnerInput
from tilewright.meta_schedule.runner.arguments import random_arguments, save_arguments
from tilewright.meta_schedule.runner.reference import reference_path
from tilewright.meta_schedule.tune import _device_type
from tilewright.target import Target

Params = dict[str, Any]
Space = Mapping[str, Sequence[Any]] | Sequence[Mapping[str, Any]]


@dataclasses.dataclass(frozen=True)
class ParamResult:
    """One configuration: its parameters, and its timings (seconds per call, one per
    repeat) or why it has none (``refused: ...``, ``build failed: ...``, a run error)."""

    params: Params
    run_secs: tuple[float, ...] | None = None
    error: str | None = None

    @property
    def median_secs(self) -> float:
        """The median timing (infinity without one)."""
        return statistics.median(self.run_secs) if self.run_secs else float("inf")


@dataclasses.dataclass
class ParamTuneResult:
    """Every configuration's result, in the order swept."""

    results: list[ParamResult]

    @property
    def best(self) -> ParamResult | None:
        """The fastest configuration that ran correctly (None when none did)."""
        ran = [r for r in self.results if r.run_secs]
        return min(ran, key=lambda r: r.median_secs) if ran else None

    def table(self, flops: float | None = None) -> str:
        """The results fastest first, as text (TFLOP/s too when ``flops`` is given).

        Example::

            >>> print(result.table(flops=2 * 4096**3))
        """
        rows = sorted(self.results, key=lambda r: (r.median_secs, str(r.params)))
        lines = []
        for r in rows:
            params = ", ".join(f"{k}={v}" for k, v in r.params.items())
            if r.run_secs:
                rate = f"  {flops / r.median_secs / 1e12:8.1f} TFLOP/s" if flops else ""
                lines.append(f"{r.median_secs * 1e3:10.4f} ms{rate}  {params}")
            else:
                lines.append(f"{'-':>13}  {params}: {r.error}")
        return "\n".join(lines)


def configurations(
    space: Mapping[str, Sequence[Any]] | Sequence[Mapping[str, Any]],
) -> list[Params]:
    """The configurations of ``space``: every combination of a mapping's values (the last
    parameter varying fastest), or a list of configurations as it is.

    Example::

        >>> configurations({"a": [1, 2], "b": ["x", "y"]})
        [{'a': 1, 'b': 'x'}, {'a': 1, 'b': 'y'}, {'a': 2, 'b': 'x'}, {'a': 2, 'b': 'y'}]
    """
    if isinstance(space, Mapping):
        names = list(space)
        for name in names:
            if isinstance(space[name], str) or not isinstance(space[name], Sequence):
                raise TypeError(
                    f"tune_params: the values of parameter {name!r} must be a list, not "
                    f"{type(space[name]).__name__}"
                )
        return [dict(zip(names, values)) for values in itertools.product(*space.values())]
    return [dict(config) for config in space]


def tune_params(
    make: Callable[..., PrimFunc | IRModule],
    space: Space,
    target: Target | str,
    *,
    reference: Callable[..., object] | PrimFunc | IRModule | None,
    rtol: float = 1e-3,
    atol: float = 1e-4,
    builder: Builder | None = None,
    runner: Runner | None = None,
    work_dir: str | None = None,
    seed: int = 0,
    progress: bool = True,
) -> ParamTuneResult:
    """Build and measure ``make(**config)`` for every configuration of ``space``.

    Args:
        make: the kernel factory; a ``ValueError`` from it refuses the configuration.
        space: ``{name: [values]}`` (every combination) or a list of configurations.
        target: where the kernels run.
        reference: what each kernel's arguments must hold after a call on the same random
            arguments: a function called like the kernel on numpy arrays (it writes the
            outputs in place), or a plain TIR module computing the same (run as C). None
            measures without checking, for kernels checked elsewhere.
        rtol, atol: the check's tolerances (float16 outputs need about ``rtol=2e-2``).
        builder, runner: the tuner's (``LocalBuilder()``, ``LocalRunner()`` by default).
        work_dir: where the reference outputs and ``params.jsonl`` (one line per result)
            go (a temporary folder by default).
        seed: the random arguments' seed.
        progress: a line on stderr per measured configuration.

    Returns:
        Every configuration's result; ``.best`` is the fastest correct one.
    """
    target = Target(target) if isinstance(target, str) else target
    configs = configurations(space)
    if not configs:
        raise ValueError("tune_params: the space holds no configuration")
    work = Path(work_dir or tempfile.mkdtemp(prefix="tilewright-params-"))
    work.mkdir(parents=True, exist_ok=True)
    results: dict[int, ParamResult] = {}
    modules: dict[int, IRModule] = {}
    args_info: tuple[TensorInfo, ...] | None = None
    for k, config in enumerate(configs):
        try:
            made = make(**config)
        except ValueError as err:
            results[k] = ParamResult(config, error=f"refused: {err}")
            continue
        mod = made if isinstance(made, IRModule) else IRModule({"main": made})
        infos = tuple(ArgInfo.from_entry_func(mod))
        if args_info is None:
            args_info = infos
        elif infos != args_info:
            raise ValueError(
                f"tune_params: configuration {config} makes a kernel whose arguments "
                f"{[str(i) for i in infos]} differ from the first one's "
                f"{[str(i) for i in args_info]}"
            )
        modules[k] = mod
    if args_info is not None:
        check = _reference_check(reference, args_info, seed, rtol, atol, work)
        _measure(modules, configs, target, args_info, check, builder, runner, results, progress)
    ordered = [results[k] for k in range(len(configs))]
    with open(work / "params.jsonl", "a") as f:
        for r in ordered:
            f.write(json.dumps({"params": r.params, "run_secs": r.run_secs, "error": r.error},
                               default=str) + "\n")  # fmt: skip
    return ParamTuneResult(ordered)


def _reference_check(
    reference: Callable[..., object] | PrimFunc | IRModule | None,
    args_info: tuple[TensorInfo, ...],
    seed: int,
    rtol: float,
    atol: float,
    work: Path,
) -> ReferenceCheck | None:
    if reference is None:
        return None
    if isinstance(reference, PrimFunc | IRModule):
        mod = reference if isinstance(reference, IRModule) else IRModule({"main": reference})
        path = reference_path(mod, args_info, seed, str(work / "reference"))
        return ReferenceCheck(path, seed, rtol=rtol, atol=atol)
    arrays = random_arguments(args_info, seed)
    reference(*arrays)
    saved = work / f"reference-seed{seed}.npz"
    save_arguments(saved, arrays)
    return ReferenceCheck(str(saved), seed, rtol=rtol, atol=atol)


def _measure(
    modules: dict[int, IRModule],
    configs: list[Params],
    target: Target,
    args_info: tuple[TensorInfo, ...],
    check: ReferenceCheck | None,
    builder: Builder | None,
    runner: Runner | None,
    results: dict[int, ParamResult],
    progress: bool,
) -> None:
    the_builder = builder or LocalBuilder()
    the_runner = runner or LocalRunner()
    keys = list(modules)
    start = time.perf_counter()
    builds = the_builder.build([BuilderInput(modules[k], target) for k in keys])
    device = _device_type(target)
    try:
        for n, (k, build) in enumerate(zip(keys, builds), start=1):
            if build.artifact_path is None:
                results[k] = ParamResult(configs[k], error=f"build failed: {build.error_msg}")
            else:
                (future,) = the_runner.run(
                    [RunnerInput(build.artifact_path, device, args_info, check)]
                )
                outcome = future.result()
                results[k] = ParamResult(configs[k], outcome.run_secs, outcome.error_msg)
            if progress:
                r = results[k]
                what = f"{r.median_secs * 1e3:.4f} ms" if r.run_secs else r.error
                print(
                    f"[{n}/{len(keys)} configurations, {time.perf_counter() - start:.0f} s] "
                    f"{configs[k]}: {what}",
                    file=sys.stderr,
                    flush=True,
                )
    finally:
        remove_artifacts(b.artifact_path for b in builds if b.artifact_path)
        for made, given in ((the_runner, runner), (the_builder, builder)):
            close = getattr(made, "close", None)
            if given is None and callable(close):
                close()
