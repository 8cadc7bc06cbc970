//===- CpAsyncRing.h - the cp.async ring of a mainloop ----------*- C++ -*-===//
//
// Private to lib/KernelBuilders/Mainloop/ (CpAsyncRing.cpp): the copy
// groups a copy = cp_async mainloop stages its operand tiles with.
//
//===----------------------------------------------------------------------===//
#ifndef KOPT_LIB_KERNELBUILDERS_MAINLOOP_CPASYNCRING_H
#define KOPT_LIB_KERNELBUILDERS_MAINLOOP_CPASYNCRING_H

#include "../Staging.h"

namespace kopt::kb {

/// Issues the cp.async copies of the A tile at (m0, kBase) and the B tile at
/// (n0, kBase) into `stage` and commits them as one group; returns its token.
mlir::FailureOr<mlir::Value>
issueCopyGroup(mlir::OpBuilder &b, mlir::Location loc, mlir::Operation *diag,
               const StageSpec &a, const StageSpec &bs, mlir::Value stage,
               mlir::Value kBase, mlir::Value m0, mlir::Value n0,
               mlir::Value tid, int64_t threads);

/// Issues the cp.async copies of K tile `kTile` of both operands into stage
/// kTile % stages and commits them as one group; returns the group's token.
/// The tile starts at K element kTile * block_k + kOffset (kOffset: the
/// split's first element under split-K, else null).
mlir::FailureOr<mlir::Value>
issueStage(mlir::OpBuilder &b, mlir::Location loc, mlir::Operation *diag,
           const StageSpec &a, const StageSpec &bs, mlir::Value kTile,
           mlir::Value kOffset, int64_t stages, mlir::Value m0, mlir::Value n0,
           mlir::Value tid, int64_t threads);

/// The prologue of a `stages`-deep cp.async ring: tiles 0 ... stages - 2 in
/// flight. Returns the last group's token.
mlir::FailureOr<mlir::Value>
issuePrologue(mlir::OpBuilder &b, mlir::Location loc, mlir::Operation *diag,
              const StageSpec &a, const StageSpec &bs, mlir::Value kOffset,
              int64_t stages, mlir::Value m0, mlir::Value n0, mlir::Value tid,
              int64_t threads);

} // namespace kopt::kb

#endif // KOPT_LIB_KERNELBUILDERS_MAINLOOP_CPASYNCRING_H
