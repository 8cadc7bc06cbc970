#!/usr/bin/env python3
"""Time PyTorch eager on the kernels of a kopt launch manifest.

For each kernel of MANIFEST.json (docs/manifest.md) this runs the same kopt op
on the same shapes and dtypes in PyTorch eager mode and times it with the
method kopt-run uses (docs/runtime.md): fresh random inputs drawn like
kopt-run's, warm-up runs, then per timed run a 256 MiB buffer zeroed to flush
the L2 cache, a start event, the op, an end event; median, min, max and mean
over the runs (100 by default).

Eager computes in the input dtype, as user code would: torch.matmul on
transposed views (with out_dtype when the manifest asks for another result
dtype and this PyTorch supports it, else a .to() after it), torch.add & co.
with broadcasting, F.gelu(approximate=...), .to(dtype), sum/amax/mean over
dim -1, torch.softmax(dim=-1), F.rms_norm, F.layer_norm. A final .to() is
added (and timed) when the manifest's result dtype differs from what eager
returns. Each result is also compared with a float64 computation of the op on
the same inputs (rel_err_vs_fp64), for reference.

usage: torch_eager.py MANIFEST.json [-o OUT.json] [--runs N] [--warmup N]
                      [--seed S] [--kernel NAME]... [--device cuda|cpu]

Exit code: 0 when every kernel ran, 1 when some kernel failed (its entry has
an "error"), 2 on usage errors, an unreadable manifest or no GPU.
"""

import argparse
import json
import math
import os
import statistics
import sys
import time
import traceback

L2_FLUSH_BYTES = 256 << 20

try:
    import torch
    import torch.nn.functional as F
except ImportError as e:  # pragma: no cover - depends on the machine
    print(f"torch_eager: error: PyTorch is not installed ({e})", file=sys.stderr)
    sys.exit(2)

DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
BINARY = {
    "add": torch.add,
    "sub": torch.sub,
    "mul": torch.mul,
    "div": torch.div,
    "max": torch.maximum,
    "min": torch.minimum,
}
UNARY = {
    "exp": torch.exp,
    "neg": torch.neg,
    "abs": torch.abs,
    "sqrt": torch.sqrt,
    "rsqrt": torch.rsqrt,
    "tanh": torch.tanh,
    "sigmoid": torch.sigmoid,
    "relu": F.relu,
    "silu": F.silu,
}


def fail(message):
    print(f"torch_eager: error: {message}", file=sys.stderr)
    sys.exit(2)


def distribution(op, param_name):
    """(low, high, random_sign), as kopt-run draws (include/kopt/Runtime/Inputs.h)."""
    if op in ("sqrt", "rsqrt") and param_name == "input":
        return (0.1, 4.0, False)
    if op == "div" and param_name == "rhs":
        return (0.5, 2.0, True)
    return (-1.0, 1.0, False)


def draw(shape, dtype, dist, gen, device):
    low, high, random_sign = dist
    u = torch.rand(shape, generator=gen, device=device, dtype=torch.float32)
    v = low + (high - low) * u
    if random_sign:
        s = torch.rand(shape, generator=gen, device=device, dtype=torch.float32)
        v = torch.where(s < 0.5, -v, v)
    return v.to(dtype)


def matmul_out_dtype_supported(device, in_dtype, out_dtype):
    """Does this PyTorch have torch.mm(..., out_dtype=...) for these dtypes?"""
    try:
        a = torch.ones((16, 16), device=device, dtype=in_dtype)
        return torch.mm(a, a, out_dtype=out_dtype).dtype == out_dtype
    except (TypeError, RuntimeError):
        return False


