//===- kopt-opt.cpp - the kopt driver -------------------------------------===//
//
// An mlir-opt-style driver with the kopt dialect, the kopt passes, the upstream
// dialects and passes they build on, and the `--kopt-to-ptx` pipeline:
//
//   kopt-opt model.mlir --kopt-to-ptx="output=model.ptx" -o /dev/null
//
//===----------------------------------------------------------------------===//

#include "kopt/Target/PTX.h"
#include "kopt/Transforms/Passes.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::registerAllPasses();
  kopt::registerKoptPasses();
  kopt::registerKoptToPTXPipeline();

  mlir::DialectRegistry registry;
  registry.insert<kopt::KoptDialect>();
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  mlir::NVVM::registerNVVMTargetInterfaceExternalModels(registry);
  mlir::registerAllToLLVMIRTranslations(registry);

  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "kopt optimizer driver\n", registry));
}
