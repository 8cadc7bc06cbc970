#!/usr/bin/env python3
"""Unit tests of the schedule-sweep runner's GPU-free parts (bench/run_sweep.py):
the index and manifest checks (kopt's C++ reader through the package, TMA tensor
maps against the schedule included, then the sweep's own), --dry-run, the record,
the summaries and sweep.md, and the driver (worker restarts after a crash, a sticky
CUDA error or a hang; the deadline) with a fake worker that needs no torch and no
GPU. TMA stores (tma_store = true: a map of the output): the manifest check,
compile_sweep.py's --tma-store mode (with fake tools) and --dry-run on it. (The
launch through the package: bench/test_package_launch.py.) TF32 problems ("tf32": true):
bench/compile_sweep.py's kopt text, ids, kopt-space flags, tf32_candidates() and
its --tf32 mode (with fake kopt-space, kopt-opt and ptxas), the index and manifest
checks, the tolerance, and cuBLAS run with allow_tf32 (a fake torch).

    python3 bench/test_run_sweep.py        (CTest: bench-sweep-unit)

Run with --fake-worker PLAN, this file is the fake worker the driver tests start.
"""
import contextlib
import io
import json
import os
import shutil
import signal
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import compile_sweep as cs  # noqa: E402
import kopt_suite as ks  # noqa: E402
import run_sweep as rs  # noqa: E402
import sweep_candidates as cands_mod  # noqa: E402
import sweep_index as si  # noqa: E402
import sweep_record as sr  # noqa: E402
import sweep_worker as sw  # noqa: E402
import worker_process  # noqa: E402
from testutil import assert_all_in  # noqa: E402

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


def quiet(fn, *a, **kw):
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        r = fn(*a, **kw)
    return r, buf.getvalue()


class TempDir(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="kopt-sweep-test-")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def tool(self, name, text):
        """Writes an executable `name` (a fake tool) holding `text`; its path."""
        path = os.path.join(self.tmp, name)
        with open(path, "w") as f:
            f.write(text)
        os.chmod(path, 0o755)
        return path


# ======================================================================= checks

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


def kentry(file, tags, **sched):
    return {"file": file, "manifest": file.replace(".ptx", ".json"),
            "schedule": dict(SCHED, **sched), "tags": tags, "registers": 100}


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


# ======================================================================= the driver

class FakeWorker(sw.SweepWorker):
    """SweepWorker's loop with fake GPU work: each kernel's index entry says what
    happens ("fake": "ok:MS", "incorrect", "error", "sticky", "crash", "hang",
    "slow:S"); a problem with "fake_setup": "error" fails its setup."""

    def __init__(self, plan):
        if os.environ.get("KOPT_FAKE_FATAL"):
            raise RuntimeError("no CUDA device visible to PyTorch")
        self.plan, self.o = plan, plan["options"]
        self.sweep_dir = plan["sweep_dir"]
        self.events = open(plan["events"], "a")
        self.stuck = False

    def env(self):
        return {"device": {"name": "fake GPU"}, "software": {"torch": None, "cupy": None},
                "loader": "fake", "loader_errors": [], "sleep_cycles": 0}

    def setup_problem(self, p, known):
        if p.get("fake_setup") == "error":
            raise RuntimeError("setup failed")
        cub = known or {"ms": 1.0, "rel_err": 1e-3, "out_dtype": p["out_dtype"],
                        "worker_pid": os.getpid()}
        return {}, {"seed": si.problem_seed(self.o["seed"], p["id"]), "cublas": cub,
                    "tolerance": 0.01, "dtype_tolerance": 0.01}

    def release(self, state):
        pass

    def sticky(self):
        return self.stuck

    def run_kernel(self, p, state, kentry):
        what, _, arg = kentry.get("fake", "ok:1").partition(":")
        if what == "ok":
            return {"status": "ok", "correct": True, "rel_err": 1e-3, "ms": float(arg),
                    "worker_pid": os.getpid()}
        if what == "slow":
            time.sleep(float(arg))
            return {"status": "ok", "correct": True, "rel_err": 1e-3, "ms": 1.0}
        if what == "incorrect":
            return {"status": "incorrect", "correct": False, "rel_err": 0.9}
        if what == "error":
            return {"status": "error", "error": "load: CUDADriverError: CUDA_ERROR_INVALID_PTX"}
        if what == "sticky":
            self.stuck = True
            return {"status": "error", "error": "launch: CUDA_ERROR_ILLEGAL_ADDRESS",
                    "sticky_cuda_error": True}
        if what == "crash":
            print("fake worker: crashing", flush=True)
            os.kill(os.getpid(), signal.SIGSEGV)
        if what == "hang":
            time.sleep(120)
        raise ValueError(what)


def fake_cmd(plan_path):
    return [sys.executable, os.path.abspath(__file__), "--fake-worker", plan_path]


