"""kopt: an MLIR-based kernel compiler for NVIDIA Hopper GPUs, from Python.

    import kopt
    compiled = kopt.compile(open("softmax.mlir").read())   # PTX + manifest
    module = compiled.load()                               # on the current GPU
    y = module.forward(x)                                  # torch / CuPy arrays

The package is a thin layer over kopt's C API (libkopt.so, through ctypes):
the compiler, the manifest checks and the launcher are the C++ ones.
"""

from .compiler import Compiled, compile
from .errors import CompileError, KoptError, LaunchError
from .runtime import ArgSpec, Function, Module, load, validate_manifest

__all__ = ["compile", "load", "Compiled", "Module", "Function", "ArgSpec",
           "KoptError", "CompileError", "LaunchError", "validate_manifest", "version"]


def version() -> str:
    """kopt's version and the LLVM it was built with, from the library."""
    from . import _capi
    return _capi.lib().kopt_version_string().decode()
