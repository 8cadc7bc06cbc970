//===- Options.h - kopt-run's command line ---------------------*- C++ -*-===//
//
// The options of kopt-run (docs/runtime.md, "kopt-run") and their parser.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_TOOLS_KOPT_RUN_OPTIONS_H
#define KOPT_TOOLS_KOPT_RUN_OPTIONS_H

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
  int64_t runs = 100;
  int64_t warmup = 10;
  int64_t rotate = 1;
  int64_t audit = 1;
  int64_t timeoutMs = 10000;
  int64_t timeBudgetMs = 0;
  int64_t minRuns = 1;
  std::optional<uint64_t> seed;
  int device = 0;
  bool time = true;
  bool check = true;
  std::string outPath;
};

/// Parses the command line into `opts` (`help` when -h or --help is given);
/// on a usage error returns its message.
std::optional<std::string> parseArgs(int argc, char **argv, Options &opts,
                                     bool &help);

} // namespace kopt::run

#endif // KOPT_TOOLS_KOPT_RUN_OPTIONS_H
