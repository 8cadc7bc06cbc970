"""bench/run_kernelbench.py without a GPU: a fake KernelBench checkout (a problem
that runs, one whose model cannot be built, one that kills its worker, one
that hangs), run in eager and through the kopt backend on the CPU (where it
runs everything in PyTorch); fast_p and the summary from synthetic records."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

if os.environ.get("KOPT_REQUIRE_TORCH") == "1":
    import torch  # noqa: F401  CTest found PyTorch installed: fail, never skip
else:
    torch = pytest.importorskip("torch")

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import run_kernelbench as kbench  # noqa: E402

PROBLEM = '''
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale
    def forward(self, x):
        {body}

def get_inputs():
    return [torch.rand(8, 64)]

def get_init_inputs():
    return [{init}]
'''


def write(root, level, name, body="return torch.tanh(x) * self.scale", init="2.0"):
    folder = root / "KernelBench" / f"level{level}"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.py").write_text(PROBLEM.format(body=body, init=init))


def test_runner_on_a_fake_checkout(tmp_path):
    root = tmp_path / "kb"
    write(root, 1, "1_Tanh")
    write(root, 1, "2_BadInit", init="undefined_name")
    write(root, 1, "10_Exit", body="import os; os._exit(7)")
    write(root, 2, "1_Hang", body="import time; time.sleep(600)")
    write(root, 2, "3_Relu", body="return torch.relu(x - 0.5)")
    out = tmp_path / "out"
    cmd = [sys.executable, os.path.join(HERE, "run_kernelbench.py"), "--kernelbench", str(root),
           "--out", str(out), "--modes", "eager,kopt", "--runs", "2", "--trials", "2",
           "--problem-timeout", "25"]
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="")
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    recs = {json.loads(l)["id"]: json.loads(l) for l in open(out / "results.jsonl")}
    assert list(recs) == sorted(recs, key=kbench._order) or len(recs) == 5
    assert set(recs) == {"1/1_Tanh", "1/2_BadInit", "1/10_Exit", "2/1_Hang", "2/3_Relu"}
    tanh = recs["1/1_Tanh"]["modes"]
    assert tanh["kopt"]["correct"] and tanh["eager"]["median_ms"] > 0
    assert tanh["kopt"]["kopt_ran"] is False  # a CPU graph: all of it in PyTorch
    assert "NameError" in recs["1/2_BadInit"]["error"]
    assert "worker died (exit code 7)" in recs["1/10_Exit"]["error"]
    assert "timed out after 25" in recs["2/1_Hang"]["error"]
    assert recs["2/3_Relu"]["modes"]["kopt"]["correct"]  # after the worker was replaced
    summary = json.loads((out / "summary.json").read_text())
    k1 = summary["levels"]["1"]["kopt"]
    assert (k1["fast_0"], k1["fast_1"], k1["fast_2"], k1["correct"], k1["kopt_ran"]) == (
        round(1 / 3, 4), 0.0, 0.0, 1, 0)
    assert "check_like_kernelbench" in summary["env"]["checker"]  # no src/kernelbench
    md = (out / "summary.md").read_text()
    assert "| 1 | kopt | 3 | 1 |" in md and "1/10_Exit" in md
    # past the deadline nothing starts; --resume runs what did not run
    r = subprocess.run(cmd[:-2] + ["--problem-timeout", "25", "--deadline", "0.001",
                                   "--out", str(tmp_path / "late"), "--problems", "1/1"],
                       capture_output=True, text=True, env=env, timeout=300)
    late = [json.loads(l) for l in open(tmp_path / "late" / "results.jsonl")]
    assert r.returncode == 0 and late == [{"id": "1/1_Tanh",
                                           "error": "not run: past --deadline"}], r.stdout
    # --resume runs nothing again
    r = subprocess.run(cmd + ["--resume", "--problems", "1/1,2/3_*"], capture_output=True,
                       text=True, env=env, timeout=300)
    assert r.returncode == 0 and "0 to run" in r.stdout, r.stdout + r.stderr


def rec(pid, eager, **modes):
    return {"id": pid, "modes": dict({"eager": {"median_ms": eager, "correct": True}},
                                     **modes)}


def test_fast_p_counts_kopt_only_where_it_ran_its_kernels():
    recs = [
        rec("1/1_A", 1.0, kopt={"median_ms": 0.4, "correct": True, "kopt_ran": True},
            inductor={"median_ms": 0.8, "correct": True}),
        rec("1/2_B", 1.0, kopt={"median_ms": 0.4, "correct": True, "kopt_ran": False},
            inductor={"median_ms": 1.2, "correct": True}),
        rec("1/3_C", 1.0, kopt={"median_ms": 0.9, "correct": False, "kopt_ran": True},
            inductor={"error": "boom"}),
        rec("1/4_D", 1.0, kopt={"median_ms": 1.2, "correct": True, "kopt_ran": True},
            inductor={"median_ms": 0.3, "correct": True}),
    ]
    s = kbench.summarize(recs, ["eager", "inductor", "kopt"], [1])
    k, i = s["levels"]["1"]["kopt"], s["levels"]["1"]["inductor"]
    assert (k["fast_0"], k["fast_1"], k["fast_2"], k["correct"], k["kopt_ran"]) == (
        0.75, 0.25, 0.25, 3, 2)
    assert (i["fast_0"], i["fast_1"], i["fast_2"]) == (0.75, 0.5, 0.25)
    assert (k["fast_1_with_fallback"], k["fast_2_with_fallback"]) == (0.5, 0.5)
    assert "fast_1_with_fallback" not in i
    assert s["slower_than_eager"]["kopt"] == {"1/4_D": 0.833}
    assert s["errors"] == {"1/3_C": {"inductor": "boom"}}


def test_problem_filters(tmp_path):
    root = tmp_path / "kb"
    for n in ("1_A", "19_ReLU", "100_Z"):
        write(root, 1, n)
    write(root, 2, "7_Gemm_X")
    ids = [p for p, _ in kbench.find_problems(str(root), [1, 2], [])]
    assert ids == ["1/1_A", "1/19_ReLU", "1/100_Z", "2/7_Gemm_X"]
    assert [p for p, _ in kbench.find_problems(str(root), [1, 2], ["1/19", "2/*Gemm*"])] == [
        "1/19_ReLU", "2/7_Gemm_X"]
    with pytest.raises(SystemExit, match="not a KernelBench checkout"):
        kbench.find_problems(str(tmp_path), [1], [])


def test_workers_that_hang_before_or_after_their_problems_are_stopped(tmp_path):
    """Found by a break test: a KernelBench package whose import hangs, and a
    problem that leaves a non-daemon thread, each hung the runner forever."""
    root = tmp_path / "kb"
    write(root, 1, "1_Tanh")
    pkg = root / "src" / "kernelbench"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("import time\ntime.sleep(100000)\n")
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="")
    base = [sys.executable, os.path.join(HERE, "run_kernelbench.py"), "--levels", "1",
            "--modes", "eager",
            "--runs", "1", "--trials", "1"]
    r = subprocess.run(base + ["--kernelbench", str(root), "--out", str(tmp_path / "a"),
                               "--startup-timeout", "20"],
                       capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    (rec,) = kbench.read_results(tmp_path / "a" / "results.jsonl")
    assert rec["error"] == "worker did not start within 20.0 s"
    root2 = tmp_path / "kb2"
    write(root2, 1, "1_Thread",
          body="import threading, time; threading.Thread(target=time.sleep, "
               "args=(100000,)).start(); return x * self.scale")
    r = subprocess.run(base + ["--kernelbench", str(root2), "--out", str(tmp_path / "b")],
                       capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0 and "did not exit after its last problem" in r.stdout, r.stdout
    (rec,) = kbench.read_results(tmp_path / "b" / "results.jsonl")
    assert rec["modes"]["eager"]["median_ms"] > 0


def test_damaged_results_lines_are_skipped_and_named(tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    (out / "results.jsonl").write_bytes(b'{"id": "1/1_A", "error": "x"}\n[1, 2]\n'
                                        b'\xff\xfe\n{"id": "1/2_B", "err')
    recs = kbench.read_results(out / "results.jsonl")
    assert [r["id"] for r in recs] == ["1/1_A"]
    err = capsys.readouterr().out
    assert "results.jsonl:2: skipped" in err and "results.jsonl:4: skipped" in err


@pytest.mark.parametrize("argv, message", [
    (["--levels", "x"], "--levels"), (["--gpu-ids", "a,b"], "--gpu-ids"),
    (["--problem-timeout", "0"], "--problem-timeout"), (["--modes", "kopt"], "no eager")])
def test_bad_arguments_are_usage_errors(argv, message, capsys):
    with pytest.raises(SystemExit) as e:
        kbench.parse_args(["--kernelbench", "k", "--out", "o"] + argv)
    assert e.value.code == 2 and message in capsys.readouterr().err


def test_kopt_ran_counts_kopt_and_split_choices_only():
    assert kbench.kopt_ran({"graph 0 partition_0": "kopt"}, 1)
    assert kbench.kopt_ran({"graph 0 partition_0": "split"}, 1)
    assert not kbench.kopt_ran({"graph 0 partition_0": "pytorch"}, 1)
    assert not kbench.kopt_ran({"graph 0 partition_0": "inductor",
                                "graph 0 inductor_group_0": "inductor"}, 1)
    # Inductor's groups are not kopt's partitions: with no partition choice
    # recorded, a partition that compiled counts.
    assert kbench.kopt_ran({"graph 0 inductor_group_0": "eager"}, 1)
    assert not kbench.kopt_ran({}, 0)
