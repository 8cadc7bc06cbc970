"""The worker processes of the GPU runners (bench/run_suite.py, bench/run_sweep.py):
the driver starts a worker with a plan (a JSON file), follows its output and reads
the events it appends to a JSON-lines file (one object a line: "env", "start",
"result", ...; each runner has its own kinds), so that a worker that crashes, hangs
or leaves the CUDA context unusable is replaced without losing what it reported.
"""
import collections
import json
import os
import signal
import subprocess
import sys
import threading
import traceback


def worker_main(plan_path, worker_class):
    """The worker process: runs `worker_class(plan).main()` (suite_worker.Worker for
    bench/run_suite.py, sweep_worker.SweepWorker for bench/run_sweep.py); exit code 5
    when the driver is already gone, 4 when the worker cannot start (a "fatal"
    event says why)."""
    with open(plan_path) as f:
        plan = json.load(f)
    try:  # Linux: die with the driver (PR_SET_PDEATHSIG), not linger on the GPU
        import ctypes
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)
        if os.getppid() != plan["driver_pid"]:
            return 5
    except (OSError, AttributeError):
        pass
    try:
        w = worker_class(plan)
    except Exception as e:
        traceback.print_exc()
        with open(plan["events"], "a") as f:
            f.write(json.dumps({"event": "fatal", "error": f"{type(e).__name__}: {e}"}) + "\n")
        return 4
    return w.main()


def read_events(path, pos):
    """The complete event lines of `path` from byte `pos` on: (events, new pos); a
    line still being written is left for the next call."""
    try:
        with open(path) as f:
            f.seek(pos)
            data = f.read()
    except OSError:
        return [], pos
    lines = data.split("\n")
    complete, rest = lines[:-1], lines[-1]
    events = []
    for line in complete:
        if line.strip():
            events.append(json.loads(line))
    return events, pos + len(data) - len(rest)


def start_worker(cmd, logfile=None):
    """Starts the worker `cmd` in its own session with its stdout and stderr echoed
    here and copied to `logfile` (an open file, or None) by a reader thread. Returns
    (the process, the reader thread, a deque of its last 25 lines)."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True)
    tail = collections.deque(maxlen=25)

    def pump():
        for line in proc.stdout:
            sys.stdout.write(line)
            sys.stdout.flush()
            if logfile:
                logfile.write(line)
                logfile.flush()
            tail.append(line.rstrip())
    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    return proc, reader, tail


def kill_worker(proc):
    """Kills the worker and what it started (its session)."""
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def write_outputs(out, record_name, record, write_reports, log, report_error):
    """The end of a run: OUT/record_name (the record, JSON), then the reports
    `write_reports(record)` writes (it returns their paths; an exception is printed
    and logged as `report_error`, the record stays), then the driver's plan.json and
    events.jsonl removed. Returns the paths written."""
    path = os.path.join(out, record_name)
    with open(path, "w") as f:
        json.dump(record, f, indent=1, default=str)
        f.write("\n")
    written = [path]
    try:
        written += write_reports(record)
    except Exception:
        traceback.print_exc()
        log(f"error: {report_error}")
    for pth in (os.path.join(out, "plan.json"), os.path.join(out, "events.jsonl")):
        if os.path.exists(pth):
            os.remove(pth)
    return written
