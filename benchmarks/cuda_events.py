"""Timing GPU work from Python with CUDA events (torch's), for the GPU benchmarks.

Not a benchmark itself (``scripts/gpu-check`` runs ``benchmarks/gpu_*.py``).
"""

import numpy as np


def cuda_median(fn, runs: int = 30, warmup: int = 3, calls: int = 1) -> float:
    """Median seconds per call of ``fn`` over ``runs`` samples, each ``calls`` back-to-back
    calls between two CUDA events on the current stream, after ``warmup`` calls. With one call
    a sample includes the host's launch; with many the launches queue and the kernels' own
    time shows."""
    import torch

    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    return float(np.median([_sample(fn, calls) for _ in range(runs)]))


def _sample(fn, calls: int) -> float:
    """Seconds per call of ``calls`` queued calls of ``fn`` between two CUDA events."""
    import torch

    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(calls):
        fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / 1e3 / calls


def paired_medians(ours, peer, rounds: int = 15, calls: int = 10, warmup: int = 3):
    """Median seconds per call of ``ours`` and of ``peer``, measured in alternation.

    Each round times ``calls`` queued calls of one, then of the other (the order flipping
    every round), so that a change of the GPU's clock or temperature during the run weighs
    on both alike; returns ``(ours, peer, ratio)`` where ``ratio`` is the median over rounds
    of peer time / our time (above 1: we are faster).
    """
    import torch

    for fn in (ours, peer) * warmup:
        fn()
    torch.cuda.synchronize()
    mine, theirs = [], []
    for r in range(rounds):
        if r % 2:
            theirs.append(_sample(peer, calls))
            mine.append(_sample(ours, calls))
        else:
            mine.append(_sample(ours, calls))
            theirs.append(_sample(peer, calls))
    ratio = float(np.median(np.array(theirs) / np.array(mine)))
    return float(np.median(mine)), float(np.median(theirs)), ratio


def sustained_medians(ours, peer, blocks: int = 4, seconds: float = 1.0, settle: float = 0.3):
    """Median seconds per call of ``ours`` and of ``peer``, each in its own steady state.

    The GPU's clock follows the power the running kernel draws (under the board's power
    limit) with a delay of tens of milliseconds, so kernels alternated every few
    milliseconds (``paired_medians``) both run at the clock their mix allows. Here each
    kernel runs alone in blocks: ``settle`` seconds untimed, then samples of 10 queued calls
    for ``seconds``; the blocks alternate (order flipping each pair) ``blocks`` times.
    Returns ``(ours, peer, ratio, clocks)``: the medians of the blocks' medians, the median
    over block pairs of peer time / our time, and the mean SM clock (MHz) of each side's timed
    samples as a pair (None where NVML cannot be read).
    """
    import time

    def block(fn) -> tuple[float, float | None]:
        start = time.perf_counter()
        while time.perf_counter() - start < settle:
            _sample(fn, 10)
        samples, clocks = [], []
        start = time.perf_counter()
        while time.perf_counter() - start < seconds:
            samples.append(_sample(fn, 10))
            clock = sm_clock()
            if clock is not None:
                clocks.append(clock)
        return float(np.median(samples)), (float(np.mean(clocks)) if clocks else None)

    mine, theirs, my_clock, their_clock = [], [], [], []
    for b in range(blocks):
        pair = [(ours, mine, my_clock), (peer, theirs, their_clock)]
        for fn, times, clock in pair[:: -1 if b % 2 else 1]:
            t, c = block(fn)
            times.append(t)
            if c is not None:
                clock.append(c)
    ratio = float(np.median(np.array(theirs) / np.array(mine)))
    clocks = (float(np.mean(my_clock)), float(np.mean(their_clock))) if my_clock else None
    return float(np.median(mine)), float(np.median(theirs)), ratio, clocks


_NVML: list = []


def sm_clock() -> float | None:
    """The SM clock of GPU 0 in MHz, read through NVML (``libnvidia-ml.so.1``); None where
    NVML cannot be loaded."""
    import ctypes

    if not _NVML:
        try:
            lib = ctypes.CDLL("libnvidia-ml.so.1")
            handle = ctypes.c_void_p()
            if lib.nvmlInit_v2() or lib.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(handle)):
                raise OSError("NVML refused")
            _NVML.append((lib, handle))
        except OSError:
            _NVML.append(None)
    if _NVML[0] is None:
        return None
    lib, handle = _NVML[0]
    value = ctypes.c_uint()
    if lib.nvmlDeviceGetClockInfo(handle, 1, ctypes.byref(value)):  # 1: NVML_CLOCK_SM
        return None
    return float(value.value)
