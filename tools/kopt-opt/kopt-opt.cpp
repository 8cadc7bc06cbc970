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

#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVM.h"
#include "mlir/Conversion/GPUCommon/GPUToLLVM.h"
#include "mlir/Conversion/GPUToNVVM/GPUToNVVM.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/NVVMToLLVM/NVVMToLLVM.h"
#include "mlir/Conversion/Passes.h"
#include "mlir/Conversion/UBToLLVM/UBToLLVM.h"
#include "mlir/Conversion/VectorToLLVM/ConvertVectorToLLVM.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Affine/IR/ValueBoundsOpInterfaceImpl.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/IR/ValueBoundsOpInterfaceImpl.h"
#include "mlir/Dialect/Arith/Transforms/BufferDeallocationOpInterfaceImpl.h"
#include "mlir/Dialect/Arith/Transforms/BufferViewFlowOpInterfaceImpl.h"
#include "mlir/Dialect/Arith/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/Transforms/FuncBufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/ControlFlow/Transforms/BufferDeallocationOpInterfaceImpl.h"
#include "mlir/Dialect/ControlFlow/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Func/Extensions/InlinerExtension.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/IR/ValueBoundsOpInterfaceImpl.h"
#include "mlir/Dialect/GPU/Transforms/BufferDeallocationOpInterfaceImpl.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/LLVMIR/Transforms/InlinerInterfaceImpl.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/AllInterfaces.h"
#include "mlir/Dialect/Linalg/Transforms/RuntimeOpVerification.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/IR/MemRefMemorySlot.h"
#include "mlir/Dialect/MemRef/IR/ValueBoundsOpInterfaceImpl.h"
#include "mlir/Dialect/MemRef/Transforms/AllocationOpInterfaceImpl.h"
#include "mlir/Dialect/MemRef/Transforms/BufferViewFlowOpInterfaceImpl.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/RuntimeOpVerification.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/IR/ValueBoundsOpInterfaceImpl.h"
#include "mlir/Dialect/SCF/Transforms/BufferDeallocationOpInterfaceImpl.h"
#include "mlir/Dialect/SCF/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/IR/TensorInferTypeOpInterfaceImpl.h"
#include "mlir/Dialect/Tensor/IR/TensorTilingInterfaceImpl.h"
#include "mlir/Dialect/Tensor/IR/ValueBoundsOpInterfaceImpl.h"
#include "mlir/Dialect/Tensor/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Tensor/Transforms/RuntimeOpVerification.h"
#include "mlir/Dialect/Tensor/Transforms/SubsetInsertionOpInterfaceImpl.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/Dialect/Vector/IR/ValueBoundsOpInterfaceImpl.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/Vector/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Vector/Transforms/SubsetOpInterfaceImpl.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Interfaces/CastInterfaces.h"
#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>
#include <vector>

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

/// `--kopt-schedule` and `--kopt-print-space` configure the kopt-to-ptx
/// pipeline; without it they would be ignored silently, so refuse that.
static bool scheduleFlagsWithoutPipeline(int argc, char **argv) {
  bool flags = false, pipeline = false;
  for (int i = 1; i < argc; ++i) {
    llvm::StringRef a(argv[i]);
    a = a.ltrim('-');
    if (a.starts_with("kopt-schedule") || a.starts_with("kopt-print-space"))
      flags = true;
    if (a.starts_with("kopt-to-ptx") ||
        (a.starts_with("pass-pipeline") && a.contains("kopt-to-ptx")))
      pipeline = true;
  }
  return flags && !pipeline;
}

