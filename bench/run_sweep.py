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
(PYTHONPATH=<bundle>/python; docs/python.md); no LLVM. It reuses bench/run_suite.py's
worker: the timing routine, the L2 flush, the check against the reference and the
launch through the package (kopt.load, Function.launch: the C++ runtime checks the
manifest, encodes the tensor maps and packs the arguments).

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
import fnmatch
import json
import math
import os
import re
import shlex
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
import run_suite  # noqa: E402  (the worker, the timing routine, the kopt launch)

SWEEP_VERSION = 1
DTYPES = ("f32", "f16", "bf16")
KNOWN_TAGS = ("sweep", "default", "split_k", "persistent", "tf32", "random", "random_valid",
              "decode", "tma", "gemv", "epilogue", "simt_stages", "warp_specialize",
              "tma_store")
ID_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")
ENTRY_RE = re.compile(r"\.entry\s+(\w+)\s*\(")
MAX_DYNAMIC_SHARED = 227 * 1024   # sm_90 opt-in limit per block
INPUTS = "uniform(-1, 1) drawn on the GPU (torch.rand), seed = --seed + crc32(problem id)"

# Kernel statuses. ok: correct and timed (or correct and not timed: `time` absent
# only when timing failed, then the status is error). FAILED counts against the exit
# code; skipped (past --deadline) does not.
FAILED = ("error", "timeout", "crashed", "invalid", "not-run")
RAN = ("ok", "incorrect", "error", "timeout", "crashed")
SCHEDULE_ORDER = ("instruction", "copy", "block_m", "block_n", "block_k", "warp_m",
                  "warp_n", "num_warps", "stages", "split_k", "swizzle", "vector_width",
                  "persistent", "warp_specialize", "tma_store")

_LOG = {"file": None}


def log(msg):
    line = f"run_sweep: {msg}"
    print(line, flush=True)
    if _LOG["file"]:
        _LOG["file"].write(line + "\n")
        _LOG["file"].flush()


class SweepError(Exception):
    pass


# ======================================================================= the index

def _pos_int(x):
    return isinstance(x, int) and not isinstance(x, bool) and x > 0


def _rel_path_ok(path):
    return (isinstance(path, str) and path and not os.path.isabs(path) and
            ".." not in path.replace("\\", "/").split("/"))


def check_index(index):
    """Structural errors of an index.json (a list of strings; empty when fine)."""
    if not isinstance(index, dict):
        return ["index.json is not a JSON object"]
    errs = []
    if index.get("kopt_sweep_version") != SWEEP_VERSION:
        errs.append(f"kopt_sweep_version is {index.get('kopt_sweep_version')!r}, "
                    f"not {SWEEP_VERSION}")
    problems = index.get("problems")
    if not isinstance(problems, list) or not problems:
        errs.append("no problems")
        return errs
    seen = set()
    for i, p in enumerate(problems):
        where = f"problems[{i}]"
        if not isinstance(p, dict):
            errs.append(f"{where}: not an object")
            continue
        pid = p.get("id")
        if not isinstance(pid, str) or not ID_RE.match(pid):
            errs.append(f"{where}: bad id {pid!r}")
        else:
            where = f"problem {pid}"
            if pid in seen:
                errs.append(f"{where}: duplicate id")
            seen.add(pid)
        for key in ("m", "n", "k"):
            if not _pos_int(p.get(key)):
                errs.append(f"{where}: {key} must be a positive integer, got {p.get(key)!r}")
        for key in ("dtype", "out_dtype"):
            if p.get(key) not in DTYPES:
                errs.append(f"{where}: {key} must be one of {', '.join(DTYPES)}, "
                            f"got {p.get(key)!r}")
        for key in ("transpose_a", "transpose_b", "tf32"):
            if not isinstance(p.get(key, False), bool):
                errs.append(f"{where}: {key} must be a boolean")
        if p.get("tf32") is True and p.get("dtype") != "f32":
            errs.append(f"{where}: tf32 needs f32 operands, got {p.get('dtype')!r}")
        tol = p.get("tolerance")
        if tol is not None and not (isinstance(tol, (int, float)) or isinstance(tol, dict)):
            errs.append(f"{where}: tolerance must be a number or {{dtype: number}}")
        kernels = p.get("kernels")
        if not isinstance(kernels, list):
            errs.append(f"{where}: kernels must be a list")
            continue
        for j, kern in enumerate(kernels):
            kw = f"{where}, kernels[{j}]"
            if not isinstance(kern, dict):
                errs.append(f"{kw}: not an object")
                continue
            for key in ("file", "manifest"):
                if not _rel_path_ok(kern.get(key)):
                    errs.append(f"{kw}: {key} must be a relative path inside the folder, "
                                f"got {kern.get(key)!r}")
            if not isinstance(kern.get("schedule", {}), dict):
                errs.append(f"{kw}: schedule must be an object")
            tags = kern.get("tags", [])
            if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
                errs.append(f"{kw}: tags must be a list of strings")
    return errs


def normalize_problem(p):
    """The problem with its optional fields filled in (transposes and tf32 default
    to false)."""
    q = dict(p)
    q["transpose_a"] = bool(p.get("transpose_a", False))
    q["transpose_b"] = bool(p.get("transpose_b", False))
    q["tf32"] = bool(p.get("tf32", False))
    q["kernels"] = [dict(k, tags=list(k.get("tags", [])), schedule=k.get("schedule") or {})
                    for k in p["kernels"]]
    return q


def load_index(sweep_dir):
    """DIR/index.json, checked; its problems normalized. Raises SweepError."""
    path = os.path.join(sweep_dir, "index.json")
    try:
        with open(path) as f:
            index = json.load(f)
    except (OSError, ValueError) as e:
        raise SweepError(f"{path}: {e} (run bench/compile_sweep.py --out DIR first)")
    errs = check_index(index)
    if errs:
        more = f" (and {len(errs) - 10} more)" if len(errs) > 10 else ""
        raise SweepError(f"{path}: " + "; ".join(errs[:10]) + more)
    index = dict(index)
    index["problems"] = [normalize_problem(p) for p in index["problems"]]
    return index


