#!/usr/bin/env python3
"""The benchmark-suite runner (GPU host): kopt beside PyTorch eager, torch.compile and
cuBLAS on the problems of bench/suite.json.

    bench/run_suite.py (--ptx-dir DIR | --compile SUITE) --out OUT [--only NAME]...
                       [--max-autotune] [--peers eager,compile,cublas] [--runs 100]
                       [--warmup 10] [--min-runs 10] [--time-budget 2] [--seed S]
                       [--deadline 510] [--problem-timeout 300] [--compile-jobs N]
                       [--cuda-path DIR] [--ptxas PATH] [--dry-run]

DIR is what bench/compile_suite.py wrote (bench/prepare_suite.sh: .device/suite):
compile_suite.json, suite.json and problems/<name>.{ptx,json}. With --compile SUITE
(bench/suite.json) the runner makes that folder itself, OUT/compiled: every problem
compiled in this process through the kopt Python package (kopt.compile), with
compile_suite.py's statuses, so that no PTX needs to be carried to the GPU host.
The runner needs Python 3, torch, the kopt package (PYTHONPATH=<bundle>/python: its
libkopt.so loads, checks and launches kopt's kernels, and with --compile compiles
them; docs/python.md) and matplotlib for the plots. It needs no LLVM. kopt's
functions are loaded with kopt.load (the C++ manifest reader) and launched with
Function.launch on the torch tensors on PyTorch's current stream: the C++ runtime
packs the arguments and encodes the TMA tensor maps (on the first launch; the
addresses stay the same afterwards).

Per problem, in one process and on the same inputs:
  1. fresh random inputs (torch, on the GPU, seeded per problem); a float64
     reference of the graph, each intermediate rounded to its dtype;
  2. kopt: the manifest's function (all its launches) on those inputs, outputs
     poisoned with NaN; the outputs are checked against the reference (relative
     L2 error within the dtype's tolerance, no NaN/Inf where the reference is
     finite); an incorrect result is a failure and is not timed;
  3. timing, with one routine for every implementation: warm-up, then per run a
     256 MiB buffer zeroed (L2 flush), CUDA events around the call, median; at
     most --runs runs, fewer (at least --min-runs) when they would take longer
     than --time-budget seconds; the run count is recorded;
  4. peers: PyTorch eager (the graph as a model's code writes it),
     torch.compile (default mode; --max-autotune adds mode="max-autotune") and,
     for problems with GEMMs, cuBLAS (the GEMMs alone, torch.matmul); TF32 is off
     except in a problem whose matmul allows it (attrs {"tf32": true}, compiled as
     kopt.matmul {tf32}): its peers run with allow_tf32 = True, and its outputs get
     at least kopt_suite.TF32_TOLERANCE;
  5. FLOPs, minimal bytes, T_SOL, achieved rates, fractions of the datasheet and
     measured limits, speedups and the SOL score (bench/kopt_suite.py).
The ceilings (a 1 GiB device-to-device copy, cuBLAS GEMMs of 8192^3 bf16/f16,
4096^3 f32 and 8192^3 f32 with TF32 allowed) are measured at the start of the run
with the same routine.

Problems run in a worker process; a problem that crashes it (a sticky CUDA error,
a hang past --problem-timeout) is recorded as failed and a new worker goes on
with the next problem. Problems not started by --deadline seconds are recorded
as skipped, so that a record is always written.

The code: this file (command line, --compile, --dry-run, the driver), suite_worker.py
(the worker: kopt and the peers per problem), gpu_worker.py (the timing routine, the
ceilings, the checks; shared with bench/run_sweep.py), worker_process.py (the worker
processes), suite_inputs.py (the compiled folder) and suite_record.py (the record).

Writes OUT/suite.json (the record), OUT/suite.md, OUT/speedup.png,
OUT/roofline.png and OUT/run.log. Exit code: 0 when every problem kopt supports
ran correctly, 1 when one failed, was skipped or kopt was incorrect, 2 on usage
errors.
"""
import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import kopt_suite as ks  # noqa: E402
import compile_suite  # noqa: E402  (check_manifest)
import gpu_worker  # noqa: E402  (the timing options, the ceilings' limits)
import report  # noqa: E402
import suite_worker  # noqa: E402  (the worker; it imports torch when it starts)
import suite_record  # noqa: E402
import worker_process  # noqa: E402
from suite_inputs import compiled, load_inputs, log, manifest_paths  # noqa: E402

