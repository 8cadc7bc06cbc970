//===- Row.cpp - kernels for operators over the last dimension ------------===//
//
// reduce, softmax, rmsnorm and layernorm lower to a chain of linalg.generic ops
// over one row (kopt-lower-to-linalg):
//   A. row reductions: iterators [parallel..., reduction], an f32 accumulator
//      initialised by linalg.fill with the combiner's identity;
//   B. row-scalar maps over the leading dimensions (e.g. rsqrt(ss / n + eps));
//   C. full maps writing the result row (e.g. x * rstd * w).
// The kernel gives each row one block of T threads. A reduction runs its
// payload in a strided loop per thread (thread t takes columns [tV, tV+V), then
// T*V further on, ...; V columns per 16-byte access when the row length allows,
// else V = 1), combines the partials with the payload's combiner through a warp
// shuffle tree (xor 16..1), then across warps through shared memory; every
// thread ends with the row value. B payloads run redundantly in every thread; C
// loops like A and stores.
//
//===----------------------------------------------------------------------===//

#include "Common.h"

#include "kopt/Transforms/KernelBuilders.h"

#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace kopt;
using namespace kopt::kb;

static constexpr int64_t kWarpSize = 32;

/// Threads per row: about 8 columns per thread, a multiple of the warp size,
/// between 32 and 1024.
static int64_t threadsPerRow(int64_t n) {
  int64_t t = static_cast<int64_t>(llvm::PowerOf2Ceil(llvm::divideCeil(n, 8)));
  return std::clamp<int64_t>(t, kWarpSize, 1024);
}

/// The binary op that combines the payload's value with the accumulator, if the
/// payload has the form `yield comb(f(inputs), acc)` with a supported comb.
static Operation *findCombiner(linalg::GenericOp g) {
  Block *body = g.getBody();
  Value acc = body->getArguments().back();
  Operation *comb = body->getTerminator()->getOperand(0).getDefiningOp();
  if (!comb || comb->getNumOperands() != 2 || comb->getNumResults() != 1)
    return nullptr;
  if (!isa<arith::AddFOp, arith::MulFOp, arith::MaximumFOp, arith::MinimumFOp,
           arith::MaxNumFOp, arith::MinNumFOp>(comb))
    return nullptr;
  if ((comb->getOperand(0) == acc) == (comb->getOperand(1) == acc))
    return nullptr;
  return comb;
}

static Value combine(OpBuilder &b, Location loc, Operation *comb, Value x,
                     Value y) {
  OperationState state(loc, comb->getName(), ValueRange{x, y},
                       comb->getResultTypes(), comb->getAttrs());
  return b.create(state)->getResult(0);
}

namespace {

class RowKernelBuilder {
public:
  RowKernelBuilder(KernelOp kernel, gpu::GPUFuncOp func)
      : kernel(kernel), func(func), io(kernel, func),
        b(OpBuilder::atBlockBegin(&func.front())), loc(kernel.getLoc()) {}

  FailureOr<LaunchConfig> build();

private:
  FailureOr<Lanes> operandLanes(linalg::GenericOp g, OpOperand *o,
                                ValueRange dims, int64_t v);
  FailureOr<SmallVector<Lanes>> inputLanes(linalg::GenericOp g, ValueRange dims,
                                           int64_t v);
  /// The thread's strided loop over this row's columns (from firstColumn,
  /// threads * vec apart), carrying `init`.
  scf::ForOp columnLoop(ValueRange init = {});
  /// The indices of this row's element at `column` (rowIdx, then column).
  SmallVector<Value> rowElement(Value column) const;
  Value warpReduce(Operation *comb, Value v);
  Value blockReduce(Operation *comb, Value v, Value identity);
  /// The thread whose `id` (thread or lane index) is 0 stores `v` at
  /// `indices` of `mem`; the others skip the store.
  void storeIfZero(Value id, Value v, Value mem, ValueRange indices);

