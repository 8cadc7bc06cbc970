"""Checks the files of kopt-tune --report (test/Tools/kopt-tune-report.test).

    check-report.py PREFIX PROBLEMS STRATEGIES BUDGET RUNS

PREFIX.csv: a header and PROBLEMS x STRATEGIES x BUDGET rows, RUNS runs each,
ratios >= 1 (nothing beats the table's best) and not increasing with the
trials; PREFIX.json: every strategy with PROBLEMS problems; PREFIX.png: a
PNG image.
"""
import csv
import json
import sys

prefix, problems, strategies, budget, runs = sys.argv[1], *map(int, sys.argv[2:])
rows = list(csv.DictReader(open(prefix + ".csv")))
assert len(rows) == problems * strategies * budget, len(rows)
curves = {}
for r in rows:
    assert int(r["runs"]) == runs, r
    curves.setdefault((r["workload"], r["strategy"]), []).append(r)
assert len(curves) == problems * strategies, curves.keys()
for key, c in curves.items():
    assert [int(r["trials"]) for r in c] == list(range(1, budget + 1)), key
    med = [float(r["median_ratio"]) for r in c if r["median_ratio"]]
    assert med and all(m >= 1 - 1e-9 for m in med), (key, med)
    assert all(a >= b - 1e-12 for a, b in zip(med, med[1:])), (key, med)
    w = [float(r["within_3pct"]) for r in c]
    assert all(0 <= x <= 1 for x in w)
summary = json.load(open(prefix + ".json"))
assert len(summary["strategies"]) == strategies, summary
for name, s in summary["strategies"].items():
    assert s["problems"] == problems, (name, s)
png = open(prefix + ".png", "rb").read(8)
assert png == b"\x89PNG\r\n\x1a\n", png
print("ok")
