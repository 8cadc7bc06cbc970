//===- Passes.h - kopt passes -----------------------------------*- C++ -*-===//
#ifndef KOPT_TRANSFORMS_PASSES_H
#define KOPT_TRANSFORMS_PASSES_H

#include "kopt/Dialect/Kopt/KoptDialect.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace kopt {
#define GEN_PASS_DECL
#include "kopt/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "kopt/Transforms/Passes.h.inc"
} // namespace kopt

#endif // KOPT_TRANSFORMS_PASSES_H
