#!/usr/bin/env python3
"""The compile-only mode of the benchmark suite: no GPU needed.

    bench/compile_suite.py [--out DIR] [--kopt-opt PATH | --package] [--ptxas PATH]
                           [-j N] [--only NAME]... [--suite FILE] [--allow-unsupported]

For every problem of bench/suite.json: writes DIR/problems/<name>.mlir
(bench/gen_mlir.py's text), compiles it with
`kopt-opt <name>.mlir --kopt-to-ptx="output=DIR/problems/<name>.ptx" -o /dev/null`
(which also writes the launch manifest <name>.json; with --package, in this process
through the kopt Python package's kopt.compile, the same bytes), checks the manifest
with kopt's C++ reader (kopt.validate_manifest, no GPU) and against the suite (its
function's arguments are the problem's inputs then outputs, with their shapes and
dtypes; every kernel launched is an .entry of the PTX) and assembles the PTX with
`ptxas -arch=sm_90a -v` (registers and spills per kernel). bench/run_suite.py
--compile does the same on the GPU host, without ptxas when there is none.
The kopt package is found on PYTHONPATH, else in this tree's python/ folder (its
libkopt.so in build/lib, or KOPT_LIBRARY).
Prints a table and writes DIR/compile_suite.json (read by bench/run_suite.py) and
a copy of the suite, DIR/suite.json.

Statuses:
  ok                  compiled, manifest consistent, ptxas accepted the PTX
  unsupported         kopt-opt reported an error and the suite marks the problem
                      "kopt": {"expect": "unsupported"} (not a failure)
  newly-supported     the suite expects an error but it compiled and assembled:
                      not a failure; update bench/suite.json
  unsupported-unexpected  kopt-opt reported an error on a problem the suite expects
                      to compile: a failure (a regression) unless
                      --allow-unsupported
  crash               kopt-opt died (signal, exit code other than 0/1, stack
                      dump) or timed out: a failure
  manifest-mismatch   the manifest disagrees with the suite or the PTX: a failure
  ptxas-rejected      ptxas did not accept kopt's PTX: a failure

Exit code: 0 when no problem failed, 1 when one did, 2 on usage errors (a bad
suite, kopt-opt or ptxas not found).
"""
import argparse
import concurrent.futures
import json
import os
import re
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import kopt_suite as ks  # noqa: E402

FAILURES = ("unsupported-unexpected", "crash", "manifest-mismatch", "ptxas-rejected")
COMPILE_TIMEOUT_S = 300


def first_error(text):
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    for line in lines:
        if "error" in line.lower():
            return line
    return lines[0] if lines else "(no output)"


def check_manifest(p, manifest, ptx_text, name=None):
    """Returns None when the manifest matches the suite problem and the PTX, else
    what differs. The manifest itself (fields, kernels, tensor maps, launches and
    their arguments) is checked by kopt's C++ reader through the package
    (kopt.validate_manifest, the checks kopt.load makes, no GPU needed); here only
    what the suite adds: the problem's function, its arguments (the problem's inputs
    then outputs, with their shapes and dtypes), and that every kernel launched is
    an .entry of the PTX."""
    kopt = ks.import_kopt()
    try:
        kopt.validate_manifest(manifest, name=name)
    except kopt.KoptError as e:
        return str(e)
    fns = [f for f in manifest["functions"] if f["name"] == p["name"]]
    if len(fns) != 1:
        return f"no function named {p['name']} in the manifest"
    fn = fns[0]
    want = [(x["name"], "input", x["shape"], x["dtype"]) for x in p["inputs"]]
    want += [(o, "output", p["values"][o]["shape"], p["values"][o]["dtype"])
             for o in p["outputs"]]
    args = fn["args"]
    if len(args) != len(want):
        return f"the function has {len(args)} arguments, the suite {len(want)}"
    for a, (name, role, shape, dtype) in zip(args, want):
        if a["role"] != role or a["shape"] != shape or a["dtype"] != dtype:
            return (f"argument {name}: manifest says {a['role']} {a['dtype']} "
                    f"{a['shape']}, the suite {role} {dtype} {shape}")
    entries = set(re.findall(r"\.entry\s+(\w+)\s*\(", ptx_text))
    for launch in fn["launches"]:
        if launch["kernel"] not in entries:
            return f"kernel {launch['kernel']} is not an .entry of the PTX"
    if not fn["launches"]:
        return "the function launches no kernel"
    return None


