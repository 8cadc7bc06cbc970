#!/usr/bin/env python3
"""The matmul schedule-sweep runner (GPU host): every compiled schedule of every
problem checked against a float64 reference and timed beside cuBLAS, in one run.

    bench/run_sweep.py --sweep-dir DIR --out OUT [--only ID]... [--runs 30]
                       [--warmup 10] [--min-runs 10] [--time-budget 1]
                       [--deadline 480] [--timeout 60] [--seed S]
                       [--dry-run]

DIR is what bench/compile_sweep.py wrote: DIR/index.json and, per kernel, a PTX file
and its launch manifest (docs/manifest.md: one matmul kernel with the parameters a,
b, result). The runner needs Python 3, torch and the kopt Python package
(PYTHONPATH=<bundle>/python; docs/python.md); no LLVM. Its worker (sweep_worker.py)
shares bench/run_suite.py's base class (gpu_worker.py): the timing routine, the L2
flush, the check against the reference and the launch through the package (kopt.load,
Function.launch: the C++ runtime checks the manifest, encodes the tensor maps and packs
the arguments). The index and its checks: sweep_index.py; the record and sweep.md:
sweep_record.py; the worker processes: worker_process.py.

Per problem (m, n, k, dtype, out_dtype, transpose_a, transpose_b and, for f32, an
optional tf32), in a worker process:
  1. fresh random inputs on the GPU (uniform(-1, 1), as run_suite.py draws GEMM
     operands; seed = --seed + crc32(id)) and the float64 product computed on the
     GPU once (the reference);
  2. cuBLAS: torch.matmul on the same operands, transposed operands passed as views
     (a Linear layer's weight.mT), timed with the same routine; for a problem with
     "tf32": true (kopt.matmul {tf32}) with allow_tf32 = True (restored after), and
     the tolerance below is at least kopt_suite.TF32_TOLERANCE;
  3. per kernel (the "default"-tagged one first): the manifest loaded (kopt.load),
     the output poisoned with NaN, one launch, the output checked against the
     reference (relative L2 error within the dtype's tolerance, or 4 times
     cuBLAS's own error when larger; no NaN/Inf); an incorrect kernel is not timed.
     A CUDA error is recorded as the kernel's error; when it leaves the context
     unusable (a sticky error) the worker exits and a new one goes on with the next
     kernel. A kernel (or a problem's setup) that takes longer than --timeout
     seconds is killed the same way;
  4. correct kernels are timed: warm-up, then --runs runs (fewer, at least
     --min-runs, when they would take longer than --time-budget seconds), each
     after zeroing a 256 MiB buffer (L2 flush), CUDA events, median;
     TFLOP/s = 2 m n k / time, ratio_to_cublas = cuBLAS time / kernel time.
Nothing starts after --deadline seconds: what is not reached is recorded as
skipped, and the record is always written.

Writes OUT/sweep.json (the record), OUT/sweep.md (tables) and OUT/run.log. Exit code:
0 when every kernel that ran was correct (skipped kernels do not count), 1 when a
kernel was incorrect or failed (CUDA error, timeout, crash, invalid manifest) or a
problem could not be set up, 2 on usage errors (and an unreadable or malformed
index). --dry-run checks DIR (index, manifests, PTX entries) without torch, cupy or
a GPU: exit code 0 when everything is consistent, 1 otherwise.
"""
import argparse
import collections
import json
import os
import shlex
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import kopt_suite as ks  # noqa: E402
import gpu_worker  # noqa: E402  (the timing options and constants)
import sweep_worker  # noqa: E402  (the worker; it imports torch when it starts)
import worker_process  # noqa: E402
from sweep_index import (SweepError, check_kernel, kernel_order, load_index, log,  # noqa: E402
                         operand_shapes, problem_flops, select, _LOG)
from sweep_record import build_record, exit_code, markdown, fmt_ratio  # noqa: E402

INPUTS = "uniform(-1, 1) drawn on the GPU (torch.rand), seed = --seed + crc32(problem id)"


# ======================================================================= the driver

