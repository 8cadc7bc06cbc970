#!/usr/bin/env python3
"""Compiles a matmul schedule sweep and a random sample of the schedule space (no GPU
needed); bench/run_sweep.py times and checks the result on a GPU host.

    bench/compile_sweep.py --out DIR [--kopt-opt PATH] [--kopt-space PATH]
                           [--ptxas PATH] [-j N] [--only ID]... [--no-sweep]
                           [--random N] [--random-valid N] [--seed S]
                           [--split-k LIST] [--persistent] [--epilogue] [--gemv]
                           [--simt-stages] [--tma] [--tf32] [--warp-specialize]
                           [--tma-store]

Sweep (unless --no-sweep): every distinct GEMM shape of bench/suite.json (batch 1)
plus 4096x4096x4096 in bf16 and f16, each compiled with its default schedule (the
heuristic, tag "default") and with the candidate schedules of `candidates()` (tag
"sweep"): for tensor-core dtypes a grid of block/warp tiles, block_k, stages and
rasterization; for f32 a grid of SIMT tiles.

With --split-k LIST (e.g. 1,2,4,8,16) the sweep is a split-K sweep instead: for each
problem, the default schedule and a few tile variants of `split_bases()`, each with
every split_k of LIST (tag "split_k"; the default's own split_k keeps tag "default").

With --persistent the sweep compares persistent grids: the default schedule and a few
wgmma tiles of `persistent_bases()`, each with persistent false and true (tag
"persistent").

With --epilogue the sweep compares epilogues on the tensor-core problems: the default
schedule and a few wgmma tiles of `epilogue_bases()`, each storing from registers
(vector_width 2, or 1 for odd N) and staged through shared memory (vector_width 8 for
16-bit C, 4 for f32 C; tag "epilogue").

With --gemv the sweep compares the gemv schedule (lanes split K, for small M) with the
default on the problems with M <= 64 whose operands are both contiguous along K:
`gemv_candidates()` varies warp_n, the warps per block, block_k and split_k (tag
"gemv").

With --decode the sweep tries, on the decode problems (M <= 64) whose default is wgmma,
one-warpgroup tiles of 64 x 32 and 64 x 64 with block_k 64 / 128, 2 to 5 stages and
split_k 1, 2, 4 (`decode_candidates()`, tag "decode").

With --decode-ws the same with copy = tma and warp_specialize = true
(`decode_ws_candidates()`), block_n 16 / 32 / 64 and split_k 1 / 2 / 4 / 8 (tag "decode").
With --decode-deep narrow tiles with deep rings (`decode_deep_candidates()`: 64 x 8 and
64 x 16, block_k 64 / 128, 4 to 8 stages, split_k 1 / 2 / 4; tag "decode").

With --random-copy C the --random-valid draws keep only points with copy = C (a
workload without any is replaced by another draw).

With --simt-stages the sweep compares one and two shared-memory buffers (stages 1 and
2) of the SIMT (ffma) schedules on the f32 problems: the default and the SIMT tiles of
`candidates()` (tag "simt_stages").

With --tma the sweep compares the copy engines of wgmma on the tensor-core problems:
the default schedule and the wgmma tiles of `tma_bases()`, each with copy = cp_async
and copy = tma (tag "tma"), TMA also with one stage more or less.

With --warp-specialize the sweep compares warp_specialize false / true (a producer warp
issuing the TMA copies) on the wgmma problems: the TMA schedules of `ws_bases()` (the
default with copy = tma, 3 and 5 stages on decode tiles; for M > 64 the 128 x 256 tile
and persistent 128 x 256 / 128 x 128 grids), each both ways (tag "warp_specialize").

With --tma-store the sweep compares the epilogue's stores of C, the staged tile copied
out by the threads or by TMA (tma_store false / true: a tensor map of the output, the
manifest's last): the schedules of `tma_store_bases()` (the default; for f16/bf16
operands the TMA tiles 128 x 256, without and with a producer warp, persistent
warp-specialized 128 x 256 and 128 x 128 grids and, for M <= 64, the 64 x 16 decode
tile with split_k 4), staged epilogues (vector_width 8 for 16-bit C, 4 for f32 C),
each both ways (tag "tma_store"). What kopt rejects (e.g. tma_store on a schedule
that is not wgmma, or on an N whose rows are not a multiple of 16 bytes) is recorded
as rejected.

With --tf32 the sweep is a TF32 sweep: for every f32 problem of the sweep a copy
that allows TF32 (`"tf32": true`, id suffixed `_tf32`, compiled as kopt.matmul
{tf32}), with its default schedule (kopt-space --default --tf32) and the wgmma
schedules with copy = tma of `tf32_candidates()` (tag "tf32").

A problem with `"tf32": true` writes the `tf32` unit attribute on its kopt.matmul
and passes --tf32 to kopt-space.

Random sample (docs/schedules.md): --random N draws N points uniformly from the
product of the parameters' domains (kopt-space --sample), each paired with a
workload drawn from AWKWARD (odd sizes, M = 1, K < 16, transposed operands);
--random-valid N draws N points uniformly from the valid points of such workloads
(kopt-space --valid). Every point goes through kopt-opt: an invalid point must be
rejected by kopt-opt with the reason ("schedule is invalid for ...", exit code 1);
a valid one must compile and assemble (tags "random" / "random_valid").

Every compile is `kopt-opt P.mlir --kopt-to-ptx="output=K.ptx" --kopt-schedule=K.sched.json`
followed by `ptxas -arch=sm_90a -v`. Writes DIR/index.json (what run_sweep.py reads),
DIR/pNNN/kNNN.{ptx,json} and DIR/compile_sweep.json (every point: status, reason,
registers, spills, compile seconds). Statuses: ok, rejected (invalid point, rejected
with a reason), and the failures: unexpected-rejection (kopt-space said valid,
kopt-opt rejected), accepted-invalid (kopt-space said invalid, kopt-opt compiled),
error (kopt-opt failed otherwise), crash, ptxas-rejected.

The candidate schedules named above (`candidates()`, `split_bases()`, ...) are in
bench/sweep_candidates.py.

Exit code: 0 when no point failed, 1 when one did, 2 on usage errors.
"""
import argparse
import concurrent.futures
import json
import os
import random
import re
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import kopt_suite as ks  # noqa: E402
from compile_suite import first_error  # noqa: E402
from sweep_candidates import (both_ways, candidates, decode_candidates,  # noqa: E402
                              decode_deep_candidates, decode_ws_candidates, epilogue_bases,
                              epilogue_widths, gemv_candidates, persistent_bases,
                              split_bases, tf32_candidates, tma_bases, tma_store_bases,
                              ws_bases)

