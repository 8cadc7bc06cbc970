"""The agent's side of the kopt-agent protocol, version 1.

kopt-tune --strategy=external --agent-cmd "python3 my_agent.py" runs an agent
program and speaks to it in JSON lines on its stdin and stdout
(docs/agent-protocol.md). This module does the talking: subclass `Agent`,
implement `propose`, and call `serve(MyAgent())`.

    from kopt_agent import Agent, serve

    class FirstDomainValues(Agent):
        name = "first-values"
        def propose(self, task, n):
            return [dict(task.default, block_n=bn)
                    for bn in task.domains["block_n"][:n]]

    serve(FirstDomainValues())

Schedules are dicts of the parameters in `task.domains`; `num_warps` is
derived from the warp grid and may be left out (kopt-tune refuses one that
disagrees with it, so `clean` drops it). Whatever an agent proposes, kopt
checks it against the constraints and its space; refusals come back in
`task.refused`.

Only the standard library is used; stdout is the protocol channel, so an agent
writes its diagnostics to stderr (or with `log`, into kopt-tune's transcript).
"""

import json
import sys

PROTOCOL = "kopt-agent"
VERSION = 1


class Task:
    """One kernel to tune, from kopt-tune's task message.

    kernel, ops: the kernel's name and op chain ("matmul+add+gelu").
    workload: m, n, k, dtypes (a, b, c), layouts, tf32, key.
    target: chip and limits.  roofline: floor_ms, peak_tflops, peak_gbps.
    flops, bytes: the matmul's 2MNK and the bytes of its parameters.
    domains: {parameter: [values]}.  constraints: [{"id", "rule"}] as text.
    default: the default heuristic's schedule.  valid_points: the space's size.
    trials: every trial so far (feedback's entries, in order).
    refused: the proposals kopt refused, with reasons, in order.
    best: {"schedule", "median_ms"} of the fastest usable trial, or None.
    """

    def __init__(self, msg):
        self.id = msg["task"]
        self.kernel = msg.get("kernel", "")
        self.ops = msg.get("ops", "")
        self.workload = msg.get("workload", {})
        self.target = msg.get("target", {})
        self.roofline = msg.get("roofline", {})
        self.flops = msg.get("flops", 0)
        self.bytes = msg.get("bytes", 0)
        self.launches = msg.get("launches", 1)
        space = msg.get("space", {})
        self.domains = space.get("domains", {})
        self.constraints = space.get("constraints", [])
        self.valid_points = space.get("valid_points", 0)
        self.default = clean(msg.get("default", {}))
        self.trials = []
        self.refused = []
        self.best = None

    def usable(self):
        """The measured, correct trials, fastest first."""
        ok = [t for t in self.trials
              if t.get("status") == "ok" and t.get("correct") and t.get("time_ms")]
        return sorted(ok, key=lambda t: t["time_ms"]["median"])

    def tried(self):
        """The canonical keys of every schedule tried or refused."""
        keys = {key(t["schedule"]) for t in self.trials if isinstance(t.get("schedule"), dict)}
        keys |= {key(r["schedule"]) for r in self.refused if isinstance(r.get("schedule"), dict)}
        return keys


def clean(schedule):
    """A schedule without its derived num_warps."""
    return {k: v for k, v in schedule.items() if k != "num_warps"}


def key(schedule):
    """A canonical key of a schedule (derived fields dropped)."""
    return json.dumps(clean(schedule), sort_keys=True)


class Agent:
    """Override propose; on_task and on_feedback are optional."""

    name = "python-agent"
    seed = 0  # kopt-tune's --seed, from its hello

    def on_hello(self, msg):
        pass

    def on_task(self, task):
        pass

    def propose(self, task, n):
        """Up to n schedules (dicts) for task, or None to stop the task."""
        raise NotImplementedError

    def on_feedback(self, task, trials, refused):
        pass


_out = sys.stdout


def send(message):
    _out.write(json.dumps(message) + "\n")
    _out.flush()


def log(text):
    """A line for kopt-tune's transcript (--agent-transcript)."""
    send({"type": "log", "message": str(text)})


def serve(agent, stdin=None, stdout=None):
    """Answers kopt-tune until it says done or closes stdin."""
    global _out
    stdin = stdin or sys.stdin
    _out = stdout or sys.stdout
    tasks = {}
    for line in stdin:
        if not line.strip():
            continue
        msg = json.loads(line)
        kind = msg.get("type")
        if kind == "hello":
            if msg.get("protocol") != PROTOCOL or msg.get("version") != VERSION:
                print(f"{agent.name}: kopt speaks {msg.get('protocol')} "
                      f"version {msg.get('version')}; this agent speaks "
                      f"{PROTOCOL} version {VERSION}", file=sys.stderr)
            agent.seed = msg.get("seed", 0)
            agent.on_hello(msg)
            send({"type": "hello", "protocol": PROTOCOL, "version": VERSION,
                  "name": agent.name})
        elif kind == "task":
            task = Task(msg)
            tasks[task.id] = task
            agent.on_task(task)
        elif kind == "feedback":
            task = tasks[msg["task"]]
            task.trials.extend(msg.get("trials", []))
            task.refused.extend(msg.get("refused", []))
            task.best = msg.get("best")
            agent.on_feedback(task, msg.get("trials", []), msg.get("refused", []))
        elif kind == "propose":
            task = tasks[msg["task"]]
            schedules = agent.propose(task, msg["n"])
            if schedules is None:
                send({"type": "stop", "reason": f"{agent.name} has nothing more"})
            else:
                send({"type": "schedules", "base": "default",
                      "schedules": [clean(s) for s in schedules][: msg["n"]]})
        elif kind == "done":
            break
