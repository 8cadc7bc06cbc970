//===- Pipeline.cpp - kopt-pipeline ---------------------------------------===//
//
// Expands each kopt.mainloop into its software-pipelined K loop
// (kopt::expandMainloop, lib/KernelBuilders/Mainloop/). Not the
// --kopt-to-ptx pass pipeline, which lib/Pipeline/KoptToPTXPipeline.cpp
// builds.
//
//===----------------------------------------------------------------------===//

#include "kopt/Transforms/KernelBuilders.h"
#include "kopt/Transforms/Passes.h"

namespace kopt {
#define GEN_PASS_DEF_KOPTPIPELINE
#include "kopt/Transforms/Passes.h.inc"
} // namespace kopt

using namespace mlir;
using namespace kopt;

namespace {
struct KoptPipelinePass
    : public kopt::impl::KoptPipelineBase<KoptPipelinePass> {
  using Base::Base;
  void runOnOperation() override {
    // kopt-tile makes the mainloops; a kernel it has not built yet would
    // reach the NVVM lowering unexpanded.
    WalkResult unbuilt = getOperation().walk([&](KernelOp kernel) {
      if (!kernel->getParentOfType<gpu::GPUFuncOp>())
        return WalkResult::advance();
      kernel.emitOpError("is not built yet: run kopt-tile before "
                         "kopt-pipeline");
      return WalkResult::interrupt();
    });
    if (unbuilt.wasInterrupted())
      return signalPassFailure();
    SmallVector<MainloopOp> loops;
    getOperation().walk([&](MainloopOp op) { loops.push_back(op); });
    for (MainloopOp op : loops)
      if (failed(expandMainloop(op)))
        return signalPassFailure();
  }
};
} // namespace
