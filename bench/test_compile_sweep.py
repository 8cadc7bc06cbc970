#!/usr/bin/env python3
"""Unit tests of bench/compile_sweep.py's modes with fake kopt-space, kopt-opt and
ptxas (no LLVM, no GPU): the TF32 problems, tf32_candidates() and --tf32, the TMA-store
sweep (tma_store_bases() and --tma-store), each followed by bench/run_sweep.py
--dry-run on what it wrote. (The real tools: CTest bench-random-schedules.)

    python3 bench/test_compile_sweep.py        (CTest: bench-compile-sweep-unit)
"""
import json
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import compile_sweep as cs  # noqa: E402
import run_sweep as rs  # noqa: E402
import sweep_candidates as cands_mod  # noqa: E402
import sweep_index as si  # noqa: E402
from testutil import TempDir, quiet  # noqa: E402


# ======================================================================= TF32

FAKE_KOPT_SPACE = """#!/usr/bin/env python3
import json, os, sys
with open(os.environ["KOPT_FAKE_LOG"], "a") as f:
    f.write(" ".join(sys.argv[1:]) + "\\n")
if "--default" in sys.argv:
    print(json.dumps({"instruction": "wgmma", "copy": "tma", "block_m": 128, "block_n": 128,
                      "block_k": 32, "warp_m": 64, "warp_n": 128, "num_warps": 4,
                      "stages": 4, "split_k": 1, "swizzle": 1, "vector_width": 4,
                      "persistent": False}))
"""

# kopt-opt as compile_sweep.py calls it: the kernel's manifest from the kopt.matmul
# line (types and attributes); 128 x 256 tiles with block_k 64 are "invalid".
FAKE_KOPT_OPT = """#!/usr/bin/env python3
import json, os, re, sys
mlir = open(sys.argv[1]).read()
out = next(a for a in sys.argv if a.startswith("--kopt-to-ptx=")).split("output=", 1)[1]
sched = json.load(open(next(a for a in sys.argv
                            if a.startswith("--kopt-schedule=")).split("=", 1)[1]))
if sched["block_n"] == 256 and sched["block_k"] == 64:
    sys.stderr.write("error: schedule is invalid for gemm: 1 stage too many\\n")
    sys.exit(1)
line = next(l for l in mlir.splitlines() if "kopt.matmul" in l)
m = re.search(r"\\{([a-z0-9_, ]*)\\} :", line)
flags = [x.strip() for x in m.group(1).split(",")] if m else []
(a0, a1, dt), (b0, b1, _), (c0, c1, odt) = re.findall(r"tensor<(\\d+)x(\\d+)x(\\w+)>", line)
attrs = {"transpose_a": "transpose_a" in flags, "transpose_b": "transpose_b" in flags}
if "tf32" in flags:
    attrs["tf32"] = True
t = lambda n, r, d, s: {"name": n, "role": r, "dtype": d, "shape": [int(x) for x in s]}
k = {"name": "matmul_0", "class": "matmul",
     "ops": [{"op": "matmul", "attrs": attrs, "operands": {"a": "a", "b": "b"},
              "result": "result"}],
     "params": [t("a", "input", dt, (a0, a1)), t("b", "input", dt, (b0, b1)),
                t("result", "output", odt, (c0, c1))],
     "grid": [1, 1, 1], "block": [128, 1, 1], "dynamic_shared_bytes": 0,
     "schedule": sched}
rows = lambda block, n: min(block, (n + 7) // 8 * 8)  # kopt::schedule::tmaBoxRows
m, n = int(c0), int(c1)
if sched.get("copy") == "tma":  # as kopt-opt: 128-byte rows of K x the block tile
    row = 128 // (4 if dt == "f32" else 2)
    k["tensor_maps"] = [{"tensor": "a", "box": [row, rows(sched["block_m"], m)], "swizzle": 128},
                        {"tensor": "b", "box": [row, rows(sched["block_n"], n)], "swizzle": 128}]
if sched.get("tma_store"):  # the output's map, last: S bytes of N x block_m rows
    size = 4 if odt == "f32" else 2  # S: the largest of 128, 64, 32 dividing block_n's bytes
    span = next(s for s in (128, 64, 32, 0) if s == 0 or sched["block_n"] * size % s == 0)
    k.setdefault("tensor_maps", []).append(
        {"tensor": "result", "box": [span // size, rows(sched["block_m"], m)],
         "swizzle": span})
with open(out, "w") as f:
    f.write(".visible .entry matmul_0(\\n)\\n")
with open(out[:-4] + ".json", "w") as f:
    json.dump({"kopt_manifest_version": 2, "chip": "sm_90a",
               "ptx": os.path.basename(out), "kernels": [k], "functions": []}, f)
"""

