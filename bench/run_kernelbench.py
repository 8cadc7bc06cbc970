#!/usr/bin/env python3
"""KernelBench levels 1 and 2 through torch.compile(backend="kopt"), beside
PyTorch eager and torch.compile's default (Inductor), on one GPU or several.

    python3 bench/run_kernelbench.py --kernelbench ~/KernelBench --out OUT [--levels 1,2]
        [--problems 1/19,2/*Gemm*] [--modes eager,inductor,kopt,kopt-inductor]
        [--gpus N | --gpu-ids 1,2,3] [--runs 20] [--trials 5] [--problem-timeout 900]
        [--startup-timeout 600] [--deadline S] [--resume] [--summary-only]

KernelBench (github.com/ScalingIntelligence/KernelBench) is a public benchmark:
fetch it yourself and pass the path of the checkout; nothing of it is kept in
this repository. Each problem file defines ``Model``, ``get_inputs`` and
``get_init_inputs``; the runner builds the model (seed 42, as KernelBench's
eval does), moves it and its inputs to the GPU in float32, and for each mode:

- compiles it (``eager``: the model itself, the reference and the baseline;
  ``inductor``: ``torch.compile(model)``; ``kopt``: ``torch.compile(model,
  backend="kopt")`` with the backend's defaults, each partition measured
  against PyTorch at its first call; ``kopt-inductor``: the same with
  ``options={"remainder": "inductor"}``), the first call timed as compile_s;
- checks it with KernelBench's own correctness check
  (``kernelbench.eval.run_and_check_correctness`` from the checkout's src/,
  through its package or, where that cannot be imported (its __init__ pulls
  in LLM clients), eval.py alone:
  ``trials`` input sets from seeds drawn after ``torch.manual_seed(42)``, output
  shapes equal and ``torch.allclose`` at KernelBench's tolerance for float32,
  1e-4); where neither imports (eval.py needs pydantic, requests and numpy)
  a transcription of the same function here (``check_like_kernelbench``)
  is used and the record says so;
- times it as the project's benchmarks do (bench/torch_eager.py's time_fn:
  3 warm-up calls, then ``runs`` calls each after a 256 MiB L2 flush, CUDA
  events, median) on fresh random inputs.

Inputs are made by the problem's get_inputs with the GPU as the default device
(``with torch.device("cuda")``), for the check and the timing alike: its
torch.rand calls on the CPU take seconds for the larger problems, five times
per check. They are seeded as KernelBench seeds them; only the generator (the
GPU's) differs.

Speedup of a mode = eager median / mode median. fast_p (KernelBench's metric,
src/kernelbench/score.py) = the fraction of all problems of the level that are
correct with speedup > p. For kopt's modes, a problem where kopt launched none
of its own kernels (nothing supported, or every partition measured slower than
PyTorch) counts as not faster: it is correct, so it counts for fast_0 only
(fast_p_with_fallback counts it by its time, whatever ran).
The summary also lists the ATen ops kopt left to PyTorch by frequency, and
the problems where a kopt mode is slower than eager.

Each GPU runs its share of the problems in a worker process (bench/
worker_process.py); a worker that crashes, hangs past --problem-timeout or
poisons its CUDA context is replaced and the problem recorded as failed.
Results are appended to OUT/results.jsonl as each problem finishes (--resume
skips those already there); OUT/summary.json and OUT/summary.md at the end.
"""

from __future__ import annotations

import argparse
import collections
import fnmatch
import json
import math
import os
import re
import sys
import threading
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import worker_process  # noqa: E402  bench/worker_process.py

MODES = {
    "eager": None,
    "inductor": {},
    "kopt": {"backend": "kopt"},
    "kopt-inductor": {"backend": "kopt", "options": {"remainder": "inductor"}},
}
KOPT_MODES = [m for m, how in MODES.items() if how and how.get("backend") == "kopt"]
SEED = 42  # KernelBench's eval: set_seed(42) before building the model
FP32_TOLERANCE = 1e-4  # kernelbench.eval.get_tolerance_for_precision(float32)
FAST_P = (0.0, 1.0, 2.0)
SLOWER = 0.97  # "slower than eager": below this speedup (3% of noise allowed)


def log(msg):
    print(f"[kernelbench {time.strftime('%H:%M:%S')}] {msg}", flush=True)


# ==================================================================== problems

