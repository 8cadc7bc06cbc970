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

Writes OUT/suite.json (the record), OUT/suite.md, OUT/speedup.png,
OUT/roofline.png and OUT/run.log. Exit code: 0 when every problem kopt supports
ran correctly, 1 when one failed, was skipped or kopt was incorrect, 2 on usage
errors.
"""
import argparse
import collections
import contextlib
import json
import os
import platform
import signal
import subprocess
import sys
import threading
import time
import traceback
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import kopt_suite as ks  # noqa: E402
import compile_suite  # noqa: E402  (check_manifest)
import report  # noqa: E402

L2_FLUSH_BYTES = 256 << 20
# Before each timed call the GPU spins this long (torch.cuda._sleep) after the L2
# flush, so that the host, which queues the call meanwhile, stays ahead of the GPU and
# the events time GPU execution, not Python launch overhead.
HOST_AHEAD_US = 200
DEFAULT_PEERS = ("eager", "compile", "cublas")


def log(msg):
    print(f"run_suite: {msg}", flush=True)


# ======================================================================= inputs

def load_inputs(ptx_dir, only):
    """The suite and compile record under ptx_dir; returns (suite, problems,
    compile record by problem name)."""
    cpath = os.path.join(ptx_dir, "compile_suite.json")
    try:
        with open(cpath) as f:
            comp = json.load(f)
    except (OSError, ValueError) as e:
        raise ks.SuiteError(f"{cpath}: {e} (run bench/prepare_suite.sh or "
                            "bench/compile_suite.py --out DIR first)")
    suite = ks.load_suite(os.path.join(ptx_dir, comp.get("suite", "suite.json")))
    problems = ks.select(suite, only)
    by_name = {r["name"]: r for r in comp.get("problems", [])}
    return suite, problems, comp, by_name


def manifest_paths(ptx_dir, comp, name):
    d = os.path.join(ptx_dir, comp.get("problems_dir", "problems"))
    return os.path.join(d, name + ".json"), os.path.join(d, name + ".ptx")


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
            p, d, kopt, args.ptxas, "sm_90a", args.cuda_path), args.compile_jobs)
    rec = compile_suite.write_record(out, results, compiler, args.ptxas, "sm_90a")
    log(f"compiled {len(results)} problems in {time.monotonic() - t0:.1f} s with "
        f"{compiler['compiler']}: " +
        ", ".join(f"{n} {st}" for st, n in sorted(rec["counts"].items())))
    for r in results:
        if r["status"] in compile_suite.FAILURES:
            log(f"compile FAIL {r['name']}: {r['status']}: {r.get('error')}")
    return out


def compiled(c):
    return c is not None and c.get("status") in ("ok", "newly-supported")


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


# ======================================================================= worker

class Worker:
    def __init__(self, plan):
        import torch
        import torch.nn.functional as F
        self.torch, self.F, self.plan = torch, F, plan
        o = plan["options"]
        self.o = o
        if not torch.cuda.is_available():
            raise RuntimeError("no CUDA device visible to PyTorch")
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        torch.set_float32_matmul_precision("highest")
        rp = bool(o.get("reduced_precision_reduction"))
        torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = rp
        torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = rp
        self.flush = torch.empty(L2_FLUSH_BYTES, dtype=torch.uint8, device="cuda")
        self.sleep_cycles = self.calibrate_sleep()
        self.dt = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
        # kopt's kernels: loaded and launched by kopt's C++ runtime through the
        # Python package (manifest checks, tensor maps, argument packing).
        self.kopt = ks.import_kopt()
        self.loader = f"kopt package ({self.kopt.version()})"
        self.loader_errors = []
        self.events = open(plan["events"], "a")

    @contextlib.contextmanager
    def tf32(self, on):
        """PyTorch's matmuls (cuBLAS, eager, torch.compile) with allow_tf32 = `on`
        inside the block, restored after: a problem that allows TF32 (kopt.matmul
        {tf32}) runs its peers as PyTorch code with allow_tf32 = True would; TF32 is
        off everywhere else. kopt's kernels and the float64 references do not read
        the flag."""
        m = self.torch.backends.cuda.matmul
        prev = m.allow_tf32
        m.allow_tf32 = bool(on)
        try:
            yield
        finally:
            m.allow_tf32 = prev

    def emit(self, obj):
        self.events.write(json.dumps(obj) + "\n")
        self.events.flush()

    # ------------------------------------------------------------- timing
    def calibrate_sleep(self):
        """GPU clock cycles of torch.cuda._sleep that take about HOST_AHEAD_US (0
        when this PyTorch has no _sleep)."""
        torch = self.torch
        sleep = getattr(torch.cuda, "_sleep", None)
        if sleep is None:
            return 0
        try:
            us = 0.0
            for _ in range(3):
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                s.record()
                sleep(1_000_000)
                e.record()
                e.synchronize()
                us = s.elapsed_time(e) * 1e3
            return max(1000, min(int(1_000_000 * HOST_AHEAD_US / max(us, 1.0)), 20_000_000))
        except Exception:
            return 0

    def time_fn(self, fn):
        """One routine for every implementation (see the module docstring)."""
        torch, o = self.torch, self.o
        torch.cuda.synchronize()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        self.flush.zero_()
        s.record()
        fn()
        e.record()
        e.synchronize()
        one = max(s.elapsed_time(e), 1e-4)
        budget_ms = o["time_budget_s"] * 1e3
        runs = o["runs"] if one * o["runs"] <= budget_ms else \
            max(o["min_runs"], int(budget_ms / one))
        warmup = o["warmup"] if one * o["warmup"] <= budget_ms / 4 else \
            max(1, int(budget_ms / 4 / one))
        for _ in range(warmup):
            fn()
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(runs)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(runs)]
        torch.cuda.synchronize()
        sleep = self.torch.cuda._sleep if self.sleep_cycles else None
        for i in range(runs):
            self.flush.zero_()
            if sleep:
                sleep(self.sleep_cycles)
            starts[i].record()
            fn()
            ends[i].record()
        torch.cuda.synchronize()
        ms = sorted(a.elapsed_time(b) for a, b in zip(starts, ends))
        return {"median_ms": ms[len(ms) // 2] if len(ms) % 2 else
                (ms[len(ms) // 2 - 1] + ms[len(ms) // 2]) / 2,
                "min_ms": ms[0], "max_ms": ms[-1], "mean_ms": sum(ms) / len(ms),
                "p10_ms": ms[len(ms) // 10], "p90_ms": ms[(9 * len(ms)) // 10],
                "runs": runs, "warmup": warmup, "capped": runs < o["runs"],
                "l2_flush_bytes": L2_FLUSH_BYTES}

    # ------------------------------------------------------------- ceilings
    def ceilings(self):
        torch = self.torch
        gen = torch.Generator(device="cuda")
        gen.manual_seed(1)

        def copy(n):
            src = torch.ones(n, dtype=torch.uint8, device="cuda")
            dst = torch.empty_like(src)
            return self.time_fn(lambda: dst.copy_(src))

        def gemm(dt, size):
            a = torch.randn(size, size, device="cuda", generator=gen).to(self.dt[dt])
            b = torch.randn(size, size, device="cuda", generator=gen).to(self.dt[dt])
            c = torch.empty_like(a)
            return self.time_fn(lambda: torch.matmul(a, b, out=c))

        n = 1 << 30
        t = copy(n)
        out = {"copy": {"bytes_moved": 2 * n, "time": t,
                        "bytes_per_s": 2 * n / (t["median_ms"] * 1e-3)}}
        for dt, size in (("bf16", 8192), ("f16", 8192), ("f32", 4096), ("tf32", 8192)):
            with self.tf32(dt == "tf32"):  # tf32: f32 operands on tensor cores
                t = gemm("f32" if dt == "tf32" else dt, size)
            out[f"gemm_{dt}"] = {"m_n_k": [size] * 3, "time": t,
                                 "flops_per_s": 2 * size ** 3 / (t["median_ms"] * 1e-3)}
        torch.cuda.empty_cache()
        return out

    # ------------------------------------------------------------- problems
    def make_input(self, x, gen):
        torch = self.torch
        shape, dt = tuple(x["shape"]), self.dt[x["dtype"]]
        init = x.get("init") or {"kind": "uniform", "low": -1.0, "high": 1.0}
        k = init["kind"]
        if k == "uniform":
            lo, hi = float(init.get("low", -1.0)), float(init.get("high", 1.0))
            v = torch.rand(shape, generator=gen, device="cuda") * (hi - lo) + lo
        elif k == "normal":
            v = torch.randn(shape, generator=gen, device="cuda") * float(init.get("std", 1.0))
        elif k == "const":
            v = torch.full(shape, float(init["value"]), device="cuda")
        else:  # causal_mask: 0 on and below the diagonal, -inf above
            v = torch.full(shape, float("-inf"), device="cuda").triu(1)
        return v.to(dt).contiguous()

    def build(self, p, reference=False):
        torch, F = self.torch, self.F
        g = {"torch": torch, "F": F}
        if reference:
            dt = self.dt
            g["_round"] = lambda t, d: t.to(dt[d]).to(torch.float64)
        src = ks.torch_source(p, reference)
        exec(compile(src, f"<{p['name']}{' reference' if reference else ''}>", "exec"), g)
        return g["forward"], src

    def compare(self, out, ref, tol):
        torch = self.torch
        o = out.to(torch.float64)
        fin_r, fin_o = torch.isfinite(ref), torch.isfinite(o)
        both_special = ~fin_r & ~fin_o
        special = (fin_r != fin_o) | (both_special & (o != ref) &
                                      ~(torch.isnan(o) & torch.isnan(ref)))
        mism = int(special.sum().item())
        fin = fin_r & fin_o
        d = torch.where(fin, o - ref, torch.zeros_like(o))
        rn = torch.where(fin_r, ref, torch.zeros_like(ref)).norm().item()
        dn = d.norm().item()
        rel = dn / rn if rn > 0 else dn
        first_bad = None
        if mism:
            first_bad = int(special.flatten().nonzero()[0].item())
        return {"rel_err": rel, "max_abs_err": d.abs().max().item() if d.numel() else 0.0,
                "max_abs_ref": torch.where(fin_r, ref.abs(), torch.zeros_like(ref)).max().item()
                if ref.numel() else 0.0,
                "special_mismatch": mism, "first_special_index": first_bad,
                "nan_in_output": int(torch.isnan(o).sum().item()), "tolerance": tol,
                "passed": bool(mism == 0 and rel <= tol)}

    def kopt_function(self, p):
        """Problem p's function, loaded with kopt.load from its manifest (validated
        by the C++ reader; every kernel resolved): (module, kopt.Function, the
        manifest's function, per-kernel information)."""
        mpath, _ = manifest_paths(self.plan["ptx_dir"], self.comp_record, p["name"])
        with open(mpath) as f:
            m = json.load(f)
        mod = self.kopt.load(mpath, device=self.torch.cuda.current_device())
        fn = mod[p["name"]]
        mfn = next(f for f in m["functions"] if f["name"] == p["name"])
        kernels = {k["name"]: k for k in m["kernels"]}
        info, seen = [], set()
        for launch in mfn["launches"]:
            k = kernels[launch["kernel"]]
            if k["name"] in seen:
                continue
            seen.add(k["name"])
            res = mod.kernel_resources(k["name"])
            info.append({"name": k["name"], "op": ks.kernel_op_name(k), "class": k.get("class"),
                         "grid": k["grid"], "block": k["block"],
                         "dynamic_shared_bytes": k.get("dynamic_shared_bytes", 0),
                         **{key: res[key] for key in ("registers", "local_bytes",
                                                      "static_shared_bytes")}})
        return mod, fn, mfn, info

    def kopt_call(self, fn, args):
        """A zero-argument call of the kopt.Function `fn` on the torch tensors `args`
        (inputs, then outputs) on PyTorch's current stream: the package's launch
        (the C++ runtime packs the arguments and encodes the tensor maps, on the
        first call only while the addresses stay). Its workspace (intermediates and
        split-K tile counters) is zeroed once here; split-K kernels leave their
        counters zero, so no launch zero-fills it again."""
        torch = self.torch
        ws = torch.zeros(fn.workspace_bytes, dtype=torch.uint8, device="cuda") \
            if fn.workspace_bytes else None

        def call():
            fn.launch(args, workspace=ws, workspace_zeroed=True)
        return call, ws

    def run_problem(self, p, comp):
        torch = self.torch
        o = self.o
        rec = {"name": p["name"], "kopt": {}, "peers": {}}
        seed = (o["seed"] + zlib.crc32(p["name"].encode())) % (1 << 62)
        rec["seed"] = seed
        gen = torch.Generator(device="cuda")
        gen.manual_seed(seed)
        inputs = [self.make_input(x, gen) for x in p["inputs"]]
        values = p["values"]

        ref_fn, _ = self.build(p, reference=True)
        with torch.no_grad():
            refs = ref_fn(*[t.to(torch.float64) for t in inputs])
        torch.cuda.synchronize()

        def peer_check(outs):
            outs = outs if isinstance(outs, (tuple, list)) else (outs,)
            res = []
            for name, out, ref in zip(p["outputs"], outs, refs):
                want = (tuple(values[name]["shape"]), self.dt[values[name]["dtype"]])
                if (tuple(out.shape), out.dtype) != want:
                    raise RuntimeError(f"output {name}: got {out.dtype} {list(out.shape)}, "
                                       f"the suite says {want[1]} {list(want[0])}")
                c = self.compare(out, ref, ks.tolerance(p, values[name]["dtype"]))
                res.append({"name": name, "rel_err_vs_fp64": c["rel_err"],
                            "special_mismatch": c["special_mismatch"]})
            return res

        # Eager's result first (not timed yet): kopt's tolerance is at least 4 times
        # eager's own error against the reference on the same inputs.
        fwd_eager, src_eager = self.build(p)
        eager = {"impl": src_eager}
        eager_outs, eager_err = None, {}
        try:
            with torch.no_grad():
                eager_outs = fwd_eager(*inputs)
                eager["check"] = peer_check(eager_outs)
            eager_err = {x["name"]: x["rel_err_vs_fp64"] for x in eager["check"]}
        except Exception as e:
            eager["error"] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
            traceback.print_exc()
        if "eager" in o["peers"]:
            rec["peers"]["eager"] = eager
        else:
            rec["eager_check"] = eager

        # kopt: its outputs are checked before anything is timed.
        c = comp.get(p["name"])
        k = rec["kopt"]
        if not compiled(c):
            k["status"] = "unsupported" if c and c.get("status", "").startswith(
                "unsupported") else "compile-failed"
            k["error"] = (c or {}).get("error", "not in the compile record")
            k["compile_status"] = (c or {}).get("status")
        else:
            try:
                self.run_kopt(p, c, inputs, refs, k, eager_err)
            except Exception as e:
                k["status"] = "error"
                k["error"] = f"{type(e).__name__}: {e}"
                traceback.print_exc()
                if self.sticky():
                    rec["sticky_cuda_error"] = True
                    return rec
        for peer in o["peers"]:
            if peer == "cublas" and not ks.matmul_nodes(p):
                continue
            entry = rec["peers"].setdefault(peer, {})
            try:
                if peer == "eager":
                    if eager_outs is not None:
                        with torch.no_grad():
                            entry["time"] = self.time_fn(lambda: fwd_eager(*inputs))
                elif peer.startswith("compile"):
                    if time.time() > o["compile_deadline"]:
                        entry["skipped"] = "past --compile-deadline"
                        continue
                    fwd, src = self.build(p)
                    torch._dynamo.reset()
                    mode = "max-autotune" if peer == "compile_max_autotune" else None
                    cf = torch.compile(fwd, mode=mode, dynamic=False)
                    entry["impl"] = f"torch.compile(forward, mode={mode!r}, dynamic=False)"
                    t0 = time.monotonic()
                    with torch.no_grad():
                        outs = cf(*inputs)
                        torch.cuda.synchronize()
                        entry["compile_s"] = round(time.monotonic() - t0, 2)
                        entry["check"] = peer_check(outs)
                        del outs
                        entry["time"] = self.time_fn(lambda: cf(*inputs))
                elif peer == "cublas":
                    call, desc = self.cublas_fn(p, inputs, gen)
                    entry["impl"] = desc
                    with torch.no_grad():
                        entry["time"] = self.time_fn(call)
            except Exception as e:
                entry["error"] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
                traceback.print_exc()
                if self.sticky():
                    rec["sticky_cuda_error"] = True
                    return rec
        if eager_outs is not None and k.get("status") == "ok" and k.get("_outs"):
            k["check"]["rel_diff_vs_eager"] = [
                self.compare(a, b.to(torch.float64), 0.0)["rel_err"]
                for a, b in zip(k["_outs"], eager_outs if isinstance(eager_outs, (tuple, list))
                                else (eager_outs,))]
        k.pop("_outs", None)
        return rec

    def tol(self, p, name, eager_err):
        """Relative L2 error allowed for output `name`: the dtype's tolerance, or 4
        times eager's own error on the same inputs when that is larger."""
        return max(ks.tolerance(p, p["values"][name]["dtype"]),
                   4 * (eager_err.get(name) or 0.0))

    def run_kopt(self, p, c, inputs, refs, k, eager_err):
        torch = self.torch
        values = p["values"]
        mod, fn, mfn, info = self.kopt_function(p)
        k["kernels"] = [l["kernel"] for l in mfn["launches"]]
        k["kernel_info"] = info
        outs = [torch.full(tuple(values[o]["shape"]), float("nan"), dtype=self.dt[values[o]["dtype"]],
                           device="cuda") for o in p["outputs"]]
        # The package checks every tensor against the manifest's arguments (dtype,
        # shape, contiguity, alignment, device) before launching.
        call, ws = self.kopt_call(fn, inputs + outs)
        call()
        torch.cuda.synchronize()
        checks = [dict(name=o, **self.compare(t, r, self.tol(p, o, eager_err)))
                  for o, t, r in zip(p["outputs"], outs, refs)]
        k["check"] = {"reference": "float64 graph, intermediates rounded to their dtype",
                      "outputs": checks, "passed": all(x["passed"] for x in checks)}
        if not k["check"]["passed"]:
            k["status"] = "incorrect"
            return
        first = [t.clone() for t in outs]
        k["time"] = self.time_fn(call)
        same = all(torch.equal(a, b) for a, b in zip(first, outs))
        k["check"]["after_timing_identical"] = same
        if not same:
            checks = [dict(name=o, **self.compare(t, r, self.tol(p, o, eager_err)))
                      for o, t, r in zip(p["outputs"], outs, refs)]
            k["check"]["after_timing"] = checks
            if not all(x["passed"] for x in checks):
                k["status"] = "incorrect"
                k.pop("time", None)
                return
        k["status"] = "ok"
        k["_outs"] = first
        k["_keep"] = (mod, ws)  # dropped with the record's tensors

    def cublas_fn(self, p, inputs, gen):
        torch = self.torch
        values = p["values"]
        by_name = {x["name"]: t for x, t in zip(p["inputs"], inputs)}
        mms, desc = [], []
        for n in ks.matmul_nodes(p):
            ops = []
            for a in n["args"]:
                if a in by_name:
                    ops.append(by_name[a])
                else:  # an intermediate: a random tensor of its type
                    ops.append((torch.rand(tuple(values[a]["shape"]), generator=gen,
                                           device="cuda") * 2 - 1).to(self.dt[values[a]["dtype"]]))
            attrs = n.get("attrs") or {}
            a = ops[0].mT if attrs.get("transpose_a") else ops[0]
            b = ops[1].mT if attrs.get("transpose_b") else ops[1]
            out = torch.empty(tuple(n["shape"]), dtype=ops[0].dtype, device="cuda")
            mms.append((a, b, out))
            desc.append(f"torch.matmul({n['args'][0]}{'.mT' if attrs.get('transpose_a') else ''}, "
                        f"{n['args'][1]}{'.mT' if attrs.get('transpose_b') else ''}, out=...)"
                        + (" with allow_tf32 = True" if attrs.get("tf32") else ""))

        def call():
            for a, b, out in mms:
                torch.matmul(a, b, out=out)
        return call, "; ".join(desc)

    def sticky(self):
        """After an error: is the CUDA context still usable?"""
        try:
            self.torch.cuda.synchronize()
            self.torch.zeros(1, device="cuda").add_(1).item()
            return False
        except Exception:
            return True

    def env(self):
        torch = self.torch
        props = torch.cuda.get_device_properties(0)
        dev = {"name": props.name, "sm_count": props.multi_processor_count,
               "memory_bytes": props.total_memory,
               "capability": f"{props.major}.{props.minor}",
               "l2_bytes": getattr(props, "L2_cache_size", None)}
        try:
            q = subprocess.run(["nvidia-smi", "--query-gpu=driver_version,clocks.sm,"
                                "clocks.max.sm,clocks.mem,temperature.gpu,power.draw",
                                "--format=csv,noheader"], capture_output=True, text=True,
                               timeout=20)
            f = [x.strip() for x in q.stdout.strip().split(",")]
            if len(f) >= 6:
                dev.update({"driver": f[0], "sm_clock_at_start": f[1], "max_sm_clock": f[2],
                            "mem_clock": f[3], "temperature_at_start": f[4],
                            "power_at_start": f[5]})
        except (OSError, subprocess.TimeoutExpired):
            pass
        sw = {"python": platform.python_version(), "torch": torch.__version__,
              "cuda_torch": torch.version.cuda}
        try:
            import triton
            sw["triton"] = triton.__version__
        except Exception:
            sw["triton"] = None
        try:
            import cupy
            sw["cupy"] = cupy.__version__
        except Exception:
            sw["cupy"] = None
        return {"device": dev, "software": sw, "loader": self.loader,
                "loader_errors": self.loader_errors, "sleep_cycles": self.sleep_cycles}

    def main(self):
        plan = self.plan
        if plan.get("first"):
            env = self.env()
            self.emit({"event": "env", **env})
            log(f"{env['device']['name']}; kopt kernels loaded with {env['loader']}"
                + (f" (not: {'; '.join(self.loader_errors)})" if self.loader_errors else "")
                + f"; {self.sleep_cycles} GPU sleep cycles before each timed call")
            if not plan.get("ceilings") and not plan["options"].get("skip_ceilings"):
                log("measuring the ceilings (1 GiB copy, cuBLAS GEMMs)")
                try:
                    self.emit({"event": "ceilings", "ceilings": self.ceilings()})
                except Exception as e:
                    traceback.print_exc()
                    self.emit({"event": "ceilings", "error": f"{type(e).__name__}: {e}"})
        _, problems, self.comp_record, comp = load_inputs(plan["ptx_dir"], plan["problems"])
        for p in problems:
            if os.getppid() != plan["driver_pid"]:
                log("the driver is gone: stopping")
                return 5
            if time.time() > self.o["deadline"]:
                self.emit({"event": "result", "record": {
                    "name": p["name"], "skipped": "past --deadline"}})
                continue
            self.emit({"event": "start", "name": p["name"]})
            t0 = time.monotonic()
            try:
                # TF32 for the peers of a problem whose matmul allows it.
                with self.tf32(ks.uses_tf32(p)):
                    rec = self.run_problem(p, comp)
            except Exception as e:
                traceback.print_exc()
                rec = {"name": p["name"], "error": f"{type(e).__name__}: {e}"}
                if self.sticky():
                    rec["sticky_cuda_error"] = True
            rec["wall_s"] = round(time.monotonic() - t0, 2)
            rec["kopt"] = {k: v for k, v in (rec.get("kopt") or {}).items()
                           if not k.startswith("_")}
            self.emit({"event": "result", "record": rec})
            log(f"{p['name']}: " + summary_line(rec))
            if rec.get("sticky_cuda_error"):
                log("the CUDA context is unusable after this problem; a new worker goes on")
                return 3
            self.torch.cuda.empty_cache()
        return 0


def summary_line(rec):
    if rec.get("skipped"):
        return f"skipped ({rec['skipped']})"
    k = rec.get("kopt") or {}
    parts = [f"kopt {k.get('status', '?')}"]
    errs = [x.get("rel_err") for x in (k.get("check") or {}).get("outputs", [])]
    if errs:
        parts[0] += f" (rel_err {max(errs):.2g})"
    t = (k.get("time") or {}).get("median_ms")
    if t:
        parts[0] += f" {t:.4f} ms"
    for name, peer in (rec.get("peers") or {}).items():
        pt = (peer.get("time") or {}).get("median_ms")
        parts.append(f"{name} {pt:.4f} ms" if pt else f"{name} {peer.get('error') or peer.get('skipped') or '-'}")
    if rec.get("error"):
        parts.append(f"error: {rec['error']}")
    return ", ".join(parts) + f" ({rec.get('wall_s', 0)} s)"


def worker_main(plan_path, worker_class=None):
    """The worker process: runs `worker_class(plan).main()` (default Worker; the
    schedule-sweep runner, bench/run_sweep.py, passes its subclass)."""
    with open(plan_path) as f:
        plan = json.load(f)
    try:  # Linux: die with the driver (PR_SET_PDEATHSIG), not linger on the GPU
        import ctypes
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)
        if os.getppid() != plan["driver_pid"]:
            return 5
    except (OSError, AttributeError):
        pass
    try:
        w = (worker_class or Worker)(plan)
    except Exception as e:
        traceback.print_exc()
        with open(plan["events"], "a") as f:
            f.write(json.dumps({"event": "fatal", "error": f"{type(e).__name__}: {e}"}) + "\n")
        return 4
    return w.main()


