"""Bounds checks: what ``bounds_check=True`` costs, measured beside the unchecked kernel.

Each kernel is built three ways and timed in interleaved rounds (medians):

- ``plain``: ``tw.build(mod, target)``;
- ``checked``: ``tw.build(mod, target, bounds_check=True)``, what a user gets: accesses the
  analyzer proves in range carry no check, the others are checked and the call reads the
  error record back after the kernel;
- ``every access``: the same with ``instrument_bounds(elide_proven=False)``, the raw cost of
  checking each load and store.

Kernels: on the CPU the seed matmul under ``tilewright.demo.cpu_schedule`` and a gather through
an index array (``B[i] = A[idx[i]]``, whose loads cannot be proven in range); on a CUDA GPU
(when present) the notebook's ``blocking_with_shared`` (8, 8, 8, 8, 8) matmul and the same
gather. Every result is checked against numpy first. Writes JSON under $OUT when set.

    python benchmarks/bounds_check.py [--size 1024] [--rounds 5] [--gpu-only]
"""

import argparse
import json
import os
from functools import partial
from pathlib import Path

import numpy as np

import tilewright as tw
from tilewright.backend import backend_for
from tilewright.demo import blocking_with_shared, cpu_schedule, matmul_module
from tilewright.runtime.cuda_runtime import device_count
from tilewright.script import tir as T
from tilewright.target import Target
from tilewright.transform import Stage, instrument_bounds, lower_module

GATHER = 1 << 22


def gather_module(n: int) -> tw.IRModule:
    @T.prim_func
    def main(A: T.Buffer((n,), "float32"), idx: T.Buffer((n,), "int32"),
             B: T.Buffer((n,), "float32")) -> None:  # fmt: skip
        for i in range(n):
            with T.block("B"):
                vi = T.axis.spatial(n, i)
                B[vi] = A[idx[vi]]

    return tw.IRModule({"main": main})


def on_threads(mod: tw.IRModule, threads: int = 256) -> tw.IRModule:
    sch = tw.tir.Schedule(mod)
    bx, tx = sch.split(sch.get_loops(sch.get_block("B"))[0], [None, threads])
    sch.bind(bx, "blockIdx.x")
    sch.bind(tx, "threadIdx.x")
    return sch.mod


def build_every_access_checked(mod: tw.IRModule, target: str) -> tw.runtime.Module:
    resolved = Target(target)
    stages = tuple(
        Stage(s.name, partial(instrument_bounds, elide_proven=False))
        if s.name == "instrument_bounds"
        else s
        for s in backend_for(resolved).lowering(resolved, bounds_check=True)
    )
    return tw.build_lowered(lower_module(mod, stages), target)


def variants(mod: tw.IRModule, target: str) -> dict[str, tw.runtime.Module]:
    return {
        "plain": tw.build(mod, target),
        "checked": tw.build(mod, target, bounds_check=True),
        "every access": build_every_access_checked(mod, target),
    }


def measure(label: str, built: dict, args: list, check, dev, rounds: int, number: int) -> dict:
    """Median seconds per call of each variant, rounds interleaved; results checked first."""
    for name, rt_mod in built.items():
        rt_mod["main"](*args)
        check(name)
    timers = {
        name: rt_mod.time_evaluator("main", dev, number=number, repeat=3)
        for name, rt_mod in built.items()
    }
    times: dict[str, list[float]] = {name: [] for name in built}
    for _ in range(rounds):
        for name, timer in timers.items():
            times[name].append(timer(*args).median)
    medians = {name: float(np.median(values)) for name, values in times.items()}
    checks = {name: len(rt_mod["main"].signature.bounds_checks) for name, rt_mod in built.items()}
    same = {name for name, m in built.items() if m.get_source() == built["plain"].get_source()}
    row = {"kernel": label, "device": str(dev), "ms": {}, "checks": checks, "ratio": {},
           "same_source_as_plain": sorted(same)}  # fmt: skip
    print(f"\n{label} on {dev}")
    for name, seconds in medians.items():
        ratio = seconds / medians["plain"]
        spread = (max(times[name]) - min(times[name])) / seconds
        row["ms"][name] = seconds * 1e3
        row["ratio"][name] = ratio
        note = ", same source" if name != "plain" and name in same else ""
        print(
            f"  {name:13} {seconds * 1e3:9.3f} ms  x{ratio:5.2f} plain  "
            f"({checks[name]} checks{note}; spread {spread:.0%} over {rounds} rounds)"
        )
    return row


def matmul_case(mod: tw.IRModule, target: str, n: int, dev, rounds: int, number: int) -> dict:
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((n, n), dtype=np.float32) for _ in range(2))
    ref = a.astype(np.float64) @ b.astype(np.float64)
    arrays = [tw.nd.array(x, dev) for x in (a, b, np.full((n, n), np.nan, "float32"))]

    def check(name: str) -> None:
        got = arrays[2].numpy()
        err = float(np.max(np.abs(got - ref)) / np.max(np.abs(ref)))
        assert err < 1e-4, f"{name}: wrong result (relative error {err:.1e})"
        arrays[2].copyfrom(np.full((n, n), np.nan, "float32"))

    label = f"matmul {n}^3 ({'cpu_schedule' if target == 'c' else 'blocking_with_shared'})"
    return measure(label, variants(mod, target), arrays, check, dev, rounds, number)


def gather_case(target: str, dev, rounds: int, number: int) -> dict:
    mod = gather_module(GATHER)
    if target != "c":
        mod = on_threads(mod)
    rng = np.random.default_rng(1)
    a = rng.standard_normal(GATHER, dtype=np.float32)
    idx = rng.integers(0, GATHER, GATHER).astype("int32")
    arrays = [tw.nd.array(x, dev) for x in (a, idx, np.zeros(GATHER, "float32"))]

    def check(name: str) -> None:
        assert np.array_equal(arrays[2].numpy(), a[idx]), f"{name}: wrong gather"

    return measure(f"gather of {GATHER} floats", variants(mod, target), arrays, check, dev,
                   rounds, number)  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--gpu-only", action="store_true")
    args = parser.parse_args()
    n = args.size
    rows = []
    if not args.gpu_only:
        print(f"CPU: {os.cpu_count()} cores")
        cpu = tw.cpu(0)
        rows.append(matmul_case(cpu_schedule(matmul_module(n)).mod, "c", n, cpu, args.rounds, 1))
        rows.append(gather_case("c", cpu, args.rounds, 10))
    if device_count():
        gpu = tw.cuda(0)
        sch = blocking_with_shared(tw.tir.Schedule(matmul_module(n)), 8, 8, 8, 8, 8)
        rows.append(matmul_case(sch.mod, "cuda", n, gpu, args.rounds, 20))
        rows.append(gather_case("cuda", gpu, args.rounds, 50))
    else:
        print("\nno CUDA GPU: the CUDA cases are skipped")
    if os.environ.get("OUT"):
        path = Path(os.environ["OUT"]) / "bounds_check.json"
        path.write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
