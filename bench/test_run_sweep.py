#!/usr/bin/env python3
"""Unit tests of the schedule-sweep runner's GPU-free parts (bench/run_sweep.py):
the index and manifest checks (kopt's C++ reader through the package, TMA tensor
maps against the schedule included, then the sweep's own), --dry-run, the record,
the summaries and sweep.md. TMA stores (tma_store = true: a map of the output): the
manifest check. (The launch through the package: bench/test_package_launch.py.) TF32
problems ("tf32": true): the index and manifest checks, the tolerance, and cuBLAS
run with allow_tf32 (a fake torch). compile_sweep.py's --tf32 and --tma-store modes:
bench/test_compile_sweep.py; the driver and its worker restarts:
bench/test_sweep_driver.py. The sweep folders they write: bench/sweep_fixtures.py.

    python3 bench/test_run_sweep.py        (CTest: bench-sweep-unit)
"""
import json
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import kopt_suite as ks  # noqa: E402
import run_sweep as rs  # noqa: E402
import sweep_index as si  # noqa: E402
import sweep_record as sr  # noqa: E402
import sweep_worker as sw  # noqa: E402
from sweep_fixtures import PTX, SCHED, cpp, gemm, kentry, make_dir, manifest  # noqa: E402
from testutil import TempDir, assert_all_in, quiet  # noqa: E402

class IndexChecks(unittest.TestCase):
    def good(self):
        return {"kopt_sweep_version": 1, "problems": [
            gemm("p1", kernels=[{"file": "p/k.ptx", "manifest": "p/k.json",
                                 "schedule": {}, "tags": ["default"]}])]}

    def test_good(self):
        self.assertEqual(si.check_index(self.good()), [])

    def test_errors(self):
        cases = [
            (lambda x: x.update(kopt_sweep_version=2), "kopt_sweep_version"),
            (lambda x: x.update(problems=[]), "no problems"),
            (lambda x: x["problems"][0].update(m=0), "m must be"),
            (lambda x: x["problems"][0].update(k=True), "k must be"),
            (lambda x: x["problems"][0].update(dtype="f64"), "dtype must be"),
            (lambda x: x["problems"][0].update(id="a b"), "bad id"),
            (lambda x: x["problems"][0].update(transpose_b="yes"), "transpose_b"),
            (lambda x: x["problems"].append(dict(x["problems"][0])), "duplicate id"),
            (lambda x: x["problems"][0]["kernels"][0].update(file="/abs.ptx"), "relative"),
            (lambda x: x["problems"][0]["kernels"][0].update(manifest="../k.json"), "relative"),
            (lambda x: x["problems"][0]["kernels"][0].update(tags="sweep"), "tags"),
            (lambda x: x["problems"][0].update(kernels=None), "kernels must be"),
        ]
        for change, want in cases:
            idx = json.loads(json.dumps(self.good()))
            change(idx)
            errs = si.check_index(idx)
            self.assertTrue(any(want in e for e in errs), (want, errs))

    def test_select(self):
        ps = [{"id": x} for x in ("llama_a", "llama_b", "random_000", "random_001")]
        self.assertEqual([p["id"] for p in si.select(ps, [])], [p["id"] for p in ps])
        self.assertEqual([p["id"] for p in si.select(ps, ["random_*"])],
                         ["random_000", "random_001"])
        self.assertEqual([p["id"] for p in si.select(ps, ["llama_b,llama_a"])],
                         ["llama_a", "llama_b"])
        with self.assertRaises(si.SweepError):
            si.select(ps, ["nope"])

    def test_order_and_shapes(self):
        p = si.normalize_problem(gemm("x", m=3, n=5, k=7, tb=True, kernels=[
            {"file": "a", "manifest": "a", "tags": ["sweep"]},
            {"file": "b", "manifest": "b", "tags": ["random"]},
            {"file": "c", "manifest": "c", "tags": ["sweep", "default"]}]))
        self.assertEqual(si.kernel_order(p), [2, 0, 1])
        self.assertEqual(si.operand_shapes(p), ([3, 7], [5, 7], [3, 5]))
        p["transpose_a"], p["transpose_b"] = True, False
        self.assertEqual(si.operand_shapes(p), ([7, 3], [7, 5], [3, 5]))
        self.assertEqual(si.problem_flops(p), 2 * 3 * 5 * 7)
        self.assertEqual(si.problem_seed(1, "x"), si.problem_seed(1, "x"))
        self.assertNotEqual(si.problem_seed(1, "x"), si.problem_seed(1, "y"))

    def test_tolerance(self):
        self.assertEqual(si.problem_tolerance(gemm("x", dtype="bf16")), 1e-2)
        self.assertEqual(si.problem_tolerance(gemm("x", dtype="f16", out_dtype="f32")), 1e-5)
        self.assertEqual(si.problem_tolerance(gemm("x", tolerance=0.5)), 0.5)