def build(kernel, inputs, device):
    """Returns (fn, impl, fn64): fn() runs the op in eager, impl describes it,
    fn64() computes the same op in float64 on the same input values."""
    op = kernel["op"]
    attrs = kernel.get("attrs", {}) or {}
    params = {p["name"]: p for p in kernel["params"]}
    out_dtype = DTYPES[params["result"]["dtype"]]
    out_shape = tuple(params["result"]["shape"])
    x64 = {k: v.to(torch.float64) for k, v in inputs.items()}

    def finish(fn, impl):
        """Appends a .to(out_dtype) / reshape when eager's result differs."""
        probe = fn()
        needs_cast = probe.dtype != out_dtype
        needs_view = tuple(probe.shape) != out_shape
        if not needs_cast and not needs_view:
            return fn, impl
        if needs_cast:
            impl += f" + .to({out_dtype})"

        def wrapped():
            y = fn()
            if needs_view:
                y = y.reshape(out_shape)
            return y.to(out_dtype) if needs_cast else y

        return wrapped, impl

    if op == "matmul":
        ta, tb = bool(attrs.get("transpose_a")), bool(attrs.get("transpose_b"))
        a, b = inputs["a"], inputs["b"]
        x = a.t() if ta else a
        y = b.t() if tb else b
        desc = f"torch.matmul(a{'.t()' if ta else ''}, b{'.t()' if tb else ''})"
        if out_dtype != a.dtype and matmul_out_dtype_supported(device, a.dtype, out_dtype):
            fn = lambda: torch.mm(x, y, out_dtype=out_dtype)  # noqa: E731
            impl = f"torch.mm(a{'.t()' if ta else ''}, b{'.t()' if tb else ''}, out_dtype={out_dtype})"
        else:
            fn, impl = finish(lambda: torch.matmul(x, y), desc)
        a64 = x64["a"].t() if ta else x64["a"]
        b64 = x64["b"].t() if tb else x64["b"]
        return fn, impl, lambda: a64 @ b64

    if op in BINARY:
        f = BINARY[op]
        lhs, rhs = inputs["lhs"], inputs["rhs"]
        fn, impl = finish(lambda: f(lhs, rhs), f"torch.{f.__name__}(lhs, rhs)")
        return fn, impl, lambda: f(x64["lhs"], x64["rhs"])

    if op in UNARY or op in ("gelu", "cast"):
        x = inputs["input"]
        if op == "gelu":
            approx = attrs.get("approximate", "none")
            f = lambda t: F.gelu(t, approximate=approx)  # noqa: E731
            desc = f"F.gelu(x, approximate='{approx}')"
        elif op == "cast":
            f = lambda t: t.to(out_dtype)  # noqa: E731
            desc = f"x.to({out_dtype})"
        else:
            f = UNARY[op]
            desc = f"{f.__module__}.{f.__name__}(x)".replace("torch.nn.functional", "F")
        fn, impl = finish(lambda: f(x), desc)
        ref = (lambda: x64["input"]) if op == "cast" else (lambda: f(x64["input"]))
        return fn, impl, ref

    x = inputs["input"]
    if op == "reduce":
        kind = attrs.get("kind", "sum")
        reducers = {
            "sum": lambda t: t.sum(dim=-1),
            "max": lambda t: t.amax(dim=-1),
            "mean": lambda t: t.mean(dim=-1),
        }
        if kind not in reducers:
            raise ValueError(f"unknown reduction '{kind}'")
        f = reducers[kind]
        fn, impl = finish(lambda: f(x), f"x.{'amax' if kind == 'max' else kind}(dim=-1)")
        return fn, impl, lambda: f(x64["input"]).reshape(out_shape)

    if op == "softmax":
        fn, impl = finish(lambda: torch.softmax(x, dim=-1), "torch.softmax(x, dim=-1)")
        return fn, impl, lambda: torch.softmax(x64["input"], dim=-1)

    if op in ("rmsnorm", "layernorm"):
        eps = float(attrs["eps"])
        n = x.shape[-1]
        # F.rms_norm / F.layer_norm want one dtype: cast weight and bias to the
        # input's dtype up front (outside the timed region).
        w = inputs.get("weight")
        b = inputs.get("bias")
        w = w.to(x.dtype) if w is not None else None
        b = b.to(x.dtype) if b is not None else None
        w64, b64 = x64.get("weight"), x64.get("bias")
        if op == "rmsnorm":
            fn, impl = finish(
                lambda: F.rms_norm(x, (n,), w, eps),
                f"F.rms_norm(x, ({n},), {'w' if w is not None else 'None'}, eps={eps})",
            )
            return fn, impl, lambda: F.rms_norm(x64["input"], (n,), w64, eps)
        fn, impl = finish(
            lambda: F.layer_norm(x, (n,), w, b, eps),
            f"F.layer_norm(x, ({n},), {'w' if w is not None else 'None'}, "
            f"{'b' if b is not None else 'None'}, eps={eps})",
        )
        return fn, impl, lambda: F.layer_norm(x64["input"], (n,), w64, b64, eps)

    if op == "pack":
        # What eager would run to build the same layout: F.pad of the (maybe
        # transposed) input, made contiguous.
        x = inputs["input"]
        tr = bool(attrs["transpose"])
        src = (lambda t: t.t()) if tr else (lambda t: t)
        rows, cols = out_shape
        def padded(t):
            s = src(t)
            return F.pad(s, (0, cols - s.shape[1], 0, rows - s.shape[0])).contiguous()
        fn, impl = finish(lambda: padded(x),
                          f"F.pad(x{'.t()' if tr else ''}, (0, {cols} - cols, 0, {rows} - rows))")
        return fn, impl, lambda: padded(x64["input"])

    raise ValueError(f"op '{op}' is not supported by torch_eager.py")