FAILURES = ("unexpected-rejection", "accepted-invalid", "error", "crash",
            "ptxas-rejected")
TIMEOUT_S = 300

# Workloads of the random sample: (m, n, k, dtype, out_dtype, transpose_a,
# transpose_b). Odd and tiny sizes, K below the mma K step, M = 1, both layouts.
AWKWARD = [
    (1, 6144, 4096, "bf16", "bf16", False, True),
    (7, 33, 5, "f16", "f32", False, True),
    (37, 45, 7, "bf16", "bf16", False, False),
    (64, 64, 1, "f16", "f16", False, True),
    (100, 1000, 4096, "bf16", "bf16", False, True),
    (129, 257, 96, "f16", "f16", True, False),
    (513, 300, 1000, "bf16", "f32", False, True),
    (1000, 1000, 1000, "f16", "f16", False, False),
    (2048, 2048, 512, "bf16", "bf16", False, True),
    (4097, 4095, 4093, "bf16", "bf16", False, False),
    (33, 17, 9, "f32", "f32", False, False),
    (300, 200, 100, "f32", "f32", True, True),
]

# Extra sweep shapes beyond the suite's: the issue's 4096^3 (a Linear layer:
# weights stored [N, K]).
EXTRA = [
    ("gemm_4096x4096x4096_bf16", 4096, 4096, 4096, "bf16", "bf16", False, True),
    ("gemm_4096x4096x4096_f16", 4096, 4096, 4096, "f16", "f16", False, True),
]


