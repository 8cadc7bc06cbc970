#!/usr/bin/env python3
"""Prints a launch manifest (docs/manifest.md) one fact per line, for FileCheck.

Usage: manifest-summary.py MANIFEST.json [PTX]

Also checks that the manifest is self-consistent and exits non-zero otherwise:
every launch names a kernel of the manifest, passes as many arguments as the kernel
has parameters, and each argument (function arg or buffer) has the dtype and shape
of the parameter; with PTX given, every kernel is a `.visible .entry` of the PTX
with one `.param .u64` per parameter.
"""
import json
import re
import sys


def dims(shape):
    return "[" + ",".join(str(d) for d in shape) + "]"


def main():
    with open(sys.argv[1]) as f:
        m = json.load(f)
    errors = []
    print(f"version {m['kopt_manifest_version']} chip {m['chip']} ptx {m['ptx']}")
    kernels = {}
    for k in m["kernels"]:
        kernels[k["name"]] = k
        print(f"kernel {k['name']} class={k.get('class')} "
              f"grid={dims(k['grid'])} block={dims(k['block'])} "
              f"smem={k['dynamic_shared_bytes']}")
        # The ops graph (version 2): kind, attributes, operands -> result.
        for op in k["ops"]:
            attrs = json.dumps(op.get("attrs", {}), sort_keys=True)
            operands = " ".join(f"{n}={v}" for n, v in op["operands"].items())
            print(f"  op {op['op']} attrs={attrs} {operands} -> {op['result']}")
        for v in k.get("values", []):
            print(f"  value {v['name']} {v['dtype']} {dims(v['shape'])}")
        for p in k["params"]:
            print(f"  param {p['name']} {p['role']} {p['dtype']} {dims(p['shape'])}")
    for fn in m["functions"]:
        print(f"function {fn['name']}")
        for a in fn["args"]:
            print(f"  arg {a['name']} {a['role']} {a['dtype']} {dims(a['shape'])}")
        buffers = {b["id"]: b for b in fn["buffers"]}
        for b in fn["buffers"]:
            print(f"  buffer {b['id']} {b['dtype']} {dims(b['shape'])}")
        for launch in fn["launches"]:
            names = []
            for a in launch["args"]:
                names.append(f"arg{a['arg']}" if "arg" in a else f"buf{a['buffer']}")
            print(f"  launch {launch['kernel']} " + " ".join(names))
            k = kernels.get(launch["kernel"])
            if k is None:
                errors.append(f"launch of unknown kernel {launch['kernel']}")
                continue
            if len(launch["args"]) != len(k["params"]):
                errors.append(f"{k['name']}: {len(launch['args'])} arguments for "
                              f"{len(k['params'])} parameters")
                continue
            for a, p in zip(launch["args"], k["params"]):
                t = fn["args"][a["arg"]] if "arg" in a else buffers[a["buffer"]]
                if (t["dtype"], t["shape"]) != (p["dtype"], p["shape"]):
                    errors.append(f"{k['name']}: parameter {p['name']} is {p['dtype']}"
                                  f"{dims(p['shape'])}, argument is {t['dtype']}"
                                  f"{dims(t['shape'])}")
    if len(sys.argv) > 2:
        with open(sys.argv[2]) as f:
            ptx = f.read()
        for name, k in kernels.items():
            entry = re.search(r"\.visible \.entry " + re.escape(name) + r"\(([^)]*)\)", ptx)
            if not entry:
                errors.append(f"no .entry {name} in the PTX")
                continue
            nparams = len(re.findall(r"\.param \.u64", entry.group(1)))
            # The tensor maps (copy = tma) follow the params.
            expected = len(k["params"]) + len(k.get("tensor_maps") or [])
            if nparams != expected:
                errors.append(f"{name}: {nparams} PTX parameters, manifest has "
                              f"{expected} (params and tensor maps)")
        entries = re.findall(r"\.visible \.entry (\w+)\(", ptx)
        for e in entries:
            if e not in kernels:
                errors.append(f".entry {e} is not in the manifest")
    for e in errors:
        print("error: " + e)
    print("consistent" if not errors else "inconsistent")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
