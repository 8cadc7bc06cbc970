"""Plots kopt-tune --report's CSV: best-so-far against trials, per strategy.

    python3 -m kopt.tune_report REPORT.csv REPORT.png

One panel per problem (workload and op chain): for every strategy the median
over runs of (best time after t trials) / (best time of the table), with the
10th-90th percentile band; 1.0 is the table's best, the dashed line 3% above
it. kopt-tune --report runs this after writing the CSV. Needs matplotlib.
"""

import csv
import math
import sys


def load(path):
    problems = {}
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            key = (row["workload"], row["ops"])
            series = problems.setdefault(key, {}).setdefault(
                row["strategy"], {"t": [], "median": [], "p10": [], "p90": []})
            series["t"].append(int(row["trials"]))
            for name in ("median", "p10", "p90"):
                v = row[f"{name}_ratio"]
                series[name].append(float(v) if v else math.nan)
    return problems


def plot(csv_path, png_path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    problems = load(csv_path)
    if not problems:
        raise SystemExit(f"{csv_path}: no curve to plot")
    cols = min(3, len(problems))
    rows = math.ceil(len(problems) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(5 * cols, 3.6 * rows), squeeze=False)
    for ax, ((workload, ops), strategies) in zip(axes.flat, sorted(problems.items())):
        for name, s in sorted(strategies.items()):
            line, = ax.plot(s["t"], s["median"], label=name)
            ax.fill_between(s["t"], s["p10"], s["p90"], alpha=0.2, color=line.get_color())
        ax.axhline(1.03, linestyle="--", color="grey", linewidth=0.8)
        ax.set_title(f"{workload.split('/')[1]} {workload.split('/')[2]} {ops}", fontsize=9)
        ax.set_xlabel("trials")
        ax.set_ylabel("best / table best")
        top = max((v for s in strategies.values() for v in s["p90"] if math.isfinite(v)),
                  default=2.0)
        ax.set_ylim(0.99, min(top, 3.0) * 1.02)
        ax.legend(fontsize=7)
    for ax in list(axes.flat)[len(problems):]:
        ax.axis("off")
    fig.tight_layout()
    fig.savefig(png_path, dpi=100)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit("usage: python3 -m kopt.tune_report REPORT.csv REPORT.png")
    plot(sys.argv[1], sys.argv[2])
