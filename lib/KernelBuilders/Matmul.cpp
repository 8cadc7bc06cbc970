//===- Matmul.cpp - tiled SIMT kernels for contractions -------------------===//
//
// The kernel body is fill(0) + a contraction generic C[m, n] += f(A[.., ..],
// B[.., ..]) (+ an elementwise rounding generic). Fixed default schedule:
//   - block tile BM x BN = 64 x 64, K step BK = 16, 256 threads (16 x 16);
//   - thread (tx, ty) owns the 4 x 4 outputs (ty + 16 i, tx + 16 j): stores of a
//     warp are coalesced and shared-memory reads are conflict-free (B) or
//     broadcasts (A);
//   - per K step the block stages A (BK x BM) and B (BK x BN) in shared memory in
//     the input dtype, reading global memory along its contiguous dimension;
//     out-of-range elements are loaded as zero, so every M, N, K is correct
//     (the payload of a multiply-accumulate adds 0 for them);
//   - the accumulators stay in registers (loop-carried values); the epilogue
//     applies the rounding payload and stores inside the bounds.
//   - a 1-D grid of ceil(M / 64) * ceil(N / 64) blocks, N tiles fastest.
// This is the correctness baseline; tensor-core schedules (mma.sync, wgmma, TMA
// pipelines) replace it for speed.
//
//===----------------------------------------------------------------------===//

#include "Common.h"

using namespace mlir;
using namespace kopt;
using namespace kopt::kb;

namespace {
constexpr int64_t kBM = 64, kBN = 64, kBK = 16;
constexpr int64_t kTX = 16, kTY = 16; // threads per block: kTX * kTY
constexpr int64_t kTM = kBM / kTY, kTN = kBN / kTX;
constexpr int64_t kThreads = kTX * kTY;
} // namespace

/// Stages one operand tile into shared memory. The operand's logical tile has
/// rows `outer` (m or n, size `tileOuter`) and the K step; `map` takes the
/// contraction's loop dims (d0 = m, d1 = n, d2 = k) to the memref's indices.
/// Threads walk the memref's contiguous dimension for coalesced loads.
static LogicalResult stageTile(OpBuilder &b, Location loc, linalg::GenericOp g,
                               Value mem, AffineMap map, unsigned outerDim,
                               int64_t tileOuter, Value outerBase, int64_t outerSize,
                               Value kBase, int64_t kSize, Value tid, Value smem) {
  // Contiguous along K when the map's last result is d2.
  auto last = dyn_cast<AffineDimExpr>(map.getResults().back());
  bool kContiguous = last && last.getPosition() == 2;
  Type elt = cast<MemRefType>(mem.getType()).getElementType();
  Value zero = arith::ConstantOp::create(b, loc, b.getZeroAttr(elt));
  int64_t tileElems = tileOuter * kBK;
  for (int64_t r = 0; r < tileElems / kThreads; ++r) {
    Value e = arith::AddIOp::create(b, loc, tid, indexConst(b, loc, r * kThreads));
    Value outerOff, kOff;
    if (kContiguous) {
      outerOff = arith::DivUIOp::create(b, loc, e, indexConst(b, loc, kBK));
      kOff = arith::RemUIOp::create(b, loc, e, indexConst(b, loc, kBK));
    } else {
      kOff = arith::DivUIOp::create(b, loc, e, indexConst(b, loc, tileOuter));
      outerOff = arith::RemUIOp::create(b, loc, e, indexConst(b, loc, tileOuter));
    }
    Value outer = arith::AddIOp::create(b, loc, outerBase, outerOff);
    Value k = arith::AddIOp::create(b, loc, kBase, kOff);
    Value inOuter = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, outer,
                                          indexConst(b, loc, outerSize));
    Value inK = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, k,
                                      indexConst(b, loc, kSize));
    Value inside = arith::AndIOp::create(b, loc, inOuter, inK);
    SmallVector<Value> dims(3, indexConst(b, loc, 0));
    dims[outerDim] = outer;
    dims[2] = k;
    auto ifOp = scf::IfOp::create(b, loc, TypeRange{elt}, inside, /*withElse=*/true);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(ifOp.thenBlock());
      FailureOr<SmallVector<Value>> idx = applyIndexingMap(b, loc, map, dims);
      if (failed(idx))
        return g.emitOpError("unsupported operand indexing map");
      scf::YieldOp::create(b, loc, memref::LoadOp::create(b, loc, mem, *idx).getResult());
      b.setInsertionPointToStart(ifOp.elseBlock());
      scf::YieldOp::create(b, loc, zero);
    }
    memref::StoreOp::create(b, loc, ifOp.getResult(0), smem, ValueRange{kOff, outerOff});
  }
  return success();
}

