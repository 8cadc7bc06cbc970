#!/usr/bin/env python3
"""An LLM behind an OpenAI-compatible chat endpoint as kopt-tune's agent.

    export KOPT_LLM_BASE_URL=https://api.openai.com/v1   # or a local server
    export KOPT_LLM_MODEL=gpt-4o-mini
    export KOPT_LLM_API_KEY=...                           # or OPENAI_API_KEY
    kopt-tune model.mlir --strategy=external --agent-timeout=600 \
        --agent-cmd "python3 examples/agents/llm_agent.py"

Environment:
  KOPT_LLM_BASE_URL  the endpoint's base URL; POST {base}/chat/completions
                     (default https://api.openai.com/v1)
  KOPT_LLM_MODEL     the model's name (required)
  KOPT_LLM_API_KEY   sent as a bearer token (else OPENAI_API_KEY; else none,
                     for local servers)
  KOPT_LLM_TIMEOUT   seconds per HTTP request (default 120)
  KOPT_LLM_TEMPERATURE  (default 0.7)

For each batch the prompt gives the kernel (op chain, shape, dtypes, FLOPs,
bytes, the roofline floor), the space (every parameter's domain and every
constraint as a rule), the default schedule, the best configurations so far,
all results sorted best-first, what failed and what kopt refused with the
reasons. The reply must be JSON, {"schedules": [...]}; it is parsed (code
fences and prose around the JSON are tolerated) and validated against the
domains here, and duplicates are dropped. A reply with nothing usable is sent
back to the model once with the problems listed; when that fails too, or the
endpoint does not answer (after three tries), the agent proposes neighbours of
the best schedule for this batch and says so in the transcript, so a
flaky endpoint costs no budget. kopt validates everything again.

Only the standard library (urllib).
"""

import json
import os
import random
import sys
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kopt_agent import Agent, clean, key, log, serve  # noqa: E402

SYSTEM = (
    "You are a GPU performance engineer tuning the schedule of one matmul "
    "kernel of the kopt compiler for an NVIDIA H200 (sm_90a, 132 SMs, "
    "HBM3e). A schedule is a JSON object of the parameters listed under "
    "Space (values only from each parameter's domain). Every schedule must "
    "satisfy the constraints; kopt measures each proposal on the GPU and "
    "refuses invalid ones. Propose schedules likely to be faster than the "
    "best so far, different from everything tried. Reply with JSON only: "
    '{"schedules": [{...}, ...]}.')


def chat_url():
    base = os.environ.get("KOPT_LLM_BASE_URL", "https://api.openai.com/v1")
    return base.rstrip("/") + "/chat/completions"


def describe(t):
    s = json.dumps(clean(t["schedule"]), sort_keys=True)
    if t.get("time_ms"):
        return (f"{t['time_ms']['median']:.4f} ms, {t.get('tflops', 0):.1f} TFLOP/s, "
                f"{100 * t.get('fraction_of_floor', 0):.0f}% of the roofline floor: {s}")
    return f"{t.get('status')}: {t.get('error', '')[:160]}: {s}"


def prompt(task, n):
    w = task.workload
    ranked = task.usable()
    failed = [t for t in task.trials if t not in ranked]
    lines = [
        f"Kernel {task.kernel} ({task.ops}): C[{w.get('m')}x{w.get('n')}] = "
        f"A[{w.get('m')}x{w.get('k')}] x B[{w.get('k')}x{w.get('n')}], A {w.get('a')}, "
        f"B {w.get('b')}, C {w.get('c')}, A K-contiguous {w.get('a_k_contiguous')}, "
        f"B K-contiguous {w.get('b_k_contiguous')}, TF32 allowed {w.get('tf32')}.",
        f"FLOPs {task.flops}, bytes {task.bytes}, roofline floor "
        f"{task.roofline.get('floor_ms', 0):.4f} ms (peak {task.roofline.get('peak_tflops')} "
        f"TFLOP/s, {task.roofline.get('peak_gbps')} GB/s).",
        "Space: " + json.dumps({"domains": task.domains}),
        "Constraints:",
    ]
    lines += [f"- {c.get('rule')}" for c in task.constraints]
    lines.append("num_warps is derived from the warp grid: leave it out.")
    lines.append("Default schedule: " + json.dumps(task.default, sort_keys=True))
    if ranked:
        lines.append("Best configurations so far:")
        lines += [f"{i + 1}. {describe(t)}" for i, t in enumerate(ranked[:5])]
        lines.append("All results, best first:")
        lines += [f"- {describe(t)}" for t in ranked[:40]]
    if failed:
        lines.append("Failed trials:")
        lines += [f"- {describe(t)}" for t in failed[-20:]]
    if task.refused:
        lines.append("Refused by kopt (invalid or repeated):")
        lines += [f"- {r.get('reason', '')[:160]}: {json.dumps(r.get('schedule'))[:300]}"
                  for r in task.refused[-20:]]
    lines.append(f"Propose {n} new schedules.")
    return "\n".join(lines)


