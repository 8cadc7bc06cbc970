"""kopt.compile: MLIR text of kopt ops to PTX and a launch manifest."""

from __future__ import annotations

import ctypes
import json
import os
import tempfile
from pathlib import Path
from typing import Any, Optional, Union

from . import _capi
from .errors import CompileError, KoptError

Source = Union[str, bytes, os.PathLike]


class Compiled:
    """The result of :func:`compile`: ``ptx`` (PTX text for the chip) and
    ``manifest`` (the launch manifest as a dict; ``manifest_json`` as text,
    docs/manifest.md). Holds the C API's kopt_compiled until collected."""

    def __init__(self, handle: ctypes.c_void_p):
        lib = _capi.lib()
        self._handle = handle
        n = ctypes.c_size_t()
        self.ptx = _capi.text(lib.kopt_compiled_ptx(handle, ctypes.byref(n)), n.value)
        self.manifest_json = _capi.text(
            lib.kopt_compiled_manifest(handle, ctypes.byref(n)), n.value)
        self.manifest = json.loads(self.manifest_json)

    def __del__(self):
        handle = getattr(self, "_handle", None)
        if handle:
            _capi.lib().kopt_compiled_free(handle)
            self._handle = None

    @property
    def kernels(self) -> list:
        """The names of the PTX entries, in manifest order."""
        return [k["name"] for k in self.manifest.get("kernels", [])]

    @property
    def functions(self) -> list:
        """The names of the source functions, in manifest order."""
        return [f["name"] for f in self.manifest.get("functions", [])]

    def write(self, ptx_path: Union[str, os.PathLike]) -> Path:
        """Writes the PTX to ``ptx_path`` and the manifest beside it
        (``.json``, its ``ptx`` field naming the PTX file); returns the
        manifest's path."""
        path = Path(ptx_path)
        _capi.check(_capi.lib().kopt_compiled_write(self._handle, os.fsencode(path)))
        return path.with_suffix(".json")

    def load(self, device: Optional[int] = None):
        """Loads the PTX on a GPU: a :class:`kopt.Module`."""
        from .runtime import load_compiled
        return load_compiled(self, device)

    def __repr__(self):
        return (f"<kopt.Compiled: {len(self.kernels)} kernels, functions "
                f"{self.functions}, {len(self.ptx)} bytes of PTX>")


def _read_source(source: Source) -> tuple:
    """(bytes of MLIR text, name for diagnostics)."""
    if isinstance(source, os.PathLike):
        path = Path(source)
        try:
            return path.read_bytes(), str(path)
        except OSError as e:
            raise KoptError(f"cannot read {path}: {e.strerror}") from None
    if isinstance(source, bytes):
        return source, "<kopt.compile>"
    if not isinstance(source, str):
        raise TypeError("kopt.compile: source must be MLIR text (str or bytes) "
                        f"or a path, not {type(source).__name__}")
    if "\n" not in source and source.endswith(".mlir"):
        path = Path(source)
        if path.is_dir():
            raise KoptError(f"cannot read {path}: it is a directory")
        if not path.is_file():
            raise KoptError(f"cannot read {path}: no such file")
        return path.read_bytes(), str(path)
    return source.encode("utf-8"), "<kopt.compile>"


def _json_file(value, what, tmps):
    """`value` as a path for the compiler: a path as it is; parsed JSON (dict or
    list) written to a temporary file, appended to `tmps` (the caller deletes
    them), whose name says which argument it holds."""
    if not isinstance(value, (dict, list)):
        return value
    try:
        text = json.dumps(value, allow_nan=False)
    except (TypeError, ValueError, RecursionError) as e:
        raise ValueError(f"kopt.compile: {what} is not plain JSON data: {e}") from None
    # Diagnostics name this file: say where it came from.
    tmp = tempfile.NamedTemporaryFile("w", prefix=f"kopt-{what}-argument-",
                                      suffix=".json", delete=False)
    tmp.write(text)
    tmp.close()
    tmps.append(tmp.name)
    return tmp.name


