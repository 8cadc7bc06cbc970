//===- CheckTarget.cpp - kopt-check-target --------------------------------===//
//
// Validates the options of the kopt-to-ptx pipeline up front, so that a bad
// chip, PTX version, optimization level or CUDA path is an error that names the
// option, not a crash in the NVVM target, a fatal LLVM error or unusable PTX.
//
//===----------------------------------------------------------------------===//

#include "kopt/Transforms/Passes.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

namespace kopt {
#define GEN_PASS_DEF_KOPTCHECKTARGET
#include "kopt/Transforms/Passes.h.inc"
} // namespace kopt

using namespace mlir;

namespace {

struct KoptCheckTargetPass
    : public kopt::impl::KoptCheckTargetBase<KoptCheckTargetPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    Location loc = module.getLoc();
    bool ok = true;
    // The chips whose limits the schedules know (PTX ISA 8.0 covers them).
    const std::vector<std::string> &chips =
        kopt::schedule::Target::knownChips();
    if (!llvm::is_contained(chips, chip)) {
      emitError(loc, "unsupported chip '")
          << chip << "': kopt generates code for " << llvm::join(chips, ", ");
      ok = false;
    }
    StringRef f(features);
    unsigned version = 0;
    if (!f.consume_front("+ptx") || f.getAsInteger(10, version) ||
        version < 80 || version > 88) {
      emitError(loc, "unsupported features '")
          << features << "': expected +ptxNN with NN from 80 (PTX ISA 8.0, the "
          << "oldest kopt emits) to 88";
      ok = false;
    }
    if (optLevel < 0 || optLevel > 3) {
      emitError(loc, "unsupported optimization level O=")
          << static_cast<int64_t>(optLevel) << ": expected 0 to 3";
      ok = false;
    }
    if (!cudaPath.empty()) {
      SmallString<256> libdevice(cudaPath);
      llvm::sys::path::append(libdevice, "nvvm", "libdevice",
                              "libdevice.10.bc");
      if (!llvm::sys::fs::is_directory(cudaPath)) {
        emitError(loc, "CUDA toolkit folder '")
            << cudaPath
            << "' does not exist or is not a folder; set CUDA_HOME or "
            << "cuda-path";
        ok = false;
      } else if (!llvm::sys::fs::exists(libdevice)) {
        emitError(loc, "no libdevice at '")
            << libdevice << "': is '" << cudaPath
            << "' a CUDA toolkit? Set CUDA_HOME or cuda-path";
        ok = false;
      }
    }
    module.walk([&](ModuleOp inner) {
      if (inner == module)
        return;
      if (!inner.getOps<func::FuncOp>().empty()) {
        inner.emitError("kopt compiles the functions of the top-level module "
                        "only; move them out of this nested module");
        ok = false;
      }
    });
    if (!ok)
      signalPassFailure();
  }
};

} // namespace
