"""Helpers shared by the benchmark tools' unit tests (bench/test_*.py)."""


def assert_all_in(test, text, needles):
    """Fails `test` (a unittest.TestCase) unless every string of `needles` occurs in
    `text`; the failure lists all the missing ones, not only the first."""
    missing = [n for n in needles if n not in text]
    if missing:
        test.fail(f"{len(missing)} of {len(needles)} expected strings missing: " +
                  "; ".join(repr(n) for n in missing) + f"\n--- in:\n{text}")