/// The dialects kopt reads and produces on the way from kopt ops to PTX, with
/// the interface models and extensions of upstream's registerAllDialects and
/// registerAllExtensions that apply to them (bufferization, value bounds,
/// tiling, inlining, the ConvertToLLVM interfaces that convert-gpu-to-nvvm
/// collects) and the LLVM IR translations gpu-module-to-binary needs. Not
/// every upstream dialect: a self-contained build (KOPT_SELF_CONTAINED, see
/// cmake/KoptLinkCompiler.cmake) links only the libraries named here.
static void registerCompilerDialects(mlir::DialectRegistry &registry) {
  using namespace mlir;
  registry
      .insert<kopt::KoptDialect, affine::AffineDialect, arith::ArithDialect,
              bufferization::BufferizationDialect, cf::ControlFlowDialect,
              func::FuncDialect, gpu::GPUDialect, linalg::LinalgDialect,
              LLVM::LLVMDialect, math::MathDialect, memref::MemRefDialect,
              nvgpu::NVGPUDialect, NVVM::NVVMDialect, scf::SCFDialect,
              tensor::TensorDialect, ub::UBDialect, vector::VectorDialect>();
  // External models (as registerAllDialects registers them).
  affine::registerValueBoundsOpInterfaceExternalModels(registry);
  arith::registerBufferDeallocationOpInterfaceExternalModels(registry);
  arith::registerBufferizableOpInterfaceExternalModels(registry);
  arith::registerBufferViewFlowOpInterfaceExternalModels(registry);
  arith::registerValueBoundsOpInterfaceExternalModels(registry);
  bufferization::func_ext::registerBufferizableOpInterfaceExternalModels(
      registry);
  builtin::registerCastOpInterfaceExternalModels(registry);
  cf::registerBufferizableOpInterfaceExternalModels(registry);
  cf::registerBufferDeallocationOpInterfaceExternalModels(registry);
  gpu::registerBufferDeallocationOpInterfaceExternalModels(registry);
  gpu::registerValueBoundsOpInterfaceExternalModels(registry);
  LLVM::registerInlinerInterface(registry);
  NVVM::registerInlinerInterface(registry);
  linalg::registerAllDialectInterfaceImplementations(registry);
  linalg::registerRuntimeVerifiableOpInterfaceExternalModels(registry);
  memref::registerAllocationOpInterfaceExternalModels(registry);
  memref::registerBufferViewFlowOpInterfaceExternalModels(registry);
  memref::registerRuntimeVerifiableOpInterfaceExternalModels(registry);
  memref::registerValueBoundsOpInterfaceExternalModels(registry);
  memref::registerMemorySlotExternalModels(registry);
  scf::registerBufferDeallocationOpInterfaceExternalModels(registry);
  scf::registerBufferizableOpInterfaceExternalModels(registry);
  scf::registerValueBoundsOpInterfaceExternalModels(registry);
  tensor::registerBufferizableOpInterfaceExternalModels(registry);
  tensor::registerInferTypeOpInterfaceExternalModels(registry);
  tensor::registerRuntimeVerifiableOpInterfaceExternalModels(registry);
  tensor::registerSubsetOpInterfaceExternalModels(registry);
  tensor::registerTilingInterfaceExternalModels(registry);
  tensor::registerValueBoundsOpInterfaceExternalModels(registry);
  vector::registerBufferizableOpInterfaceExternalModels(registry);
  vector::registerSubsetOpInterfaceExternalModels(registry);
  vector::registerValueBoundsOpInterfaceExternalModels(registry);
  NVVM::registerNVVMTargetInterfaceExternalModels(registry);
  // Extensions (as registerAllExtensions registers them), less those of the
  // transform dialect and of dialects kopt does not use.
  arith::registerConvertArithToLLVMInterface(registry);
  cf::registerConvertControlFlowToLLVMInterface(registry);
  func::registerInlinerExtension(registry);
  registerConvertFuncToLLVMInterface(registry);
  registerConvertMathToLLVMInterface(registry);
  registerConvertMemRefToLLVMInterface(registry);
  registerConvertNVVMToLLVMInterface(registry);
  ub::registerConvertUBToLLVMInterface(registry);
  gpu::registerConvertGpuToLLVMInterface(registry);
  NVVM::registerConvertGpuToNVVMInterface(registry);
  vector::registerConvertVectorToLLVMInterface(registry);
  // Translations to LLVM IR of what a gpu.module holds after the lowering.
  registerBuiltinDialectTranslation(registry);
  registerGPUDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  registerNVVMDialectTranslation(registry);
}

/// The kopt passes and pipeline, the upstream passes the pipeline names in
/// its textual part (lib/Pipeline), and upstream's generic transforms
/// (canonicalize, cse, symbol-dce, inline, ...).
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
    llvm::errs() << "kopt-opt: error: --kopt-schedule and --kopt-print-space "
                    "apply to the --kopt-to-ptx pipeline; with separate "
                    "passes use --kopt-select-schedule=\"schedule=FILE "
                    "print-space\"\n";
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
    opts.printSpace = opts.printSpace || printSpace;
  });

  mlir::DialectRegistry registry;
  registerCompilerDialects(registry);

  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "kopt optimizer driver\n", registry));
}