def default_worker_cmd(plan_path):
    # The worker imports this file as the module run_sweep (not __main__).
    return [sys.executable, "-c", "import sys; sys.path.insert(0, sys.argv[1]); "
            "import run_sweep; sys.exit(run_sweep.main(['--worker', sys.argv[2]]))",
            HERE, plan_path]


def drive(args, problems, results, worker_cmd=None):
    """Runs the kernels not yet in `results` in worker processes. `results` is
    {id: {"kernels": {index: record}}} (invalid kernels already recorded) and is
    filled in: per problem seed, cublas, tolerance, error; per kernel its record.
    Returns the environment the first worker reported (None if none did)."""
    out = args.out
    events_path = os.path.join(out, "events.jsonl")
    if os.path.exists(events_path):
        os.remove(events_path)
    remaining = [(p["id"], i) for p in problems for i in kernel_order(p)
                 if i not in results[p["id"]]["kernels"]]
    total = len(remaining)
    env, pos, failed_starts, workers = None, 0, 0, 0
    deadline = args.t_start + args.deadline if args.deadline > 0 else float("inf")
    options = {**gpu_worker.timing_options(args), "reduced_precision_reduction": False,
               "deadline": deadline}
    stop_reason = None

    def drop_problem(pid, status, why):
        for key in [x for x in remaining if x[0] == pid]:
            results[pid]["kernels"][key[1]] = {"status": status, "error": why}
            remaining.remove(key)

    while remaining:
        if time.time() > deadline:
            stop_reason = "past --deadline"
            break
        todo = []
        for pid, i in remaining:
            if not todo or todo[-1]["id"] != pid:
                todo.append({"id": pid, "kernels": [], "cublas": results[pid].get("cublas")})
            todo[-1]["kernels"].append(i)
        plan = {"sweep_dir": args.sweep_dir, "events": events_path, "options": options,
                "first": env is None, "driver_pid": os.getpid(), "todo": todo}
        plan_path = os.path.join(out, "plan.json")
        with open(plan_path, "w") as f:
            json.dump(plan, f)
        proc, reader, tail = worker_process.start_worker(
            (worker_cmd or default_worker_cmd)(plan_path), _LOG["file"])
        workers += 1
        step, since = ("startup", None, None), time.monotonic()
        fatal, progress, killed, deadline_hit = None, False, None, False
        while True:
            rc = proc.poll()
            events, pos = worker_process.read_events(events_path, pos)
            for ev in events:
                kind = ev.get("event")
                now = time.monotonic()
                if kind == "env":
                    env = ev
                    step, since = ("idle", None, None), now
                elif kind == "setup":
                    step, since, progress = ("setup", ev["id"], None), now, True
                elif kind == "problem":
                    r = results[ev["id"]]
                    for key in ("seed", "cublas", "tolerance", "dtype_tolerance", "setup_s"):
                        if key == "cublas" and r.get("cublas"):
                            continue  # timed by an earlier worker
                        if key in ev:
                            r[key] = ev[key]
                    step, since = ("idle", ev["id"], None), now
                elif kind == "problem_error":
                    results[ev["id"]]["error"] = ev["error"]
                    drop_problem(ev["id"], "not-run", f"the problem's setup failed: {ev['error']}")
                    step, since, progress = ("idle", None, None), now, True
                elif kind == "start":
                    step, since, progress = ("kernel", ev["id"], ev["kernel"]), now, True
                elif kind == "kernel":
                    key = (ev["id"], ev["kernel"])
                    results[ev["id"]]["kernels"][ev["kernel"]] = ev["record"]
                    if key in remaining:
                        remaining.remove(key)
                    step, since, progress = ("idle", ev["id"], None), now, True
                elif kind == "problem_done":
                    step, since = ("idle", None, None), now
                elif kind == "deadline":
                    deadline_hit = True
                elif kind == "fatal":
                    fatal = ev.get("error")
            if rc is not None:
                break
            limit = args.startup_timeout if step[0] == "startup" else args.timeout
            if time.monotonic() - since > limit:
                killed = f"no progress for {limit:g} s"
                log(f"{step[1] or 'worker'}" + (f" kernel {step[2]}" if step[2] is not None
                                                 else "") + f": {killed}: stopping the worker")
                worker_process.kill_worker(proc)
                rc = proc.returncode
                break
            time.sleep(0.1)
        reader.join(timeout=5)
        proc.stdout.close()
        try:  # a line the worker was writing when it died is not an event
            pos = os.path.getsize(events_path)
        except OSError:
            pass
        why = (killed or (f"signal {-rc}" if rc < 0 else f"exit code {rc}"))
        last = " | ".join(list(tail)[-5:])
        if step[0] == "kernel" and (step[1], step[2]) in remaining:
            results[step[1]]["kernels"][step[2]] = {
                "status": "timeout" if killed else "crashed",
                "error": f"worker {'killed' if killed else 'died'} ({why}) in this kernel; "
                         f"last output: {last}"}
            remaining.remove((step[1], step[2]))
        elif step[0] == "setup":
            err = f"worker {'killed' if killed else 'died'} ({why}) in the problem's setup"
            results[step[1]]["error"] = err
            drop_problem(step[1], "not-run", err)
        if deadline_hit:
            stop_reason = "past --deadline"
            break
        if not progress and remaining:
            failed_starts += 1
            if fatal or failed_starts >= 2:
                why = fatal or f"{why}; last output: {last}"
                log(f"error: the worker could not run: {why}")
                for pid, i in list(remaining):
                    results[pid]["kernels"][i] = {"status": "not-run",
                                                  "error": f"worker could not run: {why}"}
                remaining.clear()
                break
        if remaining:
            if workers > total + 3:
                stop_reason = "too many worker restarts"
                break
            log(f"starting a new worker for the {len(remaining)} remaining kernels")
    for pid, i in remaining:
        results[pid]["kernels"][i] = {"status": "skipped", "error": stop_reason or "not reached"}
    return env


