//===- PTX.cpp - The PTX text of a compiled module ------------------------===//
//
// extractPTX, unresolvedFunctions and emitPTXOutput (include/kopt/Target/
// PTX.h): what kopt-emit-ptx (files) and the C API (memory) take out of a
// module after the kopt-to-ptx pipeline. The launch manifest is built by
// ManifestFromModule.cpp.
//
//===----------------------------------------------------------------------===//

#include "kopt/Dialect/Kopt/KoptDialect.h"
#include "kopt/Target/PTX.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"

using namespace mlir;

FailureOr<std::string> kopt::extractPTX(ModuleOp module) {
  std::string ptx;
  bool found = false;
  for (auto binary : module.getOps<gpu::BinaryOp>()) {
    for (Attribute a : binary.getObjects()) {
      auto object = dyn_cast<gpu::ObjectAttr>(a);
      if (!object || object.getFormat() != gpu::CompilationTarget::Assembly)
        continue;
      ptx += object.getObject().getValue().str();
      found = true;
    }
  }
  if (!found)
    return emitError(module.getLoc(),
                     "no gpu.binary with PTX (format=isa) in the module; run "
                     "gpu-module-to-binary{format=isa} first"),
           failure();
  return ptx;
}

SmallVector<std::string> kopt::unresolvedFunctions(StringRef ptx) {
  SmallVector<std::string> names;
  SmallVector<StringRef> lines;
  ptx.split(lines, '\n');
  for (StringRef line : lines) {
    line = line.trim();
    if (!line.consume_front(".extern .func"))
      continue;
    // `.extern .func (.param .b32 retval) __nv_expf(` or `.extern .func foo(`
    line = line.trim();
    if (line.starts_with("("))
      line =
          line.drop_until([](char c) { return c == ')'; }).drop_front().trim();
    names.push_back(line.take_until([](char c) { return c == '(' || c == ';'; })
                        .trim()
                        .str());
  }
  return names;
}

FailureOr<kopt::PTXOutput> kopt::emitPTXOutput(ModuleOp module,
                                               StringRef ptxFileName,
                                               StringRef chip,
                                               StringRef cudaPath) {
  // A module that launches no kernel (no kopt op, no kopt.launch) has
  // nothing to write; one whose kernels were not serialized is reported by
  // extractPTX.
  bool hasKernels = false;
  module.walk([&](Operation *op) {
    if (isa_and_nonnull<kopt::KoptDialect>(op->getDialect()))
      hasKernels = true;
  });
  if (!hasKernels)
    return emitError(module.getLoc(),
                     "nothing to compile: no function of the module "
                     "computes a result with kopt ops (kopt ops whose "
                     "results are not returned are dropped)"),
           failure();
  FailureOr<std::string> ptx = extractPTX(module);
  if (failed(ptx))
    return failure();
  // Calls left to libdevice functions mean libdevice was not found: ptxas
  // would reject the PTX, so stop here with the cause.
  SmallVector<std::string> unresolved = unresolvedFunctions(*ptx);
  if (!unresolved.empty())
    return emitError(module.getLoc(), "the PTX calls '")
               << unresolved.front()
               << "', which is not defined: libdevice was not linked; is the "
                  "CUDA toolkit at '"
               << (cudaPath.empty() ? StringRef("(unset)") : cudaPath)
               << "' (nvvm/libdevice/libdevice.10.bc)? Set CUDA_HOME or the "
                  "pipeline's cuda-path option",
           failure();
  FailureOr<std::string> manifest = buildManifest(module, ptxFileName, chip);
  if (failed(manifest))
    return failure();
  return PTXOutput{std::move(*ptx), std::move(*manifest)};
}