FAKE_PTXAS = """#!/usr/bin/env python3
import sys
sys.stderr.write("ptxas info    : Used 96 registers\\n")
"""


class Tf32Problems(unittest.TestCase):
    """compile_sweep.py's problems with "tf32": true and tf32_candidates()."""

    def test_problem_ids_and_text(self):
        p = cs.problem("llama_o_proj_m8_f32", 8, 4096, 4096, "f32", "f32", False, True)
        self.assertNotIn("tf32", p)
        self.assertIn("kopt.matmul %a, %b {transpose_b} :", cs.mlir_text(p))
        self.assertNotIn("--tf32", cs.space_args(p))
        q = cs.tf32_problem(p)
        self.assertEqual(q["id"], "llama_o_proj_m8_f32_tf32")
        self.assertIs(q["tf32"], True)
        self.assertEqual({k: v for k, v in q.items() if k not in ("id", "tf32")},
                         {k: v for k, v in p.items() if k != "id"})
        self.assertEqual(cs.mlir_text(q),
                         "func.func @gemm(%a: tensor<8x4096xf32>, %b: tensor<4096x4096xf32>) "
                         "-> tensor<8x4096xf32> {\n"
                         "  %c = kopt.matmul %a, %b {transpose_b, tf32} : tensor<8x4096xf32>, "
                         "tensor<4096x4096xf32> -> tensor<8x4096xf32>\n"
                         "  return %c : tensor<8x4096xf32>\n}\n")
        self.assertEqual(cs.space_args(q), ["--shape=8x4096x4096", "--dtype=f32",
                                            "--out-dtype=f32", "--transpose-b", "--tf32"])
        r = cs.problem("g", 64, 32, 16, "f32", "f32", False, False, tf32=True)
        self.assertEqual(r["id"], "g_tf32")
        self.assertIn("kopt.matmul %a, %b {tf32} : tensor<64x16xf32>", cs.mlir_text(r))
        r = cs.problem("g", 64, 32, 16, "f32", "f32", True, True, tf32=True)
        self.assertIn("{transpose_a, transpose_b, tf32}", cs.mlir_text(r))
        with self.assertRaises(ValueError):
            cs.problem("h", 64, 32, 16, "bf16", "bf16", False, True, tf32=True)

    def test_sweep_problems(self):
        f32 = [p for p in cs.suite_problems() if p["dtype"] == "f32"]
        tp = cs.tf32_problems()
        self.assertGreater(len(f32), 0)
        self.assertEqual([p["id"] for p in tp], [p["id"] + "_tf32" for p in f32])
        self.assertTrue(all(p["tf32"] and p["dtype"] == "f32" for p in tp))

    def test_candidates(self):
        def cands(m, n):
            p = cs.tf32_problem(cs.problem("x", m, n, 4096, "f32", "f32", False, True))
            return cands_mod.tf32_candidates(p)
        c = cands(512, 6144)
        self.assertEqual(len(c), 20)
        self.assertTrue(all(s["instruction"] == "wgmma" and s["copy"] == "tma" and
                            s["split_k"] == 1 and s["persistent"] is False for s in c))
        tiles = {(s["block_m"], s["block_n"], s["warp_m"], s["warp_n"]) for s in c}
        self.assertEqual(tiles, {(128, 256, 64, 256), (128, 128, 64, 128),
                                 (64, 128, 64, 128), (64, 64, 64, 64)})
        for bm in (128, 64):
            got = {(s["block_k"], s["stages"]) for s in c if s["block_m"] == bm}
            stages = (3, 4) if bm == 128 else (3, 4, 5)
            self.assertEqual(got, {(bk, st) for bk in (32, 64) for st in stages})
        self.assertEqual({s["swizzle"] for s in c}, {8})
        self.assertEqual({s["vector_width"] for s in c}, {4})
        self.assertEqual({s["swizzle"] for s in cands(511, 6144)}, {1})
        self.assertEqual({s["vector_width"] for s in cands(8, 4094)}, {2})
        self.assertEqual({s["vector_width"] for s in cands(4097, 4095)}, {1})
        self.assertIn("tf32", si.KNOWN_TAGS)


