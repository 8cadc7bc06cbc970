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
       kopt-run --batch LIST --jsonl OUT.jsonl [options]

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
  --batch LIST    run the manifests LIST names (one path per line; blank
                  lines and '#' lines skipped) on one CUDA context, with the
                  same seed; needs --jsonl. A manifest whose run fails (a
                  CUDA error or a timeout) ends the batch
  --jsonl FILE    with --batch: append each manifest's report to FILE as one
                  line, written as soon as it is done
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

/// An option with a whole-number value: its name, its range, what its error
/// says it needs (null: "an integer in [min, max]") and where it goes.
struct NumberOption {
  const char *name;
  uint64_t min, max;
  const char *needs;
  void (*store)(Options &, uint64_t);
};

const NumberOption kNumberOptions[] = {
    {"--runs", 1, 1000000, nullptr,
     [](Options &o, uint64_t v) { o.timing.runs = int64_t(v); }},
    {"--warmup", 0, 1000000, nullptr,
     [](Options &o, uint64_t v) { o.timing.warmup = int64_t(v); }},
    {"--rotate", 1, 1024, nullptr,
     [](Options &o, uint64_t v) { o.timing.inputSets = int64_t(v); }},
    {"--audit", 0, 1000000, nullptr,
     [](Options &o, uint64_t v) { o.timing.auditRuns = int64_t(v); }},
    {"--timeout", 0, 86400000, "milliseconds in [0, 86400000]",
     [](Options &o, uint64_t v) { o.timing.timeoutMs = double(v); }},
    {"--time-budget", 0, 86400000, "milliseconds in [0, 86400000]",
     [](Options &o, uint64_t v) { o.timing.timeBudgetMs = double(v); }},
    {"--min-runs", 1, 1000000, nullptr,
     [](Options &o, uint64_t v) { o.timing.minRuns = int64_t(v); }},
    {"--seed", 0, UINT64_MAX, "a non-negative integer",
     [](Options &o, uint64_t v) { o.seed = v; }},
    {"--device", 0, 1024, "a device ordinal",
     [](Options &o, uint64_t v) { o.device = int(v); }},
};

const NumberOption *findNumberOption(const std::string &name) {
  for (const NumberOption &n : kNumberOptions)
    if (name == n.name)
      return &n;
  return nullptr;
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
    const NumberOption *number = findNumberOption(arg);
    bool takesValue = number || arg == "--kernel" || arg == "-o" ||
                      arg == "--batch" || arg == "--jsonl";
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
    } else if (number) {
      std::optional<uint64_t> v = parseUnsigned(value, number->max);
      if (!v || *v < number->min)
        return arg + " needs " +
               (number->needs
                    ? std::string(number->needs)
                    : "an integer in [" + std::to_string(number->min) + ", " +
                          std::to_string(number->max) + "]") +
               ", got '" + value + "'";
      number->store(opts, *v);
    } else if (arg == "--no-time") {
      opts.time = false;
    } else if (arg == "--no-check") {
      opts.check = false;
    } else if (arg == "-o") {
      opts.outPath = value;
    } else if (arg == "--batch") {
      opts.batchPath = value;
    } else if (arg == "--jsonl") {
      opts.jsonlPath = value;
    } else if (arg.size() > 1 && arg[0] == '-') {
      return "unknown option '" + arg + "'";
    } else if (opts.manifestPath.empty()) {
      opts.manifestPath = arg;
    } else {
      return "more than one manifest given ('" + opts.manifestPath + "' and '" +
             arg + "')";
    }
  }
  if (!opts.batchPath.empty()) {
    if (!opts.manifestPath.empty())
      return "--batch and a manifest ('" + opts.manifestPath +
             "') given: give one or the other";
    if (!opts.outPath.empty())
      return std::string("--batch writes its reports to --jsonl, not -o");
    if (opts.jsonlPath.empty())
      return std::string("--batch needs --jsonl FILE");
  } else if (!opts.jsonlPath.empty()) {
    return std::string("--jsonl needs --batch");
  }
  if (!help && opts.manifestPath.empty() && opts.batchPath.empty())
    return std::string("no manifest given");
  if (opts.timing.minRuns > opts.timing.runs)
    return "--min-runs " + std::to_string(opts.timing.minRuns) +
           " is more than --runs " + std::to_string(opts.timing.runs);
  return std::nullopt;
}

} // namespace kopt::run
