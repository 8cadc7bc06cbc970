//===- Mainloop.cpp - kopt.mainloop as a software pipeline
//-----------------===//
//
// kopt-pipeline's work (include/kopt/Transforms/KernelBuilders.h,
// expandMainloop): a kopt.mainloop becomes the K loop that stages its operand
// tiles in shared memory as the schedule says: synchronous loads (one
// buffer), a cp.async ring of `stages` buffers, or a TMA ring with
// mbarriers, optionally fed by a producer warp (warp_specialize); in a
// persistent grid the ring runs on across the block's tiles.
//
//===----------------------------------------------------------------------===//

#include "Staging.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;
using namespace kopt;
using namespace kopt::kb;
namespace sched = kopt::schedule;

namespace {
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
  Value mapA, mapB;   // generic pointers to the tensor maps
  Value baseA, baseB; // i64 shared addresses of stage 0
  Value barriers;     // i64 shared address of full[0]; empty[0] follows
  Value leader, lane; // thread 0 (i1); the lane (index)
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
  Value parity(OpBuilder &b, Location loc, Value f, bool previous) const {
    Value phase = arith::DivUIOp::create(b, loc, f, indexConst(b, loc, stages));
    if (previous)
      phase = arith::AddIOp::create(b, loc, phase, indexConst(b, loc, 1));
    Value bit = arith::RemUIOp::create(b, loc, phase, indexConst(b, loc, 2));
    return arith::IndexCastUIOp::create(b, loc, b.getI32Type(), bit);
  }
  /// The mbarrier of `stage` (index): full (which 0) or empty (which 1).
  Value barrier(OpBuilder &b, Location loc, Value stage, int64_t which) const {
    auto i64 = b.getI64Type();
    Value idx = arith::AddIOp::create(b, loc, stage,
                                      indexConst(b, loc, which * stages));
    Value idx64 = arith::IndexCastUIOp::create(b, loc, i64, idx);
    Value off = arith::MulIOp::create(
        b, loc, idx64,
        arith::ConstantIntOp::create(b, loc, i64, 8).getResult());
    Value addr = arith::AddIOp::create(b, loc, barriers, off);
    return LLVM::IntToPtrOp::create(
        b, loc, LLVM::LLVMPointerType::get(b.getContext(), 3), addr);
  }
  void wait(OpBuilder &b, Location loc, Value bar, Value parityBit) const {
    Value ticks =
        arith::ConstantIntOp::create(b, loc, b.getI32Type(), kSuspendHintNs);
    NVVM::MBarrierTryWaitParityOp::create(b, loc, bar, parityBit, ticks);
  }

  /// Thread 0 initializes the mbarriers ("empty" ones expect one arrival
  /// per warp); everyone waits for it.
  void init(OpBuilder &b, Location loc, int64_t warps) const {
    auto ifOp = scf::IfOp::create(b, loc, leader, /*withElseRegion=*/false);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(ifOp.thenBlock());
      Value one = arith::ConstantIntOp::create(b, loc, b.getI32Type(), 1);
      Value all = arith::ConstantIntOp::create(b, loc, b.getI32Type(), warps);
      for (int64_t i = 0; i < stages; ++i) {
        Value stage = indexConst(b, loc, i);
        Value full = barrier(b, loc, stage, 0);
        NVVM::MBarrierInitOp::create(b, loc, full, one, Value());
        Value empty = barrier(b, loc, stage, 1);
        NVVM::MBarrierInitOp::create(b, loc, empty, all, Value());
      }
      NVVM::FenceMbarrierInitOp::create(b, loc);
    }
    gpu::BarrierOp::create(b, loc);
  }

  /// Every thread waits until load `f` has landed.
  void waitFull(OpBuilder &b, Location loc, Value f) const {
    Value stage = arith::RemUIOp::create(b, loc, f, indexConst(b, loc, stages));
    Value bar = barrier(b, loc, stage, 0);
    wait(b, loc, bar, parity(b, loc, f, /*previous=*/false));
  }

  /// After wgmma.wait_group 1 at load f, the wgmma of load f - 1 are done:
  /// lane 0 of each warp releases its stage (for f >= 1).
  void release(OpBuilder &b, Location loc, Value f) const {
    Value notFirst = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge, f,
                                           indexConst(b, loc, 1));
    Value lane0 = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, lane,
                                        indexConst(b, loc, 0));
    Value cond = arith::AndIOp::create(b, loc, notFirst, lane0);
    auto ifOp = scf::IfOp::create(b, loc, cond, /*withElseRegion=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    Value prev = arith::SubIOp::create(b, loc, f, indexConst(b, loc, 1));
    Value stage =
        arith::RemUIOp::create(b, loc, prev, indexConst(b, loc, stages));
    Value empty = barrier(b, loc, stage, 1);
    NVVM::MBarrierArriveOp::create(b, loc, Type(), empty, Value(),
                                   NVVM::MemScopeKindAttr());
  }

  /// The leader issues load `f` (index): the K elements from `kElem` of the
  /// tiles at row m0 of A and row n0 of B, when `valid` (null: always).
  /// With `mayReuse`, for f >= stages it first waits until load f - stages
  /// has been released. `byLeader` false: the caller runs only on the
  /// leader already.
  void issue(OpBuilder &b, Location loc, Value f, Value m0, Value n0,
             Value kElem, Value valid, bool mayReuse,
             bool byLeader = true) const {
    Value cond = byLeader ? leader : Value();
    if (valid)
      cond = cond ? arith::AndIOp::create(b, loc, cond, valid) : valid;
    OpBuilder::InsertionGuard guard(b);
    if (cond) {
      auto ifOp = scf::IfOp::create(b, loc, cond, /*withElseRegion=*/false);
      b.setInsertionPointToStart(ifOp.thenBlock());
    }
    auto i32 = b.getI32Type();
    auto i64 = b.getI64Type();
    Value stage = arith::RemUIOp::create(b, loc, f, indexConst(b, loc, stages));
    if (mayReuse) {
      Value reuse = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge, f,
                                          indexConst(b, loc, stages));
      auto waitIf = scf::IfOp::create(b, loc, reuse, /*withElseRegion=*/false);
      OpBuilder::InsertionGuard g2(b);
      b.setInsertionPointToStart(waitIf.thenBlock());
      Value empty = barrier(b, loc, stage, 1);
      wait(b, loc, empty, parity(b, loc, f, /*previous=*/true));
    }
    Value full = barrier(b, loc, stage, 0);
    Value tx = arith::ConstantIntOp::create(
        b, loc, i32, subTiles * (boxRowsA + boxRowsB) * 128);
    NVVM::MBarrierArriveExpectTxOp::create(b, loc, Type(), full, tx,
                                           NVVM::MemScopeKindAttr(), BoolAttr(),
                                           Value());
    Value stage64 = arith::IndexCastUIOp::create(b, loc, i64, stage);
    // The destination as a shared::cluster address (address space 7): a
    // CTA's own shared::cta addresses are valid shared::cluster addresses of
    // that CTA (PTX ISA, state spaces); the launch has no cluster.
    auto ptr7 = LLVM::LLVMPointerType::get(b.getContext(), 7);
    Value rowA = arith::IndexCastUIOp::create(b, loc, i32, m0);
    Value rowB = arith::IndexCastUIOp::create(b, loc, i32, n0);
    for (int64_t sub = 0; sub < subTiles; ++sub) {
      Value k = arith::AddIOp::create(b, loc, kElem,
                                      indexConst(b, loc, rowElements * sub));
      Value k32 = arith::IndexCastUIOp::create(b, loc, i32, k);
      for (int operand = 0; operand < 2; ++operand) {
        int64_t stageBytes = operand ? bytesB : bytesA;
        int64_t rows = operand ? rowsB : rowsA;
        Value stageOff = arith::MulIOp::create(
            b, loc, stage64,
            arith::ConstantIntOp::create(b, loc, i64, stageBytes).getResult());
        Value base =
            arith::AddIOp::create(b, loc, operand ? baseB : baseA, stageOff);
        Value addr = arith::AddIOp::create(
            b, loc, base,
            arith::ConstantIntOp::create(b, loc, i64, sub * rows * 128)
                .getResult());
        Value dst = LLVM::IntToPtrOp::create(b, loc, ptr7, addr);
        NVVM::CpAsyncBulkTensorGlobalToSharedClusterOp::create(
            b, loc, dst, operand ? mapB : mapA,
            ValueRange{k32, operand ? rowB : rowA}, full, ValueRange{}, Value(),
            Value(), NVVM::TMALoadModeAttr(), BoolAttr(),
            NVVM::CTAGroupKindAttr(), Value());
      }
    }
  }
};
} // namespace

