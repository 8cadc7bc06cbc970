//===- Expander.h - the expansion of one kopt.mainloop ----------*- C++ -*-===//
//
// Private to lib/KernelBuilders/Mainloop/: the state and the steps of
// kopt-pipeline's expansion of one kopt.mainloop, shared by the files that
// build its parts:
//   Expander.cpp       checks, set-up, a K step's body, the choice of
//                      expansion (kopt::expandMainloop)
//   KLoop.cpp          the K loop of one tile per block (mma.sync, wgmma)
//   Persistent.cpp     the ring across a persistent block's tiles
//   WarpSpecialize.cpp the producer warp and the consumers' branch
//   CpAsyncRing.cpp    cp.async copy groups (CpAsyncRing.h)
//   TmaRing.cpp        the TMA ring's mbarriers and box copies (TmaRing.h)
//
//===----------------------------------------------------------------------===//
#ifndef KOPT_LIB_KERNELBUILDERS_MAINLOOP_EXPANDER_H
#define KOPT_LIB_KERNELBUILDERS_MAINLOOP_EXPANDER_H

#include "CpAsyncRing.h"
#include "TmaRing.h"

#include "kopt/Transforms/KernelBuilders.h"

#include <optional>

namespace kopt::kb {

/// Expands one kopt.mainloop.
class Expander {
public:
  explicit Expander(MainloopOp op)
      : op(op), s(op.getSchedule().getSchedule()), loc(op.getLoc()), b(op) {}
  mlir::LogicalResult run();

private:
  MainloopOp op;
  schedule::MatmulSchedule s;
  mlir::Location loc;
  mlir::OpBuilder b;

  mlir::Type elt;
  int64_t M = 0, N = 0, K = 0;
  mlir::AffineMap mapA, mapB;
  mlir::MemRefType tileA, tileB;
  int64_t stages = 1, tileBytesA = 0, tileBytesB = 0;
  /// The threads that load and compute (all but a producer warp).
  int64_t threads = 0;
  mlir::Value smem, tid, lane, warp;
  StageSpec a, bs;
  std::optional<TmaRing> ring;
  /// cp.async: the last group of the prologue (the wait's token operand).
  mlir::Value lastGroup;
  /// The block's K tiles: the op's k_tiles (a constant), or with TMA under
  /// split-K only those starting inside K.
  int64_t kTiles = 0;
  mlir::Value kCount;

  mlir::Value idx(int64_t v) { return indexConst(b, loc, v); }

  // Expander.cpp
  mlir::LogicalResult analyze();
  void setUp(mlir::Operation *anchor);
  mlir::Value kElemOf(mlir::Value kTile);
  llvm::SmallVector<mlir::Value> step(mlir::Value stage, mlir::ValueRange acc);
  void waitForStage(mlir::Value f);
  void releaseStage(mlir::Value f);
  llvm::SmallVector<mlir::Value> consume(mlir::Value f, mlir::ValueRange acc);
  void replaceWith(mlir::ValueRange results);

  // CpAsyncRing.cpp
  mlir::FailureOr<mlir::Value> issueStageGroup(mlir::Value kTile,
                                               mlir::Value m0, mlir::Value n0);

  // WarpSpecialize.cpp
  mlir::scf::IfOp specialize(mlir::Operation *anchor);
  void sinkIntoConsumers(mlir::scf::IfOp roles);

  // KLoop.cpp
  mlir::LogicalResult expandMma();
  mlir::LogicalResult expandWgmma();

  // Persistent.cpp
  mlir::FailureOr<std::pair<mlir::Value, mlir::Value>>
  originAt(mlir::scf::ForOp tileLoop, mlir::Value iv);
  mlir::Value firstLoad(mlir::Value q);
  mlir::LogicalResult expandPersistent(mlir::scf::ForOp tileLoop);
  mlir::LogicalResult expandPersistentSpecialized(mlir::scf::ForOp tileLoop);
};

} // namespace kopt::kb

#endif // KOPT_LIB_KERNELBUILDERS_MAINLOOP_EXPANDER_H