def kopt_ran(chosen, partitions):
    """Whether kopt ran a kernel of its own: a partition that compiled and
    whose measured choice (``chosen``: name -> impl; none made yet: kopt's) is
    kopt's kernels or the split variant (PyTorch's matmuls, kopt's kernels for
    the rest)."""
    parts = {n: impl for n, impl in chosen.items() if "inductor_group" not in n}
    return any(impl in ("kopt", "split") for impl in parts.values()) or (
        partitions > 0 and not parts)


def find_problems(root, levels, patterns):
    """[(id "L/NN_Name", path)] of the checkout's problems, in level and number
    order; ``patterns`` (fnmatch on the id, e.g. "1/19_*" or "2/*Gemm*"; a bare
    "1/19" matches problem 19 of level 1) filter them."""
    base = os.path.join(root, "KernelBench")
    if not os.path.isdir(base):
        raise SystemExit(f"kernelbench: {root} is not a KernelBench checkout "
                         f"(no KernelBench/ folder)")
    found = []
    for level in levels:
        folder = os.path.join(base, f"level{level}")
        if not os.path.isdir(folder):
            raise SystemExit(f"kernelbench: no {folder}")
        files = [f for f in os.listdir(folder) if re.match(r"\d+_.*\.py$", f)]
        files.sort(key=lambda f: int(f.split("_", 1)[0]))
        for f in files:
            pid = f"{level}/{f[:-3]}"
            if patterns and not any(_matches(pid, p) for p in patterns):
                continue
            found.append((pid, os.path.join(folder, f)))
    return found


def _matches(pid, pattern):
    if re.fullmatch(r"\d+/\d+", pattern):
        return pid.split("_", 1)[0] == pattern
    return fnmatch.fnmatch(pid, pattern)


# ================================================================= correctness

def check_like_kernelbench(model, model_new, get_inputs, trials, device, seed=SEED):
    """A transcription of kernelbench.eval.run_and_check_correctness (float32):
    ``trials`` seeds drawn by torch.randint after torch.manual_seed(seed); per
    trial the inputs made after set_seed(trial seed), both models run, output
    shapes compared, then torch.allclose(atol=rtol=1e-4). Returns (correct,
    details)."""
    import torch
    torch.manual_seed(seed)
    seeds = [torch.randint(0, 2**32 - 1, (1,)).item() for _ in range(trials)]
    passed, details = 0, {}
    with torch.no_grad():
        for s in seeds:
            torch.manual_seed(s)
            torch.cuda.manual_seed(s)
            inputs = [_to_device(x, device) for x in get_inputs()]
            out = model(*inputs)
            out_new = model_new(*inputs)
            if out.shape != out_new.shape:
                details["correctness_issue"] = (f"Output shape mismatch: Expected "
                                                f"{out.shape}, got {out_new.shape}")
                return False, details
            if torch.allclose(out, out_new, atol=FP32_TOLERANCE, rtol=FP32_TOLERANCE):
                passed += 1
            else:
                diff = (out - out_new).abs()
                details.setdefault("max_difference", []).append(f"{diff.max().item():.6f}")
                details["correctness_issue"] = "Output mismatch"
    details["correctness_trials"] = f"({passed} / {trials})"
    return passed == trials, details


def kernelbench_checker(root):
    """KernelBench's own run_and_check_correctness, or None (with the reason)
    when its module cannot be imported here."""
    import importlib
    import types
    src = os.path.join(root, "src")
    if src not in sys.path:
        sys.path.insert(0, src)
    try:
        from kernelbench.eval import run_and_check_correctness
        return run_and_check_correctness, None
    except Exception as e:  # noqa: BLE001 - its package imports openai, litellm...
        first = f"{type(e).__name__}: {e}"
    # eval.py alone needs only numpy, requests and pydantic (and its siblings
    # timing.py and dataset.py): import it under a package without the
    # __init__.py that pulls in the LLM clients.
    for name in [m for m in sys.modules if m == "kernelbench" or
                 m.startswith("kernelbench.")]:
        del sys.modules[name]
    pkg = types.ModuleType("kernelbench")
    pkg.__path__ = [os.path.join(src, "kernelbench")]
    sys.modules["kernelbench"] = pkg
    try:
        return importlib.import_module("kernelbench.eval").run_and_check_correctness, None
    except Exception as e:  # noqa: BLE001 - pydantic, requests, numpy missing...
        del sys.modules["kernelbench"]
        return None, f"{first}; eval.py alone: {type(e).__name__}: {e}"


