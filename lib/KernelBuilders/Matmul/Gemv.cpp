//===- Gemv.cpp - matrix-vector matmul kernels ----------------------------===//
//
// instruction = gemv, for small M: the lanes of a warp split K and read
// both operands straight from global memory (16-byte loads), a shuffle
// butterfly adds their sums; no shared memory.
//
//===----------------------------------------------------------------------===//

#include "Epilogue.h"

using namespace mlir;
using namespace kopt;
using namespace kopt::kb;
namespace sched = kopt::schedule;

/// instruction = gemv, for small M with both operands contiguous along K (a
/// Linear layer's activations times its [N, K] weight): block_n output
/// columns per block, warp_n per warp, min(block_m, M) rows per block. Lane l
/// of a warp reads, per K step of 32 * block_k, the block_k elements at
/// k0 + l * block_k of its warp's warp_n B rows and of the block's A rows as
/// 16-byte loads straight from global memory (A rows are shared by all warps
/// and stay in L1), multiply-accumulates them into min(block_m, M) x warp_n
/// f32 registers, and after the K loop the warp adds its lanes' sums with a
/// shuffle butterfly; lane (r * warp_n + j) % 32 stores output (r, j). Loads
/// past K read zeros (selected), rows past M or N read the last row (clamped)
/// and are not stored. With split_k S, split s runs K steps [s P, (s + 1) P)
/// and the split-K epilogue adds the partials. No shared memory: the kernel is
/// bound by the bandwidth of reading B once.
FailureOr<LaunchConfig> kb::buildGemv(const Contraction &c, gpu::GPUFuncOp func,
                                      const sched::MatmulSchedule &s) {
  linalg::GenericOp mm = c.mm;
  Location loc = mm.getLoc();
  MLIRContext *ctx = func.getContext();
  // validate() admitted only K-contiguous operands: A (m, k), B (n, k).
  auto d = [&](unsigned i) { return getAffineDimExpr(i, ctx); };
  if (c.mapA != AffineMap::get(3, 0, {d(0), d(2)}, ctx) ||
      c.mapB != AffineMap::get(3, 0, {d(1), d(2)}, ctx))
    return mm.emitOpError("gemv needs A indexed (m, k) and B indexed (n, k)");
  Type elt = cast<MemRefType>(c.memA.getType()).getElementType();
  const int64_t kRows = std::min(s.blockM, c.M), kCols = s.warpN;
  const int64_t kThreads = s.threads();
  const int64_t kVec = 128 / elt.getIntOrFloatBitWidth(); // per 16 bytes
  const int64_t kLoads = s.blockK / kVec, kStep = 32 * s.blockK;
  LaunchConfig cfg;
  cfg.block = {kThreads, 1, 1};

  OpBuilder b = OpBuilder::atBlockBegin(&func.front());
  Value tid = threadIdX(b, loc);
  Value lane = arith::RemUIOp::create(b, loc, tid, indexConst(b, loc, 32));
  Value warp = arith::DivUIOp::create(b, loc, tid, indexConst(b, loc, 32));
  FailureOr<TileOrigin> origin = tileOrigin(b, loc, c, s.blockM, s.blockN,
                                            kStep, s.swizzle, s.splitK, cfg);
  if (failed(origin))
    return failure();
  const TileOrigin &org = *origin;
  Value colBase = arith::AddIOp::create(
      b, loc, org.n0,
      arith::MulIOp::create(b, loc, warp, indexConst(b, loc, kCols)));
  // Operand rows, clamped inside the operands.
  auto clampedRows = [&](Value base, int64_t count, int64_t size) {
    SmallVector<Value> rows;
    for (int64_t r = 0; r < count; ++r) {
      Value row = arith::AddIOp::create(b, loc, base, indexConst(b, loc, r));
      rows.push_back(
          arith::MinUIOp::create(b, loc, row, indexConst(b, loc, size - 1)));
    }
    return rows;
  };
  SmallVector<Value> aRows = clampedRows(org.m0, kRows, c.M);
  SmallVector<Value> bRows = clampedRows(colBase, kCols, c.N);
  Value laneK =
      arith::MulIOp::create(b, loc, lane, indexConst(b, loc, s.blockK));
  if (org.kBase)
    laneK = arith::AddIOp::create(b, loc, org.kBase, laneK);

  Value zero = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0));
  SmallVector<Value> accInit(kRows * kCols, zero);
  auto vecType = VectorType::get({kVec}, elt);
  Value zeroVec = arith::ConstantOp::create(
      b, loc, vecType, DenseElementsAttr::get(vecType, b.getZeroAttr(elt)));
  auto kLoop = countedLoop(b, loc, org.kTiles, accInit);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(kLoop.getBody());
    Value k0 = stridedIndex(b, loc, kLoop.getInductionVar(), kStep, laneK);
    // All of the step's loads first (memory-level parallelism), then the
    // multiply-accumulates.
    SmallVector<Value> aVecs, bVecs;
    for (int64_t l = 0; l < kLoads; ++l) {
      Value k = arith::AddIOp::create(b, loc, k0, indexConst(b, loc, l * kVec));
      Value inK = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, k,
                                        indexConst(b, loc, c.K));
      Value kc = arith::SelectOp::create(b, loc, inK, k, indexConst(b, loc, 0));
      auto load = [&](Value mem, Value row) -> Value {
        Value v =
            vector::LoadOp::create(b, loc, vecType, mem, ValueRange{row, kc},
                                   /*nontemporal=*/false, llvm::MaybeAlign(16));
        return arith::SelectOp::create(b, loc, inK, v, zeroVec);
      };
      for (Value row : bRows)
        bVecs.push_back(load(c.memB, row));
      for (Value row : aRows)
        aVecs.push_back(load(c.memA, row));
    }
    SmallVector<Value> acc(kLoop.getRegionIterArgs());
    for (int64_t l = 0; l < kLoads; ++l)
      for (int64_t e = 0; e < kVec; ++e)
        for (int64_t r = 0; r < kRows; ++r) {
          Value av = vector::ExtractOp::create(b, loc, aVecs[l * kRows + r], e);
          for (int64_t j = 0; j < kCols; ++j) {
            Value bv =
                vector::ExtractOp::create(b, loc, bVecs[l * kCols + j], e);
            Value &a = acc[r * kCols + j];
            a = multiplyAccumulate(b, loc, mm, av, bv, a);
          }
        }
    scf::YieldOp::create(b, loc, acc);
  }
  // Every lane of the warp gets each output's sum.
  SmallVector<Value> sums;
  for (Value v : kLoop.getResults())
    sums.push_back(warpAllReduce(b, loc, v, [&](Value x, Value y) -> Value {
      return arith::AddFOp::create(b, loc, x, y);
    }));
  emitEpilogue(
      b, loc, c, org, s.splitK, EpilogueThreads{tid, kThreads},
      /*staged=*/nullptr, [&](OutputFn emit) {
        for (int64_t r = 0; r < kRows; ++r)
          for (int64_t j = 0; j < kCols; ++j) {
            int64_t i = r * kCols + j;
            Value mine =
                arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, lane,
                                      indexConst(b, loc, i % 32));
            auto ifOp = scf::IfOp::create(b, loc, mine,
                                          /*withElseRegion=*/false);
            OpBuilder::InsertionGuard guard(b);
            b.setInsertionPointToStart(ifOp.thenBlock());
            Value m =
                arith::AddIOp::create(b, loc, org.m0, indexConst(b, loc, r));
            Value n =
                arith::AddIOp::create(b, loc, colBase, indexConst(b, loc, j));
            emit({sums[i]}, m, n);
          }
      });
  gpu::ReturnOp::create(b, loc);
  return cfg;
}
