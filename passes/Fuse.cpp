//===- Fuse.cpp - kopt-fuse: group kopt ops into kernels ------------------===//
//
// Every kopt operator becomes one kopt.kernel today; the kernel records the op
// (`source`, kopt::kernelSource) so that the launch manifest can name what each
// kernel computes and a runtime can check it against an independent reference.
// Dead kopt ops (kopt semantics are pure) are dropped first, and a value that a
// function returns more than once gets a copy per repetition. Fusing producers
// into consumers (matmul epilogues, elementwise chains) will extend the
// grouping here.
//
//===----------------------------------------------------------------------===//

#include "kopt/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"

namespace kopt {
#define GEN_PASS_DEF_KOPTFUSE
#include "kopt/Transforms/Passes.h.inc"
} // namespace kopt

using namespace mlir;
using namespace kopt;

namespace {

/// kopt ops are pure: one whose results are unused (directly or through other
/// dead kopt ops) would compile into a kernel that is launched for nothing.
/// Erased in reverse order, so that a chain of dead ops goes entirely.
void eraseDeadKoptOps(Block &block) {
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(block)))
    if (isa_and_nonnull<KoptDialect>(op.getDialect()) &&
        !isa<YieldOp, MainloopOp>(op) && op.use_empty() &&
        (isa<KernelOp>(op) || isPure(&op)))
      op.erase();
}

/// A function's results are its output buffers, each written by a kernel. A
/// value returned twice (e.g. after --cse) gets a copy, `kopt.cast` to its own
/// type, for each repetition, so that every output has its kernel.
void copyRepeatedResults(func::FuncOp func) {
  if (func.isExternal())
    return;
  auto ret = dyn_cast<func::ReturnOp>(func.getBody().back().getTerminator());
  if (!ret)
    return;
  DenseSet<Value> seen;
  OpBuilder b(ret);
  for (OpOperand &operand : ret->getOpOperands()) {
    Value v = operand.get();
    if (seen.insert(v).second)
      continue;
    Operation *def = v.getDefiningOp();
    if (!def || !isa_and_nonnull<KoptDialect>(def->getDialect()))
      continue; // kopt-lower-to-gpu says why it cannot compile this
    operand.set(CastOp::create(b, ret.getLoc(), v.getType(), v));
  }
}

struct KoptFusePass : public kopt::impl::KoptFuseBase<KoptFusePass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    for (auto func : module.getOps<func::FuncOp>()) {
      copyRepeatedResults(func);
      for (Block &block : func.getBody())
        eraseDeadKoptOps(block);
    }
    llvm::StringMap<unsigned> counters;
    // Names of kernels already in the module are taken.
    llvm::StringSet<> taken;
    module.walk([&](KernelOp k) { taken.insert(k.getSymName()); });
    SmallVector<Operation *> ops;
    module.walk([&](Operation *op) {
      if (op->getDialect() && isa<KoptDialect>(op->getDialect()) &&
          !isa<KernelOp, YieldOp, MainloopOp, LaunchOp>(op) &&
          !op->getParentOfType<KernelOp>() &&
          !op->getParentOfType<MainloopOp>())
        ops.push_back(op);
    });
    for (Operation *op : ops) {
      OpBuilder b(op);
      StringRef opName = op->getName().stripDialect();
      std::string name;
      do
        name = (opName + "_" + Twine(counters[opName]++)).str();
      while (!taken.insert(name).second);

      auto kernel = KernelOp::create(
          b, op->getLoc(), op->getResultTypes(), b.getStringAttr(name),
          op->getOperands(), kernelSource(op), /*schedule=*/ScheduleAttr(),
          /*schedule_checked_for=*/StringAttr());
      Block *body = new Block();
      kernel.getBody().push_back(body);
      IRMapping map;
      for (Value v : op->getOperands())
        map.map(v, body->addArgument(v.getType(), op->getLoc()));
      OpBuilder inner = OpBuilder::atBlockEnd(body);
      Operation *clone = inner.clone(*op, map);
      YieldOp::create(inner, op->getLoc(), clone->getResults());
      op->replaceAllUsesWith(kernel.getResults());
      op->erase();
    }
  }
};

} // namespace