def log(msg):
    print(msg, flush=True)


def suite_problems():
    """Distinct GEMMs of the suite (batch 1) plus EXTRA, as problem dicts."""
    suite = ks.load_suite()
    seen = {}
    for p in suite["problems"]:
        for n in ks.matmul_nodes(p):
            m, nn, k, batch = n["mnk"]
            if batch != 1:
                continue
            attrs = n.get("attrs", {})
            key = (m, nn, k, p["values"][n["args"][0]]["dtype"],
                   p["values"][n["out"]]["dtype"],
                   bool(attrs.get("transpose_a")), bool(attrs.get("transpose_b")))
            pid = p["name"] if len(p["graph"]) == 1 else f"{p['name']}_mm_{m}x{nn}x{k}"
            seen.setdefault(key, (pid, p["name"]))
    out = []
    for key, (pid, name) in seen.items():
        m, n, k, dt, odt, ta, tb = key
        out.append(problem(pid, m, n, k, dt, odt, ta, tb, source=name))
    for name, m, n, k, dt, odt, ta, tb in EXTRA:
        out.append(problem(name, m, n, k, dt, odt, ta, tb, source="issue #4"))
    return out


def problem(pid, m, n, k, dt, odt, ta, tb, source="", tf32=False):
    """A sweep problem. With tf32 (f32 operands only) the matmul allows TF32: the
    problem says "tf32": true and its id ends in "_tf32"."""
    p = {"id": pid, "m": m, "n": n, "k": k, "dtype": dt, "out_dtype": odt,
         "transpose_a": ta, "transpose_b": tb, "source": source}
    if tf32:
        if dt != "f32":
            raise ValueError(f"{pid}: tf32 needs f32 operands, not {dt}")
        p["id"] = pid + "_tf32"
        p["tf32"] = True
    return p


def tf32_problems():
    """The TF32 sweep's problems: a tf32 copy of every f32 problem of the sweep."""
    return [tf32_problem(p) for p in suite_problems() if p["dtype"] == "f32"]


def tf32_problem(p):
    """The copy of f32 problem p that allows TF32 (id + "_tf32")."""
    return problem(p["id"], p["m"], p["n"], p["k"], p["dtype"], p["out_dtype"],
                   p["transpose_a"], p["transpose_b"], source=p.get("source", ""),
                   tf32=True)


def mlir_text(p):
    a = [p["k"], p["m"]] if p["transpose_a"] else [p["m"], p["k"]]
    b = [p["n"], p["k"]] if p["transpose_b"] else [p["k"], p["n"]]
    ta = f"tensor<{a[0]}x{a[1]}x{p['dtype']}>"
    tb = f"tensor<{b[0]}x{b[1]}x{p['dtype']}>"
    tc = f"tensor<{p['m']}x{p['n']}x{p['out_dtype']}>"
    attrs = [x for x, on in (("transpose_a", p["transpose_a"]),
                             ("transpose_b", p["transpose_b"]),
                             ("tf32", p.get("tf32", False))) if on]
    attr = (" {" + ", ".join(attrs) + "}") if attrs else ""
    return (f"func.func @gemm(%a: {ta}, %b: {tb}) -> {tc} {{\n"
            f"  %c = kopt.matmul %a, %b{attr} : {ta}, {tb} -> {tc}\n"
            f"  return %c : {tc}\n}}\n")


