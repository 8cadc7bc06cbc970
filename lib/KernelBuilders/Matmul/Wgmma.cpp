//===- Wgmma.cpp - wgmma matmul kernels -----------------------------------===//
//
// instruction = wgmma (sm_90a): warpgroups issuing asynchronous
// m64nNk16 (k8 for TF32) from shared-memory descriptors of 128-byte
// swizzled tiles, the K loop a kopt.mainloop (cp.async or TMA ring,
// optionally a producer warp); one tile per block, or a persistent grid
// whose blocks loop over the tiles.
//
//===----------------------------------------------------------------------===//

#include "Epilogue.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

using namespace mlir;
using namespace kopt;
using namespace kopt::kb;
namespace sched = kopt::schedule;

/// The shared-memory matrix descriptor of a K-major 16-bit tile stored in
/// 128-byte swizzled rows of 64 elements, starting at shared address `addr`
/// (PTX ISA, "Matrix Descriptor Format" of wgmma): bits 0-13 the start
/// address >> 4, bits 16-29 the leading byte offset >> 4 (unused for swizzled
/// K-major layouts: 1), bits 32-45 the stride byte offset >> 4 (1024 bytes
/// between groups of 8 rows: 64), bits 62-63 the swizzle mode (1: 128 bytes).
/// The tile must be 1024-byte aligned; stepping K by 16 elements adds 32 bytes
/// to the start address (the swizzle applies to the absolute address bits).
static Value wgmmaDescriptor(OpBuilder &b, Location loc, Value addr) {
  auto i64 = b.getI64Type();
  auto c = [&](uint64_t v) -> Value {
    return arith::ConstantIntOp::create(b, loc, i64, static_cast<int64_t>(v));
  };
  Value start = arith::ShRUIOp::create(
      b, loc, arith::AndIOp::create(b, loc, addr, c(0x3FFFF)), c(4));
  uint64_t fixed =
      (uint64_t(1) << 16) | (uint64_t(1024 >> 4) << 32) | (uint64_t(1) << 62);
  return arith::OrIOp::create(b, loc, start, c(fixed));
}

namespace {
/// Builds one wgmma kernel (buildWgmma): the set-up (shared memory, thread
/// and warpgroup indices), then one tile per block or a persistent grid,
/// each tile a kopt.mainloop of computeTile and storeTile's epilogue.
class WgmmaBuilder {
public:
  WgmmaBuilder(const Contraction &c, gpu::GPUFuncOp func,
               const sched::MatmulSchedule &s, int64_t persistentBlocks)
      : c(c), func(func), s(s), persistentBlocks(persistentBlocks),
        loc(linalg::GenericOp(c.mm).getLoc()), ctx(func.getContext()),
        b(OpBuilder::atBlockBegin(&func.front())) {
    cfg.block = {s.threads(), 1, 1};
  }
  FailureOr<LaunchConfig> build() {
    setUp();
    if (s.persistent)
      return buildPersistent();
    return buildOneTile();
  }

private:
  const Contraction &c;
  gpu::GPUFuncOp func;
  const sched::MatmulSchedule &s;
  const int64_t persistentBlocks;
  const int64_t kBM = s.blockM, kBN = s.blockN, kBK = s.blockK,
                kStages = s.stages, kWarpM = s.warpM, kWarpN = s.warpN;
  const int64_t kGroupsN = kBN / kWarpN, kMTiles = kWarpM / 64;
  // The warpgroups of the warp grid (with warp_specialize, the producer warp
  // kopt-pipeline adds follows them: threads kThreads .. kThreads + 31).
  const int64_t kThreads = 32 * s.mathWarps();
  const bool kSpecialized = s.warpSpecialize;
  const int64_t kAccs = kWarpN / 2; // f32 per thread per m64 instruction
  Location loc;
  MLIRContext *ctx;
  OpBuilder b;
  LaunchConfig cfg;

  Type elt;
  int64_t kEltBytes = 0, kRow = 0, kStep = 0, bytesA = 0, bytesB = 0;
  Value smem;
  std::optional<int64_t> barrierOffset;
  Value tid, lane, warp, group, warpInGroup, groupRow, groupCol;
  EpilogueThreads epilogueThreads;
  Type accType;

