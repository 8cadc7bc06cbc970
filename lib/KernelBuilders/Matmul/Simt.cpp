//===- Simt.cpp - FFMA matmul kernels -------------------------------------===//
//
// instruction = ffma: the exact f32 path on the CUDA cores. Threads form a
// grid of 16 along N; each owns chunk x chunk outputs per round, stages the
// operand tiles synchronously into shared memory (one buffer or two) and
// clones the contraction payload per multiply-accumulate (fused into an
// FMA).
//
//===----------------------------------------------------------------------===//

#include "Epilogue.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"

using namespace mlir;
using namespace kopt;
using namespace kopt::kb;
namespace sched = kopt::schedule;

static MemRefType workgroupBuffer(OpBuilder &b, ArrayRef<int64_t> shape,
                                  Type elt) {
  return MemRefType::get(
      shape, elt, MemRefLayoutAttrInterface(),
      gpu::AddressSpaceAttr::get(b.getContext(), gpu::AddressSpace::Workgroup));
}

/// The contraction payload acc + a * b for one multiply-accumulate, with the
/// product and the sum fused into one FMA (one rounding, as the ffma
/// instruction, cuBLAS and PyTorch's CUDA kernels compute it) when the cloned
/// payload ends in addf(mulf(x, y), acc).
Value kb::multiplyAccumulate(OpBuilder &b, Location loc, linalg::GenericOp mm,
                             Value a, Value bv, Value acc) {
  Value sum = clonePayload(b, mm, {a, bv, acc});
  auto add = sum.getDefiningOp<arith::AddFOp>();
  if (!add)
    return sum;
  for (unsigned i = 0; i < 2; ++i) {
    auto mul = add->getOperand(i).getDefiningOp<arith::MulFOp>();
    if (!mul || add->getOperand(1 - i) != acc || !mul->hasOneUse())
      continue;
    Value fma = math::FmaOp::create(b, loc, mul.getLhs(), mul.getRhs(), acc);
    add->erase();
    mul->erase();
    return fma;
  }
  return sum;
}

namespace {
/// Builds one FFMA kernel (buildSimt): its set-up, the K loop (each K tile
/// staged, then the inner products of its rows) and the epilogue.
class SimtBuilder {
public:
  SimtBuilder(const Contraction &c, gpu::GPUFuncOp func,
              const sched::MatmulSchedule &s)
      : c(c), func(func), s(s), mm(c.mm), loc(mm.getLoc()),
        b(OpBuilder::atBlockBegin(&func.front())) {
    cfg.block = {kThreads, 1, 1};
  }
  FailureOr<LaunchConfig> build();

private:
  /// The thread's elements of a K tile of A and of B, loaded into
  /// registers.
  using TileRegisters = std::array<SmallVector<TileElement>, 2>;

  const Contraction &c;
  gpu::GPUFuncOp func;
  const sched::MatmulSchedule &s;
  const int64_t kBM = s.blockM, kBN = s.blockN, kBK = s.blockK;
  // The thread grid kopt-tile's thread tiles describe (simtThreads).
  const SimtThreads grid = simtThreads(s);
  const int64_t kThreads = s.threads(), kTX = grid.tx, kTY = grid.ty;
  const int64_t kTM = kBM / kTY, kTN = kBN / kTX;
  const int64_t kChunk = grid.chunk;
  // stages = 2: two buffers; the next K tile's elements are loaded into
  // registers before this tile is computed and stored into the other buffer
  // after it (one barrier per K tile).
  const bool kDouble = s.stages == 2;
  linalg::GenericOp mm;
  Location loc;
  OpBuilder b;
  LaunchConfig cfg;

  Type eltA, eltB;
  Value smemA, smemB, tid, rowBase, colBase, m0, n0;
  TileOrigin org;
  SmallVector<Value> accInit;
  StageSpec a, bs;
  std::array<std::pair<const StageSpec *, Value>, 2> operands;
  scf::ForOp kLoop;

  LogicalResult setUp();
  Value rowOf(int64_t i);
  Value colOf(int64_t j);
  Value kOf(Value kt);
  FailureOr<TileRegisters> loadTiles(Value kt);
  void storeTiles(const TileRegisters &regs, Value buffer);
  LogicalResult buildKLoop();
  LogicalResult buildKTile();
  scf::ForOp buildInnerProducts(ArrayRef<Value> buffer);
  SmallVector<Value> readRow(ArrayRef<Value> buffer, Value kk, Value smem,
                             Type elt, int64_t count,
                             function_ref<Value(int64_t)> offsetOf);
  void buildEpilogue();
};
} // namespace

