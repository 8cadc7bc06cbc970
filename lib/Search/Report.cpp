//===- Report.cpp - Best-so-far curves of search strategies ---------------===//
//
// See include/kopt/Search/Report.h.
//
//===----------------------------------------------------------------------===//

#include "kopt/Search/Report.h"
#include "kopt/Search/Measurer.h"
#include "kopt/Search/Tuner.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <ostream>

namespace kopt::search {

using json = nlohmann::json;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

/// best[t - 1] / bestMs for t = 1..budget from a run's trials in order (the
/// last value carried when the run stopped early).
std::vector<double> ratiosOf(const std::vector<TrialRecord> &trials,
                             double bestMs, int64_t budget) {
  std::vector<double> out;
  double best = kInf;
  for (const TrialRecord &r : trials) {
    if (int64_t(out.size()) >= budget)
      break;
    if (r.usable())
      best = std::min(best, r.medianMs);
    out.push_back(best / bestMs);
  }
  while (int64_t(out.size()) < budget)
    out.push_back(out.empty() ? kInf : out.back());
  return out;
}

/// The q-quantile (0..1) of `v` (sorted copy; +inf sorts last).
double quantile(std::vector<double> v, double q) {
  if (v.empty())
    return kInf;
  std::sort(v.begin(), v.end());
  double pos = q * double(v.size() - 1);
  size_t lo = size_t(std::floor(pos)), hi = size_t(std::ceil(pos));
  if (std::isinf(v[hi]) || std::isinf(v[lo]))
    return v[hi];
  return v[lo] + (v[hi] - v[lo]) * (pos - double(lo));
}

std::vector<double> column(const Curve &c, size_t t) {
  std::vector<double> v;
  for (const std::vector<double> &run : c.ratios)
    if (t < run.size())
      v.push_back(run[t]);
  return v;
}

double mean(const std::vector<double> &v) {
  double s = 0;
  for (double x : v)
    s += x;
  return v.empty() ? kInf : s / double(v.size());
}

double fractionWithin(const std::vector<double> &v, double limit) {
  if (v.empty())
    return 0;
  return double(std::count_if(v.begin(), v.end(),
                              [&](double x) { return x <= limit; })) /
         double(v.size());
}

} // namespace

Expected<std::vector<Curve>> replayCurves(const std::vector<std::string> &tables,
                                          const ReportOptions &options) {
  for (const std::string &s : options.strategies)
    if (s == "external") {
      if (!options.external)
        return Status::error("the report's strategy 'external' needs the "
                             "agent's command");
    } else if (Expected<std::unique_ptr<Agent>> a = makeAgent(s, 0); !a.ok()) {
      return a.status();
    }
  std::vector<Curve> curves;
  for (const std::string &path : tables) {
    std::ifstream in(path);
    if (!in)
      return Status::error("cannot read the replay table '" + path + "'");
    Expected<std::vector<TrialRecord>> records = readRecordsJSONL(in, path);
    if (!records.ok())
      return records.status();
    Expected<std::unique_ptr<Measurer>> measurer = makeReplayMeasurer(path);
    if (!measurer.ok())
      return measurer.status();
    // The table's problems, in the order of their first record.
    std::vector<std::pair<std::string, std::string>> problems;
    for (const TrialRecord &r : *records)
      if (std::none_of(problems.begin(), problems.end(),
                       [&](const auto &p) { return p.first == r.workload; }))
        problems.push_back({r.workload, r.ops});
    for (const auto &[workload, ops] : problems) {
      Expected<Task> task = taskFromWorkloadKey(workload, ops);
      if (!task.ok())
        return task.status().withContext(path);
      std::optional<std::vector<std::string>> only = (*measurer)->points(*task);
      fillSpace(*task, only ? &*only : nullptr);
      // The table's best: every point replayed once.
      std::vector<Candidate> all(task->space.size());
      std::vector<Candidate *> batch;
      for (size_t i = 0; i < all.size(); ++i) {
        all[i].point = int64_t(i);
        all[i].schedule = task->space[i];
        all[i].text = scheduleText(all[i].schedule);
        batch.push_back(&all[i]);
      }
      if (Status s = (*measurer)->measure(*task, batch); !s.ok())
        return s;
      double bestMs = kInf;
      for (const Candidate &c : all)
        if (c.record.usable())
          bestMs = std::min(bestMs, c.record.medianMs);
      if (std::isinf(bestMs))
        continue;
      for (const std::string &strategy : options.strategies) {
        Curve curve;
        curve.source = path;
        curve.workload = workload;
        curve.ops = ops;
        curve.strategy = strategy;
        curve.bestMs = bestMs;
        curve.points = int64_t(task->space.size());
        for (int seed = 0; seed < options.seeds; ++seed) {
          std::vector<Task> tasks = {*task};
          TunerOptions t;
          t.strategy = strategy;
          t.budget = options.budget;
          t.batchSize = options.batchSize;
          t.seed = uint64_t(seed);
          std::unique_ptr<ExternalAgentHost> host;
          if (strategy == "external") {
            ExternalAgentOptions e = *options.external;
            e.budget = options.budget;
            e.batchSize = options.batchSize;
            e.seed = uint64_t(seed);
            e.measurer = "replay";
            host = std::make_unique<ExternalAgentHost>(tasks, e);
            t.agentFor = [&](size_t i, uint64_t) { return host->agentFor(i); };
          }
          std::vector<TrialRecord> trials;
          Tuner tuner(tasks, **measurer, nullptr, nullptr, t);
          Status s = tuner.run([&](const Task &, const Trial &trial, int64_t,
                                   const TrialRecord *) {
            trials.push_back(trial.record);
          });
          if (host)
            host->finish();
          if (!s.ok())
            return s;
          curve.ratios.push_back(ratiosOf(trials, bestMs, options.budget));
        }
        curves.push_back(std::move(curve));
      }
    }
  }
  return curves;
}

