//===- Row.cpp - kernels for operators over the last dimension ------------===//
//
// reduce, softmax, rmsnorm and layernorm lower to a chain of linalg.generic ops
// over one row (kopt-lower-to-linalg):
//   A. row reductions: iterators [parallel..., reduction], an f32 accumulator
//      initialised by linalg.fill with the combiner's identity;
//   B. row-scalar maps over the leading dimensions (e.g. rsqrt(ss / n + eps));
//   C. full maps over the whole domain (e.g. x * rstd * w), which write a
//      result row or feed later generics (the elementwise ops kopt-fuse put in
//      front of or after a row op: add + RMSNorm, scale + mask + softmax).
//
// Launch shape (planRow): each row has T threads (a power of two, 1 to 1024),
// each taking V columns per 16-byte access (V = 1 when the row length or an
// access forbids vectors): one access per thread for rows of at most 32
// accesses, a warp for rows a warp holds in registers (at most 32 C_max
// accesses), and 16 elements per thread (16 / V accesses, at most C_max) for
// longer rows, which span warps anyway. A block holds R rows (T * R threads,
// 256 when the rows allow, at least a warp), so short rows (head_dim 128, 8
// experts) share warps instead of leaving most of a block idle; with a row per
// block and fewer rows than two blocks per SM, T doubles while a thread has
// more than one chunk (decode rows spread over more threads). When a row fits
// in registers, at most C_max = clamp(32 / V, 1, 8) accesses per thread,
// thread t of a row owns the C = ceil(n / (T V)) chunks at columns tV + i T V:
// every input element is loaded once, and every value of the row (the input
// of a softmax, the sum of an add fused before a norm) stays in registers
// across the reductions. The last chunk may run past the row: its loads are
// clamped inside the row, its values do not enter reductions, it stores
// nothing. Longer rows (T = 1024 and C > C_max, and on chips without clusters
// or past 8 blocks below) loop: each reduction and each stored map runs a
// strided loop over the row (thread t at columns tV, then T V further on,
// ...), recomputing fused values and reloading inputs in each loop (from L2
// after the first).
//
// A row that 1024 threads cannot hold in registers, or a few long rows that
// would leave most SMs idle (decode: vocabulary softmax at M = 1-64), splits
// across a thread-block cluster of S = 2, 4 or 8 blocks (sm_90 and sm_90a
// only; 8 is the portable maximum, CUDA C++ Programming Guide, "Thread Block
// Clusters"): block k of the cluster takes row lanes k T .. k T + T - 1, so
// the row has S T lanes and the chunks above stride by S T V. S doubles from
// 1 until the row fits in registers and, while the grid has fewer blocks than
// the GPU has SMs, until each lane has one chunk. The cluster shape is fixed
// at compile time (known_cluster_size, PTX .reqnctapercluster), so a plain
// launch of S * rows blocks works.
//
// A reduction combines its payload's per-thread partials with the payload's
// combiner through a shuffle tree over the row's lanes (xor T/2 .. 1, T <= 32),
// or a warp tree then shared memory across the row's warps (T > 32); every
// thread of the row ends with the row's value. In a cluster, thread 0 of
// each block then writes its block's value into slot k (its cluster rank) of
// every block's shared memory (st.shared::cluster through mapa), a cluster
// barrier (arrive.release / wait.acquire) makes the S values visible, and
// every thread combines slots 0 .. S-1 in that order, so all blocks hold the
// same row value; each reduction has its own slots, so no block overwrites a
// slot another block has yet to read. B payloads run redundantly in every
// thread. Rows past the last one (rows not a multiple of R) compute on
// the last row and store nothing.
//
//===----------------------------------------------------------------------===//

#include "Common.h"

#include "kopt/Transforms/KernelBuilders.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace kopt;
using namespace kopt::kb;

