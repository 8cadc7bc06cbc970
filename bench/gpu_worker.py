"""The measuring side of the GPU runners (bench/run_suite.py, bench/run_sweep.py):
the base class of their worker processes and the timing options they share.

GpuWorker sets PyTorch up (TF32 off, reduced-precision reductions as asked, the L2
flush buffer), loads the kopt Python package and holds the one timing routine every
implementation is measured with (warm-up, an L2 flush and a short GPU sleep before
each run, CUDA events, the median; bench/run_suite.py's docstring), the ceilings
(copy and cuBLAS GEMM rates), random inputs, the check of a result against its
float64 reference, the kopt launch through the package, the CUDA-context probe and
the environment record. torch is imported when a worker is made, never at import
time: the GPU-free tools (--dry-run, the tests) import this module without it.
"""
import contextlib
import json
import platform
import subprocess

import kopt_suite as ks

L2_FLUSH_BYTES = 256 << 20
# Before each timed call the GPU spins this long (torch.cuda._sleep) after the L2
# flush, so that the host, which queues the call meanwhile, stays ahead of the GPU and
# the events time GPU execution, not Python launch overhead.
HOST_AHEAD_US = 200


def add_timing_options(ap, runs, time_budget, deadline, unit, starts):
    """The timing routine's command-line options (--runs, --warmup, --min-runs,
    --time-budget, --seed, --deadline) with this runner's defaults; `unit` is what
    one timing measures ("kernel"), `starts` what --deadline stops ("no new problem")."""
    ap.add_argument("--runs", type=int, default=runs,
                    help=f"timed runs per {unit} (default {runs})")
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--min-runs", type=int, default=10,
                    help="fewest timed runs when --time-budget cuts them (default 10)")
    ap.add_argument("--time-budget", type=float, default=time_budget,
                    help=f"seconds of timed runs per {unit} before the run count is cut "
                         f"(default {time_budget:g})")
    ap.add_argument("--seed", type=int, default=20261129)
    ap.add_argument("--deadline", type=float, default=deadline,
                    help=f"seconds after which {starts} starts (0: none; default {deadline:g})")


def check_timing_options(ap, args):
    """Rejects impossible timing options (ap.error) and caps --min-runs at --runs."""
    if args.runs < 1 or args.min_runs < 1 or args.warmup < 0 or args.time_budget <= 0:
        ap.error("--runs and --min-runs must be at least 1, --warmup at least 0, "
                 "--time-budget positive")
    args.min_runs = min(args.min_runs, args.runs)


def timing_options(args):
    """The timing routine's part of a worker's plan["options"]."""
    return {"runs": args.runs, "warmup": args.warmup, "min_runs": args.min_runs,
            "time_budget_s": args.time_budget, "seed": args.seed}


class GpuWorker:
    """A worker process's GPU side; subclasses (suite_worker.Worker,
    sweep_worker.SweepWorker) add the problems they run and main()."""

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

    # ------------------------------------------------------------- inputs and checks
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
