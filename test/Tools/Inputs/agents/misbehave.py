"""An agent that misbehaves on purpose, for test/Tools/kopt-tune-external.test.

    misbehave.py MODE

Modes: good (speaks correctly: the control), garbage (prose and broken JSON
before each reply), huge (a 2 MiB line before each reply), invalid
(schedules that are no schedules or break constraints, one valid one per
reply), duplicate (the default schedule again and again), exit (exits at its
second proposal), hang (never answers a proposal), silent (never answers
hello), version (speaks version 2), stop (stops every task at once), closeout
(closes stdout and keeps running), excess (more schedules than asked).
"""
import json
import os
import sys
import time

mode = sys.argv[1]
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "..", "..", "examples", "agents"))
from kopt_agent import clean  # noqa: E402

tasks = {}
proposals = 0


def send(obj):
    sys.stdout.write((obj if isinstance(obj, str) else json.dumps(obj)) + "\n")
    sys.stdout.flush()


def new_schedules(task, n):
    """Schedules varying the stages (2 or more: every instruction takes them)
    and swizzle of the default."""
    out = []
    d = task["space"]["domains"]
    base = clean(task["default"])
    for st in [s for s in d["stages"] if 2 <= s <= 4]:
        for sw in d["swizzle"]:
            s = dict(base, stages=st, swizzle=sw)
            k = json.dumps(s, sort_keys=True)
            if k not in task["tried"]:
                task["tried"].add(k)
                out.append(s)
            if len(out) == n:
                return out
    return out


for line in sys.stdin:
    msg = json.loads(line)
    t = msg["type"]
    if t == "hello":
        if mode == "silent":
            continue
        send({"type": "hello", "protocol": "kopt-agent",
              "version": 2 if mode == "version" else 1, "name": "misbehave-" + mode})
        if mode == "closeout":
            os.close(1)
            time.sleep(600)
    elif t == "task":
        msg["tried"] = set()
        tasks[msg["task"]] = msg
    elif t == "propose":
        proposals += 1
        task, n = tasks[msg["task"]], msg["n"]
        if mode == "exit" and proposals == 2:
            sys.exit(7)
        if mode == "hang":
            time.sleep(600)
        if mode == "stop":
            send({"type": "stop", "reason": "enough"})
            continue
        if mode == "garbage":
            send("I think block_n = 128 would be good here.")
            send('{"type": "schedules", "schedules": [')
            send("[1, 2, 3]")
            send({"type": "surprise"})
        if mode == "huge":
            send("x" * (2 << 20))
        if mode == "duplicate":
            send({"type": "schedules", "schedules": [clean(task["default"])]})
            continue
        schedules = new_schedules(task, n if mode != "excess" else n + 3)
        if mode == "invalid":
            schedules = [
                "block_m=128",
                {"block_m": 7},
                {"no_such_parameter": 1},
                {"block_m": "big"},
                {"instruction": "wgmma", "copy": "sync"},
            ] + schedules[:1]
        send({"type": "log", "message": f"proposal {proposals}"})
        send({"type": "schedules", "base": "default", "schedules": schedules})
    elif t == "done":
        break