static constexpr int64_t kWarpSize = 32;
static constexpr int64_t kMaxThreadsPerRow = 1024;
/// Threads per block the plan aims at when rows are short.
static constexpr int64_t kBlockThreads = 256;
/// Blocks below which the plan puts fewer rows in a block: two per SM of an
/// H200 (132 SMs).
static constexpr int64_t kMinBlocks = 2 * 132;
/// SMs of an H200: below this many blocks, decode rows split across clusters.
static constexpr int64_t kSMs = 132;
/// The largest portable thread-block cluster (CUDA C++ Programming Guide,
/// "Thread Block Clusters").
static constexpr int64_t kMaxClusterSize = 8;
/// Elements a thread keeps in registers per row value when the row fits.
static constexpr int64_t kCachedElements = 32;
/// Elements per thread of rows that span several warps.
static constexpr int64_t kSpreadElements = 16;
static_assert(kMaxClusterSize * kMaxThreadsPerRow * kCachedElements ==
                  kMaxRegisterRow,
              "kopt-fuse's limit for fused producers is the register row");

namespace {
/// How a row kernel covers its rows (see the file comment).
struct RowPlan {
  int64_t threadsPerRow = 1; // T
  int64_t rowsPerBlock = 1;  // R
  int64_t chunks = 1;        // C: accesses per thread per row value
  bool cached = true;        // the row lives in registers (else: loops)
  int64_t clusterSize = 1;   // S: blocks of a cluster that share a row
  /// Lanes over a row: S T.
  int64_t rowLanes() const { return clusterSize * threadsPerRow; }
};
} // namespace

/// `maxCluster`: the largest cluster the target allows (1: none).
static RowPlan planRow(int64_t rows, int64_t n, int64_t vec,
                       int64_t maxCluster) {
  RowPlan p;
  int64_t vectors = llvm::divideCeil(n, vec);
  int64_t maxChunks = std::clamp<int64_t>(kCachedElements / vec, 1, 8);
  // Threads per row, as measured best on the H200 over 1-8 chunks and
  // 128-1024 threads per block (bench/results/2026-12-03-row-clusters-h200/
  // row-plans.md): a row of at most 32 accesses takes one per thread; a row
  // one warp holds takes a warp (shuffles only, no shared memory); longer
  // rows, which cross warps anyway, spread to kSpreadElements per thread.
  if (vectors <= kWarpSize)
    p.threadsPerRow = llvm::PowerOf2Ceil(vectors);
  else if (vectors <= kWarpSize * maxChunks)
    p.threadsPerRow = kWarpSize;
  else
    p.threadsPerRow = std::min<int64_t>(
        kMaxThreadsPerRow,
        llvm::PowerOf2Ceil(
            llvm::divideCeil(vectors, std::clamp<int64_t>(kSpreadElements / vec,
                                                          1, maxChunks))));
  p.chunks = llvm::divideCeil(vectors, p.threadsPerRow);
  p.cached = p.chunks <= maxChunks;
  int64_t t = p.threadsPerRow;
  p.rowsPerBlock = std::max<int64_t>(1, kBlockThreads / t);
  // Fewer rows per block while that keeps a warp per block and the grid is
  // too small to fill the GPU; at least a full warp per block (the shuffles
  // need all 32 lanes).
  while (p.rowsPerBlock > 1 && t * (p.rowsPerBlock / 2) >= kWarpSize &&
         llvm::divideCeil(rows, p.rowsPerBlock) < kMinBlocks)
    p.rowsPerBlock /= 2;
  p.rowsPerBlock = std::max(p.rowsPerBlock, kWarpSize / std::min(t, kWarpSize));
  // Still too few blocks with a row per block (decode: M = 1-64 rows): more
  // threads per row, fewer chunks each, so the row's loads spread over more
  // of the GPU.
  while (p.rowsPerBlock == 1 && rows < kMinBlocks && p.cached && p.chunks > 1 &&
         p.threadsPerRow < kMaxThreadsPerRow) {
    p.threadsPerRow *= 2;
    p.chunks = llvm::divideCeil(vectors, p.threadsPerRow);
  }
  // A row per block of 1024 threads that still does not fit in registers, or
  // that leaves SMs idle: split it across a cluster.
  if (maxCluster > 1 && p.rowsPerBlock == 1 &&
      p.threadsPerRow == kMaxThreadsPerRow) {
    auto chunksAt = [&](int64_t s) {
      return llvm::divideCeil(vectors, s * kMaxThreadsPerRow);
    };
    int64_t s = 1;
    while (s < maxCluster &&
           (chunksAt(s) > maxChunks || (rows * s < kSMs && chunksAt(s) > 1)))
      s *= 2;
    p.clusterSize = s;
    p.chunks = chunksAt(s);
    p.cached = p.chunks <= maxChunks;
  }
  return p;
}

