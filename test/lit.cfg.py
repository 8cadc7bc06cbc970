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
llvm_config.add_tool_substitutions(["kopt-opt", "mlir-opt"], tool_dirs)
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.kopt_tools_dir, append_path=True)