class ManifestChecks(unittest.TestCase):
    def setUp(self):
        self.p = si.normalize_problem(gemm("x", m=64, n=128, k=256, tb=True, kernels=[]))
        self.k = {"file": "p/k.ptx", "manifest": "p/k.json", "schedule": SCHED,
                  "tags": ["sweep"]}

    def check(self, m, ptx=PTX, k=None):
        return si.check_kernel_manifest(self.p, k or self.k, m, ptx)

    def test_good(self):
        err, warns = self.check(manifest(self.p, ptx="k.ptx", schedule=SCHED))
        self.assertIsNone(err)
        self.assertEqual(warns, [])

    def test_errors(self):
        def two(m):
            m["kernels"].append(dict(m["kernels"][0], name="matmul_1"))

        def param(i, **kw):
            return lambda m: m["kernels"][0]["params"][i].update(kw)
        cases = [
            (lambda m: m.update(kopt_manifest_version=1), "version 2"),
            (two, "2 kernels, not 1"),
            (lambda m: (m["kernels"][0]["ops"][0].update(op="softmax"),
                        m["kernels"][0].update(**{"class": "row"})), "op softmax has no operand 'a'"),
            (lambda m: m["kernels"][0]["ops"][0]["attrs"].update(transpose_b=False),
             "transpose_b=false"),
            (lambda m: m["kernels"][0]["params"].pop(), "no parameter or value named 'result'"),
            # The C++ reader's checks of the matmul's parameters...
            (param(0, shape=[256, 64]), "contraction sizes differ"),
            (param(1, dtype="f16"), "must have the same dtype"),
            (param(2, role="input"), "'result' is an input parameter"),
            (param(0, name="x"), "no parameter or value named 'a'"),
            # ... then the sweep's: a valid manifest of another problem.
            (lambda m: m.update(manifest(dict(self.p, m=32), schedule=dict(SCHED))),
             "parameter a is input bf16 [32, 256], expected a input bf16 [64, 256]"),
            (lambda m: m["kernels"][0].update(grid=[1, 1]), "grid"),
            (lambda m: m["kernels"][0].update(block=[2048, 1, 1]), "block[0]: value 2048 out of"),
            (lambda m: m["kernels"][0].update(grid=[1, 70000, 1]), "grid[1]: value 70000 out of"),
            (lambda m: m["kernels"][0].update(dynamic_shared_bytes=300 * 1024),
             "dynamic_shared_bytes"),
            (lambda m: (m["kernels"][0].update(name="matmul_7"),
                        m["functions"][0]["launches"][0].update(kernel="matmul_7")),
             "not an .entry"),
            (lambda m: m["kernels"][0]["schedule"].update(block_m=64), "block_m (64 vs 128)"),
        ]
        for change, want in cases:
            m = manifest(self.p, ptx="k.ptx", schedule=dict(SCHED))
            change(m)
            err, _ = self.check(m)
            self.assertIsNotNone(err, want)
            self.assertIn(want, err)

    def test_large_smem_and_warnings(self):
        m = manifest(self.p, ptx="other.ptx", smem=200 * 1024)
        err, warns = self.check(m, k=dict(self.k, tags=["sweep", "odd"]))
        self.assertIsNone(err)
        self.assertTrue(any("other.ptx" in w for w in warns), warns)
        self.assertTrue(any("odd" in w for w in warns), warns)

    def test_tensor_maps(self):
        """A copy = tma kernel: tensor_maps for a and b are accepted (they are not
        parameters); malformed ones are rejected naming the field."""
        def tma(m, **change):
            m["kernels"][0]["schedule"]["copy"] = "tma"
            # (A has 64 rows, fewer than block_m: boxes of 64 rows.)
            m["kernels"][0]["tensor_maps"] = [
                {"tensor": "a", "box": [64, 64], "swizzle": 128},
                {"tensor": "b", "box": [64, 128], "swizzle": 128}]
            m["kernels"][0]["tensor_maps"][1].update(change)
            return m
        k = dict(self.k, schedule=dict(SCHED, copy="tma"))
        err, _ = self.check(tma(manifest(self.p, ptx="k.ptx", schedule=dict(SCHED))), k=k)
        self.assertIsNone(err)
        for change, want in (({"tensor": "result"}, "kernels[0].tensor_maps[1].tensor: "
                                                     "'result' is not an input parameter of "
                                                     "the kernel"),
                             ({"box": [64, 512]}, "kernels[0].tensor_maps[1].box[1]: 512 is "
                                                  "out of range (1 to 256)"),
                             ({"swizzle": 48}, "kernels[0].tensor_maps[1].swizzle: 48 is not")):
            m = tma(manifest(self.p, ptx="k.ptx", schedule=dict(SCHED)), **change)
            err, _ = self.check(m, k=k)
            self.assertIsNotNone(err, want)
            self.assertIn(cpp(want), err)

    def test_tensor_maps_follow_the_schedule(self):
        """The maps a copy = tma kernel takes: exactly a's and b's, boxes of 128 bytes
        x the block tile, swizzle 128; none with another copy (docs/manifest.md)."""
        tma_sched = dict(SCHED, copy="tma", block_m=64, block_n=128)
        k = dict(self.k, schedule=tma_sched)

        def tma(change=None):
            m = manifest(self.p, ptx="k.ptx", schedule=dict(tma_sched))
            m["kernels"][0]["tensor_maps"] = [
                {"tensor": "a", "box": [64, 64], "swizzle": 128},
                {"tensor": "b", "box": [64, 128], "swizzle": 128}]
            if change:
                change(m["kernels"][0])
            return m
        self.assertIsNone(self.check(tma(), k=k)[0])
        # a and b one buffer: kopt-opt names b for both maps (same K).
        self.assertIsNone(self.check(tma(lambda kk: kk["tensor_maps"][0].update(tensor="b")),
                                     k=k)[0])
        for change, want in (
                (lambda kk: kk.pop("tensor_maps"),
                 "kernels[0].tensor_maps: schedule.copy is 'tma', which takes 2 tensor maps "
                 "(of 'a', then 'b'), got 0"),
                (lambda kk: kk["tensor_maps"].pop(), "got 1"),
                (lambda kk: kk["tensor_maps"][0].update(box=[64, 128]),
                 "kernels[0].tensor_maps[0].box[1]: 128, but schedule.block_m is 64"),
                (lambda kk: kk["tensor_maps"].reverse(),
                 "kernels[0].tensor_maps[0].box[1]: 128, but schedule.block_m is 64"),
                (lambda kk: kk["tensor_maps"][1].update(box=[32, 128]),
                 "kernels[0].tensor_maps[1].box[0]: 32, but copy = tma reads rows of 128 "
                 "bytes: 128 / sizeof(bf16) is 64"),
                (lambda kk: kk.update(tensor_maps=None),
                 "kernels[0].tensor_maps: must be an array, got null")):
            err, _ = self.check(tma(change), k=k)
            self.assertIsNotNone(err, want)
            self.assertTrue(err.startswith(cpp("kernels[0].tensor_maps")), err)
            self.assertIn(cpp(want) if want.startswith("kernels") else want, err)
        # Maps on a cp_async kernel.
        m = manifest(self.p, ptx="k.ptx", schedule=dict(SCHED))
        m["kernels"][0]["tensor_maps"] = tma()["kernels"][0]["tensor_maps"]
        self.assertEqual(self.check(m)[0], cpp("kernels[0].tensor_maps: schedule.copy "
                                               "is 'cp_async', which takes no tensor maps, "
                                               "got 2"))

    def test_tma_store(self):
        """tma_store = true: the output's map, last (after a's and b's with copy = tma,
        alone with another copy): box [S / sizeof(C), min(block_m, M rounded up to
        8)], swizzle S, S the largest of 128, 64 and 32 bytes dividing block_n x
        sizeof(C) (docs/manifest.md)."""
        # block_n x sizeof(C) -> (box[0], swizzle) as kopt-opt writes them.
        spans = {(128, "bf16"): (64, 128), (128, "f32"): (32, 128),
                 (32, "bf16"): (32, 64), (16, "f32"): (16, 64),
                 (16, "bf16"): (16, 32), (8, "f32"): (8, 32)}

        def store(copy="tma", m=64, out_dtype="bf16", block_n=128, change=None):
            p = si.normalize_problem(gemm("x", m=m, n=128, k=256, out_dtype=out_dtype,
                                          kernels=[]))
            sched = dict(SCHED, instruction="wgmma", copy=copy, block_m=128,
                         block_n=block_n, vector_width=8, tma_store=True)
            mf = manifest(p, ptx="k.ptx", schedule=dict(sched))
            rows = (m + 7) // 8 * 8
            maps = [{"tensor": "a", "box": [64, min(128, rows)], "swizzle": 128},
                    {"tensor": "b", "box": [64, block_n], "swizzle": 128}] \
                if copy == "tma" else []
            columns, swizzle = spans.get((block_n, out_dtype), (8, 32))
            maps.append({"tensor": "result", "box": [columns, min(128, rows)],
                         "swizzle": swizzle})
            mf["kernels"][0]["tensor_maps"] = maps
            if change:
                change(mf["kernels"][0])
            return si.check_kernel_manifest(p, dict(self.k, schedule=sched), mf, PTX)[0]
        for copy in ("tma", "cp_async"):
            for m in (64, 13, 300):
                for (bn, odt) in spans:
                    self.assertIsNone(store(copy, m, odt, bn), (copy, m, bn, odt))
        ws = {"name": "workspace", "role": "workspace", "dtype": "f32", "shape": [1 << 16]}
        for args, change, want in (
                (("tma",), lambda kk: kk["tensor_maps"].pop(),
                 "kernels[0].tensor_maps: schedule.copy is 'tma' and schedule.tma_store is "
                 "true, which take 3 tensor maps (of 'a', 'b', then the output), got 2"),
                (("cp_async",), lambda kk: kk.pop("tensor_maps"),
                 "kernels[0].tensor_maps: schedule.copy is 'cp_async' and schedule.tma_store "
                 "is true, which take 1 tensor map (of the output), got 0"),
                (("tma",), lambda kk: kk["tensor_maps"][2].update(tensor="a"),
                 "kernels[0].tensor_maps[2].tensor: 'a' is not an output parameter of the "
                 "kernel (with tma_store the last map writes the output)"),
                (("cp_async", 64, "f32"), lambda kk: kk["tensor_maps"][0].update(box=[8, 64]),
                 "kernels[0].tensor_maps[0].box[0]: 8, but with schedule.block_n x "
                 "sizeof(f32) = 128 x 4 = 512 bytes tma_store writes rows of 128 bytes: "
                 "32 elements"),
                (("tma", 64, "bf16", 32),
                 lambda kk: kk["tensor_maps"][2].update(box=[64, 64], swizzle=128),
                 "kernels[0].tensor_maps[2].box[0]: 64, but with schedule.block_n x "
                 "sizeof(bf16) = 32 x 2 = 64 bytes tma_store writes rows of 64 bytes: "
                 "32 elements"),
                (("cp_async", 64, "bf16", 16),
                 lambda kk: kk["tensor_maps"][0].update(box=[8, 64]),
                 "kernels[0].tensor_maps[0].box[0]: 8, but with schedule.block_n x "
                 "sizeof(bf16) = 16 x 2 = 32 bytes tma_store writes rows of 32 bytes: "
                 "16 elements"),
                # block_n 8 of bf16: 16 bytes, no box of 32 to 128 bytes fits.
                (("tma", 64, "bf16", 8), None,
                 "kernels[0].tensor_maps[2]: schedule.block_n x sizeof(bf16) = 8 x 2 = 16 "
                 "bytes is not a multiple of 32 (tma_store stores boxes of 32 to 128 bytes "
                 "of columns)"),
                (("tma", 13), lambda kk: kk["tensor_maps"][2].update(box=[64, 13]),
                 "kernels[0].tensor_maps[2].box[1]: 13, but schedule.block_m is 128 and M 13: "
                 "the boxes have min(block_m, M rounded up to 8) = 16 rows"),
                (("tma",), lambda kk: kk["tensor_maps"][2].update(swizzle=0),
                 "kernels[0].tensor_maps[2].swizzle: 0, but the tma_store map's rows of 128 "
                 "bytes use swizzle 128"),
                (("cp_async", 64, "bf16", 16), lambda kk: kk["tensor_maps"][0].update(swizzle=64),
                 "kernels[0].tensor_maps[0].swizzle: 64, but the tma_store map's rows of 32 "
                 "bytes use swizzle 32"),
                (("tma",), lambda kk: kk["schedule"].update(tma_store="true"),
                 "kernels[0].schedule.tma_store: must be a boolean, got a string"),
                (("cp_async",), lambda kk: (kk["params"].append(ws),
                                            kk["tensor_maps"][0].update(tensor="workspace")),
                 "kernels[0].tensor_maps[0].tensor: parameter 'workspace' has role "
                 "'workspace'; a tensor map reads an input or writes an output parameter")):
            err = store(*args, change=change)
            self.assertEqual(err, cpp(want))

    def test_transposed_a(self):
        p = si.normalize_problem(dict(gemm("y", m=8, n=16, k=32, dtype="f16", out_dtype="f32",
                                           tb=False, kernels=[]), transpose_a=True))
        m = manifest(p, ptx="k.ptx")
        self.assertEqual(m["kernels"][0]["params"][0]["shape"], [32, 8])
        self.assertIsNone(si.check_kernel_manifest(p, self.k, m, PTX)[0])


