#!/usr/bin/env python3
"""Unit tests of the GPU runners' shared parts (no torch, no GPU): the worker-process
protocol (worker_process.py: events, starting, echoing and killing a worker, a worker
that cannot start, the end of a run), the timing options (gpu_worker.py) and the
one-command wrappers (run_suite.sh, run_sweep.sh through run_common.sh).

    python3 bench/test_runner_parts.py        (CTest: bench-runner-unit)
"""
import argparse
import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gpu_worker  # noqa: E402
import worker_process  # noqa: E402


class Events(unittest.TestCase):
    def test_read_events(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "events.jsonl")
            self.assertEqual(worker_process.read_events(path, 0), ([], 0))  # no file yet
            with open(path, "w") as f:
                f.write('{"event": "env"}\n\n{"event": "start", "name": "a"}\n{"event": "res')
            events, pos = worker_process.read_events(path, 0)
            self.assertEqual(events, [{"event": "env"}, {"event": "start", "name": "a"}])
            with open(path, "a") as f:
                f.write('ult", "record": {}}\n')
            # The line that was being written is read whole the next time.
            events, pos2 = worker_process.read_events(path, pos)
            self.assertEqual(events, [{"event": "result", "record": {}}])
            self.assertEqual(pos2, os.path.getsize(path))
            self.assertEqual(worker_process.read_events(path, pos2), ([], pos2))


class Workers(unittest.TestCase):
    def test_start_worker_echoes_and_logs(self):
        with tempfile.TemporaryDirectory() as d:
            logpath = os.path.join(d, "run.log")
            code = "for i in range(30): print('line', i)\nimport sys; print('err', file=sys.stderr)"
            out = io.StringIO()
            with open(logpath, "w") as logf, contextlib.redirect_stdout(out):
                proc, reader, tail = worker_process.start_worker(
                    [sys.executable, "-c", code], logf)
                self.assertEqual(proc.wait(timeout=60), 0)
                reader.join(timeout=10)
            with open(logpath) as f:
                logged = f.read()
            self.assertEqual(out.getvalue(), logged)
            self.assertIn("line 0\n", logged)
            self.assertIn("err\n", logged)  # stderr too
            self.assertEqual(len(tail), 25)
            self.assertEqual(tail[-1], "err")
            self.assertEqual(tail[0], "line 6")

    def test_kill_worker(self):
        with contextlib.redirect_stdout(io.StringIO()):
            proc, reader, _ = worker_process.start_worker(
                [sys.executable, "-c", "import time; print('up', flush=True); time.sleep(600)"])
            t0 = time.monotonic()
            worker_process.kill_worker(proc)
            reader.join(timeout=10)
        self.assertLess(proc.returncode, 0)
        self.assertLess(time.monotonic() - t0, 30)

    def run_worker_main(self, worker_code, driver_pid=None):
        """worker_main in a child process (it sets the child's parent-death signal)
        with the worker class W that `worker_code` defines; the plan's driver is this
        process unless `driver_pid` says otherwise. Returns (the child's result, its
        events)."""
        with tempfile.TemporaryDirectory() as d:
            plan = {"events": os.path.join(d, "events.jsonl"),
                    "driver_pid": os.getpid() if driver_pid is None else driver_pid}
            plan_path = os.path.join(d, "plan.json")
            with open(plan_path, "w") as f:
                json.dump(plan, f)
            code = (f"import os, sys; sys.path.insert(0, {HERE!r}); import worker_process\n"
                    f"{worker_code}\n"
                    "sys.exit(worker_process.worker_main(sys.argv[1], W))")
            r = subprocess.run([sys.executable, "-c", code, plan_path], capture_output=True,
                               text=True, timeout=60)
            return r, worker_process.read_events(plan["events"], 0)[0]

    def test_worker_main(self):
        r, events = self.run_worker_main("class W:\n    def __init__(self, plan): pass\n"
                                         "    def main(self): return 7")
        self.assertEqual((r.returncode, events), (7, []))

    def test_worker_cannot_start(self):
        r, events = self.run_worker_main("class W:\n    def __init__(self, plan):\n"
                                         "        raise RuntimeError('no CUDA device')")
        self.assertEqual(r.returncode, 4)
        self.assertEqual(events, [{"event": "fatal", "error": "RuntimeError: no CUDA device"}])
        self.assertIn("Traceback", r.stderr)

    def test_worker_without_driver(self):
        r, events = self.run_worker_main("class W:\n    pass", driver_pid=1)
        self.assertEqual((r.returncode, events), (5, []))