DEFAULT_PEERS = ("eager", "compile", "cublas")


def compile_here(args):
    """--compile SUITE: every problem compiled in this process through the kopt
    package (kopt.compile, bench/compile_suite.py's compile_in_process: the MLIR text
    of kopt_suite.mlir_text, the same statuses, the manifest checked by kopt's C++
    reader and against the suite) into OUT/compiled, which is then run as --ptx-dir.
    ptxas runs only when --ptxas names one (the driver JIT-compiles the PTX anyway).
    Returns that folder; raises SuiteError."""
    kopt = ks.import_kopt()
    suite = ks.load_suite(args.compile)
    problems = ks.select(suite, args.only)
    out = os.path.join(args.out, "compiled")
    os.makedirs(out, exist_ok=True)
    with open(args.compile) as f, open(os.path.join(out, "suite.json"), "w") as g:
        g.write(f.read())
    try:
        compiler = {"compiler": f"kopt.compile ({kopt.version()})"}
    except kopt.KoptError as e:
        raise ks.SuiteError(str(e)) from None
    t0 = time.monotonic()
    results = compile_suite.compile_all(
        problems, out, lambda p, d: compile_suite.compile_in_process(
            p, d, kopt, args.ptxas, "sm_90a", args.cuda_path, args.tuning_db),
        args.compile_jobs)
    if args.tuning_db:
        compiler["tuning_db"] = os.path.abspath(args.tuning_db)
    rec = compile_suite.write_record(out, results, compiler, args.ptxas, "sm_90a")
    log(f"compiled {len(results)} problems in {time.monotonic() - t0:.1f} s with "
        f"{compiler['compiler']}: " +
        ", ".join(f"{n} {st}" for st, n in sorted(rec["counts"].items())))
    for r in results:
        if r["status"] in compile_suite.FAILURES:
            log(f"compile FAIL {r['name']}: {r['status']}: {r.get('error')}")
    return out



def dry_run(args):
    """Checks without a GPU (nor torch) that the suite, the compile record, every
    manifest and PTX and the generated PyTorch source are consistent."""
    try:
        suite, problems, comp, by_name = load_inputs(args.ptx_dir, args.only)
    except ks.SuiteError as e:
        log(f"error: {e}")
        return 2
    bad = 0
    for p in problems:
        c = by_name.get(p["name"])
        what = "not compiled" if c is None else c["status"]
        if compiled(c):
            mpath, ptx = manifest_paths(args.ptx_dir, comp, p["name"])
            try:
                with open(mpath) as f:
                    m = json.load(f)
                with open(ptx) as f:
                    err = compile_suite.check_manifest(p, m, f.read())
            except (OSError, ValueError) as e:
                err = str(e)
            if err:
                what = f"manifest problem: {err}"
                bad += 1
            else:
                fn = next(f for f in m["functions"] if f["name"] == p["name"])
                what = f"{len(fn['launches'])} launches, {len(fn.get('buffers', []))} buffers"
        for reference in (False, True):
            try:
                compile(ks.torch_source(p, reference), p["name"], "exec")
            except SyntaxError as e:
                what += f"; PyTorch source does not parse: {e}"
                bad += 1
        flops, nbytes = ks.problem_flops(p), ks.problem_bytes(p)
        t, bound = ks.sol_time_s(flops, nbytes, ks.DATASHEET)
        peers = [x for x in args.peers if x != "cublas" or ks.matmul_nodes(p)]
        log(f"{p['name']}: {what}; peers {','.join(peers)}; {flops['total'] / 1e9:.3g} GFLOP, "
            f"{nbytes / 1e6:.4g} MB, T_SOL {t * 1e3:.4g} ms ({bound})")
    log(f"dry run: {len(problems)} problems, {bad} problems with errors")
    return 1 if bad else 0



# ======================================================================= driver