/// Issues the cp.async copies of the A tile at (m0, kBase) and the B tile at
/// (n0, kBase) into `stage` and commits them as one group; returns its token.
static FailureOr<Value> issueCopyGroup(OpBuilder &b, Location loc,
                                       Operation *diag, const StageSpec &a,
                                       const StageSpec &bs, Value stage,
                                       Value kBase, Value m0, Value n0,
                                       Value tid, int64_t threads) {
  FailureOr<SmallVector<Value>> ta =
      issueTileAsync(b, loc, diag, a, stage, m0, kBase, tid, threads);
  FailureOr<SmallVector<Value>> tb =
      issueTileAsync(b, loc, diag, bs, stage, n0, kBase, tid, threads);
  if (failed(ta) || failed(tb))
    return failure();
  SmallVector<Value> tokens(*ta);
  tokens.append(tb->begin(), tb->end());
  return nvgpu::DeviceAsyncCreateGroupOp::create(
             b, loc, nvgpu::DeviceAsyncTokenType::get(b.getContext()), tokens)
      .getResult();
}

/// Issues the cp.async copies of K tile `kTile` of both operands into stage
/// kTile % stages and commits them as one group; returns the group's token.
/// The tile starts at K element kTile * block_k + kOffset (kOffset: the
/// split's first element under split-K, else null).
static FailureOr<Value> issueStage(OpBuilder &b, Location loc, Operation *diag,
                                   const StageSpec &a, const StageSpec &bs,
                                   Value kTile, Value kOffset, int64_t stages,
                                   Value m0, Value n0, Value tid,
                                   int64_t threads) {
  Value stage =
      arith::RemUIOp::create(b, loc, kTile, indexConst(b, loc, stages));
  Value kBase =
      arith::MulIOp::create(b, loc, kTile, indexConst(b, loc, a.tileK));
  if (kOffset)
    kBase = arith::AddIOp::create(b, loc, kBase, kOffset);
  return issueCopyGroup(b, loc, diag, a, bs, stage, kBase, m0, n0, tid,
                        threads);
}

/// The prologue of a `stages`-deep cp.async ring: tiles 0 ... stages - 2 in
/// flight. Returns the last group's token.
static FailureOr<Value> issuePrologue(OpBuilder &b, Location loc,
                                      Operation *diag, const StageSpec &a,
                                      const StageSpec &bs, Value kOffset,
                                      int64_t stages, Value m0, Value n0,
                                      Value tid, int64_t threads) {
  Value last;
  for (int64_t i = 0; i + 1 < stages; ++i) {
    FailureOr<Value> g = issueStage(b, loc, diag, a, bs, indexConst(b, loc, i),
                                    kOffset, stages, m0, n0, tid, threads);
    if (failed(g))
      return failure();
    last = *g;
  }
  return last;
}