class DryRun(TempDir):
    def problems(self):
        return [gemm("llama_gate", m=64, n=128, k=256, kernels=[
                    {"tags": ["default"]}, {"tags": ["sweep"]},
                    {"tags": ["sweep"], "schedule": dict(SCHED, block_m=64)}]),
                gemm("random_000", m=7, n=33, k=5, dtype="f16", out_dtype="f32",
                     kernels=[{"tags": ["random"]}])]

    def test_ok(self):
        make_dir(self.tmp, self.problems())
        rc, out = quiet(rs.main, ["--sweep-dir", self.tmp, "--dry-run"])
        self.assertEqual(rc, 0, out)
        self.assertIn("2 problems, 4 kernels, 0 kernels with errors", out)
        rc, out = quiet(rs.main, ["--sweep-dir", self.tmp, "--dry-run", "--only", "random_*"])
        self.assertEqual(rc, 0, out)
        self.assertIn("1 problems, 1 kernels", out)

    def test_tensor_maps(self):
        ps = self.problems()[:1]
        tma = dict(SCHED, copy="tma")
        for k in ps[0]["kernels"][:2]:
            k["schedule"] = tma
        good = manifest(si.normalize_problem(ps[0]), ptx="k000.ptx", schedule=tma)
        # (A has 64 rows, fewer than block_m: boxes of 64 rows.)
        good["kernels"][0]["tensor_maps"] = [{"tensor": "a", "box": [64, 64], "swizzle": 128},
                                             {"tensor": "b", "box": [64, 128], "swizzle": 128}]
        bad = json.loads(json.dumps(good))
        bad["kernels"][0]["tensor_maps"][0]["tensor"] = "w"
        bad["ptx"] = "k001.ptx"
        ps[0]["kernels"][0]["_manifest"] = good
        ps[0]["kernels"][1]["_manifest"] = bad
        make_dir(self.tmp, ps)
        rc, out = quiet(rs.main, ["--sweep-dir", self.tmp, "--dry-run"])
        self.assertEqual(rc, 1, out)
        self.assertIn("1 problems, 3 kernels, 1 kernels with errors", out)
        self.assertIn("p000/k001.ptx: " + cpp("kernels[0].tensor_maps[0].tensor: no parameter "
                                              "named 'w' (the kernel's parameters are a, b, "
                                              "result)", "p000/k001.json"), out)

    def test_broken_files(self):
        ps = self.problems()
        bad = manifest(si.normalize_problem(ps[0]), ptx="k001.ptx")
        bad["kernels"][0]["params"][2]["dtype"] = "f32"
        ps[0]["kernels"][1]["_manifest"] = bad
        ps[0]["kernels"][2]["_ptx"] = ".visible .entry other_0(\n)"
        make_dir(self.tmp, ps)
        os.remove(os.path.join(self.tmp, "p001", "k000.ptx"))
        rc, out = quiet(rs.main, ["--sweep-dir", self.tmp, "--dry-run"])
        self.assertEqual(rc, 1, out)
        assert_all_in(self, out, [
            "3 kernels with errors",
            "kernel parameter 'result' is f32",
            "not an .entry",
            "No such file",
        ])

    def test_usage_errors(self):
        rc, out = quiet(rs.main, ["--sweep-dir", self.tmp, "--dry-run"])
        self.assertEqual(rc, 2, out)  # no index.json
        make_dir(self.tmp, self.problems())
        rc, out = quiet(rs.main, ["--sweep-dir", self.tmp, "--dry-run", "--only", "nope"])
        self.assertEqual(rc, 2, out)
        with open(os.path.join(self.tmp, "index.json"), "w") as f:
            json.dump({"kopt_sweep_version": 1, "problems": [{"id": "x"}]}, f)
        rc, out = quiet(rs.main, ["--sweep-dir", self.tmp, "--dry-run"])
        self.assertEqual(rc, 2, out)
        self.assertIn("m must be a positive integer", out)