# ======================================================================= driver

def read_events(path, pos):
    try:
        with open(path) as f:
            f.seek(pos)
            data = f.read()
    except OSError:
        return [], pos
    lines = data.split("\n")
    complete, rest = lines[:-1], lines[-1]
    events = []
    for line in complete:
        if line.strip():
            events.append(json.loads(line))
    return events, pos + len(data) - len(rest)


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
        "runs": args.runs, "warmup": args.warmup, "min_runs": args.min_runs,
        "time_budget_s": args.time_budget, "seed": args.seed, "peers": args.peers,
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
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, start_new_session=True)
        tail = collections.deque(maxlen=25)

        def pump():
            for line in proc.stdout:
                sys.stdout.write(line)
                sys.stdout.flush()
                logf.write(line)
                logf.flush()
                tail.append(line.rstrip())
        reader = threading.Thread(target=pump, daemon=True)
        reader.start()
        current, since = None, time.monotonic()
        fatal, progress = None, False
        while True:
            rc = proc.poll()
            events, pos = read_events(events_path, pos)
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
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
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


def measured_limits(ceilings):
    if not ceilings or ceilings.get("error"):
        return None
    try:
        flops = {dt: ceilings[f"gemm_{dt}"]["flops_per_s"] for dt in ("bf16", "f16", "f32")}
        if ceilings.get("gemm_tf32"):  # absent in records from before TF32
            flops["tf32"] = ceilings["gemm_tf32"]["flops_per_s"]
        return {
            "name": "measured in this run",
            "matmul_flops": flops,
            "vector_flops": ks.DATASHEET["vector_flops"],
            "hbm_bytes_per_s": ceilings["copy"]["bytes_per_s"],
            "how": "HBM: 1 GiB device-to-device copy, (read + write bytes) / median time; "
                   "GEMM: cuBLAS through torch.matmul, bf16 and f16 8192^3, f32 4096^3 "
                   "(no TF32), tf32 8192^3 (f32 with allow_tf32 = True); the vector FP32 "
                   "rate is the datasheet's",
        }
    except (KeyError, TypeError, ZeroDivisionError):
        return None