namespace {

/// The extent of the loop dimension `dim` ((m, n, k) = 0, 1, 2) in an
/// operand of type `t` indexed by `map`, or -1 when the map does not use it.
int64_t extentOf(MemRefType t, AffineMap map, unsigned dim) {
  for (auto [i, e] : llvm::enumerate(map.getResults()))
    if (auto d = dyn_cast<AffineDimExpr>(e); d && d.getPosition() == dim)
      return t.getDimSize(i);
  return -1;
}

/// Expands one kopt.mainloop.
class Expander {
public:
  explicit Expander(MainloopOp op)
      : op(op), s(op.getSchedule().getSchedule()), loc(op.getLoc()), b(op) {}
  LogicalResult run();

private:
  MainloopOp op;
  sched::MatmulSchedule s;
  Location loc;
  OpBuilder b;

  Type elt;
  int64_t M = 0, N = 0, K = 0;
  AffineMap mapA, mapB;
  MemRefType tileA, tileB;
  int64_t stages = 1, tileBytesA = 0, tileBytesB = 0;
  /// The threads that load and compute (all but a producer warp).
  int64_t threads = 0;
  Value smem, tid, lane, warp;
  StageSpec a, bs;
  std::optional<TmaRing> ring;
  /// cp.async: the last group of the prologue (the wait's token operand).
  Value lastGroup;
  /// The block's K tiles: the op's k_tiles (a constant), or with TMA under
  /// split-K only those starting inside K.
  int64_t kTiles = 0;
  Value kCount;

