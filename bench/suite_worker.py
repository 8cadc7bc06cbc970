"""bench/run_suite.py's worker: per problem of the suite, the inputs, the float64
reference, kopt's function (checked against the reference, then timed) and the peers
(PyTorch eager, torch.compile, cuBLAS) timed with the same routine (gpu_worker.py;
the method: bench/run_suite.py's docstring). Runs in a worker process
(worker_process.py); torch is imported when the worker is made, not here."""
import json
import os
import time
import traceback
import zlib

import kopt_suite as ks
from gpu_worker import GpuWorker
from suite_inputs import compiled, load_inputs, log, manifest_paths, not_compiled


class Worker(GpuWorker):
    """The suite's worker: GpuWorker's measuring over bench/suite.json's problems."""

    def build(self, p, reference=False):
        torch, F = self.torch, self.F
        g = {"torch": torch, "F": F}
        if reference:
            dt = self.dt
            g["_round"] = lambda t, d: t.to(dt[d]).to(torch.float64)
        src = ks.torch_source(p, reference)
        exec(compile(src, f"<{p['name']}{' reference' if reference else ''}>", "exec"), g)
        return g["forward"], src
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
                         "cluster": k.get("cluster", [1, 1, 1]),
                         "dynamic_shared_bytes": k.get("dynamic_shared_bytes", 0),
                         **{key: res[key] for key in ("registers", "local_bytes",
                                                      "static_shared_bytes")}})
        return mod, fn, mfn, info
    def count_kernels(self, fn):
        """The GPU kernels one call of `fn` launches, as torch.profiler's CUDA
        activity records them (kernels only: memcpy and memset are not counted);
        None when the profiler is unavailable."""
        try:
            from torch.profiler import ProfilerActivity, profile
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                fn()
                self.torch.cuda.synchronize()
            names = [e.name for e in prof.events()
                     if getattr(e, "device_type", None) is not None
                     and e.device_type.name == "CUDA"
                     and not e.name.lower().startswith(("memcpy", "memset"))]
            return len(names)
        except Exception:  # the count is a report, never a failure
            return None

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
                eager["kernels"] = self.count_kernels(lambda: fwd_eager(*inputs))
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
            k.update(not_compiled(c))
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
