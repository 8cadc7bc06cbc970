//===- Internal.h - lib/Schedule's shared pieces ----------------*- C++ -*-===//
//
// The domains, instruction shapes and register model shared by the space
// (Schedule.cpp) and its constraints (Constraints.cpp). Private to
// lib/Schedule.
//
//===----------------------------------------------------------------------===//
#ifndef KOPT_LIB_SCHEDULE_INTERNAL_H
#define KOPT_LIB_SCHEDULE_INTERNAL_H

#include "kopt/Schedule/Schedule.h"

#include <algorithm>
#include <limits>
#include <sstream>

namespace kopt::schedule::detail {

// The domains of the implemented values.
inline const std::vector<Instruction> kInstructions = {
    Instruction::FFMA, Instruction::MmaSync, Instruction::Wgmma,
    Instruction::Gemv};
inline const std::vector<CopyEngine> kCopies = {
    CopyEngine::Sync, CopyEngine::CpAsync, CopyEngine::TMA};
inline const std::vector<int64_t> kBlockM = {16, 32, 64, 128, 256};
inline const std::vector<int64_t> kBlockN = {8, 16, 32, 64, 128, 256};
inline const std::vector<int64_t> kBlockK = {8, 16, 32, 64, 128};
inline const std::vector<int64_t> kWarpM = {16, 32, 64, 128};
inline const std::vector<int64_t> kWarpN = {1, 2, 4, 8, 16, 32, 64, 128, 256};
inline const std::vector<int64_t> kStages = {1, 2, 3, 4, 5, 6, 7, 8};
inline const std::vector<int64_t> kSplitK = {1, 2, 4, 8, 16};
inline const std::vector<int64_t> kSwizzle = {1, 2, 4, 8, 16};
inline const std::vector<int64_t> kVectorWidth = {1, 2, 4, 8};

/// mma.sync m16n8k16 shapes and the ldmatrix row padding of shared memory.
inline constexpr int64_t kMmaM = 16, kMmaN = 8, kMmaK = 16, kSmemPad = 8;
/// Accumulator registers per thread the schedules may use (of 255, leaving
/// room for fragments, addresses and loop state).
inline constexpr int64_t kMaxAccumulators = 128;
/// SIMT (ffma): 16 threads along N per row of threads.
inline constexpr int64_t kSimtThreadsN = 16;
inline constexpr int64_t kMaxGridBlocks = std::numeric_limits<int32_t>::max();

/// Registers per thread besides the accumulators and operand fragments
/// (addresses, loop state, predicates), from ptxas -v on the H200 sweep's
/// kernels: wgmma 128 accumulators -> 170 registers, mma_sync 64 accumulators
/// and 24 fragment registers -> 126.
inline constexpr int64_t kRegisterOverhead = 42;
/// The register file of an SM (and the most a block may use), 32-bit
/// registers.
inline constexpr int64_t kRegistersPerBlock = 65536;

/// Why a block of `threads` threads needing about `perThread` registers each
/// cannot run, or nullopt. ptxas refuses wgmma whose accumulators do not fit
/// the per-thread share (C7602); for the other instructions the excess would
/// spill to local memory.
inline std::optional<std::string>
registerBudget(int64_t perThread, int64_t threads, int64_t maxPerThread) {
  int64_t share = std::min(maxPerThread, kRegistersPerBlock / threads);
  if (perThread <= share)
    return std::nullopt;
  std::ostringstream os;
  os << "needs about " << perThread << " registers per thread; " << threads
     << " threads get at most " << share << " (65536 per block, "
     << maxPerThread << " per thread)";
  return os.str();
}

inline bool contains(const std::vector<int64_t> &d, int64_t v) {
  return std::find(d.begin(), d.end(), v) != d.end();
}

inline std::string list(const std::vector<int64_t> &d) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < d.size(); ++i)
    os << (i ? ", " : "") << d[i];
  os << "]";
  return os.str();
}

template <typename... Ts> std::string cat(const Ts &...parts) {
  std::ostringstream os;
  (os << ... << parts);
  return os.str();
}

inline int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

} // namespace kopt::schedule::detail

#endif // KOPT_LIB_SCHEDULE_INTERNAL_H
