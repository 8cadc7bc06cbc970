"""Helpers shared by the benchmark tools' unit tests (bench/test_*.py)."""
import contextlib
import io
import os
import shutil
import tempfile
import unittest


def assert_all_in(test, text, needles):
    """Fails `test` (a unittest.TestCase) unless every string of `needles` occurs in
    `text`; the failure lists all the missing ones, not only the first."""
    missing = [n for n in needles if n not in text]
    if missing:
        test.fail(f"{len(missing)} of {len(needles)} expected strings missing: " +
                  "; ".join(repr(n) for n in missing) + f"\n--- in:\n{text}")


def quiet(fn, *a, **kw):
    """fn(*a, **kw) with its stdout captured: (its result, the output)."""
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        r = fn(*a, **kw)
    return r, buf.getvalue()


class TempDir(unittest.TestCase):
    """A test case with a fresh folder, self.tmp, removed after each test."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="kopt-sweep-test-")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def tool(self, name, text):
        """Writes an executable `name` (a fake tool) holding `text`; its path."""
        path = os.path.join(self.tmp, name)
        with open(path, "w") as f:
            f.write(text)
        os.chmod(path, 0o755)
        return path
