"""A compiled suite folder as bench/run_suite.py reads it (what bench/compile_suite.py
or run_suite.py --compile wrote: compile_suite.json, suite.json and
problems/<name>.{ptx,json}), and the runner's log line."""
import json
import os

import kopt_suite as ks


def log(msg):
    print(f"run_suite: {msg}", flush=True)

def load_inputs(ptx_dir, only):
    """The suite and compile record under ptx_dir; returns (suite, problems,
    compile record by problem name)."""
    cpath = os.path.join(ptx_dir, "compile_suite.json")
    try:
        with open(cpath) as f:
            comp = json.load(f)
    except (OSError, ValueError) as e:
        raise ks.SuiteError(f"{cpath}: {e} (run bench/prepare_suite.sh or "
                            "bench/compile_suite.py --out DIR first)")
    suite = ks.load_suite(os.path.join(ptx_dir, comp.get("suite", "suite.json")))
    problems = ks.select(suite, only)
    by_name = {r["name"]: r for r in comp.get("problems", [])}
    return suite, problems, comp, by_name


def manifest_paths(ptx_dir, comp, name):
    d = os.path.join(ptx_dir, comp.get("problems_dir", "problems"))
    return os.path.join(d, name + ".json"), os.path.join(d, name + ".ptx")

def compiled(c):
    return c is not None and c.get("status") in ("ok", "newly-supported")


def not_compiled(c):
    """kopt's status and error in the record of a problem that was not compiled
    (`c`: its entry of the compile record, None when it has none)."""
    return {"status": "unsupported" if c and c.get("status", "").startswith(
                "unsupported") else "compile-failed",
            "error": (c or {}).get("error", "not in the compile record")}