/// The binary op that combines the payload's value with the accumulator, if the
/// payload has the form `yield comb(f(inputs), acc)` with a supported comb.
static Operation *findCombiner(linalg::GenericOp g) {
  Block *body = g.getBody();
  Value acc = body->getArguments().back();
  Operation *comb = body->getTerminator()->getOperand(0).getDefiningOp();
  if (!comb || comb->getNumOperands() != 2 || comb->getNumResults() != 1)
    return nullptr;
  if (!isa<arith::AddFOp, arith::MulFOp, arith::MaximumFOp, arith::MinimumFOp,
           arith::MaxNumFOp, arith::MinNumFOp>(comb))
    return nullptr;
  if ((comb->getOperand(0) == acc) == (comb->getOperand(1) == acc))
    return nullptr;
  return comb;
}

static Value combine(OpBuilder &b, Location loc, Operation *comb, Value x,
                     Value y) {
  OperationState state(loc, comb->getName(), ValueRange{x, y},
                       comb->getResultTypes(), comb->getAttrs());
  return b.create(state)->getResult(0);
}

namespace {

/// V consecutive columns of a row that one thread handles in one access.
struct Chunk {
  Value column; // the first lane's column, inside the row
  Value valid;  // i1: the chunk is part of the row (null: always)
  /// Inputs loaded at this chunk, per memref and indexing map, V scalars.
  DenseMap<std::pair<Value, AffineMap>, SmallVector<Value>> loaded;
  /// Full-domain values computed at this chunk, V scalars.
  DenseMap<Value, SmallVector<Value>> computed;
};

class RowKernelBuilder {
public:
  RowKernelBuilder(KernelOp kernel, gpu::GPUFuncOp func,
                   const schedule::Target &target)
      : kernel(kernel), func(func), target(target), io(kernel, func),
        b(OpBuilder::atBlockBegin(&func.front())), loc(kernel.getLoc()) {}

  FailureOr<LaunchConfig> build();

private:
  /// The V lanes of input `o` of `g` at chunk `c`.
  FailureOr<SmallVector<Value>> lanesOf(linalg::GenericOp g, OpOperand *o,
                                        Chunk &c);
  /// The V lanes of every input of `g` at chunk `c`.
  FailureOr<SmallVector<SmallVector<Value>>> inputsAt(linalg::GenericOp g,
                                                      Chunk &c);
  /// The row's first thread stores the row value `v` of `result` when
  /// `result` is a kernel result and the row exists.
  void storeRowValue(Value result, Value v);
  /// The V lanes of the full-domain value `v` (a result of a C generic of
  /// the kernel) at chunk `c`, computed once per chunk.
  FailureOr<SmallVector<Value>> computeAt(Value v, Chunk &c);
  /// Runs `step` over every chunk of the thread's row: unrolled over the
  /// cached chunks, or in a strided loop (a fresh chunk per iteration)
  /// carrying `init`. Returns the values after the last chunk.
  FailureOr<SmallVector<Value>> overChunks(
      ValueRange init,
      function_ref<FailureOr<SmallVector<Value>>(Chunk &, ValueRange)> step);
  /// The indices of the element at `column` of this thread's row.
  SmallVector<Value> rowElement(Value column) const;
  Value rowReduce(Operation *comb, Value v, Value identity);
  /// Combines the blocks' values `v` of the row across the cluster.
  Value clusterReduce(Operation *comb, Value v);
  /// Stores `v` at `indices` of `mem` where `cond` holds (null: always).
  void storeIf(Value cond, ValueRange values, Value mem, ValueRange indices);
  Value andOf(Value x, Value y);

  LogicalResult buildReduction(linalg::GenericOp g);
  LogicalResult buildRowMap(linalg::GenericOp g);
  LogicalResult buildFullMap(linalg::GenericOp g);

  KernelOp kernel;
  gpu::GPUFuncOp func;
  const schedule::Target &target;
  KernelIO io;
  OpBuilder b;
  Location loc;

