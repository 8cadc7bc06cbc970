//===- PTXOutput.cpp - The PTX and manifest of a compiled module ----------===//
//
// What both kopt-emit-ptx (files) and the C API (memory) take out of a module
// that went through the kopt-to-ptx pipeline: its PTX, checked for libdevice
// calls left unresolved, and its launch manifest.
//
//===----------------------------------------------------------------------===//

#include "kopt/Dialect/Kopt/KoptDialect.h"
#include "kopt/Target/PTX.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"

using namespace mlir;

FailureOr<kopt::PTXOutput> kopt::emitPTXOutput(ModuleOp module,
                                               StringRef ptxFileName,
                                               StringRef chip,
                                               StringRef cudaPath) {
  // A module that launches no kernel (no kopt op, no gpu.launch_func) has
  // nothing to write; one whose kernels were not serialized is reported by
  // extractPTX.
  bool hasKernels = false;
  module.walk([&](Operation *op) {
    if (isa<gpu::LaunchFuncOp>(op) ||
        isa_and_nonnull<kopt::KoptDialect>(op->getDialect()))
      hasKernels = true;
  });
  if (!hasKernels)
    return emitError(module.getLoc(),
                     "nothing to compile: the module has no function "
                     "with kopt ops"),
           failure();
  FailureOr<std::string> ptx = extractPTX(module);
  if (failed(ptx))
    return failure();
  // Calls left to libdevice functions mean libdevice was not found: ptxas
  // would reject the PTX, so stop here with the cause.
  SmallVector<std::string> unresolved = unresolvedFunctions(*ptx);
  if (!unresolved.empty())
    return emitError(module.getLoc(), "the PTX calls '")
               << unresolved.front()
               << "', which is not defined: libdevice was not linked; is the "
                  "CUDA toolkit at '"
               << (cudaPath.empty() ? StringRef("(unset)") : cudaPath)
               << "' (nvvm/libdevice/libdevice.10.bc)? Set CUDA_HOME or the "
                  "pipeline's cuda-path option",
           failure();
  FailureOr<std::string> manifest = buildManifest(module, ptxFileName, chip);
  if (failed(manifest))
    return failure();
  return PTXOutput{std::move(*ptx), std::move(*manifest)};
}