  Value toI64(Value index) {
    return arith::IndexCastUIOp::create(b, loc, b.getI64Type(), index);
  }
  Value cI64(int64_t v) {
    return arith::ConstantIntOp::create(b, loc, b.getI64Type(), v);
  }
  void setUp();
  SmallVector<Value> computeTile(Value tileA, Value tileB, ValueRange accIn);
  void storeTile(Value m0, Value n0, const TileOrigin &org,
                 function_ref<Value(int64_t)> accOf);
  SmallVector<Value> zeroAccumulators();
  MainloopOp mainloop(Value m0, Value n0, Value kBegin, int64_t kTiles);
  FailureOr<LaunchConfig> buildPersistent();
  FailureOr<LaunchConfig> buildOneTile();
};
} // namespace

/// The shared memory and the thread, warp and warpgroup indices.
void WgmmaBuilder::setUp() {
  elt = cast<MemRefType>(c.memA.getType()).getElementType();
  // 128-byte rows of 64 16-bit or 32 f32 (TF32) elements; each wgmma K step
  // reads 32 bytes of them (k16 for 16-bit operands, k8 for TF32).
  kEltBytes = elt.getIntOrFloatBitWidth() / 8;
  kRow = 128 / kEltBytes, kStep = 32 / kEltBytes;
  // Shared memory: the mainloop's buffers (A's then B's, from byte 0), in a
  // persistent grid the staged epilogue tile after them (else over them),
  // TMA's mbarriers last.
  bytesA = kStages * kBM * kBK * kEltBytes;
  bytesB = kStages * kBN * kBK * kEltBytes;
  smem = dynamicSharedMemory(b, loc, func);
  cfg.dynamicSharedBytes = sched::sharedBytes(s, workloadOf(c));
  if (s.copy == sched::CopyEngine::TMA)
    barrierOffset = cfg.dynamicSharedBytes - sched::barrierSharedBytes(s);

  tid = threadIdX(b, loc);
  lane = arith::RemUIOp::create(b, loc, tid, indexConst(b, loc, 32));
  warp = arith::DivUIOp::create(b, loc, tid, indexConst(b, loc, 32));
  group = arith::DivUIOp::create(b, loc, tid, indexConst(b, loc, 128));
  warpInGroup = arith::RemUIOp::create(b, loc, warp, indexConst(b, loc, 4));
  groupRow = arith::MulIOp::create(
      b, loc,
      arith::DivUIOp::create(b, loc, group, indexConst(b, loc, kGroupsN)),
      indexConst(b, loc, kWarpM));
  groupCol = arith::MulIOp::create(
      b, loc,
      arith::RemUIOp::create(b, loc, group, indexConst(b, loc, kGroupsN)),
      indexConst(b, loc, kWarpN));
  epilogueThreads = EpilogueThreads{tid, kThreads, !kSpecialized};
  auto f32 = b.getF32Type();
  accType =
      LLVM::LLVMStructType::getLiteral(ctx, SmallVector<Type>(kAccs, f32));
}

