"""kopt-run --batch (and -o refusals) against the fake driver (test/unit/FakeCuda), as kopt-tune uses it.

  RunKoptRunBatch.py KOPT_RUN FAKE_INPUTS WORK_DIR   (LD_LIBRARY_PATH: the fake driver)

One context for the manifests a list names, one compact report line each in the
--jsonl file, appended as each finishes; a manifest that cannot be read gets a line
with its error and the batch goes on; one whose run fails (here: PTX that does not
load) gets its line and ends the batch; the exit code is the worst one's.
"""
import json
import os
import subprocess
import sys


def run(kopt_run, args):
    return subprocess.run([kopt_run] + args, capture_output=True, text=True, timeout=300)


def main():
    kopt_run, fake, work = sys.argv[1:4]
    os.makedirs(work, exist_ok=True)
    ok = os.path.join(fake, "ok.json")
    badptx = os.path.join(fake, "badptx.json")
    missing = os.path.join(work, "missing.json")
    lst = os.path.join(work, "batch.list")
    out = os.path.join(work, "batch.jsonl")
    if os.path.exists(out):
        os.unlink(out)
    with open(lst, "w") as f:
        f.write("# manifests\n\n%s\n%s\n%s\n%s\n%s\n" % (ok, missing, ok, badptx, ok))
    p = run(kopt_run, ["--batch", lst, "--jsonl", out, "--runs", "3", "--warmup", "1",
                       "--seed", "1"])
    assert p.returncode == 2, (p.returncode, p.stderr)
    lines = [json.loads(line) for line in open(out)]
    assert [os.path.basename(j["manifest"]) for j in lines] == \
        ["ok.json", "missing.json", "ok.json", "badptx.json"], lines
    for j in (lines[0], lines[2]):
        assert j["exit_code"] == 0 and j["passed"] is True, j
        assert j["device"]["name"] == "kopt fake device", j["device"]
        assert j["seed"] == 1 and len(j["kernels"]) == 12, j
        assert all(k["check"]["passed"] for k in j["kernels"])
    assert lines[1]["exit_code"] == 2 and "cannot open manifest" in lines[1]["error"]
    assert lines[3]["exit_code"] == 2 and "CUDA_ERROR_INVALID_PTX" in lines[3]["error"]
    assert "cannot open manifest" in p.stderr and "INVALID_PTX" in p.stderr

    # Appends: a second batch adds its line; --kernel selects in every manifest.
    with open(lst, "w") as f:
        f.write(ok + "\n")
    p = run(kopt_run, ["--batch", lst, "--jsonl", out, "--runs", "2", "--warmup", "0",
                       "--seed", "1", "--kernel", "add_bcast_f32"])
    assert p.returncode == 0, p.stderr
    lines = [json.loads(line) for line in open(out)]
    assert len(lines) == 5 and [k["name"] for k in lines[4]["kernels"]] == ["add_bcast_f32"]

    # The report file must not be one of the manifests.
    before = open(ok, "rb").read()
    p = run(kopt_run, ["--batch", lst, "--jsonl", ok])
    assert p.returncode == 2 and "would overwrite the manifest" in p.stderr, p.stderr
    assert open(ok, "rb").read() == before
    # Nor over the PTX a manifest names (a single run's -o): refused, and the
    # PTX is left as it was (a copy of the fake manifest and PTX).
    import shutil
    for name in ("ok.json", "fake.ptx"):
        shutil.copy(os.path.join(fake, name), os.path.join(work, name))
    ptx = os.path.join(work, "fake.ptx")
    before = open(ptx, "rb").read()
    p = run(kopt_run, [os.path.join(work, "ok.json"), "-o", ptx])
    assert p.returncode == 2 and "would overwrite the manifest's PTX" in p.stderr, p.stderr
    assert open(ptx, "rb").read() == before, "kopt-run wrote over the PTX"
    # An unwritable report.
    p = run(kopt_run, ["--batch", lst, "--jsonl", os.path.join(work, "no", "such", "x.jsonl")])
    assert p.returncode == 2 and "cannot write" in p.stderr, p.stderr
    print("ok")


if __name__ == "__main__":
    main()
