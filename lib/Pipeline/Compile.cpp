//===- Compile.cpp - kopt-to-ptx as a library call ------------------------===//
//
// What the C API (lib/CAPI) and kopt-opt share: the dialects and extensions a
// kopt compile needs, and running the kopt-to-ptx pipeline on a module to get
// its PTX and launch manifest in memory.
//
//===----------------------------------------------------------------------===//

#include "kopt/Dialect/Kopt/KoptDialect.h"
#include "kopt/Target/PTX.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"

using namespace mlir;

void kopt::registerCompilerDialects(DialectRegistry &registry) {
  registry.insert<kopt::KoptDialect>();
  registerAllDialects(registry);
  registerAllExtensions(registry);
  NVVM::registerNVVMTargetInterfaceExternalModels(registry);
  registerAllToLLVMIRTranslations(registry);
}

FailureOr<kopt::PTXOutput> kopt::compileModule(ModuleOp module,
                                               const KoptToPTXOptions &options,
                                               llvm::StringRef ptxFileName) {
  KoptToPTXOptions opts = options;
  opts.output.clear(); // in memory: no kopt-emit-ptx
  PassManager pm(module->getContext());
  buildKoptToPTXPipeline(pm, opts);
  if (failed(pm.run(module)))
    return failure();
  return emitPTXOutput(module, ptxFileName, opts.chip,
                       resolveCudaPath(opts.cudaPath));
}
