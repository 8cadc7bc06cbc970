"""ctypes bindings of kopt's C API (include/kopt-c/kopt.h).

One build of libkopt.so serves every Python 3: nothing here is compiled. The
library is found, in this order, at ``$KOPT_LIBRARY`` (a file), in this
package's ``_lib/`` folder (where the self-contained bundle and the wheel put
it), then in the ``build/lib`` folder of the source tree this package sits in
(``$KOPT_BUILD_DIR/lib`` first when set).
"""

from __future__ import annotations

import ctypes
import os
import threading
from pathlib import Path

from .errors import KoptError

#: The C API version these bindings speak (KOPT_C_API_VERSION).
API_VERSION = 1

_lock = threading.Lock()
_lib = None


def _candidates():
    env = os.environ.get("KOPT_LIBRARY")
    if env:
        yield Path(env)
        return
    here = Path(__file__).resolve().parent
    yield here / "_lib" / "libkopt.so"
    root = here.parent.parent  # python/kopt -> the source tree
    build = os.environ.get("KOPT_BUILD_DIR")
    if build:
        yield Path(build) / "lib" / "libkopt.so"
    yield root / "build" / "lib" / "libkopt.so"


class kopt_compile_options(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("chip", ctypes.c_char_p),
        ("features", ctypes.c_char_p),
        ("opt_level", ctypes.c_int),
        ("cuda_path", ctypes.c_char_p),
        ("schedule_file", ctypes.c_char_p),
        ("pack_min_reuse", ctypes.c_int64),
        ("source_name", ctypes.c_char_p),
        ("ptx_file_name", ctypes.c_char_p),
        ("no_fusion", ctypes.c_int),
        ("fusion_plan_file", ctypes.c_char_p),
        ("tuning_db_file", ctypes.c_char_p),
    ]


class kopt_arg_info(ctypes.Structure):
    _fields_ = [
        ("name", ctypes.c_char_p),
        ("role", ctypes.c_int),
        ("dtype", ctypes.c_int),
        ("rank", ctypes.c_size_t),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("bytes", ctypes.c_uint64),
    ]


class kopt_kernel_resources(ctypes.Structure):
    _fields_ = [
        ("registers", ctypes.c_int),
        ("local_bytes", ctypes.c_int),
        ("static_shared_bytes", ctypes.c_int),
        ("max_threads_per_block", ctypes.c_int),
    ]


DTYPES = {0: "f32", 1: "f16", 2: "bf16"}
ROLES = {0: "input", 1: "output"}
LAUNCH_WORKSPACE_ZEROED = 1


def _declare(lib):
    P, S, I, U64 = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_uint64
    C = ctypes.c_char_p
    err = P  # kopt_error *
    sig = {
        "kopt_c_api_version": (I, []),
        "kopt_version_string": (C, []),
        "kopt_error_message": (C, [P]),
        "kopt_error_free": (None, [P]),
        "kopt_compile": (err, [C, S, ctypes.POINTER(kopt_compile_options),
                               ctypes.POINTER(P)]),
        "kopt_compiled_ptx": (P, [P, ctypes.POINTER(S)]),
        "kopt_compiled_manifest": (P, [P, ctypes.POINTER(S)]),
        "kopt_compiled_write": (err, [P, C]),
        "kopt_compiled_free": (None, [P]),
        "kopt_module_load": (err, [C, S, C, S, I, ctypes.POINTER(P)]),
        "kopt_module_load_file": (err, [C, I, ctypes.POINTER(P)]),
        "kopt_manifest_validate": (err, [C, S, C]),
        "kopt_module_kernel_resources": (err, [P, C, ctypes.POINTER(
            kopt_kernel_resources)]),
        "kopt_module_free": (None, [P]),
        "kopt_module_num_functions": (S, [P]),
        "kopt_module_function_name": (C, [P, S]),
        "kopt_module_manifest": (C, [P]),
        "kopt_function_num_args": (err, [P, C, ctypes.POINTER(S)]),
        "kopt_function_arg": (err, [P, C, S, ctypes.POINTER(kopt_arg_info)]),
        "kopt_function_workspace_bytes": (err, [P, C, ctypes.POINTER(U64)]),
        "kopt_function_launch": (err, [P, C, ctypes.POINTER(U64), S, U64, U64,
                                       P, ctypes.c_uint32]),
        "kopt_tuning_db_add": (err, [C, C, S]),
        "kopt_tuning_db_trials": (err, [C, C, ctypes.POINTER(P)]),
        "kopt_string_free": (None, [P]),
    }
    for name, (res, args) in sig.items():
        fn = getattr(lib, name)
        fn.restype = res
        fn.argtypes = args


def lib():
    """The loaded libkopt (loaded once); KoptError when none is found or its
    C API version differs."""
    global _lib
    with _lock:
        if _lib is not None:
            return _lib
        tried = []
        for path in _candidates():
            tried.append(str(path))
            if not path.is_file():
                continue
            try:
                handle = ctypes.CDLL(str(path))
            except OSError as e:
                raise KoptError(f"cannot load {path}: {e}") from None
            try:
                _declare(handle)
            except AttributeError as e:
                raise KoptError(f"{path} is not kopt's C API library ({e})") from None
            version = handle.kopt_c_api_version()
            if version != API_VERSION:
                raise KoptError(
                    f"{path} speaks kopt C API version {version}; this package "
                    f"needs version {API_VERSION}: rebuild or reinstall kopt")
            _lib = handle
            return _lib
        raise KoptError(
            "libkopt.so not found (tried: " + ", ".join(tried) + "); build kopt "
            "(scripts/build.sh), install the package from a bundle, or set "
            "KOPT_LIBRARY to the library's path")


def check(error, exc=KoptError):
    """Raises `exc` with the message of a kopt_error * (and frees it)."""
    if not error:
        return
    handle = lib()
    message = handle.kopt_error_message(error)
    handle.kopt_error_free(error)
    raise exc(message.decode("utf-8", errors="replace") if message else
              "kopt: unknown error")


def text(ptr, length):
    """Bytes at a (const char *, size_t) pair as str."""
    return ctypes.string_at(ptr, length).decode("utf-8", errors="replace")
