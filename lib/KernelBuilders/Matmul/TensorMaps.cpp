//===- TensorMaps.cpp - a matmul kernel's parameters after its operands ---===//
//
// The parameters the schedule adds to a matmul kernel after its operands
// and results, in order, as the launch manifest lists them: the split-K
// workspace, then the TMA tensor maps of A and B (copy = tma) and of C
// (tma_store), each an i64 holding the global address of a CUtensorMap the
// runtime encodes (docs/manifest.md, tensor_maps).
//
//===----------------------------------------------------------------------===//

#include "MatmulBuilder.h"

using namespace mlir;
using namespace kopt;
using namespace kopt::kb;
namespace sched = kopt::schedule;

/// Split-K: the workspace (tile counters, then S x M x N partials) is the
/// kernel's last parameter. Returns its f32 elements (0 without split-K).
static FailureOr<int64_t> addWorkspace(KernelOp kernel, gpu::GPUFuncOp func,
                                       const sched::MatmulSchedule &s,
                                       const sched::MatmulWorkload &w,
                                       Contraction &c) {
  int64_t workspace = 0;
  if (s.splitK > 1) {
    workspace = sched::splitKWorkspaceElements(s, w);
    auto type =
        MemRefType::get({workspace}, Float32Type::get(func.getContext()));
    unsigned index = func.getNumArguments();
    if (failed(func.insertArgument(index, type, DictionaryAttr(),
                                   kernel.getLoc())))
      return kernel.emitOpError("cannot add the split-K workspace parameter");
    c.workspace = func.getArgument(index);
  }
  return workspace;
}

/// TMA: A's and B's tensor maps follow, each an i64 holding the global
/// address of a CUtensorMap the runtime encodes from the manifest entry:
/// the operand [rows, K] (dims innermost first: K, rows), a box of 128
/// bytes of K (64 16-bit or 32 f32 elements) x block_m or block_n rows
/// (fewer for an operand with fewer rows: sched::tmaBoxRows), 128-byte
/// swizzle.
static LogicalResult
addOperandTensorMaps(KernelOp kernel, gpu::GPUFuncOp func,
                     const sched::MatmulSchedule &s, Contraction &c,
                     std::vector<TensorMapParam> &tensorMaps) {
  if (s.copy == sched::CopyEngine::TMA) {
    MLIRContext *ctx = func.getContext();
    struct Operand {
      const char *name;
      Value mem;
      AffineMap map;
      unsigned outerDim;
      int64_t rows;
      Value *param;
    };
    for (const Operand &o :
         {Operand{"A", c.memA, c.mapA, 0, sched::tmaBoxRows(s.blockM, c.M),
                  &c.tensorMapA},
          Operand{"B", c.memB, c.mapB, 1, sched::tmaBoxRows(s.blockN, c.N),
                  &c.tensorMapB}}) {
      auto type = cast<MemRefType>(o.mem.getType());
      AffineMap expected = AffineMap::get(
          3, 0, {getAffineDimExpr(o.outerDim, ctx), getAffineDimExpr(2, ctx)},
          ctx);
      auto arg = dyn_cast<BlockArgument>(o.mem);
      if (!arg || type.getRank() != 2 || o.map != expected)
        return kernel.emitOpError("copy = tma needs ")
               << o.name << " as a 2-D [" << (o.outerDim ? "N" : "M")
               << ", K] kernel parameter; got " << type << " indexed "
               << AffineMapAttr::get(o.map);
      unsigned index = func.getNumArguments();
      if (failed(func.insertArgument(index, IntegerType::get(ctx, 64),
                                     DictionaryAttr(), kernel.getLoc())))
        return kernel.emitOpError("cannot add the tensor map parameter of ")
               << o.name;
      *o.param = func.getArgument(index);
      // 128-byte box rows: 64 16-bit or 32 f32 elements.
      int64_t rowElements = 128 / (type.getElementTypeBitWidth() / 8);
      tensorMaps.push_back({arg.getArgNumber(), {rowElements, o.rows}, 128});
    }
  }
  return success();
}

/// tma_store: C's tensor map follows: C [M, N] (dims N, M), a box of S =
/// sched::tmaStoreSwizzleBytes (128, 64 or 32) bytes of N x block_m rows
/// (fewer when M is: sched::tmaBoxRows), S-byte swizzle; the TMA unit clips
/// the boxes at M and N.
static LogicalResult
addResultTensorMap(KernelOp kernel, gpu::GPUFuncOp func,
                   const sched::MatmulSchedule &s,
                   const sched::MatmulWorkload &w, Contraction &c,
                   std::vector<TensorMapParam> &tensorMaps) {
  if (s.tmaStore) {
    MLIRContext *ctx = func.getContext();
    auto type = cast<MemRefType>(c.out.getType());
    auto arg = dyn_cast<BlockArgument>(c.out);
    if (!arg || arg.getOwner() != &func.front() || type.getRank() != 2 ||
        !type.getLayout().isIdentity())
      return kernel.emitOpError("tma_store needs C as a 2-D row-major [M, N] "
                                "kernel parameter; got ")
             << type;
    unsigned index = func.getNumArguments();
    if (failed(func.insertArgument(index, IntegerType::get(ctx, 64),
                                   DictionaryAttr(), kernel.getLoc())))
      return kernel.emitOpError("cannot add the tensor map parameter of C");
    c.tensorMapC = func.getArgument(index);
    tensorMaps.push_back(
        {arg.getArgNumber(),
         {sched::tmaStoreSwizzleBytes(s.blockN * sched::bytesOf(w.c)) /
              sched::bytesOf(w.c),
          sched::tmaBoxRows(s.blockM, c.M)},
         sched::tmaStoreSwizzleBytes(s.blockN * sched::bytesOf(w.c))});
  }
  return success();
}

FailureOr<ExtraParameters>
kb::addExtraParameters(KernelOp kernel, gpu::GPUFuncOp func,
                       const sched::MatmulSchedule &s,
                       const sched::MatmulWorkload &w, Contraction &c) {
  ExtraParameters params;
  FailureOr<int64_t> workspace = addWorkspace(kernel, func, s, w, c);
  if (failed(workspace))
    return failure();
  params.workspaceElements = *workspace;
  if (failed(addOperandTensorMaps(kernel, func, s, c, params.tensorMaps)) ||
      failed(addResultTensorMap(kernel, func, s, w, c, params.tensorMaps)))
    return failure();
  return params;
}