def _to_device(x, device):
    """As kernelbench.eval._process_input_tensor does for float32: every tensor
    cast to float32 and moved to the device; other values as they are."""
    import torch
    if isinstance(x, torch.Tensor):
        return x.to(dtype=torch.float32).to(device)
    return x


# ====================================================================== worker

class Worker:
    """Runs the problems of a plan, one after another, appending events."""

    def __init__(self, plan):
        import torch
        self.plan = plan
        self.torch = torch
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self.flush = torch.empty(256 << 20 if self.device.type == "cuda" else 1 << 20,
                                 dtype=torch.uint8, device=self.device)
        self.checker, self.checker_error = kernelbench_checker(plan["kernelbench"])
        import torch_eager  # bench/torch_eager.py: the project's timing loop
        self.time_fn = torch_eager.time_fn
        self.emit({"event": "env", "device": torch.cuda.get_device_name()
                   if self.device.type == "cuda" else "cpu", "torch": torch.__version__,
                   "checker": "kernelbench.eval.run_and_check_correctness"
                   if self.checker else f"check_like_kernelbench ({self.checker_error})"})

    def emit(self, event):
        with open(self.plan["events"], "a") as f:
            f.write(json.dumps(event, default=str) + "\n")

    def main(self):
        for pid, path in self.plan["problems"]:
            if time.time() > self.plan["deadline"]:
                self.emit({"event": "deadline"})
                return 0
            self.emit({"event": "start", "id": pid})
            try:
                record = self.run_problem(pid, path)
            except Exception as e:  # noqa: BLE001 - the problem's own setup failed
                traceback.print_exc()
                record = {"id": pid, "error": f"{type(e).__name__}: {e}"[:2000]}
            self.emit({"event": "result", "record": record})
            if record.get("cuda_error"):
                return 3  # the context may be unusable: a fresh worker goes on
        return 0

    def load(self, path):
        ns = {"__name__": "kernelbench_problem"}
        with open(path) as f:
            exec(compile(f.read(), path, "exec"), ns)
        for name in ("Model", "get_inputs", "get_init_inputs"):
            if name not in ns:
                raise ValueError(f"{path} defines no {name}")
        return ns["Model"], ns["get_inputs"], ns["get_init_inputs"]

    def run_problem(self, pid, path):
        torch = self.torch
        Model, get_inputs_cpu, get_init_inputs = self.load(path)
        device = self.device

        def get_inputs():
            # Made on the GPU: KernelBench's torch.rand calls on the CPU take
            # seconds for its larger problems (4096 x 393216), five times per
            # check. Seeded the same way; only the generator differs.
            with torch.device(device):
                return get_inputs_cpu()
        torch.manual_seed(SEED)
        torch.cuda.manual_seed(SEED)
        init = [_to_device(x, self.device) for x in get_init_inputs()]
        torch.manual_seed(SEED)
        torch.cuda.manual_seed(SEED)
        model = Model(*init).to(device=self.device, dtype=torch.float32).eval()
        record = {"id": pid, "modes": {}}
        opts = self.plan["options"]
        for mode in opts["modes"]:
            rec = record["modes"][mode] = {}
            try:
                self.run_mode(mode, model, get_inputs, rec, opts)
            except Exception as e:  # noqa: BLE001 - recorded, the next mode runs
                rec["error"] = f"{type(e).__name__}: {e}"[:2000]
                traceback.print_exc()
                if "CUDA error" in str(e) or "cudaError" in str(e):
                    record["cuda_error"] = True
                    break
            finally:
                torch._dynamo.reset()
                if self.device.type == "cuda":
                    torch.cuda.empty_cache()
        return record

    def run_mode(self, mode, model, get_inputs, rec, opts):
        torch = self.torch
        how = MODES[mode]
        kb = None
        if how is None:
            fn = model
        else:
            how = dict(how)
            if how.get("backend") == "kopt":
                import kopt.torch_backend as kb
                kb.reset()
                if not _registered("kopt"):  # a source tree: no entry point
                    how["backend"] = kb.kopt_backend
            fn = torch.compile(model, **how)
        torch.manual_seed(SEED + 1)
        inputs = [_to_device(x, self.device) for x in get_inputs()]
        with torch.no_grad():
            t0 = time.time()
            fn(*inputs)
            if self.device.type == "cuda":
                torch.cuda.synchronize()
            rec["compile_s"] = round(time.time() - t0, 3)
            if mode != "eager":
                if self.checker is not None:
                    result = self.checker(model, fn, get_inputs, {}, opts["trials"],
                                          seed=SEED, device=self.device)
                    rec["correct"] = bool(result.correctness)
                    rec["check"] = {k: v for k, v in result.metadata.items()
                                    if k in ("correctness_trials", "correctness_issue",
                                             "max_difference", "runtime_error")}
                else:
                    ok, details = check_like_kernelbench(model, fn, get_inputs,
                                                         opts["trials"], self.device)
                    rec["correct"], rec["check"] = ok, details
            else:
                rec["correct"] = True
            timing = self.time_fn(lambda: fn(*inputs), opts["runs"], 3,
                                  self.device.type, self.flush)
            rec["median_ms"] = timing["median_ms"]
            rec["min_ms"] = timing["min_ms"]
        if kb is not None:
            rep = kb.report()
            chosen = {f"{g.name} {n}": c.impl for g in rep for n, c in g.chosen.items()}
            rec["partitions"] = sum(g.partitions for g in rep)
            rec["chosen"] = chosen
            rec["kopt_ran"] = kopt_ran(chosen, rec["partitions"])
            rec["unsupported"] = dict(rep.unsupported_ops())
            rec["ops_kopt"] = dict(sum((g.ops_kopt for g in rep), collections.Counter()))
            rec["report"] = str(rep)[:4000]