/// The shared tiles, the thread's place in the thread grid and the block's
/// in the grid, the zero accumulators and the operands' staging.
LogicalResult SimtBuilder::setUp() {
  eltA = cast<MemRefType>(c.memA.getType()).getElementType();
  eltB = cast<MemRefType>(c.memB.getType()).getElementType();
  // stages = 2: two buffers; the next K tile's elements are loaded into
  // registers before this tile is computed and stored into the other buffer
  // after it (one barrier per K tile).
  SmallVector<int64_t> shapeA = {kBK, kBM}, shapeB = {kBK, kBN};
  if (kDouble) {
    shapeA.insert(shapeA.begin(), 2);
    shapeB.insert(shapeB.begin(), 2);
  }
  smemA = func.addWorkgroupAttribution(workgroupBuffer(b, shapeA, eltA), loc);
  smemB = func.addWorkgroupAttribution(workgroupBuffer(b, shapeB, eltB), loc);
  if (kChunk > 1) // vector loads of 4 elements
    for (unsigned i = 0; i < 2; ++i)
      func.setWorkgroupAttributionAttr(i, LLVM::LLVMDialect::getAlignAttrName(),
                                       b.getI64IntegerAttr(16));

  tid = threadIdX(b, loc);
  Value tx = arith::RemUIOp::create(b, loc, tid, indexConst(b, loc, kTX));
  Value ty = arith::DivUIOp::create(b, loc, tid, indexConst(b, loc, kTX));
  rowBase = arith::MulIOp::create(b, loc, ty, indexConst(b, loc, kChunk));
  colBase = arith::MulIOp::create(b, loc, tx, indexConst(b, loc, kChunk));
  FailureOr<TileOrigin> origin =
      tileOrigin(b, loc, c, kBM, kBN, kBK, s.swizzle, s.splitK, cfg);
  if (failed(origin))
    return failure();
  org = *origin;
  m0 = org.m0, n0 = org.n0;

  Type accType = mm.getBody()->getArguments().back().getType();
  Value zero = arith::ConstantOp::create(b, loc, b.getZeroAttr(accType));
  accInit.assign(kTM * kTN, zero);
  a = StageSpec{c.memA, c.mapA, 0, kBM, kBK, c.M, c.K, smemA, false};
  bs = StageSpec{c.memB, c.mapB, 1, kBN, kBK, c.N, c.K, smemB, false};
  operands = {{{&a, m0}, {&bs, n0}}};
  return success();
}

/// Offsets of the thread's i-th row and j-th column in the block tile.
Value SimtBuilder::rowOf(int64_t i) {
  return arith::AddIOp::create(
      b, loc, rowBase,
      indexConst(b, loc, (i / kChunk) * kTY * kChunk + i % kChunk));
}
Value SimtBuilder::colOf(int64_t j) {
  return arith::AddIOp::create(
      b, loc, colBase,
      indexConst(b, loc, (j / kChunk) * kTX * kChunk + j % kChunk));
}

/// The first K element of K tile `kt` (an index).
Value SimtBuilder::kOf(Value kt) {
  Value k0 = arith::MulIOp::create(b, loc, kt, indexConst(b, loc, kBK));
  return org.kBase ? arith::AddIOp::create(b, loc, k0, org.kBase) : k0;
}

FailureOr<SimtBuilder::TileRegisters> SimtBuilder::loadTiles(Value kt) {
  Value k0 = kOf(kt);
  TileRegisters out;
  for (auto [i, operand] : llvm::enumerate(operands)) {
    auto [spec, base] = operand;
    for (int64_t r = 0, n = elementLoads(*spec, kThreads); r < n; ++r) {
      FailureOr<TileElement> e =
          loadTileElement(b, loc, mm, *spec, base, k0, tid, kThreads, r);
      if (failed(e))
        return failure();
      out[i].push_back(*e);
    }
  }
  return out;
}

void SimtBuilder::storeTiles(const TileRegisters &regs, Value buffer) {
  for (auto [i, operand] : llvm::enumerate(operands))
    for (const TileElement &e : regs[i])
      storeTileElement(b, loc, *operand.first, operand.first->smem, buffer, e);
}

/// The K loop (stages = 2: after the first tile's staging), its iteration
/// built by buildKTile.
LogicalResult SimtBuilder::buildKLoop() {
  if (kDouble) {
    FailureOr<TileRegisters> first = loadTiles(indexConst(b, loc, 0));
    if (failed(first))
      return failure();
    storeTiles(*first, indexConst(b, loc, 0));
    gpu::BarrierOp::create(b, loc);
  }
  kLoop = scf::ForOp::create(b, loc, indexConst(b, loc, 0),
                             indexConst(b, loc, org.kTiles),
                             indexConst(b, loc, 1), accInit);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(kLoop.getBody());
  return buildKTile();
}

