//===- Grid.cpp - where a matmul block works ------------------------------===//
//
// The 1-D grid of a matmul kernel and a block's place in it: the block
// tiles in grouped rasterization (swizzle), split-K's K ranges; the
// counted loops the builders emit, and the kopt.mainloop op of the
// tensor-core paths (expanded later by kopt-pipeline, Mainloop/).
//
//===----------------------------------------------------------------------===//

#include "MatmulBuilder.h"

using namespace mlir;
using namespace kopt;
using namespace kopt::kb;
namespace sched = kopt::schedule;

std::pair<Value, Value> kb::tileCoordinates(OpBuilder &b, Location loc,
                                            const Contraction &c, int64_t bm,
                                            int64_t bn, int64_t swizzle,
                                            Value tile) {
  int64_t tilesN = llvm::divideCeil(c.N, bn),
          tilesM = llvm::divideCeil(c.M, bm);
  Value tileM, tileN;
  if (swizzle <= 1 || tilesM <= 1) {
    tileN = arith::RemUIOp::create(b, loc, tile, indexConst(b, loc, tilesN));
    tileM = arith::DivUIOp::create(b, loc, tile, indexConst(b, loc, tilesN));
  } else {
    Value perGroup = indexConst(b, loc, swizzle * tilesN);
    Value group = arith::DivUIOp::create(b, loc, tile, perGroup);
    Value firstM =
        arith::MulIOp::create(b, loc, group, indexConst(b, loc, swizzle));
    Value rows = arith::MinSIOp::create(
        b, loc,
        arith::SubIOp::create(b, loc, indexConst(b, loc, tilesM), firstM),
        indexConst(b, loc, swizzle));
    Value local = arith::RemUIOp::create(b, loc, tile, perGroup);
    tileM = arith::AddIOp::create(b, loc, firstM,
                                  arith::RemUIOp::create(b, loc, local, rows));
    tileN = arith::DivUIOp::create(b, loc, local, rows);
  }
  Value n0 = arith::MulIOp::create(b, loc, tileN, indexConst(b, loc, bn));
  Value m0 = arith::MulIOp::create(b, loc, tileM, indexConst(b, loc, bm));
  return {m0, n0};
}

/// The 1-D grid and this block's place in it. Blocks b = split * tiles + tile:
/// with split-K S > 1, split s computes K tiles [s P, (s + 1) P), P =
/// ceil(ceil(K / block_k) / S) (loads past K read zeros, so a short or empty
/// last split is correct). With swizzle G > 1 the tiles are visited in groups
/// of G tile rows, M fastest within a group (grouped rasterization: blocks
/// running together share rows of A and columns of B in L2); with G = 1,
/// row-major order.
FailureOr<TileOrigin> kb::tileOrigin(OpBuilder &b, Location loc,
                                     const Contraction &c, int64_t bm,
                                     int64_t bn, int64_t bk, int64_t swizzle,
                                     int64_t splitK, LaunchConfig &cfg) {
  int64_t tilesN = llvm::divideCeil(c.N, bn),
          tilesM = llvm::divideCeil(c.M, bm);
  if (tilesN * tilesM > kMaxGridX / splitK)
    return linalg::GenericOp(c.mm).emitOpError("needs ")
           << tilesN * tilesM * splitK << " blocks of " << bm << "x" << bn
           << (splitK > 1 ? " times split_k" : "") << ", more than a grid's "
           << kMaxGridX;
  TileOrigin o;
  o.tiles = tilesN * tilesM;
  o.kTiles = llvm::divideCeil(llvm::divideCeil(c.K, bk), splitK);
  cfg.grid = {o.tiles * splitK, 1, 1};
  Value tile = blockIdX(b, loc);
  o.split = indexConst(b, loc, 0);
  if (splitK > 1) {
    Value bid = tile;
    tile = arith::RemUIOp::create(b, loc, bid, indexConst(b, loc, o.tiles));
    o.split = arith::DivUIOp::create(b, loc, bid, indexConst(b, loc, o.tiles));
    o.kBase = arith::MulIOp::create(b, loc, o.split,
                                    indexConst(b, loc, o.kTiles * bk));
  }
  o.tile = tile;
  std::tie(o.m0, o.n0) = tileCoordinates(b, loc, c, bm, bn, swizzle, tile);
  return o;
}

Value kb::stridedIndex(OpBuilder &b, Location loc, Value i, int64_t stride,
                       Value offset) {
  Value scaled = arith::MulIOp::create(b, loc, i, indexConst(b, loc, stride));
  return arith::AddIOp::create(b, loc, scaled, offset);
}

scf::ForOp kb::countedLoop(OpBuilder &b, Location loc, int64_t count,
                           ValueRange init) {
  Value lb = indexConst(b, loc, 0);
  Value ub = indexConst(b, loc, count);
  Value step = indexConst(b, loc, 1);
  return scf::ForOp::create(b, loc, lb, ub, step, init);
}

MainloopOp kb::createMainloop(
    OpBuilder &b, Location loc, const Contraction &c,
    const sched::MatmulSchedule &s, Value m0, Value n0, Value kBegin,
    Value kTiles, ValueRange init, ArrayRef<int64_t> tileShapeA,
    ArrayRef<int64_t> tileShapeB, std::optional<int64_t> barrierOffset,
    bool drain,
    function_ref<SmallVector<Value>(Value, Value, ValueRange)> body) {
  MLIRContext *ctx = b.getContext();
  Type elt = cast<MemRefType>(c.memA.getType()).getElementType();
  SmallVector<Value> maps;
  if (c.tensorMapA)
    maps = {c.tensorMapA, c.tensorMapB};
  auto op = MainloopOp::create(
      b, loc, ValueRange(init).getTypes(), c.memA, c.memB, maps, m0, n0, kBegin,
      kTiles, init, ScheduleAttr::get(ctx, s),
      b.getAffineMapArrayAttr({c.mapA, c.mapB}),
      barrierOffset ? b.getI64IntegerAttr(*barrierOffset) : IntegerAttr(),
      drain ? b.getUnitAttr() : UnitAttr());
  auto space = b.getI64IntegerAttr(3);
  SmallVector<Type> argTypes = {
      MemRefType::get(tileShapeA, elt, MemRefLayoutAttrInterface(), space),
      MemRefType::get(tileShapeB, elt, MemRefLayoutAttrInterface(), space)};
  llvm::append_range(argTypes, ValueRange(init).getTypes());
  OpBuilder::InsertionGuard guard(b);
  Block *block = b.createBlock(&op.getBody(), {}, argTypes,
                               SmallVector<Location>(argTypes.size(), loc));
  SmallVector<Value> acc = body(block->getArgument(0), block->getArgument(1),
                                block->getArguments().drop_front(2));
  YieldOp::create(b, loc, acc);
  return op;
}
