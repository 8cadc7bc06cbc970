#!/usr/bin/env python3
"""Unit tests of the benchmark suite's GPU-free parts: the suite file, shape
inference, the generated kopt and PyTorch text, FLOPs/bytes, roofline and SOL
score, derived figures, aggregates, the manifest check, the TMA tensor maps of a
manifest kernel (encode arguments, launch order, malformed entries, the maps the
op and schedule call for, copy = tma's and tma_store's, checked against the C++
parser through kopt-run when it is built), the PTX parameter count's message and
the Markdown report.

    python3 bench/test_kopt_suite.py        (CTest: bench-suite-unit)
"""
import copy
import json
import math
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import compile_suite  # noqa: E402
import kopt_suite as ks  # noqa: E402
import report  # noqa: E402


def problem(inputs, graph, outputs, **extra):
    p = {"name": "t", "model": "m", "source": "s", "inputs": inputs, "graph": graph,
         "outputs": outputs}
    p.update(extra)
    return ks.check_problem(p)


class SuiteFile(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.suite = ks.load_suite()
        cls.problems = cls.suite["problems"]

    def test_size_and_fields(self):
        self.assertGreaterEqual(len(self.problems), 30)
        self.assertLessEqual(len(self.problems), 40)
        for p in self.problems:
            self.assertTrue(p["model"] and p["source"], p["name"])

    def test_coverage(self):
        """The families issue #3 asks for are all there."""
        gemm_dtypes, decode_m, prefill_m, ops = set(), set(), set(), set()
        for p in self.problems:
            for n in p["graph"]:
                ops.add(n["op"])
                if n["op"] == "matmul":
                    dt = p["values"][n["args"][0]]["dtype"]
                    gemm_dtypes.add(dt)
                    m = n["mnk"][0]
                    (decode_m if m <= 64 else prefill_m).add(m)
        self.assertEqual(gemm_dtypes, {"bf16", "f16", "f32"})
        self.assertTrue(decode_m and min(decode_m) == 1 and max(decode_m) == 64)
        self.assertIn(512, prefill_m)
        self.assertEqual(max(prefill_m), 8192)
        for op in ("add", "gelu", "silu", "mul", "rmsnorm", "layernorm", "softmax", "div",
                   "tanh", "sigmoid"):
            self.assertIn(op, ops)
        mnks = {tuple(n["mnk"][:3]) for p in self.problems for n in p["graph"]
                if n["op"] == "matmul"}
        self.assertIn((4097, 4095, 4093), mnks)
        models = {p["model"] for p in self.problems}
        for m in ("Llama-3.1-8B", "Qwen3-8B", "Qwen3-30B-A3B", "Mixtral-8x7B", "DeepSeek-V3"):
            self.assertIn(m, models)
        self.assertTrue(any(not ks.expected_supported(p) for p in self.problems))

    def test_llama_shapes(self):
        by = {p["name"]: p for p in self.problems}
        qkv = by["llama3_8b_qkv_m1_bf16"]["graph"][0]
        self.assertEqual(qkv["mnk"][:3], [1, (32 + 2 * 8) * 128, 4096])
        head = by["llama3_8b_lm_head_m1_bf16"]["graph"][0]
        self.assertEqual(head["mnk"][:3], [1, 128256, 4096])

    def test_every_problem_has_text(self):
        for p in self.problems:
            text = ks.mlir_text(p)
            self.assertIn(f"func.func @{p['name']}(", text)
            self.assertEqual(text.count("kopt."), len(p["graph"]))
            for reference in (False, True):
                compile(ks.torch_source(p, reference), p["name"], "exec")


class Inference(unittest.TestCase):
    def test_broadcast(self):
        self.assertEqual(ks.broadcast([16, 4096], [4096]), [16, 4096])
        self.assertEqual(ks.broadcast([2, 1], [1, 3]), [2, 3])
        self.assertEqual(ks.broadcast([1, 32, 8, 8], [8, 8]), [1, 32, 8, 8])
        self.assertEqual(ks.broadcast([4, 8], []), [4, 8])
        self.assertIsNone(ks.broadcast([4, 8], [4]))

    def test_matmul(self):
        p = problem([{"name": "a", "shape": [8, 4], "dtype": "bf16"},
                     {"name": "b", "shape": [16, 8], "dtype": "bf16"}],
                    [{"op": "matmul", "args": ["a", "b"],
                      "attrs": {"transpose_a": True, "transpose_b": True}, "out": "c",
                      "dtype": "f32"}], ["c"])
        n = p["graph"][0]
        self.assertEqual((n["shape"], n["dtype"], n["mnk"]), ([4, 16], "f32", [4, 16, 8, 1]))
        self.assertIn("kopt.matmul %a, %b {transpose_a, transpose_b} : tensor<8x4xbf16>, "
                      "tensor<16x8xbf16> -> tensor<4x16xf32>", ks.mlir_text(p))
        self.assertIn("c = torch.matmul(a.mT, b.mT).to(torch.float32)", ks.torch_source(p))
        ref = ks.torch_source(p, reference=True)
        self.assertIn("c__f64 = torch.matmul(a.mT, b.mT)\n", ref)
        self.assertIn("c = _round(c__f64, 'f32')", ref)
        self.assertEqual(ks.problem_flops(p)["matmul"], {"bf16": 2 * 4 * 16 * 8})
        self.assertEqual(ks.problem_bytes(p), (32 + 128) * 2 + 64 * 4)

    def test_batched_matmul(self):
        p = problem([{"name": "q", "shape": [2, 8, 4], "dtype": "f16"},
                     {"name": "k", "shape": [2, 6, 4], "dtype": "f16"}],
                    [{"op": "matmul", "args": ["q", "k"], "attrs": {"transpose_b": True},
                      "out": "s"}], ["s"])
        self.assertEqual(p["graph"][0]["shape"], [2, 8, 6])
        self.assertEqual(ks.problem_flops(p)["total"], 2 * 2 * 8 * 6 * 4)

    def test_norms_and_rows(self):
        p = problem([{"name": "x", "shape": [3, 8], "dtype": "f16"},
                     {"name": "w", "shape": [8], "dtype": "f16"},
                     {"name": "b", "shape": [8], "dtype": "f16"}],
                    [{"op": "layernorm", "args": ["x"], "weight": "w", "bias": "b",
                      "attrs": {"eps": 1e-12}, "out": "y"},
                     {"op": "rmsnorm", "args": ["y"], "attrs": {"eps": 1e-5}, "out": "z"},
                     {"op": "reduce", "args": ["z"], "attrs": {"kind": "max"}, "out": "m",
                      "dtype": "f32"},
                     {"op": "cast", "args": ["z"], "out": "zb", "dtype": "bf16"},
                     {"op": "gelu", "args": ["zb"], "attrs": {"approximate": "tanh"},
                      "out": "g"}],
                    ["m", "g"])
        text = ks.mlir_text(p)
        self.assertIn("%y = kopt.layernorm %x weight(%w : tensor<8xf16>) bias(%b : "
                      "tensor<8xf16>) eps = 1.000000e-12 : tensor<3x8xf16>", text)
        self.assertIn("%z = kopt.rmsnorm %y eps = 1.000000e-05 : tensor<3x8xf16>", text)
        self.assertIn("%m = kopt.reduce max %z : tensor<3x8xf16> -> tensor<3xf32>", text)
        self.assertIn("%zb = kopt.cast %z : tensor<3x8xf16> to tensor<3x8xbf16>", text)
        self.assertIn("%g = kopt.gelu %zb approximate(tanh) : tensor<3x8xbf16>", text)
        self.assertIn("-> (tensor<3xf32>, tensor<3x8xbf16>)", text)
        self.assertIn("return %m, %g : tensor<3xf32>, tensor<3x8xbf16>", text)
        src = ks.torch_source(p)
        self.assertIn("y = F.layer_norm(x, (8,), w, b, eps=1e-12)", src)
        self.assertIn("z = F.rms_norm(y, (8,), None, eps=1e-05)", src)
        self.assertIn("m = z.amax(dim=-1).to(torch.float32)", src)
        self.assertIn("zb = z.to(torch.bfloat16)", src)
        self.assertIn("g = F.gelu(zb, approximate='tanh')", src)
        self.assertIn("return (m, g,)", src)
        ref = ks.torch_source(p, reference=True)
        self.assertIn("zb__f64 = z\n", ref)
        self.assertIn("return (m__f64, g__f64,)", ref)

    def test_errors(self):
        x = [{"name": "x", "shape": [4, 8], "dtype": "f32"},
             {"name": "h", "shape": [4, 8], "dtype": "bf16"}]
        cases = [
            ([{"op": "frob", "args": ["x"], "out": "y"}], "unknown op"),
            ([{"op": "add", "args": ["x", "h"], "out": "y"}], "one dtype"),
            ([{"op": "add", "args": ["x", "z"], "out": "y"}], "not defined"),
            ([{"op": "exp", "args": ["x", "x"], "out": "y"}], "takes 1"),
            ([{"op": "rmsnorm", "args": ["x"], "weight": "h", "attrs": {"eps": 1e-5},
               "out": "y"}], "weight must be"),
            ([{"op": "rmsnorm", "args": ["x"], "out": "y"}], "eps"),
            ([{"op": "cast", "args": ["x"], "out": "y"}], "result dtype"),
            ([{"op": "matmul", "args": ["x", "x"], "out": "y"}], "contraction"),
            ([{"op": "exp", "args": ["x"], "out": "x"}], "defined twice"),
        ]
        for graph, msg in cases:
            with self.assertRaises(ks.SuiteError) as cm:
                problem(copy.deepcopy(x), graph, [graph[0]["out"]])
            self.assertIn(msg, str(cm.exception))
        with self.assertRaises(ks.SuiteError):
            problem(copy.deepcopy(x), [{"op": "exp", "args": ["x"], "out": "y"}], ["x"])
        with self.assertRaises(ks.SuiteError):
            problem([{"name": "in", "shape": [4], "dtype": "f32"}],
                    [{"op": "exp", "args": ["in"], "out": "y"}], ["y"])


class Figures(unittest.TestCase):
    def test_sol_score(self):
        self.assertAlmostEqual(ks.sol_score(2.0, 2.0, 1.0), 0.5)
        self.assertAlmostEqual(ks.sol_score(1.0, 2.0, 1.0), 1.0)
        self.assertAlmostEqual(ks.sol_score(3.0, 2.0, 1.0), 1 / 3)
        self.assertIsNone(ks.sol_score(3.0, 1.0, 1.0))
        self.assertIsNone(ks.sol_score(None, 2.0, 1.0))

    def test_sol_time(self):
        lim = ks.DATASHEET
        t, bound = ks.sol_time_s({"matmul": {"bf16": 989e12}, "vector": 0}, 1, lim)
        self.assertAlmostEqual(t, 1.0)
        self.assertEqual(bound, "compute")
        t, bound = ks.sol_time_s({"matmul": {}, "vector": 10}, 4.8e12, lim)
        self.assertAlmostEqual(t, 1.0)
        self.assertEqual(bound, "memory")
        t, _ = ks.sol_time_s({"matmul": {"f32": 67e12, "bf16": 989e12}, "vector": 0}, 1, lim)
        self.assertAlmostEqual(t, 2.0)

    def test_geomean_median(self):
        self.assertAlmostEqual(ks.geomean([1, 4]), 2.0)
        self.assertIsNone(ks.geomean([]))
        self.assertEqual(ks.median([3, None, 1, 2]), 2)

    def records(self):
        suite = ks.load_suite()
        by = {p["name"]: p for p in suite["problems"]}
        gemm = by["llama3_8b_qkv_m2048_bf16"]
        norm = by["llama3_8b_rmsnorm_m4096_bf16"]
        bad = by["llama3_8b_attn_scores_s1024_bf16"]
        t = lambda ms: {"time": {"median_ms": ms}}  # noqa: E731
        recs = [
            {"name": gemm["name"], "problem": gemm, "kopt": {"status": "ok", **t(1.0)},
             "peers": {"eager": t(0.25), "compile": t(0.25), "cublas": t(0.2)}},
            {"name": norm["name"], "problem": norm, "kopt": {"status": "ok", **t(0.02)},
             "peers": {"eager": t(0.04), "compile": t(0.02)}},
            {"name": bad["name"], "problem": bad,
             "kopt": {"status": "unsupported", "error": "expects 2-D operands"},
             "peers": {"eager": t(0.05), "compile": {"error": "boom"}}},
        ]
        return recs

    def test_derive_and_aggregate(self):
        recs = self.records()
        lim = {"datasheet": ks.DATASHEET,
               "measured": dict(ks.DATASHEET, matmul_flops={"bf16": 700e12, "f16": 700e12,
                                                            "f32": 50e12},
                                hbm_bytes_per_s=4.0e12)}
        for r in recs:
            ks.derive(r, lim)
        g = recs[0]
        flops = 2 * 2048 * 6144 * 4096
        self.assertEqual(g["flops"]["total"], flops)
        self.assertEqual(g["bytes"], (2048 * 4096 + 6144 * 4096 + 2048 * 6144) * 2)
        self.assertAlmostEqual(g["speedup"]["eager"], 0.25)
        self.assertAlmostEqual(g["kopt"]["rates"]["tflops"], flops / 1e-3 / 1e12)
        self.assertAlmostEqual(g["kopt"]["rates"]["frac_flops_datasheet"],
                               flops / 1e-3 / 989e12)
        self.assertEqual(g["sol"]["datasheet"]["bound"], "compute")
        t_sol = g["sol"]["datasheet"]["t_sol_ms"]
        self.assertAlmostEqual(g["sol_score"]["datasheet"],
                               1 / (1 + (1.0 - t_sol) / (0.25 - t_sol)))
        self.assertEqual(recs[2]["speedup"], {"eager": None, "compile": None})
        agg = ks.aggregate(recs)
        self.assertEqual(agg["kopt_status"], {"ok": 2, "unsupported": 1})
        self.assertAlmostEqual(agg["geomean_speedup"]["eager"]["value"], math.sqrt(0.25 * 2))
        self.assertEqual(agg["geomean_speedup"]["cublas"]["problems"], 1)
        self.assertEqual(agg["faster_than_eager"]["count"], 1)
        self.assertAlmostEqual(agg["faster_than_eager"]["fraction_of_suite"], 1 / 3)
        m = agg["median_sol_score_datasheet"]
        self.assertEqual(m["problems"], 2)
        self.assertAlmostEqual(m["value_failures_as_0"],
                               sorted([recs[0]["sol_score"]["datasheet"],
                                       recs[1]["sol_score"]["datasheet"], 0.0])[1])

        record = {"device": {"name": "NVIDIA H200"}, "limits": lim, "aggregates": agg,
                  "method": {"runs": 100}, "problems": recs}
        md = report.markdown(json.loads(json.dumps(record, default=str)))
        self.assertIn("| 1 | llama3_8b_qkv_m2048_bf16 |", md)
        self.assertIn("unsupported", md)
        self.assertIn("Geomean speedup over PyTorch eager", md)
        self.assertIn("torch.compile: boom", md)


class Tf32(unittest.TestCase):
    """A matmul that allows TF32: attrs {"tf32": true} (f32 operands only)."""

    def tf32_problem(self, **extra):
        return problem([{"name": "x", "shape": [64, 128], "dtype": "f32"},
                        {"name": "w", "shape": [256, 128], "dtype": "f32"}],
                       [{"op": "matmul", "args": ["x", "w"],
                         "attrs": {"transpose_b": True, "tf32": True}, "out": "y"},
                        {"op": "gelu", "args": ["y"], "out": "g"}], ["g"], **extra)

    def test_mlir_and_torch(self):
        p = self.tf32_problem()
        self.assertIn("%y = kopt.matmul %x, %w {transpose_b, tf32} : tensor<64x128xf32>, "
                      "tensor<256x128xf32> -> tensor<64x256xf32>", ks.mlir_text(p))
        # Eager's source is unchanged: TF32 is PyTorch's allow_tf32 around it.
        self.assertIn("y = torch.matmul(x, w.mT)\n", ks.torch_source(p))
        # tf32 false or absent writes nothing.
        q = problem([{"name": "x", "shape": [64, 128], "dtype": "f32"},
                     {"name": "w", "shape": [128, 256], "dtype": "f32"}],
                    [{"op": "matmul", "args": ["x", "w"], "attrs": {"tf32": False},
                      "out": "y"}], ["y"])
        self.assertIn("%y = kopt.matmul %x, %w : tensor<64x128xf32>", ks.mlir_text(q))
        self.assertFalse(ks.uses_tf32(q))

    def test_errors(self):
        for dtype, attrs, msg in (("bf16", {"tf32": True}, "attrs.tf32 needs f32 operands"),
                                  ("f16", {"tf32": True}, "attrs.tf32 needs f32 operands"),
                                  ("f32", {"tf32": 1}, "attrs.tf32 must be a boolean"),
                                  ("f32", {"tf32": "yes"}, "attrs.tf32 must be a boolean")):
            with self.assertRaises(ks.SuiteError) as cm:
                problem([{"name": "x", "shape": [4, 8], "dtype": dtype},
                         {"name": "w", "shape": [8, 4], "dtype": dtype}],
                        [{"op": "matmul", "args": ["x", "w"], "attrs": attrs, "out": "y"}],
                        ["y"])
            self.assertIn(msg, str(cm.exception))

    def test_tolerance(self):
        p = self.tf32_problem()
        self.assertTrue(ks.uses_tf32(p))
        # TF32 operands carry f16's 10-bit mantissa: f16's tolerance at least.
        self.assertEqual(ks.TF32_TOLERANCE, ks.TOLERANCE["f16"])
        self.assertEqual(ks.tolerance(p, "f32"), 2e-3)
        self.assertEqual(ks.tolerance(p, "f16"), 2e-3)
        self.assertEqual(ks.tolerance(p, "bf16"), 1e-2)
        # A problem's own tolerance still wins.
        self.assertEqual(ks.tolerance(self.tf32_problem(tolerance={"f32": 5e-3}), "f32"), 5e-3)
        self.assertEqual(ks.tolerance(self.tf32_problem(tolerance=1e-4), "f32"), 1e-4)
        # Sweep problems say "tf32": true themselves.
        self.assertEqual(ks.tolerance({"tf32": True}, "f32"), 2e-3)
        self.assertEqual(ks.tolerance({"tf32": False}, "f32"), 1e-5)
        self.assertEqual(ks.tolerance({}, "f32"), 1e-5)

    def test_flops_and_roofline(self):
        p = self.tf32_problem()
        f = ks.problem_flops(p)
        self.assertEqual(f["matmul"], {"tf32": 2 * 64 * 256 * 128})
        self.assertEqual(ks.DATASHEET["matmul_flops"]["tf32"], 494.5e12)
        t, bound = ks.sol_time_s({"matmul": {"tf32": 494.5e12}, "vector": 0}, 1, ks.DATASHEET)
        self.assertAlmostEqual(t, 1.0)
        self.assertEqual(bound, "compute")
        rec = {"name": "t", "problem": p, "kopt": {"status": "ok", "time": {"median_ms": 1.0}},
               "peers": {"eager": {"time": {"median_ms": 2.0}}}}
        ks.derive(rec, {"datasheet": ks.DATASHEET, "measured": None})
        self.assertAlmostEqual(rec["kopt"]["rates"]["frac_flops_datasheet"],
                               2 * 64 * 256 * 128 / 1e-3 / 494.5e12)

    def test_measured_limits_and_report(self):
        import run_suite
        t = {"median_ms": 1.0}
        ceil = {"copy": {"bytes_per_s": 4e12, "time": t},
                **{f"gemm_{dt}": {"flops_per_s": r, "time": t}
                   for dt, r in (("bf16", 7e14), ("f16", 7e14), ("f32", 5e13))}}
        self.assertNotIn("tf32", run_suite.measured_limits(ceil)["matmul_flops"])
        ceil["gemm_tf32"] = {"flops_per_s": 3.5e14, "time": t}
        self.assertEqual(run_suite.measured_limits(ceil)["matmul_flops"]["tf32"], 3.5e14)
        record = {"device": {"name": "NVIDIA H200"},
                  "limits": {"datasheet": ks.DATASHEET,
                             "measured": run_suite.measured_limits(ceil)},
                  "aggregates": ks.aggregate([]),
                  "method": {"runs": 100, "tf32": True, "tf32_problems": ["t"],
                             "tf32_tolerance": 2e-3},
                  "problems": []}
        md = report.markdown(json.loads(json.dumps(record)))
        self.assertIn("TF32 off except for the problems whose GEMMs allow it (t; PyTorch "
                      "with allow_tf32 = True, tolerance at least 0.002)", md)
        self.assertIn("| tf32 GEMM TFLOP/s | 494.5 | 350 |", md)
        record["method"] = {"runs": 100, "tf32": False}
        self.assertIn("TF32 off; reduced-precision", report.markdown(record))


class Manifest(unittest.TestCase):
    def test_check_manifest(self):
        p = problem([{"name": "x", "shape": [4, 8], "dtype": "f32"}],
                    [{"op": "exp", "args": ["x"], "out": "y"}, {"op": "neg", "args": ["y"],
                                                               "out": "z"}], ["z"])
        p["name"] = "t"
        m = {"kopt_manifest_version": 2,
             "kernels": [{"name": "exp_0", "params": [{}, {}]},
                         {"name": "neg_0", "params": [{}, {}]}],
             "functions": [{"name": "t",
                            "args": [{"name": "arg0", "role": "input", "dtype": "f32",
                                      "shape": [4, 8]},
                                     {"name": "out0", "role": "output", "dtype": "f32",
                                      "shape": [4, 8]}],
                            "buffers": [{"id": 0, "dtype": "f32", "shape": [4, 8]}],
                            "launches": [{"kernel": "exp_0", "args": [{"arg": 0}, {"buffer": 0}]},
                                         {"kernel": "neg_0", "args": [{"buffer": 0}, {"arg": 1}]}]}]}
        ptx = ".visible .entry exp_0(\n.visible .entry neg_0(\n"
        self.assertIsNone(compile_suite.check_manifest(p, m, ptx))
        self.assertIn("not an .entry", compile_suite.check_manifest(p, m, ".entry exp_0("))
        bad = copy.deepcopy(m)
        bad["functions"][0]["args"][1]["dtype"] = "bf16"
        self.assertIn("argument z", compile_suite.check_manifest(p, bad, ptx))
        bad = copy.deepcopy(m)
        bad["functions"][0]["launches"][1]["args"] = [{"buffer": 3}, {"arg": 1}]
        self.assertIn("buffer 3", compile_suite.check_manifest(p, bad, ptx))

    def test_parse_ptxas(self):
        text = ("ptxas info    : Compiling entry function 'matmul_0' for 'sm_90a'\n"
                "ptxas info    : Function properties for matmul_0\n"
                "    0 bytes stack frame, 8 bytes spill stores, 4 bytes spill loads\n"
                "ptxas info    : Used 108 registers, used 1 barriers, 8192 bytes smem\n")
        self.assertEqual(compile_suite.parse_ptxas(text),
                         {"matmul_0": {"registers": 108, "spill_stores": 8, "spill_loads": 4}})


WORKSPACE = {"name": "workspace", "role": "workspace", "dtype": "f32", "shape": [4096]}


def tma_kernel(a_shape=(256, 1024), b_shape=(512, 1024), dtype="bf16", split_k=False,
               maps=None):
    """A matmul kernel of a launch manifest built with copy = tma (docs/manifest.md)."""
    params = [{"name": "a", "role": "input", "dtype": dtype, "shape": list(a_shape)},
              {"name": "b", "role": "input", "dtype": dtype, "shape": list(b_shape)},
              {"name": "result", "role": "output", "dtype": dtype,
               "shape": [a_shape[0], b_shape[0]]}]
    if split_k:
        params.append(dict(WORKSPACE))
    return {"name": "matmul_0", "class": "matmul",
            "ops": [{"op": "matmul", "attrs": {"transpose_b": True},
                     "operands": {"a": "a", "b": "b"}, "result": "result"}],
            "params": params,
            "tensor_maps": maps if maps is not None else [
                {"tensor": "a", "box": [64, 128], "swizzle": 128},
                {"tensor": "b", "box": [64, 256], "swizzle": 128}],
            "grid": [8, 1, 1], "block": [384, 1, 1], "dynamic_shared_bytes": 197632}


class TensorMaps(unittest.TestCase):
    """kernels[].tensor_maps: the arguments of cuTensorMapEncodeTiled built from a
    manifest entry, the launch parameters' order and malformed entries."""

    def test_encode_args_bf16(self):
        a, b = ks.tensor_map_encode_args(tma_kernel())
        self.assertEqual(a, {
            "tensor": "a", "param": 0, "data_type": 9, "rank": 2,
            "global_dim": [1024, 256],          # the shape [256, 1024] reversed
            "global_strides": [2048],           # 1024 bf16 elements per row
            "box": [64, 128], "element_strides": [1, 1], "interleave": 0,
            "swizzle": 3, "swizzle_bytes": 128, "l2_promotion": 3, "oob_fill": 0})
        self.assertEqual((b["tensor"], b["param"], b["global_dim"], b["global_strides"],
                          b["box"]), ("b", 1, [1024, 512], [2048], [64, 256]))

    def test_dtypes_ranks_swizzles(self):
        for dtype, enum in (("f16", 6), ("f32", 7), ("bf16", 9)):
            (m,) = ks.tensor_map_encode_args(tma_kernel(dtype=dtype, maps=[
                {"tensor": "b", "box": [16 // ks.DTYPE_BYTES[dtype], 8], "swizzle": 0}]))
            self.assertEqual((m["data_type"], m["param"]), (enum, 1), dtype)
            self.assertEqual(m["global_strides"], [1024 * ks.DTYPE_BYTES[dtype]])
        for sw, enum in ((0, 0), (32, 1), (64, 2), (128, 3)):
            (m,) = ks.tensor_map_encode_args(tma_kernel(dtype="f32", maps=[
                {"tensor": "a", "box": [8, 1], "swizzle": sw}]))
            self.assertEqual((m["swizzle"], m["swizzle_bytes"]), (enum, sw))
        k = tma_kernel(dtype="f32", maps=[{"tensor": "a", "box": [4, 8, 2], "swizzle": 0}])
        k["params"][0]["shape"] = [4, 8, 32]
        (m,) = ks.tensor_map_encode_args(k)
        self.assertEqual((m["rank"], m["global_dim"], m["global_strides"], m["box"],
                          m["element_strides"]),
                         (3, [32, 8, 4], [128, 1024], [4, 8, 2], [1, 1, 1]))
        k["params"][0]["shape"] = [64]
        k["tensor_maps"] = [{"tensor": "a", "box": [32], "swizzle": 128}]
        (m,) = ks.tensor_map_encode_args(k)
        self.assertEqual((m["rank"], m["global_dim"], m["global_strides"]), (1, [64], []))

    def test_encode_args_output(self):
        """A TMA store's map (tma_store = true): of the output parameter, encoded
        like the inputs' (the address bound at launch is the output buffer's). Rows
        of 128 bytes (64 bf16), as kopt-opt writes it for block_n 256 (512 bytes)."""
        k = tma_kernel(split_k=True)
        k["tensor_maps"].append({"tensor": "result", "box": [64, 128], "swizzle": 128})
        a, b, c = ks.tensor_map_encode_args(k)
        self.assertEqual(c, {
            "tensor": "result", "param": 2, "data_type": 9, "rank": 2,
            "global_dim": [512, 256],           # the shape [256, 512] reversed
            "global_strides": [1024],           # 512 bf16 elements per row
            "box": [64, 128], "element_strides": [1, 1], "interleave": 0,
            "swizzle": 3, "swizzle_bytes": 128, "l2_promotion": 3, "oob_fill": 0})
        # A narrower tile's: block_n 16 (32 bytes), rows of 32 bytes, swizzle 32.
        k["tensor_maps"][2] = {"tensor": "result", "box": [16, 128], "swizzle": 32}
        c = ks.tensor_map_encode_args(k)[2]
        self.assertEqual((c["box"], c["swizzle"], c["swizzle_bytes"]), ([16, 128], 1, 32))
        self.assertEqual(ks.launch_param_values(k, [0xa00, 0xb00, 0xc00, 0xd00],
                                                [0x1000, 0x2000, 0x3000]),
                         [0xa00, 0xb00, 0xc00, 0xd00, 0x1000, 0x2000, 0x3000])
        self.assertEqual(ks.launch_param_count_error(k, 7), None)

    def test_absent_or_empty(self):
        k = tma_kernel()
        k["tensor_maps"] = []
        self.assertEqual(ks.tensor_map_encode_args(k), [])
        k = tma_kernel()
        del k["tensor_maps"]
        self.assertEqual(ks.tensor_map_encode_args(k), [])
        self.assertIsNone(ks.tensor_map_error(k))
        # null is not "none", as in the C++ parser.
        k["tensor_maps"] = None
        with self.assertRaisesRegex(ks.ManifestError,
                                    r"^kernels\[0\]\.tensor_maps: must be an array, got null$"):
            ks.tensor_map_encode_args(k, "kernels[0]")
        self.assertEqual(ks.tensor_map_error(k, "kernels[0]"),
                         "kernels[0].tensor_maps: must be an array, got null")

    def test_launch_order(self):
        """Params (the split-K workspace included), then the maps in tensor_maps
        order; maps are not bound by launches."""
        k = tma_kernel(split_k=True, maps=[{"tensor": "b", "box": [64, 256], "swizzle": 128},
                                           {"tensor": "a", "box": [64, 128], "swizzle": 128}])
        self.assertEqual([m["param"] for m in ks.tensor_map_encode_args(k)], [1, 0])
        self.assertEqual(ks.launch_param_values(k, [0xa00, 0xb00, 0xc00, 0xd00],
                                                [0x1000, 0x2000]),
                         [0xa00, 0xb00, 0xc00, 0xd00, 0x1000, 0x2000])
        with self.assertRaisesRegex(ks.ManifestError, "3 addresses bound for 4 parameters"):
            ks.launch_param_values(k, [1, 2, 3], [4, 5])
        with self.assertRaisesRegex(ks.ManifestError, "1 tensor-map addresses for 2"):
            ks.launch_param_values(k, [1, 2, 3, 4], [5])
        plain = tma_kernel(maps=[])
        self.assertEqual(ks.launch_param_values(plain, [1, 2, 3], []), [1, 2, 3])

    def test_errors(self):
        def param(i, **kw):
            return lambda k: k["params"][i].update(kw)

        def tmap(j, **kw):
            return lambda k: k["tensor_maps"][j].update(kw)
        cases = [
            (tmap(1, box=[512, 256]),
             "f.json: kernels[0].tensor_maps[1].box[0]: 512 is out of range (1 to 256)"),
            (tmap(0, box=[64, 0]), "tensor_maps[0].box[1]: 0 is out of range (1 to 256)"),
            (tmap(0, box=[64, True]), "tensor_maps[0].box[1]: must be an integer, got a "
                                      "boolean"),
            (tmap(0, box=[64.0, 128]), "tensor_maps[0].box[0]: must be an integer, got a "
                                       "number"),
            (tmap(1, box=["64", 256]), "tensor_maps[1].box[0]: must be an integer, got a "
                                       "string"),
            (tmap(0, box=[64, None]), "tensor_maps[0].box[1]: must be an integer, got null"),
            (tmap(0, box=[64, 1 << 63]), "tensor_maps[0].box[1]: integer out of range"),
            # Types of every entry before any entry's values (map 0's tensor is bad).
            (lambda k: (k["tensor_maps"][0].update(tensor="x"),
                        k["tensor_maps"][1].update(box=[64, 2.5])),
             "tensor_maps[1].box[1]: must be an integer, got a number"),
            (tmap(0, box=[64]), "tensor_maps[0].box: has 1 entries, the tensor a has rank 2"),
            (tmap(0, box="64x128"), "tensor_maps[0].box: must be an array, got a string"),
            (tmap(0, tensor="x"), "tensor_maps[0].tensor: 'x' is not a parameter of the "
                                  "kernel (a, b, result)"),
            # A map of the output is an entry like any other (a TMA store); one of
            # the split-K workspace is not.
            (lambda k: (k["params"].append(dict(WORKSPACE)),
                        k["tensor_maps"][1].update(tensor="workspace")),
             "tensor_maps[1].tensor: parameter 'workspace' has role 'workspace'; a tensor "
             "map reads an input or writes an output parameter"),
            (lambda k: (k["params"][2].update(role="scratch"),
                        k["tensor_maps"][1].update(tensor="result")),
             "tensor_maps[1].tensor: parameter 'result' has role 'scratch'; a tensor map "
             "reads an input or writes an output parameter"),
            (tmap(0, swizzle=16), "tensor_maps[0].swizzle: 16 is not 0, 32, 64 or 128"),
            (tmap(0, swizzle="128B"), "tensor_maps[0].swizzle: '128B' is not"),
            (tmap(0, box=[4, 128], swizzle=0), "tensor_maps[0].box[0]: 4 x 2 bytes (bf16) = "
                                               "8 is not a multiple of 16 bytes"),
            (tmap(0, box=[128, 128]), "tensor_maps[0].box[0]: 128 x 2 bytes (bf16) = 256 "
                                      "exceeds the swizzle span (128 bytes)"),
            (tmap(0, box=[64, 128], swizzle=64), "exceeds the swizzle span (64 bytes)"),
            (param(0, shape=[256, 1020]), "tensor_maps[0].tensor: parameter a (bf16 [256, "
                                          "1020]): the byte stride of dimension 1 (innermost "
                                          "first) is 2040, not a multiple of 16"),
            (param(0, shape=[1, 1, 1, 1, 2, 8]), "parameter a has rank 6"),
            (param(0, shape=[256, 0]), "parameter a has shape [256, 0]"),
            (param(0, dtype="f64"), "parameter a has dtype 'f64'"),
            (lambda k: (k["params"][0].update(shape=[2, 1 << 20, 1 << 20]),
                        k["tensor_maps"][0].update(box=[64, 1, 1])),
             f"dimension 2 (innermost first) is {1 << 41}, not below 2^40"),
            (lambda k: (k["params"][0].update(shape=[2, 1 << 33]),
                        k["tensor_maps"][0].update(box=[64, 1])),
             f"dimension 0 (innermost first) is {1 << 33}, above 2^32"),
            (lambda k: k["tensor_maps"][0].update(box=[4, 0], swizzle=7), "swizzle: 7 is not"),
            (lambda k: k["tensor_maps"][0].pop("swizzle"), "tensor_maps[0]: swizzle is missing"),
            (lambda k: k["tensor_maps"].append(7), "tensor_maps[2]: must be an object"),
            (lambda k: k.update(tensor_maps={"tensor": "a"}), "kernels[0].tensor_maps: must be "
                                                              "an array, got an object"),
            (lambda k: k.update(tensor_maps=None), "kernels[0].tensor_maps: must be an array, "
                                                   "got null"),
        ]
        for change, want in cases:
            k = copy.deepcopy(tma_kernel())
            change(k)
            with self.assertRaises(ks.ManifestError, msg=want) as cm:
                ks.tensor_map_encode_args(k, "f.json: kernels[0]")
            self.assertIn(want, str(cm.exception))
            self.assertEqual(ks.tensor_map_error(k, "f.json: kernels[0]"), str(cm.exception))

    def test_check_manifest(self):
        """A manifest with tensor_maps passes the suite's check (launches bind the
        params only); a malformed map is a mismatch naming the field."""
        p = problem([{"name": "x", "shape": [256, 1024], "dtype": "bf16"},
                     {"name": "w", "shape": [512, 1024], "dtype": "bf16"}],
                    [{"op": "matmul", "args": ["x", "w"], "attrs": {"transpose_b": True},
                      "out": "y"}], ["y"])
        m = {"kopt_manifest_version": 2, "kernels": [tma_kernel()],
             "functions": [{"name": "t",
                            "args": [{"name": "arg0", "role": "input", "dtype": "bf16",
                                      "shape": [256, 1024]},
                                     {"name": "arg1", "role": "input", "dtype": "bf16",
                                      "shape": [512, 1024]},
                                     {"name": "out0", "role": "output", "dtype": "bf16",
                                      "shape": [256, 512]}],
                            "buffers": [],
                            "launches": [{"kernel": "matmul_0",
                                          "args": [{"arg": 0}, {"arg": 1}, {"arg": 2}]}]}]}
        ptx = ".visible .entry matmul_0(\n"
        self.assertIsNone(compile_suite.check_manifest(p, m, ptx))
        bad = copy.deepcopy(m)
        bad["functions"][0]["launches"][0]["args"] += [{"arg": 0}, {"arg": 1}]
        self.assertIn("passes 5 arguments for 3 parameters",
                      compile_suite.check_manifest(p, bad, ptx))
        bad = copy.deepcopy(m)
        bad["kernels"][0]["tensor_maps"][1]["swizzle"] = 96
        self.assertEqual(compile_suite.check_manifest(p, bad, ptx),
                         "kernels[0].tensor_maps[1].swizzle: 96 is not 0, 32, 64 or 128")


SCHED_TMA = {"instruction": "wgmma", "copy": "tma", "block_m": 128, "block_n": 256,
             "block_k": 64, "warp_m": 64, "warp_n": 256, "num_warps": 8, "stages": 4,
             "split_k": 1, "swizzle": 8, "vector_width": 8, "persistent": False}


def sched_kernel(dtype="bf16", b_shape=(256, 64), transpose_b=True, **sched):
    """matmul_0 (a [128, 64], b [256, 64] with transpose_b) built with copy = tma and
    a 128 x 256 tile (schedule changes in `sched`), with the maps kopt-opt writes:
    the same kernel as the C++ ManifestTest's withTma()."""
    row = 128 // ks.DTYPE_BYTES[dtype]
    n = b_shape[0] if transpose_b else b_shape[1]
    return {"name": "matmul_0", "class": "matmul",
            "ops": [{"op": "matmul",
                     "attrs": {"transpose_a": False, "transpose_b": transpose_b},
                     "operands": {"a": "a", "b": "b"}, "result": "result"}],
            "params": [{"name": "a", "role": "input", "dtype": dtype, "shape": [128, 64]},
                       {"name": "b", "role": "input", "dtype": dtype, "shape": list(b_shape)},
                       {"name": "result", "role": "output", "dtype": "f32",
                        "shape": [128, n]}],
            "tensor_maps": [{"tensor": "a", "box": [row, 128], "swizzle": 128},
                            {"tensor": "b", "box": [row, 256], "swizzle": 128}],
            "schedule": dict(SCHED_TMA, **sched),
            "grid": [1, 1, 1], "block": [256, 1, 1], "dynamic_shared_bytes": 197632}


def sched_manifest(kernel):
    """A whole manifest around `kernel` (for kopt-run's parser)."""
    args = [{"name": f"arg{i}", "role": p["role"], "dtype": p["dtype"], "shape": p["shape"]}
            for i, p in enumerate(kernel["params"]) if p["role"] != "workspace"]
    return {"kopt_manifest_version": 2, "chip": "sm_90a", "ptx": "t.ptx",
            "kernels": [kernel],
            "functions": [{"name": "f", "args": args, "buffers": [], "launches": [
                {"kernel": kernel["name"],
                 "args": [{"arg": i} for i in range(len(args))]}]}]}


def _tmap(j, **kw):
    return lambda k: k["tensor_maps"][j].update(kw)


def _sched(**kw):
    return lambda k: k["schedule"].update(kw)


def _pop(*path):
    def change(k):
        for key in path[:-1]:
            k = k[key]
        k.pop(path[-1])
    return change


def _swap_maps(k):
    k["tensor_maps"].reverse()


def _transpose_b_nk(k):
    k["ops"][0]["attrs"]["transpose_b"] = False
    k["params"][1]["shape"] = [64, 256]


def _chain(*changes):
    def change(k):
        for c in changes:
            c(k)
    return change


def _store(copy="tma", columns=None, swizzle=None):
    """tma_store = true with `copy`, and the output's map as kopt-opt writes it, last:
    box [S / sizeof(C), tma_box_rows(block_m, M)], swizzle S, S the largest of 128, 64
    and 32 dividing block_n * sizeof(C) (after the maps of a and b with copy = tma;
    the only one otherwise). `columns` and `swizzle`, when given, are box[0] and the
    swizzle instead (what a case expects, spelled out)."""
    def change(k):
        k["schedule"].update(copy=copy, tma_store=True)
        if copy != "tma":
            k["tensor_maps"] = []
        c = k["params"][2]
        size = ks.DTYPE_BYTES[c["dtype"]]
        span = ks.tma_store_swizzle_bytes(k["schedule"]["block_n"] * size)
        k["tensor_maps"].append({
            "tensor": "result", "swizzle": span if swizzle is None else swizzle,
            "box": [span // size if columns is None else columns,
                    ks.tma_box_rows(k["schedule"]["block_m"], c["shape"][0])]})
    return change


def _block_n(n):
    """schedule.block_n = n (at most N = 256), with b's map (copy = tma) of n rows;
    before _store."""
    def change(k):
        k["schedule"]["block_n"] = n
        if k["schedule"]["copy"] == "tma":
            k["tensor_maps"][1]["box"] = [k["tensor_maps"][1]["box"][0], n]
    return change


def _m13(k):
    """A decode kernel: M = 13 rows (A's map has boxes of 16 rows)."""
    k["params"][0].update(shape=[13, 64])
    k["params"][2].update(shape=[13, 256])
    k["tensor_maps"][0].update(box=[64, 16])


def _bf16_out(k):
    k["params"][2]["dtype"] = "bf16"


def _workspace_map(k):
    """A split-K workspace (32 + 2 x M x N f32, as the C++ parser asks), named by
    map 1."""
    k["params"].append(dict(WORKSPACE, shape=[32 + 2 * 128 * 256]))
    k["tensor_maps"][1].update(tensor="workspace")


MM = "kernels[0] (matmul_0)"
STORE_COUNT = ("schedule.copy is 'tma' and schedule.tma_store is true, which take 3 tensor "
               "maps (of 'a', 'b', then the output), got ")
STORE_ONLY_COUNT = ("schedule.copy is 'cp_async' and schedule.tma_store is true, which take "
                    "1 tensor map (of the output), got ")
TMA_COUNT = "schedule.copy is 'tma', which takes 2 tensor maps (of 'a', then 'b'), got "
GELU = {"name": "gelu_3", "class": "elementwise",
        "ops": [{"op": "gelu", "attrs": {"approximate": "tanh"},
                 "operands": {"input": "input"}, "result": "result"}],
        "params": [{"name": "input", "role": "input", "dtype": "f16", "shape": [8]},
                   {"name": "result", "role": "output", "dtype": "f16", "shape": [8]}],
        "tensor_maps": [{"tensor": "input", "box": [8], "swizzle": 0}],
        "grid": [1, 1, 1], "block": [32, 1, 1], "dynamic_shared_bytes": 0}
# (change to sched_kernel(), message after "kernels[0] (matmul_0)") for the rules
# of docs/manifest.md (schedule); the C++ parser gives the same messages.
SCHEDULE_ERRORS = [
    (_pop("tensor_maps"), ".tensor_maps: " + TMA_COUNT + "0"),
    (lambda k: k.update(tensor_maps=[]), ".tensor_maps: " + TMA_COUNT + "0"),
    (lambda k: k["tensor_maps"].pop(), ".tensor_maps: " + TMA_COUNT + "1"),
    (lambda k: k["tensor_maps"].append(dict(k["tensor_maps"][1])),
     ".tensor_maps: " + TMA_COUNT + "3"),
    (_sched(copy="cp_async"),
     ".tensor_maps: schedule.copy is 'cp_async', which takes no tensor maps, got 2"),
    (_tmap(0, box=[64, 64]), ".tensor_maps[0].box[1]: 64, but schedule.block_m is 128"),
    (_tmap(1, box=[64, 128]), ".tensor_maps[1].box[1]: 128, but schedule.block_n is 256"),
    (_sched(block_n=128), ".tensor_maps[1].box[1]: 256, but schedule.block_n is 128"),
    (_swap_maps, ".tensor_maps[0].box[1]: 256, but schedule.block_m is 128"),
    (lambda k: (k["params"][0].update(shape=[13, 64]), k["params"][2].update(shape=[13, 256])),
     ".tensor_maps[0].box[1]: 128, but 'a' [13, 64] has fewer rows than schedule.block_m "
     "(128): its boxes have its rows rounded up to 8, 16"),
    (_sched(num_warps=9, warp_specialize=True),
     ".block: 256 threads, but schedule.num_warps is 9 (288 threads)"),
    (_sched(warp_specialize="yes"), ".schedule.warp_specialize: must be a boolean, got a string"),
    (_sched(num_warps=0), ".schedule.num_warps: value 0 out of range [1, 32]"),
    (_tmap(0, box=[32, 128]), ".tensor_maps[0].box[0]: 32, but copy = tma reads rows of "
                              "128 bytes: 128 / sizeof(bf16) is 64"),
    (_tmap(1, swizzle=0), ".tensor_maps[1].swizzle: 0, but copy = tma maps use swizzle 128"),
    (_tmap(1, box=[64, 512]), ".tensor_maps[1].box[1]: 512 is out of range (1 to 256)"),
    (lambda k: (_transpose_b_nk(k), k["tensor_maps"][0].update(tensor="b")),
     ".tensor_maps[0].tensor: 'b' [64, 256], but map 0 of a copy = tma kernel reads 'a' "
     "[128, 64] (another input only with the same last, K, dimension)"),
    (lambda k: (_transpose_b_nk(k), k["tensor_maps"][1].update(tensor="a")),
     ".tensor_maps[1].tensor: 'a' [128, 64], but map 1 of a copy = tma kernel reads 'b' "
     "[64, 256] (another input only with the same last, K, dimension)"),
    (lambda k: k.update(schedule=[]), ".schedule: must be an object, got an array"),
    (lambda k: k.update(schedule=None), ".schedule: must be an object, got null"),
    (_pop("schedule", "copy"), ".schedule.copy: missing field"),
    (_sched(copy=3), ".schedule.copy: must be a string, got an integer"),
    (_pop("schedule", "block_m"), ".schedule.block_m: missing field"),
    (_sched(block_n="256"), ".schedule.block_n: must be an integer, got a string"),
    (_sched(block_m=128.0), ".schedule.block_m: must be an integer, got a number"),
    (lambda k: k.update(tensor_maps=None), ".tensor_maps: must be an array, got null"),
    (_tmap(0, box=[64, True]), ".tensor_maps[0].box[1]: must be an integer, got a boolean"),
    # A map of the split-K workspace (a map reads an input or writes an output).
    (_workspace_map, ".tensor_maps[1].tensor: parameter 'workspace' has role 'workspace'; "
                     "a tensor map reads an input or writes an output parameter"),
    # tma_store = true: the output's map, last.
    (_sched(tma_store=True), ".tensor_maps: " + STORE_COUNT + "2"),
    (_chain(_store(), lambda k: k["tensor_maps"].pop()), ".tensor_maps: " + STORE_COUNT + "2"),
    (_chain(_store(), lambda k: k["tensor_maps"].append(dict(k["tensor_maps"][2]))),
     ".tensor_maps: " + STORE_COUNT + "4"),
    (_chain(_store("cp_async"), lambda k: k.pop("tensor_maps")),
     ".tensor_maps: " + STORE_ONLY_COUNT + "0"),
    (_sched(copy="cp_async", tma_store=True), ".tensor_maps: " + STORE_ONLY_COUNT + "2"),
    (_chain(_store("sync"), lambda k: k.update(tensor_maps=[])),
     ".tensor_maps: schedule.copy is 'sync' and schedule.tma_store is true, which take 1 "
     "tensor map (of the output), got 0"),
    # ... and without tma_store the output's map is one too many.
    (_chain(_store(), _sched(tma_store=False)), ".tensor_maps: " + TMA_COUNT + "3"),
    (_chain(_store("cp_async"), _pop("schedule", "tma_store")),
     ".tensor_maps: schedule.copy is 'cp_async', which takes no tensor maps, got 1"),
    (_chain(_store(), _tmap(2, tensor="a")),
     ".tensor_maps[2].tensor: 'a' is not an output parameter of the kernel (with tma_store "
     "the last map writes the output)"),
    (_chain(_store("cp_async"), _tmap(0, tensor="b")),
     ".tensor_maps[0].tensor: 'b' is not an output parameter of the kernel (with tma_store "
     "the last map writes the output)"),
    (_chain(_store(), lambda k: k["tensor_maps"].insert(0, k["tensor_maps"].pop())),
     ".tensor_maps[2].tensor: 'b' is not an output parameter of the kernel (with tma_store "
     "the last map writes the output)"),
    # box[0]: rows of S bytes, S the largest of 128, 64, 32 dividing block_n x sizeof(C).
    (_chain(_store(), _tmap(2, box=[4, 128])),
     ".tensor_maps[2].box[0]: 4, but with schedule.block_n x sizeof(f32) = 256 x 4 = 1024 "
     "bytes tma_store writes rows of 128 bytes: 32 elements"),
    # (the boxes of 32 bytes of the rule before: 8 f32, 16 bf16)
    (_chain(_store(), _tmap(2, box=[8, 128])),
     ".tensor_maps[2].box[0]: 8, but with schedule.block_n x sizeof(f32) = 256 x 4 = 1024 "
     "bytes tma_store writes rows of 128 bytes: 32 elements"),
    (_chain(_bf16_out, _store(), _tmap(2, box=[16, 128])),
     ".tensor_maps[2].box[0]: 16, but with schedule.block_n x sizeof(bf16) = 256 x 2 = 512 "
     "bytes tma_store writes rows of 128 bytes: 64 elements"),
    (_chain(_bf16_out, _block_n(96), _store(), _tmap(2, box=[64, 128], swizzle=128)),
     ".tensor_maps[2].box[0]: 64, but with schedule.block_n x sizeof(bf16) = 96 x 2 = 192 "
     "bytes tma_store writes rows of 64 bytes: 32 elements"),
    (_chain(_bf16_out, _block_n(32), _store(), _tmap(2, box=[16, 128])),
     ".tensor_maps[2].box[0]: 16, but with schedule.block_n x sizeof(bf16) = 32 x 2 = 64 "
     "bytes tma_store writes rows of 64 bytes: 32 elements"),
    (_chain(_bf16_out, _block_n(16), _store(), _tmap(2, box=[32, 128], swizzle=64)),
     ".tensor_maps[2].box[0]: 32, but with schedule.block_n x sizeof(bf16) = 16 x 2 = 32 "
     "bytes tma_store writes rows of 32 bytes: 16 elements"),
    (_chain(_bf16_out, _block_n(48), _store("cp_async"), _tmap(0, box=[8, 128])),
     ".tensor_maps[0].box[0]: 8, but with schedule.block_n x sizeof(bf16) = 48 x 2 = 96 "
     "bytes tma_store writes rows of 32 bytes: 16 elements"),
    # No S: block_n x sizeof(C) not a multiple of 32 bytes.
    (_chain(_bf16_out, _block_n(8), _store(columns=8, swizzle=32)),
     ".tensor_maps[2]: schedule.block_n x sizeof(bf16) = 8 x 2 = 16 bytes is not a multiple "
     "of 32 (tma_store stores boxes of 32 to 128 bytes of columns)"),
    (_chain(_bf16_out, _block_n(24), _store("cp_async", columns=8, swizzle=32)),
     ".tensor_maps[0]: schedule.block_n x sizeof(bf16) = 24 x 2 = 48 bytes is not a "
     "multiple of 32 (tma_store stores boxes of 32 to 128 bytes of columns)"),
    (_chain(_block_n(4), _store(columns=4, swizzle=0)),
     ".tensor_maps[2]: schedule.block_n x sizeof(f32) = 4 x 4 = 16 bytes is not a multiple "
     "of 32 (tma_store stores boxes of 32 to 128 bytes of columns)"),
    (_chain(_store(), _tmap(2, box=[32, 64])),
     ".tensor_maps[2].box[1]: 64, but schedule.block_m is 128 and M 128: the boxes have "
     "min(block_m, M rounded up to 8) = 128 rows"),
    (_chain(_m13, _store(), _tmap(2, box=[32, 128])),
     ".tensor_maps[2].box[1]: 128, but schedule.block_m is 128 and M 13: the boxes have "
     "min(block_m, M rounded up to 8) = 16 rows"),
    (_chain(_m13, _store("cp_async"), _tmap(0, box=[32, 13])),
     ".tensor_maps[0].box[1]: 13, but schedule.block_m is 128 and M 13: the boxes have "
     "min(block_m, M rounded up to 8) = 16 rows"),
    # swizzle S (a narrower one is below the box's row, which the entry rules reject).
    (_chain(_store(), _tmap(2, swizzle=0)),
     ".tensor_maps[2].swizzle: 0, but the tma_store map's rows of 128 bytes use swizzle 128"),
    (_chain(_store("cp_async"), _tmap(0, swizzle=0)),
     ".tensor_maps[0].swizzle: 0, but the tma_store map's rows of 128 bytes use swizzle 128"),
    (_chain(_bf16_out, _block_n(32), _store(), _tmap(2, swizzle=128)),
     ".tensor_maps[2].swizzle: 128, but the tma_store map's rows of 64 bytes use swizzle 64"),
    (_chain(_bf16_out, _block_n(16), _store(), _tmap(2, swizzle=64)),
     ".tensor_maps[2].swizzle: 64, but the tma_store map's rows of 32 bytes use swizzle 32"),
    (_chain(_block_n(8), _store("sync"), _tmap(0, swizzle=128)),
     ".tensor_maps[0].swizzle: 128, but the tma_store map's rows of 32 bytes use swizzle 32"),
    # The output's map is checked before the operands'.
    (_chain(_store(), _tmap(0, box=[64, 64]), _tmap(2, swizzle=0)),
     ".tensor_maps[2].swizzle: 0, but the tma_store map's rows of 128 bytes use swizzle 128"),
    (_chain(_bf16_out, _block_n(8), _store(columns=8, swizzle=32), _tmap(1, box=[64, 256])),
     ".tensor_maps[2]: schedule.block_n x sizeof(bf16) = 8 x 2 = 16 bytes is not a multiple "
     "of 32 (tma_store stores boxes of 32 to 128 bytes of columns)"),
    (_chain(_store(), _tmap(0, box=[64, 64])),
     ".tensor_maps[0].box[1]: 64, but schedule.block_m is 128"),
    (_sched(tma_store="yes"), ".schedule.tma_store: must be a boolean, got a string"),
    (_sched(tma_store=1), ".schedule.tma_store: must be a boolean, got an integer"),
    (_chain(_store("cp_async"), _pop("schedule", "block_m")),
     ".schedule.block_m: missing field"),
    (_chain(_store("sync"), _sched(block_n=None)),
     ".schedule.block_n: must be an integer, got null"),
]


def _both_b(k):
    for m in k["tensor_maps"]:
        m["tensor"] = "b"


def _both_a(k):
    for m in k["tensor_maps"]:
        m["tensor"] = "a"


def _f32(k):
    for p in k["params"][:2]:
        p["dtype"] = "f32"
    k["tensor_maps"][0]["box"] = [32, 128]
    k["tensor_maps"][1]["box"] = [32, 256]


def _other_copy(copy, maps):
    def change(k):
        k["schedule"].update(copy=copy, block_m="informational")
        if maps is None:
            del k["tensor_maps"]
        else:
            k["tensor_maps"] = maps
    return change


SCHEDULE_OK = [
    ("as kopt-opt writes it", lambda k: None),
    ("decode: A of 13 rows, boxes of 16",
     lambda k: (k["params"][0].update(shape=[13, 64]), k["params"][2].update(shape=[13, 256]),
                k["tensor_maps"][0].update(box=[64, 16]))),
    ("one buffer for both operands: both maps of b", _both_b),
    ("one buffer for both operands: both maps of a", _both_a),
    ("f32 operands (TF32): 32-element rows", _f32),
    ("cp_async without maps", _other_copy("cp_async", None)),
    ("sync with []", _other_copy("sync", [])),
    ("no schedule: the entries' rules only", lambda k: (k.pop("schedule"), _swap_maps(k))),
    ("tma_store = false", _sched(tma_store=False)),
    ("tma_store: maps of a, b, then the output", _store()),
    ("tma_store with cp_async: the output's map only", _store("cp_async")),
    ("tma_store with sync: the output's map only", _store("sync")),
    # Rows of S bytes, S the largest of 128, 64, 32 dividing block_n x sizeof(C).
    ("tma_store, f32 C, block_n 256 (1024 bytes): [32, 128], swizzle 128",
     _store(columns=32, swizzle=128)),
    ("tma_store, bf16 C, block_n 256 (512 bytes): [64, 128], swizzle 128",
     _chain(_bf16_out, _store(columns=64, swizzle=128))),
    ("tma_store, bf16 C, block_n 64 (128 bytes): [64, 128], swizzle 128",
     _chain(_bf16_out, _block_n(64), _store(columns=64, swizzle=128))),
    ("tma_store, bf16 C, block_n 96 (192 bytes): [32, 128], swizzle 64",
     _chain(_bf16_out, _block_n(96), _store(columns=32, swizzle=64))),
    ("tma_store, bf16 C, block_n 32 (64 bytes): [32, 128], swizzle 64",
     _chain(_bf16_out, _block_n(32), _store(columns=32, swizzle=64))),
    ("tma_store, f32 C, block_n 16 (64 bytes): [16, 128], swizzle 64",
     _chain(_block_n(16), _store(columns=16, swizzle=64))),
    ("tma_store, bf16 C, block_n 16 (32 bytes): [16, 128], swizzle 32",
     _chain(_bf16_out, _block_n(16), _store(columns=16, swizzle=32))),
    ("tma_store, bf16 C, block_n 48 (96 bytes): [16, 128], swizzle 32",
     _chain(_bf16_out, _block_n(48), _store(columns=16, swizzle=32))),
    ("tma_store, f32 C, block_n 8 (32 bytes), cp_async: [8, 128], swizzle 32",
     _chain(_block_n(8), _store("cp_async", columns=8, swizzle=32))),
    ("tma_store, M = 13: boxes of 16 rows", _chain(_m13, _store())),
    ("tma_store, M = 13, cp_async", _chain(_m13, _store("cp_async"))),
    ("tma_store, block_m 64", _chain(_sched(block_m=64), _tmap(0, box=[64, 64]), _store())),
    ("no schedule: a map of the output is an entry like another",
     _chain(_store(), lambda k: k.pop("schedule"))),
]


def _kopt_run():
    """kopt-run built in this tree (or $KOPT_RUN), for the C++ parser; None if none."""
    root = os.path.dirname(HERE)
    for path in [os.environ.get("KOPT_RUN")] + [
            os.path.join(root, d, "bin", "kopt-run") for d in ("build", "build-rt")]:
        if path and os.access(path, os.X_OK):
            return path
    return None


class TensorMapSchedule(unittest.TestCase):
    """kernels[].tensor_maps against the op and schedule (docs/manifest.md):
    copy = tma takes exactly the maps of a and b with boxes of the block tile,
    other copies and other ops none; tma_store = true one more, last, of the
    output; the same messages as the C++ parser."""

    def test_good(self):
        for what, change in SCHEDULE_OK:
            k = sched_kernel()
            change(k)
            self.assertIsNone(ks.tensor_map_error(k, MM), what)
        # A schedule on another kernel is not read.
        self.assertIsNone(ks.tensor_map_error(dict(GELU, tensor_maps=[], schedule=5)))
        # Nor are maps asked of a kernel without op (as the suite's check_manifest
        # tests write them) unless it has some.
        self.assertIsNone(ks.tensor_map_error({"name": "exp_0", "params": [{}, {}]}))

    def test_errors(self):
        for change, want in SCHEDULE_ERRORS:
            k = sched_kernel()
            change(k)
            self.assertEqual(ks.tensor_map_error(k, MM), MM + want)
        self.assertEqual(ks.tensor_map_error(GELU, "kernels[3] (gelu_3)"),
                         "kernels[3] (gelu_3).tensor_maps: op gelu takes no tensor maps (only "
                         "a matmul whose schedule.copy is 'tma' or schedule.tma_store true has them), got 1")
        with self.assertRaisesRegex(ks.ManifestError, r"box\[1\]: 64, but schedule.block_m"):
            k = sched_kernel()
            k["tensor_maps"][0]["box"] = [64, 64]
            ks.check_tensor_map_schedule(k)

    def test_store_swizzle_bytes(self):
        """tma_store's rows (and swizzle): the largest of 128, 64 and 32 bytes dividing
        block_n x sizeof(C), 0 when none does (kopt::schedule::tmaStoreSwizzleBytes)."""
        for block_bytes, want in ((1024, 128), (512, 128), (256, 128), (128, 128),
                                  (384, 128), (192, 64), (64, 64), (320, 64), (96, 32),
                                  (32, 32), (160, 32), (16, 0), (48, 0), (8, 0), (2, 0)):
            self.assertEqual(ks.tma_store_swizzle_bytes(block_bytes), want, block_bytes)

    def test_same_as_the_cpp_parser(self):
        """Every case above through kopt-run's parser (read before the driver is
        opened): the same message, or no manifest error."""
        kopt_run = _kopt_run()
        if kopt_run is None:
            self.skipTest("kopt-run is not built (build/bin/kopt-run or $KOPT_RUN)")
        import subprocess
        import tempfile
        cases = [(c, MM + w) for c, w in SCHEDULE_ERRORS] + [(c, None) for _, c in SCHEDULE_OK]
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "t.json")
            for change, want in cases:
                k = sched_kernel()
                change(k)
                m = sched_manifest(k)
                if want and "'b' [64, 256]" in want:  # b stored [K, N]: its function arg too
                    m["functions"][0]["args"][1]["shape"] = [64, 256]
                with open(path, "w") as f:
                    json.dump(m, f)
                r = subprocess.run([kopt_run, path, "--kernel", "no_such_kernel"],
                                   capture_output=True, text=True, timeout=60)
                self.assertEqual(r.returncode, 2, r.stderr)
                if want is None:
                    self.assertIn("no kernel named 'no_such_kernel'", r.stderr)
                    self.assertIsNone(ks.tensor_map_error(k, MM))
                else:
                    self.assertIn(f"kopt-run: error: {path}: {want}\n", r.stderr)
                    self.assertEqual(ks.tensor_map_error(k, MM), want)

    def test_check_manifest(self):
        """compile_suite.check_manifest applies the rules to every kernel."""
        p = problem([{"name": "x", "shape": [128, 64], "dtype": "bf16"},
                     {"name": "w", "shape": [256, 64], "dtype": "bf16"}],
                    [{"op": "matmul", "args": ["x", "w"], "attrs": {"transpose_b": True},
                      "out": "y", "dtype": "f32"}], ["y"])
        m = sched_manifest(sched_kernel())
        m["functions"][0]["name"] = "t"
        ptx = ".visible .entry matmul_0(\n"
        self.assertIsNone(compile_suite.check_manifest(p, m, ptx))
        m["kernels"][0]["tensor_maps"][0]["box"] = [64, 64]
        self.assertEqual(compile_suite.check_manifest(p, m, ptx),
                         "kernels[0].tensor_maps[0].box[1]: 64, but schedule.block_m is 128")


class LaunchParamCount(unittest.TestCase):
    """The PTX entry's parameter count (cuFuncGetParamInfo) against the manifest:
    params, then one per tensor map."""

    def test_count(self):
        k = sched_kernel()
        self.assertIsNone(ks.launch_param_count_error(k, 5))
        want = "kernel 'matmul_0': the PTX entry takes {} parameters, the manifest lists {}"
        self.assertEqual(ks.launch_param_count_error(k, 3),
                         want.format(3, "3 params and 2 tensor maps"))
        k["tensor_maps"].pop()
        self.assertEqual(ks.launch_param_count_error(k, 5),
                         want.format(5, "3 params and 1 tensor map"))
        del k["tensor_maps"]
        self.assertEqual(ks.launch_param_count_error(k, 5),
                         want.format(5, "3 params and no tensor maps"))
        self.assertIsNone(ks.launch_param_count_error(k, 3))


if __name__ == "__main__":
    unittest.main()
