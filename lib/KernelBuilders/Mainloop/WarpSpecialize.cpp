//===- WarpSpecialize.cpp - a producer warp for the TMA ring --------------===//
//
// warp_specialize: the block splits into the consumer warpgroups and one
// producer warp that issues every TMA load of the ring; the consumers' code
// moves into their branch.
//
//===----------------------------------------------------------------------===//

#include "Expander.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;
using namespace kopt;
using namespace kopt::kb;
namespace sched = kopt::schedule;

/// Warp specialization: splits the block at `anchor` into the producer warp
/// (the warps from threads / 32 on) and the consumers. `anchor` and all
/// that follows it in its block (but the terminator) move into the
/// consumers' branch (then sinkIntoConsumers moves the side-effect-free ops
/// before it that only they use, in particular the zero accumulators:
/// defined before the branch, ptxas serializes the wgmma, C7520). Returns the
/// roles' scf.if; its "then" block holds an scf.if on the ring's leader, where
/// the producer's loads go. The role is read from lane 0's warp index
/// (shfl.sync.idx), which ptxas knows to be uniform across the warp: with a
/// per-thread condition it assumes a divergent path and serializes the
/// consumers' wgmma (C7520), as CUTLASS's canonical_warp_group_idx() avoids
/// too.
scf::IfOp Expander::specialize(Operation *anchor) {
  b.setInsertionPoint(anchor);
  auto i32 = b.getI32Type();
  Value warp32 = arith::IndexCastUIOp::create(b, loc, i32, warp);
  Value uniformWarp =
      gpu::ShuffleOp::create(b, loc, warp32, /*offset=*/0,
                             /*width=*/32, gpu::ShuffleMode::IDX)
          .getShuffleResult();
  Value producer = arith::CmpIOp::create(
      b, loc, arith::CmpIPredicate::uge, uniformWarp,
      arith::ConstantIntOp::create(b, loc, i32, threads / 32));
  auto roles = scf::IfOp::create(b, loc, producer, /*withElseRegion=*/true);
  Block *block = anchor->getBlock();
  Operation *consumersEnd = roles.elseBlock()->getTerminator();
  for (Operation *o = anchor; o != block->getTerminator();) {
    Operation *next = o->getNextNode();
    o->moveBefore(consumersEnd);
    o = next;
  }
  b.setInsertionPointToStart(roles.thenBlock());
  auto leaderIf = scf::IfOp::create(b, loc, ring->leader,
                                    /*withElseRegion=*/false);
  b.setInsertionPointToStart(leaderIf.thenBlock());
  return roles;
}

/// Once both roles are built: moves the side-effect-free ops before `roles`
/// that only the consumers use into their branch.
void Expander::sinkIntoConsumers(scf::IfOp roles) {
  Block *block = roles->getBlock();
  Region &consumers = roles.getElseRegion();
  SmallVector<Operation *> before;
  for (Operation &o : *block) {
    if (&o == roles.getOperation())
      break;
    before.push_back(&o);
  }
  for (Operation *o : llvm::reverse(before)) {
    if (o->getNumResults() == 0 || o->getNumRegions() != 0 ||
        !isMemoryEffectFree(o))
      continue;
    if (!o->use_empty() && llvm::all_of(o->getUsers(), [&](Operation *user) {
          return consumers.isAncestor(user->getParentRegion());
        }))
      o->moveBefore(&roles.elseBlock()->front());
  }
}