def strip_problem(p):
    q = {k: v for k, v in p.items() if k != "values"}
    return json.loads(json.dumps(q))


def main(argv=None):
    ap = argparse.ArgumentParser(description="Benchmark-suite runner: kopt beside PyTorch "
                                 "eager, torch.compile and cuBLAS (GPU host).")
    ap.add_argument("--ptx-dir", help="bench/compile_suite.py's output (.device/suite)")
    ap.add_argument("--out", help="output folder")
    ap.add_argument("--only", action="append", default=[], metavar="NAME")
    ap.add_argument("--peers", default=",".join(DEFAULT_PEERS),
                    help="comma-separated: eager, compile, cublas (default all three)")
    ap.add_argument("--max-autotune", action="store_true",
                    help="also time torch.compile(mode='max-autotune') (slow to compile)")
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--min-runs", type=int, default=10)
    ap.add_argument("--time-budget", type=float, default=2.0,
                    help="seconds of timed runs per implementation and problem before the "
                         "run count is cut (default 2)")
    ap.add_argument("--seed", type=int, default=20261129)
    ap.add_argument("--deadline", type=float, default=510.0,
                    help="seconds after which no new problem starts (0: none; default 510)")
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
        return worker_main(args.worker)
    if args.compile and args.ptx_dir:
        ap.error("--compile and --ptx-dir exclude each other")
    if args.compile and not args.out:
        ap.error("--compile needs --out (the PTX goes to OUT/compiled)")
    if not args.ptx_dir and not args.compile:
        ap.error("--ptx-dir or --compile is required")
    args.peers = [x for x in args.peers.split(",") if x]
    for peer in args.peers:
        if peer not in DEFAULT_PEERS:
            ap.error(f"unknown peer {peer!r}")
    if args.max_autotune:
        args.peers.append("compile_max_autotune")
    if args.runs < 1 or args.min_runs < 1 or args.warmup < 0:
        ap.error("--runs and --min-runs must be at least 1, --warmup at least 0")
    args.min_runs = min(args.min_runs, args.runs)
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
    limits = {"datasheet": ks.DATASHEET, "measured": measured_limits(ceilings)}
    out_records = []
    for p in problems:
        r = records.get(p["name"]) or {"name": p["name"], "error": "no result"}
        r = dict(r)
        r.update({"model": p["model"], "source": p["source"], "tags": p.get("tags", []),
                  "tf32": ks.uses_tf32(p), "problem": p})
        r.setdefault("kopt", {})
        r.setdefault("peers", {})
        c = comp.get(p["name"])
        if not r["kopt"].get("status") and not compiled(c):
            r["kopt"] = {"status": "unsupported" if c and c.get("status", "").startswith(
                "unsupported") else "compile-failed",
                "error": (c or {}).get("error", "not in the compile record")}
        if r.get("skipped"):
            r["kopt"].setdefault("status", "skipped")
        elif r.get("error") and not r["kopt"].get("status"):
            r["kopt"]["status"] = "error"
            r["kopt"].setdefault("error", r["error"])
        ks.derive(r, limits)
        r["problem"] = strip_problem(p)
        out_records.append(r)
    record = {
        "tool": "bench/run_suite.py",
        "format_version": 1,
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(t0)),
        "wall_s": round(time.time() - t0, 1),
        "device": (env or {}).get("device"),
        "software": (env or {}).get("software"),
        "compile": {k: comp_record.get(k) for k in ("git", "date", "ptxas_version", "arch",
                                                    "counts")},
        "method": {"runs": args.runs, "min_runs": args.min_runs, "warmup": args.warmup,
                   "time_budget_s": args.time_budget, "l2_flush_bytes": L2_FLUSH_BYTES,
                   "timer": "CUDA events around each call, median", "seed": args.seed,
                   "host_ahead_us": HOST_AHEAD_US,
                   "sleep_cycles": (env or {}).get("sleep_cycles"),
                   # TF32 only for the problems that allow it (their "tf32": true).
                   "tf32": any(ks.uses_tf32(p) for p in problems),
                   "tf32_problems": [p["name"] for p in problems if ks.uses_tf32(p)],
                   "tf32_tolerance": ks.TF32_TOLERANCE,
                   "reduced_precision_reduction": args.allow_reduced_precision,
                   "peers": args.peers, "loader": (env or {}).get("loader"),
                   "loader_errors": (env or {}).get("loader_errors"),
                   "tolerance": ks.TOLERANCE},
        "limits": limits,
        "ceilings": ceilings,
        "aggregates": ks.aggregate(out_records, tuple(args.peers)),
        "problems": out_records,
    }
    path = os.path.join(args.out, "suite.json")
    with open(path, "w") as f:
        json.dump(record, f, indent=1, default=str)
        f.write("\n")
    written = [path]
    try:
        written += report.write_all(record, args.out)
    except Exception:
        traceback.print_exc()
        log("error: the report could not be written in full")
    for pth in (os.path.join(args.out, "plan.json"), os.path.join(args.out, "events.jsonl")):
        if os.path.exists(pth):
            os.remove(pth)
    agg = record["aggregates"]
    log("wrote " + ", ".join(written))
    for peer, g in agg["geomean_speedup"].items():
        log(f"geomean speedup over {peer}: {g['value']:.3f} ({g['problems']} problems)")
    ms = agg.get("median_sol_score_datasheet") or {}
    if ms.get("value") is not None:
        log(f"median SOL score (datasheet): {ms['value']:.3f}")
    bad = [r["name"] for r in out_records
           if r["kopt"].get("status") not in ("ok", "unsupported") or r.get("error") or
           r.get("skipped")]
    if bad:
        log(f"problems that failed, errored or were skipped: {', '.join(bad)}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