  SmallVector<int64_t> shape; // the full iteration domain [rows..., n]
  RowPlan plan;
  int64_t vec = 1; // columns per access (16-byte accesses when possible)
  Value lane, rowInBlock, smem;
  Value laneInRow;   // the thread's lane over the row (0 .. S T - 1)
  Value blockLane;   // the thread's lane among the row's threads of its block
  Value clusterRank; // the block's rank in its cluster (S > 1)
  Value slots;       // shared f32 slots of the cluster reductions (S > 1)
  int64_t clusterReductions = 0;  // cluster reductions built so far
  Value rowValid;                 // i1: this thread's row exists (or null)
  Value firstColumn;              // laneInRow * vec
  SmallVector<Value> rowIdx;      // this thread's row, per leading dim
  SmallVector<Chunk> chunks;      // the cached chunks (cached plans)
  DenseMap<Value, Value> scalars; // row tensors -> this row's scalar
  DenseMap<Value, linalg::GenericOp> fullMaps; // C generics by result
};

} // namespace

Value RowKernelBuilder::andOf(Value x, Value y) {
  if (!x)
    return y;
  if (!y)
    return x;
  return arith::AndIOp::create(b, loc, x, y);
}

FailureOr<SmallVector<Value>>
RowKernelBuilder::lanesOf(linalg::GenericOp g, OpOperand *o, Chunk &c) {
  Value v = o->get();
  AffineMap map = g.getMatchingIndexingMap(o);
  if (Value s = scalars.lookup(v)) {
    // A row value: it must be read at this row.
    // The row map: (d0, ..., d_{r-1}, d_r) -> (d0, ..., d_{r-1}).
    SmallVector<AffineExpr> rowExprs;
    for (unsigned i = 0; i < rowIdx.size(); ++i)
      rowExprs.push_back(b.getAffineDimExpr(i));
    if (map != AffineMap::get(map.getNumDims(), 0, rowExprs, b.getContext()))
      return g.emitOpError(
          "reads a row value with an unsupported indexing map");
    return SmallVector<Value>(vec, s);
  }
  if (fullMaps.count(v)) {
    if (!map.isIdentity())
      return g.emitOpError("input #")
             << o->getOperandNumber()
             << " reads a value the kernel computes through a map other "
                "than the identity";
    return computeAt(v, c);
  }
  Value mem = io.memrefOf(v);
  if (!mem)
    return g.emitOpError("input #")
           << o->getOperandNumber()
           << " is neither a kernel argument nor a value computed earlier";
  auto key = std::make_pair(mem, map);
  if (auto it = c.loaded.find(key); it != c.loaded.end())
    return it->second;
  FailureOr<Lanes> l = loadLanes(b, loc, mem, map, rowElement(c.column), vec);
  if (failed(l))
    return g.emitOpError("unsupported indexing map for input #")
           << o->getOperandNumber();
  SmallVector<Value> lanes;
  for (int64_t i = 0; i < vec; ++i)
    lanes.push_back(l->lane(b, loc, i));
  c.loaded[key] = lanes;
  return lanes;
}

FailureOr<SmallVector<SmallVector<Value>>>
RowKernelBuilder::inputsAt(linalg::GenericOp g, Chunk &c) {
  SmallVector<SmallVector<Value>> ins;
  for (OpOperand *o : g.getDpsInputOperands()) {
    FailureOr<SmallVector<Value>> l = lanesOf(g, o, c);
    if (failed(l))
      return failure();
    ins.push_back(std::move(*l));
  }
  return ins;
}

void RowKernelBuilder::storeRowValue(Value result, Value v) {
  Value mem = io.memrefOf(result);
  if (!mem)
    return;
  Value isFirst = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                        laneInRow, indexConst(b, loc, 0));
  storeIf(andOf(isFirst, rowValid), v, mem, rowIdx);
}

FailureOr<SmallVector<Value>> RowKernelBuilder::computeAt(Value v, Chunk &c) {
  if (auto it = c.computed.find(v); it != c.computed.end())
    return it->second;
  linalg::GenericOp g = fullMaps.lookup(v);
  FailureOr<SmallVector<SmallVector<Value>>> ins = inputsAt(g, c);
  if (failed(ins))
    return failure();
  // The output block argument is unused (checked): bind it to a zero.
  Type outType = g.getBody()->getArguments().back().getType();
  Value unusedOut = arith::ConstantOp::create(b, loc, b.getZeroAttr(outType));
  SmallVector<Value> results;
  for (int64_t l = 0; l < vec; ++l) {
    SmallVector<Value> args;
    for (const SmallVector<Value> &in : *ins)
      args.push_back(in[l]);
    args.push_back(unusedOut);
    results.push_back(clonePayload(b, g, args));
  }
  c.computed[v] = results;
  return results;
}

