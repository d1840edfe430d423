"""Compile-time benchmark: parse + build of the seed notebook's matmul, cold and warm cache.

Prints the time of each stage of ``tw.build``'s stage list (every lowering pass, codegen, the
C compiler, load) after parsing, the Python part (everything but the compiler), the share of a
cold build spent in the C compiler, and ratios to a baseline measured in the same run
(Python's own ``ast.parse`` + ``compile`` of the same script text, the floor for any front end
written in Python).

    python benchmarks/compile_time.py [--repeat 5]
"""

import argparse
import ast
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

import tilewright as tw
from tilewright import config

SEED_MATMUL = """
@tvm.script.ir_module
class MyModuleMatmul:
    @T.prim_func
    def main(A: T.Buffer[(1024, 1024), "float32"],
             B: T.Buffer[(1024, 1024), "float32"],
             C: T.Buffer[(1024, 1024), "float32"]) -> None:
        T.func_attr({"global_symbol": "main", "tir.noalias": True})
        for i, j, k in T.grid(1024, 1024, 1024):
            with T.block("C"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    C[vi, vj] = 0.0
                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
"""


def _timed(fn):
    start = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - start


def one_build(cache_dir: Path) -> dict[str, float]:
    """Seconds of each stage of parse → tw.build (its stage list: every lowering pass,
    codegen, compile, load) with ``cache_dir`` as the compile cache."""
    with config.scope(cache_dir=cache_dir):
        mod, parse = _timed(lambda: tw.script.from_source(SEED_MATMUL))
        rt_mod = tw.build(mod, target="c")
    return {"parse": parse, **rt_mod.build_times}


def check(cache_dir: Path) -> None:
    """The built kernel must compute a matmul (checked at a reduced size for speed)."""
    small = SEED_MATMUL.replace("1024", "64")
    with config.scope(cache_dir=cache_dir):
        rt_mod = tw.build(tw.script.from_source(small), target="c")
    rng = np.random.default_rng(1)
    a, b = rng.random((64, 64), dtype=np.float32), rng.random((64, 64), dtype=np.float32)
    c = np.full((64, 64), np.nan, dtype=np.float32)
    rt_mod["main"](a, b, c)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-5)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    baseline = statistics.median(
        _timed(lambda: compile(ast.parse(SEED_MATMUL), "<seed>", "exec"))[1]
        for _ in range(args.repeat)
    )
    cold, warm = [], []
    for _ in range(args.repeat):
        with tempfile.TemporaryDirectory(prefix="tw-bench-") as cache:
            check(Path(cache))
            cold.append(one_build(Path(cache) / "fresh"))
            warm.append(one_build(Path(cache) / "fresh"))

    def median(rows: list[dict[str, float]], key: str) -> float:
        return statistics.median(r[key] for r in rows)

    def python_part(row: dict[str, float]) -> float:
        return sum(row.values()) - row["compile"]

    stages = list(cold[0])
    print(
        f"seed matmul 1024^3, median of {args.repeat} builds; baseline = Python ast.parse+compile"
    )
    print(f"{'stage':<26}{'cold ms':>10}{'warm ms':>10}{'cold / baseline':>18}")
    for key in stages:
        c, w = median(cold, key), median(warm, key)
        print(f"{key:<26}{c * 1e3:>10.2f}{w * 1e3:>10.2f}{c / baseline:>18.1f}")
    cold_total = statistics.median(sum(r.values()) for r in cold)
    warm_total = statistics.median(sum(r.values()) for r in warm)
    print(
        f"{'total':<26}{cold_total * 1e3:>10.2f}{warm_total * 1e3:>10.2f}"
        f"{cold_total / baseline:>18.1f}"
    )
    py_cold = statistics.median(python_part(r) for r in cold)
    py_warm = statistics.median(python_part(r) for r in warm)
    cc_share = statistics.median(r["compile"] / sum(r.values()) for r in cold)
    print(
        f"{'python (all but compile)':<26}{py_cold * 1e3:>10.2f}{py_warm * 1e3:>10.2f}"
        f"{py_cold / baseline:>18.1f}"
    )
    print(
        f"baseline  {baseline * 1e3:.3f} ms; C compiler share of a cold build: {cc_share:.0%};"
        f" warm / cold: {warm_total / cold_total:.2f}"
    )


if __name__ == "__main__":
    main()
