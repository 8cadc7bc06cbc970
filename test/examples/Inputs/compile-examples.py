#!/usr/bin/env python3
"""Compiles every examples/*.mlir with --kopt-to-ptx and assembles its PTX with ptxas.

Usage: compile-examples.py KOPT_OPT PTXAS EXAMPLES_DIR OUT_DIR [ARCH]

Prints one line per example, `PASS NAME (K kernels)` or `FAIL NAME: what failed`
followed by the tool's error lines, then `N of M examples passed`. Exits 1
when any example fails or when there are no examples. Per example it checks that
kopt-opt succeeds, writes a non-empty PTX file and a manifest that parses as JSON,
that every manifest kernel is a `.entry` of the PTX and every launch names a kernel
of the manifest, that the example has a header comment saying how to compile it, and
that `ptxas -arch=ARCH` (default sm_90a) accepts the PTX.
"""
import glob
import json
import os
import re
import subprocess
import sys


def tail(text, n=8):
    """The error lines of a tool's output (diagnostics may be followed by a dump of
    the whole module), or its last lines when none says `error`."""
    lines = text.strip().splitlines()
    errors = [l for l in lines if "error" in l.lower()][:n]
    return "\n".join("    " + l for l in (errors or lines[-n:]))


def check(kopt_opt, ptxas, path, out_dir, arch):
    name = os.path.splitext(os.path.basename(path))[0]
    with open(path) as f:
        source = f.read()
    if not source.startswith("//") or "--kopt-to-ptx" not in source.split("func.func")[0]:
        return name, "no header comment saying how to compile it (--kopt-to-ptx)", 0
    ptx = os.path.join(out_dir, name + ".ptx")
    manifest = os.path.join(out_dir, name + ".json")
    for f in (ptx, manifest):
        if os.path.exists(f):
            os.remove(f)
    r = subprocess.run([kopt_opt, path, f"--kopt-to-ptx=output={ptx}", "-o", os.devnull],
                       capture_output=True, text=True)
    if r.returncode != 0:
        return name, f"kopt-opt exited with {r.returncode}\n{tail(r.stderr)}", 0
    if not os.path.exists(ptx) or os.path.getsize(ptx) == 0:
        return name, "kopt-opt wrote no PTX", 0
    try:
        with open(manifest) as f:
            m = json.load(f)
    except (OSError, ValueError) as e:
        return name, f"no readable manifest: {e}", 0
    with open(ptx) as f:
        text = f.read()
    entries = set(re.findall(r"\.visible \.entry (\w+)\(", text))
    kernels = {k["name"] for k in m["kernels"]}
    if not kernels:
        return name, "the manifest has no kernels", 0
    if kernels != entries:
        return name, (f"manifest kernels {sorted(kernels)} differ from PTX entries "
                      f"{sorted(entries)}"), 0
    for fn in m["functions"]:
        for launch in fn["launches"]:
            if launch["kernel"] not in kernels:
                return name, f"{fn['name']} launches unknown kernel {launch['kernel']}", 0
    r = subprocess.run([ptxas, f"-arch={arch}", ptx, "-o",
                        os.path.join(out_dir, name + ".cubin")],
                       capture_output=True, text=True)
    if r.returncode != 0:
        return name, f"ptxas -arch={arch} exited with {r.returncode}\n{tail(r.stderr)}", 0
    return name, None, len(kernels)


def main():
    if len(sys.argv) not in (5, 6):
        print(__doc__)
        return 2
    kopt_opt, ptxas, examples, out_dir = sys.argv[1:5]
    arch = sys.argv[5] if len(sys.argv) > 5 else "sm_90a"
    os.makedirs(out_dir, exist_ok=True)
    files = sorted(glob.glob(os.path.join(examples, "*.mlir")))
    passed = 0
    for path in files:
        name, error, nkernels = check(kopt_opt, ptxas, path, out_dir, arch)
        if error:
            print(f"FAIL {name}: {error}")
        else:
            passed += 1
            print(f"PASS {name} ({nkernels} kernels)")
    print(f"{passed} of {len(files)} examples passed")
    return 0 if files and passed == len(files) else 1


if __name__ == "__main__":
    sys.exit(main())
