"""The tuning database (SQLite, docs/tuning.md) from Python.

    import kopt.tuning_db as db
    db.add("tune.db", {"workload": "...", "ops": "...", "schedule": {...},
                       "status": "ok", "median_ms": 0.0123, "correct": True, ...})
    trials = db.trials("tune.db", "...")   # usable trials of this kopt version

Records are dicts in the format of ``kopt-tune --export`` lines (docs/tuning.md);
times in ms. The work is done by kopt's C++ database (include/kopt/Search/
Database.h) through the C API: one transaction per record, WAL, safe with other
writers; a file that is not a kopt tuning database is refused and never written.
Errors raise kopt.KoptError naming the file and the cause.
"""

from __future__ import annotations

import ctypes
import json
import math
import os
from typing import Any, Dict, List

from . import _capi

__all__ = ["add", "trials"]


def _path(path) -> bytes:
    p = os.fsencode(os.path.expanduser(os.fspath(path)))
    if not p or b"\0" in p:
        raise ValueError(f"tuning database path {path!r}: empty or with a NUL byte")
    return p


def _no_nan(x):
    """NaN (a time not measured) as null, as the database stores it."""
    if isinstance(x, float) and math.isnan(x):
        return None
    if isinstance(x, dict):
        return {k: _no_nan(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_no_nan(v) for v in x]
    return x


def add(path, record: Dict[str, Any]) -> None:
    """Adds one trial record to the database at ``path`` (created when
    missing). ``kopt_version`` defaults (absent or None) to this kopt's;
    ``time`` to now; NaN times are stored as not measured (null)."""
    if not isinstance(record, dict):
        raise TypeError(f"a trial record is a dict, not {type(record).__name__}")
    rec = _no_nan(dict(record))
    if rec.get("kopt_version") is None:
        rec["kopt_version"] = ""
    try:
        text = json.dumps(rec, allow_nan=False).encode()
    except ValueError as e:  # inf
        raise ValueError(f"trial record: {e} (times must be finite or NaN)") from None
    _capi.check(_capi.lib().kopt_tuning_db_add(_path(path), text, len(text)))


def trials(path, workload: str) -> List[Dict[str, Any]]:
    """The usable trials (status "ok", correct, finite median, measured on a
    GPU) of ``workload`` recorded by this kopt version, oldest first; [] when
    the file does not exist."""
    if not isinstance(workload, str):
        raise TypeError(f"workload is a str, not {type(workload).__name__}")
    if "\0" in workload:
        raise ValueError("workload with a NUL byte")
    out = ctypes.c_void_p()
    lib = _capi.lib()
    _capi.check(lib.kopt_tuning_db_trials(_path(path), workload.encode(),
                                          ctypes.byref(out)))
    try:
        return json.loads(ctypes.string_at(out.value).decode())
    finally:
        lib.kopt_string_free(out)