def select(problems, only):
    """The problems whose id matches one of `only` (ids or shell patterns, e.g.
    'random_*'; a comma-separated list is split); all when `only` is empty. A
    pattern that matches nothing is an error."""
    pats = [x for o in only for x in o.split(",") if x]
    if not pats:
        return list(problems)
    unmatched = [x for x in pats if not any(fnmatch.fnmatchcase(p["id"], x) for p in problems)]
    if unmatched:
        raise SweepError(f"no such problem: {', '.join(unmatched)}")
    return [p for p in problems if any(fnmatch.fnmatchcase(p["id"], x) for x in pats)]


def operand_shapes(p):
    """Shapes of a, b (as stored: [k, m] / [n, k] when transposed) and of the result."""
    m, n, k = p["m"], p["n"], p["k"]
    a = [k, m] if p["transpose_a"] else [m, k]
    b = [n, k] if p["transpose_b"] else [k, n]
    return a, b, [m, n]


def check_kernel_manifest(p, kentry, manifest, ptx_text):
    """(error or None, warnings) for one kernel of problem p: the manifest is valid
    (kopt.validate_manifest: the C++ reader's checks, tensor maps included), holds
    one matmul kernel whose parameters are a, b, result with the problem's dtypes
    and shapes (and a split-K workspace), its dynamic shared memory fits an sm_90
    block and it is an .entry of the PTX."""
    warnings = []
    # The manifest itself (fields, tensor maps, grid and block limits, launches): kopt's
    # C++ reader, through the package, as kopt.load checks it (no GPU needed).
    kopt = ks.import_kopt()
    try:
        kopt.validate_manifest(manifest, name=kentry.get("manifest"))
    except kopt.KoptError as e:
        return str(e), warnings
    kernels = manifest.get("kernels")
    if not isinstance(kernels, list) or len(kernels) != 1:
        n = len(kernels) if isinstance(kernels, list) else 0
        return f"the manifest has {n} kernels, not 1", warnings
    k = kernels[0]
    if not isinstance(k, dict) or not isinstance(k.get("name"), str):
        return "the kernel has no name", warnings
    name = k["name"]
    ops = k.get("ops") if isinstance(k.get("ops"), list) else []
    kinds = "+".join(str(o.get("op")) for o in ops if isinstance(o, dict))
    if k.get("class", "matmul") != "matmul" or kinds != "matmul":
        return f"{name} is a {k.get('class')} kernel computing {kinds}, not a matmul", \
            warnings
    attrs = ops[0].get("attrs") or {}
    for key in ("transpose_a", "transpose_b", "tf32"):
        if bool(attrs.get(key, False)) != bool(p.get(key, False)):
            return f"{name}: {key} is {bool(attrs.get(key, False))}, the problem's " \
                   f"{bool(p.get(key, False))}", warnings
    a, b, c = operand_shapes(p)
    want = [("a", "input", p["dtype"], a), ("b", "input", p["dtype"], b),
            ("result", "output", p["out_dtype"], c)]
    params = k.get("params")
    # A split-K kernel takes a 4th parameter: its f32 workspace.
    if isinstance(params, list) and len(params) == 4:
        ws = params[3]
        if not (isinstance(ws, dict) and ws.get("name") == "workspace"
                and ws.get("role") == "workspace" and ws.get("dtype") == "f32"
                and isinstance(ws.get("shape"), list) and len(ws["shape"]) == 1
                and _pos_int(ws["shape"][0])):
            return f"{name}: parameter 4 must be a 1-D f32 workspace, got {ws!r}", warnings
        params = params[:3]
    if not isinstance(params, list) or len(params) != 3:
        n = len(params) if isinstance(params, list) else 0
        return f"{name} has {n} parameters, not 3 (a, b, result) or 4 (and a workspace)", \
            warnings
    for got, (pname, role, dtype, shape) in zip(params, want):
        have = (got.get("name"), got.get("role"), got.get("dtype"), got.get("shape")) \
            if isinstance(got, dict) else (None,) * 4
        if have != (pname, role, dtype, shape):
            return (f"{name}: parameter {have[0]} is {have[1]} {have[2]} {have[3]}, "
                    f"expected {pname} {role} {dtype} {shape}"), warnings
    smem = k.get("dynamic_shared_bytes", 0)
    if not isinstance(smem, int) or isinstance(smem, bool) or not \
            0 <= smem <= MAX_DYNAMIC_SHARED:
        return f"{name}: dynamic_shared_bytes {smem!r} is not within 0..{MAX_DYNAMIC_SHARED}", \
            warnings
    if name not in set(ENTRY_RE.findall(ptx_text)):
        return f"{name} is not an .entry of {kentry['file']}", warnings
    ms = k.get("schedule")
    if isinstance(ms, dict) and kentry.get("schedule"):
        diff = sorted(key for key in set(ms) & set(kentry["schedule"])
                      if ms[key] != kentry["schedule"][key])
        if diff:
            return ("the manifest's schedule differs from the index's in " +
                    ", ".join(f"{x} ({ms[x]!r} vs {kentry['schedule'][x]!r})" for x in diff)), \
                warnings
    mptx = manifest.get("ptx")
    if isinstance(mptx, str) and os.path.basename(mptx) != os.path.basename(kentry["file"]):
        warnings.append(f"the manifest names {mptx}, the index {kentry['file']} (used)")
    unknown = [t for t in kentry.get("tags", []) if t not in KNOWN_TAGS]
    if unknown:
        warnings.append(f"unknown tags {', '.join(unknown)}")
    return None, warnings


