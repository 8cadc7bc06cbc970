//===- Pipeline.cpp - the kopt-to-ptx pipeline ----------------------------===//

#include "kopt/Target/PTX.h"
#include "kopt/Transforms/Passes.h"

#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

void kopt::buildKoptToPTXPipeline(OpPassManager &pm, const KoptToPTXOptions &opts) {
  pm.addPass(createKoptFuse());
  pm.addPass(createKoptLowerToLinalg());
  pm.addPass(createKoptLowerToGPU());
  // Device code: the upstream NVVM lowering, bare pointers for static memrefs
  // (one .u64 parameter per buffer; ../shared/MLIR22-NOTES.md).
  std::string pipeline;
  llvm::raw_string_ostream os(pipeline);
  os << "gpu.module(convert-scf-to-cf,expand-strided-metadata,"
        "convert-gpu-to-nvvm{use-bare-ptr-memref-call-conv=1},"
        "convert-nvvm-to-llvm,canonicalize,cse,reconcile-unrealized-casts),"
     << "nvvm-attach-target{chip=" << opts.chip << " features=" << opts.features
     << " O=" << opts.optLevel << "},gpu-module-to-binary{format=isa}";
  // parsePassPipeline only fails on a malformed string, which is ours.
  if (failed(parsePassPipeline(pipeline, pm)))
    llvm::report_fatal_error("kopt: malformed internal pass pipeline");
  if (!opts.output.empty()) {
    KoptEmitPTXOptions emit;
    emit.output = opts.output;
    emit.chip = opts.chip;
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
      llvm::cl::desc("PTX file to write; the manifest goes beside it as .json")};
  Option<unsigned> optLevel{*this, "O", llvm::cl::desc("LLVM optimization level"),
                            llvm::cl::init(3)};
};
} // namespace

void kopt::registerKoptToPTXPipeline() {
  PassPipelineRegistration<PipelineOptions>(
      "kopt-to-ptx",
      "Compile kopt ops to PTX and write it with its launch manifest",
      [](OpPassManager &pm, const PipelineOptions &o) {
        KoptToPTXOptions opts;
        opts.chip = o.chip;
        opts.features = o.features;
        opts.output = o.output;
        opts.optLevel = o.optLevel;
        buildKoptToPTXPipeline(pm, opts);
      });
}
