//===- Tune.h - kopt-tune's builder and GPU measurer ------------*- C++ -*-===//
//
// The parts of kopt-tune that compile (through the C API, libkopt) and run
// processes (ptxas, kopt-run): the Builder and the "gpu" Measurer of
// include/kopt/Search/Tuner.h and Measurer.h.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_TOOLS_KOPT_TUNE_TUNE_H
#define KOPT_TOOLS_KOPT_TUNE_TUNE_H

#include "kopt/Search/Tuner.h"

#include <memory>
#include <string>

namespace kopt::tune {

using search::Expected;
using search::Status;

struct BuildOptions {
  /// The module's MLIR text and its name in diagnostics.
  std::string source;
  std::string sourceName;
  std::string chip = "sm_90a";
  /// Where candidates are written (one folder per task).
  std::string workDir;
  /// Compiles at once.
  int jobs = 1;
  /// ptxas for the resources check (empty: none, nothing is rejected).
  std::string ptxas;
  /// Seconds before ptxas is killed.
  int compileTimeoutS = 120;
};

/// Compiles with kopt_compile (the module, this kernel's schedule pinned by
/// a schedule file entry of its name), then runs `ptxas -v` on the PTX.
std::unique_ptr<search::Builder> makeBuilder(const BuildOptions &options);

struct GpuOptions {
  std::string koptRun;
  uint64_t seed = 1;
  int64_t runs = 50, warmup = 5, rotate = 4, audits = 2;
  /// Per launch, ms (kopt-run --timeout).
  int64_t runTimeoutMs = 10000;
  /// Host time of the timed runs per candidate, ms (kopt-run --time-budget).
  int64_t timeBudgetMs = 400;
  std::string workDir;
};

/// The "gpu" measurer: kopt-run --batch over the batch's manifests, on one
/// CUDA context per batch; a candidate that stops kopt-run (a CUDA error, a
/// timeout, a crash) is recorded as such and the rest run in a new process.
std::unique_ptr<search::Measurer> makeGpuMeasurer(const GpuOptions &options);

/// Finds ptxas as scripts/common.sh does ($KOPT_PTXAS, $CUDA_HOME/bin,
/// $CUDA_PATH/bin, PATH, /usr/local/cuda/bin); empty when not found.
std::string findPtxas();

/// Runs `argv` (argv[0] a path) with stdout and stderr to `logPath`, killing
/// it after `timeoutS` seconds (0: none); returns its exit code, -1 when it
/// could not start, -2 when killed for the timeout, or 128 + a signal.
int runProgram(const std::vector<std::string> &argv, const std::string &logPath,
               int timeoutS, std::string &error);

} // namespace kopt::tune

#endif // KOPT_TOOLS_KOPT_TUNE_TUNE_H
