//===- KLoop.cpp - the K loop of one tile per block -----------------------===//
//
// The expansions of a kopt.mainloop whose block computes one output tile:
// mma.sync (synchronous staging or a cp.async ring) and wgmma (a cp.async
// or TMA ring, optionally fed by a producer warp).
//
//===----------------------------------------------------------------------===//

#include "Expander.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"

using namespace mlir;
using namespace kopt;
using namespace kopt::kb;
namespace sched = kopt::schedule;

/// mma.sync: iteration kt stages K tile kt synchronously into the one
/// buffer, or (cp.async) issues the copies of tile kt + stages - 1 into the
/// stage computed in iteration kt - 1 (every warp passed that iteration's
/// closing barrier; past the last tile the copies read nothing and
/// zero-fill a stage nobody reads) and waits until at most stages - 1
/// groups are pending: tile kt has landed. A barrier, the body, a barrier.
LogicalResult Expander::expandMma() {
  setUp(op);
  Value m0 = op.getM0(), n0 = op.getN0();
  bool async = s.copy == sched::CopyEngine::CpAsync;
  if (async) {
    FailureOr<Value> last = issuePrologue(b, loc, op, a, bs, op.getKBegin(),
                                          stages, m0, n0, tid, threads);
    if (failed(last))
      return failure();
  }
  auto loop =
      scf::ForOp::create(b, loc, idx(0), op.getKTiles(), idx(1), op.getInit());
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value kt = loop.getInductionVar();
    Value stage = idx(0);
    if (async) {
      FailureOr<Value> group = issueStageGroup(
          arith::AddIOp::create(b, loc, kt, idx(stages - 1)), m0, n0);
      if (failed(group))
        return failure();
      nvgpu::DeviceAsyncWaitOp::create(b, loc, *group,
                                       b.getI32IntegerAttr(stages - 1));
      stage = arith::RemUIOp::create(b, loc, kt, idx(stages));
    } else {
      if (failed(stageOperandTiles(b, loc, op, a, bs, m0, n0, kElemOf(kt), tid,
                                   threads)))
        return failure();
    }
    gpu::BarrierOp::create(b, loc);
    SmallVector<Value> acc = step(stage, loop.getRegionIterArgs());
    gpu::BarrierOp::create(b, loc);
    scf::YieldOp::create(b, loc, acc);
  }
  // The code after the op reuses the buffers: this thread's copies of the
  // stages past K land first (its barrier then covers everyone's).
  if (async && op.getDrain())
    NVVM::CpAsyncWaitGroupOp::create(b, loc, 0);
  replaceWith(loop.getResults());
  return success();
}

/// wgmma, one tile per block: iteration kt waits for tile kt's stage, issues
/// its wgmma, waits until only they are pending (tile kt - 1's are done in
/// every warpgroup once all pass the barrier, or have arrived on its
/// mbarrier), then refills tile kt - 1's stage with tile kt + stages - 1.
/// The wgmma of tile kt overlap that and the copy issue. With a producer
/// warp, it issues every load, each after its stage is released, and the
/// warpgroups only wait, compute and release.
LogicalResult Expander::expandWgmma() {
  Value m0 = op.getM0(), n0 = op.getN0();
  setUp(op);
  // With TMA and split-K, only the K tiles starting inside K (a split's last
  // tiles may lie past K; TMA copies none of them rather than boxes wholly
  // out of bounds).
  kCount = op.getKTiles();
  if (ring && op.getKBegin()) {
    Value rest = arith::SubIOp::create(b, loc, idx(K), op.getKBegin());
    Value restUp = arith::AddIOp::create(b, loc, rest, idx(s.blockK - 1));
    Value restTiles = arith::DivUIOp::create(b, loc, restUp, idx(s.blockK));
    kCount = arith::MinUIOp::create(b, loc, restTiles, kCount);
  }
  auto consumerLoop = [&]() {
    auto loop =
        scf::ForOp::create(b, loc, idx(0), kCount, idx(1), op.getInit());
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    scf::YieldOp::create(
        b, loc, consume(loop.getInductionVar(), loop.getRegionIterArgs()));
    return loop;
  };
  if (s.warpSpecialize) {
    if (!ring)
      return op.emitOpError("warp_specialize needs copy = tma");
    if (!isa<gpu::GPUFuncOp>(op->getParentOp()))
      return op.emitOpError("with warp_specialize must be in the gpu.func's "
                            "body (the consumers' code after it moves into "
                            "their branch)");
    scf::IfOp roles = specialize(op);
    auto loads = scf::ForOp::create(b, loc, idx(0), kCount, idx(1));
    b.setInsertionPointToStart(loads.getBody());
    Value f = loads.getInductionVar();
    ring->issue(b, loc, f, m0, n0, kElemOf(f), /*valid=*/Value(),
                /*mayReuse=*/true, /*byLeader=*/false);
    b.setInsertionPoint(op);
    scf::ForOp loop = consumerLoop();
    NVVM::WgmmaWaitGroupSyncOp::create(b, loc, 0);
    replaceWith(loop.getResults());
    sinkIntoConsumers(roles);
    return success();
  }
  if (ring) {
    for (int64_t i = 0; i + 1 < stages && i < kTiles; ++i) {
      Value f = idx(i);
      Value valid;
      if (op.getKBegin())
        valid =
            arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, f, kCount);
      ring->issue(b, loc, f, m0, n0, kElemOf(f), valid, /*mayReuse=*/false);
    }
  } else {
    FailureOr<Value> last = issuePrologue(b, loc, op, a, bs, op.getKBegin(),
                                          stages, m0, n0, tid, threads);
    if (failed(last))
      return failure();
    lastGroup = *last;
  }
  auto loop = scf::ForOp::create(b, loc, idx(0), kCount, idx(1), op.getInit());
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value kt = loop.getInductionVar();
    SmallVector<Value> acc = consume(kt, loop.getRegionIterArgs());
    // Past the last tile cp.async reads nothing and zero-fills a stage
    // nobody reads; TMA copies nothing.
    Value ahead = arith::AddIOp::create(b, loc, kt, idx(stages - 1));
    if (ring) {
      Value valid = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                          ahead, kCount);
      ring->issue(b, loc, ahead, m0, n0, kElemOf(ahead), valid,
                  /*mayReuse=*/true);
    } else if (failed(issueStageGroup(ahead, m0, n0))) {
      return failure();
    }
    scf::YieldOp::create(b, loc, acc);
  }
  NVVM::WgmmaWaitGroupSyncOp::create(b, loc, 0);
  if (!ring && op.getDrain())
    NVVM::CpAsyncWaitGroupOp::create(b, loc, 0);
  replaceWith(loop.getResults());
  return success();
}
