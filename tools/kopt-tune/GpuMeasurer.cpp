//===- GpuMeasurer.cpp - Trials timed on the GPU through kopt-run ---------===//
//
// See Tune.h. kopt-run runs in its own process, so that a kernel that
// faults or hangs costs one trial, never the tuner: kopt-run --batch times
// the batch's manifests on one context (kopt's measurement library:
// warm-up, L2 flush before every run, --rotate buffer sets, median, --audit
// timed runs checked against the independent reference, NaN/Inf rejected,
// the --timeout watchdog), appending a JSON line per manifest. When it stops
// early, the first manifest without a line is the one that stopped it; the
// rest run again in a new process.
//
//===----------------------------------------------------------------------===//

#include "Tune.h"

#include <filesystem>
#include <fstream>
#include <map>

namespace kopt::tune {

namespace fs = std::filesystem;
using nlohmann::json;
using search::Candidate;
using search::Task;
using search::TrialRecord;

namespace {

/// j[key] when j is an object whose `key` is a string, else "".
std::string text(const json &j, const char *key) {
  if (!j.is_object())
    return "";
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

double number(const json &j, const char *key) {
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>()
                                          : TrialRecord::NaN;
}

/// Fills `r` from kopt-run's report of one manifest.
void fillRecord(const json &report, TrialRecord &r) {
  if (report.contains("device") && report["device"].is_object())
    r.device = text(report["device"], "name");
  const json *kernel = nullptr;
  if (report.contains("kernels") && report["kernels"].is_array() &&
      !report["kernels"].empty())
    kernel = &report["kernels"][0];
  if (kernel && (*kernel).contains("resources") &&
      (*kernel)["resources"].is_object())
    if (auto it = (*kernel)["resources"].find("registers");
        it != (*kernel)["resources"].end() && it->is_number_integer())
      r.registers = it->get<int64_t>();
  if (kernel && (*kernel).contains("time") && (*kernel)["time"].is_object()) {
    const json &t = (*kernel)["time"];
    r.medianMs = number(t, "median_ms");
    r.minMs = number(t, "min_ms");
    r.maxMs = number(t, "max_ms");
    r.meanMs = number(t, "mean_ms");
    r.stddevMs = number(t, "stddev_ms");
    r.p10Ms = number(t, "p10_ms");
    r.p90Ms = number(t, "p90_ms");
    if (auto it = t.find("runs"); it != t.end() && it->is_number_integer())
      r.runs = it->get<int64_t>();
  }
  std::string error = text(report, "error");
  if (!error.empty()) {
    r.status = error.find("did not finish within") != std::string::npos
                   ? "timeout"
                   : "run_error";
    r.error = schedule::abbreviate(error, 300);
    return;
  }
  const json *check = kernel && kernel->contains("check") &&
                             (*kernel)["check"].is_object()
                         ? &(*kernel)["check"]
                         : nullptr;
  bool passed = check && check->contains("passed") &&
                (*check)["passed"].is_boolean() && (*check)["passed"].get<bool>();
  if (!passed) {
    r.status = "wrong";
    std::string reason =
        check ? text(*check, "reason") : "no check in kopt-run's report";
    r.error = schedule::abbreviate(reason, 300);
    return;
  }
  r.status = "ok";
  r.correct = true;
}

class GpuMeasurer : public search::Measurer {
public:
  explicit GpuMeasurer(GpuOptions o) : opts(std::move(o)) {}
  std::string name() const override { return "gpu"; }
  bool needsBuild() const override { return true; }

  Status measure(const Task &task, std::vector<Candidate *> &batch) override {
    std::vector<Candidate *> pending;
    for (Candidate *c : batch)
      if (c->record.status.empty()) {
        if (c->manifestPath.empty()) {
          c->record.status = "compile_error";
          c->record.error = "the builder wrote no manifest";
        } else {
          pending.push_back(c);
        }
      }
    while (!pending.empty()) {
      uint64_t n = calls++;
      std::string stem =
          (fs::path(opts.workDir) / ("run-" + std::to_string(n))).string();
      std::string list = stem + ".list", out = stem + ".jsonl",
                  log = stem + ".log";
      {
        std::ofstream l(list);
        for (Candidate *c : pending)
          l << c->manifestPath << "\n";
      }
      std::error_code ec;
      fs::remove(out, ec);
      std::vector<std::string> argv = {
          opts.koptRun,
          "--batch", list,
          "--jsonl", out,
          "--kernel", task.kernel,
          "--seed", std::to_string(opts.seed),
          "--runs", std::to_string(opts.runs),
          "--min-runs", std::to_string(std::min<int64_t>(10, opts.runs)),
          "--warmup", std::to_string(opts.warmup),
          "--rotate", std::to_string(opts.rotate),
          "--audit", std::to_string(opts.audits),
          "--timeout", std::to_string(opts.runTimeoutMs),
          "--time-budget", std::to_string(opts.timeBudgetMs)};
      // Generous: every candidate's first launch, warm-up and runs at the
      // watchdog's limit would be far more; this only catches a kopt-run
      // that hangs outside a launch.
      int timeoutS = int(60 + pending.size() * (30 + opts.runTimeoutMs / 1000));
      std::string error;
      int rc = runProgram(argv, log, timeoutS, error);
      if (rc == -1)
        return Status::error(error);
      std::map<std::string, json> reports;
      {
        std::ifstream in(out);
        std::string line;
        while (std::getline(in, line)) {
          json j = json::parse(line, nullptr, false);
          if (j.is_object() && j.contains("manifest") &&
              j["manifest"].is_string()) {
            std::string key = j["manifest"].get<std::string>();
            reports[key] = std::move(j);
          }
        }
      }
      std::vector<Candidate *> rest;
      bool stopped = false;
      for (Candidate *c : pending) {
        if (stopped) {
          rest.push_back(c);
          continue;
        }
        auto it = reports.find(c->manifestPath);
        if (it == reports.end()) {
          // The one that stopped kopt-run without a report (a crash).
          if (c == pending.front() && n == 0 && reports.empty() &&
              rc != 0 && rc != 1)
            if (Status s = firstRunError(log); !s.ok())
              return s;
          c->record.status = rc == -2 ? "timeout" : "run_error";
          c->record.error =
              rc == -2 ? "kopt-run did not finish within " +
                             std::to_string(timeoutS) + " s"
                       : "kopt-run ended (exit " + std::to_string(rc) +
                             ") without a report of it: " + tail(log);
          stopped = true;
          continue;
        }
        const json &report = it->second;
        std::string reportError = text(report, "error");
        bool noDevice = !report.contains("device") || report["device"].is_null();
        if (noDevice && !reportError.empty() &&
            reportError.find("manifest") == std::string::npos)
          // No device at all: the measurer cannot work.
          return Status::error("kopt-run cannot use the GPU: " + reportError);
        fillRecord(report, c->record);
        if (!reportError.empty())
          stopped = true; // kopt-run stops after a failed run
      }
      pending = std::move(rest);
    }
    return Status::success();
  }

private:
  /// The end of kopt-run's log, one line.
  static std::string tail(const std::string &log) {
    std::ifstream in(log);
    std::string line, last;
    while (std::getline(in, line))
      if (line.find_first_not_of(" \t") != std::string::npos)
        last = line;
    return schedule::abbreviate(last, 300);
  }
  /// A kopt-run that died before its first report may not work at all.
  Status firstRunError(const std::string &log) {
    std::string t = tail(log);
    if (t.find("no CUDA driver") != std::string::npos ||
        t.find("no CUDA device") != std::string::npos)
      return Status::error("kopt-run cannot use the GPU: " + t);
    return Status::success();
  }

  GpuOptions opts;
  uint64_t calls = 0;
};

} // namespace

std::unique_ptr<search::Measurer> makeGpuMeasurer(const GpuOptions &options) {
  return std::make_unique<GpuMeasurer>(options);
}

} // namespace kopt::tune
