"""bench/run_sweep.py's record (OUT/sweep.json, format_version 1) and its report
(OUT/sweep.md): each kernel's entry with its derived figures, each problem's
summary (the best and the default kernels), the sweep's totals, the Markdown tables,
and the one-line summaries of a kernel that the log prints."""
import collections
import json

import kopt_suite as ks
from sweep_index import problem_flops, problem_tolerance

# Kernel statuses. ok: correct and timed (or correct and not timed: `time` absent
# only when timing failed, then the status is error). FAILED counts against the exit
# code; skipped (past --deadline) does not.
FAILED = ("error", "timeout", "crashed", "invalid", "not-run")
RAN = ("ok", "incorrect", "error", "timeout", "crashed")
SCHEDULE_ORDER = ("instruction", "copy", "block_m", "block_n", "block_k", "warp_m",
                  "warp_n", "num_warps", "stages", "split_k", "swizzle", "vector_width",
                  "persistent", "warp_specialize", "tma_store")


def first_line(e):
    """The first line of an exception's message ('' if it has none)."""
    s = str(e)
    return s.splitlines()[0] if s else ""


def why_incorrect(rec):
    """What an incorrect kernel did wrong besides its rel_err ('' if nothing)."""
    out = []
    chk = rec.get("check_after_timing") or rec.get("check") or {}
    if chk.get("special_mismatch"):
        out.append(f"{chk['special_mismatch']} NaN/Inf where the reference is finite "
                   f"(first at flat index {chk.get('first_special_index')})")
    if rec.get("check_after_timing"):
        out.append("the result changed while timing")
    if rec.get("inputs_overwritten"):
        out.append("wrote into its inputs")
    return "; ".join(out)


def kernel_line(rec, cublas_ms, flops):
    s = rec.get("status", "?")
    parts = [s]
    if rec.get("rel_err") is not None:
        parts.append(f"rel_err {rec['rel_err']:.2g}")
    if s == "incorrect" and why_incorrect(rec):
        parts.append(why_incorrect(rec))
    if rec.get("ms"):
        parts.append(f"{rec['ms']:.4f} ms, {flops / (rec['ms'] * 1e-3) / 1e12:.1f} TFLOP/s")
        if cublas_ms:
            parts.append(f"{cublas_ms / rec['ms']:.3f}x cuBLAS")
    if rec.get("registers") is not None:
        parts.append(f"{rec['registers']} regs")
    if rec.get("error"):
        parts.append(rec["error"])
    return ", ".join(parts) + f" ({rec.get('wall_s', 0)} s)"


# ======================================================================= the record

def _rate(flops, ms):
    return flops / (ms * 1e-3) / 1e12 if ms else None


def kernel_record(kentry, result, flops, cublas_ms):
    """One kernel's entry of sweep.json: the index's fields, the result and the
    derived figures."""
    rec = {"file": kentry["file"], "manifest": kentry["manifest"],
           "schedule": kentry.get("schedule") or {}, "tags": list(kentry.get("tags", []))}
    extra = {k: v for k, v in kentry.items() if k not in rec}
    if extra:
        rec["compile"] = extra  # e.g. compile_sweep.py's ptxas registers and spills
    r = dict(result or {"status": "skipped", "error": "no result"})
    rec["status"] = r.pop("status", "error")
    rec["correct"] = r.pop("correct", {"ok": True, "incorrect": False}.get(rec["status"]))
    rec["rel_err"] = r.pop("rel_err", None)
    ms = r.pop("ms", None) if rec["status"] == "ok" else None
    r.pop("ms", None)
    rec["ms"] = ms
    rec["tflops"] = _rate(flops, ms)
    rec["ratio_to_cublas"] = cublas_ms / ms if ms and cublas_ms else None
    rec["error"] = r.pop("error", None)
    rec.update(r)
    return rec


def _count_tags(kernels):
    out = {}
    for k in kernels:
        for t in k.get("tags", []):
            c = out.setdefault(t, {"kernels": 0, "ran": 0, "correct": 0, "incorrect": 0,
                                   "failed": 0, "skipped": 0})
            c["kernels"] += 1
            c["ran"] += k["status"] in RAN
            c["correct"] += k["status"] == "ok"
            c["incorrect"] += k["status"] == "incorrect"
            c["failed"] += k["status"] in FAILED
            c["skipped"] += k["status"] == "skipped"
    return out


def _brief(k, i):
    return {"index": i, "file": k["file"], "schedule": k["schedule"], "tags": k["tags"],
            "status": k["status"], "ms": k["ms"], "tflops": k["tflops"],
            "ratio_to_cublas": k["ratio_to_cublas"]}


