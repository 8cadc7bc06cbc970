#!/usr/bin/env python3
"""Markdown table and PNG plots of a benchmark-suite record (bench/run_suite.py).

    bench/report.py SUITE_JSON [--out DIR]

Writes DIR/suite.md, DIR/speedup.png and DIR/roofline.png (DIR: the record's
folder by default). bench/run_suite.py calls the same functions at the end of a
run; this script redraws them from a record, e.g. after changing the layout.
The Markdown part needs only the standard library; the plots need matplotlib
(skipped with a message when it is missing).
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kopt_suite as ks  # noqa: E402


def _ms(t):
    if t is None:
        return ""
    return f"{t:.4f}" if t < 1 else (f"{t:.3f}" if t < 100 else f"{t:.1f}")


def _x(v):
    return "" if v is None else (f"{v:.2f}" if v >= 0.095 else f"{v:.3f}")


def _pct(v):
    return "" if v is None else f"{100 * v:.1f}%"


def _num(v, digits=3):
    if v is None:
        return ""
    return f"{v:.{digits}g}"


def _median(impl):
    return ((impl or {}).get("time") or {}).get("median_ms")


def kopt_cell(rec):
    k = rec.get("kopt") or {}
    s = k.get("status", "missing")
    if s == "ok":
        return "ok"
    if s == "incorrect":
        errs = [o.get("rel_err") for o in (k.get("check") or {}).get("outputs", [])]
        errs = [e for e in errs if e is not None]
        return "**incorrect**" + (f" (rel_err {max(errs):.2g})" if errs else "")
    if s == "unsupported":
        return "unsupported"
    return f"**{s}**"


def markdown(record):
    out = []
    dev = record.get("device") or {}
    sw = record.get("software") or {}
    method = record.get("method") or {}
    git = (record.get("compile") or {}).get("git") or {}
    out.append(f"# kopt benchmark suite: {dev.get('name', 'unknown device')}")
    out.append("")
    out.append(f"- Date: {record.get('date', '')}; kopt commit "
               f"{(git.get('commit') or 'unknown')[:12]}"
               f"{' (with uncommitted changes)' if git.get('dirty') else ''}"
               f"{': ' + git['subject'] if git.get('subject') else ''}")
    out.append(f"- Device: {dev.get('name', '?')}, {dev.get('sm_count', '?')} SMs, "
               f"driver {dev.get('driver', '?')}; torch {sw.get('torch', '?')}, "
               f"triton {sw.get('triton', '?')}, cupy {sw.get('cupy', '?')}; kopt kernels "
               f"loaded with {method.get('loader', '?')}")
    out.append(f"- Method: per implementation {method.get('warmup')} warm-up runs, then up to "
               f"{method.get('runs')} timed runs (at least {method.get('min_runs')} when one "
               f"run is slower than {method.get('time_budget_s')} s / {method.get('runs')}), "
               "each preceded by zeroing a "
               f"{(method.get('l2_flush_bytes') or 0) >> 20} MiB buffer (L2 flush)"
               + (f" and a {method.get('host_ahead_us')} us GPU spin (host kept ahead)"
                  if method.get("sleep_cycles") else "") +
               ", timed with CUDA events; the median is reported. TF32 off"
               + (" except for the problems whose GEMMs allow it ("
                  + ", ".join(method.get("tf32_problems") or []) + "; PyTorch with "
                  "allow_tf32 = True, tolerance at least "
                  f"{method.get('tf32_tolerance')})" if method.get("tf32") else "")
               + "; reduced-precision bf16/f16 GEMM reductions "
               f"{'allowed' if method.get('reduced_precision_reduction') else 'off'}. "
               "kopt's outputs are checked against a float64 reference before timing.")
    out.append("- Speedup = peer time / kopt time (above 1: kopt is faster). cuBLAS = the "
               "problem's GEMMs alone through torch.matmul (no epilogue ops). "
               "SOL score = 1 / (1 + (T_kopt - T_SOL) / (T_eager - T_SOL)), T_SOL from the "
               "datasheet limits (docs/benchmarking.md).")
    out.append("")
    lim = record.get("limits") or {}
    ds, me = lim.get("datasheet") or {}, lim.get("measured") or {}
    out.append("| limit | datasheet | measured in this run |")
    out.append("| --- | ---: | ---: |")
    for dt in ("bf16", "f16", "f32", "tf32"):
        if dt == "tf32" and "tf32" not in (ds.get("matmul_flops") or {}):
            continue  # records from before TF32
        out.append(f"| {dt} GEMM TFLOP/s | {_num((ds.get('matmul_flops') or {}).get(dt, 0) / 1e12, 4)} | "
                   f"{_num(((me.get('matmul_flops') or {}).get(dt) or 0) / 1e12, 4) if me else ''} |")
    out.append(f"| HBM GB/s | {_num(ds.get('hbm_bytes_per_s', 0) / 1e9, 4)} | "
               f"{_num((me.get('hbm_bytes_per_s') or 0) / 1e9, 4) if me else ''} |")
    if me.get("how"):
        out.append("")
        out.append(f"Measured: {me['how']}.")
    out.append("")

    agg = record.get("aggregates") or {}
    out.append("## Aggregates")
    out.append("")
    st = agg.get("kopt_status") or {}
    out.append(f"- Problems: {agg.get('problems')}; kopt: " +
               ", ".join(f"{v} {k}" for k, v in sorted(st.items())))
    for peer, g in (agg.get("geomean_speedup") or {}).items():
        out.append(f"- Geomean speedup over {ks.PEER_TITLES.get(peer, peer)}: "
                   f"**{g['value']:.3f}x** ({g['problems']} problems)")
    fe = agg.get("faster_than_eager") or {}
    if fe:
        out.append(f"- Faster than eager: {fe['count']} of {fe['of_measured']} measured "
                   f"problems ({_pct(fe.get('fraction_of_measured'))}); "
                   f"{_pct(fe.get('fraction_of_suite'))} of the suite's {fe['of_suite']}")
    for which in ("datasheet", "measured"):
        m = agg.get(f"median_sol_score_{which}") or {}
        if m.get("value") is not None:
            out.append(f"- Median SOL score ({which} limits): **{m['value']:.3f}** over "
                       f"{m['problems']} problems; {m['value_failures_as_0']:.3f} with the "
                       "problems kopt did not run correctly counted as 0")
    out.append("")

    peers = [p for p in ks.PEERS if any(p in (r.get("peers") or {}) for r in record["problems"])]
    out.append("## Problems")
    out.append("")
    head = ["#", "problem", "kernels", "eager kernels", "kopt", "kopt ms"]
    head += [f"{ks.PEER_TITLES[p]} ms" for p in peers]
    head += [f"x {ks.PEER_TITLES[p]}" for p in peers]
    head += ["TFLOP/s", "GB/s", "bound", "% SOL", "SOL score"]
    out.append("| " + " | ".join(head) + " |")
    out.append("| " + " | ".join(["---:", "---", "---:", "---:", "---"] +
                                 ["---:"] * (len(head) - 5)) +
               " |")
    for i, r in enumerate(record["problems"], 1):
        k = r.get("kopt") or {}
        rates = k.get("rates") or {}
        sol = (r.get("sol") or {}).get("datasheet") or {}
        eager = (r.get("peers") or {}).get("eager") or r.get("eager_check") or {}
        n_eager = eager.get("kernels")
        row = [str(i), r["name"], str(len(k.get("kernels") or []) or ""),
               "" if n_eager is None else str(n_eager), kopt_cell(r),
               _ms(_median(k) if k.get("status") == "ok" else None)]
        row += [_ms(_median((r.get("peers") or {}).get(p))) for p in peers]
        row += [_x((r.get("speedup") or {}).get(p)) for p in peers]
        row += [_num(rates.get("tflops")), _num(rates.get("gbps"), 4), sol.get("bound", ""),
                _pct(rates.get("frac_sol_datasheet")),
                _num((r.get("sol_score") or {}).get("datasheet"))]
        out.append("| " + " | ".join(row) + " |")
    out.append("")
    out.append("TFLOP/s and GB/s are kopt's, from the problem's FLOPs and minimal bytes "
               "(inputs read once, outputs written once); % SOL = T_SOL / T_kopt with the "
               "datasheet limits; bound: which roofline term is larger; kernels: kopt's "
               "launches per call of the function; eager kernels: the CUDA kernels one "
               "PyTorch eager call launches (torch.profiler).")
    out.append("")

    notes = []
    for r in record["problems"]:
        k = r.get("kopt") or {}
        if k.get("status") != "ok" and (k.get("error") or k.get("check")):
            msg = k.get("error") or ""
            if k.get("status") == "incorrect":
                msg = "; ".join(f"{o['name']}: rel_err {_num(o.get('rel_err'))} (tolerance "
                                f"{_num(o.get('tolerance'))}), {o.get('special_mismatch', 0)} "
                                "NaN/Inf mismatches"
                                for o in (k.get("check") or {}).get("outputs", []))
            notes.append(f"- {r['name']}: kopt {k.get('status')}: {msg}")
        for name, peer in (r.get("peers") or {}).items():
            if peer.get("error"):
                notes.append(f"- {r['name']}: {ks.PEER_TITLES.get(name, name)}: {peer['error']}")
        if r.get("skipped"):
            notes.append(f"- {r['name']}: skipped ({r['skipped']})")
        if r.get("error") and r["error"] != k.get("error"):
            notes.append(f"- {r['name']}: {r['error']}")
    if notes:
        out.append("## Failures, unsupported problems and errors")
        out.append("")
        out += notes
        out.append("")

    out.append("## Problem sources")
    out.append("")
    out.append("| # | problem | model | shapes from | kopt ops |")
    out.append("| ---: | --- | --- | --- | --- |")
    for i, r in enumerate(record["problems"], 1):
        p = r.get("problem") or {}
        ops = " ".join(n["op"] for n in p.get("graph", []))
        out.append(f"| {i} | {r['name']} | {r.get('model', '')} | "
                   f"{(r.get('source') or '').replace('|', '/')} | {ops} |")
    out.append("")
    return "\n".join(out)


def plots(record, out_dir):
    """speedup.png and roofline.png; returns the paths written (none without
    matplotlib)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        print(f"report: plots skipped: matplotlib is not available ({e})", file=sys.stderr)
        return []
    written = []
    probs = record["problems"]
    peers = [p for p in ks.PEERS if any(((r.get("speedup") or {}).get(p)) for r in probs)]
    colors = {"eager": "#4c72b0", "compile": "#dd8452", "compile_max_autotune": "#c44e52",
              "cublas": "#55a868"}

    # Speedup per problem, one bar per peer, log scale.
    n = len(probs)
    fig, ax = plt.subplots(figsize=(11, 0.32 * n + 1.8))
    h = 0.8 / max(1, len(peers))
    for j, peer in enumerate(peers):
        ys, xs = [], []
        for i, r in enumerate(probs):
            v = (r.get("speedup") or {}).get(peer)
            if v:
                ys.append(i + (j - (len(peers) - 1) / 2) * h)
                xs.append(v)
        ax.barh(ys, xs, height=h, color=colors.get(peer), label=ks.PEER_TITLES[peer], left=0)
    labels = []
    for i, r in enumerate(probs, 1):
        s = (r.get("kopt") or {}).get("status")
        labels.append(f"{i}. {r['name']}" + ("" if s == "ok" else f"  [{s}]"))
    ax.set_yticks(range(n))
    ax.set_yticklabels(labels, fontsize=7)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.set_xlabel("speedup of kopt = peer time / kopt time (log scale; right of 1: kopt faster)")
    dev = (record.get("device") or {}).get("name", "")
    ax.set_title(f"kopt vs its peers, {dev}")
    ax.grid(axis="x", which="both", alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    path = os.path.join(out_dir, "speedup.png")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    written.append(path)

    # Roofline: achieved FLOP/s against arithmetic intensity (FLOPs / minimal bytes).
    lim = record.get("limits") or {}
    ds, me = lim.get("datasheet") or {}, lim.get("measured") or {}
    fig, ax = plt.subplots(figsize=(10, 6.5))
    ais = [r["flops"]["total"] / r["bytes"] for r in probs if r.get("bytes")]
    lo = min([a for a in ais if a > 0] + [0.1]) / 3
    hi = max(ais + [1e3]) * 3
    xs = [lo * (hi / lo) ** (i / 200) for i in range(201)]

    def roof(peak, bw):
        return [min(peak, x * bw) / 1e12 for x in xs]

    bw = ds.get("hbm_bytes_per_s", 4.8e12)
    ax.plot(xs, roof(ds["matmul_flops"]["bf16"], bw), color="black", linewidth=1.2,
            label=f"datasheet: bf16/f16 {ds['matmul_flops']['bf16'] / 1e12:.0f} TFLOP/s, "
                  f"{bw / 1e12:.1f} TB/s")
    ax.plot(xs, roof(ds["matmul_flops"]["f32"], bw), color="black", linewidth=0.8,
            linestyle=":", label=f"datasheet: f32 {ds['matmul_flops']['f32'] / 1e12:.0f} TFLOP/s")
    if me and me.get("hbm_bytes_per_s") and (me.get("matmul_flops") or {}).get("bf16"):
        ax.plot(xs, roof(me["matmul_flops"]["bf16"], me["hbm_bytes_per_s"]), color="gray",
                linestyle="--", linewidth=1,
                label=f"measured: cuBLAS bf16 {me['matmul_flops']['bf16'] / 1e12:.0f} TFLOP/s, "
                      f"copy {me['hbm_bytes_per_s'] / 1e12:.2f} TB/s")
    for who, marker, color, label in (("eager", "x", "#4c72b0", "PyTorch eager"),
                                      ("kopt", "o", "#c44e52", "kopt")):
        pts = []
        for i, r in enumerate(probs, 1):
            impl = r.get("kopt") if who == "kopt" else (r.get("peers") or {}).get(who)
            rates = (impl or {}).get("rates")
            if not rates or (who == "kopt" and (impl or {}).get("status") != "ok"):
                continue
            pts.append((r["flops"]["total"] / r["bytes"], rates["tflops"], i))
        if not pts:
            continue
        ax.scatter([p[0] for p in pts], [p[1] for p in pts], marker=marker, color=color,
                   s=28 if marker == "o" else 22, label=label, zorder=3,
                   alpha=0.9 if who == "kopt" else 0.6)
        if who == "kopt":
            for x, y, i in pts:
                ax.annotate(str(i), (x, y), fontsize=6, xytext=(3, 2),
                            textcoords="offset points")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity: FLOPs / minimal bytes (inputs read once, outputs "
                  "written once)")
    ax.set_ylabel("achieved TFLOP/s")
    ax.set_title(f"Roofline, {dev} (numbers: rows of suite.md)")
    ax.grid(which="both", alpha=0.25)
    ax.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    path = os.path.join(out_dir, "roofline.png")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    written.append(path)
    return written


def write_all(record, out_dir):
    os.makedirs(out_dir, exist_ok=True)
    md = os.path.join(out_dir, "suite.md")
    with open(md, "w") as f:
        f.write(markdown(record))
    return [md] + plots(record, out_dir)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("record")
    ap.add_argument("--out")
    args = ap.parse_args()
    with open(args.record) as f:
        record = json.load(f)
    for path in write_all(record, args.out or os.path.dirname(os.path.abspath(args.record))):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