# ======================================================================= main

def dry_run(args, index, problems):
    """Checks every referenced file without torch, cupy or a GPU."""
    bad, nk = 0, 0
    for p in problems:
        tags = collections.Counter(t for k in p["kernels"] for t in k["tags"])
        errors, warns = [], []
        for kentry in p["kernels"]:
            err, warnings, _ = check_kernel(args.sweep_dir, p, kentry)
            nk += 1
            if err:
                errors.append(f"{kentry['file']}: {err}")
            warns += [f"{kentry['file']}: {w}" for w in warnings]
        ndef = tags.get("default", 0)
        if ndef > 1:
            warns.append(f"{ndef} kernels are tagged default (the first is used)")
        bad += len(errors)
        a, b, _ = operand_shapes(p)
        log(f"{p['id']}: {p['m']}x{p['n']}x{p['k']} {p['dtype']}->{p['out_dtype']}"
            f"{' tf32' if p.get('tf32') else ''} "
            f"(a {a}, b {b}), {len(p['kernels'])} kernels "
            f"({', '.join(f'{t} {n}' for t, n in sorted(tags.items())) or 'no tags'}), "
            f"{problem_flops(p) / 1e9:.4g} GFLOP" + (f", {len(errors)} with errors" if errors
                                                     else ""))
        for e in errors:
            log(f"  error: {e}")
        for w in warns:
            log(f"  warning: {w}")
    log(f"dry run: {len(problems)} problems, {nk} kernels, {bad} kernels with errors")
    return 1 if bad else 0


def write_markdown(out, record):
    """OUT/sweep.md; returns [its path]."""
    path = os.path.join(out, "sweep.md")
    with open(path, "w") as f:
        f.write(markdown(record))
    return [path]