def _registered(name):
    from torch._dynamo.backends.registry import list_backends
    return name in list_backends(exclude_tags=())


# ====================================================================== driver

def drive_lane(args, lane, problems, results, lock, out_file):
    """Runs ``problems`` on GPU ``lane`` in worker processes, replacing a worker
    that dies or hangs; each finished record is appended to out_file."""
    events = os.path.join(args.out, f"events-{lane}.jsonl")
    if os.path.exists(events):
        os.remove(events)
    remaining = list(problems)
    pos, starts = 0, 0
    env = dict(os.environ)
    if args.gpu_ids:
        env["CUDA_VISIBLE_DEVICES"] = str(args.gpu_ids[lane])
    elif args.gpus > 1:
        env["CUDA_VISIBLE_DEVICES"] = str(lane)
    logf = open(os.path.join(args.out, f"worker-{lane}.log"), "a")
    while remaining and starts <= len(problems) + 2:
        starts += 1
        plan = {"problems": remaining, "events": events, "driver_pid": os.getpid(),
                "deadline": args.deadline_at,
                "kernelbench": os.path.abspath(args.kernelbench),
                "options": {"modes": args.modes, "runs": args.runs,
                            "trials": args.trials}}
        plan_path = os.path.join(args.out, f"plan-{lane}.json")
        with open(plan_path, "w") as f:
            json.dump(plan, f)
        cmd = [sys.executable, "-c", "import sys; sys.path.insert(0, sys.argv[1]); "
               "import run_kernelbench; sys.exit(run_kernelbench.main(['--worker', sys.argv[2]]))",
               HERE, plan_path]
        proc = _start(cmd, env, logf)
        current, since, progress = None, time.monotonic(), False
        started, idle_since = False, None
        while True:
            rc = proc.poll()
            evs, pos = worker_process.read_events(events, pos)
            for ev in evs:
                if ev["event"] == "env":
                    started = True
                    with lock:
                        results.setdefault("_env", ev)
                elif ev["event"] == "start":
                    current, since, progress = ev["id"], time.monotonic(), True
                elif ev["event"] == "result":
                    rec = ev["record"]
                    _finish(rec, remaining, results, lock, out_file)
                    current = None
                elif ev["event"] == "deadline":
                    for pid, _ in list(remaining):
                        _finish({"id": pid, "error": "not run: past --deadline"},
                                remaining, results, lock, out_file)
                elif ev["event"] == "fatal":
                    log(f"lane {lane}: worker could not start: {ev['error']}")
                    for pid, _ in list(remaining):
                        _finish({"id": pid, "error": f"worker could not start: "
                                 f"{ev['error']}"}, remaining, results, lock, out_file)
                    logf.close()
                    return
            if rc is not None:
                break
            now = time.monotonic()
            if not started and now - since > args.startup_timeout:
                # It never got to its first problem (an import that hangs).
                log(f"lane {lane}: the worker did not start within "
                    f"{args.startup_timeout} s: killing it")
                worker_process.kill_worker(proc)
                for pid, _ in list(remaining):
                    _finish({"id": pid, "error": f"worker did not start within "
                             f"{args.startup_timeout} s"}, remaining, results, lock,
                            out_file)
                break
            if not remaining and current is None:
                # Every problem has its result; a worker that does not exit (a
                # thread a problem started) is stopped after a grace period.
                idle_since = idle_since or now
                if now - idle_since > 30:
                    log(f"lane {lane}: the worker did not exit after its last "
                        f"problem: killing it")
                    worker_process.kill_worker(proc)
                    break
            if current and now - since > args.problem_timeout:
                log(f"{current}: no result after {args.problem_timeout} s: killing the "
                    f"worker")
                worker_process.kill_worker(proc)
                _finish({"id": current, "error": f"timed out after "
                         f"{args.problem_timeout} s (worker killed)"}, remaining,
                        results, lock, out_file)
                current = None
                break
            time.sleep(0.2)
        if current is not None:
            why = f"signal {-rc}" if rc is not None and rc < 0 else f"exit code {rc}"
            _finish({"id": current, "error": f"worker died ({why}) in this problem"},
                    remaining, results, lock, out_file)
        if not progress and remaining:
            log(f"lane {lane}: the worker made no progress (exit code {rc}); giving up "
                f"on {len(remaining)} problems")
            for pid, _ in list(remaining):
                _finish({"id": pid, "error": f"worker made no progress (exit code {rc})"},
                        remaining, results, lock, out_file)
    logf.close()


