//===- kopt-opt.cpp - the kopt driver -------------------------------------===//
//
// An mlir-opt-style driver with the kopt dialect, the kopt passes, the upstream
// dialects and passes they build on, and the `--kopt-to-ptx` pipeline:
//
//   kopt-opt model.mlir --kopt-to-ptx="output=model.ptx" -o /dev/null
//
// `--kopt-schedule=FILE.json` applies the matmul schedules of FILE and
// `--kopt-print-space` prints each matmul kernel's schedule space; both are
// shorthands for the kopt-to-ptx options `schedule=` and `print-space`
// (docs/schedules.md).
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
#include "llvm/Support/CommandLine.h"

static llvm::cl::opt<std::string> scheduleFile(
    "kopt-schedule",
    llvm::cl::desc("JSON file of matmul schedules for --kopt-to-ptx "
                   "(docs/schedules.md)"),
    llvm::cl::value_desc("file"), llvm::cl::init(""));
static llvm::cl::opt<bool> printSpace(
    "kopt-print-space",
    llvm::cl::desc("with --kopt-to-ptx, print each matmul kernel's schedule "
                   "space as JSON to stdout"),
    llvm::cl::init(false));

int main(int argc, char **argv) {
  mlir::registerAllPasses();
  kopt::registerKoptPasses();
  kopt::registerKoptToPTXPipeline([](kopt::KoptToPTXOptions &opts) {
    if (opts.schedule.empty())
      opts.schedule = scheduleFile;
    opts.printSpace = opts.printSpace || printSpace;
  });

  mlir::DialectRegistry registry;
  registry.insert<kopt::KoptDialect>();
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  mlir::NVVM::registerNVVMTargetInterfaceExternalModels(registry);
  mlir::registerAllToLLVMIRTranslations(registry);

  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "kopt optimizer driver\n", registry));
}
