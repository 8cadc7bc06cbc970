//===- Elementwise.cpp - kernels for all-parallel linalg.generic ----------===//
//
// A grid-stride loop over the result in row-major order, V consecutive elements
// per thread per iteration: consecutive threads touch consecutive groups, so a
// warp's loads and stores are coalesced. V makes each access 16 bytes (8
// bf16/f16 or 4 f32 elements) when the innermost extent is a multiple of V and
// every input is read contiguously (or is the same for the V lanes, e.g. a
// broadcast column) along it; otherwise V = 1. 256 threads per block and a
// group per thread: the grid covers the tensor, up to the grid's 2^31 - 1
// blocks, past which the loop strides (measured on the H200, a grid capped at
// 8 or 16 blocks per SM, each thread looping over several groups, was 1-3%
// slower: bench/results/2026-12-03-row-clusters-h200/row-plans.md).
//
// A kernel of several ops (a chain kopt-fuse fused) holds one generic per op,
// all over one result shape: per group of V elements, each generic's payload
// runs once per lane in order, reading the kernel's inputs (each loaded once
// per indexing map) and the lanes earlier generics computed (internal values
// stay in registers); every kernel result is stored at the end.
//
//===----------------------------------------------------------------------===//

#include "Common.h"

#include "kopt/Transforms/KernelBuilders.h"

#include "llvm/ADT/MapVector.h"

#include <variant>

using namespace mlir;
using namespace kopt;
using namespace kopt::kb;

static constexpr int64_t kThreads = 256;
static constexpr int64_t kMaxBlocks = kMaxGridX;

namespace {
/// Where a generic's input comes from: a kernel input (loaded) or the result
/// of an earlier generic of the kernel (its lanes).
struct Source {
  Value mem;      // the input memref, or null
  Value internal; // the earlier generic's result, or null
};
} // namespace

/// Checks the generics of an elementwise kernel and resolves their inputs.
static LogicalResult
checkGenerics(KernelOp kernel, ArrayRef<linalg::GenericOp> gs,
              const KernelIO &io, ArrayRef<int64_t> shape,
              SmallVectorImpl<SmallVector<Source>> &sources) {
  DenseSet<Value> computed;
  for (linalg::GenericOp g : gs) {
    if (g.getNumResults() != 1)
      return g.emitOpError("elementwise kernels need generics of one result");
    if (cast<RankedTensorType>(g.getResult(0).getType()).getShape() != shape)
      return g.emitOpError("elementwise kernels need generics of one result "
                           "shape");
    if (!g.getIndexingMapsArray().back().isIdentity())
      return g.emitOpError("elementwise kernels need an identity output map");
    if (!g.getBody()->getArguments().back().use_empty())
      return g.emitOpError("elementwise payloads must not read their output");
    SmallVector<Source> srcs;
    for (OpOperand *operand : g.getDpsInputOperands()) {
      Value v = operand->get();
      if (Value mem = io.memrefOf(v); mem && !computed.contains(v)) {
        srcs.push_back({mem, Value()});
        continue;
      }
      if (!computed.contains(v))
        return g.emitOpError("input #")
               << operand->getOperandNumber()
               << " must be an argument of the kernel or the result of an "
                  "earlier generic of it";
      if (!g.getMatchingIndexingMap(operand).isIdentity())
        return g.emitOpError("input #")
               << operand->getOperandNumber()
               << " reads an earlier generic's result through a map other "
                  "than the identity";
      srcs.push_back({Value(), v});
    }
    sources.push_back(std::move(srcs));
    computed.insert(g.getResult(0));
  }
  // A result nobody reads would be computed for nothing.
  for (auto [i, gc] : llvm::enumerate(gs)) {
    linalg::GenericOp g = gc;
    if (!io.memrefOf(g.getResult(0)) &&
        llvm::none_of(gs.drop_front(i + 1), [&](linalg::GenericOp later) {
          return llvm::is_contained(later.getDpsInputs(), g.getResult(0));
        }))
      return g.emitOpError("result must be a result of the kernel or an "
                           "input of a later generic of it");
  }
  auto yield = cast<YieldOp>(kernel.getBody().front().getTerminator());
  for (auto [i, v] : llvm::enumerate(yield.getValues()))
    if (!computed.contains(v))
      return kernel.emitOpError("result #")
             << i << " must be computed by a linalg.generic of the kernel";
  return success();
}