class Tf32Sweep(TempDir):
    """compile_sweep.py --tf32 with fake kopt-space, kopt-opt and ptxas, then
    run_sweep.py --dry-run on what it wrote."""

    def test_compile_and_dry_run(self):
        log = os.path.join(self.tmp, "kopt-space.log")
        os.environ["KOPT_FAKE_LOG"] = log
        tp = cs.tf32_problems()
        only = [next(p["id"] for p in tp if p["m"] >= 512)]
        out = os.path.join(self.tmp, "sweep")
        argv = ["--out", out, "--tf32", "-j", "2",
                "--kopt-opt", self.tool("kopt-opt", FAKE_KOPT_OPT),
                "--kopt-space", self.tool("kopt-space", FAKE_KOPT_SPACE),
                "--ptxas", self.tool("ptxas", FAKE_PTXAS)]
        for x in only:
            argv += ["--only", x]
        try:
            rc, text = quiet(cs.main, argv)
        finally:
            del os.environ["KOPT_FAKE_LOG"]
        self.assertEqual(rc, 0, text)
        with open(log) as f:
            calls = f.read().splitlines()
        self.assertEqual(len(calls), 1)
        self.assertTrue(all(c.endswith("--tf32 --default") for c in calls), calls)
        with open(os.path.join(out, "index.json")) as f:
            index = json.load(f)
        self.assertEqual([p["id"] for p in index["problems"]], only)
        for p in index["problems"]:
            self.assertIs(p["tf32"], True)
            with open(os.path.join(out, os.path.dirname(p["kernels"][0]["file"]),
                                   "gemm.mlir")) as f:
                self.assertIn(", tf32} :", f.read())
            tags = [k["tags"] for k in p["kernels"]]
            # The default (swizzle 1: not among the candidates, which have 8 for
            # M >= 512) and the 20 candidates less the two 128 x 256 ones with
            # block_k 64 that kopt-opt rejected.
            self.assertEqual(sum("default" in t for t in tags), 1)
            self.assertEqual(sum("tf32" in t for t in tags), 18)
        with open(os.path.join(out, "compile_sweep.json")) as f:
            st = json.load(f)["statuses"]
        self.assertEqual(st.get("rejected"), 2)
        self.assertEqual(st.get("ok"), 19)
        rc, text = quiet(rs.main, ["--sweep-dir", out, "--dry-run"])
        self.assertEqual(rc, 0, text)
        self.assertIn("1 problems, 19 kernels, 0 kernels with errors", text)
        self.assertIn(" f32->f32 tf32 ", text)
        self.assertNotIn("warning", text)


# ======================================================================= tma_store

