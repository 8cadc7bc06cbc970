//===- EmitPTX.cpp - kopt-emit-ptx ----------------------------------------===//
//
// Writes the module's PTX to `output` and the launch manifest beside it
// (`out.ptx` -> `out.json`). Both files are written through a temporary file
// and renamed, so a failure never leaves a truncated file behind; neither may
// be the input file.
//
//===----------------------------------------------------------------------===//

#include "kopt/Target/PTX.h"
#include "kopt/Transforms/Passes.h"

#include "llvm/ADT/SetVector.h"
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

/// Whether `a` and `b` name one existing file (one inode, so also through
/// links and relative paths).
bool isSameFile(StringRef a, StringRef b) {
  bool same = false;
  return !llvm::sys::fs::equivalent(a, b, same) && same;
}

/// The files the module was read from: those named by the locations of the
/// module and of its top-level ops (kopt-opt's input file; a NameLoc or
/// FusedLoc around a file location counts too).
llvm::SetVector<StringRef> sourceFiles(ModuleOp module) {
  llvm::SetVector<StringRef> files;
  auto add = [&](Location loc) {
    loc->walk([&](Location inner) {
      if (auto file = dyn_cast<FileLineColLoc>(inner))
        files.insert(file.getFilename().getValue());
      return WalkResult::advance();
    });
  };
  add(module.getLoc());
  for (Operation &op : *module.getBody())
    add(op.getLoc());
  return files;
}

struct KoptEmitPTXPass : public kopt::impl::KoptEmitPTXBase<KoptEmitPTXPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (output.empty()) {
      emitError(module.getLoc(), "kopt-emit-ptx needs output=FILE.ptx");
      return signalPassFailure();
    }
    SmallString<256> manifestPath(output);
    llvm::sys::path::replace_extension(manifestPath, "json");
    if (manifestPath == output) {
      emitError(module.getLoc(), "output '")
          << output << "' must not end in .json";
      return signalPassFailure();
    }
    // Never overwrite the source being compiled, with the PTX or with the
    // manifest beside it (`X.json` compiled with output=X.ptx).
    for (StringRef input : sourceFiles(module)) {
      if (isSameFile(input, output)) {
        emitError(module.getLoc(), "output '")
            << output << "' is the input file; choose another PTX file";
        return signalPassFailure();
      }
      if (isSameFile(input, manifestPath)) {
        emitError(module.getLoc(), "the manifest '")
            << manifestPath << "' (output '" << output
            << "' with .json) is the input file; choose another output name";
        return signalPassFailure();
      }
    }
    FailureOr<kopt::PTXOutput> out = kopt::emitPTXOutput(
        module, llvm::sys::path::filename(output), chip, cudaPath);
    if (failed(out) || failed(writeFile(module, output, out->ptx)) ||
        failed(writeFile(module, manifestPath, out->manifest)))
      return signalPassFailure();
  }
};

} // namespace