def problem_summary(pr):
    """Counts, the best kernel and the default-tagged kernel (with its slowdown
    against the best) of one problem's record."""
    ks_ = pr["kernels"]
    st = collections.Counter(k["status"] for k in ks_)
    timed = [(i, k) for i, k in enumerate(ks_) if k["status"] == "ok" and k.get("ms")]
    best = min(timed, key=lambda x: x[1]["ms"]) if timed else None
    default = next(((i, k) for i, k in enumerate(ks_) if "default" in k["tags"]), None)
    s = {"kernels": len(ks_), "correct": st["ok"], "incorrect": st["incorrect"],
         "failed": sum(st[x] for x in FAILED), "skipped": st["skipped"],
         "statuses": dict(sorted(st.items())),
         "best": _brief(best[1], best[0]) if best else None,
         "default": _brief(default[1], default[0]) if default else None,
         "tags": _count_tags(ks_)}
    if best and default and default[1].get("ms"):
        s["default"]["slowdown_vs_best"] = default[1]["ms"] / best[1]["ms"]
        s["default"]["is_best"] = default[0] == best[0] or default[1]["ms"] == best[1]["ms"]
    return s


def is_sweep_problem(pr):
    """A problem of the sweep proper (it has "sweep" or "default" kernels), not a
    random sample's."""
    return any(t in ("sweep", "default") for k in pr["kernels"] for t in k["tags"])


def sweep_summary(problem_records):
    """Totals over the problems: statuses, per-tag counts (random: how many ran
    correct); over the sweep problems, geomean ratios of the best and the default
    kernels to cuBLAS and the default's slowdown against the best."""
    allk = [k for pr in problem_records for k in pr["kernels"]]
    st = collections.Counter(k["status"] for k in allk)
    swept = [pr["summary"] for pr in problem_records if is_sweep_problem(pr)]
    best = [s["best"]["ratio_to_cublas"] for s in swept
            if s["best"] and s["best"]["ratio_to_cublas"]]
    dflt = [s["default"]["ratio_to_cublas"] for s in swept
            if s["default"] and s["default"]["ratio_to_cublas"]]
    slow = [s["default"]["slowdown_vs_best"] for s in swept
            if (s["default"] or {}).get("slowdown_vs_best")]
    return {"problems": len(problem_records), "sweep_problems": len(swept),
            "problems_with_error": sum(1 for pr in problem_records if pr.get("error")),
            "kernels": len(allk), "statuses": dict(sorted(st.items())),
            "correct": st["ok"], "incorrect": st["incorrect"],
            "failed": sum(st[x] for x in FAILED), "skipped": st["skipped"],
            "tags": _count_tags(allk),
            "geomean_best_ratio_to_cublas": {"value": ks.geomean(best), "problems": len(best)},
            "geomean_default_ratio_to_cublas": {"value": ks.geomean(dflt),
                                                "problems": len(dflt)},
            "median_default_slowdown_vs_best": {"value": ks.median(slow),
                                                "problems": len(slow)},
            "default_is_best": sum(1 for s in swept if (s["default"] or {}).get("is_best"))}


def problem_record(p, result):
    """One problem's entry of sweep.json."""
    result = result or {}
    flops = problem_flops(p)
    cub = dict(result.get("cublas") or {})
    cms = cub.get("ms")
    if cms:
        cub["tflops"] = _rate(flops, cms)
    pr = {key: p.get(key) for key in ("id", "m", "n", "k", "dtype", "out_dtype",
                                      "transpose_a", "transpose_b")}
    pr["tf32"] = bool(p.get("tf32", False))
    for key, v in p.items():
        if key not in pr and key != "kernels":
            pr[key] = v  # e.g. source
    pr.update(flops=flops, seed=result.get("seed"), tolerance=result.get("tolerance"),
              dtype_tolerance=result.get("dtype_tolerance", problem_tolerance(p)),
              setup_s=result.get("setup_s"), cublas=cub or None, error=result.get("error"))
    kres = result.get("kernels") or {}
    pr["kernels"] = [kernel_record(k, kres.get(i), flops, cms)
                     for i, k in enumerate(p["kernels"])]
    pr["summary"] = problem_summary(pr)
    return pr


def build_record(index, problems, results, env, meta):
    """sweep.json: `meta` holds date, wall_s, command, sweep_dir and method."""
    env = env or {}
    prs = [problem_record(p, results.get(p["id"])) for p in problems]
    method = dict(meta.get("method") or {})
    method.update(sleep_cycles=env.get("sleep_cycles"), loader=env.get("loader"),
                  loader_errors=env.get("loader_errors"))
    return {"tool": "bench/run_sweep.py", "format_version": 1,
            "date": meta.get("date"), "wall_s": meta.get("wall_s"),
            "command": meta.get("command"), "sweep_dir": meta.get("sweep_dir"),
            "sweep": {k: index.get(k) for k in ("kopt_sweep_version", "chip", "commit")},
            "device": env.get("device"), "software": env.get("software"),
            "method": method, "summary": sweep_summary(prs), "problems": prs}