class Record(unittest.TestCase):
    def record(self):
        p1 = si.normalize_problem(gemm("gate", m=4096, n=14336, k=4096, kernels=[
            kentry("p0/k0.ptx", ["default"]), kentry("p0/k1.ptx", ["sweep"], block_m=256),
            kentry("p0/k2.ptx", ["sweep"], block_k=64), kentry("p0/k3.ptx", ["sweep"]),
            kentry("p0/k4.ptx", ["sweep"]), kentry("p0/k5.ptx", ["sweep"])]))
        p2 = si.normalize_problem(gemm("random_000", m=7, n=33, k=5, kernels=[
            kentry("p1/k0.ptx", ["random"])]))
        p3 = si.normalize_problem(gemm("random_001", m=7, n=33, k=5, kernels=[
            kentry("p2/k0.ptx", ["random"])]))
        results = {
            "gate": {"seed": 5, "tolerance": 0.01, "cublas": {"ms": 1.0, "rel_err": 1e-3},
                     "kernels": {
                         0: {"status": "ok", "correct": True, "rel_err": 2e-3, "ms": 2.0,
                             "registers": 128, "local_bytes": 0, "time": {"median_ms": 2.0}},
                         1: {"status": "ok", "correct": True, "rel_err": 2e-3, "ms": 0.8},
                         2: {"status": "incorrect", "correct": False, "rel_err": 0.7,
                             "check": {"special_mismatch": 12, "first_special_index": 3}},
                         3: {"status": "error", "error": "launch: CUDA_ERROR_LAUNCH_FAILED"},
                         4: {"status": "timeout", "error": "worker killed"}}},
            "random_000": {"cublas": {"ms": 0.01}, "kernels": {
                0: {"status": "ok", "correct": True, "rel_err": 1e-3, "ms": 0.02}}},
            "random_001": {"error": "worker died in the problem's setup", "kernels": {
                0: {"status": "not-run", "error": "setup failed"}}},
        }
        meta = {"date": "2026-11-30", "wall_s": 12.0, "command": "bench/run_sweep.py ...",
                "sweep_dir": "/x", "method": {"runs": 30, "min_runs": 10, "warmup": 10,
                                              "time_budget_s": 1.0, "l2_flush_bytes": 256 << 20,
                                              "inputs": rs.INPUTS, "tolerance": {"bf16": 1e-2}}}
        env = {"device": {"name": "NVIDIA H200", "driver": "580"},
               "software": {"torch": "2.11", "cupy": "13.6", "cuda_torch": "13.0"},
               "loader": "cupy.RawModule", "loader_errors": [], "sleep_cycles": 1000}
        index = {"kopt_sweep_version": 1, "chip": "sm_90a", "commit": "abc"}
        return sr.build_record(index, [p1, p2, p3], results, env, meta)

    def test_kernels(self):
        r = self.record()
        ks_ = r["problems"][0]["kernels"]
        self.assertAlmostEqual(ks_[0]["ratio_to_cublas"], 0.5)
        self.assertAlmostEqual(ks_[1]["ratio_to_cublas"], 1.25)
        self.assertAlmostEqual(ks_[1]["tflops"], 2 * 4096 * 14336 * 4096 / 0.8e-3 / 1e12)
        self.assertEqual(ks_[0]["registers"], 128)
        self.assertEqual(ks_[0]["compile"], {"registers": 100})
        self.assertEqual(ks_[0]["schedule"]["block_m"], 128)
        self.assertEqual(ks_[2]["correct"], False)
        self.assertIsNone(ks_[2]["ms"])
        self.assertIsNone(ks_[3]["correct"])
        self.assertEqual(ks_[5]["status"], "skipped")  # no result: not reached
        self.assertAlmostEqual(r["problems"][0]["cublas"]["tflops"],
                               2 * 4096 * 14336 * 4096 / 1e-3 / 1e12)

    def test_summaries(self):
        r = self.record()
        s = r["problems"][0]["summary"]
        self.assertEqual((s["kernels"], s["correct"], s["incorrect"], s["failed"], s["skipped"]),
                         (6, 2, 1, 2, 1))
        self.assertEqual(s["best"]["file"], "p0/k1.ptx")
        self.assertEqual(s["default"]["file"], "p0/k0.ptx")
        self.assertAlmostEqual(s["default"]["slowdown_vs_best"], 2.5)
        self.assertFalse(s["default"]["is_best"])
        t = r["summary"]
        self.assertEqual(t["kernels"], 8)
        self.assertEqual(t["problems_with_error"], 1)
        self.assertEqual(t["tags"]["random"], {"kernels": 2, "ran": 1, "correct": 1,
                                               "incorrect": 0, "failed": 1, "skipped": 0})
        # Random samples do not count in the sweep's aggregates.
        self.assertEqual(t["sweep_problems"], 1)
        self.assertAlmostEqual(t["geomean_best_ratio_to_cublas"]["value"], 1.25)
        self.assertEqual(t["geomean_best_ratio_to_cublas"]["problems"], 1)
        self.assertAlmostEqual(t["geomean_default_ratio_to_cublas"]["value"], 0.5)
        self.assertEqual(sr.exit_code(r), 1)

    def test_exit_code_clean(self):
        p = si.normalize_problem(gemm("a", kernels=[kentry("k.ptx", ["default"]),
                                                    kentry("l.ptx", ["sweep"])]))
        r = sr.build_record({}, [p], {"a": {"cublas": {"ms": 1.0}, "kernels": {
            0: {"status": "ok", "ms": 1.0}, 1: {"status": "skipped", "error": "past"}}}},
            None, {})
        self.assertEqual(sr.exit_code(r), 0)
        self.assertTrue(r["problems"][0]["summary"]["default"]["is_best"])
        sr.markdown(r)  # no device, no method: still renders

    def test_markdown(self):
        md = sr.markdown(self.record())
        assert_all_in(self, md, [
            "# kopt matmul schedule sweep: NVIDIA H200",
            "| 1 | gate | 4096 x 14336 x 4096 B^T | bf16 | 1 |",
            "| 1.250 | 2 | 0.500 | 2.500 | 2 | 1 | 2 | 1 |",
            "bm=256",
            "| random | 2 | 1 | 1 | 0 | 1 | 0 |",
            "`random` kernels: 1 of 2 ran, 1 correct",
            "CUDA_ERROR_LAUNCH_FAILED",
            "| incorrect | 0.7 | mma_sync cp_async bm=128 bn=128 bk=64",
            "12 NaN/Inf where the reference is finite (first at flat index 3) |",
            "problem random_001: worker died",
        ])
        self.assertNotIn("| 2 | random_000", md)  # random problems are not sweep rows

    def test_fmt_schedule(self):
        self.assertEqual(sr.fmt_schedule(SCHED),
                         "mma_sync cp_async bm=128 bn=128 bk=32 wm=64 wn=32 warps=8 st=2 "
                         "splitk=1 sw=1 vec=1")
        self.assertEqual(sr.fmt_schedule({}), "-")
        self.assertEqual(sr.fmt_schedule({"x": [1, 2], "persistent": True}),
                         "persistent=True x=[1, 2]")
        wg = dict(SCHED, instruction="wgmma", copy="tma", warp_specialize=True)
        self.assertEqual(sr.fmt_schedule(dict(wg, tma_store=True)),
                         "wgmma tma bm=128 bn=128 bk=32 wm=64 wn=32 warps=8 st=2 splitk=1 "
                         "sw=1 vec=1 ws=True ts=True")
        self.assertEqual(sr.fmt_schedule(dict(wg, tma_store=False)), sr.fmt_schedule(wg))