  Value idx(int64_t v) { return indexConst(b, loc, v); }
  LogicalResult analyze();
  void setUp(Operation *anchor);
  Value kElemOf(Value kTile);
  SmallVector<Value> step(Value stage, ValueRange acc);
  void waitForStage(Value f);
  void releaseStage(Value f);
  SmallVector<Value> consume(Value f, ValueRange acc);
  FailureOr<Value> issueStageGroup(Value kTile, Value m0, Value n0);
  scf::IfOp specialize(Operation *anchor);
  void sinkIntoConsumers(scf::IfOp roles);
  FailureOr<std::pair<Value, Value>> originAt(scf::ForOp tileLoop, Value iv);
  LogicalResult expandMma();
  LogicalResult expandWgmma();
  LogicalResult expandPersistent(scf::ForOp tileLoop);
  void replaceWith(ValueRange results);
};

LogicalResult Expander::analyze() {
  auto typeA = cast<MemRefType>(op.getA().getType());
  auto typeB = cast<MemRefType>(op.getB().getType());
  mapA = cast<AffineMapAttr>(op.getIndexingMaps()[0]).getValue();
  mapB = cast<AffineMapAttr>(op.getIndexingMaps()[1]).getValue();
  M = extentOf(typeA, mapA, 0);
  N = extentOf(typeB, mapB, 1);
  K = extentOf(typeA, mapA, 2);
  if (M < 0 || N < 0 || K < 0 || extentOf(typeB, mapB, 2) != K)
    return op.emitOpError("indexing maps must give A (m, k) and B (n, k) "
                          "with the same K");
  elt = typeA.getElementType();
  Block &body = op.getBody().front();
  tileA = cast<MemRefType>(body.getArgument(0).getType());
  tileB = cast<MemRefType>(body.getArgument(1).getType());
  int64_t eltBytes = elt.getIntOrFloatBitWidth() / 8;
  tileBytesA = tileA.getNumElements() * eltBytes;
  tileBytesB = tileB.getNumElements() * eltBytes;
  bool wgmma = s.instruction == sched::Instruction::Wgmma;
  // The tiles' layout: [rows][block_k + 8] (mma.sync) or [block_k / r][rows]
  // [r] with r elements per 128-byte row (wgmma).
  int64_t rows = wgmma ? tileA.getDimSize(1) : tileA.getDimSize(0);
  int64_t rowsB = wgmma ? tileB.getDimSize(1) : tileB.getDimSize(0);
  if (rows != s.blockM || rowsB != s.blockN ||
      (wgmma ? tileA.getRank() != 3 ||
                   tileA.getDimSize(0) * tileA.getDimSize(2) != s.blockK
             : tileA.getRank() != 2 || tileA.getDimSize(1) < s.blockK))
    return op.emitOpError("staged tiles ")
           << tileA << ", " << tileB << " do not fit the schedule's "
           << s.blockM << " x " << s.blockN << " x " << s.blockK << " tile";
  // B's tile: the same K layout as A's.
  if (wgmma ? tileB.getDimSize(0) != tileA.getDimSize(0) ||
                  tileB.getDimSize(2) != tileA.getDimSize(2) ||
                  tileA.getDimSize(2) * eltBytes != 128
            : tileB.getDimSize(1) != tileA.getDimSize(1))
    return op.emitOpError("staged tiles ")
           << tileA << ", " << tileB << " must have the same K layout"
           << (wgmma ? " of 128-byte rows" : "");
  if (!op->getParentOfType<gpu::GPUFuncOp>())
    return op.emitOpError("must be inside a gpu.func (kopt-tile builds it "
                          "there)");
  if (s.blockM % s.warpM != 0 || s.blockN % s.warpN != 0)
    return op.emitOpError("the block tile ")
           << s.blockM << " x " << s.blockN << " is not made of warp tiles "
           << s.warpM << " x " << s.warpN;
  stages = s.copy == sched::CopyEngine::Sync ? 1 : s.stages;
  threads = wgmma ? 32 * s.mathWarps() : s.threads();
  if (stages < 1 || (wgmma && stages < 2))
    return op.emitOpError("needs at least ")
           << (wgmma ? "2 stages for wgmma" : "1 stage") << ", got "
           << s.stages;
  if (elt.isF32() && s.copy != sched::CopyEngine::TMA)
    return op.emitOpError("f32 (TF32) operands are staged by copy = tma only");
  if (s.copy != sched::CopyEngine::Sync) {
    // 16-byte copies along K: K-contiguous operands, K a multiple of 16
    // bytes (a chunk is wholly inside or outside K).
    if (!kContiguous(mapA) || !kContiguous(mapB) || (K * eltBytes) % 16 != 0)
      return op.emitOpError("copy = ")
             << (s.copy == sched::CopyEngine::TMA ? "tma" : "cp_async")
             << " needs A and B contiguous along K and K a multiple of 16 "
                "bytes";
    for (int64_t rows : {s.blockM, s.blockN})
      if (s.copy == sched::CopyEngine::CpAsync &&
          (rows * s.blockK * eltBytes / 16) % threads != 0)
        return op.emitOpError("cp.async copies of 16 bytes: a ")
               << rows << " x " << s.blockK
               << " tile is not a whole number of copies for each of the "
               << threads << " threads";
  }
  std::optional<int64_t> k = getConstantIntValue(op.getKTiles());
  if (!k || *k < 1)
    return op.emitOpError("k_tiles must be a positive constant");
  kTiles = *k;
  return success();
}

/// The shared memory, thread indices, the operands' staging and (TMA) the
/// ring's mbarriers, before `anchor` (which every thread reaches).
void Expander::setUp(Operation *anchor) {
  b.setInsertionPoint(anchor);
  auto func = op->getParentOfType<gpu::GPUFuncOp>();
  smem = dynamicSharedMemory(b, loc, func);
  tid = threadIdX(b, loc);
  lane = arith::RemUIOp::create(b, loc, tid, idx(32));
  warp = arith::DivUIOp::create(b, loc, tid, idx(32));
  bool wgmma = s.instruction == sched::Instruction::Wgmma;
  SmallVector<int64_t> ringA = {stages}, ringB = {stages};
  llvm::append_range(ringA, tileA.getShape());
  llvm::append_range(ringB, tileB.getShape());
  Value bufA, bufB;
  if (s.copy == sched::CopyEngine::Sync) {
    bufA = sharedView(b, loc, smem, 0, tileA.getShape(), elt);
    bufB = sharedView(b, loc, smem, tileBytesA, tileB.getShape(), elt);
  } else {
    bufA = sharedView(b, loc, smem, 0, ringA, elt);
    bufB = sharedView(b, loc, smem, stages * tileBytesA, ringB, elt);
  }
  a = StageSpec{op.getA(), mapA, 0,    s.blockM, s.blockK,
                M,         K,    bufA, true,     wgmma};
  bs = StageSpec{op.getB(), mapB, 1,    s.blockN, s.blockK,
                 N,         K,    bufB, true,     wgmma};
  if (s.copy != sched::CopyEngine::TMA)
    return;
  auto i64 = b.getI64Type();
  auto toI64 = [&](Value index) -> Value {
    return arith::IndexCastUIOp::create(b, loc, i64, index);
  };
  TmaRing r;
  auto ptr = LLVM::LLVMPointerType::get(b.getContext());
  r.mapA = LLVM::IntToPtrOp::create(b, loc, ptr, op.getTensorMaps()[0]);
  r.mapB = LLVM::IntToPtrOp::create(b, loc, ptr, op.getTensorMaps()[1]);
  r.baseA = toI64(memref::ExtractAlignedPointerAsIndexOp::create(b, loc, bufA));
  r.baseB = toI64(memref::ExtractAlignedPointerAsIndexOp::create(b, loc, bufB));
  Value bars =
      sharedView(b, loc, smem, *op.getBarrierOffset(), {2 * stages}, i64);
  r.barriers =
      toI64(memref::ExtractAlignedPointerAsIndexOp::create(b, loc, bars));
  // The thread that issues the copies: thread 0, or lane 0 of the producer
  // warp.
  r.leader = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, tid,
                                   idx(s.warpSpecialize ? threads : 0));
  r.lane = lane;
  int64_t row = tileA.getDimSize(2);
  r.stages = stages, r.bytesA = tileBytesA, r.bytesB = tileBytesB;
  r.subTiles = tileA.getDimSize(0), r.rowsA = s.blockM, r.rowsB = s.blockN;
  r.rowElements = row;
  r.boxRowsA = sched::tmaBoxRows(s.blockM, M);
  r.boxRowsB = sched::tmaBoxRows(s.blockN, N);
  r.init(b, loc, threads / 32);
  ring = r;
}

/// The first K element of K tile `kTile` (split-K: from k_begin).
Value Expander::kElemOf(Value kTile) {
  Value e = arith::MulIOp::create(b, loc, kTile, idx(s.blockK));
  if (Value kBegin = op.getKBegin())
    e = arith::AddIOp::create(b, loc, e, kBegin);
  return e;
}

/// The body on the tiles of `stage` (index): the op's region cloned with
/// its arguments bound to views of the stage's buffers and `acc`; returns
/// the yielded accumulators.
SmallVector<Value> Expander::step(Value stage, ValueRange acc) {
  Value offA = arith::MulIOp::create(b, loc, stage, idx(tileBytesA));
  Value offB = arith::AddIOp::create(
      b, loc, idx(stages * tileBytesA),
      arith::MulIOp::create(b, loc, stage, idx(tileBytesB)));
  Block &body = op.getBody().front();
  IRMapping map;
  map.map(body.getArgument(0),
          sharedView(b, loc, smem, offA, tileA.getShape(), elt));
  map.map(body.getArgument(1),
          sharedView(b, loc, smem, offB, tileB.getShape(), elt));
  for (auto [arg, v] : llvm::zip(body.getArguments().drop_front(2), acc))
    map.map(arg, v);
  for (Operation &o : body.without_terminator())
    b.clone(o, map);
  return llvm::map_to_vector(body.getTerminator()->getOperands(),
                             [&](Value v) { return map.lookupOrDefault(v); });
}