def drive(args, problems, comp_record):
    """Runs the problems in worker processes; returns (env, ceilings, records by name)."""
    out = args.out
    events_path = os.path.join(out, "events.jsonl")
    if os.path.exists(events_path):
        os.remove(events_path)
    logf = open(os.path.join(out, "run.log"), "a")
    remaining = [p["name"] for p in problems]
    records, env, ceilings = {}, None, None
    pos, restarts, failed_starts = 0, 0, 0
    t_start = time.time()
    options = {
        **gpu_worker.timing_options(args), "peers": args.peers,
        "reduced_precision_reduction": args.allow_reduced_precision,
        "skip_ceilings": args.skip_ceilings,
        "deadline": t_start + args.deadline if args.deadline > 0 else float("inf"),
        "compile_deadline": t_start + args.compile_deadline
        if args.compile_deadline > 0 else float("inf"),
    }
    while remaining:
        plan = {"ptx_dir": args.ptx_dir, "problems": remaining, "events": events_path,
                "options": options, "first": env is None, "ceilings": ceilings,
                "driver_pid": os.getpid()}
        plan_path = os.path.join(out, "plan.json")
        with open(plan_path, "w") as f:
            json.dump(plan, f)
        # The worker imports this file as the module run_suite (not __main__).
        cmd = [sys.executable, "-c", "import sys; sys.path.insert(0, sys.argv[1]); "
               "import run_suite; sys.exit(run_suite.main(['--worker', sys.argv[2]]))",
               HERE, plan_path]
        proc, reader, tail = worker_process.start_worker(cmd, logf)
        current, since = None, time.monotonic()
        fatal, progress = None, False
        while True:
            rc = proc.poll()
            events, pos = worker_process.read_events(events_path, pos)
            for ev in events:
                if ev["event"] == "env":
                    env = ev
                elif ev["event"] == "ceilings":
                    ceilings = ev.get("ceilings") or {"error": ev.get("error")}
                elif ev["event"] == "start":
                    current, since = ev["name"], time.monotonic()
                    progress = True
                elif ev["event"] == "result":
                    progress = True
                    records[ev["record"]["name"]] = ev["record"]
                    if ev["record"]["name"] in remaining:
                        remaining.remove(ev["record"]["name"])
                    current, since = None, time.monotonic()
                elif ev["event"] == "fatal":
                    fatal = ev["error"]
            if rc is not None:
                break
            if current and time.monotonic() - since > args.problem_timeout:
                log(f"{current}: no result after {args.problem_timeout} s: stopping the worker")
                worker_process.kill_worker(proc)
                records[current] = {"name": current,
                                    "error": f"timed out after {args.problem_timeout} s "
                                             "(worker killed)"}
                remaining.remove(current)
                current = None
                break
            time.sleep(0.2)
        reader.join(timeout=5)
        if ceilings is None and env is not None and not args.skip_ceilings:
            # The worker got past its start but not past the ceilings: do not retry them.
            ceilings = {"error": f"the worker died while measuring them (exit code {rc})"}
        if not progress and remaining:
            failed_starts += 1
            if fatal or failed_starts >= 2:
                why = fatal or f"exit code {rc}; last output: " + " | ".join(list(tail)[-5:])
                log(f"error: the worker could not run: {why}")
                for name in remaining:
                    records[name] = {"name": name, "error": f"worker could not run: {why}"}
                break
        if current is not None:  # died inside a problem
            why = f"signal {-rc}" if rc is not None and rc < 0 else f"exit code {rc}"
            records[current] = {"name": current, "error": f"worker died ({why}) in this problem; "
                                "last output: " + " | ".join(list(tail)[-5:])}
            remaining.remove(current)
        restarts += 1
        if remaining:
            log(f"starting a new worker for the {len(remaining)} remaining problems")
        if restarts > len(problems) + 2:
            break
    logf.close()
    return env, ceilings, records

