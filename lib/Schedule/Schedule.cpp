//===- Schedule.cpp - matmul schedules, their space and the heuristic -----===//
//
// The matmul space's domains, JSON forms, sampling and the default heuristic;
// its constraints are data in Constraints.cpp. The kernel builders apply a
// schedule that kopt-select-schedule checked.
//
//===----------------------------------------------------------------------===//

#include "kopt/Schedule/Schedule.h"
#include "Internal.h"

#include <algorithm>
#include <atomic>
#include <limits>
#include <set>
#include <sstream>
#include <system_error>
#include <thread>

using nlohmann::json;

namespace kopt::schedule {

using namespace detail;

const char *toString(Instruction i) {
  switch (i) {
  case Instruction::FFMA:
    return "ffma";
  case Instruction::MmaSync:
    return "mma_sync";
  case Instruction::Wgmma:
    return "wgmma";
  case Instruction::Gemv:
    return "gemv";
  }
  return "?";
}

const char *toString(CopyEngine c) {
  switch (c) {
  case CopyEngine::Sync:
    return "sync";
  case CopyEngine::CpAsync:
    return "cp_async";
  case CopyEngine::TMA:
    return "tma";
  }
  return "?";
}

std::optional<Instruction> parseInstruction(const std::string &s) {
  for (Instruction i : kInstructions)
    if (s == toString(i))
      return i;
  return std::nullopt;
}

std::optional<CopyEngine> parseCopyEngine(const std::string &s) {
  for (CopyEngine c : {CopyEngine::Sync, CopyEngine::CpAsync, CopyEngine::TMA})
    if (s == toString(c))
      return c;
  return std::nullopt;
}

int64_t MatmulSchedule::mathWarps() const {
  if (warpM <= 0 || warpN <= 0)
    return 0;
  // wgmma: the warp tile is a warpgroup's (4 warps).
  int64_t perTile = instruction == Instruction::Wgmma ? 4 : 1;
  return perTile * (blockM / warpM) * (blockN / warpN);
}

int64_t MatmulSchedule::numWarps() const {
  int64_t math = mathWarps();
  return math && warpSpecialize ? math + 1 : math;
}

bool MatmulSchedule::operator==(const MatmulSchedule &o) const {
  return instruction == o.instruction && copy == o.copy && blockM == o.blockM &&
         blockN == o.blockN && blockK == o.blockK && warpM == o.warpM &&
         warpN == o.warpN && stages == o.stages && splitK == o.splitK &&
         swizzle == o.swizzle && vectorWidth == o.vectorWidth &&
         persistent == o.persistent && warpSpecialize == o.warpSpecialize &&
         tmaStore == o.tmaStore;
}

std::string MatmulWorkload::key(const std::string &chip) const {
  return cat("matmul/", m, "x", n, "x", k, "/", toString(a), ",", toString(b),
             "->", toString(c), tf32 ? "+tf32" : "", "/a",
             aKContiguous ? "k" : "m", ",b", bKContiguous ? "k" : "n", "/",
             chip);
}

namespace {
/// The chips kopt generates code for (mma.sync with bf16, ldmatrix and
/// cp.async need sm_80 or newer) and their shared memory per block after
/// opting in, KB.
struct ChipLimits {
  const char *chip;
  int64_t sharedKB;
  /// SMs of the family's largest part: A100 108, A40 / RTX 3090 84 (GA102
  /// parts), Jetson AGX Orin 16, L40 / RTX 4090 142 / 128 (128 taken), H100
  /// SXM / H200 132.
  int64_t multiprocessors;
};
constexpr ChipLimits kChips[] = {{"sm_80", 163, 108}, {"sm_86", 99, 84},
                                 {"sm_87", 163, 16},  {"sm_89", 99, 128},
                                 {"sm_90", 227, 132}, {"sm_90a", 227, 132}};
} // namespace

const std::vector<std::string> &Target::knownChips() {
  static const std::vector<std::string> chips = [] {
    std::vector<std::string> v;
    for (const ChipLimits &c : kChips)
      v.push_back(c.chip);
    return v;
  }();
  return chips;
}

std::optional<Target> Target::forChip(const std::string &chip) {
  for (const ChipLimits &c : kChips)
    if (chip == c.chip) {
      Target t;
      t.chip = chip;
      t.hasWgmma = chip == "sm_90a";
      t.hasClusters = chip == "sm_90" || chip == "sm_90a";
      t.maxSharedPerBlock = c.sharedKB * 1024;
      t.multiprocessors = c.multiprocessors;
      return t;
    }
  return std::nullopt;
}

int64_t pipelineSharedBytes(const MatmulSchedule &s, const MatmulWorkload &w) {
  if (s.instruction == Instruction::Gemv) // operands read from global memory
    return 0;
  if (s.instruction == Instruction::FFMA)
    return s.stages * s.blockK *
           (s.blockM * bytesOf(w.a) + s.blockN * bytesOf(w.b));
  if (s.instruction == Instruction::Wgmma) // swizzled, unpadded rows
    return s.stages * (s.blockM * bytesOf(w.a) + s.blockN * bytesOf(w.b)) *
           s.blockK;
  return s.stages * (s.blockM * bytesOf(w.a) + s.blockN * bytesOf(w.b)) *
         (s.blockK + kSmemPad);
}

bool stagedEpilogue(const MatmulSchedule &s) {
  return s.instruction != Instruction::FFMA && s.vectorWidth > 2;
}

int64_t epilogueRowPitch(const MatmulSchedule &s, const MatmulWorkload &w) {
  // 16 bytes of padding for 16-bit outputs (a warp's 4-byte pair stores of 8
  // rows fall in distinct banks), 32 for f32 (the 8-byte stores of each half
  // warp, 4 rows, do).
  return (s.blockN + 8) * bytesOf(w.c);
}

int64_t epilogueSharedBytes(const MatmulSchedule &s, const MatmulWorkload &w) {
  return stagedEpilogue(s) ? s.blockM * epilogueRowPitch(s, w) : 0;
}

int64_t barrierSharedBytes(const MatmulSchedule &s) {
  return s.copy == CopyEngine::TMA ? 2 * s.stages * 8 : 0;
}

int64_t sharedBytes(const MatmulSchedule &s, const MatmulWorkload &w) {
  int64_t pipeline = pipelineSharedBytes(s, w);
  int64_t staging = epilogueSharedBytes(s, w);
  // A persistent grid's next tile loads while this one's epilogue runs: the
  // staging tile follows the ring; otherwise it reuses the ring's memory.
  // The mbarriers of a TMA ring come last.
  return (s.persistent ? pipeline + staging : std::max(pipeline, staging)) +
         barrierSharedBytes(s);
}

int64_t splitKWorkspaceElements(const MatmulSchedule &s,
                                const MatmulWorkload &w) {
  if (s.splitK <= 1)
    return 0;
  int64_t tiles = ceilDiv(w.m, s.blockM) * ceilDiv(w.n, s.blockN);
  return (tiles + 31) / 32 * 32 + s.splitK * w.m * w.n;
}

int64_t persistentGridBlocks(const MatmulSchedule &s, const MatmulWorkload &w,
                             const Target &t) {
  int64_t tiles = ceilDiv(w.m, s.blockM) * ceilDiv(w.n, s.blockN);
  int64_t perSM = std::min<int64_t>(2048 / std::max<int64_t>(s.threads(), 32),
                                    (t.maxSharedPerBlock + 1024) /
                                        (sharedBytes(s, w) + 1024));
  return std::min(tiles, t.multiprocessors * std::max<int64_t>(perSM, 1));
}

int64_t gridBlocks(const MatmulSchedule &s, const MatmulWorkload &w) {
  // Saturates at INT64_MAX instead of wrapping (workloads of 2^60 elements).
  __int128 blocks = static_cast<__int128>(ceilDiv(w.m, s.blockM)) *
                    ceilDiv(w.n, s.blockN) * s.splitK;
  return blocks > std::numeric_limits<int64_t>::max()
             ? std::numeric_limits<int64_t>::max()
             : static_cast<int64_t>(blocks);
}

/// SMs of an H100 / H200 SXM, which the split-K rules were measured on.
constexpr int64_t kSplitTargetSMs = 132;
/// Blocks a split-K grid of the SIMT schedule may reach: 8 per SM.
constexpr int64_t kSplitTargetBlocks = 8 * kSplitTargetSMs;

/// The largest split_k of the domain with at most `maxBlocks` blocks in the
/// grid and at least `minKSteps` K steps per split (1 when none is larger).
static int64_t largestSplit(const MatmulSchedule &s, const MatmulWorkload &w,
                            int64_t maxBlocks, int64_t minKSteps) {
  int64_t tiles = ceilDiv(w.m, s.blockM) * ceilDiv(w.n, s.blockN);
  int64_t kSteps = ceilDiv(w.k, s.blockK);
  int64_t best = 1;
  for (int64_t sk : kSplitK)
    if (tiles * sk <= maxBlocks && kSteps / sk >= minKSteps)
      best = std::max(best, sk);
  return best;
}

MatmulSchedule defaultSchedule(const MatmulWorkload &w, const Target &t) {
  // The rules below come from the schedule sweeps on the H200 (bench/results/
  // 2026-11-29-schedule-sweep-h200: 1252 schedules over the suite's 29 GEMM
  // shapes; -sweep2-h200: the f32 and small-grid shapes after the SIMT and
  // small-grid changes; -sweep3-h200 and -sweep4-h200: block_k = 128 for
  // decode and small grids; -split-k-h200: split_k 1-16 on the small-grid
  // shapes; -epilogue-sweep-h200: register and staged epilogues);
  // docs/schedules.md lists them with the measured gaps to the best.
  MatmulSchedule s;
  s.splitK = 1;
  s.persistent = false;
  bool halfOperands = w.a == w.b && (w.a == DType::F16 || w.a == DType::BF16);
  int64_t evenN = w.n % 2 == 0 ? 2 : 1;
  // f32 with TF32 allowed, M > 64, both operands contiguous along K with
  // 16-byte rows: wgmma m64n256k8 through TMA, 128 x 256 tiles, block_k 32,
  // 4 stages, the staged epilogue (Llama q/k/v 512 x 6144 x 4096: 1.002 x
  // cuBLAS TF32, ffma 0.116; bench/results/2026-11-30-tf32-sweep-h200).
  // gemv stays faster at M <= 8 (0.932 against 0.754).
  if (w.a == DType::F32 && w.b == DType::F32 && w.tf32 && t.hasWgmma &&
      w.m > 64 && w.aKContiguous && w.bKContiguous && w.k % 4 == 0) {
    MatmulSchedule g;
    g.instruction = Instruction::Wgmma;
    g.copy = CopyEngine::TMA;
    g.blockM = 128, g.blockN = 256, g.warpM = 64, g.warpN = 256;
    g.blockK = 32;
    g.stages = 4;
    g.splitK = 1;
    g.swizzle = 8;
    g.persistent = false;
    g.vectorWidth = w.n % 4 == 0 ? 4 : evenN;
    if (!validate(g, w, t))
      return g;
  }
  // Matrix-vector products (M = 1 for 16-bit operands, M <= 8 for f32) with
  // both operands contiguous along K: gemv, lanes splitting K (Llama q/k/v
  // 1 x 6144 x 4096 bf16: 23.3 -> 21.7 us; o_proj 8 x 4096 x 4096 f32:
  // 80.0 -> 32.0 us; bench/results/2026-11-30-gemv-sweep-h200). With 16-bit
  // operands at M = 8 the tensor cores stay faster (15.3 against 19.5 us).
  if (w.aKContiguous && w.bKContiguous && w.m <= (halfOperands ? 1 : 8)) {
    MatmulSchedule g;
    g.instruction = Instruction::Gemv;
    g.copy = CopyEngine::Sync;
    g.stages = 1;
    g.blockM = g.warpM = 16;
    g.blockN = 16, g.warpN = halfOperands ? 2 : 4;
    g.blockK = halfOperands ? 16 : 8;
    g.splitK = 1, g.swizzle = 1, g.vectorWidth = 1, g.persistent = false;
    if (!validate(g, w, t))
      return g;
  }
  if (!halfOperands) {
    // SIMT: 8 warps; decode 64 x 32 tiles (more blocks over the weights),
    // otherwise 128 x 128 tiles with K step 8 and grouped rasterization.
    s.instruction = Instruction::FFMA;
    s.copy = CopyEngine::Sync;
    s.stages = 1;
    s.vectorWidth = 1;
    if (w.m <= 64) {
      s.blockM = 64, s.blockN = 32, s.blockK = 16;
      s.warpM = 16, s.warpN = 16;
      s.swizzle = 1;
      // Decode: 16 x 64 tiles (32 x 64 above M = 16) split along K into up
      // to 16 slices, as long as the grid stays within 8 blocks per SM and
      // every slice keeps 16 K steps (8 x 4096 x 4096: 0.222 ms unsplit,
      // 0.080 ms so).
      MatmulSchedule split = s;
      split.blockM = w.m <= 16 ? 16 : 32, split.blockN = 64;
      split.splitK = largestSplit(split, w, kSplitTargetBlocks, 16);
      if (split.splitK > 1 && !validate(split, w, t))
        return split;
    } else {
      // 128 x 128 tiles, K step 8, 8 warps: 8 x 8 outputs per thread in
      // 4 x 4 chunks (vector loads from shared memory, 4-wide stores); two
      // buffers, the next K tile loaded while this one is computed
      // (4097^3: 4.736 -> 3.894 ms; bench/results/
      // 2026-11-30-simt-stages-sweep-h200).
      s.blockM = 128, s.blockN = 128, s.blockK = 8;
      s.stages = 2;
      s.warpM = 64, s.warpN = 32;
      s.swizzle = 8;
      s.vectorWidth = w.n % 4 == 0 ? 4 : 1;
      // Grids of at most 512 tiles (about 4 per SM) split K in 4 when each
      // slice keeps 32 K steps (512 x 6144 x 4096: 1.146 ms -> 0.897 ms).
      if (gridBlocks(s, w) <= 512 && ceilDiv(w.k, s.blockK) >= 4 * 32) {
        MatmulSchedule split = s;
        split.splitK = 4;
        if (!validate(split, w, t))
          return split;
      }
    }
    return s;
  }
  bool async = w.aKContiguous && w.bKContiguous && w.k % 8 == 0;
  if (async && t.hasWgmma) {
    s.instruction = Instruction::Wgmma;
    s.copy = CopyEngine::CpAsync;
    s.blockK = 64;
    s.vectorWidth = evenN;
    int64_t bigTiles = ceilDiv(w.m, 128) * ceilDiv(w.n, 256);
    int64_t tiles64 = ceilDiv(w.m, 64) * ceilDiv(w.n, 64);
    bool prefill = false;
    if (w.k >= 6144 && 2 * tiles64 <= kSplitTargetSMs) {
      // Long K on a grid of at most one 64 x 64 tile per two SMs: split K
      // in 2 (32 x 4096 x 14336: 0.0513 ms -> 0.0460 ms).
      s.blockM = 64, s.blockN = 64, s.warpM = 64, s.warpN = 64;
      s.blockK = 128;
      s.stages = 5;
      s.swizzle = 1;
      s.splitK = 2;
    } else if (w.m > 64 && bigTiles >= 100) {
      // Prefill: two warpgroups of 64 x 256, four stages, groups of 8 tile
      // rows.
      s.blockM = 128, s.blockN = 256, s.warpM = 64, s.warpN = 256;
      s.stages = 4;
      s.swizzle = 8;
      prefill = true;
    } else if (w.n <= 8192) {
      // Decode and small grids, N <= 8192: one warpgroup of 64 rows, K step
      // 128, five stages; 64 x 32 tiles unless that makes more than 160
      // blocks, then 64 x 64.
      int64_t bn = ceilDiv(w.m, 64) * ceilDiv(w.n, 32) <= 160 ? 32 : 64;
      s.blockM = 64, s.blockN = bn, s.warpM = 64, s.warpN = bn;
      s.blockK = 128;
      s.stages = 5;
      s.swizzle = 1;
      // Decode kernels are latency-bound (o_proj M 16: 36% of DRAM peak;
      // bench/results/2026-11-30-decode-tma-ncu-h200): on grids of at most
      // 33 tiles split K in 4 when each split keeps 4 K tiles (Qwen3 expert
      // gate 32 x 768 x 2048: 0.822 -> 0.963 x cuBLAS), on grids of at most
      // one tile per SM in 2 when each split keeps 16 (Llama o_proj
      // 16 x 4096 x 4096: 0.980 -> 1.035); 4 stages, so that two blocks fit
      // an SM. DeepSeek expert down 8 x 7168 x 2048 (8 K tiles a split) is
      // slower split (1.018 -> 0.789); bench/results/
      // 2026-11-30-decode-sweep-h200.
      int64_t tiles = ceilDiv(w.m, 64) * ceilDiv(w.n, bn);
      int64_t kTiles = ceilDiv(w.k, s.blockK);
      int64_t split = 1;
      if (w.m <= 64 && 4 * tiles <= kSplitTargetSMs && kTiles >= 4 * 4)
        split = 4;
      else if (w.m <= 64 && tiles <= kSplitTargetSMs && kTiles >= 2 * 16)
        split = 2;
      // Where it would split in 4 (at most 33 tiles of 64 x 32) a K of at
      // most 16 K tiles, 16-bit C (TMA with a producer warp, below) rather
      // takes 64 x 16 tiles, no split and a ring of 8 stages, at least half
      // of K in flight (cuBLAS runs such shapes with 64 x 8 tiles, no split,
      // 164 KB of shared memory): Qwen3 expert gate 32 x 768 x 2048 0.993 ->
      // 1.049 x cuBLAS, expert FFN 64 x 768 x 2048 0.986 -> 1.060;
      // bench/results/2026-11-30-decode-deep-h200. (Longer K is not
      // measured so: it keeps the split.)
      if (split == 4 && kTiles <= 16 && bytesOf(w.c) == 2 && w.n % 8 == 0) {
        MatmulSchedule deep = s;
        deep.blockN = deep.warpN = 16;
        deep.stages = 8;
        if (!validate(deep, w, t)) {
          s = deep;
          split = 1;
        }
      }
      if (split > 1) {
        MatmulSchedule sp = s;
        sp.splitK = split;
        sp.stages = 4;
        // Split in 4 (at most 33 tiles of 64 x 32): 64 x 16 tiles, twice the
        // blocks (Qwen3 expert gate 32 x 768 x 2048: 0.965 -> 0.998 x cuBLAS,
        // expert FFN 64 x 768 x 2048: 0.961 -> 0.978; bench/results/
        // 2026-11-30-decode-ws-sweep-h200).
        if (split == 4)
          sp.blockN = sp.warpN = 16;
        if (!validate(sp, w, t))
          s = sp;
      }
    } else {
      // Decode with wide weights: K step 64, five stages, N tile 64 up to
      // N = 16384, 128 above.
      int64_t bn = w.n <= 16384 ? 64 : 128;
      s.blockM = 64, s.blockN = bn, s.warpM = 64, s.warpN = bn;
      s.stages = 5;
      s.swizzle = w.m >= 512 ? 8 : 1;
    }
    // 16-bit C: the staged epilogue (the block tile through shared memory,
    // 16-byte stores; 4096^3 bf16: 0.2067 -> 0.1889 ms, Llama down M 32:
    // 45.8 -> 42.8 us; bench/results/2026-11-30-epilogue-sweep-h200). f32 C
    // keeps the register epilogue (not measured staged).
    // With the staged epilogue every tile loads through TMA:
    // - the prefill tile (4096^3 bf16: 0.950 -> 0.968 x cuBLAS, Qwen3 down
    //   M 1024: 0.866 -> 1.000; bench/results/2026-11-30-tma-sweep-h200);
    //   on grids of at least 3 tiles per SM as a persistent, warp-
    //   specialized grid with 3 stages, whose producer warp loads the next
    //   tile while the warpgroups run this one's epilogue (gate M 4096
    //   0.962 -> 0.976, o_proj M 8192 0.966 -> 0.984, BERT FFN1 0.909 ->
    //   0.989, 4096^3 bf16 0.963 -> 0.971; 128 to 384 tiles gain nothing or
    //   lose up to 1.5%: Qwen3 down M 1024 1.000 -> 0.987;
    //   bench/results/2026-11-30-warp-specialize-sweep-h200);
    // - the one-warpgroup decode and small-grid tiles warp-specialized, at
    //   their tile, stages and split (boxes of A cut to M rows, tmaBoxRows:
    //   Llama o_proj M 16 1.047 -> 1.087, Qwen3 up M 16 0.997 -> 1.022,
    //   down M 32 0.989 -> 1.008, Qwen3 expert down M 256 0.984 -> 1.087;
    //   Qwen3 expert gate M 32 0.954 -> 0.943, the one loss; same record).
    if (bytesOf(w.c) == 2 && w.n % 8 == 0) {
      MatmulSchedule staged = s;
      staged.vectorWidth = 8;
      MatmulSchedule tma = staged;
      tma.copy = CopyEngine::TMA;
      tma.warpSpecialize = !prefill;
      if (prefill && bigTiles >= 3 * kSplitTargetSMs) {
        MatmulSchedule pe = tma;
        pe.persistent = true, pe.warpSpecialize = true, pe.stages = 3;
        if (!validate(pe, w, t))
          return pe;
      }
      if (!validate(tma, w, t))
        return tma;
      if (!validate(staged, w, t))
        return staged;
    }
    if (!validate(s, w, t))
      return s;
  }
  s.instruction = Instruction::MmaSync;
  s.vectorWidth = evenN;
  if (async) {
    s.copy = CopyEngine::CpAsync;
    s.blockK = 64;
    if (w.m <= 64) {
      s.blockM = 64, s.blockN = 32, s.warpM = 64, s.warpN = 8;
      s.stages = 4;
      s.swizzle = 1;
    } else {
      s.blockM = 128, s.blockN = 128, s.warpM = 64, s.warpN = 32;
      s.stages = 3;
      s.swizzle = 8;
    }
  } else {
    // Transposed A, row-major B or K not a multiple of 8: one synchronously
    // filled stage.
    s.copy = CopyEngine::Sync;
    s.stages = 1;
    s.blockK = 32;
    if (w.m <= 64) {
      s.blockM = 64, s.blockN = 32, s.warpM = 64, s.warpN = 8;
      s.swizzle = 1;
    } else {
      s.blockM = 128, s.blockN = 256, s.warpM = 64, s.warpN = 64;
      s.swizzle = 8;
    }
  }
  // Targets with less shared memory (99 KB on sm_86/sm_89): fewer stages.
  while (validate(s, w, t) && s.copy == CopyEngine::CpAsync && s.stages > 2)
    --s.stages;
  if (!validate(s, w, t))
    return s;
  // Not reached for the rules above on the supported chips; kept so that a
  // rule that does not fit falls back to SIMT, which every workload accepts.
  MatmulWorkload f32 = w;
  f32.a = f32.b = DType::F32;
  return defaultSchedule(f32, t);
}

json domains() {
  json d;
  json instr = json::array(), copy = json::array();
  for (Instruction i : kInstructions)
    instr.push_back(toString(i));
  for (CopyEngine c : kCopies)
    copy.push_back(toString(c));
  d["instruction"] = instr;
  d["copy"] = copy;
  d["block_m"] = kBlockM;
  d["block_n"] = kBlockN;
  d["block_k"] = kBlockK;
  d["warp_m"] = kWarpM;
  d["warp_n"] = kWarpN;
  d["stages"] = kStages;
  d["split_k"] = kSplitK;
  d["swizzle"] = kSwizzle;
  d["vector_width"] = kVectorWidth;
  d["persistent"] = json::array({false, true});
  d["warp_specialize"] = json::array({false, true});
  d["tma_store"] = json::array({false, true});
  return d;
}

namespace {
/// Every point of the domains' product with instruction i, copy c and
/// block_m bm (a chunk of validPoints' parallel walk), in a fixed order.
template <typename F>
void forEachPointOf(Instruction i, CopyEngine c, int64_t bm, F &&f) {
  MatmulSchedule s;
        for (int64_t bn : kBlockN)
          for (int64_t bk : kBlockK)
            for (int64_t wm : kWarpM)
              for (int64_t wn : kWarpN)
                for (int64_t st : kStages)
                  for (int64_t sk : kSplitK)
                    for (int64_t sw : kSwizzle)
                      for (int64_t vw : kVectorWidth) {
                        s.instruction = i, s.copy = c, s.blockM = bm,
                        s.blockN = bn, s.blockK = bk, s.warpM = wm,
                        s.warpN = wn, s.stages = st, s.splitK = sk,
                        s.swizzle = sw, s.vectorWidth = vw;
                        // persistent, warp_specialize and tma_store only
                        // where they can be valid (wgmma; split_k = 1;
                        // tma; a staged epilogue).
                        bool ws =
                            i == Instruction::Wgmma && c == CopyEngine::TMA;
                        bool pe = i == Instruction::Wgmma && sk == 1;
                        bool ts = i == Instruction::Wgmma && vw > 2;
                        for (bool p : {false, true})
                          for (bool w : {false, true})
                            for (bool t : {false, true}) {
                              if ((p && !pe) || (w && !ws) || (t && !ts))
                                continue;
                              s.persistent = p, s.warpSpecialize = w;
                              s.tmaStore = t;
                              f(s);
                            }
                      }
}
} // namespace

std::vector<MatmulSchedule> validPoints(const MatmulWorkload &w,
                                        const Target &t) {
  // `swizzle` enters no constraint but its domain (it only orders the
  // tiles): each point is validated once, with the first swizzle, and a
  // valid one is added with every swizzle (5x fewer validations; the
  // Schedule.SwizzleEntersNoConstraint test holds validate to that).
  // The chunks (instruction, copy, block_m) are walked on the host's cores
  // and joined in their order, so the result is the serial walk's (a large
  // GEMM's space takes seconds on one core).
  struct Chunk {
    Instruction i;
    CopyEngine c;
    int64_t bm;
  };
  std::vector<Chunk> chunks;
  for (Instruction i : kInstructions)
    for (CopyEngine c : kCopies)
      for (int64_t bm : kBlockM)
        chunks.push_back({i, c, bm});
  std::vector<std::vector<MatmulSchedule>> parts(chunks.size());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t k; (k = next.fetch_add(1)) < chunks.size();)
      forEachPointOf(chunks[k].i, chunks[k].c, chunks[k].bm,
                     [&](const MatmulSchedule &s) {
                       if (s.swizzle != kSwizzle.front() || validate(s, w, t))
                         return;
                       for (int64_t sw : kSwizzle) {
                         MatmulSchedule v = s;
                         v.swizzle = sw;
                         parts[k].push_back(v);
                       }
                     });
  };
  size_t helpers = std::min<size_t>(
      chunks.size() - 1,
      std::max(1u, std::thread::hardware_concurrency()) - 1);
  std::vector<std::thread> threads;
  for (size_t h = 0; h < helpers; ++h) {
    try {
      threads.emplace_back(work);
    } catch (const std::system_error &) {
      break; // no more threads: the ones started and this one do the rest
    }
  }
  work();
  for (std::thread &th : threads)
    th.join();
  std::vector<MatmulSchedule> out;
  size_t total = 0;
  for (const auto &p : parts)
    total += p.size();
  out.reserve(total);
  for (auto &p : parts)
    out.insert(out.end(), p.begin(), p.end());
  return out;
}

