//===- Constraints.cpp - the matmul space's constraints, as data ----------===//
//
// Every rule a matmul schedule must satisfy, once: an id, the rule as text
// (what --kopt-print-space, kopt-space, docs/schedules.md and agents read) and
// the check that explains a violation. `check` runs them in order and stops
// at the first that fails, so a rule may assume the ones before it hold (the
// domains are checked first; an instruction's rules only run for it).
//
// Limits of the targets: CUDA C++ Programming Guide, "Technical
// Specifications per Compute Capability"; wgmma and TMA rules: PTX ISA 8.0,
// "Asynchronous Warpgroup Level Matrix Multiply-Accumulate" and
// "cp.async.bulk.tensor"; cuTensorMapEncodeTiled's limits: cuda.h.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"
#include "kopt/Schedule/Schedule.h"

namespace kopt::schedule {

using namespace detail;

namespace {

using Reason = std::optional<std::string>;
using S = const MatmulSchedule &;
using W = const MatmulWorkload &;
using T = const Target &;

const Reason ok = std::nullopt;

bool isWgmma(S s) { return s.instruction == Instruction::Wgmma; }
bool isMma(S s) { return s.instruction == Instruction::MmaSync; }
bool isFfma(S s) { return s.instruction == Instruction::FFMA; }
bool isGemv(S s) { return s.instruction == Instruction::Gemv; }
bool halfOperands(W w) {
  return w.a == w.b && (w.a == DType::F16 || w.a == DType::BF16);
}
const char *notKContiguous(W w) {
  return !w.aKContiguous ? "A is stored [K, M] (transposed)"
                         : "B is stored [K, N] (row-major)";
}

/// Why the tensor-core schedule `s` does not fit the shared memory of `t`:
/// the stages, the staged epilogue tile, or (persistent grids) both.
std::string sharedMemoryReason(S s, W w, T t) {
  int64_t pipeline = pipelineSharedBytes(s, w);
  int64_t staging = epilogueSharedBytes(s, w);
  std::string stages = cat(s.stages, " stages of ", s.blockM, "x", s.blockK,
                           " and ", s.blockN, "x", s.blockK, " tiles");
  std::string tile = cat("the ", s.blockM, "x", s.blockN, " ", toString(w.c),
                         " epilogue tile (vector_width = ", s.vectorWidth, ")");
  std::string what;
  if (s.persistent && staging)
    what = cat(stages, " plus ", tile, " need ", pipeline + staging);
  else if (staging > pipeline)
    what = cat(tile, " needs ", staging);
  else
    what = cat(stages, " need ", pipeline);
  what = cat(what, " bytes of shared memory");
  if (int64_t barriers = barrierSharedBytes(s))
    what = cat(what, " (+ ", barriers, " bytes of mbarriers)");
  return cat(what, "; ", t.chip, " allows ", t.maxSharedPerBlock, " per block");
}

/// Chunks of 16 bytes (8 16-bit elements) of the A and B tiles, each a
/// multiple of the block's threads (cp.async: every thread copies as many).
Reason chunksPerThread(S s, const char *who) {
  for (auto [name, rows] : {std::pair<const char *, int64_t>{"A", s.blockM},
                            std::pair<const char *, int64_t>{"B", s.blockN}}) {
    int64_t chunks = rows * s.blockK / 8;
    if (chunks % s.threads())
      return cat(who, ": the ", name, " tile has ", chunks,
                 " 16-byte chunks, not a multiple of the ", s.threads(),
                 " threads");
  }
  return ok;
}

Reason domainOf(const char *name, int64_t value,
                const std::vector<int64_t> &domain) {
  if (!contains(domain, value))
    return cat(name, " = ", value, " is not in its domain ", list(domain));
  return ok;
}

const std::vector<Constraint> kConstraints = {
    // --- Combinations of the enumerated parameters, then the domains.
    {"tma.wgmma-only", "copy = tma: instruction = wgmma (sm_90a)",
     [](S s, W, T) -> Reason {
       if (s.copy == CopyEngine::TMA && !isWgmma(s))
         return cat("copy = tma is implemented for wgmma (sm_90a) only, not ",
                    toString(s.instruction), "; use cp_async or sync");
       return ok;
     }},
    {"warp-specialize.tma", "warp_specialize = true: wgmma with copy = tma",
     [](S s, W, T) -> Reason {
       if (s.warpSpecialize && (!isWgmma(s) || s.copy != CopyEngine::TMA))
         return cat("warp_specialize = true needs wgmma with copy = tma (its "
                    "producer warp issues TMA copies), not ",
                    toString(s.instruction), " with copy = ", toString(s.copy));
       return ok;
     }},
    {"domains",
     "every parameter in its domain (domains: block_m, block_n, block_k, "
     "warp_m, warp_n, stages, split_k, swizzle, vector_width)",
     [](S s, W, T) -> Reason {
       for (Reason r : {domainOf("block_m", s.blockM, kBlockM),
                        domainOf("block_n", s.blockN, kBlockN),
                        domainOf("block_k", s.blockK, kBlockK),
                        domainOf("warp_m", s.warpM, kWarpM),
                        domainOf("warp_n", s.warpN, kWarpN),
                        domainOf("stages", s.stages, kStages),
                        domainOf("split_k", s.splitK, kSplitK),
                        domainOf("swizzle", s.swizzle, kSwizzle),
                        domainOf("vector_width", s.vectorWidth, kVectorWidth)})
         if (r)
           return r;
       return ok;
     }},
    {"workload.nonempty", "M, N, K >= 1",
     [](S, W w, T) -> Reason {
       if (w.m <= 0 || w.n <= 0 || w.k <= 0)
         return cat("the workload ", w.m, "x", w.n, "x", w.k, " is empty");
       return ok;
     }},
    // --- The TMA store epilogue.
    {"tma-store.wgmma", "tma_store = true: instruction = wgmma",
     [](S s, W, T) -> Reason {
       if (s.tmaStore && !isWgmma(s))
         return cat("tma_store = true is implemented for wgmma (sm_90a) "
                    "only, not ",
                    toString(s.instruction));
       return ok;
     }},
    {"tma-store.staged",
     "tma_store = true: vector_width > 2 (it stores the staged epilogue tile)",
     [](S s, W, T) -> Reason {
       if (s.tmaStore && !stagedEpilogue(s))
         return cat("tma_store = true stores the staged epilogue tile: "
                    "vector_width must be above 2, got ",
                    s.vectorWidth);
       return ok;
     }},
    {"tma-store.box",
     "tma_store = true: block_n * sizeof(C dtype) a multiple of 32 (the tile "
     "is stored as boxes of 128, 64 or 32 bytes of columns, the largest "
     "dividing it, swizzled as wide)",
     [](S s, W w, T) -> Reason {
       if (s.tmaStore && !tmaStoreSwizzleBytes(s.blockN * bytesOf(w.c)))
         return cat("tma_store = true stores boxes of 32 to 128 bytes of "
                    "columns: block_n * sizeof(",
                    toString(w.c), ") (", s.blockN * bytesOf(w.c),
                    " bytes) must be a multiple of 32");
       return ok;
     }},
    {"tma-store.pitch", "tma_store = true: N * sizeof(C dtype) % 16 == 0",
     [](S s, W w, T) -> Reason {
       if (s.tmaStore && (w.n * bytesOf(w.c)) % 16)
         return cat("tma_store = true needs C's row pitch to be a multiple "
                    "of 16 bytes (TMA): N (",
                    w.n, ") must be a multiple of ", 16 / bytesOf(w.c), " for ",
                    toString(w.c));
       return ok;
     }},
    {"tma-store.dims", "tma_store = true: M, N <= 2^32",
     [](S s, W w, T) -> Reason {
       if (s.tmaStore && std::max(w.m, w.n) > (int64_t(1) << 32))
         return cat("TMA tensor maps take dimensions up to 2^32; C is ", w.m,
                    "x", w.n);
       return ok;
     }},
    // --- The block's warps and the epilogue's stores.
    {"warp-grid", "block_m % warp_m == 0 and block_n % warp_n == 0",
     [](S s, W, T) -> Reason {
       if (s.blockM % s.warpM)
         return cat("block_m (", s.blockM, ") must be a multiple of warp_m (",
                    s.warpM, ")");
       if (s.blockN % s.warpN)
         return cat("block_n (", s.blockN, ") must be a multiple of warp_n (",
                    s.warpN, ")");
       return ok;
     }},
    {"threads", "32 * num_warps <= max_threads_per_block",
     [](S s, W, T t) -> Reason {
       if (s.threads() > t.maxThreadsPerBlock)
         return cat(s.numWarps(), " warps (", s.threads(),
                    " threads) exceed the block limit of ",
                    t.maxThreadsPerBlock, " threads");
       return ok;
     }},
    {"store.width", "vector_width * sizeof(C dtype) <= 16 (the widest store)",
     [](S s, W w, T) -> Reason {
       if (s.vectorWidth * bytesOf(w.c) > 16)
         return cat("vector_width = ", s.vectorWidth, " ", toString(w.c),
                    " outputs make ", s.vectorWidth * bytesOf(w.c),
                    "-byte stores; the widest store is 16 bytes");
       return ok;
     }},
    {"store.alignment", "vector_width > 1: N % vector_width == 0",
     [](S s, W w, T) -> Reason {
       if (s.vectorWidth > 1 && w.n % s.vectorWidth)
         return cat("vector_width = ", s.vectorWidth,
                    " needs N to be a multiple of it (N = ", w.n,
                    "), so that vector stores stay aligned");
       return ok;
     }},
    {"persistent", "persistent = true: wgmma, split_k = 1",
     [](S s, W, T) -> Reason {
       if (s.persistent && (!isWgmma(s) || s.splitK != 1))
         return cat("persistent = true is implemented for wgmma with split_k "
                    "= 1 (got ",
                    toString(s.instruction), ", split_k = ", s.splitK, ")");
       return ok;
     }},
    // --- Split-K.
    {"split-k.tiles",
     "split_k <= T and (split_k - 1) * ceil(T / split_k) < T, T = ceil(K / "
     "block_k) (every split computes some K tiles)",
     [](S s, W w, T) -> Reason {
       if (s.splitK <= 1)
         return ok;
       int64_t kTiles = ceilDiv(w.k, s.blockK);
       if (s.splitK > kTiles)
         return cat("split_k = ", s.splitK, " exceeds the ", kTiles,
                    " K tiles (ceil(K / block_k) = ceil(", w.k, " / ", s.blockK,
                    ")): a split would compute nothing");
       // Splits take ceil(T / S) K tiles each: the last must start inside K.
       int64_t perSplit = ceilDiv(kTiles, s.splitK);
       if ((s.splitK - 1) * perSplit >= kTiles)
         return cat("split_k = ", s.splitK, " over ", kTiles,
                    " K tiles gives each split ", perSplit,
                    ", so the last splits would compute nothing; use a "
                    "split_k with (split_k - 1) * ceil(K tiles / split_k) < "
                    "K tiles");
       return ok;
     }},
    {"split-k.workspace",
     "split_k * M * N <= 2^30 (the f32 partial sums of the workspace)",
     [](S s, W w, T) -> Reason {
       // Partials of 2^30 f32 (4 GiB) are far beyond any useful split.
       if (s.splitK > 1 && w.m * w.n > (int64_t(1) << 30) / s.splitK)
         return cat("split_k = ", s.splitK, " needs ", s.splitK, " x ", w.m,
                    " x ", w.n, " f32 partial sums, more than the 4 GiB limit");
       return ok;
     }},
    {"grid", "ceil(M / block_m) * ceil(N / block_n) * split_k <= 2^31 - 1",
     [](S s, W w, T) -> Reason {
       if (gridBlocks(s, w) > kMaxGridBlocks)
         return cat("the grid of ", gridBlocks(s, w), " blocks exceeds ",
                    kMaxGridBlocks);
       return ok;
     }},
    // --- gemv.
    {"gemv.copy", "gemv: copy = sync, stages = 1",
     [](S s, W, T) -> Reason {
       if (isGemv(s) && (s.copy != CopyEngine::Sync || s.stages != 1))
         return std::string("gemv schedules take copy = sync and stages = 1 "
                            "(operands are read from global memory)");
       return ok;
     }},
    {"gemv.dtypes", "gemv: A and B of one type",
     [](S s, W w, T) -> Reason {
       if (isGemv(s) && w.a != w.b)
         return cat("gemv needs A and B of one type (got ", toString(w.a),
                    " x ", toString(w.b), ")");
       return ok;
     }},
    {"gemv.k-contiguous", "gemv: A and B both contiguous along K",
     [](S s, W w, T) -> Reason {
       if (isGemv(s) && (!w.aKContiguous || !w.bKContiguous))
         return cat("gemv reads A and B along K with 16-byte loads: both "
                    "must be contiguous along K; ",
                    notKContiguous(w));
       return ok;
     }},
    {"gemv.k-vectors", "gemv: K a multiple of 16 / sizeof(dtype)",
     [](S s, W w, T) -> Reason {
       int64_t perLoad = 16 / bytesOf(w.a);
       if (isGemv(s) && w.k % perLoad)
         return cat("gemv's 16-byte loads hold ", perLoad, " ", toString(w.a),
                    " elements: K (", w.k, ") must be a multiple of ", perLoad);
       return ok;
     }},
    {"gemv.block-k",
     "gemv: block_k * sizeof(dtype) a multiple of 16 and at most 64",
     [](S s, W w, T) -> Reason {
       int64_t perLoad = 16 / bytesOf(w.a);
       if (isGemv(s) && (s.blockK % perLoad || s.blockK * bytesOf(w.a) > 64))
         return cat("gemv: each lane loads block_k elements per row and K "
                    "step as 16-byte vectors, 16 to 64 bytes: block_k must "
                    "be a multiple of ",
                    perLoad, " and at most ", 64 / bytesOf(w.a), " for ",
                    toString(w.a), ", got ", s.blockK);
       return ok;
     }},
    {"gemv.warp-m", "gemv: warp_m == block_m",
     [](S s, W, T) -> Reason {
       if (isGemv(s) && s.warpM != s.blockM)
         return cat("gemv: every warp computes all of the block's rows: "
                    "warp_m must equal block_m (",
                    s.blockM, "), got ", s.warpM);
       return ok;
     }},
    {"gemv.store", "gemv: vector_width = 1",
     [](S s, W, T) -> Reason {
       if (isGemv(s) && s.vectorWidth != 1)
         return cat("gemv stores one output per lane: vector_width must be "
                    "1, got ",
                    s.vectorWidth);
       return ok;
     }},
    {"gemv.registers",
     "gemv: min(block_m, M) * warp_n <= 64 accumulators per lane, and the "
     "register budget (accumulators + loaded vectors + 42 <= min(255, 65536 "
     "/ threads))",
     [](S s, W w, T t) -> Reason {
       if (!isGemv(s))
         return ok;
       int64_t rows = std::min(s.blockM, w.m);
       int64_t accumulators = rows * s.warpN;
       if (accumulators > kMaxAccumulators / 2)
         return cat("gemv: min(block_m, M) x warp_n = ", rows, " x ", s.warpN,
                    " accumulators per lane; at most ", kMaxAccumulators / 2);
       // The step's loaded vectors live beside the accumulators.
       int64_t loaded = (rows + s.warpN) * s.blockK * bytesOf(w.a) / 4;
       if (auto r = registerBudget(accumulators + loaded + kRegisterOverhead,
                                   s.threads(), t.maxRegistersPerThread))
         return "gemv: " + *r;
       return ok;
     }},
    // --- ffma (SIMT).
    {"ffma.copy", "ffma: copy = sync, stages 1 or 2",
     [](S s, W, T) -> Reason {
       if (isFfma(s) && (s.copy != CopyEngine::Sync || s.stages > 2))
         return std::string("ffma schedules take copy = sync and stages 1 or "
                            "2 (2: the next K tile is loaded into registers "
                            "while this one is computed)");
       return ok;
     }},
    {"ffma.threads",
     "ffma: threads laid out (32 * num_warps / 16) x 16: block_m a multiple "
     "of the rows, block_n of 16",
     [](S s, W, T) -> Reason {
       if (!isFfma(s))
         return ok;
       int64_t rows = s.threads() / kSimtThreadsN;
       if (rows == 0 || s.blockN % kSimtThreadsN || s.blockM % rows)
         return cat("ffma lays ", s.threads(), " threads out as ", rows, " x ",
                    kSimtThreadsN, ": block_m (", s.blockM,
                    ") must be a multiple of ", rows, " and block_n (",
                    s.blockN, ") of ", kSimtThreadsN);
       return ok;
     }},
    {"ffma.store",
     "ffma: vector_width 1, or 4 when each thread's tile comes in 4 x 4 "
     "chunks",
     [](S s, W, T) -> Reason {
       if (!isFfma(s))
         return ok;
       int64_t rows = s.threads() / kSimtThreadsN;
       bool chunked =
           (s.blockM / rows) % 4 == 0 && (s.blockN / kSimtThreadsN) % 4 == 0;
       if (s.vectorWidth == 2 || s.vectorWidth == 8 ||
           (s.vectorWidth == 4 && !chunked))
         return cat("ffma stores 1 or 4 elements at a time; 4 needs each "
                    "thread's tile in 4 x 4 chunks (block_m / ",
                    rows, " and block_n / ", kSimtThreadsN,
                    " multiples of 4), got vector_width = ", s.vectorWidth);
       return ok;
     }},
    {"ffma.registers",
     "ffma: at most 64 outputs per thread, and the register budget "
     "(outputs + operands + 42 <= min(255, 65536 / threads))",
     [](S s, W, T t) -> Reason {
       if (!isFfma(s))
         return ok;
       int64_t rows = s.threads() / kSimtThreadsN;
       int64_t perThread = (s.blockM / rows) * (s.blockN / kSimtThreadsN);
       if (perThread > kMaxAccumulators / 2)
         return cat("ffma: each thread would own ", perThread,
                    " outputs; at most ", kMaxAccumulators / 2,
                    " fit in registers");
       if (auto r = registerBudget(
               perThread + s.blockM / rows + s.blockN / kSimtThreadsN +
                   kRegisterOverhead +
                   // stages = 2: the next tile's elements.
                   (s.stages - 1) *
                       ceilDiv((s.blockM + s.blockN) * s.blockK, s.threads()),
               s.threads(), t.maxRegistersPerThread))
         return "ffma: " + *r;
       return ok;
     }},
    {"ffma.shared",
     "ffma: shared bytes = stages * block_k * (block_m + block_n) * "
     "sizeof(dtype) <= max_static_shared",
     [](S s, W w, T t) -> Reason {
       int64_t smem = sharedBytes(s, w);
       if (isFfma(s) && smem > t.maxStaticShared)
         return cat("ffma stages ", smem,
                    " bytes of shared memory; the static limit is ",
                    t.maxStaticShared);
       return ok;
     }},
    // --- wgmma.
    {"wgmma.target", "wgmma: sm_90a",
     [](S s, W, T t) -> Reason {
       if (isWgmma(s) && !t.hasWgmma)
         return cat("wgmma needs sm_90a (the target is ", t.chip, ")");
       return ok;
     }},
    {"wgmma.dtypes",
     "wgmma: A and B both f16 or both bf16, or f32 with tf32 allowed",
     [](S s, W w, T) -> Reason {
       bool tf32 = w.a == DType::F32 && w.b == DType::F32 && w.tf32;
       if (isWgmma(s) && !halfOperands(w) && !tf32)
         return cat("wgmma needs f16 or bf16 operands of one type, or f32 "
                    "ones with TF32 allowed (kopt.matmul {tf32}) (got ",
                    toString(w.a), " x ", toString(w.b), ")");
       return ok;
     }},
    {"wgmma.tf32-tma", "wgmma with f32 (TF32) operands: copy = tma",
     [](S s, W w, T) -> Reason {
       bool tf32 = w.a == DType::F32 && w.b == DType::F32 && w.tf32;
       if (isWgmma(s) && tf32 && s.copy != CopyEngine::TMA)
         return std::string("wgmma with TF32 operands reads them through "
                            "TMA: copy must be tma");
       return ok;
     }},
    {"wgmma.warp-tile",
     "wgmma: warp_m in {64, 128}, warp_n % 8 == 0 (m64nNk16)",
     [](S s, W, T) -> Reason {
       if (!isWgmma(s))
         return ok;
       if (s.warpM != 64 && s.warpM != 128)
         return cat("wgmma: a warpgroup's tile has 64 or 128 rows (one or "
                    "two m64 instructions), got warp_m = ",
                    s.warpM);
       if (s.warpN % 8)
         return cat("wgmma m64nNk16 takes N in multiples of 8: warp_n must "
                    "be one, got ",
                    s.warpN);
       return ok;
     }},
    {"wgmma.block-k",
     "wgmma: block_k one or two 128-byte swizzled rows ({64, 128} for 16-bit "
     "operands, {32, 64} for f32)",
     [](S s, W w, T) -> Reason {
       // 128-byte rows: 64 16-bit or 32 f32 elements per sub-tile.
       int64_t rowElements = 128 / bytesOf(w.a);
       if (isWgmma(s) && s.blockK != rowElements && s.blockK != 2 * rowElements)
         return cat("wgmma reads 128-byte swizzled rows of ", rowElements, " ",
                    toString(w.a), " elements: block_k must be ", rowElements,
                    " or ", 2 * rowElements, ", got ", s.blockK);
       return ok;
     }},
    {"wgmma.copy", "wgmma: copy = cp_async or tma, stages >= 2",
     [](S s, W, T) -> Reason {
       if (isWgmma(s) && (s.copy == CopyEngine::Sync || s.stages < 2))
         return std::string(
             "wgmma takes copy = cp_async or tma with stages >= 2");
       return ok;
     }},
    {"wgmma.k-contiguous", "wgmma: A and B both contiguous along K",
     [](S s, W w, T) -> Reason {
       if (isWgmma(s) && (!w.aKContiguous || !w.bKContiguous))
         return cat(
             "wgmma (K-major shared-memory tiles filled by ", toString(s.copy),
             ") needs both operands contiguous along K; ", notKContiguous(w));
       return ok;
     }},
    {"tma.dims", "copy = tma: M, N, K <= 2^32 (cuTensorMapEncodeTiled)",
     [](S s, W w, T) -> Reason {
       if (isWgmma(s) && s.copy == CopyEngine::TMA &&
           std::max({w.m, w.n, w.k}) > (int64_t(1) << 32))
         return cat("TMA tensor maps take dimensions up to 2^32; the "
                    "workload is ",
                    w.m, "x", w.n, "x", w.k);
       return ok;
     }},
    {"wgmma.k-pitch",
     "wgmma: K * sizeof(dtype) % 16 == 0 (TMA's row pitch, or cp.async's "
     "16-byte chunks)",
     [](S s, W w, T) -> Reason {
       if (!isWgmma(s) || w.k % (16 / bytesOf(w.a)) == 0)
         return ok;
       if (s.copy == CopyEngine::TMA)
         return cat("TMA needs the operands' row pitch (K elements) to be a "
                    "multiple of 16 bytes: K (",
                    w.k, ") must be a multiple of ", 16 / bytesOf(w.a));
       return cat("wgmma's cp.async copies move 16-byte chunks of 8 "
                  "elements: K (",
                  w.k, ") must be a multiple of 8");
     }},
    {"wgmma.registers",
     "wgmma: (warp_m / 64) * warp_n / 2 <= 128 accumulators per thread, and "
     "the register budget (accumulators + 42 <= min(255, 65536 / threads))",
     [](S s, W, T t) -> Reason {
       if (!isWgmma(s))
         return ok;
       int64_t accumulators = (s.warpM / 64) * s.warpN / 2;
       if (accumulators > kMaxAccumulators)
         return cat("the warpgroup tile ", s.warpM, "x", s.warpN, " needs ",
                    accumulators, " f32 accumulators per thread; at most ",
                    kMaxAccumulators, " fit in 255 registers");
       if (auto r = registerBudget(accumulators + kRegisterOverhead,
                                   s.threads(), t.maxRegistersPerThread))
         return cat("wgmma with the warpgroup tile ", s.warpM, "x", s.warpN,
                    " ", *r);
       return ok;
     }},
    {"wgmma.cp-async-chunks",
     "wgmma with copy = cp_async: block_m * block_k / 8 and block_n * "
     "block_k / 8 multiples of 32 * num_warps",
     [](S s, W, T) -> Reason {
       if (isWgmma(s) && s.copy != CopyEngine::TMA)
         return chunksPerThread(s, "wgmma");
       return ok;
     }},
    {"wgmma.shared",
     "wgmma: shared bytes = max(stages * (block_m + block_n) * block_k * "
     "sizeof(dtype), staged epilogue tile) (the sum when persistent) + 16 * "
     "stages with tma <= max_shared_per_block",
     [](S s, W w, T t) -> Reason {
       if (isWgmma(s) && sharedBytes(s, w) > t.maxSharedPerBlock)
         return sharedMemoryReason(s, w, t);
       return ok;
     }},
    // --- mma_sync.
    {"mma-sync.dtypes", "mma_sync: A and B both f16 or both bf16",
     [](S s, W w, T) -> Reason {
       if (isMma(s) && !halfOperands(w))
         return cat("mma_sync needs f16 or bf16 operands of one type (got ",
                    toString(w.a), " x ", toString(w.b),
                    "); f32 matmuls use ffma, or wgmma when kopt.matmul "
                    "allows tf32");
       return ok;
     }},
    {"mma-sync.tiles",
     "mma_sync: warp_m % 16 == 0, warp_n % 8 == 0, block_k % 16 == 0",
     [](S s, W, T) -> Reason {
       if (!isMma(s))
         return ok;
       if (s.warpM % kMmaM || s.warpN % kMmaN)
         return cat("the warp tile ", s.warpM, "x", s.warpN,
                    " must be made of whole ", kMmaM, "x", kMmaN, " mma tiles");
       if (s.blockK % kMmaK)
         return cat("block_k (", s.blockK,
                    ") must be a multiple of the mma K step (", kMmaK, ")");
       return ok;
     }},
    {"mma-sync.registers",
     "mma_sync: warp_m * warp_n / 32 <= 128 accumulators per thread, and the "
     "register budget (accumulators + fragments + 42 <= min(255, 65536 / "
     "threads))",
     [](S s, W, T t) -> Reason {
       if (!isMma(s))
         return ok;
       int64_t accumulators = s.warpM * s.warpN / 32;
       if (accumulators > kMaxAccumulators)
         return cat("the warp tile ", s.warpM, "x", s.warpN, " needs ",
                    accumulators, " f32 accumulators per thread; at most ",
                    kMaxAccumulators,
                    " fit beside the fragments in 255 registers");
       int64_t fragments = (s.warpM / kMmaM) * 4 + (s.warpN / kMmaN) * 2;
       if (auto r = registerBudget(accumulators + fragments + kRegisterOverhead,
                                   s.threads(), t.maxRegistersPerThread))
         return cat("mma_sync with the warp tile ", s.warpM, "x", s.warpN, " ",
                    *r);
       return ok;
     }},
    {"mma-sync.copy",
     "mma_sync: copy = sync <=> stages == 1; copy = cp_async: stages >= 2",
     [](S s, W, T) -> Reason {
       if (!isMma(s))
         return ok;
       if (s.copy == CopyEngine::Sync && s.stages != 1)
         return cat("stages = ", s.stages,
                    " needs asynchronous copies (copy = cp_async); copy = "
                    "sync takes stages = 1");
       if (s.copy == CopyEngine::CpAsync && s.stages < 2)
         return std::string("copy = cp_async needs stages >= 2 (one stage "
                            "filling while another is computed)");
       return ok;
     }},
    {"cp-async.operands",
     "mma_sync with copy = cp_async: A and B contiguous along K, K % 8 == 0, "
     "block_m * block_k / 8 and block_n * block_k / 8 multiples of 32 * "
     "num_warps",
     [](S s, W w, T) -> Reason {
       if (!isMma(s) || s.copy != CopyEngine::CpAsync)
         return ok;
       if (!w.aKContiguous || !w.bKContiguous)
         return cat("copy = cp_async needs both operands contiguous along "
                    "K; ",
                    notKContiguous(w), ": use copy = sync");
       if (w.k % 8)
         return cat("copy = cp_async moves 16-byte chunks of 8 elements: K (",
                    w.k, ") must be a multiple of 8; use copy = sync");
       return chunksPerThread(s, "copy = cp_async");
     }},
    {"mma-sync.shared",
     "mma_sync: shared bytes = max(stages * (block_m + block_n) * (block_k + "
     "8) * 2, staged epilogue tile) <= max_shared_per_block",
     [](S s, W w, T t) -> Reason {
       if (isMma(s) && sharedBytes(s, w) > t.maxSharedPerBlock)
         return sharedMemoryReason(s, w, t);
       return ok;
     }},
};

} // namespace

const std::vector<Constraint> &constraints() { return kConstraints; }

const Constraint *findConstraint(const std::string &id) {
  for (const Constraint &c : kConstraints)
    if (id == c.id)
      return &c;
  return nullptr;
}

std::string Rejection::message() const {
  return reason + " [" + constraint->id + "]";
}

std::optional<Rejection> check(const MatmulSchedule &s, const MatmulWorkload &w,
                               const Target &t) {
  for (const Constraint &c : kConstraints)
    if (std::optional<std::string> reason = c.check(s, w, t))
      return Rejection{&c, std::move(*reason)};
  return std::nullopt;
}

std::optional<std::string> validate(const MatmulSchedule &s,
                                    const MatmulWorkload &w, const Target &t) {
  if (std::optional<Rejection> r = check(s, w, t))
    return r->message();
  return std::nullopt;
}

nlohmann::json constraintsJSON() {
  nlohmann::json j = nlohmann::json::array();
  for (const Constraint &c : kConstraints)
    j.push_back({{"id", c.id}, {"rule", c.rule}});
  return j;
}

} // namespace kopt::schedule