/// The wgmma of one K tile staged in `tileA` / `tileB`: block_k / 16 K
/// steps, warp_m / 64 instructions each, accumulating into `accIn`; the
/// descriptors start at this warpgroup's rows (128 bytes per row).
SmallVector<Value> WgmmaBuilder::computeTile(Value tileA, Value tileB,
                                             ValueRange accIn) {
  Value rowBytesA = arith::MulIOp::create(b, loc, toI64(groupRow), cI64(128));
  Value rowBytesB = arith::MulIOp::create(b, loc, toI64(groupCol), cI64(128));
  Value stageA = arith::AddIOp::create(
      b, loc,
      toI64(memref::ExtractAlignedPointerAsIndexOp::create(b, loc, tileA)),
      rowBytesA);
  Value stageB = arith::AddIOp::create(
      b, loc,
      toI64(memref::ExtractAlignedPointerAsIndexOp::create(b, loc, tileB)),
      rowBytesB);
  NVVM::WgmmaFenceAlignedOp::create(b, loc);
  SmallVector<Value> acc(accIn);
  NVVM::WGMMATypes type = elt.isF16()    ? NVVM::WGMMATypes::f16
                          : elt.isBF16() ? NVVM::WGMMATypes::bf16
                                         : NVVM::WGMMATypes::tf32;
  for (int64_t ks = 0; ks < kBK / kStep; ++ks) {
    // K step ks: sub-tile ks / 4, 32 bytes per step inside its rows.
    int64_t sub = ks / 4, inRow = (ks % 4) * 32;
    Value descB = wgmmaDescriptor(
        b, loc,
        arith::AddIOp::create(b, loc, stageB, cI64(sub * kBN * 128 + inRow)));
    for (int64_t t = 0; t < kMTiles; ++t) {
      Value descA = wgmmaDescriptor(
          b, loc,
          arith::AddIOp::create(b, loc, stageA,
                                cI64(sub * kBM * 128 + t * 64 * 128 + inRow)));
      acc[t] = NVVM::WgmmaMmaAsyncOp::create(
          b, loc, accType, acc[t], descA, descB,
          NVVM::MMAShapeAttr::get(ctx, 64, kWarpN, kStep),
          NVVM::WGMMATypesAttr::get(ctx, type),
          NVVM::WGMMATypesAttr::get(ctx, type),
          NVVM::WGMMATypesAttr::get(ctx, NVVM::WGMMATypes::f32),
          NVVM::WGMMAScaleOutAttr::get(ctx, NVVM::WGMMAScaleOut::one),
          NVVM::WGMMAScaleInAttr::get(ctx, NVVM::WGMMAScaleIn::one),
          NVVM::WGMMAScaleInAttr::get(ctx, NVVM::WGMMAScaleIn::one),
          NVVM::MMALayoutAttr::get(ctx, NVVM::MMALayout::row),
          NVVM::MMALayoutAttr::get(ctx, NVVM::MMALayout::col),
          NVVM::MMAIntOverflowAttr());
    }
  }
  return acc;
}

/// The epilogue of the tile at (m0, n0) (PTX ISA, wgmma .m64nNk16
/// accumulator layout): warp w of the warpgroup holds rows 16 w + l / 4
/// (+ 8), lane l columns 8 j + 2 (l % 4) (+ 1) of every 8-column chunk j,
/// registers 4 j + {0, 1, 2, 3}.
void WgmmaBuilder::storeTile(Value m0, Value n0, const TileOrigin &org,
                             function_ref<Value(int64_t)> accOf) {
  Value laneRow = arith::AddIOp::create(
      b, loc,
      arith::MulIOp::create(b, loc, warpInGroup, indexConst(b, loc, 16)),
      arith::DivUIOp::create(b, loc, lane, indexConst(b, loc, 4)));
  Value rowBase, colBase;
  std::tie(rowBase, colBase) =
      accumulatorLaneOrigin(b, loc, lane, laneRow, m0, groupRow, n0, groupCol);
  // A staged epilogue waits until no warp reads the tile's memory: the
  // mainloop's buffers (drained) or, in a persistent grid, the previous
  // tile's staged tile (the next tile's copies stay in flight).
  std::optional<StagedEpilogue> staged;
  if (sched::stagedEpilogue(s))
    staged = beginStagedEpilogue(b, loc, c, s, smem,
                                 s.persistent ? bytesA + bytesB : 0, m0, n0,
                                 epilogueThreads);
  emitEpilogue(b, loc, c, org, s.splitK, epilogueThreads,
               staged ? &*staged : nullptr, [&](OutputFn emit) {
                 for (int64_t t = 0; t < kMTiles; ++t) {
                   Value acc = accOf(t);
                   for (int64_t j = 0; j < kWarpN / 8; ++j)
                     forEachAccumulatorOfQuad(
                         b, loc, rowBase, t * 64, colBase, j * 8,
                         [&](int64_t r) -> Value {
                           return LLVM::ExtractValueOp::create(b, loc, acc,
                                                               4 * j + r);
                         },
                         std::min<int64_t>(s.vectorWidth, 2), emit);
                 }
               });
}

SmallVector<Value> WgmmaBuilder::zeroAccumulators() {
  Value zero = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0));
  SmallVector<Value> accInit;
  for (int64_t t = 0; t < kMTiles; ++t) {
    Value acc = LLVM::UndefOp::create(b, loc, accType);
    for (int64_t i = 0; i < kAccs; ++i)
      acc = LLVM::InsertValueOp::create(b, loc, acc, zero, i);
    accInit.push_back(acc);
  }
  return accInit;
}