# ======================================================================= TF32


class Tf32Checks(unittest.TestCase):
    def test_index(self):
        good = {"kopt_sweep_version": 1, "problems": [
            gemm("p_tf32", dtype="f32", tf32=True, kernels=[])]}
        self.assertEqual(si.check_index(good), [])
        self.assertIs(si.normalize_problem(good["problems"][0])["tf32"], True)
        self.assertIs(si.normalize_problem(gemm("q", kernels=[]))["tf32"], False)
        for change, want in ((dict(tf32="yes"), "tf32 must be a boolean"),
                             (dict(dtype="bf16"), "tf32 needs f32 operands, got 'bf16'")):
            bad = json.loads(json.dumps(good))
            bad["problems"][0].update(change)
            errs = si.check_index(bad)
            self.assertTrue(any(want in e for e in errs), (want, errs))

    def test_manifest(self):
        k = {"file": "p/k.ptx", "manifest": "p/k.json", "schedule": SCHED, "tags": ["tf32"]}
        p = si.normalize_problem(gemm("x_tf32", dtype="f32", tf32=True, kernels=[]))
        m = manifest(p, ptx="k.ptx", schedule=SCHED)
        self.assertEqual(m["kernels"][0]["ops"][0]["attrs"]["tf32"], True)
        self.assertEqual(si.check_kernel_manifest(p, k, m, PTX), (None, []))
        # A kernel built without tf32 for a tf32 problem, and the reverse.
        del m["kernels"][0]["ops"][0]["attrs"]["tf32"]
        err, _ = si.check_kernel_manifest(p, k, m, PTX)
        self.assertIn("tf32 is False, the problem's True", err)
        q = si.normalize_problem(gemm("x", dtype="f32", kernels=[]))
        m = manifest(q, ptx="k.ptx", schedule=SCHED)
        m["kernels"][0]["ops"][0]["attrs"]["tf32"] = True
        err, _ = si.check_kernel_manifest(q, k, m, PTX)
        self.assertIn("tf32 is True, the problem's False", err)

    def test_tolerance(self):
        # TF32 operands have f16's 10-bit mantissa: f16's tolerance, not f32's.
        self.assertEqual(si.problem_tolerance(gemm("x", dtype="f32", tf32=True)), 2e-3)
        self.assertEqual(si.problem_tolerance(gemm("x", dtype="f32")), 1e-5)
        self.assertEqual(si.problem_tolerance(gemm("x", dtype="f32", tf32=True,
                                                   tolerance=1e-3)), 1e-3)

    def test_record_and_markdown(self):
        p = si.normalize_problem(gemm("x_tf32", m=512, n=6144, k=4096, dtype="f32", tf32=True,
                                      kernels=[kentry("p0/k0.ptx", ["default"])]))
        q = si.normalize_problem(gemm("y", dtype="f32", kernels=[kentry("p1/k0.ptx",
                                                                        ["default"])]))
        r = sr.build_record({}, [p, q], {"x_tf32": {"cublas": {"ms": 1.0}, "kernels": {
            0: {"status": "ok", "ms": 2.0}}}}, None,
            {"method": {"tf32": True, "tolerance": ks.TOLERANCE,
                        "tf32_tolerance": ks.TF32_TOLERANCE}})
        self.assertIs(r["problems"][0]["tf32"], True)
        self.assertIs(r["problems"][1]["tf32"], False)
        self.assertEqual(r["problems"][0]["dtype_tolerance"], 2e-3)
        md = sr.markdown(r)
        assert_all_in(self, md, [
            "| 1 | x_tf32 | 512 x 6144 x 4096 B^T | f32 tf32 |",
            "| 2 | y | 64 x 128 x 256 B^T | f32 |",
            "Problems marked tf32 allow TF32: cuBLAS with allow_tf32 = True, "
            "tolerance at least 0.002.",
        ])