def space_args(p):
    args = [f"--shape={p['m']}x{p['n']}x{p['k']}", f"--dtype={p['dtype']}",
            f"--out-dtype={p['out_dtype']}"]
    if p["transpose_a"]:
        args.append("--transpose-a")
    if p["transpose_b"]:
        args.append("--transpose-b")
    if p.get("tf32"):
        args.append("--tf32")
    return args


def run(cmd, timeout=TIMEOUT_S):
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        return r.returncode, r.stdout, r.stderr
    except subprocess.TimeoutExpired:
        return None, "", f"timed out after {timeout} s"


def compile_point(args, pdir, mlir_path, kname, sched, expect_valid):
    """Compiles one schedule; returns the point's record."""
    base = os.path.join(pdir, kname)
    with open(base + ".sched.json", "w") as f:
        json.dump(sched, f)
    rec = {"kernel": kname, "schedule": sched}
    t0 = time.monotonic()
    rc, _, err = run([args.kopt_opt, mlir_path,
                      f"--kopt-to-ptx=output={base}.ptx",
                      f"--kopt-schedule={base}.sched.json", "-o", os.devnull])
    rec["compile_s"] = round(time.monotonic() - t0, 3)
    if rc is None or (rc not in (0, 1)) or "Stack dump" in err or "LLVM ERROR" in err:
        rec.update(status="crash", reason=first_error(err))
        return rec
    if rc == 1:
        m = re.search(r"schedule is invalid for \S+: (.*)", err)
        if m and expect_valid is not True:
            rec.update(status="rejected", reason=m.group(1).strip())
        elif m:
            rec.update(status="unexpected-rejection", reason=m.group(1).strip())
        else:
            rec.update(status="error", reason=first_error(err))
        return rec
    if expect_valid is False:
        rec["status"] = "accepted-invalid"
        return rec
    rc, out, err = run([args.ptxas, "-arch=sm_90a", "-v", base + ".ptx", "-o",
                        os.devnull])
    if rc != 0:
        rec.update(status="ptxas-rejected", reason=first_error(err))
        return rec
    regs = re.search(r"Used (\d+) registers", err)
    spill = re.search(r"(\d+) bytes spill stores", err)
    rec.update(status="ok", registers=int(regs.group(1)) if regs else None,
               spill_bytes=int(spill.group(1)) if spill else 0)
    with open(base + ".json") as f:
        # The matmul kernel's (kopt-pack-operands may put pack kernels first).
        rec["manifest_schedule"] = next(
            (k.get("schedule") for k in json.load(f)["kernels"]
             if k.get("class") == "matmul"), None)
    return rec


# The sweep modes that are plain flags (--split-k takes a list): flag, help. The
# first of them set in sweep_jobs' order picks the candidates.
MODE_FLAGS = (
    ("--persistent", "a sweep of persistent = false / true"),
    ("--epilogue", "a sweep of register and staged epilogues"),
    ("--gemv", "a sweep of gemv schedules on the small-M problems"),
    ("--simt-stages", "a sweep of ffma stages 1 / 2 on the f32 problems"),
    ("--decode-deep", "64 x 8 / 16 decode tiles with 4 to 8 stages through TMA with a "
                      "producer warp, split_k 1 / 2 / 4 (decode_deep_candidates())"),
    ("--decode-ws", "--decode's tiles through TMA with a producer warp, with 64 x 16 "
                    "tiles and split_k 8 too (decode_ws_candidates())"),
    ("--decode", "a sweep of one-warpgroup wgmma tiles, stages and split_k on the "
                 "decode problems (M <= 64)"),
    ("--tma", "a sweep of copy = cp_async / tma on the wgmma problems"),
    ("--warp-specialize", "a sweep of warp_specialize = false / true on TMA schedules of "
                          "the wgmma problems"),
    ("--tma-store", "a sweep of tma_store = false / true (the epilogue's stores of C "
                    "through a TMA tensor map) on tma_store_bases()"),
    ("--tf32", "a TF32 sweep: the f32 problems with tf32 (ids + _tf32), their default "
               "and tf32_candidates()"),
)


