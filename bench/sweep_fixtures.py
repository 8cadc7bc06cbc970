"""Fixtures of the schedule-sweep tests (bench/test_run_sweep.py,
bench/test_sweep_driver.py): a sweep folder as bench/compile_sweep.py writes it
(index.json, PTX, manifests as kopt-opt writes them), its problems and kernels."""
import json
import os

import sweep_index as si

PTX = """.version 8.0
.target sm_90a
.address_size 64
.visible .entry matmul_0(
    .param .u64 a,
    .param .u64 b,
    .param .u64 result
)
{
    ret;
}
"""

SCHED = {"instruction": "mma_sync", "copy": "cp_async", "block_m": 128, "block_n": 128,
         "block_k": 32, "warp_m": 64, "warp_n": 32, "num_warps": 8, "stages": 2,
         "split_k": 1, "swizzle": 1, "vector_width": 1, "persistent": False}


def manifest(p, name="matmul_0", ptx="k.ptx", schedule=None, smem=0):
    """A launch manifest as kopt-opt writes it for a kopt.matmul (docs/manifest.md)."""
    a, b, c = si.operand_shapes(si.normalize_problem(p))
    k = {"name": name, "class": "matmul",
         "ops": [{"op": "matmul",
                  "attrs": {"transpose_a": p.get("transpose_a", False),
                            "transpose_b": p.get("transpose_b", False)},
                  "operands": {"a": "a", "b": "b"}, "result": "result"}],
         "params": [{"name": "a", "role": "input", "dtype": p["dtype"], "shape": a},
                    {"name": "b", "role": "input", "dtype": p["dtype"], "shape": b},
                    {"name": "result", "role": "output", "dtype": p["out_dtype"], "shape": c}],
         "grid": [(p["m"] + 127) // 128 * ((p["n"] + 127) // 128), 1, 1],
         "block": [256, 1, 1], "dynamic_shared_bytes": smem}
    if p.get("tf32"):
        k["ops"][0]["attrs"]["tf32"] = True
    if schedule is not None:
        k["schedule"] = schedule
    return {"kopt_manifest_version": 2, "chip": "sm_90a", "ptx": ptx, "kernels": [k],
            "functions": [{"name": "gemm", "args": [
                {"name": "arg0", "role": "input", "dtype": p["dtype"], "shape": a},
                {"name": "arg1", "role": "input", "dtype": p["dtype"], "shape": b},
                {"name": "out0", "role": "output", "dtype": p["out_dtype"], "shape": c}],
                "buffers": [], "launches": [{"kernel": name, "args": [
                    {"arg": 0}, {"arg": 1}, {"arg": 2}]}]}]}


def cpp(want, manifest="p/k.json", kernel="matmul_0"):
    """A manifest error as kopt's C++ reader words it (kopt.validate_manifest):
    `want` ("kernels[0].field: message") behind the manifest's name, the kernel's
    name after its index."""
    return f"{manifest}: " + want.replace("kernels[0]", f"kernels[0] ({kernel})", 1)


def make_dir(root, problems):
    """Writes DIR/index.json and every kernel's PTX and manifest. `problems`: index
    problems whose kernels may carry "_manifest" (a manifest to write instead of the
    generated one) and "_ptx" (PTX text)."""
    index = {"kopt_sweep_version": 1, "chip": "sm_90a", "commit": "0" * 40, "problems": []}
    for i, p in enumerate(problems):
        q = {k: v for k, v in p.items() if k != "kernels"}
        q["kernels"] = []
        os.makedirs(os.path.join(root, f"p{i:03d}"), exist_ok=True)
        for j, k in enumerate(p["kernels"]):
            base = f"p{i:03d}/k{j:03d}"
            entry = {"file": base + ".ptx", "manifest": base + ".json",
                     "schedule": k.get("schedule", SCHED), "tags": k.get("tags", ["sweep"])}
            entry.update({x: v for x, v in k.items() if not x.startswith("_") and
                          x not in entry})
            m = k.get("_manifest") or manifest(q, ptx=f"k{j:03d}.ptx",
                                               schedule=entry["schedule"])
            with open(os.path.join(root, base + ".json"), "w") as f:
                json.dump(m, f)
            with open(os.path.join(root, base + ".ptx"), "w") as f:
                f.write(k.get("_ptx", PTX))
            q["kernels"].append(entry)
        index["problems"].append(q)
    with open(os.path.join(root, "index.json"), "w") as f:
        json.dump(index, f)
    return index


def gemm(pid, m=64, n=128, k=256, dtype="bf16", out_dtype=None, tb=True, kernels=(),
         **extra):
    p = {"id": pid, "m": m, "n": n, "k": k, "dtype": dtype, "out_dtype": out_dtype or dtype,
         "transpose_a": False, "transpose_b": tb, "kernels": list(kernels)}
    p.update(extra)
    return p


# ======================================================================= checks


def kentry(file, tags, **sched):
    return {"file": file, "manifest": file.replace(".ptx", ".json"),
            "schedule": dict(SCHED, **sched), "tags": tags, "registers": 100}
