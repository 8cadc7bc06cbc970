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
import os
from typing import Any, Dict, List

from . import _capi

__all__ = ["add", "trials"]


def add(path, record: Dict[str, Any]) -> None:
    """Adds one trial record to the database at ``path`` (created when
    missing). ``kopt_version`` defaults to this kopt's; ``time`` to now."""
    rec = dict(record)
    rec.setdefault("kopt_version", "")
    text = json.dumps(rec, allow_nan=False).encode()
    _capi.check(_capi.lib().kopt_tuning_db_add(os.fsencode(path), text, len(text)))


def trials(path, workload: str) -> List[Dict[str, Any]]:
    """The usable trials (status "ok", correct, finite median, measured on a
    GPU) of ``workload`` recorded by this kopt version, oldest first; [] when
    the file does not exist."""
    out = ctypes.c_void_p()
    lib = _capi.lib()
    _capi.check(lib.kopt_tuning_db_trials(os.fsencode(path), workload.encode(),
                                          ctypes.byref(out)))
    try:
        return json.loads(ctypes.string_at(out.value).decode())
    finally:
        lib.kopt_string_free(out)