json spaceJSON(const MatmulWorkload &w, const Target &t,
               int64_t validPointCount) {
  json j;
  j["class"] = "matmul";
  j["workload"] = {{"m", w.m},
                   {"n", w.n},
                   {"k", w.k},
                   {"a", toString(w.a)},
                   {"b", toString(w.b)},
                   {"c", toString(w.c)},
                   {"a_k_contiguous", w.aKContiguous},
                   {"b_k_contiguous", w.bKContiguous},
                   {"tf32", w.tf32},
                   {"key", w.key(t.chip)}};
  j["target"] = {{"chip", t.chip},
                 {"max_shared_per_block", t.maxSharedPerBlock},
                 {"max_static_shared", t.maxStaticShared},
                 {"max_threads_per_block", t.maxThreadsPerBlock}};
  j["domains"] = domains();
  j["derived"] = {{"num_warps",
                   "(block_m / warp_m) * (block_n / warp_n), "
                   "times 4 for wgmma (a warpgroup per warp tile), + 1 (the "
                   "producer warp) with warp_specialize"}};
  j["constraints"] = constraintsJSON();
  j["default"] = toJSON(defaultSchedule(w, t));
  j["valid_points"] = validPointCount >= 0 ? validPointCount
                                           : int64_t(validPoints(w, t).size());
  return j;
}