class FakeT:
    """A tensor of the fake torch below: every operation returns itself."""
    mT = property(lambda self: self)

    def to(self, *a, **kw):
        return self

    def clone(self):
        return self


class FakeMatmulTorch:
    """Just what SweepWorker.setup_problem calls; torch.matmul records whether
    allow_tf32 was on."""
    float64 = "float64"

    def __init__(self):
        self.backends = type("B", (), {})()
        self.backends.cuda = type("C", (), {})()
        self.backends.cuda.matmul = type("M", (), {"allow_tf32": False})()
        self.cuda = type("D", (), {"synchronize": staticmethod(lambda: None)})()
        self.calls = []

    def Generator(self, device):
        return type("G", (), {"manual_seed": lambda self, s: None})()

    def empty(self, shape, dtype=None, device=None):
        return FakeT()

    def matmul(self, a, b, out=None):
        self.calls.append(self.backends.cuda.matmul.allow_tf32)
        return out or FakeT()


class Tf32Worker(sw.SweepWorker):
    def __init__(self):
        self.torch = FakeMatmulTorch()
        self.o = {"seed": 1}
        self.dt = {"f32": "float32", "f16": "float16", "bf16": "bfloat16"}

    def make_input(self, x, gen):
        return FakeT()

    def compare(self, out, ref, tol):
        return {"rel_err": 3e-4, "passed": 3e-4 <= tol, "special_mismatch": 0}

    def time_fn(self, fn):
        fn()
        return {"median_ms": 1.0}