def compile(source: Source, *, chip: Optional[str] = None,
            features: Optional[str] = None, opt_level: Optional[int] = None,
            cuda_path: Optional[str] = None,
            schedule: Union[None, str, os.PathLike, dict] = None,
            pack_min_reuse: Optional[int] = None,
            name: Optional[str] = None, fuse: bool = True,
            fusion_plan: Union[None, str, os.PathLike, dict] = None,
            tuning_db: Union[None, str, os.PathLike] = None) -> Compiled:
    """Compiles kopt ops to PTX + launch manifest (the ``--kopt-to-ptx``
    pipeline of kopt-opt, in this process).

    ``source``: MLIR text (str or bytes), a ``pathlib.Path``, or a str path
    ending in ``.mlir``. ``chip`` (default ``sm_90a``), ``features``
    (``+ptx80``), ``opt_level`` (1-3, default 3), ``cuda_path`` (the toolkit
    whose libdevice is linked; default ``$CUDA_HOME`` then /usr/local/cuda),
    ``schedule`` (a schedule JSON file, or the parsed JSON object as a dict:
    docs/schedules.md), ``pack_min_reuse`` (kopt-pack-operands; 0 = never),
    ``name`` (the source's name in diagnostics), ``fuse`` (False: one kernel
    per op; True, the default: elementwise chains, row ops with the
    elementwise ops around them and matmuls with their epilogues fused,
    docs/compiler.md), ``fusion_plan`` (overrides of the fusion plan: a JSON
    file, or the parsed JSON as a dict, ``{"split": [kernel names]}``),
    ``tuning_db`` (a tuning database written by kopt-tune --db: each matmul
    kernel gets its workload's best schedule recorded on a GPU by this kopt
    version, else the heuristic's; docs/tuning.md).

    Raises CompileError with the diagnostics (``name:line:col: error: ...``)
    when the input is rejected.
    """
    text, source_name = _read_source(source)
    handle = _capi.lib()
    if opt_level is not None and not 1 <= int(opt_level) <= 3:
        raise ValueError(f"kopt.compile: opt_level must be 1 to 3, not {opt_level}")
    if pack_min_reuse is not None and int(pack_min_reuse) < 0:
        raise ValueError("kopt.compile: pack_min_reuse must be >= 0")
    for arg, value in (("chip", chip), ("features", features), ("cuda_path", cuda_path),
                       ("name", name)):
        if value is not None and not isinstance(value, (str, os.PathLike)):
            raise TypeError(f"kopt.compile: {arg} must be a str, not "
                            f"{type(value).__name__}")
    for arg, value in (("schedule", schedule), ("fusion_plan", fusion_plan)):
        if value is not None and not isinstance(value, (str, os.PathLike, dict)):
            raise TypeError(f"kopt.compile: {arg} must be a path or a dict (a JSON "
                            f"object), not {type(value).__name__}")
    tmps = []
    try:
        schedule = _json_file(schedule, "schedule", tmps)
        fusion_plan = _json_file(fusion_plan, "fusion_plan", tmps)
        opts = _capi.kopt_compile_options()
        opts.struct_size = ctypes.sizeof(opts)
        enc = lambda s: None if s is None else os.fsencode(s)  # noqa: E731
        opts.chip = enc(chip)
        opts.features = enc(features)
        opts.opt_level = int(opt_level or 0)
        opts.cuda_path = enc(cuda_path)
        opts.schedule_file = enc(schedule)
        opts.pack_min_reuse = (0 if pack_min_reuse is None else
                               (-1 if int(pack_min_reuse) == 0 else int(pack_min_reuse)))
        opts.source_name = enc(name or source_name)
        opts.no_fusion = 0 if fuse else 1
        opts.fusion_plan_file = enc(fusion_plan)
        opts.tuning_db_file = enc(None if tuning_db is None else os.fspath(tuning_db))
        result = ctypes.c_void_p()
        _capi.check(handle.kopt_compile(text, len(text), ctypes.byref(opts),
                                        ctypes.byref(result)), CompileError)
    finally:
        for tmp in tmps:
            os.unlink(tmp)
    return Compiled(result)
