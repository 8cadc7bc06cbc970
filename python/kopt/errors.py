"""The exceptions kopt raises. Every one is a KoptError."""


class KoptError(RuntimeError):
    """An error reported by kopt (its message names the cause)."""


class CompileError(KoptError):
    """The compiler rejected the input; the message holds its diagnostics
    with their locations (``file:line:col: error: ...``)."""


class LaunchError(KoptError):
    """Loading a module or launching one of its functions failed (a bad
    manifest, no CUDA driver, a JIT error, an argument the runtime refused)."""
