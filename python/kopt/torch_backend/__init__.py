"""kopt as a torch.compile backend.

    import torch
    model = torch.compile(model, backend="kopt")          # no import of kopt needed
    model = torch.compile(model, backend="kopt", options={"report": True})
    model = torch.compile(model, backend="kopt", mode="reduce-overhead")  # CUDA graphs

The backend is registered under the name ``kopt`` by the package's
``torch_dynamo_backends`` entry point. Dynamo hands it each captured graph;
AOT autograd turns it into an ATen inference graph; kopt takes the parts it
supports (docs/torch-backend.md lists the ops), fuses and compiles them, and
PyTorch runs the rest. Training graphs (grad enabled and inputs that require
grad), graphs without CUDA tensors, and compile or load errors of a partition
fall back to PyTorch with a warning that says why; nothing falls back silently
to a different result.

Options (``options={...}``):
- ``min_partition_ops`` (int, default 1): fewer compute ops than this in a
  partition leaves it to PyTorch.
- ``chip`` (default: from the GPU's compute capability, ``sm_90a`` on
  Hopper, else ``sm_90a``), ``features``, ``opt_level``: as kopt.compile.
- ``fuse`` (default True): kopt-fuse's fusion inside each partition.
- ``tuning_db`` (default ``$KOPT_TUNING_DB``): a kopt-tune database to take
  the matmul schedules from (docs/tuning.md), and where each partition's
  measured choice between kopt and PyTorch is recorded (created when missing).
- ``choose`` (default ``"measure"``): at each partition's first call, time
  kopt's kernels against PyTorch's (check that they agree) and run the faster
  from then on, or take the choice the tuning database's measurements make
  (choose.py); ``"kopt"``: always kopt's kernels. ``choose_runs`` (default 10):
  timed calls of each.
- ``remainder`` (default ``"eager"``): what runs the ops kopt does not take:
  PyTorch eager, or ``"inductor"``: each group of them compiled by Inductor
  (torch.compile's default backend), which is then also what each kopt
  partition is measured against.
- ``schedule``: matmul schedules as kopt.compile takes them (a JSON file or
  the parsed JSON, by kernel name, workload key or ``"*"``: docs/schedules.md).
- ``cache_dir`` (default ``$KOPT_CACHE_DIR`` or ``~/.cache/kopt/torch``;
  ``None`` or ``""`` for no disk cache).
- ``allow_tf32`` (default ``torch.backends.cuda.matmul.allow_tf32``): f32
  matmuls may use TF32 tensor cores, as PyTorch's own setting permits cuBLAS.
- ``cudagraphs`` (default False; True with ``mode="reduce-overhead"``): record
  the forward in a CUDA graph (kernels that would read through TMA tensor
  maps are compiled with cp_async copies so they can be recorded),
  ``cudagraph_copy_outputs`` (default True).
- ``report`` (default False): print each graph's report to stderr.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Dict, Optional

from .report import GraphReport, Report, report, reset

__all__ = ["kopt_backend", "Options", "report", "reset", "GraphReport", "Report"]


@dataclass
class Options:
    min_partition_ops: int = 1
    chip: Optional[str] = None
    features: Optional[str] = None
    opt_level: Optional[int] = None
    fuse: bool = True
    tuning_db: Optional[str] = None
    schedule: Any = None
    cache_dir: Optional[str] = "default"
    allow_tf32: Optional[bool] = None
    cudagraphs: bool = False
    cudagraph_copy_outputs: bool = True
    report: bool = False
    choose: str = "measure"
    choose_runs: int = 10
    remainder: str = "eager"

    @classmethod
    def make(cls, options: Optional[Dict[str, Any]], mode: Optional[str]) -> "Options":
        opts = cls()
        if options is not None and not isinstance(options, dict):
            raise TypeError(f"kopt backend: options must be a dict, not "
                            f"{type(options).__name__}")
        names = {f.name: f for f in fields(cls)}
        for key, value in (options or {}).items():
            if key not in names:
                raise ValueError(f"kopt backend: unknown option '{key}' (options: "
                                 f"{', '.join(sorted(names))})")
            setattr(opts, key, value)
        if mode not in (None, "default", "reduce-overhead"):
            raise ValueError(f"kopt backend: mode '{mode}' is not supported (kopt "
                             f"takes 'default' and 'reduce-overhead')")
        if mode == "reduce-overhead":
            opts.cudagraphs = True
        _check_types(opts)
        if isinstance(opts.min_partition_ops, bool) or not isinstance(
                opts.min_partition_ops, int) or opts.min_partition_ops < 1:
            raise ValueError("kopt backend: min_partition_ops must be an int >= 1, "
                             f"not {opts.min_partition_ops!r}")
        what = "tuning_db"
        if opts.tuning_db is None and os.environ.get("KOPT_TUNING_DB"):
            opts.tuning_db, what = os.environ["KOPT_TUNING_DB"], "$KOPT_TUNING_DB"
        if opts.tuning_db is not None and not os.fspath(opts.tuning_db):
            opts.tuning_db = None  # "": none, as cache_dir=""
        if opts.tuning_db is not None:
            text = os.path.expanduser(os.fspath(opts.tuning_db))
            if "\0" in text:
                raise ValueError(f"kopt backend: {what} {text!r} has a NUL byte")
            db = Path(text)
            if db.exists() and not db.is_file():
                raise ValueError(f"kopt backend: {what} {db} is not a file")
            if not db.exists() and not db.parent.is_dir():
                raise ValueError(f"kopt backend: {what} {db}: no folder "
                                 f"{db.parent} to create it in")
            opts.tuning_db = str(db)
        if opts.cache_dir not in (None, "default") and "\0" in os.fspath(opts.cache_dir):
            raise ValueError(f"kopt backend: cache_dir {os.fspath(opts.cache_dir)!r} has "
                             f"a NUL byte")
        return opts

    def cache_path(self) -> Optional[Path]:
        if self.cache_dir == "default":
            from .module import default_cache_dir
            return default_cache_dir()
        return Path(self.cache_dir) if self.cache_dir else None


_BOOLS = ("fuse", "cudagraphs", "cudagraph_copy_outputs", "report")
_PATHS = ("tuning_db", "cache_dir")


def _check_types(opts: "Options") -> None:
    """Each option of the type it must have (a TypeError naming it)."""
    def bad(name, want):
        value = getattr(opts, name)
        raise TypeError(f"kopt backend: option '{name}' must be {want}, not "
                        f"{type(value).__name__} {value!r}")
    for name in _BOOLS:
        if not isinstance(getattr(opts, name), bool):
            bad(name, "True or False")
    if opts.allow_tf32 is not None and not isinstance(opts.allow_tf32, bool):
        bad("allow_tf32", "True, False or None")
    for name in ("chip", "features"):
        if getattr(opts, name) is not None and not isinstance(getattr(opts, name), str):
            bad(name, "a string")
    for name in _PATHS:
        v = getattr(opts, name)
        if v is not None and not isinstance(v, (str, os.PathLike)):
            bad(name, "a path")
    if opts.schedule is not None and not isinstance(opts.schedule, (str, os.PathLike, dict)):
        bad("schedule", "a path or a dict")
    if opts.choose not in ("measure", "kopt"):
        raise ValueError(f"kopt backend: option 'choose' must be 'measure' or 'kopt', "
                         f"not {opts.choose!r}")
    if opts.remainder not in ("eager", "inductor"):
        raise ValueError(f"kopt backend: option 'remainder' must be 'eager' or "
                         f"'inductor', not {opts.remainder!r}")
    if isinstance(opts.choose_runs, bool) or not isinstance(opts.choose_runs, int) \
            or not 1 <= opts.choose_runs <= 1000:
        raise ValueError(f"kopt backend: option 'choose_runs' must be an int from 1 "
                         f"to 1000, not {opts.choose_runs!r}")
    if opts.opt_level is not None and (isinstance(opts.opt_level, bool) or opts.opt_level
                                       not in (1, 2, 3) or not isinstance(opts.opt_level, int)):
        raise ValueError(f"kopt backend: option 'opt_level' must be 1, 2 or 3, not "
                         f"{opts.opt_level!r}")


def kopt_backend(gm, example_inputs, *, mode: Optional[str] = None,
                 options: Optional[Dict[str, Any]] = None):
    """The torch.compile backend (``backend="kopt"``): ``gm`` is Dynamo's FX
    graph, ``example_inputs`` its inputs. Returns the compiled callable."""
    import torch
    from torch._dynamo.backends.common import aot_autograd

    opts = Options.make(options, mode)
    if torch.is_grad_enabled() and any(
            isinstance(x, torch.Tensor) and x.requires_grad for x in example_inputs):
        warnings.warn("kopt: this graph needs gradients (grad is enabled and inputs "
                      "require grad); kopt compiles inference graphs only, so it runs "
                      "in PyTorch eager. Use torch.no_grad() or "
                      "torch.inference_mode() for kopt's kernels.")
        report_ = GraphReport(name="training graph")
        report_.whole_graph_fallback = "training graph (needs gradients)"
        from .report import record
        record(report_, opts.report)
        return gm.forward

    from .compile import compile_graph
    from torch._functorch.aot_autograd import make_boxed_func

    def inference(fx_g, inputs):
        return compile_graph(fx_g, inputs, opts)

    def backward(fx_g, inputs):
        return make_boxed_func(fx_g.forward)

    return aot_autograd(fw_compiler=inference, inference_compiler=inference,
                        bw_compiler=backward)(gm, example_inputs)