def parse_ptxas(text):
    """{kernel: {"registers", "spill_stores", "spill_loads"}} from ptxas -v."""
    out, current = {}, None
    for line in text.splitlines():
        m = re.search(r"Compiling entry function '(\w+)'", line)
        if m:
            current = m.group(1)
            out[current] = {}
            continue
        if current is None:
            continue
        m = re.search(r"Used (\d+) registers", line)
        if m:
            out[current]["registers"] = int(m.group(1))
        m = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if m:
            out[current]["spill_stores"] = int(m.group(1))
            out[current]["spill_loads"] = int(m.group(2))
    return out


def new_record(p, out_dir):
    """The problem's record and its file names; writes <name>.mlir and removes what
    an earlier compile left."""
    name = p["name"]
    r = {"name": name, "model": p["model"], "expected": "supported"
         if ks.expected_supported(p) else "unsupported"}
    files = {x: os.path.join(out_dir, name + "." + x) for x in ("mlir", "ptx", "json", "log")}
    for x in ("ptx", "json", "log"):
        if os.path.exists(files[x]):
            os.remove(files[x])
    with open(files["mlir"], "w") as f:
        f.write(ks.mlir_text(p))
    return r, files


def rejected(r, diagnostics, out_dir):
    """A compile error: unsupported when the suite expects one, else a regression."""
    r["status"] = "unsupported" if r["expected"] == "unsupported" else \
        "unsupported-unexpected"
    r["error"] = first_error(diagnostics).replace(out_dir + os.sep, "")
    return r


def finish(r, p, files, ptxas, arch):
    """After a successful compile: the manifest against the suite and the PTX, then
    (with a ptxas) the PTX assembled with registers and spills."""
    try:
        with open(files["json"]) as f:
            manifest = json.load(f)
        with open(files["ptx"]) as f:
            ptx_text = f.read()
    except (OSError, ValueError) as e:
        r["status"], r["error"] = "manifest-mismatch", f"no readable PTX/manifest: {e}"
        return r
    bad = check_manifest(p, manifest, ptx_text, name=os.path.basename(files["json"]))
    if bad:
        r["status"], r["error"] = "manifest-mismatch", bad
        return r
    fn = next(f for f in manifest["functions"] if f["name"] == p["name"])
    r["kernels"] = [l["kernel"] for l in fn["launches"]]
    r["ptx_bytes"] = len(ptx_text.encode())
    if ptxas:
        a = subprocess.run([ptxas, f"-arch={arch}", "-v", files["ptx"], "-o", os.devnull],
                           capture_output=True, text=True)
        with open(files["log"], "a") as f:
            f.write(a.stdout + a.stderr)
        if a.returncode != 0:
            r["status"] = "ptxas-rejected"
            r["error"] = f"ptxas exit code {a.returncode}: {first_error(a.stderr + a.stdout)}"
            return r
        r["ptxas"] = parse_ptxas(a.stdout + a.stderr)
    r["status"] = "ok" if r["expected"] == "supported" else "newly-supported"
    return r


def compile_one(p, out_dir, kopt_opt, ptxas, arch):
    """One problem through `kopt-opt --kopt-to-ptx` (a process: a crash is recorded)."""
    r, files = new_record(p, out_dir)
    t0 = time.monotonic()
    try:
        c = subprocess.run([kopt_opt, files["mlir"], f"--kopt-to-ptx=output={files['ptx']}",
                            "-o", os.devnull],
                           capture_output=True, text=True, timeout=COMPILE_TIMEOUT_S)
        rc, err = c.returncode, c.stderr
    except subprocess.TimeoutExpired as e:
        rc, err = None, (e.stderr or b"").decode(errors="replace") if isinstance(
            e.stderr, bytes) else (e.stderr or "")
    r["compile_s"] = round(time.monotonic() - t0, 3)
    with open(files["log"], "w") as f:
        f.write(err)
    if rc is None or rc < 0 or rc > 1 or "Stack dump" in err or \
            "PLEASE submit a bug report" in err:
        r["status"] = "crash"
        r["error"] = (f"kopt-opt timed out after {COMPILE_TIMEOUT_S} s" if rc is None
                      else f"kopt-opt exit code {rc}: {first_error(err)}")
        return r
    if rc != 0:
        return rejected(r, err, out_dir)
    return finish(r, p, files, ptxas, arch)