/// The top of a wgmma K step at load f (flattened over a persistent
/// block's tiles): wait until its stage has landed. cp.async: this thread's
/// copies of f, then everyone's (a barrier); they wrote shared memory
/// through the generic proxy, wgmma reads it through the async proxy.
void Expander::waitForStage(Value f) {
  if (ring)
    return ring->waitFull(b, loc, f);
  nvgpu::DeviceAsyncWaitOp::create(b, loc, lastGroup,
                                   b.getI32IntegerAttr(stages - 2));
  NVVM::FenceProxyOp::create(
      b, loc, NVVM::ProxyKind::async_shared,
      NVVM::SharedSpaceAttr::get(b.getContext(),
                                 NVVM::SharedSpace::shared_cta));
  gpu::BarrierOp::create(b, loc);
}

/// After wgmma.wait_group 1 at load f: load f - 1's stage may be refilled
/// once every warp is past this point (cp.async: a barrier; TMA: the warps
/// arrive on its "empty" mbarrier).
void Expander::releaseStage(Value f) {
  if (ring)
    return ring->release(b, loc, f);
  gpu::BarrierOp::create(b, loc);
}

/// One wgmma K tile, load f: wait for its stage, issue the body's wgmma into
/// `acc` and commit them, wait until only they are pending, release load
/// f - 1's stage. Returns the accumulators.
SmallVector<Value> Expander::consume(Value f, ValueRange acc) {
  waitForStage(f);
  SmallVector<Value> next =
      step(arith::RemUIOp::create(b, loc, f, idx(stages)), acc);
  NVVM::WgmmaGroupSyncAlignedOp::create(b, loc);
  NVVM::WgmmaWaitGroupSyncOp::create(b, loc, 1);
  releaseStage(f);
  return next;
}

/// cp.async: the copies of K tile `kTile` of the tiles at rows m0 / n0 into
/// stage kTile % stages, one group; returns its token.
FailureOr<Value> Expander::issueStageGroup(Value kTile, Value m0, Value n0) {
  return issueStage(b, loc, op, a, bs, kTile, op.getKBegin(), stages, m0, n0,
                    tid, threads);
}

/// Warp specialization: splits the block at `anchor` into the producer warp
/// (the warps from threads / 32 on) and the consumers. `anchor` and all
/// that follows it in its block (but the terminator) move into the
/// consumers' branch (then sinkIntoConsumers moves the side-effect-free ops
/// before it that only they use, in particular the zero accumulators:
/// defined before the branch, ptxas serializes the wgmma, C7520). Returns the
/// roles' scf.if; its "then" block holds an scf.if on the ring's leader, where
/// the producer's loads go. The role is read from lane 0's warp index
/// (shfl.sync.idx), which ptxas knows to be uniform across the warp: with a
/// per-thread condition it assumes a divergent path and serializes the
/// consumers' wgmma (C7520), as CUTLASS's canonical_warp_group_idx() avoids
/// too.
scf::IfOp Expander::specialize(Operation *anchor) {
  b.setInsertionPoint(anchor);
  auto i32 = b.getI32Type();
  Value warp32 = arith::IndexCastUIOp::create(b, loc, i32, warp);
  Value uniformWarp =
      gpu::ShuffleOp::create(b, loc, warp32, /*offset=*/0,
                             /*width=*/32, gpu::ShuffleMode::IDX)
          .getShuffleResult();
  Value producer = arith::CmpIOp::create(
      b, loc, arith::CmpIPredicate::uge, uniformWarp,
      arith::ConstantIntOp::create(b, loc, i32, threads / 32));
  auto roles = scf::IfOp::create(b, loc, producer, /*withElseRegion=*/true);
  Block *block = anchor->getBlock();
  Operation *consumersEnd = roles.elseBlock()->getTerminator();
  for (Operation *o = anchor; o != block->getTerminator();) {
    Operation *next = o->getNextNode();
    o->moveBefore(consumersEnd);
    o = next;
  }
  b.setInsertionPointToStart(roles.thenBlock());
  auto leaderIf = scf::IfOp::create(b, loc, ring->leader,
                                    /*withElseRegion=*/false);
  b.setInsertionPointToStart(leaderIf.thenBlock());
  return roles;
}

/// Once both roles are built: moves the side-effect-free ops before `roles`
/// that only the consumers use into their branch.
void Expander::sinkIntoConsumers(scf::IfOp roles) {
  Block *block = roles->getBlock();
  Region &consumers = roles.getElseRegion();
  SmallVector<Operation *> before;
  for (Operation &o : *block) {
    if (&o == roles.getOperation())
      break;
    before.push_back(&o);
  }
  for (Operation *o : llvm::reverse(before)) {
    if (o->getNumResults() == 0 || o->getNumRegions() != 0 ||
        !isMemoryEffectFree(o))
      continue;
    if (!o->use_empty() && llvm::all_of(o->getUsers(), [&](Operation *user) {
          return consumers.isAncestor(user->getParentRegion());
        }))
      o->moveBefore(&roles.elseBlock()->front());
  }
}

