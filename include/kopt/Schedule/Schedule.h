//===- Schedule.h - matmul schedules, their space and the heuristic -*- C++
//-*-===//
//
// A schedule says *how* a kernel computes, never *what*: tile shapes, warps,
// pipeline stages, the tensor-core instruction, the copy engine. It is plain
// data, kept free of MLIR so that search tools and the runtime can use it; the
// dialect carries it as `#kopt.schedule<...>` (dialects/Kopt/KoptAttrs.td) and
// files carry it as JSON (docs/schedules.md).
//
// The space of a kernel class is each parameter's domain plus constraints
// derived from the workload (shape, dtypes, operand layout) and the target
// (shared memory per block, registers, thread limits). `validate` rejects an
// invalid point with the reason before anything is compiled.
//
// Limits of the targets are from the CUDA C++ Programming Guide, "Technical
// Specifications per Compute Capability" (CUDA 12/13): maximum shared memory
// per thread block (opt-in) 163 KB on 8.0/8.7, 99 KB on 8.6/8.9, 227 KB on
// 9.0; 255 registers per thread; 1024 threads per block; 48 KB of static
// shared memory per block.
//
//===----------------------------------------------------------------------===//
#ifndef KOPT_SCHEDULE_SCHEDULE_H
#define KOPT_SCHEDULE_SCHEDULE_H

#include "kopt/Manifest/DType.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace kopt::schedule {

/// The instruction that computes the multiply-accumulates.
enum class Instruction {
  /// Scalar fused multiply-add (SIMT), any dtype.
  FFMA,
  /// mma.sync.m16n8k16 from ldmatrix fragments (sm_80+), f16/bf16 operands.
  MmaSync,
  /// wgmma m64nNk16 from a warpgroup, operands in shared memory (sm_90a).
  Wgmma,
  /// GEMV-like FMA for small M: lanes split K with 16-byte loads from global
  /// memory, warps own output columns, a shuffle reduction (any dtype; both
  /// operands contiguous along K).
  Gemv,
};

/// How operand tiles reach shared memory.
enum class CopyEngine {
  /// Loads into registers, then stores to shared memory; one stage.
  Sync,
  /// cp.async 16-byte copies with commit/wait groups (sm_80+).
  CpAsync,
  /// Tensor Memory Accelerator (sm_90a, wgmma only): one thread issues
  /// cp.async.bulk.tensor box copies through tensor maps the runtime encodes
  /// (docs/manifest.md, tensor_maps); "full" and "empty" mbarriers per stage
  /// guard the ring.
  TMA,
};

const char *toString(Instruction i);
const char *toString(CopyEngine c);
std::optional<Instruction> parseInstruction(const std::string &s);
std::optional<CopyEngine> parseCopyEngine(const std::string &s);

/// A matmul-like kernel's schedule. C[M, N] is cut into block_m x block_n block
/// tiles, one per thread block; the K loop advances block_k per step. The
/// block's warps form a (block_m / warp_m) x (block_n / warp_n) grid (for
/// wgmma, warpgroups of 4 warps). Sizes are in elements; the defaults below are
/// a valid mma_sync schedule, not the heuristic's choice (defaultSchedule).
struct MatmulSchedule {
  Instruction instruction = Instruction::MmaSync;
  CopyEngine copy = CopyEngine::CpAsync;
  int64_t blockM = 128, blockN = 128, blockK = 32;
  int64_t warpM = 64, warpN = 32;
  /// Shared-memory buffers of the K loop (1: no pipelining).
  int64_t stages = 2;
  /// Slices of K computed by separate blocks (1: none). With S > 1, split s
  /// of every output tile computes K tiles [s P, (s + 1) P), P =
  /// ceil(ceil(K / block_k) / S), and writes f32 partial sums to a workspace;
  /// the last block of the tile to finish adds the S partials in split order
  /// and stores the result (splitKWorkspaceElements gives the size).
  int64_t splitK = 1;
  /// Grouped rasterization: block tiles are visited in groups of `swizzle`
  /// tile rows, M fastest within a group, for L2 reuse (1: row-major order).
  int64_t swizzle = 1;
  /// Output elements per global store in the epilogue (1, 2, 4, 8; at most
  /// 16 bytes). A tensor-core lane holds pairs of adjacent columns: with
  /// mma_sync and wgmma, widths above 2 stage the block tile through shared
  /// memory (stagedEpilogue), then every thread stores 16-byte (or 8-byte)
  /// row chunks, consecutive threads consecutive chunks.
  int64_t vectorWidth = 1;
  /// Persistent grid (wgmma only): as many blocks as the GPU holds at once
  /// (persistentGridBlocks) loop over the output tiles in rasterization
  /// order, their copy pipeline running on from one tile into the next.
  bool persistent = false;
  /// Warp specialization (wgmma with copy = tma only): one extra producer
  /// warp issues the TMA copies of every stage, waiting on the stages'
  /// "empty" mbarriers, while the warpgroups of the warp grid (the consumers)
  /// only wait on "full" mbarriers, compute and run the epilogue, which syncs
  /// them with a named barrier (CUTLASS's "TMA warp-specialized" kernels;
  /// Triton's warp_specialize). Without it thread 0 of the first warpgroup
  /// both consumes and refills the stages.
  bool warpSpecialize = false;
  /// TMA store epilogue (wgmma with a staged epilogue, sm_90a): the block
  /// tile is staged in shared memory in swizzled sub-tiles of 128, 64 or 32
  /// bytes of columns (tmaStoreSwizzleBytes) x block_m rows (the layout of
  /// C's tensor map,
  /// which the runtime encodes: docs/manifest.md), and one thread stores
  /// them with cp.async.bulk.tensor (bulk async-groups); the TMA unit clips
  /// the tile at M and N. The threads go on without waiting for the store:
  /// only the next use of the staging memory (a persistent block's next
  /// tile) and the kernel's exit wait for the TMA unit to have read it
  /// (cp.async.bulk.wait_group.read), so a persistent block's store overlaps
  /// its next tile's K loop. CUTLASS's "TMA epilogue".
  bool tmaStore = false;

