"""Loading compiled kopt modules and launching their functions on GPU arrays.

Arrays are torch tensors or any object with ``__cuda_array_interface__``
(CuPy arrays, Numba device arrays). A launch enqueues the function's kernels
on a stream (by default the current stream of the arrays' framework: torch's
``torch.cuda.current_stream()``, CuPy's ``cupy.cuda.get_current_stream()``)
and returns at once; the framework's own synchronization applies.
"""

from __future__ import annotations

import ctypes
import os
import threading
from dataclasses import dataclass
from typing import Any, Optional, Sequence, Tuple

from . import _capi
from .errors import KoptError, LaunchError

_ALIGNMENT = 16  # bytes: kopt's kernels use 16-byte vector and TMA accesses
_WORKSPACE_ALIGNMENT = 256

_ITEMSIZE = {"f32": 4, "f16": 2, "bf16": 2}
_TYPESTR = {"<f4": "f32", "<f2": "f16"}


@dataclass(frozen=True)
class ArgSpec:
    """One argument of a function: a dense row-major tensor."""
    name: str
    role: str  # "input" or "output"
    dtype: str  # "f32", "f16" or "bf16"
    shape: Tuple[int, ...]


@dataclass
class _Array:
    ptr: int
    shape: Tuple[int, ...]
    dtype: Optional[str]
    contiguous: bool
    device: Optional[int]
    kind: str  # "torch", "cupy" or "cai"
    obj: Any
    readonly: bool = False


def _torch():
    try:
        import torch  # noqa: F401
        return torch
    except ImportError:
        return None


def _describe(x, what: str) -> _Array:
    torch = _torch()
    if torch is not None and isinstance(x, torch.Tensor):
        if not x.is_cuda:
            raise ValueError(f"{what}: a CPU tensor; kopt needs a CUDA tensor "
                             f"(.cuda())")
        dtype = {torch.float32: "f32", torch.float16: "f16",
                 torch.bfloat16: "bf16"}.get(x.dtype)
        return _Array(x.data_ptr(), tuple(x.shape), dtype, x.is_contiguous(),
                      x.device.index, "torch", x)
    cai = getattr(x, "__cuda_array_interface__", None)
    if cai is None:
        raise TypeError(f"{what}: expected a torch CUDA tensor or an array with "
                        f"__cuda_array_interface__, got {type(x).__name__}")
    try:
        shape = tuple(int(d) for d in cai["shape"])
        typestr = str(cai["typestr"])
        data = cai["data"]
        ptr, readonly = data[0], bool(data[1])
        strides = cai.get("strides")
        mask = cai.get("mask")
    except (TypeError, KeyError, IndexError, ValueError) as e:
        raise TypeError(f"{what}: malformed __cuda_array_interface__ "
                        f"({type(e).__name__}: {e})") from None
    if not isinstance(ptr, int) or isinstance(ptr, bool):
        raise TypeError(f"{what}: the data pointer must be an int, not "
                        f"{type(ptr).__name__}")
    if mask is not None:
        raise ValueError(f"{what}: masked arrays are not supported")
    dtype = _TYPESTR.get(typestr)
    contiguous = True
    if strides is not None:
        if len(strides) != len(shape):
            contiguous = False
        elif dtype is not None:
            expect, step = [], _ITEMSIZE[dtype]
            for d in reversed(shape):
                expect.append(step)
                step *= d
            contiguous = all(d == 1 or s == e for d, s, e in
                             zip(shape, strides, reversed(expect)))
    device = None
    dev = getattr(x, "device", None)
    if dev is not None and hasattr(dev, "id"):
        device = int(dev.id)
    kind = "cupy" if type(x).__module__.startswith("cupy") else "cai"
    arr = _Array(ptr, shape, dtype if dtype else typestr, contiguous, device, kind, x)
    arr.readonly = readonly
    return arr


def _stream_handle(stream, arrays, device) -> int:
    """The CUstream to launch on, as an int."""
    if stream is None:
        kinds = {a.kind for a in arrays}
        if "torch" in kinds:
            torch = _torch()
            return int(torch.cuda.current_stream(device).cuda_stream)
        if "cupy" in kinds:
            import cupy
            return int(cupy.cuda.get_current_stream().ptr)
        return 0
    if isinstance(stream, int) and not isinstance(stream, bool):
        if not 0 <= stream < 1 << 64:
            raise ValueError(f"stream: {stream:#x} is not a CUstream handle")
        return stream
    for attr in ("cuda_stream", "ptr", "handle"):
        value = getattr(stream, attr, None)
        if isinstance(value, int):
            return value
    raise TypeError(f"stream: expected an int CUstream handle, a torch.cuda.Stream "
                    f"or a cupy Stream, got {type(stream).__name__}")


