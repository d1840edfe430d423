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
    times = []
    for _ in range(runs):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(calls):
            fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1e3 / calls)
    return float(np.median(times))
