//===- Options.cpp - kopt-run's command line ------------------------------===//
//
// See Options.h.
//
//===----------------------------------------------------------------------===//

#include "Options.h"

#include <cerrno>
#include <cstdlib>

namespace kopt::run {

const char *const kUsage =
    R"(usage: kopt-run MANIFEST.json [options]

Checks and times the kernels of a kopt launch manifest on the GPU.

options:
  --kernel NAME   run only this kernel (repeatable; default: all kernels)
  --runs N        timed runs per kernel (default 100, at least 1)
  --warmup N      warm-up launches before timing (default 10)
  --rotate N      buffer sets the runs cycle through (default 1: one set)
  --audit N       timed runs checked against the reference again, the last
                  one among them (default 1; 0: none)
  --timeout MS    give up on a launch that runs longer (default 10000;
                  0: wait forever)
  --time-budget MS  stop timing after MS ms of runs (default 0: no budget)
  --min-runs N    with --time-budget, time at least N runs (default 1)
  --seed S        seed of the random inputs (default: from the clock; printed)
  --device N      CUDA device ordinal (default 0)
  --no-time       check only
  --no-check      time only
  -o FILE         write the JSON report to FILE (default: stdout)
  -h, --help      show this help

exit code: 0 all checks passed, 1 a check failed, 2 usage/manifest/CUDA error
or a timeout
)";

namespace {

/// Parses a non-negative integer at most `max`.
std::optional<uint64_t> parseUnsigned(const std::string &text, uint64_t max) {
  if (text.empty() || text.size() > 20 ||
      text.find_first_not_of("0123456789") != std::string::npos)
    return std::nullopt;
  errno = 0;
  unsigned long long v = std::strtoull(text.c_str(), nullptr, 10);
  if (errno == ERANGE || v > max)
    return std::nullopt;
  return v;
}

} // namespace

std::optional<std::string> parseArgs(int argc, char **argv, Options &opts,
                                     bool &help) {
  std::vector<std::string> args(argv + 1, argv + argc);
  for (size_t i = 0; i < args.size(); ++i) {
    std::string arg = args[i];
    std::optional<std::string> inlineValue;
    if (arg.rfind("--", 0) == 0) {
      if (size_t eq = arg.find('='); eq != std::string::npos) {
        inlineValue = arg.substr(eq + 1);
        arg = arg.substr(0, eq);
      }
    }
    bool takesValue = arg == "--kernel" || arg == "--runs" ||
                      arg == "--warmup" || arg == "--seed" ||
                      arg == "--device" || arg == "-o" || arg == "--rotate" ||
                      arg == "--audit" || arg == "--timeout" ||
                      arg == "--time-budget" || arg == "--min-runs";
    std::string value;
    if (takesValue) {
      if (inlineValue) {
        value = *inlineValue;
      } else if (i + 1 < args.size()) {
        value = args[++i];
      } else {
        return "option " + arg + " needs a value";
      }
    } else if (inlineValue) {
      return "option " + arg + " takes no value";
    }

    if (arg == "-h" || arg == "--help") {
      help = true;
    } else if (arg == "--kernel") {
      opts.kernels.push_back(value);
    } else if (arg == "--runs") {
      std::optional<uint64_t> v = parseUnsigned(value, 1000000);
      if (!v || *v < 1)
        return "--runs needs an integer in [1, 1000000], got '" + value + "'";
      opts.timing.runs = static_cast<int64_t>(*v);
    } else if (arg == "--warmup") {
      std::optional<uint64_t> v = parseUnsigned(value, 1000000);
      if (!v)
        return "--warmup needs an integer in [0, 1000000], got '" + value + "'";
      opts.timing.warmup = static_cast<int64_t>(*v);
    } else if (arg == "--rotate") {
      std::optional<uint64_t> v = parseUnsigned(value, 1024);
      if (!v || *v < 1)
        return "--rotate needs an integer in [1, 1024], got '" + value + "'";
      opts.timing.inputSets = static_cast<int64_t>(*v);
    } else if (arg == "--audit") {
      std::optional<uint64_t> v = parseUnsigned(value, 1000000);
      if (!v)
        return "--audit needs an integer in [0, 1000000], got '" + value + "'";
      opts.timing.auditRuns = static_cast<int64_t>(*v);
    } else if (arg == "--timeout" || arg == "--time-budget") {
      std::optional<uint64_t> v = parseUnsigned(value, 86400000);
      if (!v)
        return arg + " needs milliseconds in [0, 86400000], got '" + value +
               "'";
      (arg == "--timeout" ? opts.timing.timeoutMs : opts.timing.timeBudgetMs) =
          static_cast<double>(*v);
    } else if (arg == "--min-runs") {
      std::optional<uint64_t> v = parseUnsigned(value, 1000000);
      if (!v || *v < 1)
        return "--min-runs needs an integer in [1, 1000000], got '" + value +
               "'";
      opts.timing.minRuns = static_cast<int64_t>(*v);
    } else if (arg == "--seed") {
      std::optional<uint64_t> v = parseUnsigned(value, UINT64_MAX);
      if (!v)
        return "--seed needs a non-negative integer, got '" + value + "'";
      opts.seed = *v;
    } else if (arg == "--device") {
      std::optional<uint64_t> v = parseUnsigned(value, 1024);
      if (!v)
        return "--device needs a device ordinal, got '" + value + "'";
      opts.device = static_cast<int>(*v);
    } else if (arg == "--no-time") {
      opts.time = false;
    } else if (arg == "--no-check") {
      opts.check = false;
    } else if (arg == "-o") {
      opts.outPath = value;
    } else if (arg.size() > 1 && arg[0] == '-') {
      return "unknown option '" + arg + "'";
    } else if (opts.manifestPath.empty()) {
      opts.manifestPath = arg;
    } else {
      return "more than one manifest given ('" + opts.manifestPath + "' and '" +
             arg + "')";
    }
  }
  if (!help && opts.manifestPath.empty())
    return std::string("no manifest given");
  if (opts.timing.minRuns > opts.timing.runs)
    return "--min-runs " + std::to_string(opts.timing.minRuns) +
           " is more than --runs " + std::to_string(opts.timing.runs);
  return std::nullopt;
}

} // namespace kopt::run