class Function:
    """A function of a loaded module: ``fn(*inputs)`` allocates the outputs
    (with the inputs' framework), launches and returns them (one array, or a
    tuple for several); ``fn.launch(args)`` launches on arrays you own."""

    def __init__(self, module: "Module", name: str):
        lib = _capi.lib()
        self._module = module
        self.name = name
        self._key = key = name.encode()
        n = ctypes.c_size_t()
        _capi.check(lib.kopt_function_num_args(module._handle, key,
                                               ctypes.byref(n)), LaunchError)
        args = []
        for i in range(n.value):
            info = _capi.kopt_arg_info()
            _capi.check(lib.kopt_function_arg(module._handle, key, i,
                                              ctypes.byref(info)), LaunchError)
            args.append(ArgSpec(info.name.decode(), _capi.ROLES[info.role],
                                _capi.DTYPES[info.dtype],
                                tuple(info.shape[d] for d in range(info.rank))))
        self.args: Tuple[ArgSpec, ...] = tuple(args)
        ws = ctypes.c_uint64()
        _capi.check(lib.kopt_function_workspace_bytes(module._handle, key,
                                                      ctypes.byref(ws)), LaunchError)
        #: Bytes of workspace a launch needs (intermediate buffers).
        self.workspace_bytes: int = ws.value

    @property
    def inputs(self) -> Tuple[ArgSpec, ...]:
        return tuple(a for a in self.args if a.role == "input")

    @property
    def outputs(self) -> Tuple[ArgSpec, ...]:
        return tuple(a for a in self.args if a.role == "output")

    def _check(self, arrays: Sequence[_Array]):
        device = self._module.device
        for spec, a in zip(self.args, arrays):
            what = f"{self.name}: {spec.role} '{spec.name}'"
            if a.dtype != spec.dtype:
                raise TypeError(f"{what}: dtype {a.dtype}, expected {spec.dtype}")
            if a.shape != spec.shape:
                raise ValueError(f"{what}: shape {list(a.shape)}, expected "
                                 f"{list(spec.shape)}")
            if not a.contiguous:
                raise ValueError(f"{what}: not contiguous (kopt takes dense "
                                 f"row-major arrays; use .contiguous())")
            if a.ptr == 0:
                raise ValueError(f"{what}: null data pointer")
            if not 0 < a.ptr < 1 << 64:
                raise ValueError(f"{what}: data pointer {a.ptr:#x} is not a "
                                 f"64-bit device address")
            if spec.role == "output" and a.readonly:
                raise ValueError(f"{what}: a read-only array cannot be written")
            if a.ptr % _ALIGNMENT:
                raise ValueError(f"{what}: data pointer {a.ptr:#x} is not "
                                 f"{_ALIGNMENT}-byte aligned (a view at an "
                                 f"offset? use .clone())")
            if a.device is not None and a.device != device:
                raise ValueError(f"{what}: on device {a.device}, but the module "
                                 f"is loaded on device {device}")

    def launch(self, args: Sequence[Any], *, stream=None, workspace=None,
               workspace_zeroed: bool = False) -> None:
        """Launches on ``args`` (inputs then outputs, in :attr:`args` order).
        ``workspace``: an array of at least :attr:`workspace_bytes` bytes
        (allocated with the args' framework when None); ``stream``: an int
        CUstream, a torch or CuPy stream (default: the framework's current
        stream)."""
        if not isinstance(args, (list, tuple)):
            raise TypeError(f"{self.name}: launch takes a list or tuple of "
                            f"arrays (inputs, then outputs), not "
                            f"{type(args).__name__}")
        if len(args) != len(self.args):
            raise TypeError(f"{self.name}: takes {len(self.args)} arrays "
                            f"({', '.join(a.name for a in self.args)}), got "
                            f"{len(args)}")
        arrays = [_describe(x, f"{self.name}: {s.role} '{s.name}'")
                  for x, s in zip(args, self.args)]
        self._check(arrays)
        handle = _stream_handle(stream, arrays, self._module.device)
        ws_ptr, ws_bytes, keep = 0, 0, None
        if self.workspace_bytes:
            if workspace is None:
                keep = _allocate_bytes(arrays, self.workspace_bytes,
                                       self._module.device, handle)
                if keep is None:
                    raise ValueError(f"{self.name}: needs a workspace of "
                                     f"{self.workspace_bytes} bytes (pass "
                                     f"workspace=)")
                workspace = keep
            w = _describe(workspace, f"{self.name}: workspace")
            if not w.contiguous:
                raise ValueError(f"{self.name}: the workspace is not contiguous")
            ws_ptr, ws_bytes = w.ptr, _byte_size(workspace)
        self._launch_pointers([a.ptr for a in arrays], ws_ptr, ws_bytes, handle,
                              _capi.LAUNCH_WORKSPACE_ZEROED if workspace_zeroed else 0)

    def _launch_pointers(self, pointers, ws_ptr: int, ws_bytes: int, stream: int,
                         flags: int = 0) -> None:
        """Launches on device addresses the caller has checked (one per
        argument, in :attr:`args` order: dense, 16-byte aligned, of the
        argument's dtype and shape, on the module's device); the fast path of
        :meth:`launch` and of the torch.compile backend, which allocates and
        checks its tensors itself."""
        ptrs = (ctypes.c_uint64 * len(pointers))(*pointers)
        module = self._module
        with module._cond:  # close() waits for launches in flight
            if module._handle is None:
                raise LaunchError(f"{self.name}: the module is closed")
            module._active += 1
        try:
            _capi.check(_capi.lib().kopt_function_launch(
                module._handle, self._key, ptrs, len(pointers),
                ws_ptr, ws_bytes, ctypes.c_void_p(stream), flags), LaunchError)
        finally:
            with module._cond:
                module._active -= 1
                module._cond.notify_all()

    def __call__(self, *inputs, out=None, stream=None):
        if len(inputs) != len(self.inputs):
            raise TypeError(f"{self.name}: takes {len(self.inputs)} inputs "
                            f"({', '.join(a.name for a in self.inputs)}), got "
                            f"{len(inputs)}")
        if out is None:
            arrays = [_describe(x, f"{self.name}: input '{s.name}'")
                      for x, s in zip(inputs, self.inputs)]
            out = tuple(_empty_like_framework(arrays, s, self._module.device)
                        for s in self.outputs)
        elif not isinstance(out, (tuple, list)):
            out = (out,)
        self.launch(list(inputs) + list(out), stream=stream)
        return out[0] if len(out) == 1 else tuple(out)

    def __repr__(self):
        sig = ", ".join(f"{a.name}: {a.dtype}{list(a.shape)}" for a in self.inputs)
        res = ", ".join(f"{a.dtype}{list(a.shape)}" for a in self.outputs)
        return f"<kopt.Function {self.name}({sig}) -> ({res})>"


