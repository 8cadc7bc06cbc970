//===- Common.h - helpers shared by the kernel builders ---------*- C++ -*-===//
//
// The bottom of lib/KernelBuilders' include graph (CMakeLists.txt): it
// includes no other header of kopt but the dialect's.
//
//===----------------------------------------------------------------------===//
#ifndef KOPT_LIB_KERNELBUILDERS_COMMON_H
#define KOPT_LIB_KERNELBUILDERS_COMMON_H

#include "kopt/Dialect/Kopt/KoptDialect.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

namespace kopt::kb {

/// The largest gridDim.x CUDA accepts (2^31 - 1).
constexpr int64_t kMaxGridX = 2147483647;

/// Where each tensor of a kernel body lives in the gpu.func: block arguments of
/// the kernel map to the input memrefs, yielded values to the output memrefs.
struct KernelIO {
  KernelIO(KernelOp kernel, mlir::gpu::GPUFuncOp func);
  /// The memref holding `tensor`, or null for an intermediate value.
  mlir::Value memrefOf(mlir::Value tensor) const;
  llvm::DenseMap<mlir::Value, mlir::Value> memrefs;
};

/// An index constant.
mlir::Value indexConst(mlir::OpBuilder &b, mlir::Location loc, int64_t v);

/// Splits a linear index into the indices of a row-major `shape`.
llvm::SmallVector<mlir::Value> delinearize(mlir::OpBuilder &b,
                                           mlir::Location loc,
                                           mlir::Value linear,
                                           llvm::ArrayRef<int64_t> shape);

/// Applies an indexing map made of loop dimensions and constants to `dims`;
/// fails on any other expression.
mlir::FailureOr<llvm::SmallVector<mlir::Value>>
applyIndexingMap(mlir::OpBuilder &b, mlir::Location loc, mlir::AffineMap map,
                 mlir::ValueRange dims);

/// Clones the payload of `generic` with its block arguments bound to `args`;
/// returns the yielded value (generics with one result only).
mlir::Value clonePayload(mlir::OpBuilder &b, mlir::linalg::GenericOp generic,
                         mlir::ValueRange args);

/// Checks that the payload of every linalg.generic in `kernel` uses only
/// its block arguments, values it defines and constants (which clonePayload
/// clones along); emits an error at the first op that captures anything
/// else.
mlir::LogicalResult checkPayloads(KernelOp kernel);

/// A contraction generic: two inputs, iterators (parallel, parallel,
/// reduction), an output indexed (d0, d1), each input indexed by k and by
/// one of m, n, and a payload that multiplies and adds (linalg's
/// contraction interface).
bool isContraction(mlir::linalg::GenericOp g);

/// Whether the payload of contraction `g` is exactly acc + a * b: each input
/// used as it is or extended (arith.extf) to the accumulator's type, one
/// arith.mulf of the two, one arith.addf with the accumulator, in either
/// operand order, and nothing else (what kopt-lower-to-linalg writes for
/// kopt.matmul; the tensor-core builders compute that and only that).
bool isMultiplyAccumulate(mlir::linalg::GenericOp g);

/// The linalg.generic ops of the kernel body, in order.
llvm::SmallVector<mlir::linalg::GenericOp> generics(KernelOp kernel);

/// 16-byte accesses along the innermost loop dimension: V consecutive elements
/// per access, V = 16 bytes / the smallest element size among `types`, halved
/// until it divides `n` (the innermost extent); 1 when nothing larger fits.
int64_t vectorWidth(mlir::TypeRange types, int64_t n);

/// How an operand is read along the innermost loop dimension `lastDim`:
/// contiguously (its map's last result is that dimension and no other result
/// uses it), uniformly (no result uses it: one value for all lanes), or
/// neither.
enum class LaneAccess { Contiguous, Uniform, Other };
LaneAccess laneAccess(mlir::AffineMap map, unsigned lastDim);

/// V lanes of an operand: a vector<V x elt> (contiguous) or one scalar
/// (uniform).
struct Lanes {
  mlir::Value value;
  bool isVector = false;
  /// Lane `l` as a scalar.
  mlir::Value lane(mlir::OpBuilder &b, mlir::Location loc, int64_t l) const;
};

/// Reads V lanes of `mem` through `map` at loop indices `dims` (whose innermost
/// index is the first lane's). V = 1 is a plain scalar load. Fails for
/// LaneAccess::Other with V > 1, or a map that applyIndexingMap rejects.
mlir::FailureOr<Lanes> loadLanes(mlir::OpBuilder &b, mlir::Location loc,
                                 mlir::Value mem, mlir::AffineMap map,
                                 mlir::ValueRange dims, int64_t v);

/// Stores `values` (V scalars) at `indices` of `mem`, as one vector store when
/// V > 1.
void storeLanes(mlir::OpBuilder &b, mlir::Location loc, mlir::ValueRange values,
                mlir::Value mem, mlir::ValueRange indices);

/// The constant a linalg.fill wrote into `init`, cloned at `b`, or null.
mlir::Value fillValue(mlir::OpBuilder &b, mlir::Value init);

/// The product of the dimensions of `shape` (1 for a scalar).
int64_t numElements(llvm::ArrayRef<int64_t> shape);

/// A butterfly all-reduce over aligned groups of `width` lanes of a warp
/// (`width` a power of two, 1 to 32): shuffles xor width/2, ..., 2, 1, each
/// followed by `combine(mine, other)`; every lane ends with the combination of
/// its group's values (in the same order on every lane of the group). All 32
/// lanes of the warp must execute it (shfl.sync with a full mask).
mlir::Value warpAllReduce(
    mlir::OpBuilder &b, mlir::Location loc, mlir::Value v,
    llvm::function_ref<mlir::Value(mlir::Value, mlir::Value)> combine,
    int32_t width = 32);

/// gpu.thread_id / block_id x as index values.
mlir::Value threadIdX(mlir::OpBuilder &b, mlir::Location loc);
mlir::Value blockIdX(mlir::OpBuilder &b, mlir::Location loc);

} // namespace kopt::kb

#endif // KOPT_LIB_KERNELBUILDERS_COMMON_H