def extract_json(text):
    """The first JSON object or array in text (code fences and prose around it allowed)."""
    decoder = json.JSONDecoder()
    for i, ch in enumerate(text):
        if ch in "{[":
            try:
                value, _ = decoder.raw_decode(text[i:])
                return value
            except ValueError:
                continue
    raise ValueError("no JSON in the reply")


def validate(task, value, tried):
    """(schedules, problems): the reply's schedules that fit the domains."""
    if isinstance(value, dict):
        value = value.get("schedules")
    if not isinstance(value, list):
        return [], ['the reply must be {"schedules": [...]}']
    good, problems, seen = [], [], set(tried)
    for i, s in enumerate(value):
        if not isinstance(s, dict):
            problems.append(f"schedule {i} is not an object")
            continue
        s = clean(s)
        bad = [p for p in s if p not in task.domains]
        bad += [f"{p}={s[p]!r}" for p in s if p in task.domains and s[p] not in task.domains[p]]
        if bad:
            problems.append(f"schedule {i}: not in the domains: {', '.join(map(str, bad))}")
            continue
        full = dict(task.default)
        full.update(s)
        if key(full) in seen:
            problems.append(f"schedule {i} was tried before")
            continue
        seen.add(key(full))
        good.append(full)
    return good, problems


class LLMAgent(Agent):
    name = "llm"

    def __init__(self):
        self.model = os.environ.get("KOPT_LLM_MODEL")
        if not self.model:
            print("llm_agent: set KOPT_LLM_MODEL (and KOPT_LLM_BASE_URL, "
                  "KOPT_LLM_API_KEY)", file=sys.stderr)
            sys.exit(2)
        self.name = f"llm:{self.model}"
        self.api_key = os.environ.get("KOPT_LLM_API_KEY") or os.environ.get("OPENAI_API_KEY")
        self.timeout = float(os.environ.get("KOPT_LLM_TIMEOUT", "120"))
        self.temperature = float(os.environ.get("KOPT_LLM_TEMPERATURE", "0.7"))
        self.rng = random.Random(0)

    def chat(self, messages):
        body = json.dumps({"model": self.model, "messages": messages,
                           "temperature": self.temperature}).encode()
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        last = None
        for attempt in range(3):
            try:
                req = urllib.request.Request(chat_url(), data=body, headers=headers)
                with urllib.request.urlopen(req, timeout=self.timeout) as r:
                    reply = json.load(r)
                return reply["choices"][0]["message"]["content"]
            except (urllib.error.URLError, OSError, ValueError, KeyError,
                    IndexError, TypeError) as e:
                last = e
                log(f"endpoint attempt {attempt + 1} failed: {e}")
                time.sleep(0.5 * (attempt + 1))
        raise RuntimeError(f"the endpoint gave no answer: {last}")

    def fallback(self, task, n, tried):
        best = clean(task.usable()[0]["schedule"]) if task.usable() else task.default
        out, seen = [], set(tried)
        for _ in range(100 * n):
            if len(out) >= n:
                break
            s = dict(best)
            p = self.rng.choice(sorted(task.domains))
            s[p] = self.rng.choice(task.domains[p])
            if key(s) not in seen:
                seen.add(key(s))
                out.append(s)
        return out

    def propose(self, task, n):
        tried = task.tried()
        messages = [{"role": "system", "content": SYSTEM},
                    {"role": "user", "content": prompt(task, n)}]
        try:
            for attempt in range(2):
                content = self.chat(messages)
                log(f"model reply: {content[:2000]}")
                try:
                    good, problems = validate(task, extract_json(content), tried)
                except ValueError as e:
                    good, problems = [], [str(e)]
                if good:
                    if problems:
                        log("dropped: " + "; ".join(problems))
                    return good[:n]
                messages += [{"role": "assistant", "content": content},
                             {"role": "user", "content":
                              "Nothing usable in that reply: " + "; ".join(problems)
                              + f". Reply with JSON only: {{\"schedules\": [...]}}, "
                              f"{n} new schedules."}]
            log("the model's replies had no usable schedule: neighbours of the best instead")
        except RuntimeError as e:
            log(f"{e}: neighbours of the best instead")
        return self.fallback(task, n, tried)


if __name__ == "__main__":
    serve(LLMAgent())
