//===- Persistent.cpp - the ring across a persistent block's tiles --------===//
//
// A wgmma mainloop in a persistent grid (the body of the block's tile
// loop): its K tiles and the next tile's form one stream of loads, so the
// next tile's first stages are in flight during this tile's last K tiles
// and its epilogue.
//
//===----------------------------------------------------------------------===//

#include "Expander.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;
using namespace kopt;
using namespace kopt::kb;
namespace sched = kopt::schedule;

/// The origin (m0, n0) of the tile a persistent block computes in iteration
/// `iv` of `tileLoop`: the side-effect-free ops of the loop body that the
/// op's m0 and n0 come from, cloned at the insertion point with the loop's
/// induction variable replaced by `iv`.
FailureOr<std::pair<Value, Value>> Expander::originAt(scf::ForOp tileLoop,
                                                      Value iv) {
  llvm::SetVector<Operation *> slice;
  SmallVector<Value> work = {op.getM0(), op.getN0()};
  while (!work.empty()) {
    Value v = work.pop_back_val();
    if (auto arg = dyn_cast<BlockArgument>(v);
        arg && arg.getOwner() == tileLoop.getBody() &&
        arg != tileLoop.getInductionVar())
      return op.emitOpError("the tile origin of a persistent grid must be "
                            "computed from the tile loop's induction "
                            "variable, not from its iteration arguments");
    Operation *def = v.getDefiningOp();
    if (!def || def->getBlock() != tileLoop.getBody() || slice.contains(def))
      continue;
    if (!isMemoryEffectFree(def) || def->getNumRegions() != 0)
      return op.emitOpError("the tile origin of a persistent grid must be "
                            "computed without side effects; found ")
             << def->getName();
    slice.insert(def);
    llvm::append_range(work, def->getOperands());
  }
  SmallVector<Operation *> ops = slice.takeVector();
  llvm::sort(ops,
             [](Operation *x, Operation *y) { return x->isBeforeInBlock(y); });
  IRMapping map;
  map.map(tileLoop.getInductionVar(), iv);
  for (Operation *o : ops)
    b.clone(*o, map);
  return std::make_pair(map.lookupOrDefault(op.getM0()),
                        map.lookupOrDefault(op.getN0()));
}

/// Tile iteration `q`'s first flattened load.
Value Expander::firstLoad(Value q) {
  return arith::MulIOp::create(b, loc, q, idx(kTiles));
}

/// With a producer warp: it walks the block's tiles and their K tiles in the
/// consumers' order, each load waiting only for its stage to be released;
/// the consumers run each tile's K loop.
LogicalResult Expander::expandPersistentSpecialized(scf::ForOp tileLoop) {
  Value myTiles = tileLoop.getUpperBound();
  Value iv = tileLoop.getInductionVar();
  scf::IfOp roles = specialize(tileLoop);
  auto tiles = scf::ForOp::create(b, loc, idx(0), myTiles, idx(1));
  b.setInsertionPointToStart(tiles.getBody());
  FailureOr<std::pair<Value, Value>> org =
      originAt(tileLoop, tiles.getInductionVar());
  if (failed(org))
    return failure();
  Value f0 = firstLoad(tiles.getInductionVar());
  auto loads = scf::ForOp::create(b, loc, idx(0), idx(kTiles), idx(1));
  b.setInsertionPointToStart(loads.getBody());
  Value kt = loads.getInductionVar();
  ring->issue(b, loc, arith::AddIOp::create(b, loc, f0, kt), org->first,
              org->second, kElemOf(kt), /*valid=*/Value(),
              /*mayReuse=*/true, /*byLeader=*/false);
  // Each tile's K loop, from the zero accumulators of the tile.
  b.setInsertionPoint(op);
  Value tileF0 = firstLoad(iv);
  auto loop =
      scf::ForOp::create(b, loc, idx(0), idx(kTiles), idx(1), op.getInit());
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value f = arith::AddIOp::create(b, loc, tileF0, loop.getInductionVar());
    scf::YieldOp::create(b, loc, consume(f, loop.getRegionIterArgs()));
  }
  NVVM::WgmmaWaitGroupSyncOp::create(b, loc, 0);
  replaceWith(loop.getResults());
  sinkIntoConsumers(roles);
  return success();
}

