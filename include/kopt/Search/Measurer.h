//===- Measurer.h - How the tuner gets a trial's time -----------*- C++ -*-===//
//
// A Measurer turns schedules of a task into trial records. Three kinds:
//   gpu     compiles each candidate (the tuner's Builder) and times it on the
//           GPU with kopt's measurement library through kopt-run (L2
//           flushed, rotated buffer sets, median, audits against the
//           independent reference, NaN/Inf rejected, a watchdog):
//           tools/kopt-tune/GpuMeasurer.cpp.
//   model   an analytical estimate (ModelMeasurer.cpp): waves of block tiles
//           times the slower of a tile's tensor-core (or FMA) time and its
//           operand traffic, at the target's datasheet rates. Always
//           labelled an estimate: its records carry measurer "model" and
//           never become a compile's choice.
//   replay  a recorded table (ReplayMeasurer.cpp): trial records as JSON
//           lines (Database::exportJSONL's format), looked up by workload,
//           op chain and schedule text, so strategies are compared without
//           a GPU. A schedule the table lacks is not in the task's space.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_SEARCH_MEASURER_H
#define KOPT_SEARCH_MEASURER_H

#include "kopt/Search/Database.h"
#include "kopt/Search/Task.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace kopt::search {

/// One schedule of a batch on its way through the builder and the measurer.
struct Candidate {
  int64_t point = -1;
  schedule::MatmulSchedule schedule;
  std::string text;
  /// The builder's output (gpu measurer only): the candidate's manifest.
  std::string manifestPath;
  /// Filled by the builder (status "compile_error" or "rejected" when it
  /// failed) and the measurer.
  TrialRecord record;
};

class Measurer {
public:
  virtual ~Measurer() = default;
  /// "gpu", "model" or "replay".
  virtual std::string name() const = 0;
  /// Whether candidates must be compiled first (the tuner's Builder).
  virtual bool needsBuild() const = 0;
  /// The schedules (texts) the measurer can time for `task`, when it cannot
  /// time every point (replay: the table's); they restrict the task's space.
  virtual std::optional<std::vector<std::string>> points(const Task &) const {
    return std::nullopt;
  }
  /// Measures the candidates whose record.status is empty (the builder left
  /// them to it), one at a time, filling their records. A failure of the
  /// measurer itself (not of a candidate) is an error.
  virtual Status measure(const Task &task, std::vector<Candidate *> &batch) = 0;
};

/// The analytical estimate (see above).
std::unique_ptr<Measurer> makeModelMeasurer();

/// A replay measurer over the JSON lines of `path`; a malformed line is an
/// error naming the file and the line.
Expected<std::unique_ptr<Measurer>> makeReplayMeasurer(const std::string &path);

/// The model's estimate of `s` for `task`, ms (ModelMeasurer.cpp).
double estimateMs(const Task &task, const schedule::MatmulSchedule &s);

/// The roofline of a task at the NVIDIA H200 SXM datasheet's dense rates:
/// the peak of its operand type, FLOP/s (989e12 bf16/f16 tensor cores,
/// 494.5e12 TF32 when the workload allows it, 67e12 f32 FMA), the HBM3e
/// bandwidth, bytes/s (4.8e12), and the floor no schedule can beat, ms:
/// max(task.flops / peak, task.bytes / bandwidth).
double rooflinePeakFlops(const Task &task);
double rooflineBandwidth();
double rooflineFloorMs(const Task &task);

} // namespace kopt::search

#endif // KOPT_SEARCH_MEASURER_H
