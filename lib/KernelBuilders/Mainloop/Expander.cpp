//===- Expander.cpp - kopt.mainloop as a software pipeline ----------------===//
//
// kopt-pipeline's work (include/kopt/Transforms/KernelBuilders.h,
// expandMainloop): a kopt.mainloop becomes the K loop that stages its
// operand tiles in shared memory as the schedule says: synchronous loads
// (one buffer), a cp.async ring of `stages` buffers (CpAsyncRing.cpp), or a
// TMA ring with mbarriers (TmaRing.cpp), optionally fed by a producer warp
// (WarpSpecialize.cpp); in a persistent grid the ring runs on across the
// block's tiles (Persistent.cpp). This file holds what every expansion
// shares (Expander.h): the op's checks, the shared memory and thread
// indices, the body cloned on a stage, a wgmma K step, and the choice of
// expansion (KLoop.cpp: one tile per block).
//
//===----------------------------------------------------------------------===//

#include "Expander.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

using namespace mlir;
using namespace kopt;
using namespace kopt::kb;
namespace sched = kopt::schedule;

/// The extent of the loop dimension `dim` ((m, n, k) = 0, 1, 2) in an
/// operand of type `t` indexed by `map`, or -1 when the map does not use it.
static int64_t extentOf(MemRefType t, AffineMap map, unsigned dim) {
  for (auto [i, e] : llvm::enumerate(map.getResults()))
    if (auto d = dyn_cast<AffineDimExpr>(e); d && d.getPosition() == dim)
      return t.getDimSize(i);
  return -1;
}

LogicalResult Expander::analyze() {
  auto typeA = cast<MemRefType>(op.getA().getType());
  auto typeB = cast<MemRefType>(op.getB().getType());
  mapA = cast<AffineMapAttr>(op.getIndexingMaps()[0]).getValue();
  mapB = cast<AffineMapAttr>(op.getIndexingMaps()[1]).getValue();
  M = extentOf(typeA, mapA, 0);
  N = extentOf(typeB, mapB, 1);
  K = extentOf(typeA, mapA, 2);
  if (M < 0 || N < 0 || K < 0 || extentOf(typeB, mapB, 2) != K)
    return op.emitOpError("indexing maps must give A (m, k) and B (n, k) "
                          "with the same K");
  elt = typeA.getElementType();
  Block &body = op.getBody().front();
  tileA = cast<MemRefType>(body.getArgument(0).getType());
  tileB = cast<MemRefType>(body.getArgument(1).getType());
  int64_t eltBytes = elt.getIntOrFloatBitWidth() / 8;
  tileBytesA = tileA.getNumElements() * eltBytes;
  tileBytesB = tileB.getNumElements() * eltBytes;
  bool wgmma = s.instruction == sched::Instruction::Wgmma;
  // The tiles' layout: [rows][block_k + 8] (mma.sync) or [block_k / r][rows]
  // [r] with r elements per 128-byte row (wgmma).
  int64_t rows = wgmma ? tileA.getDimSize(1) : tileA.getDimSize(0);
  int64_t rowsB = wgmma ? tileB.getDimSize(1) : tileB.getDimSize(0);
  if (rows != s.blockM || rowsB != s.blockN ||
      (wgmma ? tileA.getRank() != 3 ||
                   tileA.getDimSize(0) * tileA.getDimSize(2) != s.blockK
             : tileA.getRank() != 2 || tileA.getDimSize(1) < s.blockK))
    return op.emitOpError("staged tiles ")
           << tileA << ", " << tileB << " do not fit the schedule's "
           << s.blockM << " x " << s.blockN << " x " << s.blockK << " tile";
  // B's tile: the same K layout as A's.
  if (wgmma ? tileB.getDimSize(0) != tileA.getDimSize(0) ||
                  tileB.getDimSize(2) != tileA.getDimSize(2) ||
                  tileA.getDimSize(2) * eltBytes != 128
            : tileB.getDimSize(1) != tileA.getDimSize(1))
    return op.emitOpError("staged tiles ")
           << tileA << ", " << tileB << " must have the same K layout"
           << (wgmma ? " of 128-byte rows" : "");
  if (!op->getParentOfType<gpu::GPUFuncOp>())
    return op.emitOpError("must be inside a gpu.func (kopt-tile builds it "
                          "there)");
  if (s.blockM % s.warpM != 0 || s.blockN % s.warpN != 0)
    return op.emitOpError("the block tile ")
           << s.blockM << " x " << s.blockN << " is not made of warp tiles "
           << s.warpM << " x " << s.warpN;
  stages = s.copy == sched::CopyEngine::Sync ? 1 : s.stages;
  threads = wgmma ? 32 * s.mathWarps() : s.threads();
  if (stages < 1 || (wgmma && stages < 2))
    return op.emitOpError("needs at least ")
           << (wgmma ? "2 stages for wgmma" : "1 stage") << ", got "
           << s.stages;
  if (elt.isF32() && s.copy != sched::CopyEngine::TMA)
    return op.emitOpError("f32 (TF32) operands are staged by copy = tma only");
  if (s.copy != sched::CopyEngine::Sync) {
    // 16-byte copies along K: K-contiguous operands, K a multiple of 16
    // bytes (a chunk is wholly inside or outside K).
    if (!kContiguous(mapA) || !kContiguous(mapB) || (K * eltBytes) % 16 != 0)
      return op.emitOpError("copy = ")
             << (s.copy == sched::CopyEngine::TMA ? "tma" : "cp_async")
             << " needs A and B contiguous along K and K a multiple of 16 "
                "bytes";
    for (int64_t rows : {s.blockM, s.blockN})
      if (s.copy == sched::CopyEngine::CpAsync &&
          (rows * s.blockK * eltBytes / 16) % threads != 0)
        return op.emitOpError("cp.async copies of 16 bytes: a ")
               << rows << " x " << s.blockK
               << " tile is not a whole number of copies for each of the "
               << threads << " threads";
  }
  std::optional<int64_t> k = getConstantIntValue(op.getKTiles());
  if (!k || *k < 1)
    return op.emitOpError("k_tiles must be a positive constant");
  kTiles = *k;
  return success();
}

