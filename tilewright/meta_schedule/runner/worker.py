"""One ``RunnerInput`` in, one ``RunnerResult`` out: what the runner's child process does.

``measure`` loads the artifact, checks the candidate against the reference outputs when
asked, then times it: a warm-up call, then ``repeat`` batches of ``number`` calls (raised
until a batch lasts ``min_repeat_ms``), cycling through enough argument sets that no call
finds its inputs in cache (when the evaluator asks for cache flushing). It runs in a
process the runner can kill, so a kernel that crashes or hangs costs only that process.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence

import numpy as np

from tilewright.artifact import Artifact
from tilewright.meta_schedule.arg_info import TensorInfo
from tilewright.meta_schedule.builder.process_pool import describe_error
from tilewright.meta_schedule.runner.arguments import (
    load_arguments,
    random_arguments,
    rotation_sets,
)
from tilewright.meta_schedule.runner.runner import (
    EvaluatorConfig,
    ReferenceCheck,
    RunnerInput,
    RunnerResult,
)
from tilewright.runtime import Device, Module, NDArray, PackedFunc, array, device, load
from tilewright.runtime.time_evaluator import time_evaluator


def measure(runner_input: RunnerInput, config: EvaluatorConfig) -> RunnerResult:
    """Check and time one candidate (raises what loading or running raised).

    Example::

        >>> measure(RunnerInput(path, "cpu", infos), EvaluatorConfig()).run_secs
        (3.1e-05,)
    """
    rt_mod = load(Artifact.load(runner_input.artifact_path))
    func = entry_function(rt_mod)
    dev = device(runner_input.device_type, 0)
    maybe_slow = config.slow_candidate_secs > 0
    if runner_input.check is not None:
        start = time.perf_counter()
        wrong = check_result(func, dev, runner_input)
        if wrong is not None:
            return RunnerResult(error_msg=wrong)
        # A check faster than the limit proves the kernel fast; a slower one may be the
        # comparison's own time (three 4096 x 4096 outputs on the host), so the kernel is
        # timed alone before it is called slow (``time_candidate``).
        maybe_slow = maybe_slow and time.perf_counter() - start > config.slow_candidate_secs
    return RunnerResult(
        run_secs=time_candidate(rt_mod, func, dev, runner_input, config, maybe_slow)
    )


def measure_or_report(
    runner_input: RunnerInput, config: EvaluatorConfig
) -> tuple[RunnerResult, bool]:
    """``measure`` with an exception turned into an error result (its type and first
    lines), and whether this process must be replaced before it measures anything else:
    after an error on a GPU, whose context a fault may have poisoned. This is what the
    runner's process calls."""
    try:
        return measure(runner_input, config), False
    except Exception as err:
        # After an error on a GPU, whose context a fault may have poisoned.
        return RunnerResult(error_msg=describe_error(err)), not device(
            runner_input.device_type
        ).is_host


def entry_function(rt_mod: Module) -> PackedFunc:
    """``main``, or the module's only function."""
    names = rt_mod.function_names()
    if "main" in names:
        return rt_mod["main"]
    if len(names) == 1:
        return rt_mod[names[0]]
    raise ValueError(f"the artifact has functions {', '.join(names)} and none is named main")


def to_device(arrays: Sequence[np.ndarray], dev: Device) -> list[object]:
    """The arrays as kernel arguments on ``dev`` (numpy arrays themselves on the CPU)."""
    if dev.is_host:
        return list(arrays)
    return [array(a, dev) for a in arrays]


def to_host(values: Sequence[object]) -> list[np.ndarray]:
    return [v.numpy() if isinstance(v, NDArray) else np.asarray(v) for v in values]


# The process measures the candidates of one task after another: the arguments, the
# reference and the timing buffers of the last task are kept (one entry each).
_CACHE: dict[str, tuple[object, object]] = {}


def _cached(slot: str, key: object, make: Callable[[], object]) -> object:
    held = _CACHE.get(slot)
    if held is not None and held[0] == key:
        return held[1]
    _CACHE.pop(slot, None)  # free the old value before making the new one
    value = make()
    _CACHE[slot] = (key, value)
    return value


def seed_arguments(args_info: Sequence[TensorInfo], seed: int) -> list[np.ndarray]:
    """``random_arguments(args_info, seed)``, drawn once per task (callers copy them)."""
    key = (tuple(args_info), seed)
    return _cached("arguments", key, lambda: random_arguments(args_info, seed))  # type: ignore[return-value]


def reference_arrays(path: str, count: int) -> list[np.ndarray]:
    """The reference file's arrays, read once per task."""

    return _cached("reference", (path, os.path.getmtime(path)), lambda: load_arguments(path, count))  # type: ignore[return-value]


