//===- PTX.h - PTX extraction, launch manifest, kopt-to-ptx -----*- C++ -*-===//
//
// The end of the compile path: after `gpu-module-to-binary{format=isa}` the PTX
// text sits in the module's gpu.binary; the host functions still hold the
// kopt.launch ops (with their `source` and `kernel_class`) from which
// the launch manifest (docs/manifest.md) is written.
//
//===----------------------------------------------------------------------===//
#ifndef KOPT_TARGET_PTX_H
#define KOPT_TARGET_PTX_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"

#include <functional>
#include <string>

namespace kopt {

/// The PTX text of the module's gpu.binary ops (one object of Assembly format
/// each), concatenated. Fails with a diagnostic when there is none.
mlir::FailureOr<std::string> extractPTX(mlir::ModuleOp module);

/// The launch manifest of `module` as JSON text (docs/manifest.md, version 2),
/// filled from the module's launches and written by the manifest library
/// (lib/Target/ManifestFromModule.cpp). `ptxFileName` is recorded as the PTX
/// file's name. Runs the library's validator first (the rules the runtime's
/// reader applies): fails with a diagnostic at the offending launch or
/// function when a launch has a non-constant dimension or a parameter that is
/// not a static memref of f32, f16 or bf16, when a kernel would break a rule
/// of the manifest (an eps out of [0, 1], a tensor map that does not fit its
/// schedule, ...), or when a name is not valid UTF-8.
mlir::FailureOr<std::string> buildManifest(mlir::ModuleOp module,
                                           llvm::StringRef ptxFileName,
                                           llvm::StringRef chip);

/// The two products of a compile.
struct PTXOutput {
  std::string ptx;
  /// The launch manifest, JSON text (docs/manifest.md).
  std::string manifest;
};

/// The PTX and launch manifest of `module` after the kopt-to-ptx pipeline
/// (kopt-emit-ptx writes them to files, the C API returns them). Fails with a
/// diagnostic when the module has no kopt kernel, when its PTX calls a
/// libdevice function that was not linked (naming `cudaPath`), or as
/// extractPTX and buildManifest do.
mlir::FailureOr<PTXOutput> emitPTXOutput(mlir::ModuleOp module,
                                         llvm::StringRef ptxFileName,
                                         llvm::StringRef chip,
                                         llvm::StringRef cudaPath);

/// Options of the `kopt-to-ptx` pipeline.
struct KoptToPTXOptions {
  std::string chip = "sm_90a";
  std::string features = "+ptx80";
  std::string output;
  /// The CUDA toolkit whose libdevice (nvvm/libdevice/libdevice.10.bc) is
  /// linked for exp, tanh, log, log1p, erf; empty: see resolveCudaPath.
  std::string cudaPath;
  unsigned optLevel = 3;
  /// JSON file of schedules for kopt-select-schedule (empty: the heuristic).
  std::string schedule;
  /// Tuning database (SQLite, kopt-tune --db) for kopt-select-schedule
  /// (empty: none).
  std::string tuningDb;
  /// Print each matmul kernel's schedule space as JSON to stdout.
  bool printSpace = false;
  /// kopt-pack-operands' min-reuse: pack an f16/bf16 matmul operand the fast
  /// schedules cannot read when the other operand has at least this many
  /// rows; 0 turns packing off.
  int64_t packMinReuse = 128;
  /// kopt-fuse's `fuse`: elementwise chains, row ops with their elementwise
  /// neighbours and matmuls with their epilogues fused; false: one kernel
  /// per op.
  bool fuse = true;
  /// kopt-fuse's `plan`: a JSON file of fusion plan overrides (empty: none).
  std::string fusionPlan;
};

/// `explicitPath` if set, else $CUDA_HOME, $CUDA_ROOT, $CUDA_PATH (the first
/// set), else /usr/local/cuda.
std::string resolveCudaPath(llvm::StringRef explicitPath);

/// The names of the functions the PTX declares (`.extern .func`) but does not
/// define, e.g. libdevice's `__nv_expf` when libdevice was not linked.
llvm::SmallVector<std::string> unresolvedFunctions(llvm::StringRef ptx);

/// kopt-check-target, kopt-pack-operands (unless packMinReuse is 0),
/// kopt-fuse, kopt-select-schedule, kopt-lower-to-linalg,
/// kopt-lower-to-gpu, kopt-tile, kopt-pipeline, the upstream NVVM lowering of
/// the gpu.module,
/// nvvm-attach-target, gpu-module-to-binary{format=isa} and kopt-emit-ptx (when
/// `output` is set).
void buildKoptToPTXPipeline(mlir::OpPassManager &pm,
                            const KoptToPTXOptions &opts);

/// Adds every dialect, extension and translation a kopt compile uses to
/// `registry` (the kopt dialect, the upstream dialects its passes create, the
/// NVVM target and the LLVM IR translations gpu-module-to-binary needs).
void registerCompilerDialects(mlir::DialectRegistry &registry);

/// Runs the kopt-to-ptx pipeline (`options.output` is ignored) on `module`
/// and returns its PTX and launch manifest, whose `ptx` field is
/// `ptxFileName`. Diagnostics go to the module's context's handlers.
mlir::FailureOr<PTXOutput> compileModule(mlir::ModuleOp module,
                                         const KoptToPTXOptions &options,
                                         llvm::StringRef ptxFileName);

/// Registers `--kopt-to-ptx` with the pass registry. `adjust`, when given, may
/// change the options parsed from the pipeline string before the pipeline is
/// built (kopt-opt fills in its `--kopt-schedule` / `--kopt-print-space`).
void registerKoptToPTXPipeline(
    std::function<void(KoptToPTXOptions &)> adjust = {});

} // namespace kopt

#endif // KOPT_TARGET_PTX_H