def parse_args(argv):
    """The command line: (parser, checked arguments)."""
    ap = argparse.ArgumentParser(description="Benchmark-suite runner: kopt beside PyTorch "
                                 "eager, torch.compile and cuBLAS (GPU host).")
    ap.add_argument("--ptx-dir", help="bench/compile_suite.py's output (.device/suite)")
    ap.add_argument("--out", help="output folder")
    ap.add_argument("--only", action="append", default=[], metavar="NAME")
    ap.add_argument("--peers", default=",".join(DEFAULT_PEERS),
                    help="comma-separated: eager, compile, cublas (default all three)")
    ap.add_argument("--max-autotune", action="store_true",
                    help="also time torch.compile(mode='max-autotune') (slow to compile)")
    gpu_worker.add_timing_options(ap, runs=100, time_budget=2.0, deadline=510.0,
                                  unit="implementation and problem", starts="no new problem")
    ap.add_argument("--compile-deadline", type=float, default=0.0,
                    help="seconds after which torch.compile is skipped (0: none)")
    ap.add_argument("--problem-timeout", type=float, default=300.0)
    ap.add_argument("--skip-ceilings", action="store_true",
                    help="do not measure the copy and GEMM ceilings (no measured limits)")
    ap.add_argument("--compile", metavar="SUITE",
                    help="compile the suite file SUITE (bench/suite.json) here, through "
                         "the kopt package, into OUT/compiled and run that (no --ptx-dir)")
    ap.add_argument("--compile-jobs", type=int, default=min(8, os.cpu_count() or 1),
                    help="threads compiling with --compile (default: min(8, cores))")
    ap.add_argument("--cuda-path", help="with --compile: the CUDA toolkit whose libdevice "
                    "kopt links (default: $CUDA_HOME, else /usr/local/cuda)")
    ap.add_argument("--tuning-db", help="with --compile: a kopt-tune database; each "
                    "matmul kernel takes its workload's best recorded schedule "
                    "(docs/tuning.md)")
    ap.add_argument("--ptxas", help="with --compile: also assemble each PTX with this "
                    "ptxas (registers and spills in the compile record)")
    ap.add_argument("--allow-reduced-precision", action="store_true",
                    help="let cuBLAS reduce bf16/f16 GEMM partial sums in reduced precision "
                         "(PyTorch's default; off by default here, kopt accumulates in f32)")
    ap.add_argument("--dry-run", action="store_true",
                    help="check the suite, manifests and PyTorch sources; no GPU, no torch")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        return ap, args
    if args.compile and args.ptx_dir:
        ap.error("--compile and --ptx-dir exclude each other")
    if args.compile and not args.out:
        ap.error("--compile needs --out (the PTX goes to OUT/compiled)")
    if not args.ptx_dir and not args.compile:
        ap.error("--ptx-dir or --compile is required")
    if args.tuning_db and not args.compile:
        ap.error("--tuning-db needs --compile (it chooses the schedules of a compile)")
    if args.tuning_db and not os.path.isfile(args.tuning_db):
        ap.error(f"--tuning-db {args.tuning_db}: no such file")
    args.peers = [x for x in args.peers.split(",") if x]
    for peer in args.peers:
        if peer not in DEFAULT_PEERS:
            ap.error(f"unknown peer {peer!r}")
    if args.max_autotune:
        args.peers.append("compile_max_autotune")
    gpu_worker.check_timing_options(ap, args)
    return ap, args


def report_run(args, record):
    """OUT/suite.json, the report (report.write_all) and the summary in the log; the
    driver's plan and events are removed. Returns the exit code."""
    written = worker_process.write_outputs(
        args.out, "suite.json", record, lambda rec: report.write_all(rec, args.out), log,
        "the report could not be written in full")
    agg = record["aggregates"]
    log("wrote " + ", ".join(written))
    for peer, g in agg["geomean_speedup"].items():
        log(f"geomean speedup over {peer}: {g['value']:.3f} ({g['problems']} problems)")
    ms = agg.get("median_sol_score_datasheet") or {}
    if ms.get("value") is not None:
        log(f"median SOL score (datasheet): {ms['value']:.3f}")
    bad = suite_record.failed_problems(record["problems"])
    if bad:
        log(f"problems that failed, errored or were skipped: {', '.join(bad)}")
    return 1 if bad else 0


def main(argv=None):
    ap, args = parse_args(argv)
    if args.worker:
        return worker_process.worker_main(args.worker, suite_worker.Worker)
    if args.compile:
        os.makedirs(args.out, exist_ok=True)
        args.out = os.path.abspath(args.out)
        try:
            args.ptx_dir = compile_here(args)
        except ks.SuiteError as e:
            log(f"error: {e}")
            return 2
    if args.dry_run:
        return dry_run(args)
    if not args.out:
        ap.error("--out is required")
    args.ptx_dir = os.path.abspath(args.ptx_dir)
    os.makedirs(args.out, exist_ok=True)
    args.out = os.path.abspath(args.out)
    try:
        suite, problems, comp_record, comp = load_inputs(args.ptx_dir, args.only)
    except ks.SuiteError as e:
        log(f"error: {e}")
        return 2

    t0 = time.time()
    env, ceilings, records = drive(args, problems, comp_record)
    limits = {"datasheet": ks.DATASHEET, "measured": gpu_worker.measured_limits(ceilings)}
    out_records = suite_record.problem_records(problems, records, comp, limits)
    record = suite_record.build_record(args, problems, out_records, env, ceilings,
                                       comp_record, limits, t0)
    return report_run(args, record)


if __name__ == "__main__":
    sys.exit(main())
