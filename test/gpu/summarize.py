#!/usr/bin/env python3
"""Summarize a GPU test run: kopt-run and PyTorch eager side by side.

usage: summarize.py OUT_DIR

Reads OUT_DIR/<name>.kopt.json (kopt-run reports) and OUT_DIR/<name>.torch.json
(bench/torch_eager.py reports), prints a Markdown table (kernel, op, shapes,
dtype, correct, rel_err, kopt median ms, eager median ms, eager/kopt; a ratio
above 1 means kopt is faster) and writes it to OUT_DIR/summary.md, with every
row also in OUT_DIR/summary.json.

Exit code: 0 when every kopt kernel passed its check; 1 when a check failed, a
kernel or manifest hit an error, or a kopt report is missing or unreadable;
2 on usage errors.
"""

import glob
import json
import math
import os
import sys


def load(path):
    try:
        with open(path) as f:
            return json.load(f), None
    except (OSError, ValueError) as e:
        return None, f"{os.path.basename(path)}: unreadable ({e})"


def shapes_of(params):
    ins = [p for p in params if p.get("role") == "input"]
    outs = [p for p in params if p.get("role") == "output"]
    fmt = lambda p: "x".join(map(str, p["shape"])) or "scalar"  # noqa: E731
    return ", ".join(fmt(p) for p in ins) + " -> " + ", ".join(fmt(p) for p in outs)


def dtypes_of(params):
    ins = sorted({p["dtype"] for p in params if p.get("role") == "input"})
    outs = sorted({p["dtype"] for p in params if p.get("role") == "output"})
    return "/".join(ins) if ins == outs else "/".join(ins) + "->" + "/".join(outs)


def fmt(x, spec):
    return "-" if x is None else format(x, spec)


def main():
    if len(sys.argv) != 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    out_dir = sys.argv[1]
    if not os.path.isdir(out_dir):
        print(f"summarize: error: {out_dir} is not a folder", file=sys.stderr)
        return 2

    names = sorted(
        {
            os.path.basename(p)[: -len(suffix)]
            for suffix in (".kopt.json", ".torch.json")
            for p in glob.glob(os.path.join(out_dir, "*" + suffix))
        }
    )
    rows, problems, device = [], [], None
    for name in names:
        kopt, err = load(os.path.join(out_dir, name + ".kopt.json"))
        if kopt is None:
            problems.append(err)
            kopt = {"kernels": []}
        elif kopt.get("error") and not any(k.get("error") for k in kopt.get("kernels", [])):
            problems.append(f"{name}: kopt-run: {kopt['error']}")
        torch_path = os.path.join(out_dir, name + ".torch.json")
        torch_report = {"kernels": []}
        if os.path.exists(torch_path):
            torch_report, terr = load(torch_path)
            if torch_report is None:
                problems.append(f"{terr} (eager timings missing)")
                torch_report = {"kernels": []}
            elif torch_report.get("error"):
                problems.append(f"{name}: eager: {torch_report['error']} (not a kopt failure)")
        device = device or (kopt.get("device") or {}).get("name")
        eager = {k.get("name"): k for k in torch_report.get("kernels", [])}
        for k in kopt.get("kernels", []):
            check = k.get("check") or {}
            t = k.get("time") or {}
            e = eager.get(k["name"], {})
            et = e.get("time") or {}
            if k.get("error"):
                correct = "ERROR"
                problems.append(f"{name}/{k['name']}: {k['error']}")
            elif not check:
                correct = "unchecked"
            elif check.get("passed"):
                correct = "yes"
            else:
                correct = "NO"
                problems.append(f"{name}/{k['name']}: check failed: {check.get('reason')}")
            if e.get("error"):
                problems.append(f"{name}/{k['name']}: eager: {e['error']} (not a kopt failure)")
            kms, ems = t.get("median_ms"), et.get("median_ms")
            rows.append(
                {
                    "manifest": name,
                    "kernel": k["name"] if len(names) == 1 else f"{name}/{k['name']}",
                    "op": k.get("op"),
                    "shapes": shapes_of(k.get("params", [])),
                    "dtype": dtypes_of(k.get("params", [])),
                    "correct": correct,
                    "rel_err": check.get("rel_err"),
                    "tolerance": (check.get("tolerance") or {}).get("rel_err"),
                    "kopt_median_ms": kms,
                    "eager_median_ms": ems,
                    "eager_over_kopt": ems / kms if kms and ems else None,
                    "kopt_gbps": k.get("gbps"),
                    "kopt_gflops": k.get("gflops"),
                    "eager_impl": e.get("impl"),
                    "eager_rel_err_vs_fp64": (e.get("check") or {}).get("rel_err_vs_fp64"),
                }
            )

    lines = [f"# kopt GPU tests: {device or 'unknown device'}", ""]
    lines.append(
        "| kernel | op | shapes | dtype | correct | rel_err | kopt median ms "
        "| eager median ms | eager/kopt |"
    )
    lines.append("| --- | --- | --- | --- | --- | --- | ---: | ---: | ---: |")
    for r in rows:
        lines.append(
            f"| {r['kernel']} | {r['op']} | {r['shapes']} | {r['dtype']} | {r['correct']} "
            f"| {fmt(r['rel_err'], '.2e')} | {fmt(r['kopt_median_ms'], '.4f')} "
            f"| {fmt(r['eager_median_ms'], '.4f')} | {fmt(r['eager_over_kopt'], '.2f')} |"
        )
    ratios = [r["eager_over_kopt"] for r in rows if r["eager_over_kopt"]]
    lines.append("")
    passed = sum(r["correct"] == "yes" for r in rows)
    lines.append(f"{passed} of {len(rows)} kernels correct.")
    if ratios:
        geo = math.exp(sum(math.log(x) for x in ratios) / len(ratios))
        lines.append(
            f"Geometric mean of eager/kopt over {len(ratios)} kernels: {geo:.2f} "
            "(above 1: kopt faster)."
        )
    if problems:
        # Multi-line messages (ptxas logs) stay inside their list item.
        lines += ["", "## Problems", ""]
        lines += ["- " + p.replace("\n", "\n  ") for p in problems]
    text = "\n".join(lines) + "\n"
    print(text, end="")
    with open(os.path.join(out_dir, "summary.md"), "w") as f:
        f.write(text)
    with open(os.path.join(out_dir, "summary.json"), "w") as f:
        json.dump({"device": device, "rows": rows, "problems": problems}, f, indent=2)

    kopt_failed = [p for p in problems if "(not a kopt failure)" not in p
                   and "(eager timings missing)" not in p]
    if not rows and not names:
        print("summarize: error: no reports in " + out_dir, file=sys.stderr)
        return 1
    return 1 if kopt_failed else 0


if __name__ == "__main__":
    sys.exit(main())
