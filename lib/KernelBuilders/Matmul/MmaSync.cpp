//===- MmaSync.cpp - mma.sync matmul kernels ------------------------------===//
//
// instruction = mma_sync: warps of m16n8k16 tensor-core tiles fed by
// ldmatrix fragments from the staged tiles of a kopt.mainloop (which
// kopt-pipeline stages synchronously or by a cp.async ring); the
// accumulators stored in pairs or through the staged epilogue.
//
//===----------------------------------------------------------------------===//

#include "Epilogue.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"

using namespace mlir;
using namespace kopt;
using namespace kopt::kb;
namespace sched = kopt::schedule;

namespace {
/// The tile shape of the tensor-core schedule. Warps form a warpsM x warpsN
/// grid; each owns a warp_m x warp_n tile of 16 x 8 mma tiles.
struct MmaTiles {
  int64_t bm, bn, bk, pad = 8, warpsM, warpsN, stages;
  explicit MmaTiles(const sched::MatmulSchedule &s)
      : bm(s.blockM), bn(s.blockN), bk(s.blockK), warpsM(s.blockM / s.warpM),
        warpsN(s.blockN / s.warpN), stages(s.stages) {}
  int64_t warpTileM() const { return bm / warpsM; }
  int64_t warpTileN() const { return bn / warpsN; }
  int64_t mi() const { return warpTileM() / 16; }
  int64_t ni() const { return warpTileN() / 8; }
  int64_t threads() const { return 32 * warpsM * warpsN; }
};
} // namespace

/// One register of an ldmatrix fragment as mma.sync takes it: vector<2xf16> for
/// f16, an i32 holding two bf16 for bf16.
static Value fragmentRegister(OpBuilder &b, Location loc, Value frag,
                              int64_t i) {
  Value pair = vector::ExtractOp::create(b, loc, frag, i);
  auto pairType = cast<VectorType>(pair.getType());
  if (pairType.getElementType().isF16())
    return pair;
  Value packed = vector::BitCastOp::create(
      b, loc, VectorType::get({1}, b.getI32Type()), pair);
  return vector::ExtractOp::create(b, loc, packed, 0);
}

namespace {
/// A lane's ldmatrix origins: its warp's first row of A and of B in the
/// block tile, and the lane's row and column in an x4 (A) or x2 (B)
/// ldmatrix.
struct LdmatrixLanes {
  Value warpRow, warpCol, aRow, aCol, bRow, bCol;
};
} // namespace

