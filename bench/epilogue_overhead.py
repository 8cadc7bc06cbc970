#!/usr/bin/env python3
"""What a fused matmul epilogue costs: for every suite problem whose matmul has
elementwise ops after it, the problem compiled as kopt-fuse fuses it (the epilogue
in the matmul's kernel) next to the same matmuls alone (the graph cut after them),
both timed by kopt-run (its L2 flush, medians, checks against the reference), on
the GPU host with the compiler there:

    bench/epilogue_overhead.py --kopt-opt BUNDLE/bin/kopt-opt --kopt-run BUILD/bin/kopt-run \\
        --out DIR [--suite bench/suite.json] [--only NAME ...] [--schedule FILE]

Writes DIR/epilogue_overhead.json and prints a table: per problem the fused
kernels' total median, the bare matmuls' total median, and overhead = fused / bare
- 1 (issue 16's target: at most 5%). --schedule compiles both with that schedule
file (e.g. {"persistent": false}) to compare schedules. Exit code 1 when a compile
or a check failed.
"""
import argparse
import copy
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kopt_suite as ks  # noqa: E402

ELEMENTWISE = set(ks.BINARY) | set(ks.UNARY) | {"gelu", "cast"}


def epilogue_problems(suite, only):
    """The problems with a matmul whose result an elementwise op reads."""
    out = []
    for p in suite["problems"]:
        if only and p["name"] not in only:
            continue
        mm_outs = {n["out"] for n in p["graph"] if n["op"] == "matmul"}
        if any(n["op"] in ELEMENTWISE and set(n["args"]) & mm_outs for n in p["graph"]):
            out.append(p)
    return out


def bare(p):
    """The problem's matmuls alone (outputs: each matmul's result), or None when a
    matmul reads a value the problem computes (e.g. after an RMSNorm): there is no
    bare GEMM to compare with then."""
    q = copy.deepcopy(p)
    q["name"] = p["name"] + "_bare"
    keep, defined = [], {x["name"] for x in p["inputs"]}
    for n in p["graph"]:
        if n["op"] == "matmul":
            if not all(a in defined for a in n["args"]):
                return None
            keep.append(n)
    defined |= {n["out"] for n in keep}
    q["graph"] = keep
    q["outputs"] = [n["out"] for n in keep]
    q["values"] = {k: v for k, v in p["values"].items()
                   if k in defined or k in {x["name"] for x in p["inputs"]}}
    # Inputs the matmuls do not read are not arguments.
    used = {a for n in keep for a in n["args"]}
    q["inputs"] = [x for x in p["inputs"] if x["name"] in used]
    return q


def compile_and_time(p, args, out_dir):
    src = os.path.join(out_dir, p["name"] + ".mlir")
    with open(src, "w") as f:
        f.write(ks.mlir_text(p))
    ptx = os.path.join(out_dir, p["name"] + ".ptx")
    cmd = [args.kopt_opt, src, f"--kopt-to-ptx=output={ptx}", "-o", os.devnull]
    if args.schedule:
        cmd.insert(2, f"--kopt-schedule={args.schedule}")
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        return {"error": "compile: " + r.stderr.strip().splitlines()[0]}
    report = os.path.join(out_dir, p["name"] + ".run.json")
    r = subprocess.run([args.kopt_run, ptx[:-4] + ".json", "--runs", str(args.runs),
                        "--rotate", "4", "-o", report], capture_output=True, text=True)
    try:
        with open(report) as f:
            rep = json.load(f)
    except (OSError, ValueError):
        return {"error": f"kopt-run exited {r.returncode}: {r.stderr.strip()[-300:]}"}
    kernels = []
    for k in rep.get("kernels", []):
        t = (k.get("time") or {}).get("median_ms")
        kernels.append({"name": k.get("name"), "median_ms": t,
                        "passed": k.get("passed"),
                        "registers": (k.get("resources") or {}).get("registers")})
    res = {"kernels": kernels, "exit": r.returncode}
    if r.returncode == 0 and all(k["median_ms"] is not None for k in kernels):
        res["total_ms"] = sum(k["median_ms"] for k in kernels
                              if not k["name"].startswith("pack_"))
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kopt-opt", required=True)
    ap.add_argument("--kopt-run", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--suite", default=ks.SUITE_PATH)
    ap.add_argument("--only", nargs="*", default=[])
    ap.add_argument("--schedule", help="schedule file for both compiles")
    ap.add_argument("--runs", type=int, default=100)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    suite = ks.load_suite(args.suite)
    rows, failed = [], False
    for p in epilogue_problems(suite, args.only):
        q = bare(p)
        if q is None:
            print(f"{p['name']:45s} skipped: a matmul reads a computed value")
            continue
        fused = compile_and_time(p, args, args.out)
        alone = compile_and_time(q, args, args.out)
        row = {"name": p["name"], "fused": fused, "bare": alone}
        if "total_ms" in fused and "total_ms" in alone:
            row["overhead"] = fused["total_ms"] / alone["total_ms"] - 1
        else:
            failed = True
        rows.append(row)
        f_ms, b_ms = fused.get("total_ms"), alone.get("total_ms")
        print(f"{p['name']:45s} fused {f_ms if f_ms is None else round(f_ms, 4)!s:>8} ms "
              f"({len(fused.get('kernels', []))} kernels)  bare {b_ms if b_ms is None else round(b_ms, 4)!s:>8} ms  "
              + (f"overhead {100 * row['overhead']:+.1f}%" if "overhead" in row else
                 f"error: {fused.get('error') or alone.get('error')}"), flush=True)
    with open(os.path.join(args.out, "epilogue_overhead.json"), "w") as f:
        json.dump({"schedule": args.schedule, "problems": rows}, f, indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
