//===- KernelBuilders.cpp - classification and the builder of a class ----===//
//
// The top of lib/KernelBuilders (see CMakeLists.txt): the entry points of
// include/kopt/Transforms/KernelBuilders.h that pick a kernel class and its
// builder (Elementwise.cpp, Row.cpp, Pack.cpp, Matmul/).
//
//===----------------------------------------------------------------------===//

#include "Common.h"
#include "Pack.h"
#include "Tiling.h"

#include "kopt/Transforms/KernelBuilders.h"

using namespace mlir;
using namespace kopt;
using namespace kopt::kb;

StringRef kopt::stringifyKernelClass(KernelClass c) {
  // The manifest library names the classes (one table for compiler and
  // runtime).
  return kopt::manifest::kernelClassName(c);
}

FailureOr<KernelClass> kopt::classifyKernel(KernelOp kernel) {
  if (failed(checkPayloads(kernel)))
    return failure();
  // A matmul kernel that kopt-tile's upstream step tiled (Tiling.h).
  if (isTiledMatmul(kernel))
    return KernelClass::Matmul;
  SmallVector<linalg::GenericOp> gs = generics(kernel);
  for (Operation &op : kernel.getBody().front()) {
    if (isa<linalg::GenericOp, linalg::FillOp, tensor::EmptyOp, tensor::PadOp,
            arith::ConstantOp, YieldOp>(op))
      continue;
    return op.emitOpError("is not supported inside a kernel (run "
                          "kopt-lower-to-linalg first)");
  }
  if (isPackKernel(kernel))
    return KernelClass::Pack;
  for (Operation &op : kernel.getBody().front())
    if (isa<tensor::PadOp>(op))
      return op.emitOpError("is supported only as the last step of a pack "
                            "kernel (a 2-D copy padded with zeros)");
  if (gs.empty())
    return kernel.emitOpError("has no linalg.generic to build a kernel from");
  if (llvm::any_of(gs, isContraction))
    return KernelClass::Matmul;
  bool anyReduction = llvm::any_of(
      gs, [](linalg::GenericOp g) { return g.getNumReductionLoops() > 0; });
  if (anyReduction)
    return KernelClass::Row;
  // One generic per op of an elementwise chain (kopt-fuse).
  return KernelClass::Elementwise;
}

FailureOr<LaunchConfig> kopt::buildKernel(KernelOp kernel, KernelClass kind,
                                          gpu::GPUFuncOp func,
                                          const schedule::Target &target) {
  switch (kind) {
  case KernelClass::Elementwise:
    return buildElementwiseKernel(kernel, func);
  case KernelClass::Row:
    return buildRowKernel(kernel, func, target);
  case KernelClass::Matmul:
    return buildMatmulKernel(kernel, func, target);
  case KernelClass::Pack:
    return buildPackKernel(kernel, func);
  }
  llvm_unreachable("unknown kernel class");
}
