#!/usr/bin/env python3
"""An agent that tunes as a performance engineer would, for kopt-tune.

    kopt-tune model.mlir --strategy=external \
        --agent-cmd "python3 examples/agents/perf_engineer.py"

It reasons from the shape and from the history instead of sampling:

1. Where the kernel stands. Arithmetic intensity (FLOPs per byte) against the
   ridge point of the roofline (peak FLOP/s / bandwidth) says whether the
   operands' traffic or the tensor cores bound it; the block tiles of a
   schedule against the 132 multiprocessors say whether the grid fills the
   GPU (under one wave: split K or smaller tiles), and how much of the last
   wave idles (the tail: other tile sizes or a persistent grid).
2. Hypotheses for that situation, each a change to the best schedule so far:
   memory bound -> deeper pipelines, TMA copies, wider stores, split-K when
   the grid is small; compute bound -> larger tiles, warp specialization, a
   persistent grid, grouped rasterization (swizzle) for L2 reuse.
3. What the measurements taught: for every pair of measured schedules that
   differ in one parameter, the size of the time change is that parameter's
   impact at this shape; the neighbours of the best schedules are tried with
   the most influential parameters first, and what kopt refused (and why)
   is never proposed again.

It explains itself in the transcript (kopt-tune --agent-transcript=FILE).
Only the standard library; kopt_agent.py beside it speaks the protocol.
"""

import math
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kopt_agent import Agent, clean, key, log, serve  # noqa: E402

SMS = 132  # multiprocessors of the H200 (and H100 SXM)
PARAMS = ["instruction", "copy", "block_m", "block_n", "block_k", "warp_m",
          "warp_n", "stages", "split_k", "swizzle", "vector_width",
          "persistent", "warp_specialize", "tma_store"]


def tiles(w, s):
    return (math.ceil(w["m"] / s["block_m"]) * math.ceil(w["n"] / s["block_n"])
            * s.get("split_k", 1))


def neighbours(domains, s, p):
    """Schedules that change parameter p of s to an adjacent domain value."""
    values = domains.get(p, [])
    if s.get(p) not in values:
        return []
    i = values.index(s[p])
    if isinstance(s[p], bool) or isinstance(s[p], str):
        others = [v for v in values if v != s[p]]
    else:
        others = [values[j] for j in (i + 1, i - 1) if 0 <= j < len(values)]
    out = []
    for v in others:
        t = dict(s)
        t[p] = v
        out.append(t)
    return out


class PerfEngineer(Agent):
    name = "perf-engineer"

    def __init__(self):
        self.rng = random.Random(0)

    def on_hello(self, msg):
        # Reproducible runs: kopt-tune's --seed drives the random exploration.
        self.rng = random.Random(self.seed)

    def on_task(self, task):
        w = task.workload
        intensity = task.flops / max(task.bytes, 1)
        peak = task.roofline.get("peak_tflops", 989) * 1e12
        bw = task.roofline.get("peak_gbps", 4800) * 1e9
        ridge = peak / bw
        task.memory_bound = intensity < ridge
        log(f"task {task.id} {task.kernel} {w.get('m')}x{w.get('n')}x{w.get('k')} "
            f"{w.get('a')}: {intensity:.1f} FLOP/B against a ridge of {ridge:.0f}: "
            f"{'memory' if task.memory_bound else 'compute'} bound; default "
            f"grid {tiles(w, task.default)} tiles on {SMS} SMs")

    def hypotheses(self, task, best):
        """Changes to `best` that the shape suggests, most promising first."""
        w, d = task.workload, task.domains
        out = []
        t = tiles(w, best)

        def with_(**changes):
            s = dict(best)
            s.update(changes)
            out.append(s)

        if t < SMS:
            # Under one wave: more, smaller work units fill the GPU.
            for sk in d.get("split_k", []):
                if sk > best.get("split_k", 1) and w["k"] // sk >= 256:
                    with_(split_k=sk, persistent=False)
            for bn in d.get("block_n", []):
                if bn < best["block_n"]:
                    with_(block_n=bn, warp_n=min(best["warp_n"], bn))
        else:
            waves = t / SMS
            tail = math.ceil(waves) - waves
            if tail > 0.25 and best.get("instruction") == "wgmma":
                with_(persistent=True, split_k=1)
            for bm, bn in ((128, 256), (256, 128), (128, 128), (64, 256)):
                if bm in d.get("block_m", []) and bn in d.get("block_n", []):
                    with_(block_m=bm, block_n=bn)
        if task.memory_bound:
            for st in (best.get("stages", 2) + 1, best.get("stages", 2) + 2):
                if st in d.get("stages", []):
                    with_(stages=st)
            if best.get("instruction") == "wgmma":
                with_(copy="tma")
            with_(vector_width=max(d.get("vector_width", [1])))
        else:
            if best.get("instruction") == "wgmma":
                with_(warp_specialize=not best.get("warp_specialize", False),
                      copy="tma")
                with_(tma_store=not best.get("tma_store", False))
            for sw in (8, 4, 16):
                if sw in d.get("swizzle", []) and sw != best.get("swizzle"):
                    with_(swizzle=sw)
        return out

    def impacts(self, task):
        """|log time ratio| per parameter, from measured pairs that differ in it alone."""
        ok = task.usable()
        impact = {p: 0.0 for p in PARAMS}
        for i, a in enumerate(ok):
            for b in ok[i + 1:]:
                diff = [p for p in PARAMS if a["schedule"].get(p) != b["schedule"].get(p)]
                if len(diff) == 1:
                    r = abs(math.log(a["time_ms"]["median"] / b["time_ms"]["median"]))
                    impact[diff[0]] = max(impact[diff[0]], r)
        return impact

    def propose(self, task, n):
        tried = task.tried()
        ranked = task.usable()
        best = clean(ranked[0]["schedule"]) if ranked else task.default
        out, keys = [], set()

        def add(s):
            k = key(s)
            if k not in tried and k not in keys and len(out) < n:
                keys.add(k)
                out.append(clean(s))

        for s in self.hypotheses(task, best):
            add(s)
        impact = self.impacts(task)
        order = sorted(PARAMS, key=lambda p: -impact[p])
        if any(impact.values()):
            log(f"task {task.id}: parameters by measured impact: "
                + ", ".join(f"{p} {impact[p]:.2f}" for p in order[:5]))
        for parent in [clean(t["schedule"]) for t in ranked[:3]] or [best]:
            for p in order:
                for s in neighbours(task.domains, parent, p):
                    add(s)
                    # Tile changes carry their warp tile along.
                    if p in ("block_m", "block_n"):
                        add(dict(s, warp_m=min(s["warp_m"], s["block_m"]),
                                 warp_n=min(s["warp_n"], s["block_n"])))
        # Nothing left near the best: explore the domains at random.
        for _ in range(50 * n):
            if len(out) >= n:
                break
            s = dict(best)
            for p in self.rng.sample(PARAMS, 3):
                if task.domains.get(p):
                    s[p] = self.rng.choice(task.domains[p])
            add(s)
        return out


if __name__ == "__main__":
    serve(PerfEngineer())
