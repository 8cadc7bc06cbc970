"""Shared fixtures of the Python package's tests (run by CTest as python.pytest,
which sets KOPT_LIBRARY, PYTHONPATH, KOPT_OPT and, for the launch tests, the
fake CUDA driver on LD_LIBRARY_PATH with KOPT_FAKE_CUDA=1)."""

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))


@pytest.fixture
def root():
    return ROOT


@pytest.fixture
def kopt_opt():
    path = os.environ.get("KOPT_OPT") or str(ROOT / "build" / "bin" / "kopt-opt")
    if not Path(path).is_file():
        pytest.skip("kopt-opt not built")
    return path


def fake_cuda():
    return os.environ.get("KOPT_FAKE_CUDA") == "1"