/// The origin (m0, n0) of the tile a persistent block computes in iteration
/// `iv` of `tileLoop`: the side-effect-free ops of the loop body that the
/// op's m0 and n0 come from, cloned at the insertion point with the loop's
/// induction variable replaced by `iv`.
FailureOr<std::pair<Value, Value>> Expander::originAt(scf::ForOp tileLoop,
                                                      Value iv) {
  llvm::SetVector<Operation *> slice;
  SmallVector<Value> work = {op.getM0(), op.getN0()};
  while (!work.empty()) {
    Value v = work.pop_back_val();
    if (auto arg = dyn_cast<BlockArgument>(v);
        arg && arg.getOwner() == tileLoop.getBody() &&
        arg != tileLoop.getInductionVar())
      return op.emitOpError("the tile origin of a persistent grid must be "
                            "computed from the tile loop's induction "
                            "variable, not from its iteration arguments");
    Operation *def = v.getDefiningOp();
    if (!def || def->getBlock() != tileLoop.getBody() || slice.contains(def))
      continue;
    if (!isMemoryEffectFree(def) || def->getNumRegions() != 0)
      return op.emitOpError("the tile origin of a persistent grid must be "
                            "computed without side effects; found ")
             << def->getName();
    slice.insert(def);
    llvm::append_range(work, def->getOperands());
  }
  SmallVector<Operation *> ops = slice.takeVector();
  llvm::sort(ops,
             [](Operation *x, Operation *y) { return x->isBeforeInBlock(y); });
  IRMapping map;
  map.map(tileLoop.getInductionVar(), iv);
  for (Operation *o : ops)
    b.clone(*o, map);
  return std::make_pair(map.lookupOrDefault(op.getM0()),
                        map.lookupOrDefault(op.getN0()));
}

void Expander::replaceWith(ValueRange results) {
  op.replaceAllUsesWith(results);
  op.erase();
}

/// mma.sync: iteration kt stages K tile kt synchronously into the one
/// buffer, or (cp.async) issues the copies of tile kt + stages - 1 into the
/// stage computed in iteration kt - 1 (every warp passed that iteration's
/// closing barrier; past the last tile the copies read nothing and
/// zero-fill a stage nobody reads) and waits until at most stages - 1
/// groups are pending: tile kt has landed. A barrier, the body, a barrier.
LogicalResult Expander::expandMma() {
  setUp(op);
  Value m0 = op.getM0(), n0 = op.getN0();
  bool async = s.copy == sched::CopyEngine::CpAsync;
  if (async) {
    FailureOr<Value> last = issuePrologue(b, loc, op, a, bs, op.getKBegin(),
                                          stages, m0, n0, tid, threads);
    if (failed(last))
      return failure();
  }
  auto loop =
      scf::ForOp::create(b, loc, idx(0), op.getKTiles(), idx(1), op.getInit());
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value kt = loop.getInductionVar();
    Value stage = idx(0);
    if (async) {
      FailureOr<Value> group = issueStageGroup(
          arith::AddIOp::create(b, loc, kt, idx(stages - 1)), m0, n0);
      if (failed(group))
        return failure();
      nvgpu::DeviceAsyncWaitOp::create(b, loc, *group,
                                       b.getI32IntegerAttr(stages - 1));
      stage = arith::RemUIOp::create(b, loc, kt, idx(stages));
    } else {
      if (failed(stageOperandTiles(b, loc, op, a, bs, m0, n0, kElemOf(kt), tid,
                                   threads)))
        return failure();
    }
    gpu::BarrierOp::create(b, loc);
    SmallVector<Value> acc = step(stage, loop.getRegionIterArgs());
    gpu::BarrierOp::create(b, loc);
    scf::YieldOp::create(b, loc, acc);
  }
  // The code after the op reuses the buffers: this thread's copies of the
  // stages past K land first (its barrier then covers everyone's).
  if (async && op.getDrain())
    NVVM::CpAsyncWaitGroupOp::create(b, loc, 0);
  replaceWith(loop.getResults());
  return success();
}

