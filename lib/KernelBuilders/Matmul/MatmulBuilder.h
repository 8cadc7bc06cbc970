//===- MatmulBuilder.h - pieces shared by the matmul builders ---*- C++ -*-===//
//
// Private to lib/KernelBuilders/Matmul/: what a tiled matmul kernel computes
// (Contraction, read off kopt-tile's tiled form by Driver.cpp), where a block
// works (Grid.cpp), the kernel parameters after the operands (split-K
// workspace, TMA tensor maps: TensorMaps.cpp) and the four instruction
// paths the driver picks from (Simt.cpp, Gemv.cpp, MmaSync.cpp, Wgmma.cpp).
// The epilogue they share is Epilogue.h.
//
//===----------------------------------------------------------------------===//
#ifndef KOPT_LIB_KERNELBUILDERS_MATMUL_MATMULBUILDER_H
#define KOPT_LIB_KERNELBUILDERS_MATMUL_MATMULBUILDER_H

#include "../Staging.h"
#include "../Tiling.h"

#include "kopt/Transforms/KernelBuilders.h"

namespace kopt::kb {

/// What a matmul kernel computes, read off its linalg body.
/// The fused epilogue chain of a matmul kernel (Tiling.h, MatmulBody): its
/// generics in order over [M, N]; per generic, per input, the memref of a
/// kernel argument it reads (through the input's indexing map, at the
/// element's global (m, n)), or null for a value computed before it; and
/// `first`, the tile result the chain starts from.
struct EpilogueChain {
  llvm::SmallVector<mlir::linalg::GenericOp> ops;
  llvm::SmallVector<llvm::SmallVector<mlir::Value>> inputs;
  mlir::Value first;
};

struct Contraction {
  mlir::linalg::GenericOp mm, epilogue;
  /// Applied after `epilogue` to every element stored (empty: none).
  EpilogueChain chain;
  mlir::Value out, memA, memB;
  int64_t M = 0, N = 0, K = 0;
  mlir::AffineMap mapA, mapB;
  /// The split-K workspace (memref<W x f32>, the kernel's last parameter
  /// before the tensor maps), null without split-K.
  mlir::Value workspace;
  /// copy = tma: i64 parameters holding the global addresses of A's and B's
  /// tensor maps (the kernel's last two parameters), else null.
  mlir::Value tensorMapA, tensorMapB;
  /// tma_store: an i64 parameter holding the global address of C's tensor
  /// map (after A's and B's), else null.
  mlir::Value tensorMapC;
  /// The source matmul allows TF32 (kopt.matmul {tf32}).
  bool tf32 = false;
  /// The tiled form the kernel is built from.
  TiledMatmul tiles;
};

/// The schedule's view of a contraction: extents, element types (of A, B and
/// C), whether A and B are contiguous along K, TF32 (Driver.cpp).
schedule::MatmulWorkload workloadOf(const Contraction &c);

//===----------------------------------------------------------------------===//
// Grid.cpp: where a block works, and the loops it runs
//===----------------------------------------------------------------------===//

/// The origin (m0, n0) of output tile number `tile` in the rasterization
/// order: with swizzle G > 1 the tiles are visited in groups of G tile rows, M
/// fastest within a group (grouped rasterization: blocks running together
/// share rows of A and columns of B in L2); with G = 1, row-major order.
std::pair<mlir::Value, mlir::Value>
tileCoordinates(mlir::OpBuilder &b, mlir::Location loc, const Contraction &c,
                int64_t bm, int64_t bn, int64_t swizzle, mlir::Value tile);

/// Where a block works: the origin (m0, n0) of its output tile (number `tile`
/// of `tiles`), its K split and the split's first K element (`kBase`, null
/// without split-K), and the K tiles every split runs.
struct TileOrigin {
  mlir::Value m0, n0, tile, split, kBase;
  int64_t tiles = 0, kTiles = 0;
};

/// The 1-D grid (recorded in `cfg`) and this block's place in it (see
/// Grid.cpp); fails when the grid would exceed CUDA's gridDim.x.
mlir::FailureOr<TileOrigin> tileOrigin(mlir::OpBuilder &b, mlir::Location loc,
                                       const Contraction &c, int64_t bm,
                                       int64_t bn, int64_t bk, int64_t swizzle,
                                       int64_t splitK, LaunchConfig &cfg);

/// i * stride + offset (index values).
mlir::Value stridedIndex(mlir::OpBuilder &b, mlir::Location loc, mlir::Value i,
                         int64_t stride, mlir::Value offset);

/// scf.for %i = 0 to `count` step 1 (iter_args `init`), its constants made
/// one statement at a time (the IR must not depend on the host compiler's
/// argument evaluation order).
mlir::scf::ForOp countedLoop(mlir::OpBuilder &b, mlir::Location loc,
                             int64_t count, mlir::ValueRange init = {});

/// A kopt.mainloop over the block's K tiles (kopt-pipeline stages them),
/// `body` building one K tile's compute on the staged tiles into `acc`.
/// Returns the op; its results are the final accumulators.
MainloopOp createMainloop(
    mlir::OpBuilder &b, mlir::Location loc, const Contraction &c,
    const schedule::MatmulSchedule &s, mlir::Value m0, mlir::Value n0,
    mlir::Value kBegin, mlir::Value kTiles, mlir::ValueRange init,
    llvm::ArrayRef<int64_t> tileShapeA, llvm::ArrayRef<int64_t> tileShapeB,
    std::optional<int64_t> barrierOffset, bool drain,
    llvm::function_ref<llvm::SmallVector<mlir::Value>(mlir::Value, mlir::Value,
                                                      mlir::ValueRange)>
        body);

//===----------------------------------------------------------------------===//
// TensorMaps.cpp: the parameters after the operands
//===----------------------------------------------------------------------===//

/// What a matmul kernel takes after its operands and results.
struct ExtraParameters {
  /// f32 elements of the split-K workspace (0: none).
  int64_t workspaceElements = 0;
  /// The TMA tensor maps (A's and B's with copy = tma, then C's with
  /// tma_store).
  std::vector<TensorMapParam> tensorMaps;
};

/// Appends the split-K workspace and the tensor maps the schedule needs to
/// `func`'s parameters and records them in `c`; fails with an error at
/// `kernel` when an operand cannot take a tensor map.
mlir::FailureOr<ExtraParameters>
addExtraParameters(KernelOp kernel, mlir::gpu::GPUFuncOp func,
                   const schedule::MatmulSchedule &s,
                   const schedule::MatmulWorkload &w, Contraction &c);

//===----------------------------------------------------------------------===//
// The instruction paths
//===----------------------------------------------------------------------===//

/// The contraction payload acc + a * b for one multiply-accumulate, the
/// product and the sum fused into one FMA when the payload allows it
/// (Simt.cpp; FFMA and gemv).
mlir::Value multiplyAccumulate(mlir::OpBuilder &b, mlir::Location loc,
                               mlir::linalg::GenericOp mm, mlir::Value a,
                               mlir::Value bv, mlir::Value acc);

/// instruction = ffma: SIMT threads owning chunk x chunk outputs (Simt.cpp).
mlir::FailureOr<LaunchConfig> buildSimt(const Contraction &c,
                                        mlir::gpu::GPUFuncOp func,
                                        const schedule::MatmulSchedule &s);
/// instruction = gemv: lanes splitting K (Gemv.cpp).
mlir::FailureOr<LaunchConfig> buildGemv(const Contraction &c,
                                        mlir::gpu::GPUFuncOp func,
                                        const schedule::MatmulSchedule &s);
/// instruction = mma_sync: m16n8k16 from ldmatrix fragments (MmaSync.cpp).
mlir::FailureOr<LaunchConfig> buildMma(const Contraction &c,
                                       mlir::gpu::GPUFuncOp func,
                                       const schedule::MatmulSchedule &s);
/// instruction = wgmma: warpgroups, optionally a persistent grid of
/// `persistentBlocks` blocks (Wgmma.cpp).
mlir::FailureOr<LaunchConfig> buildWgmma(const Contraction &c,
                                         mlir::gpu::GPUFuncOp func,
                                         const schedule::MatmulSchedule &s,
                                         int64_t persistentBlocks);

} // namespace kopt::kb

#endif // KOPT_LIB_KERNELBUILDERS_MATMUL_MATMULBUILDER_H