/// The shared memory, thread indices, the operands' staging and (TMA) the
/// ring's mbarriers, before `anchor` (which every thread reaches).
void Expander::setUp(Operation *anchor) {
  b.setInsertionPoint(anchor);
  auto func = op->getParentOfType<gpu::GPUFuncOp>();
  smem = dynamicSharedMemory(b, loc, func);
  tid = threadIdX(b, loc);
  lane = arith::RemUIOp::create(b, loc, tid, idx(32));
  warp = arith::DivUIOp::create(b, loc, tid, idx(32));
  bool wgmma = s.instruction == sched::Instruction::Wgmma;
  SmallVector<int64_t> ringA = {stages}, ringB = {stages};
  llvm::append_range(ringA, tileA.getShape());
  llvm::append_range(ringB, tileB.getShape());
  Value bufA, bufB;
  if (s.copy == sched::CopyEngine::Sync) {
    bufA = sharedView(b, loc, smem, 0, tileA.getShape(), elt);
    bufB = sharedView(b, loc, smem, tileBytesA, tileB.getShape(), elt);
  } else {
    bufA = sharedView(b, loc, smem, 0, ringA, elt);
    bufB = sharedView(b, loc, smem, stages * tileBytesA, ringB, elt);
  }
  a = StageSpec{op.getA(), mapA, 0,    s.blockM, s.blockK,
                M,         K,    bufA, true,     wgmma};
  bs = StageSpec{op.getB(), mapB, 1,    s.blockN, s.blockK,
                 N,         K,    bufB, true,     wgmma};
  if (s.copy != sched::CopyEngine::TMA)
    return;
  auto i64 = b.getI64Type();
  auto toI64 = [&](Value index) -> Value {
    return arith::IndexCastUIOp::create(b, loc, i64, index);
  };
  TmaRing r;
  auto ptr = LLVM::LLVMPointerType::get(b.getContext());
  r.mapA = LLVM::IntToPtrOp::create(b, loc, ptr, op.getTensorMaps()[0]);
  r.mapB = LLVM::IntToPtrOp::create(b, loc, ptr, op.getTensorMaps()[1]);
  r.baseA = toI64(memref::ExtractAlignedPointerAsIndexOp::create(b, loc, bufA));
  r.baseB = toI64(memref::ExtractAlignedPointerAsIndexOp::create(b, loc, bufB));
  Value bars =
      sharedView(b, loc, smem, *op.getBarrierOffset(), {2 * stages}, i64);
  r.barriers =
      toI64(memref::ExtractAlignedPointerAsIndexOp::create(b, loc, bars));
  // The thread that issues the copies: thread 0, or lane 0 of the producer
  // warp.
  r.leader = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, tid,
                                   idx(s.warpSpecialize ? threads : 0));
  r.lane = lane;
  int64_t row = tileA.getDimSize(2);
  r.stages = stages, r.bytesA = tileBytesA, r.bytesB = tileBytesB;
  r.subTiles = tileA.getDimSize(0), r.rowsA = s.blockM, r.rowsB = s.blockN;
  r.rowElements = row;
  r.boxRowsA = sched::tmaBoxRows(s.blockM, M);
  r.boxRowsB = sched::tmaBoxRows(s.blockN, N);
  r.init(b, loc, threads / 32);
  ring = r;
}

