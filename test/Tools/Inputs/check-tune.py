"""Checks of kopt-tune's outputs for test/Tools/kopt-tune.test.

  check-tune.py table TABLE.json LOG.jsonl N   the final table and the trial log
  check-tune.py unique ALL.jsonl N             N trials, no schedule twice per session
  check-tune.py replay TABLE.json N            a replay covered the table's N points
"""
import json
import sys


def table(path, log, n):
    t = json.load(open(path))
    assert t["measurer"] == "model" and t["budget"] == n, t
    rows = t["kernels"]
    assert [r["kernel"] for r in rows] == ["matmul_0", "matmul_1"], rows
    assert sum(r["trials"] for r in rows) == n, rows
    for r in rows:
        assert r["best_ms"] <= r["heuristic_ms"], r
        assert r["best_schedule"]["instruction"] in ("wgmma", "mma_sync", "ffma", "gemv"), r
    trials = [json.loads(line) for line in open(log)]
    assert len(trials) == n, len(trials)
    assert all(x["measurer"] == "model" and x["status"] == "ok" for x in trials)
    for r in rows:
        mine = [x for x in trials if x["kernel"] == r["kernel"]]
        assert abs(min(x["median_ms"] for x in mine) - r["best_ms"]) < 1e-12


def unique(path, n):
    trials = [json.loads(line) for line in open(path)]
    assert len(trials) == n, len(trials)
    keys = [(x["session"], x["workload"], json.dumps(x["schedule"], sort_keys=True))
            for x in trials]
    assert len(set(keys)) == n, "a schedule was tried twice in a session"
    assert len({x["session"] for x in trials}) == 1


def replay(path, n):
    t = json.load(open(path))
    assert sum(r["trials"] for r in t["kernels"]) == n, t["kernels"]


if __name__ == "__main__":
    what = sys.argv[1]
    if what == "table":
        table(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    elif what == "unique":
        unique(sys.argv[2], int(sys.argv[3]))
    else:
        replay(sys.argv[2], int(sys.argv[3]))
    print("ok")
