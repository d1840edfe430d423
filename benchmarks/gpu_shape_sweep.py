"""Every library kernel on every problem of its shape sweep, on the GPU, against float64.

The sweeps are ``tilewright/tirx/shape_sweep.py``'s (each configuration of the tile-layer
and raw Hopper GEMMs, the tile-layer wgmma and mma GEMMs, the mma.sync TensorIR schedule and
the tile copies): problems that hit every residue of every tile size, sub-tile problems,
more tiles than CTAs and fewer, each grid / group_m setting. For each problem the inputs are
small random integers (exact in 16 bits, so that a product is exact in float32), the output
is filled with NaN first (an element never written fails), the kernel runs once and its
output is compared element by element with the float64 product (with the bias and the
activation), to within one unit in the last place of the output type.

Building ~4000 kernels takes minutes, so it is a phase of its own that can run on another
machine: ``--build DIR`` writes each sweep's artifacts (one zip a sweep, stamped with a hash
of the package's sources) and the run loads them; a missing zip is built there, on every
core, and a stale one is named (``--rebuild`` builds it again). Each sweep runs in a child
process: a kernel that faults takes down only its process, is recorded as crashed, and the
sweep goes on from the next problem.

    python benchmarks/gpu_shape_sweep.py [--only NAME ...] [--small] [--artifacts DIR]
        [--parallel N]
    python benchmarks/gpu_shape_sweep.py --build DIR          # no GPU needed

``--small`` takes a few small problems a sweep (what compute-sanitizer runs). Writes
``$OUT/gpu_shape_sweep.json`` when ``$OUT`` is set; exits 1 when any problem is wrong.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
import zipfile
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from tilewright.meta_schedule.testing.shape_sweep import (
    SWEEPS,
    TOLERANCE,
    Case,
    KernelSweep,
    reference,
)

PACKAGE = Path(__file__).resolve().parents[1] / "tilewright"
SMALL_CASES = 10  # a sweep's problems under --small
SMALL_ELEMENTS = 400 * 400  # ... each with an output of at most this many elements


def source_stamp() -> str:
    """A hash of the package's Python sources, recorded with the artifacts built from them."""
    digest = hashlib.sha256()
    for path in sorted(PACKAGE.rglob("*.py")):
        digest.update(str(path.relative_to(PACKAGE)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def select(sweep: KernelSweep, small: bool, reported: bool = False) -> list[tuple[int, Case]]:
    """The sweep's problems (index, case); with ``small`` a few small ones, with
    ``reported`` only the problems users reported."""
    cases = list(enumerate(sweep.cases()))
    if reported:
        return [(i, c) for i, c in cases if c.shape in sweep.reported]
    if not small:
        return cases
    shapes = sweep.operand_shapes
    tiny = [(i, c) for i, c in cases if _elements(shapes(c)[sweep.output]) <= SMALL_ELEMENTS]
    step = max(1, len(tiny) // SMALL_CASES)
    return tiny[::step][:SMALL_CASES]


def _elements(shape: tuple[int, ...]) -> int:
    count = 1
    for extent in shape:
        count *= extent
    return count


def _build_one(name: str, index: int) -> tuple[int, bytes | None, str | None]:
    """Case ``index`` of sweep ``name`` built: its artifact's bytes, or why it was refused."""
    import tilewright as tw

    sweep = SWEEPS[name]
    case = sweep.cases()[index]
    try:
        func = sweep.build(case)
    except ValueError as err:  # a problem the kernel refuses, with its reason
        return index, None, f"refused: {err}"
    try:
        artifact = tw.build_artifact(func, target=sweep.target)
    except Exception as err:  # a build failure is a result of the sweep, not its end
        return index, None, f"build failed: {type(err).__name__}: {err}"
    return index, artifact.to_bytes(), None


def zip_path(directory: Path, name: str) -> Path:
    return directory / (name.replace("/", "__") + ".zip")


def build(name: str, directory: Path, indices: list[int], jobs: int, keep: bool = False) -> Path:
    """Build the cases ``indices`` of sweep ``name`` into its zip under ``directory``; with
    ``keep`` the zip's other cases stay."""
    directory.mkdir(parents=True, exist_ok=True)
    path = zip_path(directory, name)
    entries: dict[str, Any] = {}
    old: dict[str, bytes] = {}
    stamp = source_stamp()
    if keep and path.exists():
        with zipfile.ZipFile(path) as archive:
            table = json.loads(archive.read("cases.json"))
            old = {n: archive.read(n) for n in archive.namelist() if n != "cases.json"}
        entries = table["cases"]
        if table["stamp"] != stamp:  # kept artifacts from other sources: say so
            stamp = f"{table['stamp']}+{stamp}"
    start = time.perf_counter()
    with (
        ProcessPoolExecutor(max_workers=jobs) as pool,
        zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive,
    ):
        for entry, payload in old.items():
            archive.writestr(entry, payload)
        stored: set[str] = {n.removesuffix(".art") for n in old}
        for index, payload, message in pool.map(
            _build_one, [name] * len(indices), indices, chunksize=4
        ):
            if payload is None:
                entries[str(index)] = {"error": message}
                continue
            key = hashlib.sha256(payload).hexdigest()[:24]
            if key not in stored:
                archive.writestr(f"{key}.art", payload)
                stored.add(key)
            entries[str(index)] = {"artifact": key}
        archive.writestr(
            "cases.json", json.dumps({"stamp": stamp, "sweep": name, "cases": entries})
        )
    took = time.perf_counter() - start
    print(
        f"built {name}: {len(indices)} problems, {len(stored)} distinct kernels in "
        f"{took:.0f} s ({path.stat().st_size / 1e6:.1f} MB)",
        flush=True,
    )
    return path


def manifest(path: Path) -> dict[str, Any] | None:
    """A sweep zip's table of cases (None when it is missing). Artifacts built from other
    sources than these are said to be so (``--rebuild`` builds them again)."""
    if not path.exists():
        return None
    with zipfile.ZipFile(path) as archive:
        table: dict[str, Any] = json.loads(archive.read("cases.json"))
    return table


# ---- the run (a child process a sweep; needs torch and a GPU) ----------------------------


def _torch_dtype(torch: Any, name: str) -> Any:
    return {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32}[name]


def _inputs(torch: Any, sweep: KernelSweep, case: Case) -> dict[str, Any]:
    """The arguments by name: small integers (exact in 16 bits) in, NaN in the output."""
    shapes = sweep.operand_shapes(case)
    out = sweep.output
    args: dict[str, Any] = {}
    for name, shape in shapes.items():
        dtype = _torch_dtype(torch, sweep.out_dtype if name in (out, "Bias") else sweep.in_dtype)
        if name == out:
            args[name] = torch.full(shape, float("nan"), dtype=dtype, device="cuda")
        else:
            span = 4 if name == "Bias" else 2
            values = torch.randint(-span, span + 1, shape, device="cuda")
            args[name] = values.to(dtype)
    return args


def check_case(sweep: KernelSweep, case: Case, artifact_bytes: bytes) -> dict[str, Any]:
    """Run one problem and compare it with the float64 reference."""
    import torch

    import tilewright as tw
    from tilewright.artifact import Artifact

    module = tw.runtime.load(Artifact.from_bytes(artifact_bytes))
    args = _inputs(torch, sweep, case)
    module["main"](*args.values())
    torch.cuda.synchronize()
    out = args[sweep.output].double()
    expected = reference(sweep, args, xp=torch)
    missing = int(torch.isnan(out).sum())
    tol = TOLERANCE[sweep.out_dtype] * (expected.abs() + 1)
    bad = ~((out - expected).abs() <= tol)
    count = int(bad.sum())
    result: dict[str, Any] = {"ok": count == 0, "wrong": count, "never_written": missing}
    if count:
        where = bad.nonzero()
        result["first_wrong"] = [int(x) for x in where[0]]
        result["rows"] = [int(where[:, 0].min()), int(where[:, 0].max())]
        if where.shape[1] > 1:
            result["columns"] = [int(where[:, 1].min()), int(where[:, 1].max())]
        finite = torch.nan_to_num(out, nan=0.0)
        scale = float(expected.abs().max()) or 1.0
        result["max_error"] = float((finite - expected).abs().max()) / scale
    return result


def worker(path: Path, name: str, indices: list[int], results: Path) -> None:
    """Check the cases ``indices`` of sweep ``name`` from its zip, a JSON line each."""
    import torch

    torch.manual_seed(0)
    sweep = SWEEPS[name]
    cases = sweep.cases()
    with zipfile.ZipFile(path) as archive, results.open("a") as out:
        table = json.loads(archive.read("cases.json"))["cases"]
        for index in indices:
            entry = table.get(str(index))
            record: dict[str, Any] = {"index": index, "case": str(cases[index])}
            if entry is None:
                record.update(ok=False, error="not built")
            elif "error" in entry:  # every problem of a sweep is one the kernel takes
                record.update(ok=False, error=entry["error"])
            else:
                payload = archive.read(f"{entry['artifact']}.art")
                record.update(check_case(sweep, cases[index], payload))
            out.write(json.dumps(record) + "\n")
            out.flush()


def run_sweep(name: str, path: Path, indices: list[int], timeout: float) -> list[dict]:
    """Run ``worker`` in child processes until every case has a result: a child that dies
    (a kernel fault) costs the case it was on, recorded as crashed."""
    with tempfile.TemporaryDirectory() as tmp:
        results = Path(tmp) / "results.jsonl"
        results.touch()
        left = list(indices)
        idle = 0  # child processes in a row that checked nothing
        while left:
            command = [sys.executable, __file__, "--worker", str(path), name]
            command += ["--cases", ",".join(map(str, left)), "--results", str(results)]
            try:
                proc = subprocess.run(command, timeout=timeout, capture_output=True, text=True)
                tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
            except subprocess.TimeoutExpired:
                tail = [f"timed out after {timeout:.0f} s"]
            finished = {json.loads(line)["index"] for line in results.read_text().splitlines()}
            before, left = len(left), [i for i in indices if i not in finished]
            idle = idle + 1 if len(left) == before else 0
            # The child died on left[0]; one that died twice before checking anything
            # (it cannot start) takes the rest of the sweep with it.
            crashed = left if idle >= 2 else left[:1]
            cases = SWEEPS[name].cases()
            with results.open("a") as out:
                for index in crashed:
                    record = {"index": index, "case": str(cases[index]), "ok": False}
                    record["error"] = "crashed: " + " | ".join(tail)
                    out.write(json.dumps(record) + "\n")
            left = left[len(crashed) :]
        return [json.loads(line) for line in results.read_text().splitlines()]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="*", default=sorted(SWEEPS), help="sweep names")
    parser.add_argument("--small", action="store_true", help="a few small problems a sweep")
    parser.add_argument(
        "--reported", action="store_true", help="only the problems users reported wrong"
    )
    parser.add_argument("--artifacts", type=Path, default=Path("build/sweep"))
    parser.add_argument("--build", type=Path, help="only build the artifacts into this folder")
    parser.add_argument("--rebuild", action="store_true", help="build stale artifacts again")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds a child process")
    parser.add_argument("--parallel", type=int, default=4, help="sweeps checked at once")
    parser.add_argument("--worker", nargs=2, metavar=("ZIP", "NAME"), help=argparse.SUPPRESS)
    parser.add_argument("--cases", help=argparse.SUPPRESS)
    parser.add_argument("--results", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(Path(args.worker[0]), args.worker[1], [int(i) for i in args.cases.split(",")],
               args.results)  # fmt: skip
        return 0
    unknown = sorted(set(args.only) - set(SWEEPS))
    if unknown:
        parser.error(f"unknown sweeps {unknown}; known: {sorted(SWEEPS)}")
    directory = args.build or args.artifacts
    paths = {}
    for name in args.only:
        path = zip_path(directory, name)
        small = args.small and not args.build
        needed = [i for i, _ in select(SWEEPS[name], small, args.reported)]
        table = manifest(path)
        stale = table is not None and table["stamp"] != source_stamp()
        if stale and not args.rebuild:
            print(f"{name}: artifacts built from other sources ({table['stamp']}; these are "
                  f"{source_stamp()}): run with --rebuild to build them again")  # fmt: skip
        if args.build or table is None or (stale and args.rebuild):
            path = build(name, directory, needed, args.jobs)
        elif any(str(i) not in table["cases"] for i in needed):
            missing = [i for i in needed if str(i) not in table["cases"]]
            path = build(name, directory, missing, args.jobs, keep=True)
        paths[name] = path
    if args.build:
        return 0
    report: dict[str, Any] = {}
    rows = []

    def one(name: str) -> tuple[list[dict], float]:
        start = time.perf_counter()
        indices = [i for i, _ in select(SWEEPS[name], args.small, args.reported)]
        return run_sweep(name, paths[name], indices, args.timeout), time.perf_counter() - start

    with ThreadPoolExecutor(max_workers=args.parallel) as pool:
        runs = dict(zip(args.only, pool.map(one, args.only)))
    for name in args.only:
        results, took = runs[name]
        failed = [r for r in results if not r["ok"]]
        report[name] = {"problems": len(results), "correct": len(results) - len(failed),
                        "failed": failed, "seconds": took}  # fmt: skip
        rows.append((name, len(results), len(results) - len(failed), len(failed), took))
        for r in failed[:5]:
            detail = {k: v for k, v in r.items() if k not in ("index", "case", "ok")}
            print(f"  FAILED {name} {r['case']}: {json.dumps(detail)}")
        print(f"{name}: {len(results) - len(failed)} of {len(results)} correct ({took:.0f} s)",
              flush=True)  # fmt: skip
    print(f"{'sweep':44} {'problems':>8} {'correct':>8} {'failed':>6} {'s':>5}")
    for name, total, correct, failed_count, took in rows:
        print(f"{name:44} {total:8} {correct:8} {failed_count:6} {took:5.0f}")
    out_dir = os.environ.get("OUT")
    if out_dir:
        suffix = "_small" if args.small else "_reported" if args.reported else ""
        Path(out_dir, f"gpu_shape_sweep{suffix}.json").write_text(json.dumps(report))
    return 1 if any(row[3] for row in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
