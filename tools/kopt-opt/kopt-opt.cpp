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

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>
#include <vector>

#ifndef KOPT_VERSION
#error "KOPT_VERSION is set by tools/kopt-opt/CMakeLists.txt"
#endif

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

static llvm::cl::opt<std::string> tuningDb(
    "kopt-tuning-db",
    llvm::cl::desc("with --kopt-to-ptx, the tuning database (kopt-tune --db) "
                   "whose best records give the matmul schedules; a remark "
                   "per kernel says which schedule it got (docs/tuning.md)"),
    llvm::cl::value_desc("file"), llvm::cl::init(""));

/// `--kopt-schedule` and `--kopt-print-space` configure the kopt-to-ptx
/// pipeline; without it they would be ignored silently, so refuse that.
static bool scheduleFlagsWithoutPipeline(int argc, char **argv) {
  bool flags = false, pipeline = false;
  for (int i = 1; i < argc; ++i) {
    llvm::StringRef a(argv[i]);
    a = a.ltrim('-');
    if (a.starts_with("kopt-schedule") || a.starts_with("kopt-print-space") ||
        a.starts_with("kopt-tuning-db"))
      flags = true;
    if (a.starts_with("kopt-to-ptx") ||
        (a.starts_with("pass-pipeline") && a.contains("kopt-to-ptx")))
      pipeline = true;
  }
  return flags && !pipeline;
}

/// The kopt passes and pipeline, the upstream passes the pipeline runs (by
/// name, for running its steps one by one: lib/Pipeline builds it from the
/// passes' constructors), and upstream's generic transforms (canonicalize,
/// cse, symbol-dce, inline, ...). The dialects: kopt::registerCompilerDialects
/// (lib/Pipeline/Compile.cpp), which the C API uses too.
static void registerCompilerPasses() {
  mlir::registerTransformsPasses();
  mlir::registerSCFToControlFlowPass();
  mlir::memref::registerExpandStridedMetadataPass();
  mlir::registerConvertNVGPUToNVVMPass();
  mlir::registerConvertGpuOpsToNVVMOps();
  mlir::registerConvertNVVMToLLVMPass();
  mlir::registerReconcileUnrealizedCastsPass();
  mlir::registerGpuNVVMAttachTarget();
  mlir::registerGpuModuleToBinaryPass();
  kopt::registerKoptPasses();
}

int main(int argc, char **argv) {
  if (scheduleFlagsWithoutPipeline(argc, argv)) {
    llvm::errs() << "kopt-opt: error: --kopt-schedule, --kopt-tuning-db and "
                    "--kopt-print-space apply to the --kopt-to-ptx pipeline; "
                    "with separate passes use --kopt-select-schedule="
                    "\"schedule=FILE tuning-db=FILE print-space\"\n";
    return 2;
  }
  // Diagnostics name the op and the reason; MLIR's default of appending the
  // op in generic form (with <<UNKNOWN SSA VALUE>> operands) only adds noise,
  // so it is off unless asked for.
  std::vector<char *> args(argv, argv + argc);
  static char quiet[] = "--mlir-print-op-on-diagnostic=false";
  if (llvm::none_of(llvm::ArrayRef<char *>(argv, argc), [](const char *a) {
        return llvm::StringRef(a).contains("mlir-print-op-on-diagnostic");
      }))
    args.insert(args.begin() + 1, quiet);
  argc = static_cast<int>(args.size());
  argv = args.data();

  // --version: kopt's version, then LLVM's (the LLVM/MLIR kopt-opt is built
  // with).
  llvm::cl::SetVersionPrinter([](llvm::raw_ostream &os) {
    os << "kopt-opt (kopt) version " << KOPT_VERSION << "\n";
    os.flush();
    llvm::cl::PrintVersionMessage();
  });

  registerCompilerPasses();
  kopt::registerKoptToPTXPipeline([](kopt::KoptToPTXOptions &opts) {
    if (!scheduleFile.empty() && !opts.schedule.empty() &&
        opts.schedule != scheduleFile) {
      // Both name a file: refuse rather than pick one silently.
      llvm::errs() << "kopt-opt: error: --kopt-schedule=" << scheduleFile
                   << " and --kopt-to-ptx=\"schedule=" << opts.schedule
                   << "\" name different schedule files\n";
      std::exit(2);
    }
    if (opts.schedule.empty())
      opts.schedule = scheduleFile;
    if (opts.tuningDb.empty())
      opts.tuningDb = tuningDb;
    opts.printSpace = opts.printSpace || printSpace;
  });

  mlir::DialectRegistry registry;
  kopt::registerCompilerDialects(registry);

  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "kopt optimizer driver\n", registry));
}