def check_result(func: PackedFunc, dev: Device, runner_input: RunnerInput) -> str | None:
    """Run the candidate once on the seed's arguments and compare every argument with the
    reference; None when all match, else what differs."""
    check = runner_input.check
    assert check is not None
    seeds = seed_arguments(runner_input.args_info, check.seed)
    # On the host the candidate writes into the arrays themselves: copies keep the seeds.
    host = [a.copy() for a in seeds] if dev.is_host else seeds
    args = to_device(host, dev)
    func(*args)
    dev.sync()
    names = [p.name for p in func.signature.user_params]
    expected = reference_arrays(check.reference_path, len(host))
    for name, actual, want in zip(names, to_host(args), expected):
        wrong = compare(name, actual, want, check)
        if wrong is not None:
            return wrong
    return None


def compare(
    name: str, actual: np.ndarray, expected: np.ndarray, check: ReferenceCheck
) -> str | None:
    """None when ``actual`` matches ``expected`` within the check's tolerances and holds no
    NaN, else a ``wrong result: buffer ...`` message.

    Inputs the candidate left alone, and outputs computed in the reference's order, are
    bit-identical: one byte comparison settles them. The rest is compared a block at a
    time, so that a 4096 x 4096 output costs a few passes over memory, not a float64 copy
    of each array."""
    if actual.shape != expected.shape:
        return f"wrong result: buffer {name} has shape {actual.shape}, expected {expected.shape}"
    got, want = np.ascontiguousarray(actual).ravel(), np.ascontiguousarray(expected).ravel()
    floating = not np.issubdtype(got.dtype, np.integer) and got.dtype != np.bool_
    identical = got.dtype == want.dtype and np.array_equal(got.view(np.uint8), want.view(np.uint8))
    if identical and not (floating and np.isnan(got.astype(np.float32, copy=False)).any()):
        return None
    # float32 holds float16 and bfloat16 exactly, and float32 errors well enough for
    # tolerances of 1e-3; float64 and integers are compared in float64.
    exact = np.float32 if floating and got.dtype.itemsize <= 4 else np.float64
    worst_error, worst_index, nans = 0.0, -1, 0
    for start in range(0, got.size, _BLOCK):
        g = got[start : start + _BLOCK].astype(exact)
        w = want[start : start + _BLOCK].astype(exact)
        nans += int(np.isnan(g).sum())
        error = np.abs(g - w)
        error[np.isnan(error)] = np.inf
        excess = error - (check.atol + check.rtol * np.abs(w))
        k = int(np.argmax(excess))  # the element furthest outside the tolerance
        if excess[k] > 0 and (worst_index < 0 or error[k] > worst_error):
            worst_error, worst_index = float(error[k]), start + k
    if nans:
        return f"wrong result: buffer {name} holds NaN ({nans} elements)"
    if worst_index < 0:
        return None
    at = tuple(int(i) for i in np.unravel_index(worst_index, actual.shape))
    return (
        f"wrong result: buffer {name}, max abs error {worst_error:.4g} at {at} (got "
        f"{float(got[worst_index]):.6g}, expected {float(want[worst_index]):.6g})"
    )


_BLOCK = 1 << 20  # elements compared at a time


def time_candidate(
    rt_mod: Module,
    func: PackedFunc,
    dev: Device,
    runner_input: RunnerInput,
    config: EvaluatorConfig,
    maybe_slow: bool = False,
) -> tuple[float, ...]:
    """Seconds per call of each repeat. With ``maybe_slow`` one call is timed first: a
    kernel slower than ``config.slow_candidate_secs`` is timed by one more call only."""
    infos = runner_input.args_info
    seed = runner_input.check.seed if runner_input.check is not None else 0
    count = rotation_sets(infos, runner_input.device_type) if config.enable_cpu_cache_flush else 1

    def make_sets() -> list[list[object]]:
        first = seed_arguments(infos, seed)
        # Copies of the first set: their values do not change the time, drawing them would.
        return [to_device([a.copy() for a in first], dev) for _ in range(count)]

    # The buffers are kept for the task's next candidates: every candidate timed here was
    # checked first, so it writes only its outputs.
    key = (tuple(infos), seed, count, runner_input.device_type)
    sets: list[list[object]] = _cached("timing", key, make_sets)  # type: ignore[assignment]
    runs = [func.bind(*arrays) for arrays in sets]
    run = runs[0] if len(runs) == 1 else _cycle(runs)
    if maybe_slow:
        start = time.perf_counter()
        run()
        dev.sync()
        if time.perf_counter() - start > config.slow_candidate_secs:
            # A candidate this slow ranks last whatever its exact time: one timed call
            # after the warm-up is enough, and keeps slow candidates from eating the
            # session's time.
            config = EvaluatorConfig(number=1, repeat=1, min_repeat_ms=0, slow_candidate_secs=0)
    device_module = getattr(rt_mod, "device_module", None)
    timer = time_evaluator(
        lambda: run,
        dev,
        number=config.number,
        repeat=config.repeat,
        min_repeat_ms=config.min_repeat_ms,
        warmup_ms=config.warmup_ms,
        measure=device_module.measure if device_module is not None else None,
    )
    return timer().results


def _cycle(runs: Sequence[Callable[[], None]]) -> Callable[[], None]:
    """One call of the next bound launch each time."""
    position = [0]

    def run() -> None:
        runs[position[0]]()
        position[0] = (position[0] + 1) % len(runs)

    return run