  /// Warps of the block: mathWarps(), plus the producer warp with
  /// warp_specialize.
  int64_t numWarps() const;
  /// Warps of the warp grid, which compute the block tile:
  /// (block_m / warp_m) * (block_n / warp_n), times 4 for wgmma (a warpgroup
  /// per warp tile); 0 when a warp tile exceeds the block tile.
  int64_t mathWarps() const;
  int64_t threads() const { return 32 * numWarps(); }
  bool operator==(const MatmulSchedule &o) const;
  bool operator!=(const MatmulSchedule &o) const { return !(*this == o); }
};

/// Element types kopt compiles: the manifest's (kopt/Manifest/DType.h), under
/// the names the schedules use.
using DType = kopt::manifest::DType;
inline const char *toString(DType d) { return manifest::dtypeName(d); }
inline std::optional<DType> parseDType(const std::string &s) {
  return manifest::parseDType(s);
}
inline int64_t bytesOf(DType d) { return manifest::dtypeSize(d); }

/// What a matmul kernel computes: C[M, N] = A[M, K] B[K, N] with f32
/// accumulation; `aKContiguous` / `bKContiguous` say whether K is the
/// innermost (contiguous) dimension of A / B in memory (A row-major: yes;
/// B row-major [K, N]: no; B given as [N, K] (transposed): yes).
struct MatmulWorkload {
  int64_t m = 1, n = 1, k = 1;
  DType a = DType::F32, b = DType::F32, c = DType::F32;
  bool aKContiguous = true, bKContiguous = false;
  /// f32 operands may be cut to TF32 (kopt.matmul's `tf32`): wgmma with TF32
  /// operands becomes a candidate.
  bool tf32 = false;
  /// The workload key: shape, dtypes (`+tf32` after them when allowed),
  /// layouts, target chip.
  std::string key(const std::string &chip) const;
};

/// The limits of a target GPU that constrain schedules.
struct Target {
  std::string chip = "sm_90a";
  /// Largest shared memory per block after opting in, bytes.
  int64_t maxSharedPerBlock = 227 * 1024;
  /// Static shared memory per block without opting in, bytes.
  int64_t maxStaticShared = 48 * 1024;
  int64_t maxThreadsPerBlock = 1024;
  int64_t maxRegistersPerThread = 255;
  bool hasWgmma = true;
  /// Thread-block clusters and distributed shared memory (sm_90 and sm_90a;
  /// PTX ISA: `.reqnctapercluster`, `mapa`, `barrier.cluster` need sm_90).
  bool hasClusters = true;
  /// Streaming multiprocessors of the chip's largest part (sm_90/sm_90a:
  /// H100 SXM and H200, 132), for persistent grids.
  int64_t multiprocessors = 132;
  /// The limits of `chip` (one of knownChips()); nullopt for another chip.
  static std::optional<Target> forChip(const std::string &chip);
  /// The chips kopt generates code for: sm_80, sm_86, sm_87, sm_89, sm_90,
  /// sm_90a.
  static const std::vector<std::string> &knownChips();
};