MatmulSchedule samplePoint(std::mt19937_64 &rng) {
  auto pick = [&](const auto &v) {
    std::uniform_int_distribution<size_t> d(0, v.size() - 1);
    return v[d(rng)];
  };
  MatmulSchedule s;
  s.instruction = pick(kInstructions);
  s.copy = pick(kCopies);
  s.blockM = pick(kBlockM);
  s.blockN = pick(kBlockN);
  s.blockK = pick(kBlockK);
  s.warpM = pick(kWarpM);
  s.warpN = pick(kWarpN);
  s.stages = pick(kStages);
  s.splitK = pick(kSplitK);
  s.swizzle = pick(kSwizzle);
  s.vectorWidth = pick(kVectorWidth);
  s.persistent = pick(std::vector<bool>{false, true});
  s.warpSpecialize = pick(std::vector<bool>{false, true});
  s.tmaStore = pick(std::vector<bool>{false, true});
  return s;
}

json toJSON(const MatmulSchedule &s) {
  return json{{"instruction", toString(s.instruction)},
              {"copy", toString(s.copy)},
              {"block_m", s.blockM},
              {"block_n", s.blockN},
              {"block_k", s.blockK},
              {"warp_m", s.warpM},
              {"warp_n", s.warpN},
              {"num_warps", s.numWarps()},
              {"stages", s.stages},
              {"split_k", s.splitK},
              {"swizzle", s.swizzle},
              {"vector_width", s.vectorWidth},
              {"persistent", s.persistent},
              {"warp_specialize", s.warpSpecialize},
              {"tma_store", s.tmaStore}};
}

