"""bench/run_suite.py's record (OUT/suite.json, format_version 1; docs/benchmarking.md):
each problem's worker record completed with the suite's fields, the compile status
and the derived figures (kopt_suite.derive), then the run's method, limits,
ceilings and aggregates."""
import json
import time

import kopt_suite as ks
from gpu_worker import HOST_AHEAD_US, L2_FLUSH_BYTES
from suite_inputs import compiled, not_compiled


def strip_problem(p):
    q = {k: v for k, v in p.items() if k != "values"}
    return json.loads(json.dumps(q))


def problem_records(problems, records, comp, limits):
    """Per problem (in the suite's order) its record: the worker's (`records` by
    name; "no result" when there is none) with the suite's fields, kopt's status
    when it did not run (unsupported, compile-failed, skipped, error) and the
    derived figures against `limits`."""
    out = []
    for p in problems:
        r = records.get(p["name"]) or {"name": p["name"], "error": "no result"}
        r = dict(r)
        r.update({"model": p["model"], "source": p["source"], "tags": p.get("tags", []),
                  "tf32": ks.uses_tf32(p), "problem": p})
        r.setdefault("kopt", {})
        r.setdefault("peers", {})
        c = comp.get(p["name"])
        if not r["kopt"].get("status") and not compiled(c):
            r["kopt"] = not_compiled(c)
        if r.get("skipped"):
            r["kopt"].setdefault("status", "skipped")
        elif r.get("error") and not r["kopt"].get("status"):
            r["kopt"]["status"] = "error"
            r["kopt"].setdefault("error", r["error"])
        ks.derive(r, limits)
        r["problem"] = strip_problem(p)
        out.append(r)
    return out


def build_record(args, problems, out_records, env, ceilings, comp_record, limits, t0):
    """suite.json: `out_records` from problem_records, the worker's `env` (None if
    no worker reported one), the run started at time `t0`."""
    env = env or {}
    return {
        "tool": "bench/run_suite.py",
        "format_version": 1,
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(t0)),
        "wall_s": round(time.time() - t0, 1),
        "device": env.get("device"),
        "software": env.get("software"),
        "compile": {k: comp_record.get(k) for k in ("git", "date", "ptxas_version", "arch",
                                                    "counts")},
        "method": {"runs": args.runs, "min_runs": args.min_runs, "warmup": args.warmup,
                   "time_budget_s": args.time_budget, "l2_flush_bytes": L2_FLUSH_BYTES,
                   "timer": "CUDA events around each call, median", "seed": args.seed,
                   "host_ahead_us": HOST_AHEAD_US,
                   "sleep_cycles": env.get("sleep_cycles"),
                   # TF32 only for the problems that allow it (their "tf32": true).
                   "tf32": any(ks.uses_tf32(p) for p in problems),
                   "tf32_problems": [p["name"] for p in problems if ks.uses_tf32(p)],
                   "tf32_tolerance": ks.TF32_TOLERANCE,
                   "reduced_precision_reduction": args.allow_reduced_precision,
                   "peers": args.peers, "loader": env.get("loader"),
                   "loader_errors": env.get("loader_errors"),
                   "tolerance": ks.TOLERANCE},
        "limits": limits,
        "ceilings": ceilings,
        "aggregates": ks.aggregate(out_records, tuple(args.peers)),
        "problems": out_records,
    }


def failed_problems(out_records):
    """The names of the problems that failed, errored or were skipped (exit code 1)."""
    return [r["name"] for r in out_records
            if r["kopt"].get("status") not in ("ok", "unsupported") or r.get("error") or
            r.get("skipped")]
