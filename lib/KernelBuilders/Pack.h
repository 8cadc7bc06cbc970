//===- Pack.h - the recognizer of pack kernels ------------------*- C++ -*-===//
//
// Private to lib/KernelBuilders: what classifyKernel (KernelBuilders.cpp)
// asks of the pack builder (Pack.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef KOPT_LIB_KERNELBUILDERS_PACK_H
#define KOPT_LIB_KERNELBUILDERS_PACK_H

#include "kopt/Dialect/Kopt/KoptDialect.h"

namespace kopt::kb {

/// Whether the kernel body is kopt.pack's linalg form: a 2-D copy generic
/// (identity or transposed input map) followed by a tensor.pad, or either
/// alone (a transposing copy without padding, a pad of an argument).
bool isPackKernel(KernelOp kernel);

} // namespace kopt::kb

#endif // KOPT_LIB_KERNELBUILDERS_PACK_H