namespace {
/// A SAX handler that only looks for errors: the parser's syntax errors (with
/// their position) and keys given twice in one object (nlohmann/json would
/// keep the last silently).
class JsonChecker : public json::json_sax_t {
public:
  std::string error;

  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t &) override { return true; }
  bool string(string_t &) override { return true; }
  bool binary(binary_t &) override { return true; }
  bool start_object(std::size_t) override {
    keys.emplace_back();
    return true;
  }
  bool key(string_t &k) override {
    if (!keys.back().insert(k).second) {
      error = cat("the key '", abbreviate(k), "' appears twice in one object");
      return false;
    }
    return true;
  }
  bool end_object() override {
    keys.pop_back();
    return true;
  }
  bool start_array(std::size_t) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(std::size_t position, const std::string &,
                   const nlohmann::detail::exception &e) override {
    // The message ends with the last token read, which may be long.
    error = abbreviate(e.what(), 240);
    // Syntax errors name the line and column; others (a number out of
    // range) do not: give the byte offset.
    if (error.find(" line ") == std::string::npos)
      error += cat(" (at byte ", position, ")");
    return false;
  }

private:
  std::vector<std::set<std::string>> keys;
};
} // namespace

std::optional<json> parseJSON(const std::string &text, std::string &error) {
  JsonChecker checker;
  if (!json::sax_parse(text, &checker)) {
    error = checker.error.empty() ? "not valid JSON" : checker.error;
    return std::nullopt;
  }
  json j = json::parse(text, /*cb=*/nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    error = "not valid JSON";
    return std::nullopt;
  }
  return j;
}

