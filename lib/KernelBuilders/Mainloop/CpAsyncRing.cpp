//===- CpAsyncRing.cpp - the cp.async ring of a mainloop ------------------===//
//
// copy = cp_async: each thread issues its 16-byte cp.async copies of a K
// tile of both operands into a stage of the ring and commits them as one
// group (CpAsyncRing.h); the expansions wait on the groups.
//
//===----------------------------------------------------------------------===//

#include "Expander.h"

#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"

using namespace mlir;
using namespace kopt;
using namespace kopt::kb;
namespace sched = kopt::schedule;

FailureOr<Value> kb::issueCopyGroup(OpBuilder &b, Location loc, Operation *diag,
                                    const StageSpec &a, const StageSpec &bs,
                                    Value stage, Value kBase, Value m0,
                                    Value n0, Value tid, int64_t threads) {
  FailureOr<SmallVector<Value>> ta =
      issueTileAsync(b, loc, diag, a, stage, m0, kBase, tid, threads);
  FailureOr<SmallVector<Value>> tb =
      issueTileAsync(b, loc, diag, bs, stage, n0, kBase, tid, threads);
  if (failed(ta) || failed(tb))
    return failure();
  SmallVector<Value> tokens(*ta);
  tokens.append(tb->begin(), tb->end());
  return nvgpu::DeviceAsyncCreateGroupOp::create(
             b, loc, nvgpu::DeviceAsyncTokenType::get(b.getContext()), tokens)
      .getResult();
}

FailureOr<Value> kb::issueStage(OpBuilder &b, Location loc, Operation *diag,
                                const StageSpec &a, const StageSpec &bs,
                                Value kTile, Value kOffset, int64_t stages,
                                Value m0, Value n0, Value tid,
                                int64_t threads) {
  Value stage =
      arith::RemUIOp::create(b, loc, kTile, indexConst(b, loc, stages));
  Value kBase =
      arith::MulIOp::create(b, loc, kTile, indexConst(b, loc, a.tileK));
  if (kOffset)
    kBase = arith::AddIOp::create(b, loc, kBase, kOffset);
  return issueCopyGroup(b, loc, diag, a, bs, stage, kBase, m0, n0, tid,
                        threads);
}

FailureOr<Value> kb::issuePrologue(OpBuilder &b, Location loc, Operation *diag,
                                   const StageSpec &a, const StageSpec &bs,
                                   Value kOffset, int64_t stages, Value m0,
                                   Value n0, Value tid, int64_t threads) {
  Value last;
  for (int64_t i = 0; i + 1 < stages; ++i) {
    FailureOr<Value> g = issueStage(b, loc, diag, a, bs, indexConst(b, loc, i),
                                    kOffset, stages, m0, n0, tid, threads);
    if (failed(g))
      return failure();
    last = *g;
  }
  return last;
}

/// cp.async: the copies of K tile `kTile` of the tiles at rows m0 / n0 into
/// stage kTile % stages, one group; returns its token.
FailureOr<Value> Expander::issueStageGroup(Value kTile, Value m0, Value n0) {
  return issueStage(b, loc, op, a, bs, kTile, op.getKBegin(), stages, m0, n0,
                    tid, threads);
}
