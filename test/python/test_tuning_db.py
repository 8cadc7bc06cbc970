"""kopt.tuning_db: trial records through the C API into kopt's SQLite tuning
database (include/kopt/Search/Database.h)."""

import sqlite3

import pytest

import kopt
from kopt import tuning_db


def rec(**kw):
    r = {"workload": "w", "ops": "partition", "schedule": {"impl": "kopt"},
         "status": "ok", "measurer": "gpu", "median_ms": 0.5, "correct": True}
    r.update(kw)
    return r


def test_add_then_trials_in_order(tmp_path):
    db = tmp_path / "t.db"
    assert tuning_db.trials(db, "w") == []  # no file: no trials, no file made
    assert not db.exists()
    tuning_db.add(db, rec())
    tuning_db.add(db, rec(schedule={"impl": "pytorch"}, median_ms=0.25))
    tuning_db.add(db, rec(workload="other"))
    got = tuning_db.trials(db, "w")
    assert [t["schedule"] for t in got] == [{"impl": "kopt"}, {"impl": "pytorch"}]
    assert [t["median_ms"] for t in got] == [0.5, 0.25]
    assert got[0]["kopt_version"] == kopt.version().split()[1]
    assert got[0]["time"].endswith("Z")


def test_unusable_and_other_versions_are_not_returned(tmp_path):
    db = tmp_path / "t.db"
    tuning_db.add(db, rec(status="wrong", correct=False, median_ms=None))
    tuning_db.add(db, rec(kopt_version="0.0.1"))
    tuning_db.add(db, rec(measurer="model"))
    assert tuning_db.trials(db, "w") == []
    assert sqlite3.connect(db).execute("select count(*) from trials").fetchone()[0] == 3


def test_malformed_records_and_files_are_refused(tmp_path):
    db = tmp_path / "t.db"
    with pytest.raises(kopt.KoptError, match="ops"):
        tuning_db.add(db, {"workload": "w"})
    with pytest.raises(kopt.KoptError, match="schedule"):
        tuning_db.add(db, rec(schedule="fast"))
    with pytest.raises(ValueError, match="finite"):  # inf is no time
        tuning_db.add(db, rec(median_ms=float("inf")))
    with pytest.raises(TypeError):
        tuning_db.add(db, [rec()])
    other = tmp_path / "notes.db"
    other.write_text("my notes")
    with pytest.raises(kopt.KoptError, match="not a kopt tuning database"):
        tuning_db.add(other, rec())
    with pytest.raises(kopt.KoptError, match="not a kopt tuning database"):
        tuning_db.trials(other, "w")
    assert other.read_text() == "my notes"
    with pytest.raises(kopt.KoptError, match="workload is empty"):
        tuning_db.trials(db, "")


def test_paths_and_values_that_cannot_be_what_they_say(tmp_path):
    # Found by a break test: ctypes cut a path at a NUL byte and wrote elsewhere.
    with pytest.raises(ValueError, match="NUL"):
        tuning_db.add(str(tmp_path / "a\0b.db"), rec())
    assert not (tmp_path / "a").exists()
    with pytest.raises(ValueError, match="NUL"):
        tuning_db.trials(tmp_path / "t.db", "w\0x")
    with pytest.raises(TypeError):
        tuning_db.trials(tmp_path / "t.db", b"w")
    db = tmp_path / "t.db"
    tuning_db.add(db, rec(kopt_version=None, min_ms=float("nan")))  # defaults
    (got,) = tuning_db.trials(db, "w")
    assert got["min_ms"] is None and got["kopt_version"] == kopt.version().split()[1]
    empty = tmp_path / "empty.db"
    empty.write_bytes(b"")
    assert tuning_db.trials(empty, "w") == []


def test_a_row_of_another_writer_with_bad_text_does_not_break_reading(tmp_path):
    db = tmp_path / "t.db"
    tuning_db.add(db, rec())
    con = sqlite3.connect(db)
    con.execute("update trials set device = cast(x'ff41' as text)")
    con.commit()
    con.close()
    (got,) = tuning_db.trials(db, "w")
    assert got["device"] == "\ufffdA"