/// The mainloop of the tile at (m0, n0) from zero accumulators.
MainloopOp WgmmaBuilder::mainloop(Value m0, Value n0, Value kBegin,
                                  int64_t kTiles) {
  SmallVector<Value> zeros = zeroAccumulators();
  return createMainloop(
      b, loc, c, s, m0, n0, kBegin, indexConst(b, loc, kTiles), zeros,
      {kBK / kRow, kBM, kRow}, {kBK / kRow, kBN, kRow}, barrierOffset,
      /*drain=*/!s.persistent && sched::stagedEpilogue(s),
      [&](Value tileA, Value tileB, ValueRange acc) {
        return computeTile(tileA, tileB, acc);
      });
}

/// Persistent grid: `persistentBlocks` blocks (all resident at once)
/// walk the tiles bid, bid + grid, ... in rasterization order
/// (kopt-pipeline runs the loads of the next tile during this one's last
/// K tiles and its epilogue).
FailureOr<LaunchConfig> WgmmaBuilder::buildPersistent() {
  int64_t tilesM = llvm::divideCeil(c.M, kBM),
          tilesN = llvm::divideCeil(c.N, kBN);
  int64_t tiles = tilesM * tilesN, kTiles = llvm::divideCeil(c.K, kBK);
  int64_t grid = std::min(tiles, persistentBlocks);
  cfg.grid = {grid, 1, 1};
  Value bid = blockIdX(b, loc);
  auto idx = [&](int64_t v) { return indexConst(b, loc, v); };
  // ceil((tiles - bid) / grid) tiles for this block.
  Value myTiles = arith::DivUIOp::create(
      b, loc,
      arith::AddIOp::create(b, loc,
                            arith::SubIOp::create(b, loc, idx(tiles), bid),
                            idx(grid - 1)),
      idx(grid));
  auto tileLoop = scf::ForOp::create(b, loc, idx(0), myTiles, idx(1));
  b.setInsertionPointToStart(tileLoop.getBody());
  Value tile = arith::AddIOp::create(
      b, loc, bid,
      arith::MulIOp::create(b, loc, tileLoop.getInductionVar(), idx(grid)));
  auto [m0, n0] = tileCoordinates(b, loc, c, kBM, kBN, s.swizzle, tile);
  MainloopOp kLoop = mainloop(m0, n0, Value(), kTiles);
  TileOrigin org;
  org.m0 = m0, org.n0 = n0, org.tile = tile;
  storeTile(m0, n0, org, [&](int64_t t) { return kLoop.getResult(t); });
  b.setInsertionPointAfter(tileLoop);
  // The shared memory of the last TMA stores must stay until they are read.
  if (s.tmaStore)
    waitForTmaStoreReads(b, loc);
  gpu::ReturnOp::create(b, loc);
  return cfg;
}

/// One tile per block (split-K allowed).
FailureOr<LaunchConfig> WgmmaBuilder::buildOneTile() {
  FailureOr<TileOrigin> origin =
      tileOrigin(b, loc, c, kBM, kBN, kBK, s.swizzle, s.splitK, cfg);
  if (failed(origin))
    return failure();
  const TileOrigin &org = *origin;
  MainloopOp kLoop = mainloop(org.m0, org.n0, org.kBase, org.kTiles);
  storeTile(org.m0, org.n0, org, [&](int64_t t) { return kLoop.getResult(t); });
  if (s.tmaStore)
    waitForTmaStoreReads(b, loc);
  gpu::ReturnOp::create(b, loc);
  return cfg;
}

/// wgmma m64nNk16 with f32 accumulation from two shared-memory descriptors;
/// the schedule's warp tile is a warpgroup's (warp_m / 64 instructions along
/// M, N = warp_n), its block tile (block_m / warp_m) x (block_n / warp_n)
/// warpgroups. The mainloop's staged tiles are [block_k / 64][rows][64] in
/// the 128-byte swizzled layout; each K step of 16 issues warp_m / 64
/// wgmma per warpgroup (asynchronous: kopt-pipeline commits and waits for
/// them). In a persistent grid the block loops over its tiles (bid, bid +
/// grid, ...), a mainloop and an epilogue each.
FailureOr<LaunchConfig> kb::buildWgmma(const Contraction &c,
                                       gpu::GPUFuncOp func,
                                       const sched::MatmulSchedule &s,
                                       int64_t persistentBlocks) {
  return WgmmaBuilder(c, func, s, persistentBlocks).build();
}
