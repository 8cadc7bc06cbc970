//===- Staging.h - operand tiles into shared memory -------------*- C++ -*-===//
//
// Shared by the matmul kernel builder (kopt-tile: synchronous staging
// of the FFMA kernels) and kopt-pipeline (synchronous and cp.async staging of
// the tensor-core mainloops): how an operand tile of a contraction reaches
// shared memory, and the kernels' dynamic shared memory.
//
//===----------------------------------------------------------------------===//
#ifndef KOPT_LIB_KERNELBUILDERS_STAGING_H
#define KOPT_LIB_KERNELBUILDERS_STAGING_H

#include "Common.h"

namespace kopt::kb {

/// One operand's tile staging: the logical tile is `tileOuter` rows of m (A,
/// outerDim 0) or n (B, outerDim 1) by `tileK` columns of k.
struct StageSpec {
  mlir::Value mem;
  mlir::AffineMap map;
  unsigned outerDim;
  int64_t tileOuter, tileK;
  int64_t outerSize, kSize;
  mlir::Value smem;
  /// Shared memory is [outer][k] (true) or [k][outer] (false).
  bool smemOuterMajor;
  /// 128-byte swizzle of [outer][64] 16-bit tiles (the layout wgmma reads
  /// with a SWIZZLE_128B descriptor): chunk c of row r is stored at chunk
  /// c ^ (r % 8) of the row.
  bool swizzle128 = false;
};

/// Whether an operand indexed by `map` ((m, n, k) -> 2 indices) is contiguous
/// along k (k is its last index).
inline bool kContiguous(mlir::AffineMap map) {
  auto last = llvm::dyn_cast<mlir::AffineDimExpr>(map.getResults().back());
  return last && last.getPosition() == 2;
}

/// Element loads per thread of a tile staged one element at a time.
int64_t elementLoads(const StageSpec &s, int64_t threads);

/// Element r of a thread's share of an operand tile staged one element at a
/// time: its value (zero outside the operand) and where it goes in the
/// shared tile; `inTile` is false for the threads past the end of a tile with
/// fewer elements than the threads cover (null when all are inside).
struct TileElement {
  mlir::Value value, inTile;
  llvm::SmallVector<mlir::Value> smemIdx;
};

/// Loads element r (tid + r * threads of the tile, k fastest for a
/// K-contiguous operand, else outer fastest) of the thread's share of the
/// tile at (outerBase, kBase).
mlir::FailureOr<TileElement>
loadTileElement(mlir::OpBuilder &b, mlir::Location loc, mlir::Operation *diag,
                const StageSpec &s, mlir::Value outerBase, mlir::Value kBase,
                mlir::Value tid, int64_t threads, int64_t r);

/// Stores a loaded element into the shared tile `smem` at `lead` (leading
/// indices, e.g. a buffer of a double-buffered tile) + its tile position.
void storeTileElement(mlir::OpBuilder &b, mlir::Location loc,
                      const StageSpec &s, mlir::Value smem,
                      mlir::ValueRange lead, const TileElement &t);

/// Stages one operand tile, rows [outerBase, outerBase + tileOuter) x K
/// elements [kBase, kBase + tileK), into s.smem synchronously (loads into
/// registers, then stores), zeros outside the operand; `threads` threads,
/// `tid` this one's index. Errors (an indexing map applyIndexingMap rejects)
/// are reported at `diag`.
mlir::LogicalResult stageTile(mlir::OpBuilder &b, mlir::Location loc,
                              mlir::Operation *diag, const StageSpec &s,
                              mlir::Value outerBase, mlir::Value kBase,
                              mlir::Value tid, int64_t threads);

/// Stages A's tile at rows [m0, m0 + a.tileOuter) and B's at [n0, n0 +
/// bs.tileOuter), K elements from k0, with stageTile.
mlir::LogicalResult stageOperandTiles(mlir::OpBuilder &b, mlir::Location loc,
                                      mlir::Operation *diag, const StageSpec &a,
                                      const StageSpec &bs, mlir::Value m0,
                                      mlir::Value n0, mlir::Value k0,
                                      mlir::Value tid, int64_t threads);

/// Issues cp.async copies (16 bytes each, zero-filled outside the bounds) of
/// one operand tile into `stage` of s.smem ([stages][outer][k], or
/// [stages][tileK / 64][outer][64] with s.swizzle128); returns the tokens.
mlir::FailureOr<llvm::SmallVector<mlir::Value>>
issueTileAsync(mlir::OpBuilder &b, mlir::Location loc, mlir::Operation *diag,
               const StageSpec &s, mlir::Value stage, mlir::Value outerBase,
               mlir::Value kBase, mlir::Value tid, int64_t threads);

/// The module's dynamic shared memory array (created on first use in the
/// gpu.module of `func`): a public zero-size global in address space 3 that
/// lowers to `.extern .shared .align 1024 .b8 kopt_dynamic_smem[]`
/// (../shared/MLIR22-NOTES.md: gpu.dynamic_shared_memory does not).
mlir::Value dynamicSharedMemory(mlir::OpBuilder &b, mlir::Location loc,
                                mlir::gpu::GPUFuncOp func);

/// A view of `shape` x `elt` at byte `offset` of the dynamic shared memory
/// `smem` (a constant offset, or an index value).
mlir::Value sharedView(mlir::OpBuilder &b, mlir::Location loc, mlir::Value smem,
                       int64_t offset, llvm::ArrayRef<int64_t> shape,
                       mlir::Type elt);
mlir::Value sharedView(mlir::OpBuilder &b, mlir::Location loc, mlir::Value smem,
                       mlir::Value offset, llvm::ArrayRef<int64_t> shape,
                       mlir::Type elt);

} // namespace kopt::kb

#endif // KOPT_LIB_KERNELBUILDERS_STAGING_H