/// One K tile of a warp: for each K step of 16, ldmatrix fragments of its
/// A and B tiles from the staged tiles `smemA` and `smemB`, and mma.sync
/// of every pair into the accumulators `accIn` (4 per 16 x 8 tile);
/// returns the accumulators.
static SmallVector<Value> computeMmaTile(OpBuilder &b, Location loc,
                                         const MmaTiles &t, Type elt,
                                         const LdmatrixLanes &lanes,
                                         Value smemA, Value smemB,
                                         ValueRange accIn) {
  const int64_t kBK = t.bk, kMI = t.mi(), kNI = t.ni();
  Value warpRow = lanes.warpRow, warpCol = lanes.warpCol;
  Value aRow = lanes.aRow, aCol = lanes.aCol, bRow = lanes.bRow,
        bCol = lanes.bCol;
  SmallVector<Value> acc(accIn);
  auto f32 = b.getF32Type();
  auto resultType =
      LLVM::LLVMStructType::getLiteral(b.getContext(), {f32, f32, f32, f32});
  auto fragA = VectorType::get({4, 2}, elt);
  auto fragB = VectorType::get({2, 2}, elt);
  NVVM::MMATypes ptxType =
      elt.isF16() ? NVVM::MMATypes::f16 : NVVM::MMATypes::bf16;
  for (int64_t ks = 0; ks < kBK / 16; ++ks) {
    Value kOff = indexConst(b, loc, ks * 16);
    // One ldmatrix: this lane's row (warpBase + laneRow + tileOffset) and
    // column (laneCol + kOff) of the staged tile `smem`.
    auto ldmatrix = [&](Value smem, VectorType type, Value warpBase,
                        Value laneRow, Value laneCol, int64_t tileOffset,
                        int64_t tiles) {
      Value row = arith::AddIOp::create(
          b, loc, warpBase,
          arith::AddIOp::create(b, loc, laneRow,
                                indexConst(b, loc, tileOffset)));
      Value col = arith::AddIOp::create(b, loc, laneCol, kOff);
      return nvgpu::LdMatrixOp::create(b, loc, type, smem, ValueRange{row, col},
                                       /*transpose=*/false, tiles)
          .getResult();
    };
    SmallVector<Value> aFrag(kMI), bFrag(kNI);
    for (int64_t mi = 0; mi < kMI; ++mi)
      aFrag[mi] = ldmatrix(smemA, fragA, warpRow, aRow, aCol, mi * 16, 4);
    for (int64_t ni = 0; ni < kNI; ++ni)
      bFrag[ni] = ldmatrix(smemB, fragB, warpCol, bRow, bCol, ni * 8, 2);
    for (int64_t mi = 0; mi < kMI; ++mi) {
      SmallVector<Value> aRegs;
      for (int64_t r = 0; r < 4; ++r)
        aRegs.push_back(fragmentRegister(b, loc, aFrag[mi], r));
      for (int64_t ni = 0; ni < kNI; ++ni) {
        SmallVector<Value> bRegs = {fragmentRegister(b, loc, bFrag[ni], 0),
                                    fragmentRegister(b, loc, bFrag[ni], 1)};
        int64_t base = (mi * kNI + ni) * 4;
        SmallVector<Value> cRegs(acc.begin() + base, acc.begin() + base + 4);
        Value d = NVVM::MmaOp::create(
            b, loc, resultType, aRegs, bRegs, cRegs,
            /*shape=*/ArrayRef<int64_t>{16, 8, 16},
            /*b1Op=*/std::nullopt, /*intOverflow=*/std::nullopt,
            /*multiplicandPtxTypes=*/
            std::array<NVVM::MMATypes, 2>{ptxType, ptxType},
            /*multiplicandLayouts=*/
            std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row,
                                           NVVM::MMALayout::col});
        for (int64_t r = 0; r < 4; ++r)
          acc[base + r] = LLVM::ExtractValueOp::create(b, loc, d, r);
      }
    }
  }
  return acc;
}