class SetupError(Exception):
    """A tool failed before anything was compiled (exit code 2)."""


def parse_args(argv):
    """The command line; --split-k parsed into args.splits (None without it), the
    tools' paths checked. Raises SetupError."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    build = os.environ.get("KOPT_BUILD_DIR", os.path.join(ROOT, "build"))
    ap.add_argument("--kopt-opt", default=os.path.join(build, "bin", "kopt-opt"))
    ap.add_argument("--kopt-space", default=None)
    ap.add_argument("--ptxas", default=shutil.which("ptxas") or "/usr/local/cuda/bin/ptxas")
    ap.add_argument("-j", "--jobs", type=int, default=2)
    ap.add_argument("--only", action="append", default=[])
    ap.add_argument("--no-sweep", action="store_true")
    ap.add_argument("--random", type=int, default=0)
    ap.add_argument("--random-valid", type=int, default=0)
    ap.add_argument("--seed", type=int, default=4)
    ap.add_argument("--random-copy", default=None, choices=("sync", "cp_async", "tma"),
                    help="--random-valid draws only points with this copy engine "
                         "(workloads without such points are redrawn)")
    ap.add_argument("--split-k", default=None,
                    help="comma-separated split_k values: a split-K sweep")
    for flag, text in MODE_FLAGS:
        ap.add_argument(flag, action="store_true", help=text)
    args = ap.parse_args(argv)
    args.splits = None
    if args.split_k:
        try:
            args.splits = [int(x) for x in args.split_k.split(",")]
        except ValueError:
            raise SetupError(f"--split-k takes integers, got {args.split_k!r}") from None
    if args.kopt_space is None:
        args.kopt_space = os.path.join(os.path.dirname(args.kopt_opt), "kopt-space")
    for tool in (args.kopt_opt, args.kopt_space, args.ptxas):
        if not os.access(tool, os.X_OK):
            raise SetupError(f"{tool} not found or not executable")
    return args


def space(args, p, flags):
    """kopt-space's JSON answer for problem p with `flags`; raises SetupError."""
    rc, out, err = run([args.kopt_space] + space_args(p) + flags)
    if rc != 0:
        raise SetupError(f"kopt-space: {err.strip()}")
    return json.loads(out)


def mode_jobs(args, p, default):
    """The sweep's jobs (problem, schedule, tags, expect_valid) for problem p besides
    its default, by the mode the flags pick."""
    jobs = []
    if args.tf32:
        for sc in tf32_candidates(p):
            jobs.append((p, sc, ["tf32"], None))
        return jobs
    if args.simt_stages:
        if p["dtype"] == "f32":
            base = {k: v for k, v in default.items() if k != "num_warps"}
            for sc in [base] + candidates(p):
                if sc.get("instruction") != "ffma":
                    continue
                for st in (1, 2):
                    jobs.append((p, dict(sc, stages=st), ["simt_stages"], None))
        return jobs
    if args.decode or args.decode_ws or args.decode_deep:
        make = (decode_ws_candidates if args.decode_ws else
                decode_deep_candidates if args.decode_deep else decode_candidates)
        for sc in make(p, default):
            jobs.append((p, sc, ["decode"], None))
        return jobs
    if args.tma:
        seen = set()
        for b in tma_bases(p, default):
            variants = [dict(b, copy="cp_async"), dict(b, copy="tma")]
            variants += [dict(b, copy="tma", stages=st)
                         for st in (b["stages"] - 1, b["stages"] + 1) if st >= 2]
            for v in variants:
                key = json.dumps(v, sort_keys=True)
                if key not in seen:
                    seen.add(key)
                    jobs.append((p, v, ["tma"], None))
        return jobs
    if args.warp_specialize:
        jobs += both_ways(p, ws_bases(p, default), "warp_specialize")
        return jobs
    if args.tma_store:
        jobs += both_ways(p, tma_store_bases(p, default), "tma_store")
        return jobs
    if args.gemv:
        for sc in gemv_candidates(p):
            jobs.append((p, sc, ["gemv"], None))
        return jobs
    if args.epilogue:
        if p["dtype"] != "f32":
            for b in epilogue_bases(p, default):
                for vw in epilogue_widths(p):
                    jobs.append((p, dict(b, vector_width=vw), ["epilogue"], None))
        return jobs
    if args.persistent:
        for b in persistent_bases(p, default):
            for pe in (False, True):
                jobs.append((p, dict(b, persistent=pe), ["persistent"], None))
        return jobs
    if args.splits:
        for b in split_bases(p, default):
            for sk in args.splits:
                jobs.append((p, dict(b, split_k=sk), ["split_k"], None))
        return jobs
    for s in candidates(p):
        jobs.append((p, s, ["sweep"], None))
    return jobs


