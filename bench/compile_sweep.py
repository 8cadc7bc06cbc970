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


def tf32_candidates(p):
    """The TF32 sweep's schedules for problem p (f32 operands, TF32 allowed): wgmma
    with TMA copies, block_k 32 and 64 (128 and 256 bytes of f32), four warpgroup
    tiles, 3 or 4 stages (also 5 for the 64-row tiles). Validity is kopt's to
    decide: kopt-opt rejects what does not fit (shared memory, layouts)."""
    sw = 8 if p["m"] >= 512 else 1
    vw = 4 if p["n"] % 4 == 0 else (2 if p["n"] % 2 == 0 else 1)
    out = []
    for bm, bn, wm, wn in ((128, 256, 64, 256), (128, 128, 64, 128), (64, 128, 64, 128),
                           (64, 64, 64, 64)):
        for bk in (32, 64):
            for st in ((3, 4) if bm > 64 else (3, 4, 5)):
                out.append({"instruction": "wgmma", "copy": "tma", "stages": st,
                            "block_m": bm, "block_n": bn, "warp_m": wm, "warp_n": wn,
                            "block_k": bk, "swizzle": sw, "vector_width": vw,
                            "split_k": 1, "persistent": False})
    return out


def candidates(p):
    """The sweep's schedules for problem p (validity is kopt's to decide)."""
    out = []
    if p["dtype"] == "f32":
        for bm, bn, wm, wn in ((64, 64, 32, 16), (128, 64, 32, 32), (64, 128, 32, 32),
                               (128, 128, 64, 32), (32, 64, 16, 16), (64, 32, 16, 16),
                               (128, 128, 32, 32), (256, 128, 64, 64)):
            for bk in (8, 16, 32):
                threads = 32 * (bm // wm) * (bn // wn)
                chunked = (bm // (threads // 16)) % 4 == 0 and (bn // 16) % 4 == 0
                out.append({"instruction": "ffma", "copy": "sync", "stages": 1,
                            "block_m": bm, "block_n": bn, "warp_m": wm, "warp_n": wn,
                            "block_k": bk, "swizzle": 8 if p["m"] >= 512 else 1,
                            "vector_width": 4 if chunked and p["n"] % 4 == 0 else 1})
        return out
    if p["m"] <= 64:
        tiles = ((16, 64, 16, 16), (16, 128, 16, 32), (32, 64, 32, 16),
                 (32, 128, 32, 32), (64, 32, 64, 8), (64, 64, 64, 16),
                 (64, 128, 64, 32), (16, 256, 16, 64))
        ks_, stages = (32, 64), (3, 4, 5)
    else:
        tiles = ((128, 128, 64, 32), (128, 128, 64, 64), (128, 256, 64, 64),
                 (256, 128, 64, 64), (128, 64, 64, 32), (64, 128, 32, 64),
                 (64, 64, 32, 32), (256, 64, 64, 32))
        ks_, stages = (32, 64), (3, 4)
    async_ok = (not p["transpose_a"]) and p["transpose_b"] and p["k"] % 8 == 0
    if async_ok:
        # wgmma: warpgroup tiles of 64 or 128 rows, N up to 256, K step 64.
        big_tiles = -(-p["m"] // 128) * -(-p["n"] // 256)
        if p["m"] <= 64:
            wg_tiles = ((64, 32, 64, 32), (64, 64, 64, 64), (64, 128, 64, 128),
                        (64, 256, 64, 256))
            wg_stages = (4, 5)
        elif big_tiles < 100:
            # Small grids: the decode tiles as well.
            wg_tiles = ((64, 32, 64, 32), (64, 64, 64, 64), (64, 128, 64, 128),
                        (128, 128, 64, 128), (128, 256, 64, 256), (64, 256, 64, 256))
            wg_stages = (3, 4, 5)
        else:
            wg_tiles = ((128, 256, 64, 256), (128, 128, 64, 128), (64, 256, 64, 256),
                        (128, 256, 128, 128), (256, 128, 128, 128), (64, 128, 64, 128),
                        (128, 128, 128, 64))
            wg_stages = (3, 4, 5)
        for bm, bn, wm, wn in wg_tiles:
            for bk in (64, 128):
                for st in wg_stages + ((2,) if bk == 128 else ()):
                    # Skip what cannot fit the 227 KB of shared memory.
                    if st * (bm + bn) * bk * 2 > 227 * 1024:
                        continue
                    out.append({"instruction": "wgmma", "copy": "cp_async", "stages": st,
                                "block_m": bm, "block_n": bn, "warp_m": wm,
                                "warp_n": wn, "block_k": bk,
                                "swizzle": 8 if p["m"] >= 512 else 1,
                                "vector_width": 2 if p["n"] % 2 == 0 else 1})
    for bm, bn, wm, wn in tiles:
        for bk in ks_:
            for st in (stages if async_ok else (1,)):
                out.append({"instruction": "mma_sync",
                            "copy": "cp_async" if async_ok else "sync",
                            "stages": st, "block_m": bm, "block_n": bn,
                            "warp_m": wm, "warp_n": wn, "block_k": bk,
                            "swizzle": 8 if p["m"] >= 512 else 1,
                            "vector_width": 2 if p["n"] % 2 == 0 else 1})
    return out


def split_bases(p, default):
    """Schedules whose split_k the split-K sweep varies: the default and a few tiles
    around it (small grids are where splitting K pays)."""
    vw = 2 if p["n"] % 2 == 0 else 1
    if p["dtype"] == "f32":
        shapes = [(64, 32, 16, 16, 16), (64, 64, 32, 16, 16), (32, 64, 16, 16, 16),
                  (128, 128, 64, 32, 8)]
        if p["m"] <= 64:  # decode: smaller and wider tiles, longer K steps
            shapes += [(16, 64, 16, 16, 16), (16, 64, 16, 16, 32), (16, 64, 16, 16, 64),
                       (32, 64, 16, 16, 32), (32, 64, 16, 16, 64), (32, 128, 16, 32, 16),
                       (32, 128, 16, 32, 32), (16, 128, 16, 32, 32)]
        tiles = [dict(block_m=bm, block_n=bn, warp_m=wm, warp_n=wn, block_k=bk)
                 for bm, bn, wm, wn, bk in shapes]
        base = {"instruction": "ffma", "copy": "sync", "stages": 1, "swizzle": 1}
        out = [dict(base, **t, vector_width=4 if t["block_m"] == 128 and p["n"] % 4 == 0
                    else 1) for t in tiles]
    else:
        tiles = ((64, 32, 64, 32, 128, 5), (64, 64, 64, 64, 128, 5),
                 (64, 128, 64, 128, 64, 5), (128, 128, 64, 128, 64, 4))
        out = [{"instruction": "wgmma", "copy": "cp_async", "stages": st, "block_m": bm,
                "block_n": bn, "warp_m": wm, "warp_n": wn, "block_k": bk,
                "swizzle": 1, "vector_width": vw} for bm, bn, wm, wn, bk, st in tiles]
    base = {k: v for k, v in default.items() if k != "num_warps"}
    return [base] + out


def persistent_bases(p, default):
    """Schedules whose `persistent` the persistent sweep varies (wgmma problems)."""
    vw = 2 if p["n"] % 2 == 0 else 1
    sw = 8 if p["m"] >= 512 else 1
    base = {k: v for k, v in default.items() if k != "num_warps"}
    out = [base]
    for bm, bn, wm, wn, bk, st in ((128, 256, 64, 256, 64, 4), (128, 256, 64, 256, 64, 3),
                                   (128, 128, 64, 128, 64, 4), (128, 128, 64, 128, 128, 3),
                                   (256, 128, 128, 128, 64, 4)):
        out.append({"instruction": "wgmma", "copy": "cp_async", "stages": st,
                    "block_m": bm, "block_n": bn, "warp_m": wm, "warp_n": wn,
                    "block_k": bk, "swizzle": sw, "vector_width": vw, "split_k": 1})
    return out


def epilogue_bases(p, default):
    """Schedules whose epilogue the epilogue sweep varies (tensor-core problems):
    the default, and for grids of many 128 x 256 tiles the 128 x 128 tile and
    persistent 128 x 256 grids with 3 stages (the staged tile follows the stages)."""
    base = {k: v for k, v in default.items() if k != "num_warps"}
    out = [base]
    if base.get("instruction") == "wgmma" and p["m"] > 64:
        out += wgmma_tiles(p, ((128, 128, 64, 128, 64, 4, False),
                               (128, 256, 64, 256, 64, 3, False),
                               (128, 256, 64, 256, 64, 3, True),
                               (128, 128, 64, 128, 64, 4, True)))
    return out


def wgmma_tiles(p, tiles, **fields):
    """cp.async wgmma schedules of `tiles` (block_m, block_n, warp_m, warp_n, block_k,
    stages, persistent), swizzle 8 for M >= 512, no split; `fields` added to each."""
    sw = 8 if p["m"] >= 512 else 1
    return [dict({"instruction": "wgmma", "copy": "cp_async", "stages": st,
                  "block_m": bm, "block_n": bn, "warp_m": wm, "warp_n": wn,
                  "block_k": bk, "swizzle": sw, "split_k": 1, "persistent": pe},
                 **fields)
            for bm, bn, wm, wn, bk, st, pe in tiles]


def epilogue_widths(p):
    """Register epilogue width and staged width for problem p's C."""
    narrow = 2 if p["n"] % 2 == 0 else 1
    wide = 4 if p["out_dtype"] == "f32" else 8
    return [narrow] + ([wide] if p["n"] % wide == 0 else [])


def tma_bases(p, default):
    """wgmma schedules whose copy engine the TMA sweep varies: the default and, for
    problems with M > 64, the 128 x 256 and 128 x 128 tiles (plain and persistent)."""
    base = {k: v for k, v in default.items() if k != "num_warps"}
    if base.get("instruction") != "wgmma":
        return []
    out = [base]
    if p["m"] > 64:
        vw = 8 if p["out_dtype"] != "f32" and p["n"] % 8 == 0 else (
            2 if p["n"] % 2 == 0 else 1)
        out += wgmma_tiles(p, ((128, 256, 64, 256, 64, 4, False),
                               (128, 128, 64, 128, 64, 4, False),
                               (128, 256, 64, 256, 64, 3, True),
                               (128, 128, 64, 128, 64, 4, True)), vector_width=vw)
    return out


def ws_bases(p, default):
    """TMA schedules whose warp_specialize the warp-specialization sweep varies: the
    default (copy = tma), on decode tiles (M <= 64) also with 3 and 5 stages; for
    M > 64 the 128 x 256 tile and persistent 128 x 256 (3 stages) and 128 x 128 grids."""
    base = {k: v for k, v in default.items() if k != "num_warps"}
    if base.get("instruction") != "wgmma":
        return []
    base = dict(base, copy="tma")
    out = [base]
    if p["m"] <= 64:
        out += [dict(base, stages=st) for st in (3, 5) if st != base["stages"]]
    else:
        vw = 8 if p["out_dtype"] != "f32" and p["n"] % 8 == 0 else (
            2 if p["n"] % 2 == 0 else 1)
        out += wgmma_tiles(p, ((128, 256, 64, 256, 64, 4, False),
                               (128, 256, 64, 256, 64, 3, True),
                               (128, 128, 64, 128, 64, 4, True)), vector_width=vw,
                           copy="tma")
    return out


def both_ways(p, bases, key):
    """Jobs of problem `p`: each of `bases` with the boolean parameter `key` false
    and true (tagged `key`), schedules that come out equal only once."""
    jobs, seen = [], set()
    for b in bases:
        for on in (False, True):
            v = dict(b, **{key: on})
            text = json.dumps(v, sort_keys=True)
            if text not in seen:
                seen.add(text)
                jobs.append((p, v, [key], None))
    return jobs


def tma_store_bases(p, default):
    """Schedules whose tma_store the TMA-store sweep varies: the default and, for
    f16/bf16 operands, wgmma tiles with TMA copies and a staged epilogue
    (vector_width 8 for 16-bit C, 4 for f32 C; tma_store needs one): 128 x 256
    without and with a producer warp, persistent warp-specialized 128 x 256 (3
    stages) and 128 x 128 grids and, for M <= 64, the 64 x 16 decode tile (block_k
    128, split_k 4, a producer warp). Validity is kopt's to decide."""
    base = {k: v for k, v in default.items() if k != "num_warps"}
    out = [base]
    if p["dtype"] not in ("f16", "bf16"):
        return out
    vw = 4 if p["out_dtype"] == "f32" else 8
    out += wgmma_tiles(p, ((128, 256, 64, 256, 64, 4, False),), copy="tma",
                       vector_width=vw, warp_specialize=False)
    out += wgmma_tiles(p, ((128, 256, 64, 256, 64, 4, False),
                           (128, 256, 64, 256, 64, 3, True),
                           (128, 128, 64, 128, 64, 4, True)), copy="tma",
                       vector_width=vw, warp_specialize=True)
    if p["m"] <= 64:
        out += wgmma_tiles(p, ((64, 16, 64, 16, 128, 4, False),), copy="tma",
                           vector_width=vw, split_k=4, warp_specialize=True)
    return out


def decode_candidates(p, default, widths=(32, 64), splits=(1, 2, 4), stages=(2, 3, 4, 5),
                      **fields):
    """wgmma tiles for the decode problems (M <= 64): one warpgroup of 64 x `widths`
    (32 or 64), block_k 64 or 128, 2 to 5 stages (fewer stages: more blocks per SM),
    `splits` (split_k 1, 2 and 4: more blocks), the default's epilogue width, cp.async
    unless `fields` (added to each) say otherwise."""
    if default.get("instruction") != "wgmma" or p["m"] > 64:
        return []
    vw = default.get("vector_width", 2)
    return [dict({"instruction": "wgmma", "copy": "cp_async", "block_m": 64,
                  "block_n": bn, "warp_m": 64, "warp_n": bn, "block_k": bk,
                  "stages": st, "split_k": sk, "swizzle": 1, "vector_width": vw,
                  "persistent": False}, **fields)
            for bn in widths for bk in (64, 128) for st in stages for sk in splits]


def decode_ws_candidates(p, default):
    """decode_candidates() through TMA with a producer warp (copy = tma,
    warp_specialize = true), also with 64 x 16 tiles and split_k 8."""
    return decode_candidates(p, default, widths=(16, 32, 64), splits=(1, 2, 4, 8),
                             copy="tma", warp_specialize=True)


def decode_deep_candidates(p, default):
    """Narrow decode tiles with deep rings through TMA with a producer warp: 64 x 8
    and 64 x 16 tiles, block_k 64 or 128, 4 to 8 stages, split_k 1, 2 or 4 (cuBLAS
    runs the Qwen3 expert shapes with 64 x 8 tiles and no split:
    bench/results/2026-11-30-decode-deep-h200)."""
    return decode_candidates(p, default, widths=(8, 16), splits=(1, 2, 4),
                             stages=(4, 5, 6, 7, 8), copy="tma", warp_specialize=True)


def gemv_candidates(p):
    """gemv schedules for a small-M problem with both operands contiguous along K."""
    if p["m"] > 64 or p["transpose_a"] or not p["transpose_b"]:
        return []
    f32 = p["dtype"] == "f32"
    out = []
    for bm in ((16,) if p["m"] <= 16 else (16, 32)):
        rows = min(bm, p["m"])
        for wn in (1, 2, 4, 8):
            if rows * wn > 64 or (rows > 16 and wn > 2) or (rows <= 8 and wn < 2):
                continue
            for warps in (4, 8, 16):
                if not 16 <= wn * warps <= 64:
                    continue
                for bk in ((8, 16) if f32 else (8, 16, 32)):
                    for sk in (1, 2):
                        out.append({"instruction": "gemv", "copy": "sync", "stages": 1,
                                    "block_m": bm, "warp_m": bm, "block_n": wn * warps,
                                    "warp_n": wn, "block_k": bk, "split_k": sk,
                                    "swizzle": 1, "vector_width": 1,
                                    "persistent": False})
    return out


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


def main(argv=None):
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
    ap.add_argument("--persistent", action="store_true",
                    help="a sweep of persistent = false / true")
    ap.add_argument("--epilogue", action="store_true",
                    help="a sweep of register and staged epilogues")
    ap.add_argument("--gemv", action="store_true",
                    help="a sweep of gemv schedules on the small-M problems")
    ap.add_argument("--simt-stages", action="store_true",
                    help="a sweep of ffma stages 1 / 2 on the f32 problems")
    ap.add_argument("--decode-deep", action="store_true",
                    help="64 x 8 / 16 decode tiles with 4 to 8 stages through TMA with a "
                         "producer warp, split_k 1 / 2 / 4 (decode_deep_candidates())")
    ap.add_argument("--decode-ws", action="store_true",
                    help="--decode's tiles through TMA with a producer warp, with 64 x 16 "
                         "tiles and split_k 8 too (decode_ws_candidates())")
    ap.add_argument("--decode", action="store_true",
                    help="a sweep of one-warpgroup wgmma tiles, stages and split_k "
                         "on the decode problems (M <= 64)")
    ap.add_argument("--tma", action="store_true",
                    help="a sweep of copy = cp_async / tma on the wgmma problems")
    ap.add_argument("--warp-specialize", action="store_true",
                    help="a sweep of warp_specialize = false / true on TMA schedules of "
                         "the wgmma problems")
    ap.add_argument("--tma-store", action="store_true",
                    help="a sweep of tma_store = false / true (the epilogue's stores of "
                         "C through a TMA tensor map) on tma_store_bases()")
    ap.add_argument("--tf32", action="store_true",
                    help="a TF32 sweep: the f32 problems with tf32 (ids + _tf32), their "
                         "default and tf32_candidates()")
    args = ap.parse_args(argv)
    splits = None
    if args.split_k:
        try:
            splits = [int(x) for x in args.split_k.split(",")]
        except ValueError:
            print(f"compile_sweep: error: --split-k takes integers, got {args.split_k!r}",
                  file=sys.stderr)
            return 2
    if args.kopt_space is None:
        args.kopt_space = os.path.join(os.path.dirname(args.kopt_opt), "kopt-space")
    for tool in (args.kopt_opt, args.kopt_space, args.ptxas):
        if not os.access(tool, os.X_OK):
            print(f"compile_sweep: error: {tool} not found or not executable",
                  file=sys.stderr)
            return 2
    os.makedirs(args.out, exist_ok=True)

    # (problem, kernel name, schedule, tags, expect_valid)
    jobs = []
    problems = []
    if not args.no_sweep:
        for p in (tf32_problems() if args.tf32 else suite_problems()):
            if args.only and p["id"] not in args.only:
                continue
            problems.append(p)
            rc, out, err = run([args.kopt_space] + space_args(p) + ["--default"])
            if rc != 0:
                print(f"compile_sweep: error: kopt-space: {err.strip()}", file=sys.stderr)
                return 2
            default = json.loads(out)
            jobs.append((p, default, ["default"], True))
            if args.tf32:
                for sc in tf32_candidates(p):
                    jobs.append((p, sc, ["tf32"], None))
                continue
            if args.simt_stages:
                if p["dtype"] == "f32":
                    base = {k: v for k, v in default.items() if k != "num_warps"}
                    for sc in [base] + candidates(p):
                        if sc.get("instruction") != "ffma":
                            continue
                        for st in (1, 2):
                            jobs.append((p, dict(sc, stages=st), ["simt_stages"], None))
                continue
            if args.decode or args.decode_ws or args.decode_deep:
                make = (decode_ws_candidates if args.decode_ws else
                        decode_deep_candidates if args.decode_deep else decode_candidates)
                for sc in make(p, default):
                    jobs.append((p, sc, ["decode"], None))
                continue
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
                continue
            if args.warp_specialize:
                jobs += both_ways(p, ws_bases(p, default), "warp_specialize")
                continue
            if args.tma_store:
                jobs += both_ways(p, tma_store_bases(p, default), "tma_store")
                continue
            if args.gemv:
                for sc in gemv_candidates(p):
                    jobs.append((p, sc, ["gemv"], None))
                continue
            if args.epilogue:
                if p["dtype"] != "f32":
                    for b in epilogue_bases(p, default):
                        for vw in epilogue_widths(p):
                            jobs.append((p, dict(b, vector_width=vw), ["epilogue"], None))
                continue
            if args.persistent:
                for b in persistent_bases(p, default):
                    for pe in (False, True):
                        jobs.append((p, dict(b, persistent=pe), ["persistent"], None))
                continue
            if splits:
                for b in split_bases(p, default):
                    for sk in splits:
                        jobs.append((p, dict(b, split_k=sk), ["split_k"], None))
                continue
            for s in candidates(p):
                jobs.append((p, s, ["sweep"], None))
    rng = random.Random(args.seed)
    for tag, count in (("random", args.random), ("random_valid", args.random_valid)):
        for i in range(count):
            m, n, k, dt, odt, ta, tb = rng.choice(AWKWARD)
            p = problem(f"{tag}_{i:03d}_{m}x{n}x{k}_{dt}", m, n, k, dt, odt, ta, tb,
                        source=f"{tag} sample, seed {args.seed}")
            if tag == "random":
                rc, out, err = run([args.kopt_space] + space_args(p) +
                                   ["--sample=1", f"--seed={rng.randrange(2**63)}"])
                if rc != 0:
                    print(f"compile_sweep: error: kopt-space: {err.strip()}",
                          file=sys.stderr)
                    return 2
                point = json.loads(out)[0]
                sched, valid = point["schedule"], point["valid"]
            else:
                rc, out, err = run([args.kopt_space] + space_args(p) + ["--valid"])
                if rc != 0:
                    print(f"compile_sweep: error: kopt-space: {err.strip()}",
                          file=sys.stderr)
                    return 2
                points = [q for q in json.loads(out)
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
                    print(f"compile_sweep: error: no workload has valid points with "
                          f"copy = {args.random_copy}", file=sys.stderr)
                    return 2
                sched, valid = rng.choice(points), True
            problems.append(p)
            jobs.append((p, sched, [tag], valid))

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
    elapsed = time.monotonic() - t0

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


if __name__ == "__main__":
    sys.exit(main())
