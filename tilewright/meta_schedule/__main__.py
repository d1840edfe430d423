"""The tuner's command line.

    python -m tilewright.meta_schedule tune FILE.py --target cuda --trials 1000 --work-dir DIR
        [--seconds 300]
    python -m tilewright.meta_schedule show DIR

``tune`` loads ``FILE.py`` (a Python file defining an ``IRModule`` or a ``T.prim_func``;
``--name`` picks one when it defines several) and tunes it into ``DIR``; a second run with
the same ``DIR`` resumes. ``show`` prints, per workload of ``DIR``'s database, the best
record: its speed, its trace and the scheduled module.
"""

from __future__ import annotations

import argparse
import runpy
import sys

from tilewright.ir import IRModule, PrimFunc


def _load_module(path: str, name: str | None) -> IRModule | PrimFunc:
    namespace = runpy.run_path(path, run_name="__tilewright_tune__")
    found = {k: v for k, v in namespace.items() if isinstance(v, IRModule | PrimFunc)}
    if name is not None:
        if name not in found:
            raise SystemExit(
                f"{path}: no IRModule or prim_func named {name!r} (found: "
                f"{', '.join(found) or 'none'})"
            )
        return found[name]
    if len(found) != 1:
        raise SystemExit(
            f"{path}: defines {len(found)} IRModules/prim_funcs "
            f"({', '.join(found) or 'none'}); pick one with --name"
        )
    return next(iter(found.values()))


def _tune(args: argparse.Namespace) -> None:
    from tilewright.meta_schedule.tune import tune_tir

    mod = _load_module(args.file, args.name)
    tune_tir(
        mod,
        args.target,
        work_dir=args.work_dir,
        max_trials_global=args.trials,
        num_trials_per_iter=args.per_iter,
        strategy=args.strategy,
        cost_model=args.cost_model,
        seed=args.seed,
        max_seconds=args.seconds,
    )
    _show(argparse.Namespace(work_dir=args.work_dir, trace=False))


def _show(args: argparse.Namespace) -> None:
    from tilewright.meta_schedule.database import JSONDatabase
    from tilewright.meta_schedule.database.database import rank_records
    from tilewright.meta_schedule.flop_count import estimate_flops

    try:
        db = JSONDatabase(work_dir=args.work_dir, allow_missing=False)
    except FileNotFoundError as err:
        raise SystemExit(f"{args.work_dir}: no tuning database here ({err})") from None
    groups: dict[int, list] = {}
    for record in db.get_all_tuning_records():
        groups.setdefault(record.workload.shash, []).append(record)
    if not groups:
        print(f"{args.work_dir}: no tuning records")
        return
    for shash, records in groups.items():
        workload = records[0].workload
        valid = rank_records(records, len(records))
        candidates = len(
            {r.candidate_shash if r.candidate_shash is not None else id(r) for r in records}
        )
        names = ", ".join(name for name, _ in workload.mod.items())
        print(
            f"workload {names} (hash {shash}): {candidates} candidates, {len(valid)} valid, "
            f"{len(records)} records"
        )
        if not valid:
            continue
        best = valid[0]
        flops = estimate_flops(workload.mod)
        secs = best.median_secs
        print(
            f"best: {secs * 1e3:.4f} ms, {flops / secs / 1e9:.2f} GFLOP/s on {best.target} "
            f"(median of {len(best.run_secs or ())} timings)"
        )
        if args.trace:
            print("trace:")
            print(best.trace)
        print(best.as_schedule().mod.script())


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m tilewright.meta_schedule")
    sub = parser.add_subparsers(dest="command", required=True)
    tune = sub.add_parser("tune", help="tune the module a Python file defines")
    tune.add_argument("file")
    tune.add_argument("--target", required=True)
    tune.add_argument("--trials", type=int, required=True)
    tune.add_argument("--work-dir", required=True)
    tune.add_argument("--per-iter", type=int, default=64)
    tune.add_argument("--name", default=None)
    tune.add_argument("--strategy", default="evolutionary")
    tune.add_argument("--cost-model", default="xgb")
    tune.add_argument("--seed", type=int, default=0)
    tune.add_argument(
        "--seconds",
        type=float,
        default=None,
        help="a wall-time budget: no work starts that cannot finish inside it",
    )
    show = sub.add_parser("show", help="print a work_dir's best schedules")
    show.add_argument("work_dir")
    show.add_argument("--trace", action="store_true", help="print the best trace too")
    args = parser.parse_args(argv)
    if args.command == "tune":
        _tune(args)
    else:
        args.trace = getattr(args, "trace", False)
        _show(args)


if __name__ == "__main__":
    main(sys.argv[1:])