/// Shared memory of the K loop's stages, bytes: block tiles of A and B per
/// stage (mma_sync rows padded by 8 elements against bank conflicts; ffma
/// stages * block_k * (block_m + block_n) elements); 0 for gemv, which reads
/// its operands from global memory.
int64_t pipelineSharedBytes(const MatmulSchedule &s, const MatmulWorkload &w);

/// Whether the epilogue stages the block tile through shared memory
/// (mma_sync or wgmma with vector_width > 2).
bool stagedEpilogue(const MatmulSchedule &s);

/// Bytes between rows of the staged epilogue tile: (block_n + 8) * sizeof(C),
/// i.e. 16 bytes of padding for 16-bit C and 32 for f32 C, so that the lanes'
/// pair stores into it do not conflict in banks.
int64_t epilogueRowPitch(const MatmulSchedule &s, const MatmulWorkload &w);

/// Shared memory of the staged epilogue tile, bytes: block_m rows of
/// epilogueRowPitch; 0 without staging.
int64_t epilogueSharedBytes(const MatmulSchedule &s, const MatmulWorkload &w);

/// Bytes of a row of one sub-tile (and one TMA box) of the TMA store
/// epilogue, which is also the box's swizzle span: the largest of 128, 64
/// and 32 that divides block_n * sizeof(C) (`blockBytes`); 0 when none
/// does. Wider boxes mean fewer, longer row writes for the TMA unit.
/// Header-only: the runtime checks manifests against it.
inline int64_t tmaStoreSwizzleBytes(int64_t blockBytes) {
  for (int64_t span : {128, 64, 32})
    if (blockBytes % span == 0)
      return span;
  return 0;
}

/// Shared memory of the mbarriers of a TMA ring, bytes: a "full" and an
/// "empty" 8-byte mbarrier per stage (copy = tma), else 0.
int64_t barrierSharedBytes(const MatmulSchedule &s);

/// Rows of an operand's TMA box (copy = tma): the block tile's rows
/// (block_m for A, block_n for B), or, for an operand with fewer rows than
/// that, its rows rounded up to 8 (the 128-byte swizzle's 1024-byte atom).
/// Such an operand has one tile of rows, so every box of the map may stop
/// there: a decode A with M = 16 moves 16 rows per box instead of 64, and
/// the TMA unit produces no zero rows past M (measured: out-of-bounds fill
/// made TMA decode tiles slower than cp.async). The tile's rows past the box
/// keep stale shared memory; they reach only output rows past M (or N),
/// which the epilogue never stores. Header-only: the runtime checks
/// manifests against it.
inline int64_t tmaBoxRows(int64_t blockRows, int64_t operandRows) {
  int64_t rounded = (operandRows + 7) / 8 * 8;
  return rounded < blockRows ? rounded : blockRows;
}

/// Shared memory the schedule allocates, bytes: the stages, or the staged
/// epilogue tile if larger (it reuses the stages once the K loop is done);
/// with a persistent grid the tile follows the stages (the next tile's
/// copies are in flight during the epilogue); then barrierSharedBytes.
int64_t sharedBytes(const MatmulSchedule &s, const MatmulWorkload &w);

/// Blocks launched: ceil(M / block_m) * ceil(N / block_n) * split_k.
int64_t gridBlocks(const MatmulSchedule &s, const MatmulWorkload &w);

/// f32 elements of the split-K workspace: one counter per output tile
/// (ceil(M / block_m) * ceil(N / block_n), rounded up to a multiple of 32),
/// then split_k * M * N partial sums; 0 when split_k is 1. The workspace must
/// be zero before the kernel's first launch; the kernel leaves its counters
/// at zero, so later launches reuse it without clearing.
int64_t splitKWorkspaceElements(const MatmulSchedule &s,
                                const MatmulWorkload &w);

/// Blocks of a persistent grid: min(output tiles, multiprocessors x blocks
/// per SM), blocks per SM limited by shared memory (228 KB per SM on sm_90,
/// 1 KB reserved per block) and by 2048 threads per SM.
int64_t persistentGridBlocks(const MatmulSchedule &s, const MatmulWorkload &w,
                             const Target &t);

