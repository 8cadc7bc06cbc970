#!/usr/bin/env python3
"""Unit tests of the benchmark suite's GPU-free parts: the suite file, shape
inference, the generated kopt and PyTorch text, FLOPs/bytes, roofline and SOL
score, derived figures, aggregates, the manifest check (kopt's C++ reader through
the Python package, then the suite's own checks), the in-process compile of
run_suite.py --compile and the Markdown report. Needs the kopt package and a
libkopt.so with the compiler (CTest sets KOPT_LIBRARY and PYTHONPATH).

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
from testutil import assert_all_in  # noqa: E402


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
        self.assertLessEqual(len(self.problems), 50)
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
        assert_all_in(self, text, [
            "%y = kopt.layernorm %x weight(%w : tensor<8xf16>) bias(%b : "
            "tensor<8xf16>) eps = 1.000000e-12 : tensor<3x8xf16>",
            "%z = kopt.rmsnorm %y eps = 1.000000e-05 : tensor<3x8xf16>",
            "%m = kopt.reduce max %z : tensor<3x8xf16> -> tensor<3xf32>",
            "%zb = kopt.cast %z : tensor<3x8xf16> to tensor<3x8xbf16>",
            "%g = kopt.gelu %zb approximate(tanh) : tensor<3x8xbf16>",
            "-> (tensor<3xf32>, tensor<3x8xbf16>)",
            "return %m, %g : tensor<3xf32>, tensor<3x8xbf16>",
        ])
        src = ks.torch_source(p)
        assert_all_in(self, src, [
            "y = F.layer_norm(x, (8,), w, b, eps=1e-12)",
            "z = F.rms_norm(y, (8,), None, eps=1e-05)",
            "m = z.amax(dim=-1).to(torch.float32)",
            "zb = z.to(torch.bfloat16)",
            "g = F.gelu(zb, approximate='tanh')",
            "return (m, g,)",
        ])
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
        assert_all_in(self, md, [
            "| 1 | llama3_8b_qkv_m2048_bf16 |",
            "unsupported",
            "Geomean speedup over PyTorch eager",
            "torch.compile: boom",
        ])


class SuiteRecord(unittest.TestCase):
    """run_suite.py's record (suite_record.py) from the workers' records."""

    def test_problem_records_and_record(self):
        import argparse
        import time
        import suite_record
        problems = ks.load_suite()["problems"][:5]
        names = [p["name"] for p in problems]
        t = {"median_ms": 0.5}
        records = {
            names[0]: {"name": names[0], "kopt": {"status": "ok", "time": t,
                                                  "check": {"outputs": []}},
                       "peers": {"eager": {"time": {"median_ms": 1.0}}}},
            names[1]: {"name": names[1], "skipped": "past --deadline"},
            names[2]: {"name": names[2], "error": "worker died (signal 9) in this problem"},
            names[4]: {"name": names[4], "peers": {}},  # not compiled (below)
            # names[3]: compiled, but no record.
        }
        comp = {n: {"name": n, "status": "ok"} for n in names[:4]}
        comp[names[4]] = {"name": names[4], "status": "unsupported-op", "error": "no fft"}
        limits = {"datasheet": ks.DATASHEET, "measured": None}
        recs = suite_record.problem_records(problems, records, comp, limits)
        self.assertEqual([r["name"] for r in recs], names)
        self.assertEqual([r["kopt"]["status"] for r in recs],
                         ["ok", "skipped", "error", "error", "unsupported"])
        self.assertEqual(recs[2]["kopt"]["error"], "worker died (signal 9) in this problem")
        self.assertEqual(recs[3]["error"], "no result")
        self.assertEqual(recs[4]["kopt"]["error"], "no fft")
        self.assertEqual(recs[0]["speedup"]["eager"], 2.0)
        self.assertNotIn("values", recs[0]["problem"])  # strip_problem
        self.assertEqual(recs[0]["model"], problems[0]["model"])
        self.assertEqual(suite_record.failed_problems(recs), names[1:4])
        comp[names[1]]["status"] = "crash"  # not compiled: compile-failed unless skipped
        self.assertEqual(suite_record.problem_records(problems[1:2], {}, comp, limits)[0]
                         ["kopt"]["status"], "compile-failed")

        args = argparse.Namespace(runs=100, min_runs=10, warmup=10, time_budget=2.0, seed=1,
                                  allow_reduced_precision=False, peers=["eager"])
        env = {"device": {"name": "NVIDIA H200"}, "software": {"torch": "2.9"},
               "sleep_cycles": 5, "loader": "kopt package", "loader_errors": []}
        rec = suite_record.build_record(args, problems, recs, env, {"copy": {}},
                                        {"git": "abc", "arch": "sm_90a", "x": 1}, limits,
                                        time.time())
        self.assertEqual(list(rec), ["tool", "format_version", "date", "wall_s", "device",
                                     "software", "compile", "method", "limits", "ceilings",
                                     "aggregates", "problems"])
        self.assertEqual(rec["tool"], "bench/run_suite.py")
        self.assertEqual(rec["compile"], {"git": "abc", "date": None, "ptxas_version": None,
                                          "arch": "sm_90a", "counts": None})
        m = rec["method"]
        self.assertEqual((m["runs"], m["sleep_cycles"], m["peers"], m["l2_flush_bytes"]),
                         (100, 5, ["eager"], 256 << 20))
        self.assertEqual(m["tf32_problems"], [p["name"] for p in problems if ks.uses_tf32(p)])
        self.assertEqual(rec["aggregates"]["kopt_status"],
                         {"ok": 1, "skipped": 1, "error": 2, "unsupported": 1})
        # No worker reported an environment.
        rec = suite_record.build_record(args, problems, recs, None, None, {}, limits, 0)
        self.assertIsNone(rec["device"])
        self.assertIsNone(rec["method"]["loader"])


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
        import gpu_worker
        t = {"median_ms": 1.0}
        ceil = {"copy": {"bytes_per_s": 4e12, "time": t},
                **{f"gemm_{dt}": {"flops_per_s": r, "time": t}
                   for dt, r in (("bf16", 7e14), ("f16", 7e14), ("f32", 5e13))}}
        self.assertNotIn("tf32", gpu_worker.measured_limits(ceil)["matmul_flops"])
        ceil["gemm_tf32"] = {"flops_per_s": 3.5e14, "time": t}
        self.assertEqual(gpu_worker.measured_limits(ceil)["matmul_flops"]["tf32"], 3.5e14)
        record = {"device": {"name": "NVIDIA H200"},
                  "limits": {"datasheet": ks.DATASHEET,
                             "measured": gpu_worker.measured_limits(ceil)},
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
    """compile_suite.check_manifest: the manifest checked by kopt's C++ reader
    through the package (kopt.validate_manifest), then against the suite."""

    def test_check_manifest(self):
        kopt = ks.import_kopt()
        p = problem([{"name": "x", "shape": [4, 8], "dtype": "f32"}],
                    # Two kernels with a buffer between them (kopt-fuse puts one
                    # row op in a kernel).
                    [{"op": "softmax", "args": ["x"], "out": "y"},
                     {"op": "softmax", "args": ["y"], "out": "z"}], ["z"])
        p["name"] = "t"
        c = kopt.compile(ks.mlir_text(p), name="t.mlir")
        m, ptx = c.manifest, c.ptx
        self.assertIsNone(compile_suite.check_manifest(p, m, ptx))
        fn = m["functions"][0]
        self.assertIn("not an .entry", compile_suite.check_manifest(
            p, m, ptx.replace(fn["launches"][-1]["kernel"] + "(", "other(")))
        bad = copy.deepcopy(m)
        bad["functions"][0]["args"][1]["dtype"] = "bf16"
        # The reader first: the launch binds an f32 kernel parameter to it.
        self.assertIn("functions[0]", compile_suite.check_manifest(p, bad, ptx))
        bad = copy.deepcopy(m)
        bad["functions"][0]["args"][1]["name"] = "z2"
        bad["functions"][0]["args"][0]["shape"] = [4, 8]
        self.assertIsNone(compile_suite.check_manifest(p, bad, ptx))
        bad["functions"][0]["name"] = "u"
        self.assertEqual(compile_suite.check_manifest(p, bad, ptx),
                         "no function named t in the manifest")
        bad = copy.deepcopy(m)
        bad["functions"][0]["launches"][-1]["args"][0] = {"buffer": 3}
        err = compile_suite.check_manifest(p, bad, ptx, name="t.json")
        self.assertEqual(err, "t.json: functions[0] (t).launches[1].args[0].buffer: no "
                              "buffer with id 3")
        bad = copy.deepcopy(m)
        bad["kernels"][0]["tensor_maps"] = [{"tensor": "input", "box": [8], "swizzle": 96}]
        self.assertIn("kernels[0] (softmax_0).tensor_maps[0].swizzle: 96 is not",
                      compile_suite.check_manifest(p, bad, ptx))
        self.assertIn("invalid JSON", compile_suite.check_manifest(p, "{", ptx))

    def test_compile_in_process(self):
        """compile_suite.compile_in_process (run_suite.py --compile): the package's
        compile written as kopt-opt writes it, with compile_suite's statuses."""
        import tempfile
        kopt = ks.import_kopt()
        suite = ks.load_suite(ks.SUITE_PATH)
        ok = next(p for p in suite["problems"] if ks.expected_supported(p))
        with tempfile.TemporaryDirectory() as d:
            r = compile_suite.compile_in_process(ok, d, kopt, None, "sm_90a")
            self.assertEqual(r["status"], "ok", r)
            self.assertTrue(r["kernels"] and r["ptx_bytes"] > 0, r)
            self.assertNotIn("ptxas", r)
            with open(os.path.join(d, ok["name"] + ".json")) as f:
                self.assertEqual(json.load(f)["ptx"], ok["name"] + ".ptx")
            missing = compile_suite.compile_in_process(
                ok, d, kopt, None, "sm_90a", tuning_db=os.path.join(d, "none.db"))
            self.assertIn("no such tuning database", missing["error"])
            bad = copy.deepcopy(ok)
            bad["graph"][0]["op"] = "nonsense"
            for expect, status in (("supported", "unsupported-unexpected"),
                                   ("unsupported", "unsupported")):
                q = dict(bad, kopt={"expect": expect} if expect == "unsupported" else {})
                orig = ks.mlir_text
                ks.mlir_text = lambda p: orig(ok).replace("kopt.", "kopt.nonsense_", 1)
                try:
                    r = compile_suite.compile_in_process(q, d, kopt, None, "sm_90a")
                finally:
                    ks.mlir_text = orig
                self.assertEqual(r["status"], status, r)
                self.assertIn("error", r["error"])
                self.assertNotIn(d + os.sep, r["error"])

    def test_run_suite_compile_dry_run(self):
        """run_suite.py --compile SUITE --dry-run: the problems compiled in this
        process into OUT/compiled (compile_suite.json with compile_suite's statuses,
        an unsupported problem recorded as such), then checked as --ptx-dir; the PTX
        and manifests are the bytes kopt-opt writes."""
        import contextlib
        import io
        import subprocess
        import tempfile
        import run_suite
        names = ["llama3_8b_gate_m64_bf16", "llama3_8b_rmsnorm_m4096_bf16",
                 "llama3_8b_attn_scores_s1024_bf16"]
        with tempfile.TemporaryDirectory() as d:
            argv = ["--compile", ks.SUITE_PATH, "--out", d, "--dry-run", "--compile-jobs", "2"]
            for n in names:
                argv += ["--only", n]
            buf = io.StringIO()
            with contextlib.redirect_stdout(buf):
                rc = run_suite.main(argv)
            self.assertEqual(rc, 0, buf.getvalue())
            self.assertIn("dry run: 3 problems, 0 problems with errors", buf.getvalue())
            with open(os.path.join(d, "compiled", "compile_suite.json")) as f:
                rec = json.load(f)
            self.assertEqual({r["name"]: r["status"] for r in rec["problems"]},
                             {names[0]: "ok", names[1]: "ok", names[2]: "unsupported"})
            self.assertTrue(rec["compiler"].startswith("kopt.compile (kopt "), rec)
            self.assertIsNone(rec["ptxas"])
            kopt_opt = os.environ.get("KOPT_OPT") or os.path.join(
                os.path.dirname(HERE), "build", "bin", "kopt-opt")
            if not os.path.isfile(kopt_opt):
                self.skipTest("no kopt-opt to compare with")
            pdir = os.path.join(d, "compiled", "problems")
            for n in names[:2]:
                ref = os.path.join(d, n + ".ptx")
                subprocess.run([kopt_opt, os.path.join(pdir, n + ".mlir"),
                                f"--kopt-to-ptx=output={ref}", "-o", os.devnull], check=True)
                for ext in (".ptx", ".json"):
                    with open(os.path.join(pdir, n + ext), "rb") as f, \
                            open(ref[:-4] + ext, "rb") as g:
                        self.assertEqual(f.read(), g.read(), n + ext)
            # Usage errors.
            with contextlib.redirect_stdout(io.StringIO()), \
                    contextlib.redirect_stderr(io.StringIO()):
                with self.assertRaises(SystemExit):
                    run_suite.main(["--compile", ks.SUITE_PATH, "--dry-run"])  # no --out
                with self.assertRaises(SystemExit):
                    run_suite.main(["--compile", ks.SUITE_PATH, "--ptx-dir", d, "--out", d])
                with self.assertRaises(SystemExit):  # no such database
                    run_suite.main(["--compile", ks.SUITE_PATH, "--out", d, "--dry-run",
                                    "--tuning-db", os.path.join(d, "none.db")])
                with self.assertRaises(SystemExit):  # a database without --compile
                    run_suite.main(["--ptx-dir", d, "--tuning-db", ks.SUITE_PATH])
                self.assertEqual(run_suite.main(["--compile", os.path.join(d, "none.json"),
                                                 "--out", d, "--dry-run"]), 2)

    def test_parse_ptxas(self):
        text = ("ptxas info    : Compiling entry function 'matmul_0' for 'sm_90a'\n"
                "ptxas info    : Function properties for matmul_0\n"
                "    0 bytes stack frame, 8 bytes spill stores, 4 bytes spill loads\n"
                "ptxas info    : Used 108 registers, used 1 barriers, 8192 bytes smem\n")
        self.assertEqual(compile_suite.parse_ptxas(text),
                         {"matmul_0": {"registers": 108, "spill_stores": 8, "spill_loads": 4}})


if __name__ == "__main__":
    unittest.main()
