"""Host cost of one kernel call from Python: ours (checked, and from the launch cache) and torch.

The kernel is an elementwise add of 4096 float32 (a couple of microseconds on the GPU), so a
loop of calls is bound by the host. Each contender is called ``CALLS`` times back to back,
then the device is drained; the figure is microseconds per call on the host's clock (median
of 5 rounds, contenders interleaved). Contenders:

- ours, cached: ``f(a, b, c)`` with torch tensors; after the first call the launch cache
  fills in the new pointers and launches (``cuda_runtime.launch_cache``);
- ours, cached, tilewright arrays: the same with ``tw.nd`` arrays on the GPU;
- ours, checked: ``f.bind(a, b, c)()``, every check and the host plan each call;
- torch: ``torch.add(a, b, out=c)``.

Results are checked against torch first. Writes a cProfile of the checked path under $OUT
when set.

    python benchmarks/gpu_launch.py
"""

import cProfile
import io
import os
import pstats
import time
from pathlib import Path

import numpy as np
import torch

import tilewright as tw
from tilewright.schedule import Schedule
from tilewright.script import tir as T

N = 4096
CALLS = 2000


@T.prim_func
def add(A: T.Buffer((N,), "float32"), B: T.Buffer((N,), "float32"), C: T.Buffer((N,), "float32")):
    for i in range(N):
        with T.block("C"):
            vi = T.axis.spatial(N, i)
            C[vi] = A[vi] + B[vi]


def build():
    sch = Schedule(add)
    (i,) = sch.get_loops(sch.get_block("C"))
    bx, tx = sch.split(i, [None, 256])
    sch.bind(bx, "blockIdx.x")
    sch.bind(tx, "threadIdx.x")
    return tw.build(sch.mod, target="cuda")


def per_call_us(fn) -> float:
    fn()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(CALLS):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / CALLS * 1e6


def main() -> None:
    f = build()["main"]
    a, b, c = (torch.rand(N, device="cuda") for _ in range(3))
    f(a, b, c)
    torch.testing.assert_close(c, a + b)
    x, y, z = (tw.nd.array(t.cpu().numpy(), tw.cuda(0)) for t in (a, b, c))
    f(x, y, z)
    np.testing.assert_allclose(z.numpy(), (a + b).cpu().numpy(), rtol=1e-6)
    contenders = {
        "ours, cached (torch tensors)": lambda: f(a, b, c),
        "ours, cached (tw.nd arrays)": lambda: f(x, y, z),
        "ours, checked (f.bind(...)())": lambda: f.bind(a, b, c)(),
        "torch.add(a, b, out=c)": lambda: torch.add(a, b, out=c),
    }
    times: dict[str, list[float]] = {name: [] for name in contenders}
    for _ in range(5):
        for name, fn in contenders.items():
            times[name].append(per_call_us(fn))
    torch_us = float(np.median(times["torch.add(a, b, out=c)"]))
    print(f"host time per call, {CALLS} calls back to back, median of 5 rounds:")
    for name, samples in times.items():
        us = float(np.median(samples))
        print(f"  {name:32s} {us:7.2f} us   torch / this {torch_us / us:5.2f}")
    out = os.environ.get("OUT")
    if out:
        profile = cProfile.Profile()
        profile.enable()
        for _ in range(500):
            f.bind(a, b, c)()
        profile.disable()
        text = io.StringIO()
        pstats.Stats(profile, stream=text).sort_stats("tottime").print_stats(30)
        Path(out, "gpu_launch_profile.txt").write_text(text.getvalue())


if __name__ == "__main__":
    main()
