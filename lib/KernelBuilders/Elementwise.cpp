//===- Elementwise.cpp - kernels for all-parallel linalg.generic ----------===//
//
// One thread per element per iteration of a grid-stride loop over the result's
// elements in row-major order: consecutive threads touch consecutive elements, so
// loads and stores of a warp are coalesced. 256 threads per block; the grid is
// capped at 8 blocks per SM of an H200 (132 SMs) so that each thread handles
// several elements when the tensor is large.
//
//===----------------------------------------------------------------------===//

#include "Common.h"

using namespace mlir;
using namespace kopt;
using namespace kopt::kb;

static constexpr int64_t kThreads = 256;
static constexpr int64_t kMaxBlocks = 132 * 8;

FailureOr<LaunchConfig> kopt::buildElementwiseKernel(KernelOp kernel,
                                                     gpu::GPUFuncOp func) {
  linalg::GenericOp g = generics(kernel).front();
  KernelIO io(kernel, func);
  Location loc = g.getLoc();

  Value out = io.memrefOf(g.getResult(0));
  if (!out)
    return g.emitOpError("result must be a result of the kernel");
  if (!g.getIndexingMapsArray().back().isIdentity())
    return g.emitOpError("elementwise kernels need an identity output map");
  if (!g.getBody()->getArguments().back().use_empty())
    return g.emitOpError("elementwise payloads must not read their output");

  auto shape = cast<RankedTensorType>(g.getResult(0).getType()).getShape();
  int64_t total = numElements(shape);
  LaunchConfig cfg;
  cfg.block = {kThreads, 1, 1};
  cfg.grid = {std::max<int64_t>(1, std::min<int64_t>(llvm::divideCeil(total, kThreads),
                                            kMaxBlocks)),
              1, 1};

  OpBuilder b = OpBuilder::atBlockBegin(&func.front());
  Value tid = threadIdX(b, loc), bid = blockIdX(b, loc);
  Value start = arith::AddIOp::create(
      b, loc, arith::MulIOp::create(b, loc, bid, indexConst(b, loc, kThreads)), tid);
  Value step = indexConst(b, loc, cfg.grid[0] * kThreads);
  auto loop = scf::ForOp::create(b, loc, start, indexConst(b, loc, total), step);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    SmallVector<Value> dims = delinearize(b, loc, loop.getInductionVar(), shape);
    SmallVector<Value> args;
    for (OpOperand *operand : g.getDpsInputOperands()) {
      Value mem = io.memrefOf(operand->get());
      if (!mem)
        return g.emitOpError("input #")
               << operand->getOperandNumber()
               << " must be an argument of the kernel";
      FailureOr<SmallVector<Value>> idx =
          applyIndexingMap(b, loc, g.getMatchingIndexingMap(operand), dims);
      if (failed(idx))
        return g.emitOpError("unsupported indexing map for input #")
               << operand->getOperandNumber();
      args.push_back(memref::LoadOp::create(b, loc, mem, *idx));
    }
    // The output block argument is unused (checked above): bind it to any value
    // of its type.
    args.push_back(args.empty() ? Value() : args.front());
    if (!args.back() || args.back().getType() !=
                            g.getBody()->getArguments().back().getType())
      args.back() = arith::ConstantOp::create(
          b, loc, b.getZeroAttr(g.getBody()->getArguments().back().getType()));
    Value v = clonePayload(b, g, args);
    memref::StoreOp::create(b, loc, v, out, dims);
  }
  gpu::ReturnOp::create(b, loc);
  return cfg;
}