def check_kernel(sweep_dir, p, kentry):
    """Reads the kernel's manifest and PTX and checks them: (error, warnings, the
    manifest's kernel or None)."""
    try:
        with open(os.path.join(sweep_dir, kentry["manifest"])) as f:
            manifest = json.load(f)
        with open(os.path.join(sweep_dir, kentry["file"]), errors="replace") as f:
            ptx = f.read()
    except (OSError, ValueError) as e:
        return f"{type(e).__name__}: {e}", [], None
    err, warnings = check_kernel_manifest(p, kentry, manifest, ptx)
    return err, warnings, (None if err else manifest["kernels"][0])


def kernel_order(p):
    """Indices of p's kernels in the order they run: "default"-tagged first (so that
    a deadline cuts sweep points, not the default), then the index's order."""
    idx = list(range(len(p["kernels"])))
    return sorted(idx, key=lambda i: 0 if "default" in p["kernels"][i]["tags"] else 1)


def problem_seed(seed, pid):
    return (seed + zlib.crc32(pid.encode())) % (1 << 62)


def problem_flops(p):
    return 2 * p["m"] * p["n"] * p["k"]


def problem_tolerance(p):
    """The dtype's tolerance of p's result (kopt_suite.TOLERANCE). A problem with
    "tf32": true gets at least kopt_suite.TF32_TOLERANCE, f16's: its reference is the
    float64 product of the f32 inputs, while a TF32 kernel (and cuBLAS with
    allow_tf32) cuts every operand to a 10-bit mantissa first, f16's precision, so
    it is off by what rounding the inputs to f16 costs (a few 1e-4), not f32's 1e-5."""
    return ks.tolerance(p, p["out_dtype"])


# ======================================================================= the worker