/// wgmma in a persistent grid: the block's K tiles form one stream,
/// flattened index f = tile iteration * K tiles + kt, so the ring runs on
/// across tiles: the next tile's first stages are in flight while this
/// tile's last wgmma and its epilogue run. With a producer warp, it walks
/// the block's tiles and their K tiles in the consumers' order, each load
/// waiting only for its stage to be released.
LogicalResult Expander::expandPersistent(scf::ForOp tileLoop) {
  std::optional<int64_t> lb = getConstantIntValue(tileLoop.getLowerBound());
  std::optional<int64_t> stepSize = getConstantIntValue(tileLoop.getStep());
  if (!lb || *lb != 0 || !stepSize || *stepSize != 1)
    return op.emitOpError("in a persistent grid must be the body of the "
                          "block's tile loop, an scf.for from 0 step 1");
  if (op.getKBegin())
    return op.emitOpError("a persistent grid does not split K");
  if (!isa<gpu::GPUFuncOp>(tileLoop->getParentOp()))
    return op.emitOpError("in a persistent grid: the tile loop must be in the "
                          "gpu.func's body");
  setUp(tileLoop);
  Value myTiles = tileLoop.getUpperBound();
  Value iv = tileLoop.getInductionVar();
  if (s.warpSpecialize) {
    if (!ring)
      return op.emitOpError("warp_specialize needs copy = tma");
    return expandPersistentSpecialized(tileLoop);
  }

  // The copies of K tile `kTile` of the tile at (tm0, tn0) into `stage`,
  // flattened index `ahead`; kTile = kTiles (past the block's last tile)
  // reads nothing (cp.async: k beyond K, filling a stage nobody reads;
  // TMA: no copy). Returns the cp.async group (null for TMA).
  auto issueCopies = [&](Value stage, Value tm0, Value tn0, Value kTile,
                         Value ahead) -> FailureOr<Value> {
    Value kBase = arith::MulIOp::create(b, loc, kTile, idx(s.blockK));
    if (ring) {
      Value valid = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                          kTile, idx(kTiles));
      ring->issue(b, loc, ahead, tm0, tn0, kBase, valid, /*mayReuse=*/true);
      return Value();
    }
    return issueCopyGroup(b, loc, op, a, bs, stage, kBase, tm0, tn0, tid,
                          threads);
  };
  Value total = arith::MulIOp::create(b, loc, myTiles, idx(kTiles));
  // Any flattened index (integer divisions: the prologue, and the main loop
  // only when a tile has fewer K tiles than the ring has stages in flight).
  auto issueFlat = [&](Value f) -> FailureOr<Value> {
    Value q = arith::DivUIOp::create(b, loc, f, idx(kTiles));
    Value kt = arith::RemUIOp::create(b, loc, f, idx(kTiles));
    Value inside =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, f, total);
    Value kTile = arith::SelectOp::create(b, loc, inside, kt, idx(kTiles));
    FailureOr<std::pair<Value, Value>> org = originAt(tileLoop, q);
    if (failed(org))
      return failure();
    return issueCopies(arith::RemUIOp::create(b, loc, f, idx(stages)),
                       org->first, org->second, kTile, f);
  };
  for (int64_t i = 0; i + 1 < stages; ++i) {
    FailureOr<Value> g = issueFlat(idx(i));
    if (failed(g))
      return failure();
    lastGroup = *g;
  }
  // Tiles of the block (outer loop), K tiles of a tile (inner loop, from
  // zero accumulators: a tile's wgmma all completed in the previous
  // epilogue, so no register the tensor cores still use is rewritten).
  b.setInsertionPoint(op);
  Value f0 = firstLoad(iv);
  Value tm0 = op.getM0(), tn0 = op.getN0();
  // The next tile's origin (the copies run ahead into it), once per tile.
  Value nextIv = arith::AddIOp::create(b, loc, iv, idx(1));
  FailureOr<std::pair<Value, Value>> next = originAt(tileLoop, nextIv);
  if (failed(next))
    return failure();
  auto [nm0, nn0] = *next;
  Value hasNext =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, nextIv, myTiles);
  // One K loop over [lo, hi) of the tile's K tiles; `refill(kt, ahead)`
  // issues the copies of flattened K tile `ahead`.
  auto kRange = [&](int64_t lo, int64_t hi, ValueRange accIn,
                    function_ref<LogicalResult(Value, Value)> refill)
      -> FailureOr<scf::ForOp> {
    auto loop = scf::ForOp::create(b, loc, idx(lo), idx(hi), idx(1), accIn);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value kt = loop.getInductionVar();
    Value f = arith::AddIOp::create(b, loc, f0, kt);
    SmallVector<Value> acc = consume(f, loop.getRegionIterArgs());
    if (failed(refill(kt, arith::AddIOp::create(b, loc, f, idx(stages - 1)))))
      return failure();
    scf::YieldOp::create(b, loc, acc);
    return loop;
  };
  auto stageOf = [&](Value ahead) {
    return arith::RemUIOp::create(b, loc, ahead, idx(stages));
  };
  scf::ForOp kLoop;
  if (stages - 1 <= kTiles) {
    // Two phases, so that each copy target is loop-invariant (its address
    // arithmetic hoisted like the non-persistent loop's): K tiles kt +
    // stages - 1 of this tile, then the next tile's first stages - 1 (past
    // the block's last tile: nothing, k beyond K).
    int64_t cut = kTiles - (stages - 1);
    FailureOr<scf::ForOp> own =
        kRange(0, cut, op.getInit(), [&](Value kt, Value ahead) {
          return issueCopies(stageOf(ahead), tm0, tn0,
                             arith::AddIOp::create(b, loc, kt, idx(stages - 1)),
                             ahead);
        });
    if (failed(own))
      return failure();
    FailureOr<scf::ForOp> nextTile =
        kRange(cut, kTiles, own->getResults(), [&](Value kt, Value ahead) {
          Value nextKt = arith::SelectOp::create(
              b, loc, hasNext, arith::SubIOp::create(b, loc, kt, idx(cut)),
              idx(kTiles));
          return issueCopies(stageOf(ahead), nm0, nn0, nextKt, ahead);
        });
    if (failed(nextTile))
      return failure();
    kLoop = *nextTile;
  } else {
    FailureOr<scf::ForOp> all =
        kRange(0, kTiles, op.getInit(), [&](Value, Value ahead) {
          return LogicalResult(issueFlat(ahead));
        });
    if (failed(all))
      return failure();
    kLoop = *all;
  }
  // The tile's epilogue runs from registers, while the next tile's first
  // stages are in flight.
  NVVM::WgmmaWaitGroupSyncOp::create(b, loc, 0);
  replaceWith(kLoop.getResults());
  return success();
}
