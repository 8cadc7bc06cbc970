//===- KernelBuilders.h - GPU kernels from linalg payloads ------*- C++ -*-===//
//
// A kernel builder turns the body of one kopt.kernel (linalg on tensors, as
// made by kopt-lower-to-linalg) into the body of a gpu.func over memrefs. It
// decides only the iteration structure (blocks, threads, loops, shared memory,
// shuffles); the scalar computation is the linalg payloads, cloned.
//
// Classes (docs/compiler.md):
//   - Elementwise: one all-parallel linalg.generic. A grid-stride loop, one
//   element
//     per thread per iteration, 256 threads per block.
//   - Row: reductions over the last dimension with their prologue and epilogue
//     (reduce, softmax, rmsnorm, layernorm). One block per row; each reduction
//     is a strided loop per thread, a warp shuffle tree and a shared-memory
//     step.
//   - Matmul: fill(0) + contraction generic (+ rounding generic), first
//     tiled by upstream MLIR (tileMatmulKernel: block tiles by tile-and-fuse,
//     zero padding, K tiles, promotion to shared memory, warp and thread
//     tiles), then built from that tiled form as the kernel's #kopt.schedule
//     says (grid, warps, stages, mma.sync, wgmma, FFMA or gemv, cp.async, TMA
//     or synchronous copies); partial tiles zero-padded on load and masked
//     on store.
//   - Pack: a 2-D copy generic (identity or transposed map) padded with zeros
//     by tensor.pad (kopt.pack). 64 x 64 tiles, transposed through shared
//     memory.
//
//===----------------------------------------------------------------------===//
#ifndef KOPT_TRANSFORMS_KERNELBUILDERS_H
#define KOPT_TRANSFORMS_KERNELBUILDERS_H

#include "kopt/Dialect/Kopt/KoptDialect.h"
#include "kopt/Manifest/Manifest.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"

#include <array>
#include <vector>

namespace kopt {

/// The kernel builders' classes: the manifest's (kopt/Manifest/Manifest.h).
using KernelClass = kopt::manifest::KernelClass;

/// Name of a kernel class as the launch manifest writes it.
llvm::StringRef stringifyKernelClass(KernelClass c);

/// A TMA tensor map a kernel takes as an i64 parameter (the global address
/// of a 128-byte CUtensorMap the runtime encodes; docs/manifest.md,
/// tensor_maps): of the kernel's `tensor`-th parameter (a dense row-major
/// array), a box of `box` elements (innermost dimension first), with a
/// `swizzleBytes`-byte swizzle (0, 32, 64 or 128).
struct TensorMapParam {
  unsigned tensor = 0;
  llvm::SmallVector<int64_t, 2> box;
  int64_t swizzleBytes = 0;
};

/// Launch dimensions of a built kernel.
struct LaunchConfig {
  std::array<int64_t, 3> grid = {1, 1, 1};
  std::array<int64_t, 3> block = {1, 1, 1};
  /// Blocks per thread-block cluster (sm_90), fixed at compile time: the
  /// kernel carries `known_cluster_size` (PTX `.reqnctapercluster`), so a
  /// plain cuLaunchKernel launches it; the grid is a multiple of it. {1, 1,
  /// 1}: no cluster.
  std::array<int64_t, 3> cluster = {1, 1, 1};
  int64_t dynamicSharedBytes = 0;
  /// f32 elements of a workspace the kernel takes as its last parameter
  /// (split-K matmuls), zero before the kernel's first launch; 0: none.
  int64_t workspaceElements = 0;
  /// Tensor maps the kernel takes as its last parameters (after the
  /// workspace), in order.
  std::vector<TensorMapParam> tensorMaps;
};

/// The longest row (elements of the last dimension) that a row kernel keeps
/// in registers when its accesses are 16 bytes wide (lib/KernelBuilders/
/// Row.cpp: a cluster of 8 blocks of 1024 threads of 32 elements); longer
/// rows loop, recomputing the elementwise ops fused in front of the row op in
/// every loop, so kopt-fuse fuses such producers only into rows up to this
/// length.
constexpr int64_t kMaxRegisterRow = 8 * 1024 * 32;

/// Classifies the body of `kernel`; emits an error at the offending op and
/// fails when no builder handles it.
mlir::FailureOr<KernelClass> classifyKernel(KernelOp kernel);

/// Builds the body of `func` so that it computes `kernel`. `func`'s arguments
/// are memrefs: the kernel's inputs, then its results, in order; its body must
/// be an empty entry block. Returns the launch configuration, or fails with a
/// diagnostic at the kernel's location.
/// `target` bounds the matmul schedules (shared memory per block, ...).
mlir::FailureOr<LaunchConfig> buildKernel(KernelOp kernel, KernelClass kind,
                                          mlir::gpu::GPUFuncOp func,
                                          const schedule::Target &target);

// The builders of each class (lib/KernelBuilders/{Elementwise,Row,Pack}.cpp and
// lib/KernelBuilders/Matmul/Driver.cpp).
mlir::FailureOr<LaunchConfig> buildElementwiseKernel(KernelOp kernel,
                                                     mlir::gpu::GPUFuncOp func);
/// Splits long rows across thread-block clusters only where `target` has them.
mlir::FailureOr<LaunchConfig> buildRowKernel(KernelOp kernel,
                                             mlir::gpu::GPUFuncOp func,
                                             const schedule::Target &target);
mlir::FailureOr<LaunchConfig> buildPackKernel(KernelOp kernel,
                                              mlir::gpu::GPUFuncOp func);
/// kopt-tile's upstream step for a matmul kernel (lib/KernelBuilders/Matmul/
/// Driver.cpp, with Tiling.h): tiles the body for its `schedule`, which
/// kopt-select-schedule chose and checked (`schedule_checked_for`; an error
/// naming that pass when the kernel has no such schedule, or one checked for
/// another chip than `target`'s), with upstream MLIR: tile-and-fuse to block
/// tiles (scf.forall), zero padding to whole tiles, K tiles (scf.for), the
/// operand tiles promoted to shared memory. The body stays linalg on tensors.
/// A kernel already tiled is left as it is.
mlir::LogicalResult tileMatmulKernel(KernelOp kernel,
                                     const schedule::Target &target);
/// Applies the kernel's `schedule` attribute, checked by kopt-select-schedule
/// (schedules are checked there only, not again here): tiles the body first
/// (tileMatmulKernel) unless that was done before, then lowers the tiled form.
mlir::FailureOr<LaunchConfig> buildMatmulKernel(KernelOp kernel,
                                                mlir::gpu::GPUFuncOp func,
                                                const schedule::Target &target);

/// kopt-pipeline's expansion of one kopt.mainloop (lib/KernelBuilders/
/// Mainloop/): replaces it with the K loop that stages its operand tiles
/// as its schedule says (synchronous loads, a cp.async or TMA ring of
/// `stages` buffers, a producer warp, a ring across a persistent block's
/// tiles) and runs its body once per K tile. Fails with a diagnostic at the
/// op when it is not expandable (docs/compiler.md, kopt-pipeline).
mlir::LogicalResult expandMainloop(MainloopOp op);

} // namespace kopt

#endif // KOPT_TRANSFORMS_KERNELBUILDERS_H