std::string abbreviate(const std::string &text, size_t max) {
  if (text.size() <= max)
    return text;
  size_t cut = max;
  // Not inside a UTF-8 sequence: continuation bytes are 10xxxxxx.
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80)
    --cut;
  return cat(text.substr(0, cut), "... (", text.size(), " bytes)");
}

bool isParameterName(const std::string &key) {
  static const char *names[] = {"instruction",  "copy",
                                "block_m",      "block_n",
                                "block_k",      "warp_m",
                                "warp_n",       "stages",
                                "split_k",      "swizzle",
                                "vector_width", "persistent",
                                "num_warps",    "warp_specialize",
                                "tma_store"};
  return std::any_of(std::begin(names), std::end(names),
                     [&](const char *n) { return key == n; });
}

std::optional<MatmulSchedule>
fromJSON(const json &j, const MatmulSchedule &base, std::string &error) {
  if (!j.is_object()) {
    error = "a schedule must be a JSON object";
    return std::nullopt;
  }
  MatmulSchedule s = base;
  // Asking for a persistent grid, which takes split_k = 1, without naming
  // split_k does not keep the base's split.
  if (j.contains("persistent") && j["persistent"] == true &&
      !j.contains("split_k"))
    s.splitK = 1;
  // Asking for a producer warp (TMA only) without naming `copy` switches the
  // copy engine to TMA.
  if (j.contains("warp_specialize") && j["warp_specialize"] == true &&
      !j.contains("copy"))
    s.copy = CopyEngine::TMA;
  // Likewise asking for a split without naming `persistent` does not keep
  // the base's persistent grid.
  if (j.contains("split_k") && j["split_k"].is_number_integer() &&
      j["split_k"].get<int64_t>() > 1 && !j.contains("persistent"))
    s.persistent = false;
  // Switching to an instruction other than wgmma without naming the copy
  // engine does not keep the base's TMA (wgmma only): cp.async instead.
  if (j.contains("instruction") && j["instruction"] != "wgmma" &&
      !j.contains("copy") && s.copy == CopyEngine::TMA)
    s.copy = CopyEngine::CpAsync;
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string &key = it.key();
    const json &v = it.value();
    if (!isParameterName(key)) {
      error = cat("unknown schedule parameter '", abbreviate(key), "'");
      return std::nullopt;
    }
    if (key == "instruction" || key == "copy") {
      if (!v.is_string()) {
        error = cat("'", key, "' must be a string");
        return std::nullopt;
      }
      std::string text = v.get<std::string>();
      if (key == "instruction") {
        auto i = parseInstruction(text);
        if (!i) {
          std::string names;
          for (Instruction known : kInstructions)
            names += cat(names.empty() ? "" : ", ", toString(known));
          error = cat("'instruction' must be one of ", names, "; got '",
                      abbreviate(text), "'");
          return std::nullopt;
        }
        s.instruction = *i;
      } else {
        auto c = parseCopyEngine(text);
        if (!c) {
          error = cat("'copy' must be sync, cp_async or tma, got '",
                      abbreviate(text), "'");
          return std::nullopt;
        }
        s.copy = *c;
      }
      continue;
    }
    if (key == "persistent" || key == "warp_specialize" || key == "tma_store") {
      if (!v.is_boolean()) {
        error = cat("'", key, "' must be true or false");
        return std::nullopt;
      }
      (key == "persistent"        ? s.persistent
       : key == "warp_specialize" ? s.warpSpecialize
                                  : s.tmaStore) = v.get<bool>();
      continue;
    }
    if (key == "num_warps") {
      // Derived: only checked against the warp grid below (a point whose
      // block is smaller than its warp tile has 0 warps; validate() says why).
      if (!v.is_number_integer()) {
        error =
            cat("'num_warps' must be an integer, got ", abbreviate(v.dump()));
        return std::nullopt;
      }
      continue;
    }
    if (!v.is_number_integer() || v.get<int64_t>() <= 0 ||
        v.get<int64_t>() > (int64_t(1) << 20)) {
      error = cat("'", key, "' must be an integer from 1 to 2^20, got ",
                  abbreviate(v.dump()));
      return std::nullopt;
    }
    int64_t x = v.get<int64_t>();
    if (key == "block_m")
      s.blockM = x;
    else if (key == "block_n")
      s.blockN = x;
    else if (key == "block_k")
      s.blockK = x;
    else if (key == "warp_m")
      s.warpM = x;
    else if (key == "warp_n")
      s.warpN = x;
    else if (key == "stages")
      s.stages = x;
    else if (key == "split_k")
      s.splitK = x;
    else if (key == "swizzle")
      s.swizzle = x;
    else if (key == "vector_width")
      s.vectorWidth = x;
  }
  // Likewise a base's producer warp (wgmma with tma only) is dropped when
  // the schedule leaves wgmma or tma without naming warp_specialize, and a
  // base's persistent grid (wgmma only) when it leaves wgmma without naming
  // persistent.
  if (!j.contains("warp_specialize") &&
      (s.instruction != Instruction::Wgmma || s.copy != CopyEngine::TMA))
    s.warpSpecialize = false;
  if (!j.contains("persistent") && s.instruction != Instruction::Wgmma)
    s.persistent = false;
  if (!j.contains("tma_store") &&
      (s.instruction != Instruction::Wgmma || !stagedEpilogue(s)))
    s.tmaStore = false;
  if (j.contains("num_warps") &&
      (!j["num_warps"].is_number_integer() ||
       j["num_warps"].get<int64_t>() != s.numWarps() ||
       (j["num_warps"].is_number_unsigned() &&
        j["num_warps"].get<uint64_t>() > uint64_t(1) << 20))) {
    error = cat("'num_warps' (", abbreviate(j["num_warps"].dump()),
                ") disagrees with the warp grid (block_m / warp_m) * (block_n "
                "/ warp_n)",
                s.instruction == Instruction::Wgmma ? " * 4 (wgmma: warpgroups)"
                                                    : "",
                s.warpSpecialize ? " + 1 (the producer warp)" : "", " = ",
                s.numWarps());
    return std::nullopt;
  }
  return s;
}

} // namespace kopt::schedule