FailureOr<SmallVector<Value>> RowKernelBuilder::overChunks(
    ValueRange init,
    function_ref<FailureOr<SmallVector<Value>>(Chunk &, ValueRange)> step) {
  if (plan.cached) {
    SmallVector<Value> carried(init);
    for (Chunk &c : chunks) {
      FailureOr<SmallVector<Value>> next = step(c, carried);
      if (failed(next))
        return failure();
      carried = std::move(*next);
    }
    return carried;
  }
  auto loop =
      scf::ForOp::create(b, loc, firstColumn, indexConst(b, loc, shape.back()),
                         indexConst(b, loc, plan.rowLanes() * vec), init);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  Chunk c;
  c.column = loop.getInductionVar();
  FailureOr<SmallVector<Value>> next = step(c, loop.getRegionIterArgs());
  if (failed(next))
    return failure();
  // A loop without iter_args was built with its scf.yield.
  if (!init.empty())
    scf::YieldOp::create(b, loc, *next);
  return SmallVector<Value>(loop.getResults());
}

SmallVector<Value> RowKernelBuilder::rowElement(Value column) const {
  SmallVector<Value> dims(rowIdx);
  dims.push_back(column);
  return dims;
}

Value RowKernelBuilder::rowReduce(Operation *comb, Value v, Value identity) {
  auto shuffleTree = [&](Value x, int64_t width) {
    return warpAllReduce(
        b, loc, x,
        [&](Value mine, Value other) {
          return combine(b, loc, comb, mine, other);
        },
        static_cast<int32_t>(width));
  };
  int64_t t = plan.threadsPerRow;
  if (t <= kWarpSize) {
    assert(plan.clusterSize == 1 && "clusters have 1024 threads per block");
    return t == 1 ? v : shuffleTree(v, t);
  }
  v = shuffleTree(v, kWarpSize);
  // Lane 0 of every warp of the row publishes its warp's value in the row's
  // slots; then every warp reduces its row's published values, so that all
  // threads hold the row's value.
  int64_t warpsPerRow = t / kWarpSize;
  Value base = indexConst(b, loc, 0);
  if (plan.rowsPerBlock > 1)
    base = arith::MulIOp::create(b, loc, rowInBlock,
                                 indexConst(b, loc, warpsPerRow));
  Value warp =
      arith::DivUIOp::create(b, loc, blockLane, indexConst(b, loc, kWarpSize));
  Value isLane0 = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, lane,
                                        indexConst(b, loc, 0));
  storeIf(isLane0, v, smem,
          arith::AddIOp::create(b, loc, base, warp).getResult());
  gpu::BarrierOp::create(b, loc);
  Value inRange = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, lane,
                                        indexConst(b, loc, warpsPerRow));
  Value slot = arith::AddIOp::create(
      b, loc, base,
      arith::MinUIOp::create(b, loc, lane,
                             indexConst(b, loc, warpsPerRow - 1)));
  Value published = memref::LoadOp::create(b, loc, smem, slot);
  Value x = arith::SelectOp::create(b, loc, inRange, published, identity);
  Value r = shuffleTree(x, kWarpSize);
  // The next reduction reuses the buffer.
  gpu::BarrierOp::create(b, loc);
  return plan.clusterSize > 1 ? clusterReduce(comb, r) : r;
}