def _byte_size(x) -> int:
    """Bytes of a torch tensor or a __cuda_array_interface__ array."""
    torch = _torch()
    if torch is not None and isinstance(x, torch.Tensor):
        return x.numel() * x.element_size()
    cai = x.__cuda_array_interface__
    n = 1
    for d in cai["shape"]:
        n *= int(d)
    digits = "".join(c for c in cai["typestr"][2:] if c.isdigit())
    return n * (int(digits) if digits else 1)


def _allocate_bytes(arrays, nbytes, device, stream):
    kinds = {a.kind for a in arrays}
    if "torch" in kinds:
        torch = _torch()
        s = torch.cuda.ExternalStream(stream, device=device) if stream else None
        with torch.cuda.device(device), torch.cuda.stream(s) if s else _null():
            return torch.empty(nbytes, dtype=torch.uint8, device=f"cuda:{device}")
    if "cupy" in kinds:
        import cupy
        with cupy.cuda.Device(device):
            return cupy.empty(nbytes, dtype=cupy.uint8)
    return None


class _null:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


def _empty_like_framework(arrays, spec: ArgSpec, device):
    kinds = {a.kind for a in arrays}
    if "torch" in kinds:
        torch = _torch()
        dtype = {"f32": torch.float32, "f16": torch.float16,
                 "bf16": torch.bfloat16}[spec.dtype]
        return torch.empty(spec.shape, dtype=dtype, device=f"cuda:{device}")
    if "cupy" in kinds:
        import cupy
        if spec.dtype == "bf16":
            raise TypeError(f"output '{spec.name}': CuPy has no bfloat16; pass "
                            f"out=")
        with cupy.cuda.Device(device):
            return cupy.empty(spec.shape, dtype={"f32": cupy.float32,
                                                 "f16": cupy.float16}[spec.dtype])
    raise TypeError(f"output '{spec.name}': cannot allocate outputs for these "
                    f"arrays; pass out=")


