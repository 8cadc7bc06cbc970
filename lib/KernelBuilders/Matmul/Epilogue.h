//===- Epilogue.h - the matmul kernels' epilogue ----------------*- C++ -*-===//
//
// Private to lib/KernelBuilders/Matmul/ (Epilogue.cpp): how a thread's
// accumulators reach C: rounded by the epilogue payload and stored under
// masks, in pairs from registers, staged through shared memory for wide
// stores, or stored by TMA (tma_store); with split-K through the workspace,
// summed by the last block of each tile.
//
//===----------------------------------------------------------------------===//
#ifndef KOPT_LIB_KERNELBUILDERS_MATMUL_EPILOGUE_H
#define KOPT_LIB_KERNELBUILDERS_MATMUL_EPILOGUE_H

#include "MatmulBuilder.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

namespace kopt::kb {

/// The staged epilogue (tensor cores, vector_width > 2): the lanes write
/// their rounded accumulator pairs into a block_m x (block_n + 8) tile of C's
/// element type in shared memory (sched::epilogueRowPitch: the padding puts
/// the pair stores of a warp in distinct banks); after a barrier, the
/// block's threads store the tile row by row in chunks of vector_width
/// elements (16 bytes for 16-bit C with width 8), consecutive threads
/// consecutive chunks: whole 32-byte sectors per warp instead of the pairs'
/// 4 bytes per row.
///
/// With tma_store the tile is instead [block_n / R][block_m][R]: R columns
/// of S = sched::tmaStoreSwizzleBytes bytes (128, 64 or 32) per sub-tile,
/// each one TMA box of C's tensor map in the S-byte swizzled layout (PTX
/// ISA, "Tensor Swizzling Modes": the 16-byte chunk j of row r lies at
/// chunk j ^ ((r / (128 / S)) % (S / 16))), so that the pair stores of a
/// warp (8 rows of one chunk column) fall in distinct banks, and one thread
/// stores the boxes with cp.async.bulk.tensor.
struct StagedEpilogue {
  mlir::Value tile; // memref<block_m x (block_n + 8) x C, 3>, or the sub-tiles
  mlir::Value m0, n0;
  int64_t bm = 0, bn = 0, width = 0;
  /// tma_store: C's tensor map (an i64 holding its global address), the
  /// box's columns (R), rows (sched::tmaBoxRows(block_m, M)) and swizzle
  /// span (S bytes).
  mlir::Value tensorMap;
  int64_t boxColumns = 0, boxRows = 0, swizzleBytes = 0;
  /// Every lane's columns lie within 8 of a multiple of R (the warp tiles'
  /// columns start at multiples of R): stageResult may then split the
  /// swizzled address into a per-lane base and per-store constants.
  bool lanesAligned = false;
};

/// The threads that run a kernel's epilogue: `count` threads, `tid` from 0.
/// When they are not the whole block (the consumer warps of a
/// warp-specialized kernel, whose producer warp takes no part) their barriers
/// name that thread count (PTX ISA, bar.sync / barrier.red with a thread
/// count, a multiple of 32). They stay on barrier 0, the only one NVVM's
/// barrier.red takes: no other thread uses it after the kernel's setup.
struct EpilogueThreads {
  mlir::Value tid;
  int64_t count = 0;
  bool wholeBlock = true;