/// One rule of the matmul space, as data (lib/Schedule/Constraints.cpp): an
/// id ("wgmma.block-k"), the rule as text (what --kopt-print-space, kopt-space,
/// docs/schedules.md and agents read) and the check, which explains a
/// violation naming the parameter and the limit. The rules run in their
/// order; a rule may assume the ones before it hold.
struct Constraint {
  const char *id;
  const char *rule;
  std::optional<std::string> (*check)(const MatmulSchedule &,
                                      const MatmulWorkload &, const Target &);
};

/// Every constraint, in the order `check` applies them.
const std::vector<Constraint> &constraints();
/// The constraint called `id`, or null.
const Constraint *findConstraint(const std::string &id);

/// A schedule rejected by a constraint.
struct Rejection {
  const Constraint *constraint = nullptr;
  /// Why, e.g. "block_k (24) must be a multiple of the mma K step (16)".
  std::string reason;
  /// The reason followed by the constraint's id in brackets:
  /// "... K step (16) [mma-sync.tiles]".
  std::string message() const;
};

/// The first constraint `s` violates for `w` on `t`, or nullopt when it can
/// compute it. Checked once, before anything is compiled
/// (kopt-select-schedule).
std::optional<Rejection> check(const MatmulSchedule &s,
                               const MatmulWorkload &w, const Target &t);

/// check()'s message (reason [id]), or nullopt when the schedule is valid.
std::optional<std::string> validate(const MatmulSchedule &s,
                                    const MatmulWorkload &w, const Target &t);

/// The constraints as JSON: [{"id": ..., "rule": ...}, ...].
nlohmann::json constraintsJSON();

/// The default heuristic: a good valid schedule for `w` on `t` without tuning
/// (docs/schedules.md gives the rules and the measurements behind them).
MatmulSchedule defaultSchedule(const MatmulWorkload &w, const Target &t);

/// The parameters' domains, as JSON: {"block_m": [16, 32, ...], ...}.
nlohmann::json domains();

/// The space of `w` on `t` as JSON: workload, domains, constraints (ids and
/// rules, constraintsJSON),
/// the default schedule and the number of valid points of the domains'
/// product (`validPointCount` when not negative, else counted: seconds for a
/// large GEMM).
nlohmann::json spaceJSON(const MatmulWorkload &w, const Target &t,
                         int64_t validPointCount = -1);

/// A point drawn uniformly from the product of the domains (possibly invalid).
MatmulSchedule samplePoint(std::mt19937_64 &rng);

/// Every valid point of the domains' product.
std::vector<MatmulSchedule> validPoints(const MatmulWorkload &w,
                                        const Target &t);

/// The schedule as JSON: {"instruction": "mma_sync", "block_m": 128, ...,
/// "num_warps": 8}.
nlohmann::json toJSON(const MatmulSchedule &s);

/// Reads a schedule from JSON. Keys missing from `j` keep the value of `base`
/// (a partial schedule adjusts the default), except that `"persistent": true`
/// without `split_k` sets split_k to 1 (persistent grids take no split),
/// `"warp_specialize": true` without `copy` sets copy to tma, a
/// `split_k` above 1 without `persistent` sets persistent to false, and
/// an `instruction` other than wgmma without `copy` turns a base's TMA into
/// cp_async (TMA is implemented for wgmma only), a schedule that is not
/// wgmma with tma and does not name `warp_specialize` drops the base's, and
/// one that is not wgmma and does not name `persistent` the base's
/// persistent grid; a base's `tma_store` is dropped likewise by one that is
/// not wgmma or stores without staging (vector_width <= 2) and does not
/// name `tma_store`. An
/// unknown key, a value of the wrong type or out of its domain, or a
/// `num_warps` that disagrees with the warp grid is an error: the message names
/// the key. Returns the error text in `error` and nullopt on failure.
std::optional<MatmulSchedule> fromJSON(const nlohmann::json &j,
                                       const MatmulSchedule &base,
                                       std::string &error);

/// Parses a schedule file's text. On a syntax error, or a key given twice in
/// one object, returns nullopt and sets `error` to the reason (nlohmann/json's
/// parse error names the line and column).
std::optional<nlohmann::json> parseJSON(const std::string &text,
                                        std::string &error);

/// Whether `key` names a schedule parameter (including "num_warps").
bool isParameterName(const std::string &key);

/// `text` as a diagnostic echoes a value or key of an input file: at most
/// `max` bytes (cut at a UTF-8 character boundary), followed by
/// "... (N bytes)" when longer, so that a huge value never floods the output.
std::string abbreviate(const std::string &text, size_t max = 80);

} // namespace kopt::schedule

#endif // KOPT_SCHEDULE_SCHEDULE_H