def exit_code(record):
    s = record["summary"]
    return 1 if s["incorrect"] or s["failed"] or s["problems_with_error"] else 0


# ======================================================================= sweep.md

def fmt_schedule(s):
    """A schedule on one line: known keys in order, then the rest."""
    if not s:
        return "-"
    keys = [k for k in SCHEDULE_ORDER if k in s] + sorted(k for k in s if k not in SCHEDULE_ORDER)
    short = {"instruction": "", "copy": "", "block_m": "bm", "block_n": "bn", "block_k": "bk",
             "warp_m": "wm", "warp_n": "wn", "num_warps": "warps", "stages": "st",
             "split_k": "splitk", "swizzle": "sw", "vector_width": "vec",
             "persistent": "persistent", "warp_specialize": "ws", "tma_store": "ts"}
    out = []
    for k in keys:
        v = s[k]
        if k in ("persistent", "warp_specialize", "tma_store") and not v:
            continue
        name = short.get(k, k)
        text = v if isinstance(v, (int, float, str)) else json.dumps(v)
        out.append(f"{text}" if name == "" else f"{name}={text}")
    return " ".join(out)


def _ms(x):
    return f"{x:.4g}" if x else "-"


def fmt_ratio(x):
    """A ratio for sweep.md and the log ('-' when there is none)."""
    return f"{x:.3f}" if x else "-"