class TmaStoreSweep(TempDir):
    """compile_sweep.py --tma-store: tma_store_bases(), each schedule with tma_store
    false and true (tag "tma_store"), compiled with fake kopt-space, kopt-opt and
    ptxas, then run_sweep.py --dry-run on what it wrote (the manifests' output maps
    checked against the schedule)."""
    DEFAULT = {"instruction": "wgmma", "copy": "tma", "block_m": 64, "block_n": 16,
               "block_k": 128, "warp_m": 64, "warp_n": 16, "num_warps": 5, "stages": 4,
               "split_k": 4, "swizzle": 1, "vector_width": 8, "persistent": False,
               "warp_specialize": True, "tma_store": False}

    def test_bases(self):
        p = cs.problem("x", 32, 768, 2048, "bf16", "bf16", False, True)
        b = cands_mod.tma_store_bases(p, self.DEFAULT)
        self.assertEqual(b[0], {k: v for k, v in self.DEFAULT.items() if k != "num_warps"})
        tiles = [(s["block_m"], s["block_n"], s["warp_m"], s["warp_n"], s["block_k"],
                  s["stages"], s["split_k"], s["persistent"], s["warp_specialize"])
                 for s in b[1:]]
        self.assertEqual(tiles, [(128, 256, 64, 256, 64, 4, 1, False, False),
                                 (128, 256, 64, 256, 64, 4, 1, False, True),
                                 (128, 256, 64, 256, 64, 3, 1, True, True),
                                 (128, 128, 64, 128, 64, 4, 1, True, True),
                                 (64, 16, 64, 16, 128, 4, 4, False, True)])
        self.assertTrue(all(s["instruction"] == "wgmma" and s["copy"] == "tma" and
                            s["vector_width"] == 8 and s["swizzle"] == 1 and
                            "tma_store" not in s for s in b[1:]))
        # The decode tile only for M <= 64; swizzle 8 for M >= 512; vector_width 4
        # for f32 C; f32 operands: the default only.
        b = cands_mod.tma_store_bases(cs.problem("y", 4096, 4096, 4096, "f16", "f32", False, True),
                               self.DEFAULT)
        self.assertEqual(len(b), 5)
        self.assertEqual({(s["swizzle"], s["vector_width"]) for s in b[1:]}, {(8, 4)})
        f32 = cs.problem("z", 8, 4096, 4096, "f32", "f32", False, True)
        self.assertEqual(cands_mod.tma_store_bases(f32, dict(self.DEFAULT, num_warps=4)),
                         [{k: v for k, v in self.DEFAULT.items() if k != "num_warps"}])
        self.assertIn("tma_store", si.KNOWN_TAGS)

    def test_compile_and_dry_run(self):
        os.environ["KOPT_FAKE_LOG"] = os.path.join(self.tmp, "kopt-space.log")
        # A decode problem (M <= 64) of 16-bit operands: every base applies.
        p = next(q for q in cs.suite_problems()
                 if q["m"] <= 64 and q["dtype"] == "bf16" and q["n"] % 8 == 0)
        out = os.path.join(self.tmp, "sweep")
        argv = ["--out", out, "--tma-store", "-j", "2", "--only", p["id"],
                "--kopt-opt", self.tool("kopt-opt", FAKE_KOPT_OPT),
                "--kopt-space", self.tool("kopt-space", FAKE_KOPT_SPACE),
                "--ptxas", self.tool("ptxas", FAKE_PTXAS)]
        try:
            rc, text = quiet(cs.main, argv)
        finally:
            del os.environ["KOPT_FAKE_LOG"]
        self.assertEqual(rc, 0, text)
        with open(os.path.join(out, "compile_sweep.json")) as f:
            points = json.load(f)["points"]
        # The default, then 6 bases x tma_store false / true; the fake kopt-opt rejects
        # the three 128 x 256 tiles (block_k 64), recorded as rejected, not failures.
        self.assertEqual(len(points), 13)
        self.assertEqual([x["tags"] for x in points], [["default"]] + [["tma_store"]] * 12)
        self.assertEqual([x["schedule"].get("tma_store") for x in points[1:]],
                         [False, True] * 6)
        self.assertEqual(sum(x["status"] == "rejected" for x in points), 6)
        self.assertEqual(sum(x["status"] == "ok" for x in points), 7)
        with open(os.path.join(out, "index.json")) as f:
            (q,) = json.load(f)["problems"]
        self.assertEqual(q["id"], p["id"])
        stored = set()  # the block_n of the tma_store kernels
        for k in q["kernels"]:
            with open(os.path.join(out, k["manifest"])) as f:
                maps = json.load(f)["kernels"][0].get("tensor_maps", [])
            if k["schedule"].get("tma_store"):
                # bf16 C: block_n 16 (32 bytes) in rows of 32 bytes, 128 (256) of 128.
                columns, swizzle = {16: (16, 32), 128: (64, 128)}[k["schedule"]["block_n"]]
                self.assertEqual(maps[-1]["tensor"], "result")
                # min(block_m, M rounded up to 8) rows (docs/manifest.md).
                self.assertEqual(maps[-1]["box"], [columns, min(
                    k["schedule"]["block_m"], (p["m"] + 7) // 8 * 8)])
                self.assertEqual(maps[-1]["swizzle"], swizzle)
                self.assertEqual(len(maps), 3)
                stored.add(k["schedule"]["block_n"])
            else:
                self.assertEqual(len(maps), 2)
        self.assertEqual(stored, {16, 128})
        rc, text = quiet(rs.main, ["--sweep-dir", out, "--dry-run"])
        self.assertEqual(rc, 0, text)
        self.assertIn("1 problems, 7 kernels, 0 kernels with errors", text)
        self.assertIn("(default 1, tma_store 6)", text)


if __name__ == "__main__":
    unittest.main()
