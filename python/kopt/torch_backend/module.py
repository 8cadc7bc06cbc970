"""A compiled partition: kopt's kernels launched on PyTorch tensors.

Compiling happens when the graph is compiled (PTX and manifest only: no GPU is
needed); loading on the GPU happens at the first call, on the device of the
inputs. A compile error or a load error makes the partition run its ATen ops
in PyTorch from then on, with a warning naming the cause; errors of a launch
itself (after loading) are raised.

Kernel cache: the PTX and manifest of each partition are kept in memory and on
disk under ``cache_dir`` (default ``$KOPT_CACHE_DIR``, else
``~/.cache/kopt/torch``), in a folder named by the SHA-256 of kopt's version,
the chip, the compile options, the tuning database's identity and the MLIR
text (which holds every shape and dtype). A folder is written under a temporary
name and renamed when complete, so a crash never leaves a half-written entry.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import threading
import warnings
from pathlib import Path
from typing import Any, Dict, List, Optional

import torch
import torch.fx

from .. import _capi
from ..compiler import compile as kopt_compile
from ..errors import KoptError
from . import choose
from . import translate as tr

_ALIGN = 16  # bytes: kopt's kernels read and write with 16-byte accesses
_memory_cache: Dict[str, "CompiledText"] = {}
_cache_lock = threading.Lock()


class CompiledText:
    """PTX and manifest text (what kopt.load needs), from the compiler or the
    disk cache."""

    def __init__(self, ptx: str, manifest_json: str):
        self.ptx = ptx
        self.manifest_json = manifest_json
        self.manifest = json.loads(manifest_json)
        if not isinstance(self.manifest, dict) or not isinstance(
                self.manifest.get("functions"), list) or not isinstance(
                self.manifest.get("kernels"), list):
            raise ValueError("not a launch manifest")

    @property
    def launches(self) -> int:
        """Kernel launches per call of the function."""
        return sum(len(f.get("launches", [])) for f in self.manifest.get("functions", []))


def default_cache_dir() -> Path:
    env = os.environ.get("KOPT_CACHE_DIR")
    if env:
        return Path(env)
    return Path(os.path.expanduser("~")) / ".cache" / "kopt" / "torch"


def cache_key(mlir: str, compile_options: Dict[str, Any]) -> str:
    ident = {"kopt": _capi.lib().kopt_version_string().decode(),
             "options": compile_options, "mlir": mlir}
    db = compile_options.get("tuning_db")
    if db:
        try:
            st = os.stat(db)
            ident["tuning_db_state"] = [st.st_size, st.st_mtime_ns]
        except OSError:
            ident["tuning_db_state"] = None
    text = json.dumps(ident, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


def _read_entry(folder: Path) -> Optional[CompiledText]:
    try:
        ptx = (folder / "kernels.ptx").read_text()
        manifest = (folder / "manifest.json").read_text()
        from ..runtime import validate_manifest
        validate_manifest(manifest)  # the checks kopt.load makes
        return CompiledText(ptx, manifest)
    except (OSError, ValueError, UnicodeDecodeError, KoptError):
        return None  # absent or damaged: compile again


def _write_entry(root: Path, key: str, entry: CompiledText) -> None:
    try:
        root.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{key[:16]}-", dir=root))
        (tmp / "kernels.ptx").write_text(entry.ptx)
        (tmp / "manifest.json").write_text(entry.manifest_json)
        if (root / key).exists() and _read_entry(root / key) is None:
            shutil.rmtree(root / key, ignore_errors=True)  # a damaged entry
        try:
            os.rename(tmp, root / key)
        except OSError:  # another process wrote it first
            for f in tmp.iterdir():
                f.unlink()
            tmp.rmdir()
    except OSError as e:
        warnings.warn(f"kopt: cannot write the kernel cache in {root}: {e}")


def compile_cached(mlir: str, compile_options: Dict[str, Any],
                   cache_dir: Optional[Path]) -> CompiledText:
    """Compiles ``mlir`` with kopt.compile(**compile_options), through the
    memory and disk caches. Raises kopt.CompileError."""
    key = cache_key(mlir, compile_options)
    with _cache_lock:
        hit = _memory_cache.get(key)
    if hit is not None:
        return hit
    entry = _read_entry(cache_dir / key) if cache_dir else None
    if entry is None:
        compiled = kopt_compile(mlir, **compile_options)
        entry = CompiledText(compiled.ptx, compiled.manifest_json)
        if cache_dir:
            _write_entry(cache_dir, key, entry)
    with _cache_lock:
        _memory_cache[key] = entry
    return entry


class KoptPartition(torch.nn.Module):
    """Runs one translated partition: inputs made dense and 16-byte aligned
    (a copy only when they are not), outputs allocated with PyTorch's
    allocator, kernels launched on the current stream; outputs that are views
    are made by PyTorch from the tensors they view."""

    def __init__(self, sub: torch.fx.GraphModule, fn: tr.Function,
                 compiled: Optional[CompiledText], fallback_reason: Optional[str],
                 chooser: Optional["Chooser"] = None,
                 split: Optional[torch.fx.GraphModule] = None):
        super().__init__()
        self.sub = sub  # the partition's ATen graph: the eager fallback
        self.fn = fn
        self.compiled = compiled
        self.fallback_reason = fallback_reason
        # choose.SPLIT: the partition's graph with its matmuls left to PyTorch
        # and its other ops in kopt partitions of their own (compile.py)
        self.split = split
        self.chooser = chooser or Chooser()
        self.choice: Optional[choose.Choice] = self.chooser.initial(
            fn.name, split is not None)
        self._module = None
        self._function = None
        self._consts: List[torch.Tensor] = []
        placeholders = [n for n in sub.graph.nodes if n.op == "placeholder"]
        self._arg_shapes = [tuple(placeholders[i].meta["val"].shape)
                            for i in fn.arg_placeholders]
        self._results = [(kshape, tr.TORCH_DTYPES[dt]) for _, kshape, dt in fn.results]
        # How each output is made: ("kopt", result index), ("input", i), or
        # ("node", target, args, kwargs) over earlier values, in order.
        index = {n: i for i, n in enumerate(placeholders)}
        rindex = {name: i for i, (name, _, _) in enumerate(fn.results)}
        self._steps: List[tuple] = []
        slots: Dict[torch.fx.Node, int] = {}

        def slot(node):
            if node in slots:
                return slots[node]
            if node.op == "placeholder":
                step = ("input", index[node])
            elif node.name in rindex:
                val = node.meta["val"]
                strides = None if val.is_contiguous() else tuple(val.stride())
                step = ("kopt", rindex[node.name], tuple(val.shape), strides)
            else:
                args = torch.fx.node.map_arg(node.args, lambda a: _Ref(slot(a)))
                kwargs = torch.fx.node.map_arg(node.kwargs, lambda a: _Ref(slot(a)))
                target = node.target
                if target is torch.ops.aten.view.default:  # see compile.py
                    target = torch.ops.aten.reshape.default
                step = ("node", _bind(target, args, kwargs))
            self._steps.append(step)
            slots[node] = len(self._steps) - 1
            return slots[node]

        out = next(n for n in sub.graph.nodes if n.op == "output")
        self._outputs = [slot(n) for n in out.args[0]]

    # --- loading -------------------------------------------------------------
    def _load(self, device: torch.device) -> bool:
        if self.fallback_reason is not None:
            return False
        if self._function is not None:
            return True
        try:
            from ..runtime import load_compiled
            self._module = load_compiled(self.compiled, device.index or 0)
            self._function = self._module[self.fn.name]
        except KoptError as e:
            self.fallback_reason = f"cannot load on {device}: {e}"
            warnings.warn(f"kopt: {self.fn.name} runs in PyTorch: {self.fallback_reason}")
            return False
        self._consts = [torch.tensor(x, dtype=tr.TORCH_DTYPES[dt], device=device)
                        for x, dt in self.fn.constants]
        self._device = device
        self._device_index = device.index or 0
        return True

    # --- running -------------------------------------------------------------
    def forward(self, *args):
        device = _device_of(args)
        if device is None or not self._load(device):
            return tuple(self.sub(*args))
        if device != self._device:
            raise RuntimeError(f"kopt: {self.fn.name} was loaded on {self._device}, "
                               f"called with tensors on {device}")
        if self.choice is None and not torch.cuda.is_current_stream_capturing():
            self.choice = self.chooser.choose(self, args, device)
        if self.choice is not None and self.choice.impl == choose.SPLIT:
            return tuple(self.split(*args))
        if self.choice is not None and self.choice.impl != "kopt":
            return tuple(self.chooser.pytorch(self, args))
        return self.run_kopt(args, device)

    def run_kopt(self, args, device):
        """The partition's outputs by kopt's kernels."""
        keep = []
        ptrs = []
        for i, shape in zip(self.fn.arg_placeholders, self._arg_shapes):
            t = args[i]
            if tuple(t.shape) != shape:
                raise RuntimeError(f"kopt: {self.fn.name}: input {i} has shape "
                                   f"{list(t.shape)}, compiled for {list(shape)}")
            if not t.is_contiguous():
                t = t.contiguous()
            if t.data_ptr() % _ALIGN:
                t = t.clone()  # a view at an odd offset: fresh, aligned memory
            keep.append(t)
            ptrs.append(t.data_ptr())
        ptrs.extend(c.data_ptr() for c in self._consts)
        results = [torch.empty(s, dtype=d, device=device) for s, d in self._results]
        ptrs.extend(r.data_ptr() for r in results)
        fn = self._function
        ws, ws_ptr = None, 0
        if fn.workspace_bytes:
            ws = torch.empty(fn.workspace_bytes, dtype=torch.uint8, device=device)
            ws_ptr = ws.data_ptr()
        stream = _raw_stream(self._device_index)
        fn._launch_pointers(ptrs, ws_ptr, fn.workspace_bytes, stream)
        values = []
        for step in self._steps:
            kind = step[0]
            if kind == "input":
                values.append(args[step[1]])
            elif kind == "kopt":
                out = results[step[1]].view(step[2])
                if step[3] is not None:  # PyTorch's result has a layout of its own
                    out = torch.empty_strided(step[2], step[3], dtype=out.dtype,
                                              device=out.device).copy_(out)
                values.append(out)
            else:
                values.append(step[1](values))
        return tuple(values[i] for i in self._outputs)


# The current stream's CUstream: the call Inductor's generated code makes
# (torch._C._cuda_getCurrentRawStream), else the public, slower API.
_get_raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)


def _raw_stream(index: int) -> int:
    if _get_raw is not None:
        return _get_raw(index)
    return torch.cuda.current_stream(index).cuda_stream


class Chooser:
    """How a partition picks between kopt's kernels and PyTorch's
    (:mod:`choose`): ``mode`` "measure" or "kopt"; ``alt`` names PyTorch's
    implementation ("pytorch": the partition's ATen ops in eager; "inductor":
    compiled by Inductor at the first call by ``alt_compile``); ``db`` the
    tuning database; ``workload`` the partition's key; ``on_choice`` is told
    each choice; ``graphs``: the forward runs from a CUDA graph, so both are
    timed as graph replays (choose.measure)."""

    def __init__(self, mode: str = "kopt", runs: int = 10, db: Optional[str] = None,
                 workload: str = "", alt: str = "pytorch", alt_compile=None,
                 on_choice=None, graphs: bool = False):
        self.mode, self.runs, self.db, self.workload = mode, runs, db, workload
        self.graphs = graphs  # the forward is replayed from a CUDA graph
        self.alt, self.alt_compile, self.on_choice = alt, alt_compile, on_choice
        self.alt_fn = None

    def initial(self, name: str, split: bool = False) -> Optional[choose.Choice]:
        """The choice known before any call (None: measure at the first);
        ``split``: the partition has a split variant to measure too."""
        if self.mode == "kopt":
            choice = choose.Choice("kopt", "option")
        else:
            choice = choose.from_db(self.db, self.workload, self.alt, split)
        if choice is not None and self.on_choice is not None:
            self.on_choice(name, choice)
        return choice

    def pytorch(self, part: "KoptPartition", args):
        """The partition's outputs by PyTorch (Inductor's code, compiled at the
        first call, when ``alt_compile`` is set; eager when that fails)."""
        if self.alt_compile is not None:
            try:
                from .remainder import InductorGroup
                self.alt_fn = InductorGroup(part.sub, self.alt_compile(part.sub), None)
            except Exception as e:  # noqa: BLE001 - any failure of Inductor's
                from .remainder import _reason
                warnings.warn(f"kopt: Inductor could not compile {part.fn.name}; "
                              f"PyTorch's side of it runs in eager: {_reason(e)}")
                self.alt = "pytorch"
            self.alt_compile = None
        if self.alt_fn is not None:
            return self.alt_fn(*args)
        return part.sub(*args)

    def choose(self, part: "KoptPartition", args, device) -> choose.Choice:
        """Measures kopt's kernels, the split variant (where the partition has
        one) and PyTorch's on ``args`` and decides (choose.decide_partition);
        a variant that disagrees with PyTorch is dropped with a warning."""
        cands = [("kopt", lambda: part.run_kopt(args, device))]
        if part.split is not None:
            cands.append((choose.SPLIT, lambda: tuple(part.split(*args))))
        cands.append((self.alt, lambda: tuple(self.pytorch(part, args))))
        costs, bads = choose.measure_all([fn for _, fn in cands], device, self.runs,
                                         self.graphs)
        ms = {impl: c for (impl, _), c in zip(cands, costs)}
        for (impl, _), bad in zip(cands, bads):
            if bad is None:
                continue
            what = (f"{part.fn.name}'s kernels" if impl == "kopt" else
                    f"{part.fn.name} with PyTorch's matmuls and kopt's other kernels")
            warnings.warn(f"kopt: {what} disagree with PyTorch ({bad}); "
                          f"{'the partition runs in PyTorch' if impl == 'kopt' else 'not used'}")
            if self.db:
                choose.record_wrong(self.db, self.workload, bad, device, impl)
        if bads[0] is not None:  # kopt's kernels disagree: PyTorch's, as before
            choice = choose.Choice(self.alt, "mismatch")
        else:
            choice = choose.decide_partition(ms["kopt"], ms.get(choose.SPLIT),
                                             ms[self.alt], self.alt, "measured")
            if self.db:
                choose.record_db(self.db, self.workload, choice, self.alt, self.runs,
                                 device)
        if self.on_choice is not None:
            self.on_choice(part.fn.name, choice)
        return choice


class _Ref:
    __slots__ = ("i",)

    def __init__(self, i):
        self.i = i


def _bind(target, args, kwargs):
    """``values -> target(*args, **kwargs)`` with the _Refs of ``args`` read from
    ``values``; refs at the top level (a view's input) without a walk."""
    nested = any(isinstance(a, (list, tuple, dict)) and _has_ref(a) for a in args) \
        or _has_ref(kwargs)
    if nested:
        return lambda values: target(*_deref(args, values), **_deref(kwargs, values))
    refs = [(i, a.i) for i, a in enumerate(args) if isinstance(a, _Ref)]
    template = list(args)

    def call(values):
        a = list(template)
        for i, j in refs:
            a[i] = values[j]
        return target(*a, **kwargs)
    return call


def _has_ref(x) -> bool:
    if isinstance(x, _Ref):
        return True
    if isinstance(x, (list, tuple)):
        return any(_has_ref(v) for v in x)
    if isinstance(x, dict):
        return any(_has_ref(v) for v in x.values())
    return False


def _deref(x, values):
    if isinstance(x, _Ref):
        return values[x.i]
    if isinstance(x, tuple):
        return tuple(_deref(v, values) for v in x)
    if isinstance(x, list):
        return [_deref(v, values) for v in x]
    if isinstance(x, dict):
        return {k: _deref(v, values) for k, v in x.items()}
    return x


def _device_of(args) -> Optional[torch.device]:
    for a in args:
        if isinstance(a, torch.Tensor):
            return a.device if a.is_cuda else None
    return None
