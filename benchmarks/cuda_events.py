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