Value RowKernelBuilder::clusterReduce(Operation *comb, Value v) {
  int64_t s = plan.clusterSize;
  int64_t base = clusterReductions++ * s;
  // The first remote store waits for the arrive at the kernel's start: every
  // block of the cluster has started, its shared memory exists.
  if (base == 0)
    NVVM::ClusterWaitOp::create(b, loc, b.getUnitAttr());
  Value isThread0 =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, threadIdX(b, loc),
                            indexConst(b, loc, 0));
  {
    auto ifOp = scf::IfOp::create(b, loc, isThread0, /*withElseRegion=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    auto i32 = b.getI32Type();
    auto i64 = b.getI64Type();
    Value slot =
        arith::AddIOp::create(b, loc, clusterRank, indexConst(b, loc, base));
    Value addr = arith::AddIOp::create(
        b, loc,
        arith::IndexCastUIOp::create(
            b, loc, i64,
            memref::ExtractAlignedPointerAsIndexOp::create(b, loc, slots)),
        arith::MulIOp::create(
            b, loc, arith::IndexCastUIOp::create(b, loc, i64, slot),
            arith::ConstantIntOp::create(b, loc, i64, 4).getResult()));
    Value local = LLVM::IntToPtrOp::create(
        b, loc, LLVM::LLVMPointerType::get(b.getContext(), 3), addr);
    auto ptr7 = LLVM::LLVMPointerType::get(b.getContext(), 7);
    for (int64_t k = 0; k < s; ++k) {
      Value remote = NVVM::MapaOp::create(
          b, loc, ptr7, local, arith::ConstantIntOp::create(b, loc, i32, k));
      LLVM::StoreOp::create(b, loc, v, remote);
    }
  }
  NVVM::ClusterArriveOp::create(b, loc, b.getUnitAttr());
  NVVM::ClusterWaitOp::create(b, loc, b.getUnitAttr());
  Value acc = memref::LoadOp::create(b, loc, slots, indexConst(b, loc, base));
  for (int64_t k = 1; k < s; ++k)
    acc = combine(
        b, loc, comb, acc,
        memref::LoadOp::create(b, loc, slots, indexConst(b, loc, base + k)));
  return acc;
}

void RowKernelBuilder::storeIf(Value cond, ValueRange values, Value mem,
                               ValueRange indices) {
  if (!cond) {
    storeLanes(b, loc, values, mem, indices);
    return;
  }
  auto ifOp = scf::IfOp::create(b, loc, cond, /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(ifOp.thenBlock());
  storeLanes(b, loc, values, mem, indices);
}

LogicalResult RowKernelBuilder::buildReduction(linalg::GenericOp g) {
  Operation *comb = findCombiner(g);
  if (!comb)
    return g.emitOpError(
        "reduction payload must end in acc = comb(value, acc) with "
        "comb one of addf, mulf, maximumf, minimumf, maxnumf, "
        "minnumf");
  Value init = fillValue(b, g.getDpsInitOperand(0)->get());
  if (!init)
    return g.emitOpError("reduction accumulator must be initialised by a "
                         "linalg.fill of a constant");
  if (plan.rowLanes() > kWarpSize && !init.getType().isF32())
    return g.emitOpError("row reductions across warps need an f32 "
                         "accumulator");
  FailureOr<SmallVector<Value>> partial = overChunks(
      init, [&](Chunk &c, ValueRange carried) -> FailureOr<SmallVector<Value>> {
        FailureOr<SmallVector<SmallVector<Value>>> ins = inputsAt(g, c);
        if (failed(ins))
          return failure();
        Value acc = carried.front();
        for (int64_t l = 0; l < vec; ++l) {
          SmallVector<Value> args;
          for (const SmallVector<Value> &in : *ins)
            args.push_back(in[l]);
          args.push_back(acc);
          acc = clonePayload(b, g, args);
        }
        // A chunk past the row's end leaves the partial as it was.
        if (c.valid)
          acc = arith::SelectOp::create(b, loc, c.valid, acc, carried.front());
        return SmallVector<Value>{acc};
      });
  if (failed(partial))
    return failure();
  Value row = rowReduce(comb, partial->front(), init);
  scalars[g.getResult(0)] = row;
  storeRowValue(g.getResult(0), row);
  return success();
}

LogicalResult RowKernelBuilder::buildRowMap(linalg::GenericOp g) {
  if (!g.getBody()->getArguments().back().use_empty())
    return g.emitOpError("row-scalar payloads must not read their output");
  SmallVector<Value> args;
  for (OpOperand *o : g.getDpsInputOperands()) {
    Value v = o->get();
    AffineMap map = g.getMatchingIndexingMap(o);
    if (Value s = scalars.lookup(v)) {
      if (!map.isIdentity())
        return g.emitOpError(
            "reads a row value with an unsupported indexing map");
      args.push_back(s);
      continue;
    }
    Value mem = io.memrefOf(v);
    if (!mem)
      return g.emitOpError("input #")
             << o->getOperandNumber()
             << " is neither a kernel argument nor a row value computed "
                "earlier";
    FailureOr<Lanes> l = loadLanes(b, loc, mem, map, rowIdx, /*v=*/1);
    if (failed(l))
      return g.emitOpError("unsupported indexing map for input #")
             << o->getOperandNumber();
    args.push_back(l->value);
  }
  Type outType = g.getBody()->getArguments().back().getType();
  args.push_back(arith::ConstantOp::create(b, loc, b.getZeroAttr(outType)));
  Value v = clonePayload(b, g, args);
  scalars[g.getResult(0)] = v;
  storeRowValue(g.getResult(0), v);
  return success();
}

