"""bench/run_sweep.py's worker: per sweep problem the inputs, the float64 reference
and cuBLAS (checked, then timed), then per kernel its manifest loaded through the
kopt package, one launch checked against the reference, the correct ones timed with
gpu_worker.py's routine (the method: bench/run_sweep.py's docstring). Runs in a
worker process (worker_process.py); torch is imported when the worker is made."""
import json
import math
import os
import sys
import time
import traceback

from gpu_worker import GpuWorker
from sweep_index import (load_index, log, operand_shapes, problem_flops, problem_seed,
                         problem_tolerance)
from sweep_record import first_line, kernel_line

# ======================================================================= the worker

class SweepWorker(GpuWorker):
    """The runners' GPU worker (torch settings, the timing routine with L2 flush and
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
                cub["error"] = f"{type(e).__name__}: {first_line(e)}"
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
            del launch, fn, workspace
            mod = None  # unloaded here; kept when the context is dead (below)
        except Exception as e:
            traceback.print_exc()
            rec["status"] = "error"
            rec["error"] = f"{stage}: {type(e).__name__}: {first_line(e)}"
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
                env = {"error": f"{type(e).__name__}: {first_line(e)}"}
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
                           "error": f"{type(e).__name__}: {first_line(e)}"})
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
                    rec = {"status": "error", "error": f"{type(e).__name__}: {first_line(e)}"}
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