def _start(cmd, env, logf):
    import subprocess
    return subprocess.Popen(cmd, stdout=logf, stderr=subprocess.STDOUT, env=env,
                            start_new_session=True)


def _finish(rec, remaining, results, lock, out_file):
    with lock:
        for item in list(remaining):
            if item[0] == rec["id"]:
                remaining.remove(item)
        results[rec["id"]] = rec
        with open(out_file, "a") as f:
            f.write(json.dumps(rec, default=str) + "\n")
    modes = rec.get("modes", {})
    eager = modes.get("eager", {}).get("median_ms")
    parts = []
    for m, r in modes.items():
        if "error" in r:
            parts.append(f"{m} error")
        elif m != "eager" and eager and r.get("median_ms"):
            parts.append(f"{m} {eager / r['median_ms']:.2f}x"
                         f"{'' if r.get('correct') else ' WRONG'}")
    log(f"{rec['id']}: {rec.get('error') or ', '.join(parts)}")


# ===================================================================== summary

def speedup(rec, mode):
    m = rec.get("modes", {})
    e, r = m.get("eager", {}).get("median_ms"), m.get(mode, {}).get("median_ms")
    if not e or not r or "error" in m.get(mode, {}):
        return None
    return e / r


def summarize(records, modes, levels):
    """fast_p per level and mode, ops left to PyTorch by frequency, kopt slower
    than eager (where it ran something), errors."""
    out = {"levels": {}, "unsupported_ops": {}, "slower_than_eager": {},
           "errors": {}}
    for level in levels:
        recs = [r for r in records if r["id"].startswith(f"{level}/")]
        lv = out["levels"][str(level)] = {"problems": len(recs)}
        for mode in modes:
            if mode == "eager":
                continue
            counts = {p: 0 for p in FAST_P}
            raw = {p: 0 for p in FAST_P}  # kopt's modes: counting what PyTorch ran too
            correct = ran = 0
            ratios = []
            for r in recs:
                mr = r.get("modes", {}).get(mode, {})
                s = speedup(r, mode)
                if not mr.get("correct") or s is None:
                    continue
                correct += 1
                ratios.append(s)
                kopt_counts = mode not in KOPT_MODES or mr.get("kopt_ran")
                ran += bool(mode in KOPT_MODES and mr.get("kopt_ran"))
                for p in FAST_P:
                    if p == 0.0 or (kopt_counts and s > p):
                        counts[p] += 1
                    if s > p:
                        raw[p] += 1
            n = max(len(recs), 1)
            lv[mode] = {f"fast_{p:g}": round(counts[p] / n, 4) for p in FAST_P}
            if mode in KOPT_MODES:
                lv[mode].update({f"fast_{p:g}_with_fallback": round(raw[p] / n, 4)
                                 for p in FAST_P if p > 0})
            lv[mode]["correct"] = correct
            lv[mode]["geomean_speedup_correct"] = round(
                math.exp(sum(map(math.log, ratios)) / len(ratios)), 4) if ratios else None
            if mode in KOPT_MODES:
                lv[mode]["kopt_ran"] = ran
    unsupported = collections.Counter()
    for r in records:
        for mode in KOPT_MODES:
            if mode in modes:
                unsupported.update(r.get("modes", {}).get(mode, {}).get("unsupported", {}))
                break
    out["unsupported_ops"] = dict(unsupported.most_common())
    for mode in KOPT_MODES:
        if mode not in modes:
            continue
        slow = {}
        for r in records:
            s = speedup(r, mode)
            if s is not None and s < SLOWER:
                slow[r["id"]] = round(s, 3)
        out["slower_than_eager"][mode] = slow
    for r in records:
        errs = {m: v["error"][:300] for m, v in r.get("modes", {}).items() if "error" in v}
        if r.get("error") or errs:
            out["errors"][r["id"]] = r.get("error") or errs
    return out


