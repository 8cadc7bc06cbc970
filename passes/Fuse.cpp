//===- Fuse.cpp - kopt-fuse: group kopt ops into kernels ------------------===//
//
// Every kopt operator becomes one kopt.kernel today; the kernel records the op
// (`source`) so that the launch manifest can name what each kernel computes and
// a runtime can check it against an independent reference. Fusing producers
// into consumers (matmul epilogues, elementwise chains) will extend the
// grouping here.
//
//===----------------------------------------------------------------------===//

#include "kopt/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"

namespace kopt {
#define GEN_PASS_DEF_KOPTFUSE
#include "kopt/Transforms/Passes.h.inc"
} // namespace kopt

using namespace mlir;
using namespace kopt;

namespace {

/// Names of an op's operands in the launch manifest (docs/manifest.md).
SmallVector<StringRef> operandNames(Operation *op) {
  if (isa<MatmulOp>(op))
    return {"a", "b"};
  if (isa<AddOp, SubOp, MulOp, DivOp, MaxOp, MinOp>(op))
    return {"lhs", "rhs"};
  if (auto norm = dyn_cast<RMSNormOp>(op)) {
    if (norm.getWeight())
      return {"input", "weight"};
    return {"input"};
  }
  if (auto norm = dyn_cast<LayerNormOp>(op)) {
    SmallVector<StringRef> names = {"input"};
    if (norm.getWeight())
      names.push_back("weight");
    if (norm.getBias())
      names.push_back("bias");
    return names;
  }
  return {"input"};
}

/// The op's attributes as the manifest shows them: unit attributes become
/// booleans, enums their keyword, so that the JSON needs no MLIR to read.
DictionaryAttr sourceAttrs(Operation *op) {
  Builder b(op->getContext());
  SmallVector<NamedAttribute> attrs;
  if (auto mm = dyn_cast<MatmulOp>(op)) {
    attrs.push_back(
        b.getNamedAttr("transpose_a", b.getBoolAttr(mm.getTransposeA())));
    attrs.push_back(
        b.getNamedAttr("transpose_b", b.getBoolAttr(mm.getTransposeB())));
    if (mm.getTf32())
      attrs.push_back(b.getNamedAttr("tf32", b.getBoolAttr(true)));
  } else if (auto pack = dyn_cast<PackOp>(op)) {
    attrs.push_back(
        b.getNamedAttr("transpose", b.getBoolAttr(pack.getTranspose())));
  } else if (auto gelu = dyn_cast<GeluOp>(op)) {
    attrs.push_back(b.getNamedAttr(
        "approximate",
        b.getStringAttr(stringifyGeluApproximation(gelu.getApproximate()))));
  } else if (auto red = dyn_cast<ReduceOp>(op)) {
    attrs.push_back(b.getNamedAttr(
        "kind", b.getStringAttr(stringifyReduceKind(red.getKind()))));
  } else if (auto norm = dyn_cast<RMSNormOp>(op)) {
    attrs.push_back(b.getNamedAttr("eps", norm.getEpsAttr()));
  } else if (auto norm = dyn_cast<LayerNormOp>(op)) {
    attrs.push_back(b.getNamedAttr("eps", norm.getEpsAttr()));
  }
  return b.getDictionaryAttr(attrs);
}

struct KoptFusePass : public kopt::impl::KoptFuseBase<KoptFusePass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    llvm::StringMap<unsigned> counters;
    // Names of kernels already in the module are taken.
    llvm::StringSet<> taken;
    module.walk([&](KernelOp k) { taken.insert(k.getSymName()); });
    SmallVector<Operation *> ops;
    module.walk([&](Operation *op) {
      if (op->getDialect() && isa<KoptDialect>(op->getDialect()) &&
          !isa<KernelOp, YieldOp, MainloopOp>(op) &&
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

      SmallVector<Attribute> params;
      for (StringRef n : operandNames(op))
        params.push_back(b.getStringAttr(n));
      params.push_back(b.getStringAttr("result"));
      DictionaryAttr source = b.getDictionaryAttr({
          b.getNamedAttr("name", b.getStringAttr(opName)),
          b.getNamedAttr("attrs", sourceAttrs(op)),
          b.getNamedAttr("params", b.getArrayAttr(params)),
      });

      auto kernel =
          KernelOp::create(b, op->getLoc(), op->getResultTypes(),
                           b.getStringAttr(name), op->getOperands(), source,
                           /*schedule=*/ScheduleAttr());
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