class SweepWorker(run_suite.Worker):
    """run_suite.py's worker (torch settings, the timing routine with L2 flush and
    CUDA events, the check against the reference, the kopt package that loads and
    launches kernels, the CUDA-context probe, events) driven over sweep problems."""

    def __init__(self, plan):
        super().__init__(plan)
        self.sweep_dir = plan["sweep_dir"]

    # ------------------------------------------------------------- per problem
    def cublas_call(self, p, A, B):
        """A zero-argument call of cuBLAS (through PyTorch) computing A @ B, its
        description and the dtype of its result."""
        torch = self.torch
        dt, odt = self.dt[p["dtype"]], self.dt[p["out_dtype"]]
        va = "a.mT" if p["transpose_a"] else "a"
        vb = "b.mT" if p["transpose_b"] else "b"
        shape = (p["m"], p["n"])
        if odt == dt:
            c = torch.empty(shape, dtype=dt, device="cuda")
            desc = f"torch.matmul({va}, {vb}, out=c)"
            if p.get("tf32"):  # setup_problem calls it with allow_tf32 = True
                desc += " with allow_tf32 = True"
            return (lambda: torch.matmul(A, B, out=c)), desc, p["dtype"]
        try:  # bf16/f16 operands with an f32 result: torch.mm(out_dtype=), newer PyTorch
            c = torch.mm(A, B, out_dtype=odt)
            if c.dtype != odt:
                raise TypeError(f"torch.mm returned {c.dtype}")
            return (lambda: torch.mm(A, B, out_dtype=odt)), \
                f"torch.mm({va}, {vb}, out_dtype={odt})", p["out_dtype"]
        except (TypeError, RuntimeError) as e:
            c = torch.empty(shape, dtype=dt, device="cuda")
            return (lambda: torch.matmul(A, B, out=c)), \
                (f"torch.matmul({va}, {vb}, out=c) with a {p['dtype']} result "
                 f"(torch.mm(out_dtype={p['out_dtype']}) failed: {type(e).__name__})"), \
                p["dtype"]

    def setup_problem(self, p, known_cublas):
        """Inputs, reference, cuBLAS (timed unless an earlier worker did); returns
        (state, info for the record)."""
        torch = self.torch
        seed = problem_seed(self.o["seed"], p["id"])
        gen = torch.Generator(device="cuda")
        gen.manual_seed(seed)
        a_shape, b_shape, c_shape = operand_shapes(p)
        a = self.make_input({"shape": a_shape, "dtype": p["dtype"]}, gen)
        b = self.make_input({"shape": b_shape, "dtype": p["dtype"]}, gen)
        A = a.mT if p["transpose_a"] else a   # views, as a Linear layer passes weight.mT
        B = b.mT if p["transpose_b"] else b
        a64, b64 = a.to(torch.float64), b.to(torch.float64)
        ref = torch.matmul(a64.mT if p["transpose_a"] else a64,
                           b64.mT if p["transpose_b"] else b64)
        del a64, b64
        torch.cuda.synchronize()
        dtype_tol = problem_tolerance(p)
        if known_cublas:
            cub = dict(known_cublas)
        else:
            call, impl, out_dtype = self.cublas_call(p, A, B)
            cub = {"impl": impl, "out_dtype": out_dtype}
            try:
                # A TF32 problem's cuBLAS runs as PyTorch with allow_tf32 = True
                # (restored after): checked and timed that way.
                with self.tf32(p.get("tf32")):
                    out = call()
                    torch.cuda.synchronize()
                    chk = self.compare(out, ref, dtype_tol)
                    del out
                    cub.update(rel_err=chk["rel_err"], check_passed=chk["passed"],
                               special_mismatch=chk["special_mismatch"])
                    cub["time"] = self.time_fn(call)
                cub["ms"] = cub["time"]["median_ms"]
            except Exception as e:
                traceback.print_exc()
                cub["error"] = f"{type(e).__name__}: {_first_line(e)}"
                if self.sticky():
                    raise
            del call
        # As run_suite.py: 4 times the library's own error when that is larger (only
        # when cuBLAS produced the same result dtype).
        tol = dtype_tol
        if cub.get("rel_err") is not None and cub.get("out_dtype") == p["out_dtype"] and \
                math.isfinite(cub["rel_err"]):
            tol = max(dtype_tol, 4 * cub["rel_err"])
        c = torch.empty(c_shape, dtype=self.dt[p["out_dtype"]], device="cuda")
        state = {"a": a, "b": b, "a0": a.clone(), "b0": b.clone(), "ref": ref, "c": c,
                 "tol": tol}
        torch.cuda.synchronize()
        return state, {"seed": seed, "cublas": cub, "tolerance": tol,
                       "dtype_tolerance": dtype_tol}

    def release(self, state):
        state.clear()
        self.torch.cuda.empty_cache()

    def inputs_overwritten(self, state):
        """Whether a kernel wrote into its inputs (they are restored if so)."""
        torch = self.torch
        if torch.equal(state["a"], state["a0"]) and torch.equal(state["b"], state["b0"]):
            return False
        state["a"].copy_(state["a0"])
        state["b"].copy_(state["b0"])
        return True

    # ------------------------------------------------------------- per kernel
    def run_kernel(self, p, state, kentry):
        """Loads, checks and times one kernel; returns its record (never raises for
        a CUDA error: the record says `error` and whether the context is sticky)."""
        torch = self.torch
        rec = {}
        stage, mod = "manifest", None
        try:
            mpath = os.path.join(self.sweep_dir, kentry["manifest"])
            with open(mpath) as f:
                m = json.load(f)
            k = m["kernels"][0]
            smem = int(k.get("dynamic_shared_bytes", 0))
            rec.update(kernel=k["name"], grid=k["grid"], block=k["block"],
                       dynamic_shared_bytes=smem)
            stage = "load"
            t0 = time.monotonic()
            # kopt.load: the C++ manifest reader, the PTX it names JIT-compiled, its
            # kernel resolved and its PTX entry's parameter count checked.
            mod = self.kopt.load(mpath, device=torch.cuda.current_device())
            fn = mod[m["functions"][0]["name"]]
            rec["load_s"] = round(time.monotonic() - t0, 3)
            rec.update({key: v for key, v in mod.kernel_resources(k["name"]).items()
                        if key in ("registers", "local_bytes", "static_shared_bytes")})
            c = state["c"]
            c.fill_(float("nan"))
            # a, b, result (the function's arguments); the split-K workspace is the
            # function's workspace, zeroed once and left zero by the kernel. TMA
            # tensor maps (copy = tma, tma_store) are encoded by the runtime at the
            # first launch from these addresses, which stay.
            stage = "prepare"
            launch, workspace = self.kopt_call(fn, [state["a"], state["b"], c])
            stage = "launch"
            launch()
            torch.cuda.synchronize()
            stage = "check"
            chk = self.compare(c, state["ref"], state["tol"])
            rec["check"] = chk
            rec["rel_err"] = chk["rel_err"]
            if self.inputs_overwritten(state):
                rec["inputs_overwritten"] = True
                chk["passed"] = False
            rec["correct"] = chk["passed"]
            if not chk["passed"]:
                rec["status"] = "incorrect"
                return rec
            first = c.clone()
            stage = "timing"
            t = self.time_fn(launch)
            stage = "check after timing"
            same = torch.equal(first, c)
            del first
            rec["after_timing_identical"] = same
            overwritten = self.inputs_overwritten(state)
            if not same or overwritten:
                chk2 = self.compare(c, state["ref"], state["tol"])
                rec["check_after_timing"] = chk2
                if overwritten:
                    rec["inputs_overwritten"] = True
                if overwritten or not chk2["passed"]:
                    rec.update(status="incorrect", correct=False)
                    return rec
            rec["time"] = t
            rec["ms"] = t["median_ms"]
            rec["status"] = "ok"
            del launch, fn, mod, workspace
        except Exception as e:
            traceback.print_exc()
            rec["status"] = "error"
            rec["error"] = f"{stage}: {type(e).__name__}: {_first_line(e)}"
            if self.sticky():
                rec["sticky_cuda_error"] = True
                # Unloading a module fails in a dead context: keep it until the worker
                # exits (exit_now).
                self.__dict__.setdefault("_dead_modules", []).append(mod)
        return rec

    def exit_now(self, code):
        """Ends the worker at once after a sticky CUDA error: tearing down a dead
        context (module unloads, PyTorch's caches) only prints errors or hangs."""
        sys.stdout.flush()
        sys.stderr.flush()
        self.events.flush()
        os._exit(code)

    # ------------------------------------------------------------- the loop
    def main(self):
        plan = self.plan
        if plan.get("first"):
            try:
                env = self.env()
            except Exception as e:  # informational: the run goes on without it
                traceback.print_exc()
                env = {"error": f"{type(e).__name__}: {_first_line(e)}"}
            self.emit({"event": "env", **env})
            log(f"{(env.get('device') or {}).get('name')}; kernels loaded with "
                f"{env.get('loader')}"
                + (f" (not: {'; '.join(env['loader_errors'])})"
                   if env.get("loader_errors") else "")
                + f"; {env.get('sleep_cycles')} GPU sleep cycles before each timed call")
        by_id = {p["id"]: p for p in load_index(plan["sweep_dir"])["problems"]}
        deadline = self.o["deadline"]
        for item in plan["todo"]:
            p = by_id[item["id"]]
            if os.getppid() != plan["driver_pid"]:
                log("the driver is gone: stopping")
                return 5
            if time.time() > deadline:
                self.emit({"event": "deadline"})
                return 0
            self.emit({"event": "setup", "id": p["id"]})
            t0 = time.monotonic()
            try:
                state, info = self.setup_problem(p, item.get("cublas"))
            except Exception as e:
                traceback.print_exc()
                sticky = self.sticky()
                self.emit({"event": "problem_error", "id": p["id"], "sticky": sticky,
                           "error": f"{type(e).__name__}: {_first_line(e)}"})
                if sticky:
                    log(f"{p['id']}: the CUDA context is unusable; a new worker goes on")
                    self.exit_now(3)
                continue
            info["setup_s"] = round(time.monotonic() - t0, 2)
            self.emit({"event": "problem", "id": p["id"], **info})
            cub = info["cublas"]
            log(f"{p['id']}: {p['m']}x{p['n']}x{p['k']} {p['dtype']}->{p['out_dtype']}"
                f"{' tf32' if p.get('tf32') else ''}, "
                f"cuBLAS " + (f"{cub['ms']:.4f} ms" if cub.get("ms") else
                              cub.get("error", "not timed")) +
                f", {len(item['kernels'])} kernels")
            for i in item["kernels"]:
                if time.time() > deadline:
                    self.emit({"event": "deadline"})
                    return 0
                kentry = p["kernels"][i]
                self.emit({"event": "start", "id": p["id"], "kernel": i})
                t0 = time.monotonic()
                try:
                    rec = self.run_kernel(p, state, kentry)
                except Exception as e:  # run_kernel catches CUDA errors; this is a bug
                    traceback.print_exc()
                    rec = {"status": "error", "error": f"{type(e).__name__}: {_first_line(e)}"}
                    if self.sticky():
                        rec["sticky_cuda_error"] = True
                rec["wall_s"] = round(time.monotonic() - t0, 3)
                self.emit({"event": "kernel", "id": p["id"], "kernel": i, "record": rec})
                log(f"  {kentry['file']} [{','.join(kentry['tags'])}] " +
                    kernel_line(rec, cub.get("ms"), problem_flops(p)))
                if rec.get("sticky_cuda_error"):
                    log("the CUDA context is unusable after this kernel; a new worker goes on")
                    self.exit_now(3)
            self.release(state)
            self.emit({"event": "problem_done", "id": p["id"]})
        return 0