  LogicalResult buildReduction(linalg::GenericOp g);
  LogicalResult buildRowMap(linalg::GenericOp g);
  LogicalResult buildFullMap(linalg::GenericOp g);

  KernelOp kernel;
  gpu::GPUFuncOp func;
  KernelIO io;
  OpBuilder b;
  Location loc;

  SmallVector<int64_t> shape; // the full iteration domain [rows..., n]
  int64_t threads = kWarpSize;
  int64_t vec = 1; // columns per access (16-byte accesses when possible)
  Value tid, lane, smem;
  Value firstColumn;              // tid * vec
  SmallVector<Value> rowIdx;      // this block's row, per leading dim
  DenseMap<Value, Value> scalars; // row tensors -> this row's scalar
};

} // namespace

FailureOr<Lanes> RowKernelBuilder::operandLanes(linalg::GenericOp g,
                                                OpOperand *o, ValueRange dims,
                                                int64_t v) {
  AffineMap map = g.getMatchingIndexingMap(o);
  if (Value s = scalars.lookup(o->get())) {
    // A row value: it must be read at this row.
    // The row map: (d0, ..., d_{r-1}[, d_r]) -> (d0, ..., d_{r-1}).
    SmallVector<AffineExpr> rowExprs;
    for (unsigned i = 0; i < rowIdx.size(); ++i)
      rowExprs.push_back(b.getAffineDimExpr(i));
    if (map != AffineMap::get(map.getNumDims(), 0, rowExprs, b.getContext()))
      return g.emitOpError(
          "reads a row value with an unsupported indexing map");
    return Lanes{s, false};
  }
  Value mem = io.memrefOf(o->get());
  if (!mem)
    return g.emitOpError("input #")
           << o->getOperandNumber()
           << " is neither a kernel argument nor a row value computed earlier";
  FailureOr<Lanes> lanes = loadLanes(b, loc, mem, map, dims, v);
  if (failed(lanes))
    return g.emitOpError("unsupported indexing map for input #")
           << o->getOperandNumber();
  return *lanes;
}

FailureOr<SmallVector<Lanes>>
RowKernelBuilder::inputLanes(linalg::GenericOp g, ValueRange dims, int64_t v) {
  SmallVector<Lanes> args;
  for (OpOperand *o : g.getDpsInputOperands()) {
    FailureOr<Lanes> l = operandLanes(g, o, dims, v);
    if (failed(l))
      return failure();
    args.push_back(*l);
  }
  return args;
}

/// The payload's arguments for lane `l`, then `last` (the accumulator or the
/// unused output).
static SmallVector<Value> laneArgs(OpBuilder &b, Location loc,
                                   ArrayRef<Lanes> in, int64_t l, Value last) {
  SmallVector<Value> args;
  for (const Lanes &x : in)
    args.push_back(x.lane(b, loc, l));
  args.push_back(last);
  return args;
}

Value RowKernelBuilder::warpReduce(Operation *comb, Value v) {
  return warpAllReduce(b, loc, v, [&](Value mine, Value other) {
    return combine(b, loc, comb, mine, other);
  });
}

Value RowKernelBuilder::blockReduce(Operation *comb, Value v, Value identity) {
  v = warpReduce(comb, v);
  if (threads == kWarpSize)
    return v;
  // Lane 0 of every warp publishes its warp's value; then every warp reduces
  // the published values, so that all threads hold the row's value.
  Value warp =
      arith::DivUIOp::create(b, loc, tid, indexConst(b, loc, kWarpSize));
  storeIfZero(lane, v, smem, warp);
  gpu::BarrierOp::create(b, loc);
  int64_t numWarps = threads / kWarpSize;
  Value inRange = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, lane,
                                        indexConst(b, loc, numWarps));
  Value slot =
      arith::MinUIOp::create(b, loc, lane, indexConst(b, loc, numWarps - 1));
  Value published = memref::LoadOp::create(b, loc, smem, slot);
  Value x = arith::SelectOp::create(b, loc, inRange, published, identity);
  Value r = warpReduce(comb, x);
  // The next reduction reuses the buffer.
  gpu::BarrierOp::create(b, loc);
  return r;
}