/// The first K element of K tile `kTile` (split-K: from k_begin).
Value Expander::kElemOf(Value kTile) {
  Value e = arith::MulIOp::create(b, loc, kTile, idx(s.blockK));
  if (Value kBegin = op.getKBegin())
    e = arith::AddIOp::create(b, loc, e, kBegin);
  return e;
}

/// The body on the tiles of `stage` (index): the op's region cloned with
/// its arguments bound to views of the stage's buffers and `acc`; returns
/// the yielded accumulators.
SmallVector<Value> Expander::step(Value stage, ValueRange acc) {
  Value offA = arith::MulIOp::create(b, loc, stage, idx(tileBytesA));
  Value offB = arith::AddIOp::create(
      b, loc, idx(stages * tileBytesA),
      arith::MulIOp::create(b, loc, stage, idx(tileBytesB)));
  Block &body = op.getBody().front();
  IRMapping map;
  map.map(body.getArgument(0),
          sharedView(b, loc, smem, offA, tileA.getShape(), elt));
  map.map(body.getArgument(1),
          sharedView(b, loc, smem, offB, tileB.getShape(), elt));
  for (auto [arg, v] : llvm::zip(body.getArguments().drop_front(2), acc))
    map.map(arg, v);
  for (Operation &o : body.without_terminator())
    b.clone(o, map);
  return llvm::map_to_vector(body.getTerminator()->getOperands(),
                             [&](Value v) { return map.lookupOrDefault(v); });
}

/// The top of a wgmma K step at load f (flattened over a persistent
/// block's tiles): wait until its stage has landed. cp.async: this thread's
/// copies of f, then everyone's (a barrier); they wrote shared memory
/// through the generic proxy, wgmma reads it through the async proxy.
void Expander::waitForStage(Value f) {
  if (ring)
    return ring->waitFull(b, loc, f);
  nvgpu::DeviceAsyncWaitOp::create(b, loc, lastGroup,
                                   b.getI32IntegerAttr(stages - 2));
  NVVM::FenceProxyOp::create(
      b, loc, NVVM::ProxyKind::async_shared,
      NVVM::SharedSpaceAttr::get(b.getContext(),
                                 NVVM::SharedSpace::shared_cta));
  gpu::BarrierOp::create(b, loc);
}

/// After wgmma.wait_group 1 at load f: load f - 1's stage may be refilled
/// once every warp is past this point (cp.async: a barrier; TMA: the warps
/// arrive on its "empty" mbarrier).
void Expander::releaseStage(Value f) {
  if (ring)
    return ring->release(b, loc, f);
  gpu::BarrierOp::create(b, loc);
}

/// One wgmma K tile, load f: wait for its stage, issue the body's wgmma into
/// `acc` and commit them, wait until only they are pending, release load
/// f - 1's stage. Returns the accumulators.
SmallVector<Value> Expander::consume(Value f, ValueRange acc) {
  waitForStage(f);
  SmallVector<Value> next =
      step(arith::RemUIOp::create(b, loc, f, idx(stages)), acc);
  NVVM::WgmmaGroupSyncAlignedOp::create(b, loc);
  NVVM::WgmmaWaitGroupSyncOp::create(b, loc, 1);
  releaseStage(f);
  return next;
}

void Expander::replaceWith(ValueRange results) {
  op.replaceAllUsesWith(results);
  op.erase();
}

LogicalResult Expander::run() {
  if (failed(analyze()))
    return failure();
  if (s.instruction == sched::Instruction::MmaSync) {
    if (s.persistent || s.warpSpecialize || s.copy == sched::CopyEngine::TMA)
      return op.emitOpError("mma_sync mainloops take cp_async or sync "
                            "copies, one tile per block");
    return expandMma();
  }
  if (s.copy == sched::CopyEngine::Sync)
    return op.emitOpError("wgmma mainloops take cp_async or tma copies");
  if (s.persistent) {
    auto tileLoop = dyn_cast<scf::ForOp>(op->getParentOp());
    if (!tileLoop)
      return op.emitOpError("in a persistent grid must be the body of the "
                            "block's tile loop (scf.for)");
    return expandPersistent(tileLoop);
  }
  return expandWgmma();
}

LogicalResult kopt::expandMainloop(MainloopOp op) { return Expander(op).run(); }