def _first_line(e):
    s = str(e)
    return s.splitlines()[0] if s else ""


def why_incorrect(rec):
    """What an incorrect kernel did wrong besides its rel_err ('' if nothing)."""
    out = []
    chk = rec.get("check_after_timing") or rec.get("check") or {}
    if chk.get("special_mismatch"):
        out.append(f"{chk['special_mismatch']} NaN/Inf where the reference is finite "
                   f"(first at flat index {chk.get('first_special_index')})")
    if rec.get("check_after_timing"):
        out.append("the result changed while timing")
    if rec.get("inputs_overwritten"):
        out.append("wrote into its inputs")
    return "; ".join(out)


def kernel_line(rec, cublas_ms, flops):
    s = rec.get("status", "?")
    parts = [s]
    if rec.get("rel_err") is not None:
        parts.append(f"rel_err {rec['rel_err']:.2g}")
    if s == "incorrect" and why_incorrect(rec):
        parts.append(why_incorrect(rec))
    if rec.get("ms"):
        parts.append(f"{rec['ms']:.4f} ms, {flops / (rec['ms'] * 1e-3) / 1e12:.1f} TFLOP/s")
        if cublas_ms:
            parts.append(f"{cublas_ms / rec['ms']:.3f}x cuBLAS")
    if rec.get("registers") is not None:
        parts.append(f"{rec['registers']} regs")
    if rec.get("error"):
        parts.append(rec["error"])
    return ", ".join(parts) + f" ({rec.get('wall_s', 0)} s)"


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
    options = {"runs": args.runs, "warmup": args.warmup, "min_runs": args.min_runs,
               "time_budget_s": args.time_budget, "seed": args.seed,
               "reduced_precision_reduction": False, "deadline": deadline}
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
        proc = subprocess.Popen((worker_cmd or default_worker_cmd)(plan_path),
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                start_new_session=True)
        workers += 1
        tail = collections.deque(maxlen=25)

        def pump():
            for line in proc.stdout:
                sys.stdout.write(line)
                sys.stdout.flush()
                if _LOG["file"]:
                    _LOG["file"].write(line)
                    _LOG["file"].flush()
                tail.append(line.rstrip())
        reader = threading.Thread(target=pump, daemon=True)
        reader.start()
        step, since = ("startup", None, None), time.monotonic()
        fatal, progress, killed, deadline_hit = None, False, None, False
        while True:
            rc = proc.poll()
            events, pos = run_suite.read_events(events_path, pos)
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
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
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


# ======================================================================= the record

def _rate(flops, ms):
    return flops / (ms * 1e-3) / 1e12 if ms else None


def kernel_record(kentry, result, flops, cublas_ms):
    """One kernel's entry of sweep.json: the index's fields, the result and the
    derived figures."""
    rec = {"file": kentry["file"], "manifest": kentry["manifest"],
           "schedule": kentry.get("schedule") or {}, "tags": list(kentry.get("tags", []))}
    extra = {k: v for k, v in kentry.items() if k not in rec}
    if extra:
        rec["compile"] = extra  # e.g. compile_sweep.py's ptxas registers and spills
    r = dict(result or {"status": "skipped", "error": "no result"})
    rec["status"] = r.pop("status", "error")
    rec["correct"] = r.pop("correct", {"ok": True, "incorrect": False}.get(rec["status"]))
    rec["rel_err"] = r.pop("rel_err", None)
    ms = r.pop("ms", None) if rec["status"] == "ok" else None
    r.pop("ms", None)
    rec["ms"] = ms
    rec["tflops"] = _rate(flops, ms)
    rec["ratio_to_cublas"] = cublas_ms / ms if ms and cublas_ms else None
    rec["error"] = r.pop("error", None)
    rec.update(r)
    return rec


def _count_tags(kernels):
    out = {}
    for k in kernels:
        for t in k.get("tags", []):
            c = out.setdefault(t, {"kernels": 0, "ran": 0, "correct": 0, "incorrect": 0,
                                   "failed": 0, "skipped": 0})
            c["kernels"] += 1
            c["ran"] += k["status"] in RAN
            c["correct"] += k["status"] == "ok"
            c["incorrect"] += k["status"] == "incorrect"
            c["failed"] += k["status"] in FAILED
            c["skipped"] += k["status"] == "skipped"
    return out


def _brief(k, i):
    return {"index": i, "file": k["file"], "schedule": k["schedule"], "tags": k["tags"],
            "status": k["status"], "ms": k["ms"], "tflops": k["tflops"],
            "ratio_to_cublas": k["ratio_to_cublas"]}