def compile_in_process(p, out_dir, kopt, ptxas, arch, cuda_path=None, tuning_db=None):
    """One problem through the Python package (kopt.compile: the same pipeline as
    kopt-opt --kopt-to-ptx, in this process; the PTX and manifest are the same
    bytes), written as compile_one writes them; with `tuning_db` (a kopt-tune
    database) each matmul kernel takes its workload's best recorded schedule
    (docs/tuning.md). A compile error is CompileError; any other failure of the
    library is recorded as a crash."""
    r, files = new_record(p, out_dir)
    t0 = time.monotonic()
    try:
        with open(files["mlir"]) as f:
            compiled = kopt.compile(f.read(), name=files["mlir"], cuda_path=cuda_path,
                                    tuning_db=tuning_db)
        compiled.write(files["ptx"])
        err = None
    except kopt.CompileError as e:
        err = str(e)
    except kopt.KoptError as e:
        r["compile_s"] = round(time.monotonic() - t0, 3)
        r["status"], r["error"] = "crash", f"kopt.compile failed: {first_error(str(e))}"
        return r
    r["compile_s"] = round(time.monotonic() - t0, 3)
    with open(files["log"], "w") as f:
        f.write(err or "")
    if err is not None:
        return rejected(r, err, out_dir)
    return finish(r, p, files, ptxas, arch)


def compile_all(problems, out, one, jobs):
    """Compiles `problems` into out/problems with `one(p, problems_dir)` on `jobs`
    threads; returns the results in suite order."""
    pdir = os.path.join(out, "problems")
    os.makedirs(pdir, exist_ok=True)
    with concurrent.futures.ThreadPoolExecutor(max(1, jobs)) as pool:
        return list(pool.map(lambda p: one(p, pdir), problems))


def write_record(out, results, compiler, ptxas, arch, allow_unsupported=False):
    """out/compile_suite.json (read by bench/run_suite.py); returns the record."""
    if allow_unsupported:
        for r in results:
            if r["status"] == "unsupported-unexpected":
                r["status"] = "unsupported"
    counts = {}
    for r in results:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    record = {
        "tool": "bench/compile_suite.py",
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "git": git_info(),
        **compiler,
        "ptxas": os.path.abspath(ptxas) if ptxas else None,
        "ptxas_version": (subprocess.run([ptxas, "--version"], capture_output=True,
                                         text=True).stdout.strip().splitlines() or [""])[-1]
        if ptxas else None,
        "arch": arch,
        "suite": "suite.json",
        "problems_dir": "problems",
        "counts": counts,
        "failed": sum(r["status"] in FAILURES for r in results),
        "problems": results,
    }
    with open(os.path.join(out, "compile_suite.json"), "w") as f:
        json.dump(record, f, indent=1)
        f.write("\n")
    return record


def git_info():
    def git(*args):
        try:
            c = subprocess.run(["git", "-C", ROOT] + list(args), capture_output=True,
                               text=True, timeout=20)
            return c.stdout.strip() if c.returncode == 0 else None
        except (OSError, subprocess.TimeoutExpired):
            return None
    commit = git("rev-parse", "HEAD")
    if not commit:
        return None
    status = git("status", "--porcelain", "--untracked-files=no")
    return {"commit": commit, "subject": git("log", "-1", "--format=%s"),
            "dirty": bool(status)}


def table(results):
    rows = ["| problem | status | kernels | PTX KiB | max regs | spill bytes | compile s | note |",
            "| --- | --- | ---: | ---: | ---: | ---: | ---: | --- |"]
    for r in results:
        regs = [k.get("registers", 0) for k in (r.get("ptxas") or {}).values()]
        spills = sum(k.get("spill_stores", 0) + k.get("spill_loads", 0)
                     for k in (r.get("ptxas") or {}).values())
        rows.append("| {} | {} | {} | {} | {} | {} | {:.2f} | {} |".format(
            r["name"], r["status"], len(r.get("kernels", [])) or "",
            f"{r['ptx_bytes'] / 1024:.1f}" if r.get("ptx_bytes") else "",
            max(regs) if regs else "", spills if r.get("ptxas") else "",
            r.get("compile_s", 0.0), (r.get("error") or "").replace("|", "\\|")))
    return "\n".join(rows)