FailureOr<LaunchConfig> kopt::buildMatmulKernel(KernelOp kernel, gpu::GPUFuncOp func) {
  SmallVector<linalg::GenericOp> gs = generics(kernel);
  linalg::GenericOp mm = gs.front();
  if (mm.getNumReductionLoops() != 1 || mm.getNumLoops() != 3)
    return mm.emitOpError("the first generic of a matmul kernel must be the "
                          "contraction");
  linalg::GenericOp epilogue;
  if (gs.size() == 2)
    epilogue = gs[1];
  if (gs.size() > 2 ||
      (epilogue && (epilogue.getNumDpsInputs() != 1 ||
                    epilogue.getDpsInputOperand(0)->get() != mm.getResult(0) ||
                    !llvm::all_of(epilogue.getIndexingMapsArray(),
                                  [](AffineMap m) { return m.isIdentity(); }))))
    return kernel.emitOpError("matmul kernels take one elementwise epilogue on the "
                              "contraction's result at most");
  AffineMap outMap = mm.getIndexingMapsArray().back();
  if (outMap != AffineMap::getMultiDimIdentityMap(3, mm.getContext()).getMajorSubMap(2))
    return mm.emitOpError("contraction output must be indexed (d0, d1)");

  KernelIO io(kernel, func);
  Location loc = mm.getLoc();
  Value result = epilogue ? epilogue.getResult(0) : mm.getResult(0);
  Value out = io.memrefOf(result);
  Value memA = io.memrefOf(mm.getDpsInputOperand(0)->get());
  Value memB = io.memrefOf(mm.getDpsInputOperand(1)->get());
  if (!out || !memA || !memB)
    return mm.emitOpError("matmul operands and result must be kernel arguments");
  Value init = mm.getDpsInitOperand(0)->get();
  FloatAttr zeroAttr;
  if (auto fill = init.getDefiningOp<linalg::FillOp>())
    if (auto c = fill.getInputs()[0].getDefiningOp<arith::ConstantOp>())
      zeroAttr = dyn_cast<FloatAttr>(c.getValue());
  if (!zeroAttr || !zeroAttr.getValue().isZero())
    return mm.emitOpError("contraction accumulator must start from a fill of 0");

  SmallVector<int64_t> loops = mm.getStaticLoopRanges();
  int64_t M = loops[0], N = loops[1], K = loops[2];
  AffineMap mapA = mm.getMatchingIndexingMap(mm.getDpsInputOperand(0));
  AffineMap mapB = mm.getMatchingIndexingMap(mm.getDpsInputOperand(1));

  // A 1-D grid over the output tiles, N fastest: gridDim.x allows 2^31 - 1
  // blocks where gridDim.y would stop at 65535 row tiles.
  int64_t tilesN = llvm::divideCeil(N, kBN), tilesM = llvm::divideCeil(M, kBM);
  if (tilesN * tilesM > kMaxGridX)
    return mm.emitOpError("needs ")
           << tilesN * tilesM << " blocks of " << kBM << "x" << kBN
           << ", more than a grid's " << kMaxGridX;
  LaunchConfig cfg;
  cfg.grid = {tilesN * tilesM, 1, 1};
  cfg.block = {kThreads, 1, 1};

  OpBuilder b = OpBuilder::atBlockBegin(&func.front());
  Attribute workgroup =
      gpu::AddressSpaceAttr::get(b.getContext(), gpu::AddressSpace::Workgroup);
  Type eltA = cast<MemRefType>(memA.getType()).getElementType();
  Type eltB = cast<MemRefType>(memB.getType()).getElementType();
  Value smemA = func.addWorkgroupAttribution(
      MemRefType::get({kBK, kBM}, eltA, MemRefLayoutAttrInterface(), workgroup), loc);
  Value smemB = func.addWorkgroupAttribution(
      MemRefType::get({kBK, kBN}, eltB, MemRefLayoutAttrInterface(), workgroup), loc);

  Value tid = threadIdX(b, loc);
  Value tx = arith::RemUIOp::create(b, loc, tid, indexConst(b, loc, kTX));
  Value ty = arith::DivUIOp::create(b, loc, tid, indexConst(b, loc, kTX));
  Value tile = blockIdX(b, loc);
  Value n0 = arith::MulIOp::create(
      b, loc, arith::RemUIOp::create(b, loc, tile, indexConst(b, loc, tilesN)),
      indexConst(b, loc, kBN));
  Value m0 = arith::MulIOp::create(
      b, loc, arith::DivUIOp::create(b, loc, tile, indexConst(b, loc, tilesN)),
      indexConst(b, loc, kBM));

  Type accType = mm.getBody()->getArguments().back().getType();
  Value zero = arith::ConstantOp::create(b, loc, b.getZeroAttr(accType));
  SmallVector<Value> accInit(kTM * kTN, zero);
  int64_t numKTiles = llvm::divideCeil(K, kBK);
  auto kLoop = scf::ForOp::create(b, loc, indexConst(b, loc, 0),
                                  indexConst(b, loc, numKTiles),
                                  indexConst(b, loc, 1), accInit);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(kLoop.getBody());
    Value k0 = arith::MulIOp::create(b, loc, kLoop.getInductionVar(),
                                     indexConst(b, loc, kBK));
    if (failed(stageTile(b, loc, mm, memA, mapA, /*outerDim=*/0, kBM, m0, M, k0, K,
                         tid, smemA)) ||
        failed(stageTile(b, loc, mm, memB, mapB, /*outerDim=*/1, kBN, n0, N, k0, K,
                         tid, smemB)))
      return failure();
    gpu::BarrierOp::create(b, loc);
    auto inner = scf::ForOp::create(b, loc, indexConst(b, loc, 0),
                                    indexConst(b, loc, kBK), indexConst(b, loc, 1),
                                    kLoop.getRegionIterArgs());
    {
      OpBuilder::InsertionGuard innerGuard(b);
      b.setInsertionPointToStart(inner.getBody());
      Value kk = inner.getInductionVar();
      SmallVector<Value> a(kTM), bv(kTN);
      for (int64_t i = 0; i < kTM; ++i) {
        Value row = arith::AddIOp::create(b, loc, ty, indexConst(b, loc, i * kTY));
        a[i] = memref::LoadOp::create(b, loc, smemA, ValueRange{kk, row});
      }
      for (int64_t j = 0; j < kTN; ++j) {
        Value col = arith::AddIOp::create(b, loc, tx, indexConst(b, loc, j * kTX));
        bv[j] = memref::LoadOp::create(b, loc, smemB, ValueRange{kk, col});
      }
      SmallVector<Value> next;
      for (int64_t i = 0; i < kTM; ++i)
        for (int64_t j = 0; j < kTN; ++j)
          next.push_back(clonePayload(
              b, mm, {a[i], bv[j], inner.getRegionIterArgs()[i * kTN + j]}));
      scf::YieldOp::create(b, loc, next);
    }
    gpu::BarrierOp::create(b, loc);
    scf::YieldOp::create(b, loc, inner.getResults());
  }

  // Epilogue: round and store inside the bounds.
  Value cM = indexConst(b, loc, M), cN = indexConst(b, loc, N);
  Type outElt = cast<MemRefType>(out.getType()).getElementType();
  for (int64_t i = 0; i < kTM; ++i) {
    Value m = arith::AddIOp::create(
        b, loc, m0, arith::AddIOp::create(b, loc, ty, indexConst(b, loc, i * kTY)));
    Value inM = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, m, cM);
    for (int64_t j = 0; j < kTN; ++j) {
      Value n = arith::AddIOp::create(
          b, loc, n0, arith::AddIOp::create(b, loc, tx, indexConst(b, loc, j * kTX)));
      Value inN = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, n, cN);
      Value inside = arith::AndIOp::create(b, loc, inM, inN);
      auto ifOp = scf::IfOp::create(b, loc, inside, /*withElseRegion=*/false);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(ifOp.thenBlock());
      Value v = kLoop.getResult(i * kTN + j);
      if (epilogue)
        v = clonePayload(b, epilogue,
                         {v, arith::ConstantOp::create(b, loc, b.getZeroAttr(outElt))});
      memref::StoreOp::create(b, loc, v, out, ValueRange{m, n});
    }
  }
  gpu::ReturnOp::create(b, loc);
  return cfg;
}
