"""Installing the package as a user does: a wheel of python/ carrying
libkopt.so, installed with pip into a fresh folder and imported from
elsewhere (no KOPT_LIBRARY, no source tree on the path)."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT


def test_wheel_install_and_import(tmp_path):
    lib = os.environ.get("KOPT_LIBRARY")
    if not lib or not Path(lib).is_file():
        pytest.skip("KOPT_LIBRARY not set (run through CTest)")
    src = tmp_path / "src"
    shutil.copytree(ROOT / "python", src,
                    ignore=shutil.ignore_patterns("__pycache__", "*.egg-info",
                                                  "build", "_lib"))
    (src / "kopt" / "_lib").mkdir()
    shutil.copy2(lib, src / "kopt" / "_lib" / "libkopt.so")
    dist = tmp_path / "dist"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps",
                    "--no-build-isolation", "-w", str(dist), str(src)],
                   check=True, cwd=tmp_path)
    wheels = list(dist.glob("kopt-*.whl"))
    assert [w.name for w in wheels] == ["kopt-0.1.0-py3-none-linux_x86_64.whl"]
    site = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps",
                    "--no-index", "--target", str(site), str(wheels[0])],
                   check=True, cwd=tmp_path)
    env = {k: v for k, v in os.environ.items()
           if k not in ("KOPT_LIBRARY", "PYTHONPATH", "KOPT_BUILD_DIR")}
    env["PYTHONPATH"] = str(site)
    code = ("import kopt, pathlib; "
            "assert pathlib.Path(kopt.__file__).is_relative_to(pathlib.Path(%r)); "
            "c = kopt.compile('func.func @f(%%x: tensor<8x64xf32>) -> "
            "tensor<8x64xf32> {\\n %%y = kopt.exp %%x : tensor<8x64xf32>\\n "
            "return %%y : tensor<8x64xf32>\\n}\\n'); "
            "print(kopt.version(), len(c.kernels))" % str(site))
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=tmp_path,
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("kopt ") and out.stdout.strip().endswith(" 1")
    # The torch.compile backend's entry point, as Dynamo looks it up.
    code = ("from importlib.metadata import entry_points; "
            "eps = entry_points(group='torch_dynamo_backends'); "
            "print([(e.name, e.value) for e in eps if e.name == 'kopt'])")
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=tmp_path,
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[('kopt', 'kopt.torch_backend:kopt_backend')]"
    assert (site / "kopt" / "torch_backend" / "translate.py").is_file()


def test_missing_library_is_a_clear_error(tmp_path):
    env = dict(os.environ)
    env["KOPT_LIBRARY"] = str(tmp_path / "nope" / "libkopt.so")
    env["PYTHONPATH"] = str(ROOT / "python")
    out = subprocess.run([sys.executable, "-c", "import kopt; kopt.version()"],
                         env=env, capture_output=True, text=True)
    assert out.returncode != 0
    assert "libkopt.so not found" in out.stderr and "KOPT_LIBRARY" in out.stderr