class Module:
    """A compiled kopt module loaded on one GPU (its primary context, the one
    PyTorch and CuPy use). ``module["forward"]`` or ``module.forward`` is a
    :class:`Function`."""

    def __init__(self, handle: ctypes.c_void_p, device: int):
        self._handle = handle
        self.device = device
        # Launches in flight (the C call releases the GIL): close() waits
        # for them instead of freeing the module under them.
        self._cond = threading.Condition()
        self._active = 0
        lib = _capi.lib()
        names = [lib.kopt_module_function_name(handle, i).decode()
                 for i in range(lib.kopt_module_num_functions(handle))]
        self.functions = {n: Function(self, n) for n in names}

    def __getitem__(self, name: str) -> Function:
        try:
            return self.functions[name]
        except KeyError:
            raise KeyError(f"no function '{name}' (the module has: "
                           f"{', '.join(self.functions) or 'none'})") from None

    def __getattr__(self, name):
        functions = self.__dict__.get("functions", {})
        if name in functions:
            return functions[name]
        raise AttributeError(name)

    def kernel_resources(self, kernel: str) -> dict:
        """Registers, local (spill) bytes, static shared bytes and the most
        threads per block of the loaded kernel named ``kernel`` (a manifest
        ``kernels[].name``), as the driver reports them."""
        r = _capi.kopt_kernel_resources()
        _capi.check(_capi.lib().kopt_module_kernel_resources(
            self._handle, str(kernel).encode(), ctypes.byref(r)), LaunchError)
        return {"registers": r.registers, "local_bytes": r.local_bytes,
                "static_shared_bytes": r.static_shared_bytes,
                "max_threads_per_block": r.max_threads_per_block}

    def close(self):
        """Unloads the module once the launches in flight on other threads
        have been enqueued; its functions cannot be launched after (the
        kernels already enqueued must be done before the memory they use
        goes: synchronize first)."""
        cond = self.__dict__.get("_cond")
        if cond is None:
            return
        with cond:
            while self._active:
                cond.wait()
            handle, self._handle = self._handle, None
        if handle:
            _capi.lib().kopt_module_free(handle)

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __repr__(self):
        return f"<kopt.Module on cuda:{self.device}: {list(self.functions)}>"


def _default_device(device):
    if device is not None:
        if isinstance(device, bool) or not isinstance(device, int):
            raise TypeError(f"device must be an int, not {type(device).__name__}")
        if not 0 <= device < 1 << 31:
            raise ValueError(f"device {device} is out of range")
        return device
    torch = _torch()
    if torch is not None and torch.cuda.is_available():
        return torch.cuda.current_device()
    return 0


def load_compiled(compiled, device: Optional[int] = None) -> Module:
    dev = _default_device(device)
    lib = _capi.lib()
    handle = ctypes.c_void_p()
    ptx = compiled.ptx.encode()
    manifest = compiled.manifest_json.encode()
    _capi.check(lib.kopt_module_load(ptx, len(ptx), manifest, len(manifest), dev,
                                     ctypes.byref(handle)), LaunchError)
    return Module(handle, dev)


def validate_manifest(manifest, name: Optional[str] = None) -> None:
    """Checks a launch manifest (JSON text, bytes, a parsed dict, or a
    ``pathlib.Path`` of a file) with the C++ reader that :func:`load` uses,
    without a GPU or driver; raises LaunchError with the message kopt.load
    would give (``name: kernels[0].tensor_maps[0].box[1]: ...``). ``name``
    prefixes the message (default: the path, else ``<manifest>``). The PTX
    the manifest names is not read."""
    import json
    from pathlib import Path
    if isinstance(manifest, Path):
        name = name or str(manifest)
        try:
            manifest = manifest.read_bytes()
        except OSError as e:
            raise LaunchError(f"cannot read manifest '{manifest}': "
                              f"{e.strerror}") from None
    if isinstance(manifest, (dict, list)):
        manifest = json.dumps(manifest)
    if isinstance(manifest, str):
        manifest = manifest.encode("utf-8")
    if not isinstance(manifest, bytes):
        raise TypeError("kopt.validate_manifest: expected JSON text, a dict or "
                        f"a Path, got {type(manifest).__name__}")
    _capi.check(_capi.lib().kopt_manifest_validate(
        manifest, len(manifest), name.encode() if name else None), LaunchError)


def load(source, device: Optional[int] = None) -> Module:
    """Loads a :class:`kopt.Compiled` or a manifest file (``.json``, with the
    PTX it names beside it) on ``device`` (default: torch's current device,
    else 0)."""
    from .compiler import Compiled
    if isinstance(source, Compiled):
        return load_compiled(source, device)
    if not isinstance(source, (str, os.PathLike)):
        raise TypeError("kopt.load: expected a kopt.Compiled or a manifest path, "
                        f"got {type(source).__name__}")
    dev = _default_device(device)
    handle = ctypes.c_void_p()
    _capi.check(_capi.lib().kopt_module_load_file(os.fsencode(source), dev,
                                                  ctypes.byref(handle)), LaunchError)
    return Module(handle, dev)