def write_summary(args, records, env, t0):
    summary = summarize(records, args.modes, args.levels)
    summary["env"] = env
    summary["command"] = " ".join(sys.argv)
    summary["date"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    summary["wall_s"] = round(time.time() - t0, 1)
    with open(os.path.join(args.out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    lines = [f"# KernelBench through torch.compile(backend=\"kopt\")", "",
             f"{summary['date']}, {(env or {}).get('device', '?')}, torch "
             f"{(env or {}).get('torch', '?')}; check: {(env or {}).get('checker', '?')}",
             f"`{summary['command']}`", "",
             "fast_1 and fast_2 of kopt's modes count a problem only where kopt ran a kernel "
             "of its own; in brackets, counting what PyTorch ran for it too.", "",
             "| level | mode | problems | correct | fast_0 | fast_1 | fast_2 | geomean speedup "
             "(correct) | kopt ran |", "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for level, lv in summary["levels"].items():
        for mode in args.modes:
            if mode == "eager" or mode not in lv:
                continue
            m = lv[mode]
            f1, f2 = f"{m['fast_1']:.3f}", f"{m['fast_2']:.3f}"
            if "fast_1_with_fallback" in m:
                f1 += f" ({m['fast_1_with_fallback']:.3f})"
                f2 += f" ({m['fast_2_with_fallback']:.3f})"
            lines.append(f"| {level} | {mode} | {lv['problems']} | {m['correct']} | "
                         f"{m['fast_0']:.3f} | {f1} | {f2} | "
                         f"{m['geomean_speedup_correct'] or '-'} | {m.get('kopt_ran', '-')} |")
    lines += ["", "ATen ops kopt left to PyTorch, by frequency:", ""]
    lines += [f"- {op}: {n}" for op, n in list(summary["unsupported_ops"].items())[:40]]
    for mode, slow in summary["slower_than_eager"].items():
        lines += ["", f"{mode} slower than eager (speedup < {SLOWER}): {len(slow)}", ""]
        lines += [f"- {pid}: {s}x" for pid, s in sorted(slow.items(), key=lambda x: x[1])]
    lines += ["", f"errors: {len(summary['errors'])}", ""]
    lines += [f"- {pid}: {e}" for pid, e in summary["errors"].items()]
    with open(os.path.join(args.out, "summary.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    return summary


# ======================================================================== main

def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kernelbench", required=True, help="path of a KernelBench checkout")
    ap.add_argument("--out", required=True)
    ap.add_argument("--levels", default="1,2")
    ap.add_argument("--problems", default="", help="comma-separated ids or patterns")
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--gpus", type=int, default=1, help="GPUs to spread problems over")
    ap.add_argument("--gpu-ids", default="", help="comma-separated CUDA device ids to "
                    "use (sets --gpus), e.g. 1,2,3")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--trials", type=int, default=5, help="correctness trials")
    ap.add_argument("--problem-timeout", type=float, default=900)
    ap.add_argument("--resume", action="store_true")
    ap.add_argument("--summary-only", action="store_true", help="write the summary "
                    "of OUT/results.jsonl (e.g. of a run stopped from outside); run "
                    "nothing")
    ap.add_argument("--deadline", type=float, default=0, help="seconds: start no "
                    "problem after this long (0: none); the rest are recorded as not run")
    ap.add_argument("--startup-timeout", type=float, default=600,
                    help="seconds a worker may take to reach its first problem")
    args = ap.parse_args(argv)
    try:
        args.levels = [int(x) for x in args.levels.split(",") if x]
        args.gpu_ids = [int(x) for x in args.gpu_ids.split(",") if x]
    except ValueError as e:
        ap.error(f"--levels and --gpu-ids take comma-separated integers ({e})")
    if not args.levels or any(lv < 1 for lv in args.levels):
        ap.error("--levels: e.g. 1,2")
    if args.problem_timeout <= 0 or args.startup_timeout <= 0 or args.deadline < 0:
        ap.error("--problem-timeout and --startup-timeout must be > 0, --deadline >= 0")
    if os.path.exists(args.out) and not os.path.isdir(args.out):
        ap.error(f"--out {args.out} is a file, not a folder")
    args.modes = [m for m in args.modes.split(",") if m]
    if args.gpu_ids:
        args.gpus = len(args.gpu_ids)
    bad = [m for m in args.modes if m not in MODES]
    if bad or "eager" not in args.modes:
        ap.error(f"--modes: unknown {bad} or no eager (the baseline); modes: "
                 f"{', '.join(MODES)}")
    if args.gpus < 1 or args.runs < 1 or args.trials < 1:
        ap.error("--gpus, --runs and --trials must be >= 1")
    return args


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--worker":
        return worker_process.worker_main(argv[1], Worker)
    args = parse_args(argv)
    t0 = time.time()
    args.deadline_at = t0 + args.deadline if args.deadline > 0 else float("inf")
    os.makedirs(args.out, exist_ok=True)
    problems = find_problems(args.kernelbench, args.levels,
                             [p for p in args.problems.split(",") if p])
    out_file = os.path.join(args.out, "results.jsonl")
    if args.summary_only:
        args.resume = True
    results = {}
    if args.summary_only and not os.path.exists(out_file):
        raise SystemExit(f"run_kernelbench: --summary-only: no {out_file}")
    if args.resume and os.path.exists(out_file):
        for rec in read_results(out_file):
            if not str(rec.get("error", "")).startswith("not run"):
                results[rec["id"]] = rec
    elif os.path.exists(out_file):
        os.remove(out_file)
    todo = [] if args.summary_only else [p for p in problems if p[0] not in results]
    log(f"{len(problems)} problems, {len(todo)} to run on {args.gpus} GPU(s), modes "
        f"{', '.join(args.modes)}")
    lock = threading.Lock()
    lanes = [todo[i::args.gpus] for i in range(args.gpus)]
    threads = [threading.Thread(target=drive_lane, args=(args, i, lane, results, lock,
                                                         out_file))
               for i, lane in enumerate(lanes) if lane]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    env = results.pop("_env", None)
    # Every problem counts in fast_p's denominator: one without a result as
    # not correct.
    records = [results.get(pid) or {"id": pid, "error": "not run"}
               for pid, _ in problems]
    summary = write_summary(args, records, env, t0)
    for level, lv in summary["levels"].items():
        for mode in args.modes:
            if mode in lv:
                log(f"level {level} {mode}: {lv[mode]}")
    return 0


def read_results(path):
    """The records of a results.jsonl; a line that is not a record (a run
    killed while writing it, a damaged file) is skipped with a warning naming
    the file and line, and its problem runs again on --resume."""
    out = []
    with open(path, "rb") as f:
        for n, raw in enumerate(f, 1):
            if not raw.strip():
                continue
            try:
                rec = json.loads(raw.decode("utf-8"))
                if not isinstance(rec, dict) or not isinstance(rec.get("id"), str):
                    raise ValueError("not a record with an id")
            except ValueError as e:  # JSONDecodeError and UnicodeDecodeError too
                log(f"warning: {path}:{n}: skipped ({e})")
                continue
            out.append(rec)
    return out


def _order(pid):
    level, rest = pid.split("/", 1)
    return int(level), int(rest.split("_", 1)[0])


if __name__ == "__main__":
    sys.exit(main())