def time_fn(fn, runs, warmup, device, flush):
    for _ in range(warmup):
        fn()
    if device == "cuda":
        torch.cuda.synchronize()
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(runs)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(runs)]
        for i in range(runs):
            flush.zero_()
            starts[i].record()
            fn()
            ends[i].record()
        torch.cuda.synchronize()
        ms = [s.elapsed_time(e) for s, e in zip(starts, ends)]
    else:  # host clock; for trying the script without a GPU
        ms = []
        for _ in range(runs):
            flush.zero_()
            t0 = time.perf_counter()
            fn()
            ms.append((time.perf_counter() - t0) * 1e3)
    return {
        "median_ms": statistics.median(ms),
        "min_ms": min(ms),
        "max_ms": max(ms),
        "mean_ms": statistics.fmean(ms),
        "runs": runs,
        "warmup": warmup,
        "l2_flush_bytes": flush.numel(),
    }


def numel(shape):
    return math.prod(shape) if shape else 1


def run_kernel(kernel, args, gen, flush):
    """Runs, checks and times one kernel's op in eager. A matmul with attrs.tf32
    (kopt.matmul {tf32}) runs with allow_tf32 = True, as PyTorch code allowing TF32
    would (restored after); TF32 is off for everything else."""
    tf32 = kernel["op"] == "matmul" and (kernel.get("attrs") or {}).get("tf32") is True
    matmul = torch.backends.cuda.matmul
    prev = matmul.allow_tf32
    matmul.allow_tf32 = tf32
    try:
        entry = _run_kernel(kernel, args, gen, flush)
    finally:
        matmul.allow_tf32 = prev
    if tf32:
        entry["impl"] += " with allow_tf32 = True"
    return entry


def _run_kernel(kernel, args, gen, flush):
    entry = {
        "name": kernel["name"],
        "op": kernel["op"],
        "class": kernel.get("class"),
        "attrs": kernel.get("attrs", {}),
        "params": [
            {k: p[k] for k in ("name", "role", "dtype", "shape")} for p in kernel["params"]
        ],
        "impl": None,
        "check": None,
        "time": None,
    }
    inputs = {}
    for p in kernel["params"]:
        if p["role"] != "input":
            continue
        if p["dtype"] not in DTYPES:
            raise ValueError(f"parameter '{p['name']}': unknown dtype '{p['dtype']}'")
        dist = distribution(kernel["op"], p["name"])
        inputs[p["name"]] = draw(tuple(p["shape"]), DTYPES[p["dtype"]], dist, gen, args.device)
    fn, impl, fn64 = build(kernel, inputs, args.device)
    entry["impl"] = impl

    result = next(p for p in kernel["params"] if p["name"] == "result")
    out = fn()
    if args.device == "cuda":
        torch.cuda.synchronize()
    if tuple(out.shape) != tuple(result["shape"]) or out.dtype != DTYPES[result["dtype"]]:
        raise RuntimeError(
            f"eager gave {out.dtype} {list(out.shape)}, the manifest says "
            f"{result['dtype']} {result['shape']}"
        )
    ref = fn64().reshape(out.shape)
    diff = (out.to(torch.float64) - ref).norm().item()
    ref_norm = ref.norm().item()
    entry["check"] = {"rel_err_vs_fp64": diff / ref_norm if ref_norm > 0 else diff}
    del ref, out

    entry["time"] = time_fn(fn, args.runs, args.warmup, args.device, flush)
    nbytes = sum(numel(p["shape"]) * DTYPES[p["dtype"]].itemsize for p in kernel["params"])
    entry["bytes"] = nbytes
    median = entry["time"]["median_ms"]
    entry["gbps"] = nbytes / (median * 1e6) if median > 0 else 0.0
    if kernel["op"] == "matmul":
        a = next(p for p in kernel["params"] if p["name"] == "a")
        k = a["shape"][0] if (kernel.get("attrs") or {}).get("transpose_a") else a["shape"][1]
        flops = 2 * result["shape"][0] * result["shape"][1] * k
        entry["flops"] = flops
        entry["gflops"] = flops / (median * 1e6) if median > 0 else 0.0
    return entry