scf::ForOp RowKernelBuilder::columnLoop(ValueRange init) {
  return scf::ForOp::create(b, loc, firstColumn,
                            indexConst(b, loc, shape.back()),
                            indexConst(b, loc, threads * vec), init);
}

SmallVector<Value> RowKernelBuilder::rowElement(Value column) const {
  SmallVector<Value> dims(rowIdx);
  dims.push_back(column);
  return dims;
}

void RowKernelBuilder::storeIfZero(Value id, Value v, Value mem,
                                   ValueRange indices) {
  Value isZero = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, id,
                                       indexConst(b, loc, 0));
  auto ifOp = scf::IfOp::create(b, loc, isZero, /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(ifOp.thenBlock());
  memref::StoreOp::create(b, loc, v, mem, indices);
}

LogicalResult RowKernelBuilder::buildReduction(linalg::GenericOp g) {
  Operation *comb = findCombiner(g);
  if (!comb)
    return g.emitOpError(
        "reduction payload must end in acc = comb(value, acc) with "
        "comb one of addf, mulf, maximumf, minimumf, maxnumf, "
        "minnumf");
  Value init = fillValue(b, g.getDpsInitOperand(0)->get());
  if (!init)
    return g.emitOpError("reduction accumulator must be initialised by a "
                         "linalg.fill of a constant");
  scf::ForOp loop = columnLoop(init);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    FailureOr<SmallVector<Lanes>> lanes =
        inputLanes(g, rowElement(loop.getInductionVar()), vec);
    if (failed(lanes))
      return failure();
    Value acc = loop.getRegionIterArg(0);
    for (int64_t l = 0; l < vec; ++l)
      acc = clonePayload(b, g, laneArgs(b, loc, *lanes, l, acc));
    scf::YieldOp::create(b, loc, acc);
  }
  Value row = blockReduce(comb, loop.getResult(0), init);
  scalars[g.getResult(0)] = row;
  if (Value mem = io.memrefOf(g.getResult(0)))
    storeIfZero(tid, row, mem, rowIdx);
  return success();
}

LogicalResult RowKernelBuilder::buildRowMap(linalg::GenericOp g) {
  if (!g.getBody()->getArguments().back().use_empty())
    return g.emitOpError("row-scalar payloads must not read their output");
  FailureOr<SmallVector<Lanes>> lanes = inputLanes(g, rowIdx, /*v=*/1);
  if (failed(lanes))
    return failure();
  Type outType = g.getBody()->getArguments().back().getType();
  Value v = clonePayload(
      b, g,
      laneArgs(b, loc, *lanes, 0,
               arith::ConstantOp::create(b, loc, b.getZeroAttr(outType))));
  scalars[g.getResult(0)] = v;
  if (Value mem = io.memrefOf(g.getResult(0)))
    storeIfZero(tid, v, mem, rowIdx);
  return success();
}

LogicalResult RowKernelBuilder::buildFullMap(linalg::GenericOp g) {
  Value out = io.memrefOf(g.getResult(0));
  if (!out)
    return g.emitOpError("a full-row result must be a result of the kernel");
  if (!g.getIndexingMapsArray().back().isIdentity())
    return g.emitOpError("full-row maps need an identity output map");
  if (!g.getBody()->getArguments().back().use_empty())
    return g.emitOpError("full-row payloads must not read their output");
  scf::ForOp loop = columnLoop();
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  SmallVector<Value> dims = rowElement(loop.getInductionVar());
  FailureOr<SmallVector<Lanes>> lanes = inputLanes(g, dims, vec);
  if (failed(lanes))
    return failure();
  Type outType = g.getBody()->getArguments().back().getType();
  Value unusedOut = arith::ConstantOp::create(b, loc, b.getZeroAttr(outType));
  SmallVector<Value> results;
  for (int64_t l = 0; l < vec; ++l)
    results.push_back(
        clonePayload(b, g, laneArgs(b, loc, *lanes, l, unusedOut)));
  storeLanes(b, loc, results, out, dims);
  return success();
}