  /// The barrier id (0) and thread count operands (null: the whole block).
  std::pair<mlir::Value, mlir::Value> named(mlir::OpBuilder &b,
                                            mlir::Location loc) const {
    if (wholeBlock)
      return {mlir::Value(), mlir::Value()};
    mlir::Value id =
        mlir::arith::ConstantIntOp::create(b, loc, b.getI32Type(), 0);
    mlir::Value n =
        mlir::arith::ConstantIntOp::create(b, loc, b.getI32Type(), count);
    return {id, n};
  }
  void barrier(mlir::OpBuilder &b, mlir::Location loc) const {
    if (wholeBlock) {
      mlir::gpu::BarrierOp::create(b, loc);
      return;
    }
    auto [id, n] = named(b, loc);
    mlir::NVVM::BarrierOp::create(b, loc, mlir::TypeRange{}, id, n,
                                  mlir::NVVM::BarrierReductionAttr(),
                                  mlir::Value());
  }
};

/// Waits until the TMA unit has read the shared memory of this thread's
/// committed TMA stores (a no-op for threads that issued none).
void waitForTmaStoreReads(mlir::OpBuilder &b, mlir::Location loc);

/// Starts the staged epilogue of the block tile at (m0, n0), its tile at byte
/// `offset` of the dynamic shared memory `smem`: once no warp reads that
/// memory any more (a barrier of the epilogue's threads; a mainloop whose
/// buffers it reuses has no copy in flight after it: kopt.mainloop's drain;
/// with tma_store, the TMA unit has read the previous tile's boxes).
StagedEpilogue beginStagedEpilogue(mlir::OpBuilder &b, mlir::Location loc,
                                   const Contraction &c,
                                   const schedule::MatmulSchedule &s,
                                   mlir::Value smem, int64_t offset,
                                   mlir::Value m0, mlir::Value n0,
                                   const EpilogueThreads &et);

/// Receives a thread's accumulators `vs` for outputs (m, n), (m, n + 1), ...
using OutputFn = llvm::function_ref<void(llvm::ArrayRef<mlir::Value> vs,
                                         mlir::Value m, mlir::Value n)>;

/// The lane origin (rowBase, colBase) of a lane's accumulator chunks, for
/// forEachAccumulatorOfQuad: ((m0 + tileRow) + laneRow, (n0 + tileCol) + 2
/// (lane % 4)). In the mma.sync m16n8 and wgmma m64nN accumulator layouts
/// (PTX ISA) lane l holds columns 2 (l % 4) and + 1 of every 8-column chunk;
/// `laneRow` is its row in the warp's (or warpgroup's) tile, from l / 4, and
/// (tileRow, tileCol) the origin of that tile in the block tile at (m0, n0).
std::pair<mlir::Value, mlir::Value>
accumulatorLaneOrigin(mlir::OpBuilder &b, mlir::Location loc, mlir::Value lane,
                      mlir::Value laneRow, mlir::Value m0, mlir::Value tileRow,
                      mlir::Value n0, mlir::Value tileCol);

/// Passes the 4 accumulator registers a lane holds of one 16 x 8 (mma.sync)
/// or 8-column (wgmma) accumulator chunk whose lane origin is (rowBase +
/// rowOffset, colBase + colOffset) to `emit`: registers 0, 1 at that row,
/// columns +0 and +1, registers 2, 3 eight rows below; `vectorWidth` 2 passes
/// the adjacent pairs together.
void forEachAccumulatorOfQuad(mlir::OpBuilder &b, mlir::Location loc,
                              mlir::Value rowBase, int64_t rowOffset,
                              mlir::Value colBase, int64_t colOffset,
                              llvm::function_ref<mlir::Value(int64_t)> reg,
                              int64_t vectorWidth, OutputFn emit);

/// The epilogue: every output the thread holds (`forEachOutput` calls its
/// argument once per group of accumulators) is rounded and stored, into
/// `staged` when there is one (then stored from there by the epilogue's
/// threads); with split-K S > 1 through the workspace (Epilogue.cpp).
void emitEpilogue(mlir::OpBuilder &b, mlir::Location loc, const Contraction &c,
                  const TileOrigin &o, int64_t splitK,
                  const EpilogueThreads &et, const StagedEpilogue *staged,
                  llvm::function_ref<void(OutputFn)> forEachOutput);

} // namespace kopt::kb

#endif // KOPT_LIB_KERNELBUILDERS_MATMUL_EPILOGUE_H
