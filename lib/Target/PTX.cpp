//===- PTX.cpp - The PTX text of a compiled module
//-------------------------===//
//
// extractPTX and unresolvedFunctions (include/kopt/Target/PTX.h); the launch
// manifest is written by ManifestFromModule.cpp.
//
//===----------------------------------------------------------------------===//

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
