//===- Task.h - A kernel to tune: workload, target, space -------*- C++ -*-===//
//
// A task of the search is one matmul kernel of a compiled module (kopt-tune
// compiles the module once with the default heuristic and reads the launch
// manifest): its workload (shape, dtypes, layouts), the target's limits, the
// heuristic's schedule and the space of valid schedules the strategies walk
// (lib/Schedule: domains and constraints as data). No MLIR, no CUDA.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_SEARCH_TASK_H
#define KOPT_SEARCH_TASK_H

#include "kopt/Manifest/Error.h"
#include "kopt/Manifest/Manifest.h"
#include "kopt/Schedule/Schedule.h"

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace kopt::search {

using manifest::Expected;
using manifest::Status;

/// One kernel to tune.
struct Task {
  /// The kernel's name in the manifest (kopt-fuse's name, e.g.
  /// "matmul_add_0") and its op chain ("matmul", "matmul+add+gelu").
  std::string kernel;
  std::string ops;
  schedule::MatmulWorkload workload;
  schedule::Target target;
  /// workload.key(target.chip): the tuning database's workload key.
  std::string workloadKey;
  schedule::MatmulSchedule heuristic;
  /// 2 M N K (the matmul's multiply-adds; an epilogue's are not counted).
  int64_t flops = 0;
  /// Bytes of the kernel's input and output parameters: the least it moves.
  int64_t bytes = 0;
  /// Launches of the kernel per run of the module's functions: weights its
  /// time in the module's total (the task scheduler's objective).
  int64_t launches = 1;
  /// The valid schedules the strategies may propose (schedule::validPoints,
  /// or the points a replay table holds), sorted by their parameters
  /// (paramsOf). A large GEMM's space has about 700 000 points.
  std::vector<schedule::MatmulSchedule> space;

  /// The index of `s` in space, or -1.
  int64_t indexOf(const schedule::MatmulSchedule &s) const;
  /// The index of the schedule whose text (scheduleText) is `text`, or -1
  /// (also for text that is no schedule).
  int64_t indexOf(const std::string &text) const;
};

/// A schedule's parameters as a vector (instruction, copy, block_m, block_n,
/// block_k, warp_m, warp_n, stages, split_k, swizzle, vector_width,
/// persistent, warp_specialize, tma_store): the space's order and the
/// evolutionary strategy's genome.
using Params = std::array<int64_t, 14>;
Params paramsOf(const schedule::MatmulSchedule &s);

/// A schedule's canonical text: its JSON (schedule::toJSON) dumped compact
/// with sorted keys. The database and the replay tables key schedules by it.
std::string scheduleText(const schedule::MatmulSchedule &s);

/// The schedule of a schedule's JSON text (scheduleText's, a tuning database
/// record's, a manifest's `schedule`): schedule::parseJSON, then
/// schedule::fromJSON on `base` (keys the text lacks keep base's values).
/// nullopt with the reason in `error` when the text is no schedule. It is not
/// validated against a workload.
std::optional<schedule::MatmulSchedule>
scheduleFromText(const std::string &text, const schedule::MatmulSchedule &base,
                 std::string &error);

/// The matmul kernels of `m` that have a schedule, as tasks whose `space` is
/// still empty (fillSpace fills it). Launch counts come from the manifest's
/// functions (1 for a kernel no function launches). An unknown chip is an
/// error.
Expected<std::vector<Task>> tasksFromManifest(const manifest::Manifest &m);

/// The task of a workload key (MatmulWorkload::key's text, as the tuning
/// database and replay tables hold it: "matmul/MxNxK/A,B->C[+tf32]/a{k|m},
/// b{k|n}/CHIP") and op chain, without a module: the heuristic is
/// defaultSchedule, bytes those of A, B and C, launches 1, kernel "matmul",
/// space empty. A key that does not parse, or an unknown chip or dtype, is
/// an error naming the key.
Expected<Task> taskFromWorkloadKey(const std::string &key,
                                   const std::string &ops);

/// Fills task.space with the valid points of the workload's space, or, with
/// `only`, with those of the schedules (texts) it lists that are valid.
void fillSpace(Task &task, const std::vector<std::string> *only = nullptr);

} // namespace kopt::search

#endif // KOPT_SEARCH_TASK_H