def sweep_jobs(args):
    """The sweep's problems and jobs (none with --no-sweep): per problem of the suite
    (or its TF32 variants) its default schedule, tag "default", then mode_jobs'."""
    problems, jobs = [], []
    if args.no_sweep:
        return problems, jobs
    for p in (tf32_problems() if args.tf32 else suite_problems()):
        if args.only and p["id"] not in args.only:
            continue
        problems.append(p)
        default = space(args, p, ["--default"])
        jobs.append((p, default, ["default"], True))
        jobs += mode_jobs(args, p, default)
    return problems, jobs


def random_jobs(args):
    """--random N points drawn from the domains and --random-valid N from the valid
    points (kopt-space --sample / --valid), each on an AWKWARD workload of its own:
    (problems, jobs)."""
    problems, jobs = [], []
    rng = random.Random(args.seed)
    for tag, count in (("random", args.random), ("random_valid", args.random_valid)):
        for i in range(count):
            m, n, k, dt, odt, ta, tb = rng.choice(AWKWARD)
            p = problem(f"{tag}_{i:03d}_{m}x{n}x{k}_{dt}", m, n, k, dt, odt, ta, tb,
                        source=f"{tag} sample, seed {args.seed}")
            if tag == "random":
                point = space(args, p, ["--sample=1", f"--seed={rng.randrange(2**63)}"])[0]
                sched, valid = point["schedule"], point["valid"]
            else:
                points = [q for q in space(args, p, ["--valid"])
                          if args.random_copy in (None, q.get("copy"))]
                for _ in range(len(AWKWARD) * 4):
                    if points:
                        break
                    m, n, k, dt, odt, ta, tb = rng.choice(AWKWARD)
                    p = problem(f"{tag}_{i:03d}_{m}x{n}x{k}_{dt}", m, n, k, dt, odt,
                                ta, tb, source=f"{tag} sample, seed {args.seed}")
                    rc, out, err = run([args.kopt_space] + space_args(p) + ["--valid"])
                    points = [q for q in json.loads(out) if rc == 0 and
                              args.random_copy in (None, q.get("copy"))]
                if not points:
                    raise SetupError(f"no workload has valid points with "
                                     f"copy = {args.random_copy}")
                sched, valid = rng.choice(points), True
            problems.append(p)
            jobs.append((p, sched, [tag], valid))
    return problems, jobs


