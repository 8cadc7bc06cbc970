//===- EmitPTX.cpp - kopt-emit-ptx ----------------------------------------===//
//
// Writes the module's PTX to `output` and the launch manifest beside it
// (`out.ptx` -> `out.json`). Both files are written through a temporary file
// and renamed, so a failure never leaves a truncated file behind.
//
//===----------------------------------------------------------------------===//

#include "kopt/Target/PTX.h"
#include "kopt/Transforms/Passes.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

namespace kopt {
#define GEN_PASS_DEF_KOPTEMITPTX
#include "kopt/Transforms/Passes.h.inc"
} // namespace kopt

using namespace mlir;

namespace {

LogicalResult writeFile(ModuleOp module, StringRef path, StringRef text) {
  llvm::Error err = llvm::writeToOutput(path, [&](llvm::raw_ostream &os) {
    os << text;
    return llvm::Error::success();
  });
  if (err) {
    // llvm::toString names the file already.
    emitError(module.getLoc(), "cannot write the output: ")
        << llvm::toString(std::move(err));
    return failure();
  }
  return success();
}

struct KoptEmitPTXPass : public kopt::impl::KoptEmitPTXBase<KoptEmitPTXPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (output.empty()) {
      emitError(module.getLoc(), "kopt-emit-ptx needs output=FILE.ptx");
      return signalPassFailure();
    }
    // Never overwrite the source being compiled.
    if (auto file = dyn_cast<FileLineColLoc>(module.getLoc())) {
      bool same = false;
      if (!llvm::sys::fs::equivalent(file.getFilename().getValue(), output,
                                     same) &&
          same) {
        emitError(module.getLoc(), "output '")
            << output << "' is the input file; choose another PTX file";
        return signalPassFailure();
      }
    }
    SmallString<256> manifestPath(output);
    llvm::sys::path::replace_extension(manifestPath, "json");
    if (manifestPath == output) {
      emitError(module.getLoc(), "output '")
          << output << "' must not end in .json";
      return signalPassFailure();
    }
    FailureOr<kopt::PTXOutput> out = kopt::emitPTXOutput(
        module, llvm::sys::path::filename(output), chip, cudaPath);
    if (failed(out) || failed(writeFile(module, output, out->ptx)) ||
        failed(writeFile(module, manifestPath, out->manifest)))
      return signalPassFailure();
  }
};

} // namespace
