//===- KoptToPTXPipeline.cpp - the --kopt-to-ptx pass pipeline -----------===//
//
// Builds and registers the pass pipeline of --kopt-to-ptx
// (kopt::buildKoptToPTXPipeline, include/kopt/Transforms/Passes.h): from
// the kopt dialect through fusion, linalg, tiling, pipelining and the GPU
// lowering to PTX and the launch manifest (docs/compiler.md). Not to be
// confused with the kopt-pipeline pass (passes/Pipeline.cpp), one step of it.
//
//===----------------------------------------------------------------------===//

#include "kopt/Target/PTX.h"
#include "kopt/Transforms/Passes.h"

#include "mlir/Conversion/GPUToNVVM/GPUToNVVMPass.h"
#include "mlir/Conversion/NVGPUToNVVM/NVGPUToNVVM.h"
#include "mlir/Conversion/NVVMToLLVM/NVVMToLLVM.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>

using namespace mlir;

std::string kopt::resolveCudaPath(llvm::StringRef explicitPath) {
  if (!explicitPath.empty())
    return explicitPath.str();
  for (const char *var : {"CUDA_HOME", "CUDA_ROOT", "CUDA_PATH"})
    if (const char *v = std::getenv(var); v && *v)
      return v;
  return "/usr/local/cuda";
}

/// Asks LLVM's NVVMReflect pass to answer __nvvm_reflect("__CUDA_PREC_SQRT")
/// with 1, as nvcc does by default (-prec-sqrt=true): libdevice's __nv_sqrtf
/// then computes sqrt.rn.f32 (correctly rounded, like CUDA's sqrtf and PyTorch)
/// instead of sqrt.approx.f32. The NVPTX backend reads this only from its
/// command-line option `nvvm-reflect-add`, so set that option once.
static void requestPreciseSqrt() {
  static bool done = [] {
    auto &options = llvm::cl::getRegisteredOptions();
    auto it = options.find("nvvm-reflect-add");
    if (it != options.end())
      (void)it->second->addOccurrence(/*pos=*/0, "nvvm-reflect-add",
                                      "__CUDA_PREC_SQRT=1");
    return true;
  }();
  (void)done;
}

/// The options of a pass that targets the pipeline's chip (kopt-check-target,
/// the NVVM target attachment): its chip, PTX features and LLVM optimization
/// level, the same for both.
template <typename PassOptions>
static PassOptions targetOptions(const kopt::KoptToPTXOptions &opts) {
  PassOptions o;
  o.chip = opts.chip;
  o.features = opts.features;
  o.optLevel = static_cast<decltype(o.optLevel)>(opts.optLevel);
  return o;
}

void kopt::buildKoptToPTXPipeline(OpPassManager &pm,
                                  const KoptToPTXOptions &opts) {
  requestPreciseSqrt();
  auto check = targetOptions<KoptCheckTargetOptions>(opts);
  check.cudaPath = resolveCudaPath(opts.cudaPath);
  pm.addPass(createKoptCheckTarget(check));
  if (opts.packMinReuse != 0) {
    KoptPackOperandsOptions pack;
    pack.minReuse = opts.packMinReuse;
    pm.addPass(createKoptPackOperands(pack));
  }
  KoptFuseOptions fuse;
  fuse.fuse = opts.fuse;
  fuse.planFile = opts.fusionPlan;
  pm.addPass(createKoptFuse(fuse));
  KoptSelectScheduleOptions select;
  select.scheduleFile = opts.schedule;
  select.tuningDb = opts.tuningDb;
  select.printSpace = opts.printSpace;
  select.chip = opts.chip;
  pm.addPass(createKoptSelectSchedule(select));
  pm.addPass(createKoptLowerToLinalg());
  pm.addPass(createKoptLowerToGPU());
  KoptTileOptions tile;
  tile.chip = opts.chip;
  pm.addPass(createKoptTile(tile));
  pm.addPass(createKoptPipeline());
  // Device code: the upstream NVVM lowering, bare pointers for static memrefs
  // (one .u64 parameter per buffer; ../shared/MLIR22-NOTES.md). Built from the
  // passes' constructors, not from a pipeline string, so that nothing depends
  // on the global pass registry (the C API registers no passes).
  OpPassManager &device = pm.nest<gpu::GPUModuleOp>();
  device.addPass(createSCFToControlFlowPass());
  device.addPass(memref::createExpandStridedMetadataPass());
  device.addPass(createConvertNVGPUToNVVMPass());
  ConvertGpuOpsToNVVMOpsOptions toNVVM;
  toNVVM.useBarePtrCallConv = true;
  device.addPass(createConvertGpuOpsToNVVMOps(toNVVM));
  device.addPass(createConvertNVVMToLLVMPass());
  device.addPass(createCanonicalizerPass());
  device.addPass(createCSEPass());
  device.addPass(createReconcileUnrealizedCastsPass());
  pm.addPass(createGpuNVVMAttachTarget(
      targetOptions<GpuNVVMAttachTargetOptions>(opts)));
  GpuModuleToBinaryPassOptions binary;
  binary.compilationTarget = "isa";
  binary.toolkitPath = resolveCudaPath(opts.cudaPath);
  pm.addPass(createGpuModuleToBinaryPass(binary));
  if (!opts.output.empty()) {
    KoptEmitPTXOptions emit;
    emit.output = opts.output;
    emit.chip = opts.chip;
    emit.cudaPath = resolveCudaPath(opts.cudaPath);
    pm.addPass(createKoptEmitPTX(emit));
  }
}