FailureOr<LaunchConfig> kb::buildMma(const Contraction &c, gpu::GPUFuncOp func,
                                     const sched::MatmulSchedule &s) {
  const MmaTiles t(s);
  const int64_t kBM = t.bm, kBN = t.bn, kBK = t.bk, kPad = t.pad;
  const int64_t kWarpsN = t.warpsN, kWarpTileM = t.warpTileM(),
                kWarpTileN = t.warpTileN(), kMI = t.mi(), kNI = t.ni(),
                kThreads = t.threads();
  linalg::GenericOp mm = c.mm;
  Location loc = mm.getLoc();
  LaunchConfig cfg;
  cfg.block = {kThreads, 1, 1};

  OpBuilder b = OpBuilder::atBlockBegin(&func.front());
  Type elt = cast<MemRefType>(c.memA.getType()).getElementType();
  // kopt-pipeline puts the mainloop's buffers from byte 0 of the dynamic
  // shared memory: tiles of [BM][BK + 8] and [BN][BK + 8] (K contiguous; the
  // 8-element pad spreads ldmatrix rows over the banks), A's then B's; the
  // staged epilogue tile reuses them.
  cfg.dynamicSharedBytes = sched::sharedBytes(s, workloadOf(c));
  Value smem = dynamicSharedMemory(b, loc, func);

  Value tid = threadIdX(b, loc);
  Value lane = arith::RemUIOp::create(b, loc, tid, indexConst(b, loc, 32));
  Value warp = arith::DivUIOp::create(b, loc, tid, indexConst(b, loc, 32));
  Value warpM =
      arith::DivUIOp::create(b, loc, warp, indexConst(b, loc, kWarpsN));
  Value warpN =
      arith::RemUIOp::create(b, loc, warp, indexConst(b, loc, kWarpsN));
  Value warpRow =
      arith::MulIOp::create(b, loc, warpM, indexConst(b, loc, kWarpTileM));
  Value warpCol =
      arith::MulIOp::create(b, loc, warpN, indexConst(b, loc, kWarpTileN));
  FailureOr<TileOrigin> origin =
      tileOrigin(b, loc, c, kBM, kBN, kBK, s.swizzle, s.splitK, cfg);
  if (failed(origin))
    return failure();
  const TileOrigin &org = *origin;
  Value m0 = org.m0, n0 = org.n0;

  // ldmatrix row addresses: x4 for A (lane l: row l % 16, column 8 (l / 16)),
  // x2 for B stored [n][k] (lane l: row l % 8, column 8 ((l / 8) % 2)).
  Value aRow = arith::RemUIOp::create(b, loc, lane, indexConst(b, loc, 16));
  Value aCol = arith::MulIOp::create(
      b, loc, arith::DivUIOp::create(b, loc, lane, indexConst(b, loc, 16)),
      indexConst(b, loc, 8));
  Value bRow = arith::RemUIOp::create(b, loc, lane, indexConst(b, loc, 8));
  Value bCol = arith::MulIOp::create(
      b, loc,
      arith::RemUIOp::create(
          b, loc, arith::DivUIOp::create(b, loc, lane, indexConst(b, loc, 8)),
          indexConst(b, loc, 2)),
      indexConst(b, loc, 8));

  Value zero = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0));
  const int64_t kAccs = kMI * kNI * 4;
  SmallVector<Value> accInit(kAccs, zero);
  // One K tile: ldmatrix fragments from the staged tiles, mma.sync into the
  // accumulators.
  const LdmatrixLanes lanes{warpRow, warpCol, aRow, aCol, bRow, bCol};
  auto computeTile = [&](Value smemA, Value smemB,
                         ValueRange accIn) -> SmallVector<Value> {
    return computeMmaTile(b, loc, t, elt, lanes, smemA, smemB, accIn);
  };
  // The staged epilogue reuses the buffers: no copy may be in flight after
  // the mainloop (drain).
  bool staged = sched::stagedEpilogue(s);
  MainloopOp kLoop = createMainloop(
      b, loc, c, s, m0, n0, org.kBase, indexConst(b, loc, org.kTiles), accInit,
      {kBM, kBK + kPad}, {kBN, kBK + kPad}, std::nullopt, staged, computeTile);

  // Epilogue: lane l holds rows l/4 (+ 8) and columns 2 (l % 4) (+ 1) of each
  // 16 x 8 accumulator tile.
  Value groupRow = arith::DivUIOp::create(b, loc, lane, indexConst(b, loc, 4));
  Value rowBase, colBase;
  std::tie(rowBase, colBase) =
      accumulatorLaneOrigin(b, loc, lane, groupRow, m0, warpRow, n0, warpCol);
  std::optional<StagedEpilogue> stagedTile;
  if (staged)
    stagedTile = beginStagedEpilogue(b, loc, c, s, smem, 0, m0, n0,
                                     EpilogueThreads{tid, kThreads});
  // Registers r and r + 1 are adjacent columns: with vector_width >= 2 they
  // go out (or into the staged tile) as one store.
  emitEpilogue(b, loc, c, org, s.splitK, EpilogueThreads{tid, kThreads},
               stagedTile ? &*stagedTile : nullptr, [&](OutputFn emit) {
                 for (int64_t mi = 0; mi < kMI; ++mi)
                   for (int64_t ni = 0; ni < kNI; ++ni)
                     forEachAccumulatorOfQuad(
                         b, loc, rowBase, mi * 16, colBase, ni * 8,
                         [&](int64_t r) {
                           return kLoop.getResult((mi * kNI + ni) * 4 + r);
                         },
                         std::min<int64_t>(s.vectorWidth, 2), emit);
               });
  gpu::ReturnOp::create(b, loc);
  return cfg;
}