class Outputs(unittest.TestCase):
    def test_write_outputs(self):
        with tempfile.TemporaryDirectory() as d:
            for name in ("plan.json", "events.jsonl"):
                open(os.path.join(d, name), "w").close()
            logged = []

            def reports(rec):
                path = os.path.join(d, "r.md")
                with open(path, "w") as f:
                    f.write(str(rec["x"]))
                return [path]
            written = worker_process.write_outputs(d, "rec.json", {"x": 1, "t": time},
                                                   reports, logged.append, "no report")
            self.assertEqual(written, [os.path.join(d, "rec.json"), os.path.join(d, "r.md")])
            with open(written[0]) as f:
                text = f.read()
            self.assertEqual(text, json.dumps({"x": 1, "t": str(time)}, indent=1) + "\n")
            self.assertEqual(sorted(os.listdir(d)), ["r.md", "rec.json"])
            self.assertEqual(logged, [])

    def test_report_failure_keeps_record(self):
        with tempfile.TemporaryDirectory() as d:
            logged = []

            def reports(rec):
                raise ValueError("boom")
            with contextlib.redirect_stderr(io.StringIO()) as err:
                written = worker_process.write_outputs(d, "rec.json", {}, reports,
                                                       logged.append, "the report failed")
            self.assertEqual(written, [os.path.join(d, "rec.json")])
            self.assertEqual(logged, ["error: the report failed"])
            self.assertIn("ValueError: boom", err.getvalue())


class TimingOptions(unittest.TestCase):
    def parser(self):
        ap = argparse.ArgumentParser(  # one line an option in format_help
            formatter_class=lambda prog: argparse.HelpFormatter(prog, width=200))
        gpu_worker.add_timing_options(ap, runs=30, time_budget=1.5, deadline=480.0,
                                      unit="kernel", starts="nothing new")
        return ap

    def parse(self, argv):
        ap = self.parser()
        args = ap.parse_args(argv)
        gpu_worker.check_timing_options(ap, args)
        return args

    def test_defaults(self):
        args = self.parse([])
        self.assertEqual(gpu_worker.timing_options(args),
                         {"runs": 30, "warmup": 10, "min_runs": 10, "time_budget_s": 1.5,
                          "seed": 20261129})
        self.assertEqual(args.deadline, 480.0)
        text = self.parser().format_help()
        self.assertIn("timed runs per kernel (default 30)", text)
        self.assertIn("(default 1.5)", text)
        self.assertIn("after which nothing new starts (0: none; default 480)", text)

    def test_min_runs_capped(self):
        args = self.parse(["--runs", "3", "--min-runs", "8", "--warmup", "0"])
        self.assertEqual((args.runs, args.min_runs, args.warmup), (3, 3, 0))

    def test_errors(self):
        for argv in (["--runs", "0"], ["--min-runs", "0"], ["--warmup", "-1"],
                     ["--time-budget", "0"]):
            err = io.StringIO()
            with contextlib.redirect_stderr(err), self.assertRaises(SystemExit) as cm:
                self.parse(argv)
            self.assertEqual(cm.exception.code, 2, argv)
            self.assertIn("--runs and --min-runs must be at least 1", err.getvalue())


class Wrappers(unittest.TestCase):
    """run_suite.sh and run_sweep.sh with PYTHON set to a script that prints its
    arguments: the command they run, and their usage."""

    def run_sh(self, script, *args):
        with tempfile.TemporaryDirectory() as d:
            fake = os.path.join(d, "python")
            with open(fake, "w") as f:
                f.write("#!/bin/sh\nfor a in \"$@\"; do echo \"$a\"; done\nexit 3\n")
            os.chmod(fake, 0o755)
            env = dict(os.environ, PYTHON=fake)
            return subprocess.run(["bash", os.path.join(HERE, script), *args], env=env,
                                  capture_output=True, text=True, timeout=60)

    def test_commands(self):
        cases = [
            ("run_suite.sh", ["P", "O", "--only", "x y"],
             ["run_suite.py", "--ptx-dir", "P", "--out", "O", "--only", "x y"]),
            ("run_suite.sh", ["--compile", "S", "O", "--deadline", "330"],
             ["run_suite.py", "--compile", "S", "--out", "O", "--deadline", "330"]),
            ("run_sweep.sh", ["D", "O", "--dry-run"],
             ["run_sweep.py", "--sweep-dir", "D", "--out", "O", "--dry-run"]),
        ]
        for script, args, want in cases:
            r = self.run_sh(script, *args)
            self.assertEqual(r.returncode, 3, r.stderr)  # the script's exit code
            got = r.stdout.splitlines()
            self.assertEqual(got[0], os.path.join(HERE, want[0]))
            self.assertEqual(got[1:], want[1:])

    def test_usage(self):
        for script, args, first in (("run_suite.sh", [], "The benchmark suite on a GPU host"),
                                    ("run_suite.sh", ["P"], "The benchmark suite"),
                                    ("run_suite.sh", ["--compile", "S"], "The benchmark"),
                                    ("run_sweep.sh", ["D"], "The matmul schedule sweep")):
            r = self.run_sh(script, *args)
            self.assertEqual(r.returncode, 2, (script, args))
            self.assertEqual(r.stdout, "")
            self.assertTrue(r.stderr.startswith(first), r.stderr)
            self.assertNotIn("set -u", r.stderr)
            self.assertIn("Exit code:", r.stderr)


if __name__ == "__main__":
    unittest.main()
