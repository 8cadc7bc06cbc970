//===- KernelSource.h - What a kopt.kernel computes, as data ----*- C++ -*-===//
//
// The `source` of a fused kernel (docs/ops.md, kopt.kernel) and the ops that
// kopt-fuse fuses. kopt::kernelSource (KoptDialect.h) is a one-op kernel's.
//
//===----------------------------------------------------------------------===//
#ifndef KOPT_DIALECT_KOPT_KERNELSOURCE_H
#define KOPT_DIALECT_KOPT_KERNELSOURCE_H

#include "mlir/IR/Block.h"
#include "mlir/IR/BuiltinAttributes.h"

namespace kopt {
/// Whether `op` is an elementwise kopt op (binary ops with broadcasting,
/// unary ops, gelu, cast): kopt-fuse groups chains of them into one kernel.
bool isElementwiseOp(mlir::Operation *op);

/// Whether `op` is a row op (reduce, softmax, rmsnorm, layernorm: over the
/// last dimension of its input): kopt-fuse puts elementwise ops over its
/// input's shape in front of it and after it, in one row kernel.
bool isRowOp(mlir::Operation *op);

/// The `source` of a kernel whose body computes several kopt ops (`ops`, in
/// order), as kopt-fuse records it: `{ops = [{name, attrs, operands = [...],
/// results = [...]}, ...], params = ["in0", ..., "out0", ...], values =
/// [{name = "t0", type = tensor<...>}, ...]}` (docs/ops.md). Operands and
/// results name the kernel's parameters (its inputs `in<i>`, its results
/// `out<i>`) or its internal values `t<k>`, numbered in op order.
mlir::DictionaryAttr fusedKernelSource(mlir::Block &body,
                                       llvm::ArrayRef<mlir::Operation *> ops);
} // namespace kopt

#endif // KOPT_DIALECT_KOPT_KERNELSOURCE_H
