//===- ReplayMeasurer.cpp - Trials replayed from a recorded table ---------===//
//
// See include/kopt/Search/Measurer.h. A table is trial records as JSON lines
// (Database::exportJSONL); a record is found by workload key and schedule
// text (a table holds one op chain per workload). When a table holds a point
// twice, the first record counts.
//
//===----------------------------------------------------------------------===//

#include "kopt/Search/Measurer.h"

#include <fstream>
#include <unordered_map>

namespace kopt::search {

namespace {

std::string keyOf(const std::string &workload, const std::string &schedule) {
  return workload + '\n' + schedule;
}

class ReplayMeasurer : public Measurer {
public:
  std::string name() const override { return "replay"; }
  bool needsBuild() const override { return false; }
  std::optional<std::vector<std::string>>
  points(const Task &task) const override {
    std::vector<std::string> out;
    auto it = schedules.find(task.workloadKey);
    if (it != schedules.end())
      out = it->second;
    return out;
  }
  Status measure(const Task &task, std::vector<Candidate *> &batch) override {
    for (Candidate *c : batch) {
      if (!c->record.status.empty())
        continue;
      auto it = table.find(keyOf(task.workloadKey, c->text));
      if (it == table.end()) {
        c->record.status = "run_error";
        c->record.error = "not in the replay table '" + path + "'";
        continue;
      }
      const TrialRecord &r = it->second;
      TrialRecord &out = c->record;
      out.status = r.status;
      out.error = r.error;
      out.correct = r.correct;
      out.registers = r.registers;
      out.spillBytes = r.spillBytes;
      out.sharedBytes = r.sharedBytes;
      out.medianMs = r.medianMs;
      out.minMs = r.minMs;
      out.maxMs = r.maxMs;
      out.meanMs = r.meanMs;
      out.stddevMs = r.stddevMs;
      out.p10Ms = r.p10Ms;
      out.p90Ms = r.p90Ms;
      out.runs = r.runs;
      out.device = r.device;
      out.smClockMHz = r.smClockMHz;
      out.memClockMHz = r.memClockMHz;
    }
    return Status::success();
  }

  std::string path;
  std::unordered_map<std::string, TrialRecord> table;
  /// The schedules of each workload, in table order.
  std::unordered_map<std::string, std::vector<std::string>> schedules;
};

} // namespace

Expected<std::unique_ptr<Measurer>> makeReplayMeasurer(const std::string &path) {
  std::ifstream in(path);
  if (!in)
    return Status::error("cannot read the replay table '" + path + "'");
  Expected<std::vector<TrialRecord>> records = readRecordsJSONL(in, path);
  if (!records.ok())
    return records.status();
  auto m = std::make_unique<ReplayMeasurer>();
  m->path = path;
  for (TrialRecord &r : *records)
    if (m->table.emplace(keyOf(r.workload, r.schedule), r).second)
      m->schedules[r.workload].push_back(r.schedule);
  if (m->table.empty())
    return Status::error("the replay table '" + path + "' holds no trial");
  return std::unique_ptr<Measurer>(std::move(m));
}

} // namespace kopt::search