def print_summary(results, pdir, t0):
    """The table and the verdict lines; returns the failed results."""
    failed = [r for r in results if r["status"] in FAILURES]
    counts = {}
    for r in results:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    print(table(results))
    summary = ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
    print(f"\ncompile_suite: {len(results)} problems ({summary}) in "
          f"{time.monotonic() - t0:.1f} s; PTX and manifests in {pdir}")
    for r in results:
        if r["status"] == "newly-supported":
            print(f"compile_suite: note: {r['name']} compiles now: remove its "
                  "\"kopt\": {\"expect\": \"unsupported\"} from bench/suite.json")
    for r in failed:
        print(f"compile_suite: FAIL {r['name']}: {r['status']}: {r.get('error')}")
    print(f"{len(results) - len(failed)} passed, {len(failed)} failed")
    return failed


def main():
    ap = argparse.ArgumentParser(
        description="Compile every benchmark-suite problem with kopt-opt (or the kopt "
                    "Python package) and ptxas.",
        epilog="Statuses and exit codes: see the module docstring (--help-statuses).")
    ap.add_argument("--out", default=os.path.join(ROOT, "out", "bench-compile"),
                    help="output folder (default: out/bench-compile)")
    ap.add_argument("--suite", default=ks.SUITE_PATH)
    ap.add_argument("--kopt-opt", default=os.environ.get("KOPT_OPT") or
                    os.path.join(ROOT, "build", "bin", "kopt-opt"))
    ap.add_argument("--package", action="store_true",
                    help="compile in this process with the kopt Python package "
                         "(kopt.compile) instead of kopt-opt")
    ap.add_argument("--ptxas", default=os.environ.get("PTXAS") or shutil.which("ptxas") or
                    "/usr/local/cuda/bin/ptxas")
    ap.add_argument("--arch", default="sm_90a")
    ap.add_argument("-j", "--jobs", type=int, default=2)
    ap.add_argument("--only", action="append", default=[], metavar="NAME")
    ap.add_argument("--allow-unsupported", action="store_true",
                    help="a compile error on a problem expected to compile is reported, "
                         "not a failure")
    ap.add_argument("--help-statuses", action="store_true")
    args = ap.parse_args()
    if args.help_statuses:
        print(__doc__)
        return 0
    for tool in ((args.ptxas,) if args.package else (args.kopt_opt, args.ptxas)):
        if not (os.path.isfile(tool) and os.access(tool, os.X_OK)):
            print(f"compile_suite: error: {tool} not found or not executable "
                  "(--kopt-opt / --ptxas, or KOPT_OPT / PTXAS)", file=sys.stderr)
            return 2
    try:
        suite = ks.load_suite(args.suite)
        problems = ks.select(suite, args.only)
        kopt = ks.import_kopt()
        if args.package:
            compiler = {"compiler": f"kopt.compile ({kopt.version()})"}
        else:
            compiler = {"kopt_opt": os.path.abspath(args.kopt_opt)}
    except (ks.SuiteError, OSError) as e:
        print(f"compile_suite: error: {e}", file=sys.stderr)
        return 2
    except kopt.KoptError as e:
        print(f"compile_suite: error: {e}", file=sys.stderr)
        return 2
    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)
    shutil.copyfile(args.suite, os.path.join(out, "suite.json"))

    t0 = time.monotonic()
    if args.package:
        def one(p, pdir):
            return compile_in_process(p, pdir, kopt, args.ptxas, args.arch)
    else:
        def one(p, pdir):
            return compile_one(p, pdir, args.kopt_opt, args.ptxas, args.arch)
    results = compile_all(problems, out, one, args.jobs)
    write_record(out, results, compiler, args.ptxas, args.arch, args.allow_unsupported)
    failed = print_summary(results, os.path.join(out, "problems"), t0)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