LogicalResult RowKernelBuilder::buildFullMap(linalg::GenericOp g) {
  if (!g.getIndexingMapsArray().back().isIdentity())
    return g.emitOpError("full-row maps need an identity output map");
  if (!g.getBody()->getArguments().back().use_empty())
    return g.emitOpError("full-row payloads must not read their output");
  fullMaps[g.getResult(0)] = g;
  Value out = io.memrefOf(g.getResult(0));
  if (!out) {
    // An internal value: computed where a later generic reads it.
    if (g.getResult(0).use_empty())
      return g.emitOpError("result must be a result of the kernel or an "
                           "input of a later generic of it");
    return success();
  }
  FailureOr<SmallVector<Value>> done = overChunks(
      {}, [&](Chunk &c, ValueRange) -> FailureOr<SmallVector<Value>> {
        FailureOr<SmallVector<Value>> lanes = computeAt(g.getResult(0), c);
        if (failed(lanes))
          return failure();
        storeIf(andOf(c.valid, rowValid), *lanes, out, rowElement(c.column));
        return SmallVector<Value>{};
      });
  return failure(failed(done));
}

FailureOr<LaunchConfig> RowKernelBuilder::build() {
  SmallVector<linalg::GenericOp> gs = generics(kernel);
  auto first = llvm::find_if(
      gs, [](linalg::GenericOp g) { return g.getNumReductionLoops() > 0; });
  shape = (*first).getStaticLoopRanges();
  if (llvm::any_of(shape, ShapedType::isDynamic))
    return (*first).emitOpError("needs static loop ranges");
  unsigned rank = shape.size();
  ArrayRef<int64_t> rowShape = ArrayRef<int64_t>(shape).drop_back();
  int64_t rows = numElements(rowShape), n = shape.back();

  // 16-byte accesses along the row when every memref read or written over the
  // full domain is contiguous (or uniform) along it.
  SmallVector<Type> types;
  bool vectorizable = true;
  for (linalg::GenericOp g : gs) {
    if (g.getNumLoops() != rank)
      continue;
    for (OpOperand &o : g->getOpOperands()) {
      Value v = g.isDpsInit(&o) ? g.getTiedOpResult(&o) : o.get();
      Value mem = io.memrefOf(v);
      if (!mem)
        continue;
      types.push_back(getElementTypeOrSelf(mem.getType()));
      if (laneAccess(g.getMatchingIndexingMap(&o), rank - 1) ==
          LaneAccess::Other)
        vectorizable = false;
    }
  }
  vec = vectorizable && !types.empty() ? vectorWidth(types, n) : 1;
  plan = planRow(rows, n, vec, target.hasClusters ? kMaxClusterSize : 1);
  int64_t t = plan.threadsPerRow, r = plan.rowsPerBlock, s = plan.clusterSize;

  int64_t blocks = llvm::divideCeil(rows, r);
  if (blocks > kMaxGridX / s)
    return kernel.emitOpError("has ")
           << rows << " rows, more than " << r << (r == 1 ? " row" : " rows")
           << " per block"
           << (s > 1 ? " and " + std::to_string(s) + " blocks per row" : "")
           << " in a grid's " << kMaxGridX << " blocks allow";
  LaunchConfig cfg;
  cfg.grid = {blocks * s, 1, 1};
  cfg.block = {t * r, 1, 1};
  cfg.cluster = {s, 1, 1};

  if (t > kWarpSize) {
    auto smemType = MemRefType::get(
        {r * (t / kWarpSize)}, b.getF32Type(), MemRefLayoutAttrInterface(),
        gpu::AddressSpaceAttr::get(b.getContext(),
                                   gpu::AddressSpace::Workgroup));
    smem = func.addWorkgroupAttribution(smemType, loc);
  }
  if (s > 1) {
    int64_t reductions = llvm::count_if(
        gs, [](linalg::GenericOp g) { return g.getNumReductionLoops() > 0; });
    auto slotsType = MemRefType::get(
        {reductions * s}, b.getF32Type(), MemRefLayoutAttrInterface(),
        gpu::AddressSpaceAttr::get(b.getContext(),
                                   gpu::AddressSpace::Workgroup));
    slots = func.addWorkgroupAttribution(slotsType, loc);
  }
  Value tid = threadIdX(b, loc);
  lane = arith::RemUIOp::create(b, loc, tid, indexConst(b, loc, kWarpSize));
  Value row = blockIdX(b, loc);
  laneInRow = blockLane = tid;
  if (s > 1) {
    // Block k of a cluster has rank k (clusters of S consecutive blocks along
    // x); the cluster is the row. The arrive pairs with the wait before the
    // first remote store (clusterReduce).
    clusterRank = arith::RemUIOp::create(b, loc, row, indexConst(b, loc, s));
    row = arith::DivUIOp::create(b, loc, row, indexConst(b, loc, s));
    laneInRow = arith::AddIOp::create(
        b, loc,
        arith::MulIOp::create(b, loc, clusterRank, indexConst(b, loc, t)), tid);
    NVVM::ClusterArriveRelaxedOp::create(b, loc, b.getUnitAttr());
  }
  if (r > 1) {
    laneInRow = blockLane =
        arith::RemUIOp::create(b, loc, tid, indexConst(b, loc, t));
    rowInBlock = arith::DivUIOp::create(b, loc, tid, indexConst(b, loc, t));
    row = arith::AddIOp::create(
        b, loc, arith::MulIOp::create(b, loc, row, indexConst(b, loc, r)),
        rowInBlock);
    if (rows % r != 0) {
      rowValid = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, row,
                                       indexConst(b, loc, rows));
      row = arith::MinUIOp::create(b, loc, row, indexConst(b, loc, rows - 1));
    }
  }
  firstColumn = vec == 1 ? laneInRow
                         : arith::MulIOp::create(b, loc, laneInRow,
                                                 indexConst(b, loc, vec))
                               .getResult();
  rowIdx = delinearize(b, loc, row, rowShape);
  if (plan.cached) {
    int64_t stride = plan.rowLanes() * vec;
    for (int64_t i = 0; i < plan.chunks; ++i) {
      Chunk &c = chunks.emplace_back();
      c.column = i == 0 ? firstColumn
                        : arith::AddIOp::create(b, loc, firstColumn,
                                                indexConst(b, loc, i * stride))
                              .getResult();
      if ((i + 1) * stride > n) {
        // Past the row for some threads: clamp the loads inside it.
        c.valid = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                        c.column, indexConst(b, loc, n));
        c.column = arith::MinUIOp::create(b, loc, c.column,
                                          indexConst(b, loc, n - vec));
      }
    }
  }

  for (linalg::GenericOp g : gs) {
    SmallVector<utils::IteratorType> iters = g.getIteratorTypesArray();
    unsigned numReduction = g.getNumReductionLoops();
    LogicalResult built = failure();
    if (g.getStaticLoopRanges() ==
            ArrayRef<int64_t>(shape).take_front(iters.size()) &&
        iters.size() == rank && numReduction == 1 &&
        iters.back() == utils::IteratorType::reduction &&
        g.getNumDpsInits() == 1)
      built = buildReduction(g);
    else if (numReduction == 0 && iters.size() == rank - 1 &&
             g.getNumDpsInits() == 1)
      built = buildRowMap(g);
    else if (numReduction == 0 && iters.size() == rank &&
             g.getNumDpsInits() == 1 &&
             g.getStaticLoopRanges() == ArrayRef<int64_t>(shape))
      built = buildFullMap(g);
    else
      return g.emitOpError(
                 "does not fit a row kernel: expected a reduction over "
                 "the last dimension, a map over the rows, or a map over "
                 "the full ")
             << rank << "-D domain";
    if (failed(built))
      return failure();
  }
  gpu::ReturnOp::create(b, loc);
  return cfg;
}

FailureOr<LaunchConfig> kopt::buildRowKernel(KernelOp kernel,
                                             gpu::GPUFuncOp func,
                                             const schedule::Target &target) {
  return RowKernelBuilder(kernel, func, target).build();
}
