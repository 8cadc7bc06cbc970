//===- Tiling.h - matmul block tiles by upstream tiling ---------*- C++ -*-===//
//
// kopt-tile's first step for a matmul kernel: the kernel body (fill(0) + a
// contraction generic + at most one elementwise epilogue generic + a fused
// epilogue chain, linalg on tensors) is tiled with upstream MLIR's TilingInterface to the schedule's
// block tiles and K tiles, padded to whole tiles and its operand tiles
// promoted to shared memory. The matmul builder (Matmul/) then lowers that
// tiled form (docs/compiler.md, "kopt-tile").
//
//===----------------------------------------------------------------------===//
#ifndef KOPT_LIB_KERNELBUILDERS_TILING_H
#define KOPT_LIB_KERNELBUILDERS_TILING_H

#include "kopt/Dialect/Kopt/KoptDialect.h"
#include "kopt/Schedule/Schedule.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

namespace kopt::kb {

/// A matmul kernel body before tiling: fill(0) -> contraction generic ->
/// optional elementwise epilogue generic (identity maps, one input: the
/// contraction's result: the rounding to C's type) -> the fused epilogue
/// chain (kopt-fuse: elementwise generics over [M, N], each reading the
/// values before it through identity maps and kernel arguments through any
/// map that loads support, e.g. a bias row), whose last result the kernel
/// yields. Tiling tiles the contraction and the rounding; the chain stays
/// over the whole [M, N] and the builder applies it to each element as it
/// stores C.
struct MatmulBody {
  mlir::linalg::GenericOp contraction, epilogue;
  llvm::SmallVector<mlir::linalg::GenericOp> chain;
};

/// Checks that `chain` (the generics after the contraction and its rounding
/// epilogue, in order) is an epilogue chain over [m, n] as MatmulBody says,
/// `first` being the value the chain starts from, and that the kernel yields
/// exactly the chain's last result; emits an error at the offending op.
mlir::LogicalResult checkEpilogueChain(KernelOp kernel, mlir::Value first,
                                       llvm::ArrayRef<mlir::linalg::GenericOp>
                                           chain,
                                       int64_t m, int64_t n);

/// Matches the untiled body; emits an error at the offending op otherwise.
mlir::FailureOr<MatmulBody> matchMatmulBody(KernelOp kernel);

/// Whether kopt-tile's tiling has been applied to `kernel` (its body holds
/// the scf.forall of the block tiles).
bool isTiledMatmul(KernelOp kernel);

/// The K tile of a schedule: the K elements one iteration of the K loop
/// covers (block_k; for gemv, whose 32 lanes each read block_k elements of
/// a row, 32 * block_k).
int64_t kTileOf(const schedule::MatmulSchedule &s);

/// Whether the schedule's warp tiles are tiled by upstream too (tensor
/// cores: mma.sync warps and wgmma warpgroups each own a warp_m x warp_n
/// tile; FFMA threads and gemv lanes take theirs cyclically, in the builder).
bool hasWarpTiles(const schedule::MatmulSchedule &s);

/// FFMA's thread grid: tx = 16 threads along N, ty = threads / 16 along M;
/// per round of the grid (ty * chunk rows, tx * chunk columns) each thread
/// owns chunk x chunk outputs (chunk 4 when the block tile gives each
/// thread a multiple of 4 rows and columns, else 1).
struct SimtThreads {
  int64_t tx = 16, ty = 0, chunk = 1;
};
SimtThreads simtThreads(const schedule::MatmulSchedule &s);

/// Bytes of the contraction's A elements.
int64_t elementBytesOf(mlir::linalg::GenericOp contraction);

/// The innermost tile (M, N, K extents) of the tiled contraction: one
/// instruction's (mma.sync m16n8k16; wgmma m64 x warp_n x 32 bytes of K),
/// one FFMA thread's chunk x chunk outputs over the K tile, or gemv's whole
/// block tile and K tile.
llvm::SmallVector<int64_t, 3> instructionTile(const schedule::MatmulSchedule &s,
                                              int64_t elementBytes);

/// Tiles the untiled body of `kernel` for schedule `s` with upstream MLIR:
///   1. scf::tileConsumerAndFuseProducersUsingSCF on the yielded op (the
///      epilogue, else the contraction) with tile sizes [block_m, block_n]:
///      an scf.forall with one iteration per output block tile, the
///      contraction and its fill(0) fused into it;
///   2. linalg::rewriteAsPaddedOp on the tiled contraction: its operands
///      padded with zeros to whole tiles (M and N to block_m, block_n; K to a
///      multiple of the K tile), the result sliced back to the tile's valid
///      rows and columns (partial tiles: zero-padded loads, clipped stores);
///   3. scf::tileUsingSCF on the padded contraction with the K tile as the
///      reduction's tile size: an scf.for carrying the accumulator tile;
///   4. except for gemv (which reads its operands from global memory), each
///      K iteration's operand tiles promoted to shared memory as upstream's
///      transform.structured.promote_tensor does it:
///      bufferization.alloc_tensor() {memory_space =
///      #gpu.address_space<workgroup>} and
///      bufferization.materialize_in_destination of the tile into it.
///   5. with tensor cores (hasWarpTiles), the contraction on the K tiles
///      tiled by [warp_m, warp_n] with scf::tileUsingSCF into an scf.forall
///      over the warps (mapping #gpu.warp<y>, #gpu.warp<x>; wgmma:
///      #gpu.warpgroup<...>), N fastest;
///   6. thread tiles: with tensor cores the warp tile in instruction tiles
///      (scf.for over M, N, K; the lanes' parts are the instruction's
///      fragments); with FFMA rounds of the thread grid (scf.for) and one
///      scf.forall iteration per thread (#gpu.thread<y>, #gpu.thread<x>)
///      owning chunk x chunk outputs of a round (simtThreads); gemv's lanes
///      split K, which the builder does.
/// Fails with an error at the kernel when an upstream step fails.
mlir::LogicalResult tileMatmulBody(KernelOp kernel,
                                   const schedule::MatmulSchedule &s);

/// The tiled form tileMatmulBody leaves, read back by the matmul builder.
struct TiledMatmul {
  /// One iteration per block tile, over (ceil(M / block_m), ceil(N /
  /// block_n)).
  mlir::scf::ForallOp blockTiles;
  /// The K loop: 0 to K padded to whole K tiles, step the K tile.
  mlir::scf::ForOp kTiles;
  /// With warp tiles: one iteration per warp (warpgroup) of the K tile's
  /// contraction, over (block_m / warp_m, block_n / warp_n); else null.
  mlir::scf::ForallOp warpTiles;
  /// FFMA: one iteration per thread of a round of the thread grid; else
  /// null.
  mlir::scf::ForallOp threadTiles;
  /// The innermost contraction's M, N, K extents (instructionTile).
  llvm::SmallVector<int64_t, 3> innerTile;
  /// The innermost contraction (one instruction's, thread's or the K
  /// tile's) and the
  /// epilogue on the block tile's valid part (null without one).
  mlir::linalg::GenericOp contraction, epilogue;
  /// The fused epilogue chain after the block tiles (MatmulBody), over the
  /// whole [M, N]; empty without one.
  llvm::SmallVector<mlir::linalg::GenericOp> chain;
  /// The kernel's block arguments A and B are tiled from.
  mlir::Value a, b;
  int64_t M = 0, N = 0, K = 0;
  int64_t blockM = 0, blockN = 0, kTile = 0;
  /// The warp tile (0 without warp tiles).
  int64_t warpM = 0, warpN = 0;
  /// Whether the K tiles of A and B are promoted to shared memory.
  bool promoted = false;
};

/// Reads the tiled form of `kernel` back, checking each step's structure;
/// emits an error at the offending op when it is not tileMatmulBody's.
mlir::FailureOr<TiledMatmul> matchTiledMatmul(KernelOp kernel);

/// The untiled body a tiled kernel (tileMatmulBody's form) stands for, put
/// back in its place: fill(0), the contraction on the whole operands, the
/// epilogue, as kopt-lower-to-linalg writes them.
mlir::LogicalResult untileMatmulBody(KernelOp kernel);

} // namespace kopt::kb

#endif // KOPT_LIB_KERNELBUILDERS_TILING_H