/// wgmma, one tile per block: iteration kt waits for tile kt's stage, issues
/// its wgmma, waits until only they are pending (tile kt - 1's are done in
/// every warpgroup once all pass the barrier, or have arrived on its
/// mbarrier), then refills tile kt - 1's stage with tile kt + stages - 1.
/// The wgmma of tile kt overlap that and the copy issue. With a producer
/// warp, it issues every load, each after its stage is released, and the
/// warpgroups only wait, compute and release.
LogicalResult Expander::expandWgmma() {
  Value m0 = op.getM0(), n0 = op.getN0();
  setUp(op);
  // With TMA and split-K, only the K tiles starting inside K (a split's last
  // tiles may lie past K; TMA copies none of them rather than boxes wholly
  // out of bounds).
  kCount = op.getKTiles();
  if (ring && op.getKBegin()) {
    Value rest = arith::SubIOp::create(b, loc, idx(K), op.getKBegin());
    Value restUp = arith::AddIOp::create(b, loc, rest, idx(s.blockK - 1));
    Value restTiles = arith::DivUIOp::create(b, loc, restUp, idx(s.blockK));
    kCount = arith::MinUIOp::create(b, loc, restTiles, kCount);
  }
  auto consumerLoop = [&]() {
    auto loop =
        scf::ForOp::create(b, loc, idx(0), kCount, idx(1), op.getInit());
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    scf::YieldOp::create(
        b, loc, consume(loop.getInductionVar(), loop.getRegionIterArgs()));
    return loop;
  };
  if (s.warpSpecialize) {
    if (!ring)
      return op.emitOpError("warp_specialize needs copy = tma");
    if (!isa<gpu::GPUFuncOp>(op->getParentOp()))
      return op.emitOpError("with warp_specialize must be in the gpu.func's "
                            "body (the consumers' code after it moves into "
                            "their branch)");
    scf::IfOp roles = specialize(op);
    auto loads = scf::ForOp::create(b, loc, idx(0), kCount, idx(1));
    b.setInsertionPointToStart(loads.getBody());
    Value f = loads.getInductionVar();
    ring->issue(b, loc, f, m0, n0, kElemOf(f), /*valid=*/Value(),
                /*mayReuse=*/true, /*byLeader=*/false);
    b.setInsertionPoint(op);
    scf::ForOp loop = consumerLoop();
    NVVM::WgmmaWaitGroupSyncOp::create(b, loc, 0);
    replaceWith(loop.getResults());
    sinkIntoConsumers(roles);
    return success();
  }
  if (ring) {
    for (int64_t i = 0; i + 1 < stages && i < kTiles; ++i) {
      Value f = idx(i);
      Value valid;
      if (op.getKBegin())
        valid =
            arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, f, kCount);
      ring->issue(b, loc, f, m0, n0, kElemOf(f), valid, /*mayReuse=*/false);
    }
  } else {
    FailureOr<Value> last = issuePrologue(b, loc, op, a, bs, op.getKBegin(),
                                          stages, m0, n0, tid, threads);
    if (failed(last))
      return failure();
    lastGroup = *last;
  }
  auto loop = scf::ForOp::create(b, loc, idx(0), kCount, idx(1), op.getInit());
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value kt = loop.getInductionVar();
    SmallVector<Value> acc = consume(kt, loop.getRegionIterArgs());
    // Past the last tile cp.async reads nothing and zero-fills a stage
    // nobody reads; TMA copies nothing.
    Value ahead = arith::AddIOp::create(b, loc, kt, idx(stages - 1));
    if (ring) {
      Value valid = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                          ahead, kCount);
      ring->issue(b, loc, ahead, m0, n0, kElemOf(ahead), valid,
                  /*mayReuse=*/true);
    } else if (failed(issueStageGroup(ahead, m0, n0))) {
      return failure();
    }
    scf::YieldOp::create(b, loc, acc);
  }
  NVVM::WgmmaWaitGroupSyncOp::create(b, loc, 0);
  if (!ring && op.getDrain())
    NVVM::CpAsyncWaitGroupOp::create(b, loc, 0);
  replaceWith(loop.getResults());
  return success();
}

