#!/usr/bin/env python3
"""Unit tests of the schedule-sweep runner's driver (bench/run_sweep.py's drive, its
worker loop in sweep_worker.py): worker restarts after a crash, a sticky CUDA error or
a hang, a setup that fails, the deadline, a worker that cannot start; with a fake
worker that needs no torch and no GPU.

    python3 bench/test_sweep_driver.py        (CTest: bench-sweep-driver)

Run with --fake-worker PLAN, this file is the fake worker the driver tests start.
"""
import json
import os
import signal
import sys
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import run_sweep as rs  # noqa: E402
import sweep_index as si  # noqa: E402
import sweep_worker as sw  # noqa: E402
import worker_process  # noqa: E402
from sweep_fixtures import gemm, make_dir  # noqa: E402
from testutil import TempDir, quiet  # noqa: E402


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