/// One iteration of the K loop: the K tile staged (stages = 2: the next
/// one's elements loaded, stored into the other buffer after the inner
/// products), the inner products, a barrier.
LogicalResult SimtBuilder::buildKTile() {
  Value kt = kLoop.getInductionVar();
  // The buffer computed in this iteration (stages = 2), as leading indices.
  SmallVector<Value> buffer;
  FailureOr<TileRegisters> nextTile;
  if (kDouble) {
    buffer.push_back(arith::RemUIOp::create(b, loc, kt, indexConst(b, loc, 2)));
    // Tile kt + 1 (past the split's last tile: loads that nobody reads).
    nextTile =
        loadTiles(arith::AddIOp::create(b, loc, kt, indexConst(b, loc, 1)));
    if (failed(nextTile))
      return failure();
  } else {
    if (failed(stageOperandTiles(b, loc, mm, a, bs, m0, n0, kOf(kt), tid,
                                 kThreads)))
      return failure();
    gpu::BarrierOp::create(b, loc);
  }
  scf::ForOp inner = buildInnerProducts(buffer);
  if (kDouble)
    storeTiles(*nextTile, arith::SubIOp::create(b, loc, indexConst(b, loc, 1),
                                                buffer.front()));
  gpu::BarrierOp::create(b, loc);
  scf::YieldOp::create(b, loc, inner.getResults());
  return success();
}

/// The inner products of the staged K tile `buffer` (leading indices):
/// block_k rows, each thread's values of a row multiplied and accumulated.
scf::ForOp SimtBuilder::buildInnerProducts(ArrayRef<Value> buffer) {
  auto inner =
      scf::ForOp::create(b, loc, indexConst(b, loc, 0), indexConst(b, loc, kBK),
                         indexConst(b, loc, 1), kLoop.getRegionIterArgs());
  OpBuilder::InsertionGuard innerGuard(b);
  b.setInsertionPointToStart(inner.getBody());
  Value kk = inner.getInductionVar();
  SmallVector<Value> av = readRow(buffer, kk, smemA, eltA, kTM,
                                  [&](int64_t i) { return rowOf(i); });
  SmallVector<Value> bv = readRow(buffer, kk, smemB, eltB, kTN,
                                  [&](int64_t j) { return colOf(j); });
  SmallVector<Value> next;
  for (int64_t i = 0; i < kTM; ++i)
    for (int64_t j = 0; j < kTN; ++j)
      next.push_back(multiplyAccumulate(
          b, loc, mm, av[i], bv[j], inner.getRegionIterArgs()[i * kTN + j]));
  scf::YieldOp::create(b, loc, next);
  return inner;
}

/// The thread's values of row kk of a staged tile: chunks of kChunk.
SmallVector<Value> SimtBuilder::readRow(ArrayRef<Value> buffer, Value kk,
                                        Value smem, Type elt, int64_t count,
                                        function_ref<Value(int64_t)> offsetOf) {
  SmallVector<Value> vals;
  for (int64_t i = 0; i < count; i += kChunk) {
    SmallVector<Value> idx(buffer);
    idx.push_back(kk);
    idx.push_back(offsetOf(i));
    if (kChunk == 1) {
      vals.push_back(memref::LoadOp::create(b, loc, smem, idx));
      continue;
    }
    auto vecType = VectorType::get({kChunk}, elt);
    Value v = vector::LoadOp::create(
        b, loc, vecType, smem, idx,
        /*nontemporal=*/false,
        llvm::MaybeAlign(kChunk * elt.getIntOrFloatBitWidth() / 8));
    for (int64_t e = 0; e < kChunk; ++e)
      vals.push_back(vector::ExtractOp::create(b, loc, v, e));
  }
  return vals;
}

void SimtBuilder::buildEpilogue() {
  // validate() admits vector_width = 4 only with 4-column chunks and N % 4 ==
  // 0.
  const int64_t kVec = s.vectorWidth;
  emitEpilogue(b, loc, c, org, s.splitK, EpilogueThreads{tid, s.threads()},
               /*staged=*/nullptr, [&](OutputFn emit) {
                 for (int64_t i = 0; i < kTM; ++i) {
                   Value m = arith::AddIOp::create(b, loc, m0, rowOf(i));
                   for (int64_t j = 0; j < kTN; j += kVec) {
                     Value n = arith::AddIOp::create(b, loc, n0, colOf(j));
                     SmallVector<Value> vs;
                     for (int64_t v = 0; v < kVec; ++v)
                       vs.push_back(kLoop.getResult(i * kTN + j + v));
                     emit(vs, m, n);
                   }
                 }
               });
}

FailureOr<LaunchConfig> SimtBuilder::build() {
  if (failed(setUp()) || failed(buildKLoop()))
    return failure();
  buildEpilogue();
  gpu::ReturnOp::create(b, loc);
  return cfg;
}

/// Threads form kTY x kTX (kTX = 16 along N) and thread (ty, tx) owns kTM x kTN
/// outputs. When kTM and kTN are multiples of 4 they come in 4 x 4 chunks:
/// rows ty * 4 + kTY * 4 * ci + (0..3), columns tx * 4 + 64 * cj + (0..3), so
/// that each thread reads 4 consecutive values of A and of B from shared
/// memory per vector load, and the 16 threads of a row store 64 consecutive
/// columns (4 per store with vector_width = 4); otherwise rows ty + kTY i and
/// columns tx + 16 j, one value per load and store.
FailureOr<LaunchConfig> kb::buildSimt(const Contraction &c, gpu::GPUFuncOp func,
                                      const sched::MatmulSchedule &s) {
  return SimtBuilder(c, func, s).build();
}
