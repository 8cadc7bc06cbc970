//===- TmaRing.h - the TMA ring of a wgmma mainloop -------------*- C++ -*-===//
//
// Private to lib/KernelBuilders/Mainloop/ (TmaRing.cpp): the mbarrier ring
// a copy = tma mainloop stages its operand tiles through.
//
//===----------------------------------------------------------------------===//
#ifndef KOPT_LIB_KERNELBUILDERS_MAINLOOP_TMARING_H
#define KOPT_LIB_KERNELBUILDERS_MAINLOOP_TMARING_H

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"

namespace kopt::kb {

/// The TMA ring of a wgmma kernel (copy = tma): one thread (thread 0) issues
/// per stage a box copy of 128 bytes of K (64 16-bit or 32 f32 elements) x
/// block_m rows of A and x block_n rows of B for every 128 bytes of block_k
/// (cp.async.bulk.tensor through
/// the tensor maps the runtime encodes, 128-byte swizzle, out-of-bounds
/// elements read as zeros) and signals them on the stage's "full" mbarrier
/// (arrival count 1 plus the stage's bytes); each warp arrives on the
/// stage's "empty" mbarrier once its wgmma reading the stage have completed,
/// and thread 0 waits for that before it refills the stage. Load number f
/// (flattened over the block's tiles and K tiles) uses stage f % stages, the
/// (f / stages)-th phase of both mbarriers (PTX ISA, mbarrier and
/// cp.async.bulk.tensor).
struct TmaRing {
  mlir::Value mapA, mapB;   // generic pointers to the tensor maps
  mlir::Value baseA, baseB; // i64 shared addresses of stage 0
  mlir::Value barriers;     // i64 shared address of full[0]; empty[0] follows
  mlir::Value leader, lane; // thread 0 (i1); the lane (index)
  int64_t stages = 0, bytesA = 0, bytesB = 0, subTiles = 0, rowsA = 0,
          rowsB = 0;
  /// Rows of A's and B's boxes (sched::tmaBoxRows: rowsA / rowsB, or fewer
  /// for an operand with fewer rows); each box lands at the start of its
  /// sub-tile of rowsA / rowsB rows.
  int64_t boxRowsA = 0, boxRowsB = 0;
  /// Elements per 128-byte row of a sub-tile (a box's inner extent).
  int64_t rowElements = 64;
  /// The suspend-time hint of mbarrier.try_wait, ns.
  static constexpr int64_t kSuspendHintNs = 10000000;

  /// The i32 parity of phase f / stages (+ 1 with `previous`).
  mlir::Value parity(mlir::OpBuilder &b, mlir::Location loc, mlir::Value f,
                     bool previous) const;
  /// The mbarrier of `stage` (index): full (which 0) or empty (which 1).
  mlir::Value barrier(mlir::OpBuilder &b, mlir::Location loc, mlir::Value stage,
                      int64_t which) const;
  void wait(mlir::OpBuilder &b, mlir::Location loc, mlir::Value bar,
            mlir::Value parityBit) const;

  /// Thread 0 initializes the mbarriers ("empty" ones expect one arrival
  /// per warp); everyone waits for it.
  void init(mlir::OpBuilder &b, mlir::Location loc, int64_t warps) const;

  /// Every thread waits until load `f` has landed.
  void waitFull(mlir::OpBuilder &b, mlir::Location loc, mlir::Value f) const;

  /// After wgmma.wait_group 1 at load f, the wgmma of load f - 1 are done:
  /// lane 0 of each warp releases its stage (for f >= 1).
  void release(mlir::OpBuilder &b, mlir::Location loc, mlir::Value f) const;

  /// The leader issues load `f` (index): the K elements from `kElem` of the
  /// tiles at row m0 of A and row n0 of B, when `valid` (null: always).
  /// With `mayReuse`, for f >= stages it first waits until load f - stages
  /// has been released. `byLeader` false: the caller runs only on the
  /// leader already.
  void issue(mlir::OpBuilder &b, mlir::Location loc, mlir::Value f,
             mlir::Value m0, mlir::Value n0, mlir::Value kElem,
             mlir::Value valid, bool mayReuse, bool byLeader = true) const;
};

} // namespace kopt::kb

#endif // KOPT_LIB_KERNELBUILDERS_MAINLOOP_TMARING_H