def markdown(record):
    out = []
    dev = record.get("device") or {}
    sw = record.get("software") or {}
    m = record.get("method") or {}
    s = record["summary"]
    sweep = record.get("sweep") or {}
    out.append(f"# kopt matmul schedule sweep: {dev.get('name', 'unknown device')}")
    out.append("")
    out.append(f"- Date: {record.get('date')}; kernels compiled at "
               f"{(sweep.get('commit') or 'unknown')[:12]} for {sweep.get('chip')}; "
               f"wall {record.get('wall_s')} s")
    out.append(f"- Command: `{record.get('command')}`")
    out.append(f"- Device: {dev.get('name', '?')}, driver {dev.get('driver', '?')}; torch "
               f"{sw.get('torch', '?')} (CUDA {sw.get('cuda_torch', '?')}), cupy "
               f"{sw.get('cupy', '?')}; kernels loaded with {m.get('loader', '?')}")
    out.append(f"- Method: {m.get('warmup')} warm-up runs, then {m.get('runs')} timed runs "
               f"(at least {m.get('min_runs')} when slower than {m.get('time_budget_s')} s / "
               f"{m.get('runs')}), each after zeroing a "
               f"{(m.get('l2_flush_bytes') or 0) >> 20} MiB buffer; CUDA events, median. "
               f"Inputs {m.get('inputs')}. Checked against the float64 product: relative L2 "
               f"error within {m.get('tolerance')} (or 4 x cuBLAS's own), no NaN/Inf. "
               + (f"Problems marked tf32 allow TF32: cuBLAS with allow_tf32 = True, "
                  f"tolerance at least {m.get('tf32_tolerance')}. " if m.get("tf32") else "") +
               "Ratio = cuBLAS time / kernel time (above 1: faster than cuBLAS).")
    out.append(f"- Kernels: {s['kernels']} over {s['problems']} problems: {s['correct']} correct "
               f"and timed, {s['incorrect']} incorrect, {s['failed']} failed, "
               f"{s['skipped']} skipped ({', '.join(f'{k} {v}' for k, v in s['statuses'].items())})")
    g = s["geomean_best_ratio_to_cublas"]
    d = s["geomean_default_ratio_to_cublas"]
    sl = s["median_default_slowdown_vs_best"]
    out.append(f"- Sweep problems ({s['sweep_problems']}): geomean ratio to cuBLAS of the best "
               f"kernel {fmt_ratio(g['value'])} ({g['problems']} problems), of the default "
               f"schedule {fmt_ratio(d['value'])} ({d['problems']} problems); the default is the "
               f"best in {s['default_is_best']} problems; median default / best time "
               f"{fmt_ratio(sl['value'])} ({sl['problems']} problems)")
    out.append("")

    swept = [pr for pr in record["problems"] if is_sweep_problem(pr)]
    others = [pr for pr in record["problems"] if pr not in swept]
    if swept:
        out.append("## Sweep problems")
        out.append("")
        out.append("| # | problem | m x n x k | dtype | cuBLAS ms | cuBLAS TFLOP/s | best ms | "
                   "best TFLOP/s | best / cuBLAS | default ms | default / cuBLAS | "
                   "default / best time | correct | incorrect | failed | skipped |")
        out.append("| ---: | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | "
                   "---: | ---: | ---: | ---: | ---: |")
        for n, pr in enumerate(swept, 1):
            ps = pr["summary"]
            b, dk = ps["best"] or {}, ps["default"] or {}
            cub = pr.get("cublas") or {}
            ttag = f"{pr['dtype']}" + (f"->{pr['out_dtype']}" if pr["out_dtype"] != pr["dtype"]
                                        else "") + (" tf32" if pr.get("tf32") else "")
            lay = ("A^T " if pr["transpose_a"] else "") + ("B^T" if pr["transpose_b"] else "")
            dcell = _ms(dk.get("ms")) if dk.get("ms") else (dk.get("status", "-") if dk else "none")
            out.append(f"| {n} | {pr['id']}{' **' + pr['error'] + '**' if pr.get('error') else ''} "
                       f"| {pr['m']} x {pr['n']} x {pr['k']} {lay.strip()} | {ttag} | "
                       f"{_ms(cub.get('ms')) if cub.get('ms') else cub.get('error', '-')} | "
                       f"{_ms(cub.get('tflops'))} | {_ms(b.get('ms'))} | {_ms(b.get('tflops'))} | "
                       f"{fmt_ratio(b.get('ratio_to_cublas'))} | {dcell} | "
                       f"{fmt_ratio(dk.get('ratio_to_cublas'))} | {fmt_ratio(dk.get('slowdown_vs_best'))} | "
                       f"{ps['correct']} | {ps['incorrect']} | {ps['failed']} | {ps['skipped']} |")
        out.append("")
        out.append("### Best and default schedules")
        out.append("")
        out.append("| # | problem | best schedule | best file | default schedule |")
        out.append("| ---: | --- | --- | --- | --- |")
        for n, pr in enumerate(swept, 1):
            ps = pr["summary"]
            b, dk = ps["best"] or {}, ps["default"] or {}
            same = " (the best)" if dk.get("is_best") else ""
            out.append(f"| {n} | {pr['id']} | {fmt_schedule(b.get('schedule')) if b else '-'} | "
                       f"{b.get('file', '-')} | "
                       f"{fmt_schedule(dk.get('schedule')) + same if dk else '-'} |")
        out.append("")

    out.append("## Kernels by tag")
    out.append("")
    out.append("| tag | kernels | ran | correct | incorrect | failed | skipped |")
    out.append("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for tag, c in sorted(s["tags"].items()):
        out.append(f"| {tag} | {c['kernels']} | {c['ran']} | {c['correct']} | {c['incorrect']} | "
                   f"{c['failed']} | {c['skipped']} |")
    out.append("")
    for tag in ("random", "random_valid"):
        c = s["tags"].get(tag)
        if c:
            out.append(f"- `{tag}` kernels: {c['ran']} of {c['kernels']} ran, {c['correct']} "
                       f"correct, {c['incorrect']} incorrect, {c['failed']} failed, "
                       f"{c['skipped']} skipped.")
    if others:
        out.append(f"- {len(others)} problems hold no sweep or default kernel (random samples); "
                   "sweep.json has their cuBLAS times and every kernel's figures.")
    out.append("")

    bad = [(pr, k) for pr in record["problems"] for k in pr["kernels"]
           if k["status"] == "incorrect" or k["status"] in FAILED]
    perr = [pr for pr in record["problems"] if pr.get("error")]
    if bad or perr:
        out.append("## Failures")
        out.append("")
        for pr in perr:
            out.append(f"- problem {pr['id']}: {pr['error']}")
        shown = bad[:60]
        if shown:
            out.append("")
            out.append("| problem | file | tags | status | rel_err | schedule | error |")
            out.append("| --- | --- | --- | --- | ---: | --- | --- |")
            for pr, k in shown:
                err = (k.get("error") or why_incorrect(k)).replace("|", "/")
                if len(err) > 160:
                    err = err[:157] + "..."
                rel = f"{k['rel_err']:.3g}" if k.get("rel_err") is not None else "-"
                out.append(f"| {pr['id']} | {k['file']} | {','.join(k['tags'])} | {k['status']} "
                           f"| {rel} | {fmt_schedule(k['schedule'])} | {err} |")
        if len(bad) > len(shown):
            out.append(f"\n... and {len(bad) - len(shown)} more (sweep.json)")
        out.append("")
    return "\n".join(out) + "\n"