namespace {
struct PipelineOptions : public PassPipelineOptions<PipelineOptions> {
  Option<std::string> chip{*this, "chip", llvm::cl::desc("target GPU (sm_90a)"),
                           llvm::cl::init("sm_90a")};
  Option<std::string> features{*this, "features",
                               llvm::cl::desc("PTX features (+ptx80)"),
                               llvm::cl::init("+ptx80")};
  Option<std::string> output{
      *this, "output",
      llvm::cl::desc(
          "PTX file to write; the manifest goes beside it as .json")};
  Option<std::string> cudaPath{
      *this, "cuda-path",
      llvm::cl::desc(
          "CUDA toolkit whose libdevice is linked (default: $CUDA_HOME, "
          "$CUDA_ROOT, $CUDA_PATH, then /usr/local/cuda)")};
  Option<unsigned> optLevel{
      *this, "O", llvm::cl::desc("LLVM optimization level"), llvm::cl::init(3)};
  Option<std::string> schedule{
      *this, "schedule",
      llvm::cl::desc("JSON file of matmul schedules (docs/schedules.md)")};
  Option<std::string> tuningDb{
      *this, "tuning-db",
      llvm::cl::desc("tuning database (kopt-tune --db) whose best records "
                     "give the matmul schedules (docs/tuning.md)")};
  Option<bool> printSpace{
      *this, "print-space",
      llvm::cl::desc("print each matmul kernel's schedule space as JSON"),
      llvm::cl::init(false)};
  Option<int64_t> packMinReuse{
      *this, "pack-min-reuse",
      llvm::cl::desc("pack f16/bf16 (and f32 tf32) matmul operands that are "
                     "not K-contiguous or whose rows are not a multiple of 16 "
                     "bytes when the other operand has at least this many "
                     "rows (kopt-pack-operands); 0: never"),
      llvm::cl::init(128)};
  Option<bool> fuse{*this, "fuse",
                    llvm::cl::desc("fuse elementwise chains, row ops with "
                                   "their elementwise neighbours and matmuls "
                                   "with their epilogues (kopt-fuse); false: "
                                   "one kernel per op"),
                    llvm::cl::init(true)};
  Option<std::string> fusionPlan{
      *this, "fusion-plan",
      llvm::cl::desc("JSON file of fusion plan overrides (kopt-fuse's plan: "
                     "{\"split\": [kernel names]})")};
};
} // namespace

void kopt::registerKoptToPTXPipeline(
    std::function<void(KoptToPTXOptions &)> adjust) {
  PassPipelineRegistration<PipelineOptions>(
      "kopt-to-ptx",
      "Compile kopt ops to PTX and write it with its launch manifest",
      [adjust](OpPassManager &pm, const PipelineOptions &o) {
        KoptToPTXOptions opts;
        opts.chip = o.chip;
        opts.features = o.features;
        opts.output = o.output;
        opts.optLevel = o.optLevel;
        opts.cudaPath = o.cudaPath;
        opts.schedule = o.schedule;
        opts.tuningDb = o.tuningDb;
        opts.printSpace = o.printSpace;
        opts.packMinReuse = o.packMinReuse;
        opts.fuse = o.fuse;
        opts.fusionPlan = o.fusionPlan;
        if (adjust)
          adjust(opts);
        buildKoptToPTXPipeline(pm, opts);
      });
}
