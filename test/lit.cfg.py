# lit configuration of the kopt test suite.
import os

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "KOPT"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py", "unit", "gpu",
                   "Inputs"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.kopt_obj_root, "test")

config.substitutions.append(("%kopt_src_root", config.kopt_src_root))
config.substitutions.append(("%ptxas", config.ptxas))
llvm_config.with_system_environment(["HOME", "TMP", "TEMP"])
llvm_config.use_default_substitutions()

tool_dirs = [config.kopt_tools_dir, config.llvm_tools_dir]
llvm_config.add_tool_substitutions(["kopt-opt", "kopt-space", "mlir-opt"], tool_dirs)
# kopt-tune is built with the C API (the compiler and the runtime).
if os.path.exists(os.path.join(config.kopt_tools_dir, "kopt-tune")):
    llvm_config.add_tool_substitutions(["kopt-tune"], tool_dirs)
    config.available_features.add("kopt-tune")
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.kopt_tools_dir, append_path=True)
# kopt-run is built with the runtime (KOPT_BUILD_RUNTIME).
if os.path.exists(os.path.join(config.kopt_tools_dir, "kopt-run")):
    config.available_features.add("kopt-run")

# MLIR's gpu-module-to-binary links libdevice (exp, tanh, log, erf, rsqrt, ... of the CUDA
# math library) only when it finds the CUDA toolkit through CUDA_ROOT, CUDA_HOME or
# CUDA_PATH; without one of them the PTX keeps unresolved calls such as __nv_expf
# that ptxas rejects (test/Target/libdevice-env.mlir). Pass them through, and point
# CUDA_HOME at the toolkit of the ptxas in use when none is set.
_cuda_vars = ["CUDA_ROOT", "CUDA_HOME", "CUDA_PATH"]
llvm_config.with_system_environment(_cuda_vars)
if not any(os.environ.get(v) for v in _cuda_vars) and config.ptxas:
    config.environment["CUDA_HOME"] = os.path.dirname(
        os.path.dirname(os.path.realpath(config.ptxas)))

# CPU execution of the linalg form (test/CPU): upstream passes down to LLVM, run by
# mlir-runner with the runner utilities (printMemrefF32). Tests there say
# `REQUIRES: mlir-runner`.
# convert-math-to-llvm would rewrite math.log1p as log(1 + x), which loses the
# accuracy near 0 that kopt.log1p promises (test/CPU/elementwise.mlir checks it):
# approximate-log1p=false leaves it to convert-math-to-libm (libm's log1pf).
_llvm_lib_dir = os.path.join(os.path.dirname(config.llvm_tools_dir), "lib")
_mlir_runner = os.path.join(config.llvm_tools_dir, "mlir-runner")
_runner_utils = os.path.join(_llvm_lib_dir, "libmlir_runner_utils.so")
_c_runner_utils = os.path.join(_llvm_lib_dir, "libmlir_c_runner_utils.so")
if all(os.path.exists(p) for p in (_mlir_runner, _runner_utils, _c_runner_utils)):
    config.available_features.add("mlir-runner")
config.substitutions.append(("%mlir_runner_utils", _runner_utils))
config.substitutions.append(("%mlir_c_runner_utils", _c_runner_utils))
config.substitutions.append(("%mlir_runner", _mlir_runner))
config.substitutions.append((
    "%cpu_to_llvm",
    "--one-shot-bufferize=bufferize-function-boundaries --convert-linalg-to-loops "
    "--convert-scf-to-cf --expand-strided-metadata --finalize-memref-to-llvm "
    "--convert-math-to-llvm=approximate-log1p=false --convert-math-to-libm "
    "--convert-arith-to-llvm "
    "--convert-cf-to-llvm --convert-func-to-llvm --reconcile-unrealized-casts"))