class Driver(TempDir):
    def run_sweep(self, problems, *extra):
        d = os.path.join(self.tmp, "sweep")
        out = os.path.join(self.tmp, "out")
        make_dir(d, problems)
        rc, text = quiet(rs.main, ["--sweep-dir", d, "--out", out] + list(extra),
                         worker_cmd=fake_cmd)
        with open(os.path.join(out, "sweep.json")) as f:
            record = json.load(f)
        return rc, record, out, text

    def test_failures_and_restarts(self):
        ps = [gemm("a", kernels=[{"tags": ["sweep"], "fake": "ok:2"},
                                 {"tags": ["sweep"], "fake": "sticky"},
                                 {"tags": ["default"], "fake": "ok:3"},
                                 {"tags": ["sweep"], "fake": "crash"},
                                 {"tags": ["sweep"], "fake": "incorrect"},
                                 {"tags": ["sweep"], "fake": "hang"},
                                 {"tags": ["sweep"], "fake": "error"},
                                 {"tags": ["sweep"], "fake": "ok:0.5"}]),
              gemm("b", fake_setup="error", kernels=[{"tags": ["default"]}]),
              gemm("c", kernels=[{"tags": ["random"], "fake": "ok:1"},
                                 {"tags": ["random"],
                                  "_ptx": ".visible .entry nope(\n)"}])]
        rc, r, out, text = self.run_sweep(ps, "--timeout", "2")
        self.assertEqual(rc, 1, text)
        self.assertEqual(sorted(os.listdir(out)), ["run.log", "sweep.json", "sweep.md"])
        a = r["problems"][0]
        st = [k["status"] for k in a["kernels"]]
        self.assertEqual(st, ["ok", "error", "ok", "crashed", "incorrect", "timeout", "error",
                              "ok"], text)
        self.assertTrue(a["kernels"][1]["sticky_cuda_error"])
        self.assertIn(f"signal {int(signal.SIGSEGV)}", a["kernels"][3]["error"])
        self.assertIn("no progress for 2 s", a["kernels"][5]["error"])
        # cuBLAS was timed once, by the first worker; the kernels after each restart
        # ran in new workers.
        pid0 = a["cublas"]["worker_pid"]
        self.assertEqual(a["kernels"][2]["worker_pid"], pid0)   # the default runs first
        self.assertEqual(a["kernels"][0]["worker_pid"], pid0)
        self.assertNotEqual(a["kernels"][7]["worker_pid"], pid0)
        self.assertEqual(a["summary"]["best"]["ms"], 0.5)
        self.assertAlmostEqual(a["summary"]["default"]["slowdown_vs_best"], 6.0)
        self.assertAlmostEqual(a["summary"]["default"]["ratio_to_cublas"], 1 / 3)
        b = r["problems"][1]
        self.assertIn("setup failed", b["error"])
        self.assertEqual(b["kernels"][0]["status"], "not-run")
        c = r["problems"][2]
        self.assertEqual([k["status"] for k in c["kernels"]], ["ok", "invalid"])
        self.assertEqual(r["device"]["name"], "fake GPU")
        self.assertEqual(r["summary"]["tags"]["random"]["correct"], 1)
        with open(os.path.join(out, "run.log")) as f:
            log = f.read()
        self.assertIn("fake worker: crashing", log)
        self.assertIn("starting a new worker", log)
        with open(os.path.join(out, "sweep.md")) as f:
            self.assertIn("CUDA_ERROR_ILLEGAL_ADDRESS", f.read())

    def test_clean_run_and_deadline(self):
        ps = [gemm("a", kernels=[{"tags": ["sweep"], "fake": "slow:0.4"}
                                 for _ in range(6)]),
              gemm("b", kernels=[{"tags": ["default"]}])]
        rc, r, out, text = self.run_sweep(ps, "--deadline", "1")
        self.assertEqual(rc, 0, text)   # skipped kernels do not fail the run
        st = [k["status"] for k in r["problems"][0]["kernels"]]
        self.assertIn("skipped", st)
        self.assertEqual(st[0], "ok")
        self.assertEqual(r["problems"][1]["kernels"][0]["status"], "skipped")
        self.assertEqual(r["problems"][1]["kernels"][0]["error"], "past --deadline")
        rc, r, out, text = self.run_sweep(ps[1:])
        self.assertEqual(rc, 0, text)
        self.assertEqual(r["summary"]["correct"], 1)

    def test_worker_cannot_start(self):
        os.environ["KOPT_FAKE_FATAL"] = "1"
        try:
            rc, r, out, text = self.run_sweep([gemm("a", kernels=[{"tags": ["sweep"]}])])
        finally:
            del os.environ["KOPT_FAKE_FATAL"]
        self.assertEqual(rc, 1)
        k = r["problems"][0]["kernels"][0]
        self.assertEqual(k["status"], "not-run")
        self.assertIn("no CUDA device", k["error"])


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--fake-worker":
        sys.exit(worker_process.worker_main(sys.argv[2], FakeWorker))
    unittest.main()