Expected<std::vector<Curve>> logCurves(const std::vector<std::string> &logs,
                                       int64_t budget) {
  // (workload, ops) -> strategy -> session -> trials in order.
  std::map<std::pair<std::string, std::string>,
           std::map<std::string, std::map<std::string, std::vector<TrialRecord>>>>
      runs;
  std::map<std::pair<std::string, std::string>, double> best;
  std::map<std::pair<std::string, std::string>, std::string> sourceOf;
  for (const std::string &path : logs) {
    std::ifstream in(path);
    if (!in)
      return Status::error("cannot read the trial log '" + path + "'");
    Expected<std::vector<TrialRecord>> records = readRecordsJSONL(in, path);
    if (!records.ok())
      return records.status();
    for (const TrialRecord &r : *records) {
      auto key = std::make_pair(r.workload, r.ops);
      runs[key][r.strategy][r.session].push_back(r);
      double &b = best.emplace(key, kInf).first->second;
      if (r.usable())
        b = std::min(b, r.medianMs);
      sourceOf.emplace(key, path);
    }
  }
  std::vector<Curve> curves;
  for (const auto &[key, strategies] : runs) {
    if (std::isinf(best[key]))
      continue;
    for (const auto &[strategy, sessions] : strategies) {
      Curve c;
      c.source = sourceOf[key];
      c.workload = key.first;
      c.ops = key.second;
      c.strategy = strategy;
      c.bestMs = best[key];
      for (const auto &[session, trials] : sessions)
        c.ratios.push_back(ratiosOf(trials, c.bestMs, budget));
      curves.push_back(std::move(c));
    }
  }
  return curves;
}

void writeCSV(const std::vector<Curve> &curves, std::ostream &out) {
  // RFC 4180: a field with a comma, quote or line break is quoted (workload
  // keys hold commas: "bf16,bf16->bf16/ak,bk").
  auto field = [](const std::string &s) {
    if (s.find_first_of(",\"\r\n") == std::string::npos)
      return s;
    std::string q = "\"";
    for (char c : s)
      q += c == '"' ? std::string("\"\"") : std::string(1, c);
    return q + "\"";
  };
  auto num = [](double v) {
    if (!std::isfinite(v))
      return std::string();
    char b[32];
    std::snprintf(b, sizeof(b), "%.6g", v);
    return std::string(b);
  };
  out << "source,workload,ops,strategy,trials,runs,best_ms,median_ratio,"
         "mean_ratio,p10_ratio,p90_ratio,within_3pct,within_5pct\n";
  for (const Curve &c : curves) {
    size_t budget = c.ratios.empty() ? 0 : c.ratios.front().size();
    for (size_t t = 0; t < budget; ++t) {
      std::vector<double> v = column(c, t);
      out << field(c.source) << ',' << field(c.workload) << ',' << field(c.ops)
          << ',' << field(c.strategy)
          << ',' << t + 1 << ',' << v.size() << ',' << num(c.bestMs) << ','
          << num(quantile(v, 0.5)) << ',' << num(mean(v)) << ','
          << num(quantile(v, 0.1)) << ',' << num(quantile(v, 0.9)) << ','
          << num(fractionWithin(v, 1.03)) << ','
          << num(fractionWithin(v, 1.05)) << '\n';
    }
  }
}

json summaryJSON(const std::vector<Curve> &curves) {
  std::map<std::string, std::vector<const Curve *>> byStrategy;
  for (const Curve &c : curves)
    byStrategy[c.strategy].push_back(&c);
  json out = json::object();
  for (const auto &[strategy, list] : byStrategy) {
    json s;
    s["problems"] = list.size();
    size_t budget = 0;
    for (const Curve *c : list)
      if (!c->ratios.empty())
        budget = std::max(budget, c->ratios.front().size());
    for (size_t at : {size_t(16), size_t(32), size_t(64)}) {
      if (at > budget)
        continue; // not reached: no figure rather than the budget's
      double logSum = 0;
      int64_t finite = 0, within = 0, within5 = 0;
      for (const Curve *c : list) {
        double m = mean(column(*c, at - 1));
        if (std::isfinite(m)) {
          logSum += std::log(m);
          ++finite;
        }
        within += m <= 1.03;
        within5 += m <= 1.05;
      }
      std::string k = std::to_string(at);
      s["geomean_ratio_at_" + k] =
          finite == int64_t(list.size()) && finite > 0
              ? json(std::exp(logSum / double(finite)))
              : json();
      s["problems_within_3pct_at_" + k] = within;
      s["problems_within_5pct_at_" + k] = within5;
    }
    json per = json::array();
    for (const Curve *c : list) {
      json p = {{"workload", c->workload}, {"ops", c->ops},
                {"best_ms", c->bestMs},     {"points", c->points},
                {"runs", c->ratios.size()}};
      size_t budget = c->ratios.empty() ? 0 : c->ratios.front().size();
      for (size_t at : {size_t(16), size_t(32), size_t(64)})
        if (at <= budget) {
          double m = mean(column(*c, at - 1));
          p["mean_ratio_at_" + std::to_string(at)] =
              std::isfinite(m) ? json(m) : json();
        }
      per.push_back(p);
    }
    s["per_problem"] = per;
    out[strategy] = s;
  }
  return out;
}

} // namespace kopt::search