class Tf32Cublas(unittest.TestCase):
    def test_cublas_with_allow_tf32(self):
        w = Tf32Worker()
        p = si.normalize_problem(gemm("x_tf32", dtype="f32", tf32=True, kernels=[]))
        state, info = w.setup_problem(p, None)
        # The float64 reference without TF32; cuBLAS's check and timed call with it.
        self.assertEqual(w.torch.calls, [False, True, True])
        self.assertFalse(w.torch.backends.cuda.matmul.allow_tf32)  # restored
        cub = info["cublas"]
        self.assertEqual(cub["impl"], "torch.matmul(a, b.mT, out=c) with allow_tf32 = True")
        self.assertTrue(cub["check_passed"])
        self.assertEqual(info["dtype_tolerance"], 2e-3)
        self.assertEqual(info["tolerance"], 2e-3)  # above 4 x cuBLAS's 3e-4
        # Without tf32 cuBLAS stays exact f32.
        w = Tf32Worker()
        p = si.normalize_problem(gemm("x", dtype="f32", kernels=[]))
        state, info = w.setup_problem(p, None)
        self.assertEqual(w.torch.calls, [False, False, False])
        self.assertEqual(info["cublas"]["impl"], "torch.matmul(a, b.mT, out=c)")
        self.assertEqual(info["dtype_tolerance"], 1e-5)

    def test_context_restores(self):
        w = Tf32Worker()
        m = w.torch.backends.cuda.matmul
        with w.tf32(True):
            self.assertTrue(m.allow_tf32)
            with w.tf32(False):
                self.assertFalse(m.allow_tf32)
            self.assertTrue(m.allow_tf32)
        self.assertFalse(m.allow_tf32)
        with self.assertRaises(RuntimeError):
            with w.tf32(True):
                raise RuntimeError("boom")
        self.assertFalse(m.allow_tf32)


if __name__ == "__main__":
    unittest.main()
