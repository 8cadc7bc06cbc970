#!/usr/bin/env python3
"""Compares kopt's default heuristic with the best schedule of a recorded sweep.

    bench/check_heuristic.py SWEEP_JSON... [--kopt-space PATH] [--max-gap 0.15]

Each SWEEP_JSON is bench/run_sweep.py's sweep.json (or .json.gz). For every sweep
problem (random samples are skipped) it asks `kopt-space --default` for the heuristic's
schedule of that workload and finds the kernel with that schedule among the measured
ones (in the last sweep given that measured it). Sweeps are separate runs, so kernels
of different sweeps are compared by their speed relative to cuBLAS in their own run
(cuBLAS time / kernel time): the best is the highest such ratio over all sweeps, and
default / best is the default's ratio over the best's. It prints default / best and both
ratios to cuBLAS. A problem whose default schedule was not measured is reported as
such. Exit code: 0 when every measured default is within --max-gap of the best
(default 0.15, the issue #4 target), 1 otherwise or when a default was not measured,
2 on usage errors.
"""
import argparse
import gzip
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from compile_sweep import space_args  # noqa: E402  (kopt-space's workload flags)
KEYS = ("instruction", "copy", "block_m", "block_n", "block_k", "warp_m", "warp_n",
        "stages", "split_k", "swizzle", "vector_width", "persistent", "warp_specialize",
        "tma_store")
# Keys that older records leave out, with the value they stand for.
OPTIONAL = {"persistent": False, "warp_specialize": False, "tma_store": False}


def value(schedule, key):
    return schedule.get(key, OPTIONAL.get(key))


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f)


def default_schedule(tool, p):
    args = [tool] + space_args(p) + ["--default"]
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(args)}: {r.stderr.strip()}")
    return json.loads(r.stdout)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("sweep_json", nargs="+")
    ap.add_argument("--kopt-space",
                    default=os.path.join(os.environ.get("KOPT_BUILD_DIR",
                                                        os.path.join(ROOT, "build")),
                                         "bin", "kopt-space"))
    ap.add_argument("--max-gap", type=float, default=0.15)
    args = ap.parse_args(argv)
    problems = {}
    for path in args.sweep_json:
        try:
            record = load(path)
        except (OSError, ValueError) as e:
            print(f"check_heuristic: error: {path}: {e}", file=sys.stderr)
            return 2
        for p in record.get("problems", []):
            problems.setdefault(p["id"], []).append(p)
    if not os.access(args.kopt_space, os.X_OK):
        print(f"check_heuristic: error: {args.kopt_space} not found", file=sys.stderr)
        return 2
    worst, bad = 1.0, 0
    print(f"{'problem':52} {'default/best':>12} {'default/cuBLAS':>14} {'best/cuBLAS':>11}")
    for runs in problems.values():
        pid = runs[-1]["id"]
        if pid.startswith("random"):
            continue
        timed = [k for p in runs for k in p["kernels"]
                 if k.get("ms") and k.get("ratio_to_cublas")]
        if not timed:
            continue
        best = max(timed, key=lambda k: k["ratio_to_cublas"])
        d = default_schedule(args.kopt_space, runs[-1])
        # The last sweep that measured the default's schedule.
        match = [k for p in runs for k in p["kernels"]
                 if k.get("ms") and k.get("ratio_to_cublas")
                 and all(value(k["schedule"], x) == value(d, x) for x in KEYS)]
        if not match:
            print(f"{pid[:52]:52} {'not measured':>12}")
            bad += 1
            continue
        speed = match[-1]["ratio_to_cublas"] / best["ratio_to_cublas"]
        worst = min(worst, speed)
        bad += speed < 1 - args.max_gap
        print(f"{pid[:52]:52} {speed:12.3f} {match[-1]['ratio_to_cublas']:14.3f} "
              f"{best['ratio_to_cublas']:11.3f}")
    print(f"worst default/best: {worst:.3f}; problems off by more than "
          f"{args.max_gap:.0%} or unmeasured: {bad}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
