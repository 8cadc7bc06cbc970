//===- Options.h - kopt-run's command line ---------------------*- C++ -*-===//
//
// The options of kopt-run (docs/runtime.md, "kopt-run") and their parser.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_TOOLS_KOPT_RUN_OPTIONS_H
#define KOPT_TOOLS_KOPT_RUN_OPTIONS_H

#include "kopt/Measure/Measure.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kopt::run {

/// The --help text.
extern const char *const kUsage;

/// The command line, with its defaults (timeouts and budgets in ms).
struct Options {
  std::string manifestPath;
  std::vector<std::string> kernels;
  /// --runs, --warmup, --rotate (inputSets), --audit (auditRuns; none is
  /// audited without checks), --timeout, --time-budget and --min-runs, whole
  /// numbers; the defaults are the measurement library's.
  measure::Options timing;
  std::optional<uint64_t> seed;
  int device = 0;
  bool time = true;
  bool check = true;
  std::string outPath;
  /// --batch FILE: the manifests FILE lists (one path per line) on one
  /// context, each one's report a line of --jsonl (the tuner's measurer).
  std::string batchPath;
  std::string jsonlPath;
};

/// Parses the command line into `opts` (`help` when -h or --help is given);
/// on a usage error returns its message.
std::optional<std::string> parseArgs(int argc, char **argv, Options &opts,
                                     bool &help);

} // namespace kopt::run

#endif // KOPT_TOOLS_KOPT_RUN_OPTIONS_H
