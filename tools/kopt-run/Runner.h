//===- Runner.h - Run, check and time one kernel of a manifest --*- C++ -*-===//
//
// kopt-run's work on one kernel (docs/runtime.md, "kopt-run"): fresh random
// inputs, outputs poisoned, one launch under the watchdog, the check against
// the independent reference (cuBLAS for a graph of one matmul, else the CPU
// float64 evaluation of the kernel's ops), then timing by the measurement
// library with audited runs, as the report's kernel entry.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_TOOLS_KOPT_RUN_RUNNER_H
#define KOPT_TOOLS_KOPT_RUN_RUNNER_H

#include "Options.h"
#include "kopt/Manifest/Manifest.h"
#include "kopt/Measure/Measure.h"
#include "kopt/Runtime/Check.h"
#include "kopt/Runtime/Reference.h"
#include "kopt/Runtime/Runtime.h"

#include <nlohmann/json.hpp>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace kopt::run {

using ojson = nlohmann::ordered_json;
using rt::CudaContext;
using rt::Expected;
using rt::KernelSpec;
using rt::Manifest;
using rt::Status;
using rt::Stream;

/// Runs, checks and times kernels on one context and stream.
class Runner {
public:
  /// Called when a launch timed out, with the kernel's entry and the error:
  /// the GPU may still run the kernel and freeing anything would wait for
  /// it, so it must write the report and leave the process (main's does).
  using ContextLostFn =
      std::function<void(const ojson &entry, const std::string &error)>;

  Runner(CudaContext &ctx, Stream stream, const Manifest &manifest,
         const Options &opts, uint64_t seed, ContextLostFn onContextLost)
      : ctx(ctx), stream(stream), manifest(manifest), opts(opts), seed(seed),
        measurer(ctx, stream), onContextLost(std::move(onContextLost)) {}

  /// Runs `kernel`, filling `out`. Sets `passed` to false when the check
  /// failed. Returns a failure for CUDA (or other) errors.
  Status run(const KernelSpec &kernel, ojson &out, bool &passed);

private:
  /// The outputs of a kernel being checked: their parameter indices, their
  /// values after the first launch, their references and whether each
  /// passed its first check.
  struct Outputs {
    std::vector<size_t> indices;
    std::vector<std::vector<uint8_t>> first;
    std::vector<rt::HostTensor> refs;
    std::vector<bool> firstPassed;
    rt::Tolerance tolerance;
  };

  Expected<rt::HostTensor> matmulReference(const KernelSpec &kernel,
                                       const std::vector<rt::DevicePtr> &pointers);
  /// Copies every output back after the first launch, computes the
  /// references (cuBLAS for a graph of one matmul of two parameters, else
  /// the CPU evaluation of the ops graph) and fills out["check"].
  Status checkFirstLaunch(const KernelSpec &kernel,
                          const std::vector<rt::DevicePtr> &pointers,
                          std::map<std::string, rt::HostTensor> &inputs,
                          Outputs &outputs, ojson &out, bool &passed);
  /// Times `kernel` on `pointers` (kopt/Measure/Measure.h) and, when
  /// checking, audits timed runs: every output of an audited run against
  /// `outputs` (the first launch's values and references), filling
  /// out["time"] (and check.after_timing / check.audits); sets `passed` to
  /// false when an audit failed.
  Status time(const KernelSpec &kernel, const std::vector<rt::DevicePtr> &pointers,
              const Outputs &outputs, ojson &out, bool &passed);

  CudaContext &ctx;
  Stream stream;
  const Manifest &manifest;
  const Options &opts;
  uint64_t seed;
  std::unique_ptr<rt::Cublas> cublas;
  measure::Measurer measurer;
  ContextLostFn onContextLost;
};

/// One line of a kernel's report entry for stderr: its check and time.
std::string summaryLine(const ojson &k);

} // namespace kopt::run

#endif // KOPT_TOOLS_KOPT_RUN_RUNNER_H