def main(argv=None, worker_cmd=None):
    ap = argparse.ArgumentParser(description="Matmul schedule-sweep runner: every compiled "
                                 "schedule checked and timed beside cuBLAS (GPU host).")
    ap.add_argument("--sweep-dir", help="bench/compile_sweep.py's output (index.json)")
    ap.add_argument("--out", help="output folder (sweep.json, sweep.md, run.log)")
    ap.add_argument("--only", action="append", default=[], metavar="ID",
                    help="problems to run: ids or shell patterns ('random_*'), repeatable "
                         "or comma-separated (default: all)")
    gpu_worker.add_timing_options(ap, runs=30, time_budget=1.0, deadline=480.0,
                                  unit="kernel", starts="nothing new")
    ap.add_argument("--timeout", type=float, default=60.0,
                    help="seconds a kernel or a problem's setup may take before the worker "
                         "is killed (default 60)")
    ap.add_argument("--startup-timeout", type=float, default=180.0, help=argparse.SUPPRESS)
    ap.add_argument("--dry-run", action="store_true",
                    help="check the index, manifests and PTX; no GPU, no torch")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        return worker_process.worker_main(args.worker, sweep_worker.SweepWorker)
    if not args.sweep_dir:
        ap.error("--sweep-dir is required")
    gpu_worker.check_timing_options(ap, args)
    if args.timeout <= 0:
        ap.error("--timeout must be positive")
    args.sweep_dir = os.path.abspath(args.sweep_dir)
    try:
        index = load_index(args.sweep_dir)
        problems = select(index["problems"], args.only)
    except SweepError as e:
        log(f"error: {e}")
        return 2
    if args.dry_run:
        return dry_run(args, index, problems)
    if not args.out:
        ap.error("--out is required")
    os.makedirs(args.out, exist_ok=True)
    args.out = os.path.abspath(args.out)
    args.t_start = time.time()
    _LOG["file"] = open(os.path.join(args.out, "run.log"), "w")
    command = shlex.join([sys.argv[0]] + (argv if argv is not None else sys.argv[1:]))
    log(f"{command}")
    try:
        results = {p["id"]: {"kernels": {}} for p in problems}
        invalid = 0
        for p in problems:
            for i, kentry in enumerate(p["kernels"]):
                err, warnings, _ = check_kernel(args.sweep_dir, p, kentry)
                if err:
                    invalid += 1
                    results[p["id"]]["kernels"][i] = {"status": "invalid", "error": err}
                    log(f"{p['id']}: {kentry['file']}: invalid: {err}")
        nk = sum(len(p["kernels"]) for p in problems)
        log(f"{len(problems)} problems, {nk} kernels ({invalid} invalid); deadline "
            f"{args.deadline:g} s, timeout {args.timeout:g} s per kernel")
        env = drive(args, problems, results, worker_cmd)
        meta = {"date": time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(args.t_start)),
                "wall_s": round(time.time() - args.t_start, 1), "command": command,
                "sweep_dir": args.sweep_dir,
                "method": {"runs": args.runs, "min_runs": args.min_runs,
                           "warmup": args.warmup, "time_budget_s": args.time_budget,
                           "l2_flush_bytes": gpu_worker.L2_FLUSH_BYTES,
                           "host_ahead_us": gpu_worker.HOST_AHEAD_US,
                           "timer": "CUDA events around each call, median",
                           "seed": args.seed, "inputs": INPUTS,
                           # TF32 (cuBLAS with allow_tf32) only for tf32 problems.
                           "tf32": any(p.get("tf32") for p in problems),
                           "reduced_precision_reduction": False,
                           "tolerance": ks.TOLERANCE, "tf32_tolerance": ks.TF32_TOLERANCE,
                           "deadline_s": args.deadline, "timeout_s": args.timeout}}
        record = build_record(index, problems, results, env, meta)
        written = worker_process.write_outputs(args.out, "sweep.json", record,
                                               lambda rec: write_markdown(args.out, rec),
                                               log, "sweep.md could not be written")
        s = record["summary"]
        log(f"{s['kernels']} kernels: {s['correct']} correct, {s['incorrect']} incorrect, "
            f"{s['failed']} failed, {s['skipped']} skipped; geomean best/cuBLAS "
            f"{fmt_ratio(s['geomean_best_ratio_to_cublas']['value'])}, default/cuBLAS "
            f"{fmt_ratio(s['geomean_default_ratio_to_cublas']['value'])}")
        log("wrote " + ", ".join(written + [os.path.join(args.out, "run.log")]))
        return exit_code(record)
    finally:
        if _LOG["file"]:
            _LOG["file"].close()
            _LOG["file"] = None


if __name__ == "__main__":
    sys.exit(main())