def compile_jobs(args, problems, jobs):
    """Writes each problem's folder and MLIR, compiles every job (-j threads) and
    adds the compiled kernels to their problem's "kernels": (the points' records,
    seconds)."""
    # Problem folders and inputs.
    for i, p in enumerate(problems):
        p["dir"] = f"p{i:03d}"
        os.makedirs(os.path.join(args.out, p["dir"]), exist_ok=True)
        with open(os.path.join(args.out, p["dir"], "gemm.mlir"), "w") as f:
            f.write(mlir_text(p))
        p["kernels"] = []
    counters = {}
    work = []
    for p, sched, tags, valid in jobs:
        n = counters.get(p["id"], 0)
        counters[p["id"]] = n + 1
        work.append((p, f"k{n:03d}", sched, tags, valid))

    log(f"compile_sweep: {len(work)} points over {len(problems)} problems, "
        f"{args.jobs} jobs")
    t0 = time.monotonic()
    records = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futs = []
        for p, kname, sched, tags, valid in work:
            pdir = os.path.join(args.out, p["dir"])
            futs.append((p, kname, tags, valid, pool.submit(
                compile_point, args, pdir, os.path.join(pdir, "gemm.mlir"), kname,
                sched, valid)))
        for p, kname, tags, valid, fut in futs:
            rec = fut.result()
            rec.update(problem=p["id"], tags=tags, expected_valid=valid)
            records.append(rec)
            if rec["status"] == "ok":
                p["kernels"].append({
                    "file": f"{p['dir']}/{kname}.ptx",
                    "manifest": f"{p['dir']}/{kname}.json",
                    "schedule": rec["manifest_schedule"], "tags": tags,
                    "registers": rec.get("registers"),
                    "spill_bytes": rec.get("spill_bytes")})
            if rec["status"] in FAILURES:
                log(f"  FAIL {p['id']} {kname} {rec['status']}: {rec.get('reason')}")
    return records, time.monotonic() - t0


def write_index(args, problems, records, elapsed):
    """DIR/index.json (each schedule listed twice kept once, with both tags) and
    DIR/compile_sweep.json; returns the exit code."""
    # A schedule listed twice (the default among the candidates) is timed once
    # with both tags.
    for p in problems:
        merged = {}
        for k in p["kernels"]:
            key = json.dumps(k["schedule"], sort_keys=True)
            if key in merged:
                merged[key]["tags"] = sorted(set(merged[key]["tags"]) | set(k["tags"]))
            else:
                merged[key] = k
        p["kernels"] = list(merged.values())

    commit = run(["git", "-C", ROOT, "rev-parse", "HEAD"])[1].strip()
    index = {"kopt_sweep_version": 1, "chip": "sm_90a", "commit": commit,
             "problems": [{k: v for k, v in p.items() if k != "dir"}
                          for p in problems if p["kernels"]]}
    with open(os.path.join(args.out, "index.json"), "w") as f:
        json.dump(index, f, indent=1)
    statuses = {}
    for r in records:
        statuses[r["status"]] = statuses.get(r["status"], 0) + 1
    summary = {"commit": commit, "seconds": round(elapsed, 1), "statuses": statuses,
               "seed": args.seed, "points": records}
    with open(os.path.join(args.out, "compile_sweep.json"), "w") as f:
        json.dump(summary, f, indent=1)
    tags = sorted({t for r in records for t in r["tags"]},
                  key=lambda t: (t != "default", t))
    for tag in tags:
        rs = [r for r in records if tag in r["tags"]]
        if rs:
            c = {}
            for r in rs:
                c[r["status"]] = c.get(r["status"], 0) + 1
            log(f"  {tag}: {len(rs)} points: " +
                ", ".join(f"{v} {k}" for k, v in sorted(c.items())))
    log(f"compile_sweep: {elapsed:.0f} s; wrote {args.out}/index.json")
    return 1 if any(r["status"] in FAILURES for r in records) else 0



def main(argv=None):
    try:
        args = parse_args(argv)
        os.makedirs(args.out, exist_ok=True)
        problems, jobs = sweep_jobs(args)
        more_problems, more_jobs = random_jobs(args)
    except SetupError as e:
        print(f"compile_sweep: error: {e}", file=sys.stderr)
        return 2
    problems += more_problems
    records, elapsed = compile_jobs(args, problems, jobs + more_jobs)
    return write_index(args, problems, records, elapsed)


if __name__ == "__main__":
    sys.exit(main())