def problem_summary(pr):
    """Counts, the best kernel and the default-tagged kernel (with its slowdown
    against the best) of one problem's record."""
    ks_ = pr["kernels"]
    st = collections.Counter(k["status"] for k in ks_)
    timed = [(i, k) for i, k in enumerate(ks_) if k["status"] == "ok" and k.get("ms")]
    best = min(timed, key=lambda x: x[1]["ms"]) if timed else None
    default = next(((i, k) for i, k in enumerate(ks_) if "default" in k["tags"]), None)
    s = {"kernels": len(ks_), "correct": st["ok"], "incorrect": st["incorrect"],
         "failed": sum(st[x] for x in FAILED), "skipped": st["skipped"],
         "statuses": dict(sorted(st.items())),
         "best": _brief(best[1], best[0]) if best else None,
         "default": _brief(default[1], default[0]) if default else None,
         "tags": _count_tags(ks_)}
    if best and default and default[1].get("ms"):
        s["default"]["slowdown_vs_best"] = default[1]["ms"] / best[1]["ms"]
        s["default"]["is_best"] = default[0] == best[0] or default[1]["ms"] == best[1]["ms"]
    return s


def is_sweep_problem(pr):
    """A problem of the sweep proper (it has "sweep" or "default" kernels), not a
    random sample's."""
    return any(t in ("sweep", "default") for k in pr["kernels"] for t in k["tags"])


def sweep_summary(problem_records):
    """Totals over the problems: statuses, per-tag counts (random: how many ran
    correct); over the sweep problems, geomean ratios of the best and the default
    kernels to cuBLAS and the default's slowdown against the best."""
    allk = [k for pr in problem_records for k in pr["kernels"]]
    st = collections.Counter(k["status"] for k in allk)
    swept = [pr["summary"] for pr in problem_records if is_sweep_problem(pr)]
    best = [s["best"]["ratio_to_cublas"] for s in swept
            if s["best"] and s["best"]["ratio_to_cublas"]]
    dflt = [s["default"]["ratio_to_cublas"] for s in swept
            if s["default"] and s["default"]["ratio_to_cublas"]]
    slow = [s["default"]["slowdown_vs_best"] for s in swept
            if (s["default"] or {}).get("slowdown_vs_best")]
    return {"problems": len(problem_records), "sweep_problems": len(swept),
            "problems_with_error": sum(1 for pr in problem_records if pr.get("error")),
            "kernels": len(allk), "statuses": dict(sorted(st.items())),
            "correct": st["ok"], "incorrect": st["incorrect"],
            "failed": sum(st[x] for x in FAILED), "skipped": st["skipped"],
            "tags": _count_tags(allk),
            "geomean_best_ratio_to_cublas": {"value": ks.geomean(best), "problems": len(best)},
            "geomean_default_ratio_to_cublas": {"value": ks.geomean(dflt),
                                                "problems": len(dflt)},
            "median_default_slowdown_vs_best": {"value": ks.median(slow),
                                                "problems": len(slow)},
            "default_is_best": sum(1 for s in swept if (s["default"] or {}).get("is_best"))}


def problem_record(p, result):
    """One problem's entry of sweep.json."""
    result = result or {}
    flops = problem_flops(p)
    cub = dict(result.get("cublas") or {})
    cms = cub.get("ms")
    if cms:
        cub["tflops"] = _rate(flops, cms)
    pr = {key: p.get(key) for key in ("id", "m", "n", "k", "dtype", "out_dtype",
                                      "transpose_a", "transpose_b")}
    pr["tf32"] = bool(p.get("tf32", False))
    for key, v in p.items():
        if key not in pr and key != "kernels":
            pr[key] = v  # e.g. source
    pr.update(flops=flops, seed=result.get("seed"), tolerance=result.get("tolerance"),
              dtype_tolerance=result.get("dtype_tolerance", problem_tolerance(p)),
              setup_s=result.get("setup_s"), cublas=cub or None, error=result.get("error"))
    kres = result.get("kernels") or {}
    pr["kernels"] = [kernel_record(k, kres.get(i), flops, cms)
                     for i, k in enumerate(p["kernels"])]
    pr["summary"] = problem_summary(pr)
    return pr


def build_record(index, problems, results, env, meta):
    """sweep.json: `meta` holds date, wall_s, command, sweep_dir and method."""
    env = env or {}
    prs = [problem_record(p, results.get(p["id"])) for p in problems]
    method = dict(meta.get("method") or {})
    method.update(sleep_cycles=env.get("sleep_cycles"), loader=env.get("loader"),
                  loader_errors=env.get("loader_errors"))
    return {"tool": "bench/run_sweep.py", "format_version": 1,
            "date": meta.get("date"), "wall_s": meta.get("wall_s"),
            "command": meta.get("command"), "sweep_dir": meta.get("sweep_dir"),
            "sweep": {k: index.get(k) for k in ("kopt_sweep_version", "chip", "commit")},
            "device": env.get("device"), "software": env.get("software"),
            "method": method, "summary": sweep_summary(prs), "problems": prs}


def exit_code(record):
    s = record["summary"]
    return 1 if s["incorrect"] or s["failed"] or s["problems_with_error"] else 0


# ======================================================================= sweep.md

def fmt_schedule(s):
    """A schedule on one line: known keys in order, then the rest."""
    if not s:
        return "-"
    keys = [k for k in SCHEDULE_ORDER if k in s] + sorted(k for k in s if k not in SCHEDULE_ORDER)
    short = {"instruction": "", "copy": "", "block_m": "bm", "block_n": "bn", "block_k": "bk",
             "warp_m": "wm", "warp_n": "wn", "num_warps": "warps", "stages": "st",
             "split_k": "splitk", "swizzle": "sw", "vector_width": "vec",
             "persistent": "persistent", "warp_specialize": "ws", "tma_store": "ts"}
    out = []
    for k in keys:
        v = s[k]
        if k in ("persistent", "warp_specialize", "tma_store") and not v:
            continue
        name = short.get(k, k)
        text = v if isinstance(v, (int, float, str)) else json.dumps(v)
        out.append(f"{text}" if name == "" else f"{name}={text}")
    return " ".join(out)


