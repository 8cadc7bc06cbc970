//===- Report.h - Best-so-far curves of search strategies -------*- C++ -*-===//
//
// `kopt-tune --report`: how fast each strategy gets near the best schedule,
// for researchers comparing strategies without a GPU. Two sources:
//   replay tables  every strategy runs against each recorded problem of the
//                  tables (the replay measurer), once per seed; "best" is
//                  the table's best point, so a ratio of 1 is the best the
//                  table holds;
//   trial logs     kopt-tune --log files as they were recorded: each session
//                  a run (its strategy, its seed), "best" the best of every
//                  log of that workload.
// A curve holds, per run and per trial count t (1..budget), the best time
// after t trials divided by the best; +inf before the first usable trial.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_SEARCH_REPORT_H
#define KOPT_SEARCH_REPORT_H

#include "kopt/Search/ExternalAgent.h"
#include "kopt/Search/Task.h"

#include <nlohmann/json.hpp>

#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

namespace kopt::search {

struct ReportOptions {
  /// Built-in strategy names, and "external" (run with `external`).
  std::vector<std::string> strategies = {"random", "grid", "evolutionary"};
  /// Runs per strategy and problem (seeds 0..seeds-1).
  int seeds = 10;
  /// Trials per run.
  int64_t budget = 64;
  int64_t batchSize = 8;
  /// For "external": the agent (its seed is the run's, in hello).
  std::optional<ExternalAgentOptions> external;
};

struct Curve {
  /// The table or log the problem came from, its workload key and op chain.
  std::string source, workload, ops, strategy;
  /// The best usable median of the table (or of every log), ms.
  double bestMs = 0;
  /// Points of the problem's space (the table's).
  int64_t points = 0;
  /// ratios[run][t - 1]: best after t trials / bestMs (+inf: none yet).
  std::vector<std::vector<double>> ratios;
};

/// Runs every strategy on every problem of the replay tables. An unreadable
/// table, a workload key that does not parse, or an unknown strategy is an
/// error; a problem without a usable record is skipped.
Expected<std::vector<Curve>> replayCurves(const std::vector<std::string> &tables,
                                          const ReportOptions &options);

/// The curves of recorded trial logs (kopt-tune --log), grouped by workload,
/// op chain and strategy; each session is a run, trials in log order.
Expected<std::vector<Curve>> logCurves(const std::vector<std::string> &logs,
                                       int64_t budget);

/// CSV (RFC 4180: fields with commas quoted), one row per curve and trial
/// count: source, workload, ops, strategy,
/// trials, runs, best_ms, median_ratio, mean_ratio (empty when a run has
/// none yet), p10_ratio, p90_ratio, within_3pct (fraction of runs within
/// 3% of the best), within_5pct.
void writeCSV(const std::vector<Curve> &curves, std::ostream &out);

/// The summary: per strategy, the geometric mean over problems of the mean
/// ratio at 16, 32 and 64 trials (those within the budget), and the problems
/// whose mean ratio there is within 3% (and 5%): the cold-start targets of
/// docs/tuning.md.
nlohmann::json summaryJSON(const std::vector<Curve> &curves);

} // namespace kopt::search

#endif // KOPT_SEARCH_REPORT_H