FailureOr<LaunchConfig> RowKernelBuilder::build() {
  SmallVector<linalg::GenericOp> gs = generics(kernel);
  auto first = llvm::find_if(
      gs, [](linalg::GenericOp g) { return g.getNumReductionLoops() > 0; });
  shape = (*first).getStaticLoopRanges();
  if (llvm::any_of(shape, ShapedType::isDynamic))
    return (*first).emitOpError("needs static loop ranges");
  unsigned rank = shape.size();
  ArrayRef<int64_t> rowShape = ArrayRef<int64_t>(shape).drop_back();
  threads = threadsPerRow(shape.back());

  // 16-byte accesses along the row when every memref read or written over the
  // full domain is contiguous (or uniform) along it.
  SmallVector<Type> types;
  bool vectorizable = true;
  for (linalg::GenericOp g : gs) {
    if (g.getNumLoops() != rank)
      continue;
    for (OpOperand &o : g->getOpOperands()) {
      Value v = g.isDpsInit(&o) ? g.getTiedOpResult(&o) : o.get();
      Value mem = io.memrefOf(v);
      if (!mem)
        continue;
      types.push_back(getElementTypeOrSelf(mem.getType()));
      if (laneAccess(g.getMatchingIndexingMap(&o), rank - 1) ==
          LaneAccess::Other)
        vectorizable = false;
    }
  }
  vec = vectorizable && !types.empty() ? vectorWidth(types, shape.back()) : 1;

  if (numElements(rowShape) > kMaxGridX)
    return kernel.emitOpError("has ")
           << numElements(rowShape) << " rows, more than a grid's "
           << kMaxGridX;
  LaunchConfig cfg;
  cfg.grid = {numElements(rowShape), 1, 1};
  cfg.block = {threads, 1, 1};

  auto smemType = MemRefType::get(
      {kWarpSize}, b.getF32Type(), MemRefLayoutAttrInterface(),
      gpu::AddressSpaceAttr::get(b.getContext(), gpu::AddressSpace::Workgroup));
  smem = func.addWorkgroupAttribution(smemType, loc);
  tid = threadIdX(b, loc);
  lane = arith::RemUIOp::create(b, loc, tid, indexConst(b, loc, kWarpSize));
  firstColumn =
      vec == 1 ? tid
               : arith::MulIOp::create(b, loc, tid, indexConst(b, loc, vec))
                     .getResult();
  rowIdx = delinearize(b, loc, blockIdX(b, loc), rowShape);

  for (linalg::GenericOp g : gs) {
    SmallVector<utils::IteratorType> iters = g.getIteratorTypesArray();
    unsigned numReduction = g.getNumReductionLoops();
    LogicalResult built = failure();
    if (g.getStaticLoopRanges() ==
            ArrayRef<int64_t>(shape).take_front(iters.size()) &&
        iters.size() == rank && numReduction == 1 &&
        iters.back() == utils::IteratorType::reduction &&
        g.getNumDpsInits() == 1)
      built = buildReduction(g);
    else if (numReduction == 0 && iters.size() == rank - 1 &&
             g.getNumDpsInits() == 1)
      built = buildRowMap(g);
    else if (numReduction == 0 && iters.size() == rank &&
             g.getNumDpsInits() == 1 &&
             g.getStaticLoopRanges() == ArrayRef<int64_t>(shape))
      built = buildFullMap(g);
    else
      return g.emitOpError(
                 "does not fit a row kernel: expected a reduction over "
                 "the last dimension, a map over the rows, or a map over "
                 "the full ")
             << rank << "-D domain";
    if (failed(built))
      return failure();
  }
  gpu::ReturnOp::create(b, loc);
  return cfg;
}

FailureOr<LaunchConfig> kopt::buildRowKernel(KernelOp kernel,
                                             gpu::GPUFuncOp func) {
  return RowKernelBuilder(kernel, func).build();
}
