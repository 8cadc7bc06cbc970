//===- Elementwise.cpp - kernels for all-parallel linalg.generic ----------===//
//
// A grid-stride loop over the result in row-major order, V consecutive elements
// per thread per iteration: consecutive threads touch consecutive groups, so a
// warp's loads and stores are coalesced. V makes each access 16 bytes (8
// bf16/f16 or 4 f32 elements) when the innermost extent is a multiple of V and
// every input is read contiguously (or is the same for the V lanes, e.g. a
// broadcast column) along it; otherwise V = 1. The payload runs once per lane.
// 256 threads per block; the grid is capped at 8 blocks per SM of an H200 (132
// SMs) so that each thread handles several groups when the tensor is large.
//
//===----------------------------------------------------------------------===//

#include "Common.h"

#include "kopt/Transforms/KernelBuilders.h"

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

  // 16-byte accesses when every input is read contiguously or uniformly along
  // the innermost dimension and its extent allows.
  SmallVector<Value> inputs;
  SmallVector<Type> types = {getElementTypeOrSelf(g.getResult(0).getType())};
  int64_t v = 1;
  for (OpOperand *operand : g.getDpsInputOperands()) {
    Value mem = io.memrefOf(operand->get());
    if (!mem)
      return g.emitOpError("input #") << operand->getOperandNumber()
                                      << " must be an argument of the kernel";
    inputs.push_back(mem);
    types.push_back(getElementTypeOrSelf(mem.getType()));
  }
  if (!shape.empty()) {
    v = vectorWidth(types, shape.back());
    for (OpOperand *operand : g.getDpsInputOperands())
      if (laneAccess(g.getMatchingIndexingMap(operand), shape.size() - 1) ==
          LaneAccess::Other)
        v = 1;
  }

  int64_t groups = total / v;
  LaunchConfig cfg;
  cfg.block = {kThreads, 1, 1};
  cfg.grid = {
      std::max<int64_t>(
          1, std::min<int64_t>(llvm::divideCeil(groups, kThreads), kMaxBlocks)),
      1, 1};

  OpBuilder b = OpBuilder::atBlockBegin(&func.front());
  Value tid = threadIdX(b, loc), bid = blockIdX(b, loc);
  Value start = arith::AddIOp::create(
      b, loc, arith::MulIOp::create(b, loc, bid, indexConst(b, loc, kThreads)),
      tid);
  Value step = indexConst(b, loc, cfg.grid[0] * kThreads);
  auto loop =
      scf::ForOp::create(b, loc, start, indexConst(b, loc, groups), step);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value linear = loop.getInductionVar();
    if (v > 1)
      linear = arith::MulIOp::create(b, loc, linear, indexConst(b, loc, v));
    SmallVector<Value> dims = delinearize(b, loc, linear, shape);
    SmallVector<Lanes> lanes;
    for (auto [i, operand] : llvm::enumerate(g.getDpsInputOperands())) {
      FailureOr<Lanes> l = loadLanes(
          b, loc, inputs[i], g.getMatchingIndexingMap(operand), dims, v);
      if (failed(l))
        return g.emitOpError("unsupported indexing map for input #")
               << operand->getOperandNumber();
      lanes.push_back(*l);
    }
    // The output block argument is unused (checked above): bind it to a zero.
    Type outArgType = g.getBody()->getArguments().back().getType();
    Value unusedOut =
        arith::ConstantOp::create(b, loc, b.getZeroAttr(outArgType));
    SmallVector<Value> results;
    for (int64_t l = 0; l < v; ++l) {
      SmallVector<Value> args;
      for (const Lanes &in : lanes)
        args.push_back(in.lane(b, loc, l));
      args.push_back(unusedOut);
      results.push_back(clonePayload(b, g, args));
    }
    storeLanes(b, loc, results, out, dims);
  }
  gpu::ReturnOp::create(b, loc);
  return cfg;
}