def _ms(x):
    return f"{x:.4g}" if x else "-"


def _ratio(x):
    return f"{x:.3f}" if x else "-"


def markdown(record):
    out = []
    dev = record.get("device") or {}
    sw = record.get("software") or {}
    m = record.get("method") or {}
    s = record["summary"]
    sweep = record.get("sweep") or {}
    out.append(f"# kopt matmul schedule sweep: {dev.get('name', 'unknown device')}")
    out.append("")
    out.append(f"- Date: {record.get('date')}; kernels compiled at "
               f"{(sweep.get('commit') or 'unknown')[:12]} for {sweep.get('chip')}; "
               f"wall {record.get('wall_s')} s")
    out.append(f"- Command: `{record.get('command')}`")
    out.append(f"- Device: {dev.get('name', '?')}, driver {dev.get('driver', '?')}; torch "
               f"{sw.get('torch', '?')} (CUDA {sw.get('cuda_torch', '?')}), cupy "
               f"{sw.get('cupy', '?')}; kernels loaded with {m.get('loader', '?')}")
    out.append(f"- Method: {m.get('warmup')} warm-up runs, then {m.get('runs')} timed runs "
               f"(at least {m.get('min_runs')} when slower than {m.get('time_budget_s')} s / "
               f"{m.get('runs')}), each after zeroing a "
               f"{(m.get('l2_flush_bytes') or 0) >> 20} MiB buffer; CUDA events, median. "
               f"Inputs {m.get('inputs')}. Checked against the float64 product: relative L2 "
               f"error within {m.get('tolerance')} (or 4 x cuBLAS's own), no NaN/Inf. "
               + (f"Problems marked tf32 allow TF32: cuBLAS with allow_tf32 = True, "
                  f"tolerance at least {m.get('tf32_tolerance')}. " if m.get("tf32") else "") +
               "Ratio = cuBLAS time / kernel time (above 1: faster than cuBLAS).")
    out.append(f"- Kernels: {s['kernels']} over {s['problems']} problems: {s['correct']} correct "
               f"and timed, {s['incorrect']} incorrect, {s['failed']} failed, "
               f"{s['skipped']} skipped ({', '.join(f'{k} {v}' for k, v in s['statuses'].items())})")
    g = s["geomean_best_ratio_to_cublas"]
    d = s["geomean_default_ratio_to_cublas"]
    sl = s["median_default_slowdown_vs_best"]
    out.append(f"- Sweep problems ({s['sweep_problems']}): geomean ratio to cuBLAS of the best "
               f"kernel {_ratio(g['value'])} ({g['problems']} problems), of the default "
               f"schedule {_ratio(d['value'])} ({d['problems']} problems); the default is the "
               f"best in {s['default_is_best']} problems; median default / best time "
               f"{_ratio(sl['value'])} ({sl['problems']} problems)")
    out.append("")

    swept = [pr for pr in record["problems"] if is_sweep_problem(pr)]
    others = [pr for pr in record["problems"] if pr not in swept]
    if swept:
        out.append("## Sweep problems")
        out.append("")
        out.append("| # | problem | m x n x k | dtype | cuBLAS ms | cuBLAS TFLOP/s | best ms | "
                   "best TFLOP/s | best / cuBLAS | default ms | default / cuBLAS | "
                   "default / best time | correct | incorrect | failed | skipped |")
        out.append("| ---: | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | "
                   "---: | ---: | ---: | ---: | ---: |")
        for n, pr in enumerate(swept, 1):
            ps = pr["summary"]
            b, dk = ps["best"] or {}, ps["default"] or {}
            cub = pr.get("cublas") or {}
            ttag = f"{pr['dtype']}" + (f"->{pr['out_dtype']}" if pr["out_dtype"] != pr["dtype"]
                                        else "") + (" tf32" if pr.get("tf32") else "")
            lay = ("A^T " if pr["transpose_a"] else "") + ("B^T" if pr["transpose_b"] else "")
            dcell = _ms(dk.get("ms")) if dk.get("ms") else (dk.get("status", "-") if dk else "none")
            out.append(f"| {n} | {pr['id']}{' **' + pr['error'] + '**' if pr.get('error') else ''} "
                       f"| {pr['m']} x {pr['n']} x {pr['k']} {lay.strip()} | {ttag} | "
                       f"{_ms(cub.get('ms')) if cub.get('ms') else cub.get('error', '-')} | "
                       f"{_ms(cub.get('tflops'))} | {_ms(b.get('ms'))} | {_ms(b.get('tflops'))} | "
                       f"{_ratio(b.get('ratio_to_cublas'))} | {dcell} | "
                       f"{_ratio(dk.get('ratio_to_cublas'))} | {_ratio(dk.get('slowdown_vs_best'))} | "
                       f"{ps['correct']} | {ps['incorrect']} | {ps['failed']} | {ps['skipped']} |")
        out.append("")
        out.append("### Best and default schedules")
        out.append("")
        out.append("| # | problem | best schedule | best file | default schedule |")
        out.append("| ---: | --- | --- | --- | --- |")
        for n, pr in enumerate(swept, 1):
            ps = pr["summary"]
            b, dk = ps["best"] or {}, ps["default"] or {}
            same = " (the best)" if dk.get("is_best") else ""
            out.append(f"| {n} | {pr['id']} | {fmt_schedule(b.get('schedule')) if b else '-'} | "
                       f"{b.get('file', '-')} | "
                       f"{fmt_schedule(dk.get('schedule')) + same if dk else '-'} |")
        out.append("")

    out.append("## Kernels by tag")
    out.append("")
    out.append("| tag | kernels | ran | correct | incorrect | failed | skipped |")
    out.append("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for tag, c in sorted(s["tags"].items()):
        out.append(f"| {tag} | {c['kernels']} | {c['ran']} | {c['correct']} | {c['incorrect']} | "
                   f"{c['failed']} | {c['skipped']} |")
    out.append("")
    for tag in ("random", "random_valid"):
        c = s["tags"].get(tag)
        if c:
            out.append(f"- `{tag}` kernels: {c['ran']} of {c['kernels']} ran, {c['correct']} "
                       f"correct, {c['incorrect']} incorrect, {c['failed']} failed, "
                       f"{c['skipped']} skipped.")
    if others:
        out.append(f"- {len(others)} problems hold no sweep or default kernel (random samples); "
                   "sweep.json has their cuBLAS times and every kernel's figures.")
    out.append("")

    bad = [(pr, k) for pr in record["problems"] for k in pr["kernels"]
           if k["status"] == "incorrect" or k["status"] in FAILED]
    perr = [pr for pr in record["problems"] if pr.get("error")]
    if bad or perr:
        out.append("## Failures")
        out.append("")
        for pr in perr:
            out.append(f"- problem {pr['id']}: {pr['error']}")
        shown = bad[:60]
        if shown:
            out.append("")
            out.append("| problem | file | tags | status | rel_err | schedule | error |")
            out.append("| --- | --- | --- | --- | ---: | --- | --- |")
            for pr, k in shown:
                err = (k.get("error") or why_incorrect(k)).replace("|", "/")
                if len(err) > 160:
                    err = err[:157] + "..."
                rel = f"{k['rel_err']:.3g}" if k.get("rel_err") is not None else "-"
                out.append(f"| {pr['id']} | {k['file']} | {','.join(k['tags'])} | {k['status']} "
                           f"| {rel} | {fmt_schedule(k['schedule'])} | {err} |")
        if len(bad) > len(shown):
            out.append(f"\n... and {len(bad) - len(shown)} more (sweep.json)")
        out.append("")
    return "\n".join(out) + "\n"


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


def main(argv=None, worker_cmd=None):
    ap = argparse.ArgumentParser(description="Matmul schedule-sweep runner: every compiled "
                                 "schedule checked and timed beside cuBLAS (GPU host).")
    ap.add_argument("--sweep-dir", help="bench/compile_sweep.py's output (index.json)")
    ap.add_argument("--out", help="output folder (sweep.json, sweep.md, run.log)")
    ap.add_argument("--only", action="append", default=[], metavar="ID",
                    help="problems to run: ids or shell patterns ('random_*'), repeatable "
                         "or comma-separated (default: all)")
    ap.add_argument("--runs", type=int, default=30, help="timed runs per kernel (default 30)")
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--min-runs", type=int, default=10,
                    help="fewest timed runs when --time-budget cuts them (default 10)")
    ap.add_argument("--time-budget", type=float, default=1.0,
                    help="seconds of timed runs per kernel before the run count is cut "
                         "(default 1)")
    ap.add_argument("--seed", type=int, default=20261129)
    ap.add_argument("--deadline", type=float, default=480.0,
                    help="seconds after which nothing new starts (0: none; default 480)")
    ap.add_argument("--timeout", type=float, default=60.0,
                    help="seconds a kernel or a problem's setup may take before the worker "
                         "is killed (default 60)")
    ap.add_argument("--startup-timeout", type=float, default=180.0, help=argparse.SUPPRESS)
    ap.add_argument("--dry-run", action="store_true",
                    help="check the index, manifests and PTX; no GPU, no torch")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        return run_suite.worker_main(args.worker, SweepWorker)
    if not args.sweep_dir:
        ap.error("--sweep-dir is required")
    if args.runs < 1 or args.min_runs < 1 or args.warmup < 0 or args.time_budget <= 0:
        ap.error("--runs and --min-runs must be at least 1, --warmup at least 0, "
                 "--time-budget positive")
    if args.timeout <= 0:
        ap.error("--timeout must be positive")
    args.min_runs = min(args.min_runs, args.runs)
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
                           "l2_flush_bytes": run_suite.L2_FLUSH_BYTES,
                           "host_ahead_us": run_suite.HOST_AHEAD_US,
                           "timer": "CUDA events around each call, median",
                           "seed": args.seed, "inputs": INPUTS,
                           # TF32 (cuBLAS with allow_tf32) only for tf32 problems.
                           "tf32": any(p.get("tf32") for p in problems),
                           "reduced_precision_reduction": False,
                           "tolerance": ks.TOLERANCE, "tf32_tolerance": ks.TF32_TOLERANCE,
                           "deadline_s": args.deadline, "timeout_s": args.timeout}}
        record = build_record(index, problems, results, env, meta)
        path = os.path.join(args.out, "sweep.json")
        with open(path, "w") as f:
            json.dump(record, f, indent=1, default=str)
            f.write("\n")
        written = [path]
        try:
            mpath = os.path.join(args.out, "sweep.md")
            with open(mpath, "w") as f:
                f.write(markdown(record))
            written.append(mpath)
        except Exception:
            traceback.print_exc()
            log("error: sweep.md could not be written")
        for pth in (os.path.join(args.out, "plan.json"), os.path.join(args.out, "events.jsonl")):
            if os.path.exists(pth):
                os.remove(pth)
        s = record["summary"]
        log(f"{s['kernels']} kernels: {s['correct']} correct, {s['incorrect']} incorrect, "
            f"{s['failed']} failed, {s['skipped']} skipped; geomean best/cuBLAS "
            f"{_ratio(s['geomean_best_ratio_to_cublas']['value'])}, default/cuBLAS "
            f"{_ratio(s['geomean_default_ratio_to_cublas']['value'])}")
        log("wrote " + ", ".join(written + [os.path.join(args.out, "run.log")]))
        return exit_code(record)
    finally:
        if _LOG["file"]:
            _LOG["file"].close()
            _LOG["file"] = None


if __name__ == "__main__":
    sys.exit(main())