/// wgmma in a persistent grid: the block's K tiles form one stream,
/// flattened index f = tile iteration * K tiles + kt, so the ring runs on
/// across tiles: the next tile's first stages are in flight while this
/// tile's last wgmma and its epilogue run. With a producer warp, it walks
/// the block's tiles and their K tiles in the consumers' order, each load
/// waiting only for its stage to be released.
LogicalResult Expander::expandPersistent(scf::ForOp tileLoop) {
  std::optional<int64_t> lb = getConstantIntValue(tileLoop.getLowerBound());
  std::optional<int64_t> stepSize = getConstantIntValue(tileLoop.getStep());
  if (!lb || *lb != 0 || !stepSize || *stepSize != 1)
    return op.emitOpError("in a persistent grid must be the body of the "
                          "block's tile loop, an scf.for from 0 step 1");
  if (op.getKBegin())
    return op.emitOpError("a persistent grid does not split K");
  if (!isa<gpu::GPUFuncOp>(tileLoop->getParentOp()))
    return op.emitOpError("in a persistent grid: the tile loop must be in the "
                          "gpu.func's body");
  setUp(tileLoop);
  Value myTiles = tileLoop.getUpperBound();
  Value iv = tileLoop.getInductionVar();
  // Tile iteration `q`'s first flattened load.
  auto firstLoad = [&](Value q) {
    return arith::MulIOp::create(b, loc, q, idx(kTiles));
  };
  if (s.warpSpecialize) {
    if (!ring)
      return op.emitOpError("warp_specialize needs copy = tma");
    scf::IfOp roles = specialize(tileLoop);
    auto tiles = scf::ForOp::create(b, loc, idx(0), myTiles, idx(1));
    b.setInsertionPointToStart(tiles.getBody());
    FailureOr<std::pair<Value, Value>> org =
        originAt(tileLoop, tiles.getInductionVar());
    if (failed(org))
      return failure();
    Value f0 = firstLoad(tiles.getInductionVar());
    auto loads = scf::ForOp::create(b, loc, idx(0), idx(kTiles), idx(1));
    b.setInsertionPointToStart(loads.getBody());
    Value kt = loads.getInductionVar();
    ring->issue(b, loc, arith::AddIOp::create(b, loc, f0, kt), org->first,
                org->second, kElemOf(kt), /*valid=*/Value(),
                /*mayReuse=*/true, /*byLeader=*/false);
    // Each tile's K loop, from the zero accumulators of the tile.
    b.setInsertionPoint(op);
    Value tileF0 = firstLoad(iv);
    auto loop =
        scf::ForOp::create(b, loc, idx(0), idx(kTiles), idx(1), op.getInit());
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(loop.getBody());
      Value f = arith::AddIOp::create(b, loc, tileF0, loop.getInductionVar());
      scf::YieldOp::create(b, loc, consume(f, loop.getRegionIterArgs()));
    }
    NVVM::WgmmaWaitGroupSyncOp::create(b, loc, 0);
    replaceWith(loop.getResults());
    sinkIntoConsumers(roles);
    return success();
  }

  // The copies of K tile `kTile` of the tile at (tm0, tn0) into `stage`,
  // flattened index `ahead`; kTile = kTiles (past the block's last tile)
  // reads nothing (cp.async: k beyond K, filling a stage nobody reads;
  // TMA: no copy). Returns the cp.async group (null for TMA).
  auto issueCopies = [&](Value stage, Value tm0, Value tn0, Value kTile,
                         Value ahead) -> FailureOr<Value> {
    Value kBase = arith::MulIOp::create(b, loc, kTile, idx(s.blockK));
    if (ring) {
      Value valid = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                          kTile, idx(kTiles));
      ring->issue(b, loc, ahead, tm0, tn0, kBase, valid, /*mayReuse=*/true);
      return Value();
    }
    return issueCopyGroup(b, loc, op, a, bs, stage, kBase, tm0, tn0, tid,
                          threads);
  };
  Value total = arith::MulIOp::create(b, loc, myTiles, idx(kTiles));
  // Any flattened index (integer divisions: the prologue, and the main loop
  // only when a tile has fewer K tiles than the ring has stages in flight).
  auto issueFlat = [&](Value f) -> FailureOr<Value> {
    Value q = arith::DivUIOp::create(b, loc, f, idx(kTiles));
    Value kt = arith::RemUIOp::create(b, loc, f, idx(kTiles));
    Value inside =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, f, total);
    Value kTile = arith::SelectOp::create(b, loc, inside, kt, idx(kTiles));
    FailureOr<std::pair<Value, Value>> org = originAt(tileLoop, q);
    if (failed(org))
      return failure();
    return issueCopies(arith::RemUIOp::create(b, loc, f, idx(stages)),
                       org->first, org->second, kTile, f);
  };
  for (int64_t i = 0; i + 1 < stages; ++i) {
    FailureOr<Value> g = issueFlat(idx(i));
    if (failed(g))
      return failure();
    lastGroup = *g;
  }
  // Tiles of the block (outer loop), K tiles of a tile (inner loop, from
  // zero accumulators: a tile's wgmma all completed in the previous
  // epilogue, so no register the tensor cores still use is rewritten).
  b.setInsertionPoint(op);
  Value f0 = firstLoad(iv);
  Value tm0 = op.getM0(), tn0 = op.getN0();
  // The next tile's origin (the copies run ahead into it), once per tile.
  Value nextIv = arith::AddIOp::create(b, loc, iv, idx(1));
  FailureOr<std::pair<Value, Value>> next = originAt(tileLoop, nextIv);
  if (failed(next))
    return failure();
  auto [nm0, nn0] = *next;
  Value hasNext =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, nextIv, myTiles);
  // One K loop over [lo, hi) of the tile's K tiles; `refill(kt, ahead)`
  // issues the copies of flattened K tile `ahead`.
  auto kRange = [&](int64_t lo, int64_t hi, ValueRange accIn,
                    function_ref<LogicalResult(Value, Value)> refill)
      -> FailureOr<scf::ForOp> {
    auto loop = scf::ForOp::create(b, loc, idx(lo), idx(hi), idx(1), accIn);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value kt = loop.getInductionVar();
    Value f = arith::AddIOp::create(b, loc, f0, kt);
    SmallVector<Value> acc = consume(f, loop.getRegionIterArgs());
    if (failed(refill(kt, arith::AddIOp::create(b, loc, f, idx(stages - 1)))))
      return failure();
    scf::YieldOp::create(b, loc, acc);
    return loop;
  };
  auto stageOf = [&](Value ahead) {
    return arith::RemUIOp::create(b, loc, ahead, idx(stages));
  };
  scf::ForOp kLoop;
  if (stages - 1 <= kTiles) {
    // Two phases, so that each copy target is loop-invariant (its address
    // arithmetic hoisted like the non-persistent loop's): K tiles kt +
    // stages - 1 of this tile, then the next tile's first stages - 1 (past
    // the block's last tile: nothing, k beyond K).
    int64_t cut = kTiles - (stages - 1);
    FailureOr<scf::ForOp> own =
        kRange(0, cut, op.getInit(), [&](Value kt, Value ahead) {
          return issueCopies(stageOf(ahead), tm0, tn0,
                             arith::AddIOp::create(b, loc, kt, idx(stages - 1)),
                             ahead);
        });
    if (failed(own))
      return failure();
    FailureOr<scf::ForOp> nextTile =
        kRange(cut, kTiles, own->getResults(), [&](Value kt, Value ahead) {
          Value nextKt = arith::SelectOp::create(
              b, loc, hasNext, arith::SubIOp::create(b, loc, kt, idx(cut)),
              idx(kTiles));
          return issueCopies(stageOf(ahead), nm0, nn0, nextKt, ahead);
        });
    if (failed(nextTile))
      return failure();
    kLoop = *nextTile;
  } else {
    FailureOr<scf::ForOp> all =
        kRange(0, kTiles, op.getInit(), [&](Value, Value ahead) {
          return LogicalResult(issueFlat(ahead));
        });
    if (failed(all))
      return failure();
    kLoop = *all;
  }
  // The tile's epilogue runs from registers, while the next tile's first
  // stages are in flight.
  NVVM::WgmmaWaitGroupSyncOp::create(b, loc, 0);
  replaceWith(kLoop.getResults());
  return success();
}

LogicalResult Expander::run() {
  if (failed(analyze()))
    return failure();
  if (s.instruction == sched::Instruction::MmaSync) {
    if (s.persistent || s.warpSpecialize || s.copy == sched::CopyEngine::TMA)
      return op.emitOpError("mma_sync mainloops take cp_async or sync "
                            "copies, one tile per block");
    return expandMma();
  }
  if (s.copy == sched::CopyEngine::Sync)
    return op.emitOpError("wgmma mainloops take cp_async or tma copies");
  if (s.persistent) {
    auto tileLoop = dyn_cast<scf::ForOp>(op->getParentOp());
    if (!tileLoop)
      return op.emitOpError("in a persistent grid must be the body of the "
                            "block's tile loop (scf.for)");
    return expandPersistent(tileLoop);
  }
  return expandWgmma();
}

} // namespace

LogicalResult kopt::expandMainloop(MainloopOp op) { return Expander(op).run(); }