FailureOr<LaunchConfig> kopt::buildElementwiseKernel(KernelOp kernel,
                                                     gpu::GPUFuncOp func) {
  SmallVector<linalg::GenericOp> gs = generics(kernel);
  KernelIO io(kernel, func);
  Location loc = gs.front().getLoc();
  auto shape =
      cast<RankedTensorType>(gs.front().getResult(0).getType()).getShape();
  int64_t total = numElements(shape);
  SmallVector<SmallVector<Source>> sources;
  if (failed(checkGenerics(kernel, gs, io, shape, sources)))
    return failure();
  auto yield = cast<YieldOp>(kernel.getBody().front().getTerminator());

  // 16-byte accesses when every input is read contiguously or uniformly along
  // the innermost dimension and its extent allows.
  SmallVector<Type> types;
  for (Value v : yield.getValues())
    types.push_back(getElementTypeOrSelf(v.getType()));
  int64_t v = 1;
  for (const SmallVector<Source> &srcs : sources)
    for (const Source &src : srcs)
      if (src.mem)
        types.push_back(getElementTypeOrSelf(src.mem.getType()));
  if (!shape.empty()) {
    v = vectorWidth(types, shape.back());
    for (auto [g, srcs] : llvm::zip(gs, sources))
      for (auto [operand, src] : llvm::zip(g.getDpsInputOperands(), srcs))
        if (src.mem && laneAccess(g.getMatchingIndexingMap(operand),
                                  shape.size() - 1) == LaneAccess::Other)
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
    // Each input is loaded once per indexing map; each generic's result is
    // its V lanes.
    llvm::MapVector<std::pair<Value, AffineMap>, Lanes> loaded;
    DenseMap<Value, SmallVector<Value>> lanesOf;
    for (auto [g, srcs] : llvm::zip(gs, sources)) {
      SmallVector<std::variant<Lanes, Value>> ins;
      for (auto [operand, src] : llvm::zip(g.getDpsInputOperands(), srcs)) {
        if (!src.mem) {
          ins.push_back(src.internal);
          continue;
        }
        AffineMap map = g.getMatchingIndexingMap(operand);
        auto key = std::make_pair(src.mem, map);
        auto it = loaded.find(key);
        if (it == loaded.end()) {
          FailureOr<Lanes> l = loadLanes(b, g.getLoc(), src.mem, map, dims, v);
          if (failed(l))
            return g.emitOpError("unsupported indexing map for input #")
                   << operand->getOperandNumber();
          it = loaded.insert({key, *l}).first;
        }
        ins.push_back(it->second);
      }
      // The output block argument is unused (checked): bind it to a zero.
      Type outArgType = g.getBody()->getArguments().back().getType();
      Value unusedOut =
          arith::ConstantOp::create(b, g.getLoc(), b.getZeroAttr(outArgType));
      SmallVector<Value> results;
      for (int64_t l = 0; l < v; ++l) {
        SmallVector<Value> args;
        for (const auto &in : ins) {
          if (const Lanes *lanes = std::get_if<Lanes>(&in))
            args.push_back(lanes->lane(b, g.getLoc(), l));
          else
            args.push_back(lanesOf[std::get<Value>(in)][l]);
        }
        args.push_back(unusedOut);
        results.push_back(clonePayload(b, g, args));
      }
      lanesOf[g.getResult(0)] = std::move(results);
    }
    for (Value result : yield.getValues())
      storeLanes(b, loc, lanesOf[result], io.memrefOf(result), dims);
  }
  gpu::ReturnOp::create(b, loc);
  return cfg;
}