def single_op_view(kernel):
    """The kernel with its one op's kind and attributes as `op` and `attrs` (what this
    tool reads); a kernel of several ops (version 2's `ops`) keeps `op` as the chain
    "matmul+add", which run_kernel reports as unsupported."""
    ops = kernel.get("ops") if isinstance(kernel.get("ops"), list) else []
    view = dict(kernel)
    view["op"] = "+".join(str(o.get("op")) for o in ops)
    view["attrs"] = (ops[0].get("attrs") or {}) if len(ops) == 1 else {}
    return view


def time_manifest(path, args, gen, flush):
    """Times every (selected) kernel of one manifest; returns the JSON report."""
    try:
        with open(path) as f:
            manifest = json.load(f)
    except (OSError, ValueError) as e:
        fail(f"{path}: cannot read the manifest: {e}")
    if not isinstance(manifest, dict) or manifest.get("kopt_manifest_version") != 2:
        fail(f"{path}: not a kopt launch manifest of version 2")
    kernels = [single_op_view(k) for k in manifest.get("kernels", [])]
    if args.kernel:
        names = {k["name"] for k in kernels}
        for n in args.kernel:
            if n not in names:
                fail(f"no kernel named '{n}' in {path}")
        kernels = [k for k in kernels if k["name"] in args.kernel]

    report = {
        "tool": "torch_eager",
        "manifest": path,
        "torch_version": torch.__version__,
        "device": (
            {"name": torch.cuda.get_device_name(), "capability": ".".join(
                map(str, torch.cuda.get_device_capability()))}
            if args.device == "cuda" else {"name": "cpu"}
        ),
        "seed": args.seed_used,
        "runs": args.runs,
        "warmup": args.warmup,
        "kernels": [],
    }
    failed = 0
    for i, kernel in enumerate(kernels):
        try:
            entry = run_kernel(kernel, args, gen, flush)
            t = entry["time"]
            print(
                f"torch_eager: [{i + 1}/{len(kernels)}] {kernel['name']} ({entry['impl']}): "
                f"median {t['median_ms']:.4f} ms, rel_err_vs_fp64 "
                f"{entry['check']['rel_err_vs_fp64']:.3g}",
                file=sys.stderr,
            )
        except Exception as e:  # report and go on with the next kernel
            failed += 1
            entry = {"name": kernel.get("name"), "op": kernel.get("op"),
                     "error": f"{type(e).__name__}: {e}"}
            print(f"torch_eager: error: kernel '{kernel.get('name')}': {entry['error']}",
                  file=sys.stderr)
            traceback.print_exc(file=sys.stderr)
            if args.device == "cuda":
                torch.cuda.empty_cache()
        report["kernels"].append(entry)
    report["exit_code"] = 1 if failed else 0
    return report


def write_report(report, output):
    text = json.dumps(report, indent=2) + "\n"
    if output:
        os.makedirs(os.path.dirname(os.path.abspath(output)), exist_ok=True)
        with open(output, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)


def main():
    parser = argparse.ArgumentParser(
        description="Time PyTorch eager on the kernels of kopt launch manifests."
    )
    parser.add_argument("manifests", nargs="+", metavar="manifest")
    parser.add_argument("-o", "--output",
                        help="JSON report of a single manifest (default: stdout)")
    parser.add_argument("--out-dir",
                        help="with several manifests: write OUT_DIR/<name>.torch.json "
                             "for each (<name>: the manifest's file name without .json)")
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--kernel", action="append", default=[])
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    args = parser.parse_args()
    if args.runs < 1 or args.warmup < 0:
        fail("--runs must be at least 1 and --warmup at least 0")
    if len(args.manifests) > 1 and not args.out_dir:
        fail("several manifests need --out-dir")
    if args.output and args.out_dir:
        fail("use either -o or --out-dir")

    if args.device == "cuda" and not torch.cuda.is_available():
        fail("no CUDA device visible to PyTorch")
    seed = args.seed if args.seed is not None else int(time.time() * 1e6) % 10**12
    args.seed_used = seed
    print(f"torch_eager: seed {seed}", file=sys.stderr)
    gen = torch.Generator(device=args.device)
    gen.manual_seed(seed)
    # Same conditions as kopt-run: full-precision float32 matmuls (no TF32).
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    flush = torch.empty(L2_FLUSH_BYTES, dtype=torch.uint8, device=args.device)

    exit_code = 0
    for path in args.manifests:
        print(f"torch_eager: {path}", file=sys.stderr)
        report = time_manifest(path, args, gen, flush)
        exit_code = max(exit_code, report["exit_code"])
        output = args.output
        if args.out_dir:
            name = os.path.splitext(os.path.basename(path))[0]
            output = os.path.join(args.out_dir, name + ".torch.json")
        write_report(report, output)
    return exit_code


if __name__ == "__main__":
    sys.exit(main())
