//===- Matmul.cpp - kernels for contractions ------------------------------===//
//
// A matmul kernel: fill(0) + a contraction generic C[m, n] += A[m, k] * B[k, n]
// (any operand layout; the payload exactly acc + a * b) + an optional
// elementwise epilogue generic (the rounding to C's type). kopt-tile first
// tiles it with upstream MLIR (Tiling.cpp: block tiles by tile-and-fuse, zero
// padding, K tiles, promotion to shared memory, warp and thread tiles); the
// builders here lower that tiled form as the kernel's #kopt.schedule says
// (docs/schedules.md, docs/compiler.md):
//   - the grid: a 1-D grid over the block tiles in grouped rasterization
//     (swizzle), split-K through a workspace, or a persistent grid looping
//     over the tiles;
//   - mma.sync (m16n8k16, ldmatrix fragments) and wgmma (m64nNk16, k8 for
//     TF32; warpgroups) with the K loop as a kopt.mainloop for kopt-pipeline
//     (synchronous, cp.async or TMA stages); FFMA (SIMT threads, thread (ty,
//     tx) of a 16-wide grid owning chunk x chunk outputs per round, the
//     payload cloned per multiply-accumulate); gemv (lanes splitting K,
//     operands read from global memory);
//   - partial tiles loaded as zeros and stored under masks, so every M, N, K
//     is correct; the epilogue in registers (pairs), staged through shared
//     memory (wide stores) or stored by TMA.
//
//===----------------------------------------------------------------------===//

#include "Staging.h"
#include "Tiling.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"

using namespace mlir;
using namespace kopt;
using namespace kopt::kb;
namespace sched = kopt::schedule;

namespace {

/// What a matmul kernel computes, read off its linalg body.
struct Contraction {
  linalg::GenericOp mm, epilogue;
  Value out, memA, memB;
  int64_t M = 0, N = 0, K = 0;
  AffineMap mapA, mapB;
  /// The split-K workspace (memref<W x f32>, the kernel's last parameter
  /// before the tensor maps), null without split-K.
  Value workspace;
  /// copy = tma: i64 parameters holding the global addresses of A's and B's
  /// tensor maps (the kernel's last two parameters), else null.
  Value tensorMapA, tensorMapB;
  /// tma_store: an i64 parameter holding the global address of C's tensor
  /// map (after A's and B's), else null.
  Value tensorMapC;
  /// The source matmul allows TF32 (kopt.matmul {tf32}).
  bool tf32 = false;
  /// The tiled form the kernel is built from.
  TiledMatmul tiles;
};

/// Whether the source matmul allows TF32: kopt-fuse records the matmul's
/// attributes in the kernel's `source`.
bool allowsTf32(KernelOp kernel) {
  if (DictionaryAttr source = kernel.getSourceAttr())
    if (auto attrs = source.getAs<DictionaryAttr>("attrs"))
      if (auto tf32 = attrs.getAs<BoolAttr>("tf32"))
        return tf32.getValue();
  return false;
}

/// The contraction of a kernel that kopt-tile's upstream step has tiled
/// (Tiling.h): its generics, operands and extents read off the tiled form.
FailureOr<Contraction> analyze(KernelOp kernel, const KernelIO &io) {
  FailureOr<TiledMatmul> t = matchTiledMatmul(kernel);
  if (failed(t))
    return failure();
  Contraction c;
  c.mm = t->contraction;
  c.epilogue = t->epilogue;
  c.out = io.memrefOf(kernel.getBody().front().getTerminator()->getOperand(0));
  c.memA = io.memrefOf(t->a);
  c.memB = io.memrefOf(t->b);
  if (!c.out || !c.memA || !c.memB)
    return c.mm.emitOpError(
        "matmul operands and result must be kernel arguments");
  c.M = t->M;
  c.N = t->N;
  c.K = t->K;
  c.mapA = c.mm.getMatchingIndexingMap(c.mm.getDpsInputOperand(0));
  c.mapB = c.mm.getMatchingIndexingMap(c.mm.getDpsInputOperand(1));
  c.tf32 = allowsTf32(kernel);
  c.tiles = *t;
  return c;
}

} // namespace

/// The origin (m0, n0) of output tile number `tile` in the rasterization
/// order: with swizzle G > 1 the tiles are visited in groups of G tile rows, M
/// fastest within a group (grouped rasterization: blocks running together
/// share rows of A and columns of B in L2); with G = 1, row-major order.
static std::pair<Value, Value> tileCoordinates(OpBuilder &b, Location loc,
                                               const Contraction &c, int64_t bm,
                                               int64_t bn, int64_t swizzle,
                                               Value tile) {
  int64_t tilesN = llvm::divideCeil(c.N, bn),
          tilesM = llvm::divideCeil(c.M, bm);
  Value tileM, tileN;
  if (swizzle <= 1 || tilesM <= 1) {
    tileN = arith::RemUIOp::create(b, loc, tile, indexConst(b, loc, tilesN));
    tileM = arith::DivUIOp::create(b, loc, tile, indexConst(b, loc, tilesN));
  } else {
    Value perGroup = indexConst(b, loc, swizzle * tilesN);
    Value group = arith::DivUIOp::create(b, loc, tile, perGroup);
    Value firstM =
        arith::MulIOp::create(b, loc, group, indexConst(b, loc, swizzle));
    Value rows = arith::MinSIOp::create(
        b, loc,
        arith::SubIOp::create(b, loc, indexConst(b, loc, tilesM), firstM),
        indexConst(b, loc, swizzle));
    Value local = arith::RemUIOp::create(b, loc, tile, perGroup);
    tileM = arith::AddIOp::create(b, loc, firstM,
                                  arith::RemUIOp::create(b, loc, local, rows));
    tileN = arith::DivUIOp::create(b, loc, local, rows);
  }
  Value n0 = arith::MulIOp::create(b, loc, tileN, indexConst(b, loc, bn));
  Value m0 = arith::MulIOp::create(b, loc, tileM, indexConst(b, loc, bm));
  return {m0, n0};
}

namespace {
/// Where a block works: the origin (m0, n0) of its output tile (number `tile`
/// of `tiles`), its K split and the split's first K element (`kBase`, null
/// without split-K), and the K tiles every split runs.
struct TileOrigin {
  Value m0, n0, tile, split, kBase;
  int64_t tiles = 0, kTiles = 0;
};
} // namespace

/// The 1-D grid and this block's place in it. Blocks b = split * tiles + tile:
/// with split-K S > 1, split s computes K tiles [s P, (s + 1) P), P =
/// ceil(ceil(K / block_k) / S) (loads past K read zeros, so a short or empty
/// last split is correct). With swizzle G > 1 the tiles are visited in groups
/// of G tile rows, M fastest within a group (grouped rasterization: blocks
/// running together share rows of A and columns of B in L2); with G = 1,
/// row-major order.
static FailureOr<TileOrigin> tileOrigin(OpBuilder &b, Location loc,
                                        const Contraction &c, int64_t bm,
                                        int64_t bn, int64_t bk, int64_t swizzle,
                                        int64_t splitK, LaunchConfig &cfg) {
  int64_t tilesN = llvm::divideCeil(c.N, bn),
          tilesM = llvm::divideCeil(c.M, bm);
  if (tilesN * tilesM > kMaxGridX / splitK)
    return linalg::GenericOp(c.mm).emitOpError("needs ")
           << tilesN * tilesM * splitK << " blocks of " << bm << "x" << bn
           << (splitK > 1 ? " times split_k" : "") << ", more than a grid's "
           << kMaxGridX;
  TileOrigin o;
  o.tiles = tilesN * tilesM;
  o.kTiles = llvm::divideCeil(llvm::divideCeil(c.K, bk), splitK);
  cfg.grid = {o.tiles * splitK, 1, 1};
  Value tile = blockIdX(b, loc);
  o.split = indexConst(b, loc, 0);
  if (splitK > 1) {
    Value bid = tile;
    tile = arith::RemUIOp::create(b, loc, bid, indexConst(b, loc, o.tiles));
    o.split = arith::DivUIOp::create(b, loc, bid, indexConst(b, loc, o.tiles));
    o.kBase = arith::MulIOp::create(b, loc, o.split,
                                    indexConst(b, loc, o.kTiles * bk));
  }
  o.tile = tile;
  std::tie(o.m0, o.n0) = tileCoordinates(b, loc, c, bm, bn, swizzle, tile);
  return o;
}

/// `v` rounded by the epilogue payload (the conversion to C's element type),
/// or `v` itself without one.
static Value roundResult(OpBuilder &b, Location loc, const Contraction &c,
                         Value v) {
  if (!c.epilogue)
    return v;
  Type outElt = cast<MemRefType>(c.out.getType()).getElementType();
  return clonePayload(
      b, c.epilogue,
      {v, arith::ConstantOp::create(b, loc, b.getZeroAttr(outElt))});
}

/// Stores `vs` (already rounded) at `indices` of `mem`: one element, or one
/// vector store of all, aligned to its size.
static void storeElements(OpBuilder &b, Location loc, ArrayRef<Value> vs,
                          Value mem, ValueRange indices) {
  if (vs.size() == 1) {
    memref::StoreOp::create(b, loc, vs[0], mem, indices);
    return;
  }
  Type elt = vs[0].getType();
  auto vecType = VectorType::get({static_cast<int64_t>(vs.size())}, elt);
  Value vec = vector::FromElementsOp::create(b, loc, vecType, vs);
  vector::StoreOp::create(
      b, loc, vec, mem, indices, /*nontemporal=*/false,
      llvm::MaybeAlign(vs.size() * elt.getIntOrFloatBitWidth() / 8));
}

/// Rounds (epilogue payload) and stores `vs` at (m, n), (m, n + 1), ... when
/// inside the bounds: one element, or a vector store of all when there are
/// several (the caller guarantees N % vs.size() == 0 and n % vs.size() == 0,
/// so a vector is wholly inside or outside).
static void storeResult(OpBuilder &b, Location loc, const Contraction &c,
                        ArrayRef<Value> vs, Value m, Value n) {
  Value inM = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, m,
                                    indexConst(b, loc, c.M));
  Value inN = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, n,
                                    indexConst(b, loc, c.N));
  auto ifOp = scf::IfOp::create(b, loc, arith::AndIOp::create(b, loc, inM, inN),
                                /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(ifOp.thenBlock());
  SmallVector<Value> rounded;
  for (Value v : vs)
    rounded.push_back(roundResult(b, loc, c, v));
  storeElements(b, loc, rounded, c.out, ValueRange{m, n});
}

/// i * stride + offset (index values).
static Value stridedIndex(OpBuilder &b, Location loc, Value i, int64_t stride,
                          Value offset) {
  Value scaled = arith::MulIOp::create(b, loc, i, indexConst(b, loc, stride));
  return arith::AddIOp::create(b, loc, scaled, offset);
}

/// scf.for %i = 0 to `count` step 1 (iter_args `init`), its constants made
/// one statement at a time (the IR must not depend on the host compiler's
/// argument evaluation order).
static scf::ForOp countedLoop(OpBuilder &b, Location loc, int64_t count,
                              ValueRange init = {}) {
  Value lb = indexConst(b, loc, 0);
  Value ub = indexConst(b, loc, count);
  Value step = indexConst(b, loc, 1);
  return scf::ForOp::create(b, loc, lb, ub, step, init);
}

namespace {
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
  Value tile; // memref<block_m x (block_n + 8) x C, 3>, or the sub-tiles
  Value m0, n0;
  int64_t bm = 0, bn = 0, width = 0;
  /// tma_store: C's tensor map (an i64 holding its global address), the
  /// box's columns (R), rows (sched::tmaBoxRows(block_m, M)) and swizzle
  /// span (S bytes).
  Value tensorMap;
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
  Value tid;
  int64_t count = 0;
  bool wholeBlock = true;

  /// The barrier id (0) and thread count operands (null: the whole block).
  std::pair<Value, Value> named(OpBuilder &b, Location loc) const {
    if (wholeBlock)
      return {Value(), Value()};
    Value id = arith::ConstantIntOp::create(b, loc, b.getI32Type(), 0);
    Value n = arith::ConstantIntOp::create(b, loc, b.getI32Type(), count);
    return {id, n};
  }
  void barrier(OpBuilder &b, Location loc) const {
    if (wholeBlock) {
      gpu::BarrierOp::create(b, loc);
      return;
    }
    auto [id, n] = named(b, loc);
    NVVM::BarrierOp::create(b, loc, TypeRange{}, id, n,
                            NVVM::BarrierReductionAttr(), Value());
  }
};
} // namespace

/// `v` as (base, c) when it is base + c for a constant c.
static std::optional<std::pair<Value, int64_t>> splitConstant(Value v) {
  auto add = v.getDefiningOp<arith::AddIOp>();
  if (!add)
    return std::nullopt;
  if (std::optional<int64_t> c = getConstantIntValue(add.getRhs()))
    return std::make_pair(add.getLhs(), *c);
  if (std::optional<int64_t> c = getConstantIntValue(add.getLhs()))
    return std::make_pair(add.getRhs(), *c);
  return std::nullopt;
}

/// Stores the rounded `vs` of outputs (m, n), ... into the swizzled
/// sub-tiles of a TMA store epilogue (StagedEpilogue) through one address
/// per lane: with m = m_l + r and n = n_l + c (r and c constants, multiples
/// of 8; the lane's n_l - n0 within 8 of a multiple of R: lanesAligned),
/// the byte address of (m, n) is
///   (L ^ (((c % R) / E) << 4)) + (c / R) * block_m * S + r * S,
///   L = tile + ((n_l - n0) / R) * block_m * S + (m_l - m0) * S
///       + ((chunk(n_l - n0) ^ phase(m_l - m0)) << 4) + ((n_l - n0) % E) * e
/// (e bytes per element, E = 16 / e per chunk): r keeps the row's phase,
/// and the constants touch no bit of L's chunk field but the XOR's. Each
/// store then costs an XOR and an add of constants to the lane's L, instead
/// of up to 8 swizzled addresses per lane that the compilers would keep
/// live. When m or n does not split so, L is the whole address (r = c = 0).
static void stageSwizzled(OpBuilder &b, Location loc, const StagedEpilogue &st,
                          ArrayRef<Value> rounded, Value m, Value n) {
  std::optional<std::pair<Value, int64_t>> ms = splitConstant(m),
                                           ns = splitConstant(n);
  if (!st.lanesAligned || !ms || !ns || ms->second < 0 || ns->second < 0 ||
      ms->second % 8 || ns->second % 8) {
    ms = std::make_pair(m, int64_t(0));
    ns = std::make_pair(n, int64_t(0));
  }
  Type elt = rounded[0].getType();
  const int64_t e = elt.getIntOrFloatBitWidth() / 8, perChunk = 16 / e;
  const int64_t S = st.swizzleBytes, R = st.boxColumns, subBytes = st.bm * S;
  auto idx = [&](int64_t v) { return indexConst(b, loc, v); };
  Value rl = arith::SubIOp::create(b, loc, ms->first, st.m0);
  Value cl = arith::SubIOp::create(b, loc, ns->first, st.n0);
  Value inBox = arith::RemUIOp::create(b, loc, cl, idx(R));
  Value chunk = arith::DivUIOp::create(b, loc, inBox, idx(perChunk));
  Value phase = arith::RemUIOp::create(
      b, loc, arith::DivUIOp::create(b, loc, rl, idx(128 / S)), idx(S / 16));
  Value swizzled = arith::XOrIOp::create(b, loc, chunk, phase);
  Value subOff = arith::MulIOp::create(
      b, loc, arith::DivUIOp::create(b, loc, cl, idx(R)), idx(subBytes));
  Value rowOff = arith::MulIOp::create(b, loc, rl, idx(S));
  Value chunkOff = arith::MulIOp::create(b, loc, swizzled, idx(16));
  Value inChunk = arith::MulIOp::create(
      b, loc, arith::RemUIOp::create(b, loc, inBox, idx(perChunk)), idx(e));
  Value laneOff = arith::AddIOp::create(
      b, loc,
      arith::AddIOp::create(b, loc, subOff,
                            arith::AddIOp::create(b, loc, rowOff, chunkOff)),
      inChunk);
  auto i64 = b.getI64Type();
  Value tile = arith::IndexCastUIOp::create(
      b, loc, i64,
      memref::ExtractAlignedPointerAsIndexOp::create(b, loc, st.tile));
  Value lane = arith::AddIOp::create(
      b, loc, tile, arith::IndexCastUIOp::create(b, loc, i64, laneOff));
  int64_t c = ns->second, r = ms->second;
  Value flipped = arith::XOrIOp::create(
      b, loc, lane,
      arith::ConstantIntOp::create(b, loc, i64, ((c % R) / perChunk) * 16)
          .getResult());
  Value addr = arith::AddIOp::create(
      b, loc, flipped,
      arith::ConstantIntOp::create(b, loc, i64, (c / R) * subBytes + r * S)
          .getResult());
  auto ptr3 = LLVM::LLVMPointerType::get(b.getContext(), 3);
  Value ptr = LLVM::IntToPtrOp::create(b, loc, ptr3, addr);
  Value value = rounded[0];
  if (rounded.size() > 1)
    value = vector::FromElementsOp::create(
        b, loc, VectorType::get({static_cast<int64_t>(rounded.size())}, elt),
        rounded);
  LLVM::StoreOp::create(
      b, loc, value, ptr,
      /*alignment=*/static_cast<unsigned>(e * rounded.size()));
}

/// Writes `vs` (not rounded) for outputs (m, n), (m, n + 1), ... into the
/// staged tile.
static void stageResult(OpBuilder &b, Location loc, const Contraction &c,
                        const StagedEpilogue &st, ArrayRef<Value> vs, Value m,
                        Value n) {
  SmallVector<Value> rounded;
  for (Value v : vs)
    rounded.push_back(roundResult(b, loc, c, v));
  if (st.tensorMap)
    return stageSwizzled(b, loc, st, rounded, m, n);
  Value row = arith::SubIOp::create(b, loc, m, st.m0);
  Value col = arith::SubIOp::create(b, loc, n, st.n0);
  storeElements(b, loc, rounded, st.tile, ValueRange{row, col});
}

/// Waits until the TMA unit has read the shared memory of this thread's
/// committed TMA stores (a no-op for threads that issued none).
static void waitForTmaStoreReads(OpBuilder &b, Location loc) {
  NVVM::CpAsyncBulkWaitGroupOp::create(b, loc, b.getI32IntegerAttr(0),
                                       b.getUnitAttr());
}

/// The TMA store of a staged tile: every epilogue thread makes its
/// shared-memory writes visible to the async proxy (fence.proxy.async), a
/// barrier, then thread 0 stores box j (columns n0 + j R ..., rows m0 ...)
/// from sub-tile j and commits them as one bulk async-group. Nobody waits:
/// waitForTmaStoreReads before the memory is written again or the block
/// exits.
static void storeStagedTileWithTma(OpBuilder &b, Location loc,
                                   const StagedEpilogue &st,
                                   const EpilogueThreads &et) {
  int64_t eltBytes =
      cast<MemRefType>(st.tile.getType()).getElementTypeBitWidth() / 8;
  NVVM::FenceProxyOp::create(
      b, loc, NVVM::ProxyKind::async_shared,
      NVVM::SharedSpaceAttr::get(b.getContext(),
                                 NVVM::SharedSpace::shared_cta));
  et.barrier(b, loc);
  Value first = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, et.tid,
                                      indexConst(b, loc, 0));
  auto ifOp = scf::IfOp::create(b, loc, first, /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(ifOp.thenBlock());
  auto i32 = b.getI32Type(), i64 = b.getI64Type();
  auto ptr = LLVM::LLVMPointerType::get(b.getContext());
  auto ptr3 = LLVM::LLVMPointerType::get(b.getContext(), 3);
  Value map = LLVM::IntToPtrOp::create(b, loc, ptr, st.tensorMap);
  Value base = arith::IndexCastUIOp::create(
      b, loc, i64,
      memref::ExtractAlignedPointerAsIndexOp::create(b, loc, st.tile));
  Value row = arith::IndexCastUIOp::create(b, loc, i32, st.m0);
  int64_t subBytes = st.bm * st.boxColumns * eltBytes;
  for (int64_t j = 0; j < st.bn / st.boxColumns; ++j) {
    Value addr = arith::AddIOp::create(
        b, loc, base,
        arith::ConstantIntOp::create(b, loc, i64, j * subBytes).getResult());
    Value src = LLVM::IntToPtrOp::create(b, loc, ptr3, addr);
    Value n = arith::AddIOp::create(b, loc, st.n0,
                                    indexConst(b, loc, j * st.boxColumns));
    Value col = arith::IndexCastUIOp::create(b, loc, i32, n);
    NVVM::CpAsyncBulkTensorSharedCTAToGlobalOp::create(
        b, loc, map, src, ValueRange{col, row}, /*l2CacheHint=*/Value(),
        NVVM::TMAStoreMode::TILE, /*predicate=*/Value());
  }
  NVVM::CpAsyncBulkCommitGroupOp::create(b, loc);
}

/// Stores the staged tile to C (inside the bounds; N % width == 0, so a
/// chunk is wholly inside or outside) after a barrier; thread `tid` of the
/// epilogue's threads takes chunks tid, tid + threads, ...
static void storeStagedTile(OpBuilder &b, Location loc, const Contraction &c,
                            const StagedEpilogue &st,
                            const EpilogueThreads &et) {
  if (st.tensorMap)
    return storeStagedTileWithTma(b, loc, st, et);
  et.barrier(b, loc);
  Value tid = et.tid;
  int64_t threads = et.count;
  int64_t perRow = st.bn / st.width, chunks = st.bm * perRow;
  Type elt = cast<MemRefType>(c.out.getType()).getElementType();
  auto vecType = VectorType::get({st.width}, elt);
  llvm::MaybeAlign align(st.width * elt.getIntOrFloatBitWidth() / 8);
  auto loop = countedLoop(b, loc, llvm::divideCeil(chunks, threads));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  Value chunk = stridedIndex(b, loc, loop.getInductionVar(), threads, tid);
  Value row = arith::DivUIOp::create(b, loc, chunk, indexConst(b, loc, perRow));
  Value col = arith::MulIOp::create(
      b, loc, arith::RemUIOp::create(b, loc, chunk, indexConst(b, loc, perRow)),
      indexConst(b, loc, st.width));
  Value m = arith::AddIOp::create(b, loc, st.m0, row);
  Value n = arith::AddIOp::create(b, loc, st.n0, col);
  // (Operands created one statement at a time: the IR, and so the PTX, must
  // not depend on the host compiler's argument evaluation order.)
  Value inM = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, m,
                                    indexConst(b, loc, c.M));
  Value inN = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, n,
                                    indexConst(b, loc, c.N));
  Value inside = arith::AndIOp::create(b, loc, inM, inN);
  if (chunks % threads) {
    Value inTile = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                         chunk, indexConst(b, loc, chunks));
    inside = arith::AndIOp::create(b, loc, inside, inTile);
  }
  auto ifOp = scf::IfOp::create(b, loc, inside, /*withElseRegion=*/false);
  b.setInsertionPointToStart(ifOp.thenBlock());
  Value vec =
      vector::LoadOp::create(b, loc, vecType, st.tile, ValueRange{row, col},
                             /*nontemporal=*/false, align);
  vector::StoreOp::create(b, loc, vec, c.out, ValueRange{m, n},
                          /*nontemporal=*/false, align);
}

/// Receives a thread's accumulators `vs` for outputs (m, n), (m, n + 1), ...
using OutputFn = function_ref<void(ArrayRef<Value> vs, Value m, Value n)>;

/// Passes the 4 accumulator registers a lane holds of one 16 x 8 (mma.sync)
/// or 8-column (wgmma) accumulator chunk whose lane origin is (rowBase +
/// rowOffset, colBase + colOffset) to `emit`: registers 0, 1 at that row,
/// columns +0 and +1, registers 2, 3 eight rows below; `vectorWidth` 2 passes
/// the adjacent pairs together.
static void forEachAccumulatorOfQuad(OpBuilder &b, Location loc, Value rowBase,
                                     int64_t rowOffset, Value colBase,
                                     int64_t colOffset,
                                     function_ref<Value(int64_t)> reg,
                                     int64_t vectorWidth, OutputFn emit) {
  for (int64_t r = 0; r < 4; r += vectorWidth) {
    Value m = arith::AddIOp::create(
        b, loc, rowBase, indexConst(b, loc, rowOffset + (r / 2) * 8));
    Value n = arith::AddIOp::create(b, loc, colBase,
                                    indexConst(b, loc, colOffset + r % 2));
    SmallVector<Value> vs;
    for (int64_t v = 0; v < vectorWidth; ++v)
      vs.push_back(reg(r + v));
    emit(vs, m, n);
  }
}

/// The epilogue: every output the thread holds (`forEachOutput` calls its
/// argument once per group of accumulators) is rounded and stored. With
/// split-K S > 1, each block first writes its f32 partial sums to the
/// workspace (memref<W x f32>: one counter per output tile, padded to a
/// multiple of 32, then partials [S][M][N]); after a gpu-scope fence and a
/// barrier, thread 0 counts the block in with an atomic add of 1.0 to its
/// tile's counter (exact for counts below 2^24); the block that brings the
/// count to S (the last of its tile) resets the counter to 0, so that the
/// workspace can be reused by the next launch without clearing, fences, and
/// sums the S partials in split order (so the result does not depend on which
/// block came last) before rounding and storing them. No block waits for
/// another: the grid may run in any order.
static void emitEpilogue(OpBuilder &b, Location loc, const Contraction &c,
                         const TileOrigin &o, int64_t splitK,
                         const EpilogueThreads &et,
                         const StagedEpilogue *staged,
                         function_ref<void(OutputFn)> forEachOutput) {
  Value tid = et.tid;
  // The final values: stored, or staged and stored by the whole block.
  auto store = [&](ArrayRef<Value> vs, Value m, Value n) {
    if (staged)
      stageResult(b, loc, c, *staged, vs, m, n);
    else
      storeResult(b, loc, c, vs, m, n);
  };
  auto finish = [&] {
    if (staged)
      storeStagedTile(b, loc, c, *staged, et);
  };
  if (splitK == 1) {
    forEachOutput(store);
    finish();
    return;
  }
  Value ws = c.workspace;
  Type f32 = b.getF32Type();
  int64_t counters = llvm::alignTo(o.tiles, 32);
  // Partial of split `split` for output (m, n).
  auto partialIndex = [&](Value split, Value m, Value n) -> Value {
    Value row = arith::AddIOp::create(
        b, loc, arith::MulIOp::create(b, loc, split, indexConst(b, loc, c.M)),
        m);
    Value at = arith::AddIOp::create(
        b, loc, arith::MulIOp::create(b, loc, row, indexConst(b, loc, c.N)), n);
    return arith::AddIOp::create(b, loc, at, indexConst(b, loc, counters));
  };
  // Runs `body` only for outputs inside the bounds (a group of vs.size()
  // columns is wholly inside or outside: N % vs.size() == 0).
  auto ifInside = [&](Value m, Value n, function_ref<void()> body) {
    Value inM = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, m,
                                      indexConst(b, loc, c.M));
    Value inN = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, n,
                                      indexConst(b, loc, c.N));
    auto ifOp =
        scf::IfOp::create(b, loc, arith::AndIOp::create(b, loc, inM, inN),
                          /*withElseRegion=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    body();
  };
  auto vecType = [&](size_t n) {
    return VectorType::get({static_cast<int64_t>(n)}, f32);
  };

  // 1. This split's partial sums.
  forEachOutput([&](ArrayRef<Value> vs, Value m, Value n) {
    ifInside(m, n, [&] {
      Value at = partialIndex(o.split, m, n);
      if (vs.size() == 1) {
        memref::StoreOp::create(b, loc, vs[0], ws, ValueRange{at});
        return;
      }
      Value vec =
          vector::FromElementsOp::create(b, loc, vecType(vs.size()), vs);
      vector::StoreOp::create(b, loc, vec, ws, ValueRange{at},
                              /*nontemporal=*/false,
                              llvm::MaybeAlign(vs.size() * 4));
    });
  });
  // 2. Publish them and count the block in; barrier.red.or tells every
  // thread whether the block is its tile's last.
  NVVM::MembarOp::create(b, loc, NVVM::MemScopeKind::GPU);
  et.barrier(b, loc);
  Value isFirstThread = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                              tid, indexConst(b, loc, 0));
  auto count = scf::IfOp::create(b, loc, TypeRange{b.getI1Type()},
                                 isFirstThread, /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(count.thenBlock());
    Value before = memref::AtomicRMWOp::create(
        b, loc, arith::AtomicRMWKind::addf,
        arith::ConstantOp::create(b, loc, b.getF32FloatAttr(1.0)), ws,
        ValueRange{o.tile});
    Value last = arith::CmpFOp::create(
        b, loc, arith::CmpFPredicate::OEQ, before,
        arith::ConstantOp::create(b, loc, b.getF32FloatAttr(splitK - 1)));
    auto reset = scf::IfOp::create(b, loc, last, /*withElseRegion=*/false);
    b.setInsertionPointToStart(reset.thenBlock());
    memref::StoreOp::create(
        b, loc, arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0)), ws,
        ValueRange{o.tile});
    b.setInsertionPointAfter(reset);
    scf::YieldOp::create(b, loc, last);
    b.setInsertionPointToStart(count.elseBlock());
    scf::YieldOp::create(
        b, loc, ValueRange{arith::ConstantIntOp::create(b, loc, 0, 1)});
  }
  Value isLast;
  if (et.wholeBlock) {
    Value flag =
        arith::ExtUIOp::create(b, loc, b.getI32Type(), count.getResult(0));
    Value anyLast =
        NVVM::BarrierOp::create(b, loc, b.getI32Type(), /*barrierId=*/Value(),
                                /*numberOfThreads=*/Value(),
                                NVVM::BarrierReductionAttr::get(
                                    b.getContext(), NVVM::BarrierReduction::OR),
                                flag)
            .getResult(0);
    isLast = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, anyLast,
                                   arith::ConstantIntOp::create(b, loc, 0, 32));
  } else {
    // nvvm.barrier takes a reduction only over the whole block: the LLVM
    // intrinsic of barrier.red.or.aligned with a thread count.
    auto [barrierId, barrierThreads] = et.named(b, loc);
    isLast = LLVM::CallIntrinsicOp::create(
                 b, loc, b.getI1Type(),
                 b.getStringAttr("llvm.nvvm.barrier.cta.red.or.aligned.count"),
                 ValueRange{barrierId, barrierThreads, count.getResult(0)})
                 .getResult(0);
  }
  // 3. The last block sums the partials in split order and stores.
  auto reduce = scf::IfOp::create(b, loc, isLast, /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(reduce.thenBlock());
  NVVM::MembarOp::create(b, loc, NVVM::MemScopeKind::GPU);
  forEachOutput([&](ArrayRef<Value> vs, Value m, Value n) {
    ifInside(m, n, [&] {
      SmallVector<Value> sums;
      for (int64_t sp = 0; sp < splitK; ++sp) {
        Value at = partialIndex(indexConst(b, loc, sp), m, n);
        SmallVector<Value> part;
        if (vs.size() == 1) {
          part.push_back(memref::LoadOp::create(b, loc, ws, ValueRange{at}));
        } else {
          Value vec = vector::LoadOp::create(
              b, loc, vecType(vs.size()), ws, ValueRange{at},
              /*nontemporal=*/false, llvm::MaybeAlign(vs.size() * 4));
          for (size_t i = 0; i < vs.size(); ++i)
            part.push_back(vector::ExtractOp::create(b, loc, vec, i));
        }
        if (sp == 0)
          sums = part;
        else
          for (size_t i = 0; i < vs.size(); ++i)
            sums[i] = arith::AddFOp::create(b, loc, sums[i], part[i]);
      }
      store(sums, m, n);
    });
  });
  finish();
}

/// The schedule's view of a contraction: extents, element types (of A, B and
/// C), whether A and B are contiguous along K, TF32.
static sched::MatmulWorkload workloadOf(int64_t m, int64_t n, int64_t k, Type a,
                                        Type b, Type c, AffineMap mapA,
                                        AffineMap mapB, bool tf32) {
  auto dtype = [](Type t) {
    Type elt = getElementTypeOrSelf(t);
    return elt.isF16()    ? sched::DType::F16
           : elt.isBF16() ? sched::DType::BF16
                          : sched::DType::F32;
  };
  sched::MatmulWorkload w;
  w.m = m, w.n = n, w.k = k;
  w.a = dtype(a);
  w.b = dtype(b);
  w.c = dtype(c);
  w.aKContiguous = kContiguous(mapA);
  w.bKContiguous = kContiguous(mapB);
  w.tf32 = tf32;
  return w;
}

static sched::MatmulWorkload workloadOf(const Contraction &c) {
  return workloadOf(c.M, c.N, c.K, c.memA.getType(), c.memB.getType(),
                    c.out.getType(), c.mapA, c.mapB, c.tf32);
}

static MemRefType workgroupBuffer(OpBuilder &b, ArrayRef<int64_t> shape,
                                  Type elt) {
  return MemRefType::get(
      shape, elt, MemRefLayoutAttrInterface(),
      gpu::AddressSpaceAttr::get(b.getContext(), gpu::AddressSpace::Workgroup));
}

//===----------------------------------------------------------------------===//
// SIMT schedule
//===----------------------------------------------------------------------===//

/// The contraction payload acc + a * b for one multiply-accumulate, with the
/// product and the sum fused into one FMA (one rounding, as the ffma
/// instruction, cuBLAS and PyTorch's CUDA kernels compute it) when the cloned
/// payload ends in addf(mulf(x, y), acc).
static Value multiplyAccumulate(OpBuilder &b, Location loc,
                                linalg::GenericOp mm, Value a, Value bv,
                                Value acc) {
  Value sum = clonePayload(b, mm, {a, bv, acc});
  auto add = sum.getDefiningOp<arith::AddFOp>();
  if (!add)
    return sum;
  for (unsigned i = 0; i < 2; ++i) {
    auto mul = add->getOperand(i).getDefiningOp<arith::MulFOp>();
    if (!mul || add->getOperand(1 - i) != acc || !mul->hasOneUse())
      continue;
    Value fma = math::FmaOp::create(b, loc, mul.getLhs(), mul.getRhs(), acc);
    add->erase();
    mul->erase();
    return fma;
  }
  return sum;
}

/// Threads form kTY x kTX (kTX = 16 along N) and thread (ty, tx) owns kTM x kTN
/// outputs. When kTM and kTN are multiples of 4 they come in 4 x 4 chunks:
/// rows ty * 4 + kTY * 4 * ci + (0..3), columns tx * 4 + 64 * cj + (0..3), so
/// that each thread reads 4 consecutive values of A and of B from shared
/// memory per vector load, and the 16 threads of a row store 64 consecutive
/// columns (4 per store with vector_width = 4); otherwise rows ty + kTY i and
/// columns tx + 16 j, one value per load and store.
static FailureOr<LaunchConfig> buildSimt(const Contraction &c,
                                         gpu::GPUFuncOp func,
                                         const sched::MatmulSchedule &s) {
  const int64_t kBM = s.blockM, kBN = s.blockN, kBK = s.blockK;
  // The thread grid kopt-tile's thread tiles describe (simtThreads).
  const SimtThreads grid = simtThreads(s);
  const int64_t kThreads = s.threads(), kTX = grid.tx, kTY = grid.ty;
  const int64_t kTM = kBM / kTY, kTN = kBN / kTX;
  const int64_t kChunk = grid.chunk;
  linalg::GenericOp mm = c.mm;
  Location loc = mm.getLoc();
  LaunchConfig cfg;
  cfg.block = {kThreads, 1, 1};

  OpBuilder b = OpBuilder::atBlockBegin(&func.front());
  Type eltA = cast<MemRefType>(c.memA.getType()).getElementType();
  Type eltB = cast<MemRefType>(c.memB.getType()).getElementType();
  // stages = 2: two buffers; the next K tile's elements are loaded into
  // registers before this tile is computed and stored into the other buffer
  // after it (one barrier per K tile).
  const bool kDouble = s.stages == 2;
  SmallVector<int64_t> shapeA = {kBK, kBM}, shapeB = {kBK, kBN};
  if (kDouble) {
    shapeA.insert(shapeA.begin(), 2);
    shapeB.insert(shapeB.begin(), 2);
  }
  Value smemA =
      func.addWorkgroupAttribution(workgroupBuffer(b, shapeA, eltA), loc);
  Value smemB =
      func.addWorkgroupAttribution(workgroupBuffer(b, shapeB, eltB), loc);
  if (kChunk > 1) // vector loads of 4 elements
    for (unsigned i = 0; i < 2; ++i)
      func.setWorkgroupAttributionAttr(i, LLVM::LLVMDialect::getAlignAttrName(),
                                       b.getI64IntegerAttr(16));

  Value tid = threadIdX(b, loc);
  Value tx = arith::RemUIOp::create(b, loc, tid, indexConst(b, loc, kTX));
  Value ty = arith::DivUIOp::create(b, loc, tid, indexConst(b, loc, kTX));
  Value rowBase = arith::MulIOp::create(b, loc, ty, indexConst(b, loc, kChunk));
  Value colBase = arith::MulIOp::create(b, loc, tx, indexConst(b, loc, kChunk));
  // Offsets of the thread's i-th row and j-th column in the block tile.
  auto rowOf = [&](int64_t i) -> Value {
    return arith::AddIOp::create(
        b, loc, rowBase,
        indexConst(b, loc, (i / kChunk) * kTY * kChunk + i % kChunk));
  };
  auto colOf = [&](int64_t j) -> Value {
    return arith::AddIOp::create(
        b, loc, colBase,
        indexConst(b, loc, (j / kChunk) * kTX * kChunk + j % kChunk));
  };
  FailureOr<TileOrigin> origin =
      tileOrigin(b, loc, c, kBM, kBN, kBK, s.swizzle, s.splitK, cfg);
  if (failed(origin))
    return failure();
  const TileOrigin &org = *origin;
  Value m0 = org.m0, n0 = org.n0;

  Type accType = mm.getBody()->getArguments().back().getType();
  Value zero = arith::ConstantOp::create(b, loc, b.getZeroAttr(accType));
  SmallVector<Value> accInit(kTM * kTN, zero);
  StageSpec a{c.memA, c.mapA, 0, kBM, kBK, c.M, c.K, smemA, false};
  StageSpec bs{c.memB, c.mapB, 1, kBN, kBK, c.N, c.K, smemB, false};
  // The first K element of K tile `kt` (an index).
  auto kOf = [&](Value kt) -> Value {
    Value k0 = arith::MulIOp::create(b, loc, kt, indexConst(b, loc, kBK));
    return org.kBase ? arith::AddIOp::create(b, loc, k0, org.kBase) : k0;
  };
  // The thread's elements of K tile `kt` of A and of B, loaded into
  // registers.
  using TileRegisters = std::array<SmallVector<TileElement>, 2>;
  const std::array<std::pair<const StageSpec *, Value>, 2> operands = {
      {{&a, m0}, {&bs, n0}}};
  auto loadTiles = [&](Value kt) -> FailureOr<TileRegisters> {
    Value k0 = kOf(kt);
    TileRegisters out;
    for (auto [i, operand] : llvm::enumerate(operands)) {
      auto [spec, base] = operand;
      for (int64_t r = 0, n = elementLoads(*spec, kThreads); r < n; ++r) {
        FailureOr<TileElement> e =
            loadTileElement(b, loc, mm, *spec, base, k0, tid, kThreads, r);
        if (failed(e))
          return failure();
        out[i].push_back(*e);
      }
    }
    return out;
  };
  auto storeTiles = [&](const TileRegisters &regs, Value buffer) {
    for (auto [i, operand] : llvm::enumerate(operands))
      for (const TileElement &e : regs[i])
        storeTileElement(b, loc, *operand.first, operand.first->smem, buffer,
                         e);
  };
  if (kDouble) {
    FailureOr<TileRegisters> first = loadTiles(indexConst(b, loc, 0));
    if (failed(first))
      return failure();
    storeTiles(*first, indexConst(b, loc, 0));
    gpu::BarrierOp::create(b, loc);
  }
  auto kLoop = scf::ForOp::create(b, loc, indexConst(b, loc, 0),
                                  indexConst(b, loc, org.kTiles),
                                  indexConst(b, loc, 1), accInit);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(kLoop.getBody());
    Value kt = kLoop.getInductionVar();
    // The buffer computed in this iteration (stages = 2), as leading indices.
    SmallVector<Value> buffer;
    FailureOr<TileRegisters> nextTile;
    if (kDouble) {
      buffer.push_back(
          arith::RemUIOp::create(b, loc, kt, indexConst(b, loc, 2)));
      // Tile kt + 1 (past the split's last tile: loads that nobody reads).
      nextTile =
          loadTiles(arith::AddIOp::create(b, loc, kt, indexConst(b, loc, 1)));
      if (failed(nextTile))
        return failure();
    } else {
      if (failed(stageOperandTiles(b, loc, mm, a, bs, m0, n0, kOf(kt), tid,
                                   kThreads)))
        return failure();
      gpu::BarrierOp::create(b, loc);
    }
    auto inner = scf::ForOp::create(
        b, loc, indexConst(b, loc, 0), indexConst(b, loc, kBK),
        indexConst(b, loc, 1), kLoop.getRegionIterArgs());
    {
      OpBuilder::InsertionGuard innerGuard(b);
      b.setInsertionPointToStart(inner.getBody());
      Value kk = inner.getInductionVar();
      // The thread's values of row kk of a staged tile: chunks of kChunk.
      auto readRow = [&](Value smem, Type elt, int64_t count,
                         function_ref<Value(int64_t)> offsetOf) {
        SmallVector<Value> vals;
        for (int64_t i = 0; i < count; i += kChunk) {
          SmallVector<Value> idx(buffer);
          idx.push_back(kk);
          idx.push_back(offsetOf(i));
          if (kChunk == 1) {
            vals.push_back(memref::LoadOp::create(b, loc, smem, idx));
            continue;
          }
          auto vecType = VectorType::get({kChunk}, elt);
          Value v = vector::LoadOp::create(
              b, loc, vecType, smem, idx,
              /*nontemporal=*/false,
              llvm::MaybeAlign(kChunk * elt.getIntOrFloatBitWidth() / 8));
          for (int64_t e = 0; e < kChunk; ++e)
            vals.push_back(vector::ExtractOp::create(b, loc, v, e));
        }
        return vals;
      };
      SmallVector<Value> av = readRow(smemA, eltA, kTM, rowOf);
      SmallVector<Value> bv = readRow(smemB, eltB, kTN, colOf);
      SmallVector<Value> next;
      for (int64_t i = 0; i < kTM; ++i)
        for (int64_t j = 0; j < kTN; ++j)
          next.push_back(
              multiplyAccumulate(b, loc, mm, av[i], bv[j],
                                 inner.getRegionIterArgs()[i * kTN + j]));
      scf::YieldOp::create(b, loc, next);
    }
    if (kDouble)
      storeTiles(*nextTile, arith::SubIOp::create(b, loc, indexConst(b, loc, 1),
                                                  buffer.front()));
    gpu::BarrierOp::create(b, loc);
    scf::YieldOp::create(b, loc, inner.getResults());
  }

  // validate() admits vector_width = 4 only with 4-column chunks and N % 4 ==
  // 0.
  const int64_t kVec = s.vectorWidth;
  emitEpilogue(b, loc, c, org, s.splitK, EpilogueThreads{tid, s.threads()},
               /*staged=*/nullptr, [&](OutputFn emit) {
                 for (int64_t i = 0; i < kTM; ++i) {
                   Value m = arith::AddIOp::create(b, loc, m0, rowOf(i));
                   for (int64_t j = 0; j < kTN; j += kVec) {
                     Value n = arith::AddIOp::create(b, loc, n0, colOf(j));
                     SmallVector<Value> vs;
                     for (int64_t v = 0; v < kVec; ++v)
                       vs.push_back(kLoop.getResult(i * kTN + j + v));
                     emit(vs, m, n);
                   }
                 }
               });
  gpu::ReturnOp::create(b, loc);
  return cfg;
}

//===----------------------------------------------------------------------===//
// GEMV schedule (small M): lanes split K
//===----------------------------------------------------------------------===//

/// instruction = gemv, for small M with both operands contiguous along K (a
/// Linear layer's activations times its [N, K] weight): block_n output
/// columns per block, warp_n per warp, min(block_m, M) rows per block. Lane l
/// of a warp reads, per K step of 32 * block_k, the block_k elements at
/// k0 + l * block_k of its warp's warp_n B rows and of the block's A rows as
/// 16-byte loads straight from global memory (A rows are shared by all warps
/// and stay in L1), multiply-accumulates them into min(block_m, M) x warp_n
/// f32 registers, and after the K loop the warp adds its lanes' sums with a
/// shuffle butterfly; lane (r * warp_n + j) % 32 stores output (r, j). Loads
/// past K read zeros (selected), rows past M or N read the last row (clamped)
/// and are not stored. With split_k S, split s runs K steps [s P, (s + 1) P)
/// and the split-K epilogue adds the partials. No shared memory: the kernel is
/// bound by the bandwidth of reading B once.
static FailureOr<LaunchConfig> buildGemv(const Contraction &c,
                                         gpu::GPUFuncOp func,
                                         const sched::MatmulSchedule &s) {
  linalg::GenericOp mm = c.mm;
  Location loc = mm.getLoc();
  MLIRContext *ctx = func.getContext();
  // validate() admitted only K-contiguous operands: A (m, k), B (n, k).
  auto d = [&](unsigned i) { return getAffineDimExpr(i, ctx); };
  if (c.mapA != AffineMap::get(3, 0, {d(0), d(2)}, ctx) ||
      c.mapB != AffineMap::get(3, 0, {d(1), d(2)}, ctx))
    return mm.emitOpError("gemv needs A indexed (m, k) and B indexed (n, k)");
  Type elt = cast<MemRefType>(c.memA.getType()).getElementType();
  const int64_t kRows = std::min(s.blockM, c.M), kCols = s.warpN;
  const int64_t kThreads = s.threads();
  const int64_t kVec = 128 / elt.getIntOrFloatBitWidth(); // per 16 bytes
  const int64_t kLoads = s.blockK / kVec, kStep = 32 * s.blockK;
  LaunchConfig cfg;
  cfg.block = {kThreads, 1, 1};

  OpBuilder b = OpBuilder::atBlockBegin(&func.front());
  Value tid = threadIdX(b, loc);
  Value lane = arith::RemUIOp::create(b, loc, tid, indexConst(b, loc, 32));
  Value warp = arith::DivUIOp::create(b, loc, tid, indexConst(b, loc, 32));
  FailureOr<TileOrigin> origin = tileOrigin(b, loc, c, s.blockM, s.blockN,
                                            kStep, s.swizzle, s.splitK, cfg);
  if (failed(origin))
    return failure();
  const TileOrigin &org = *origin;
  Value colBase = arith::AddIOp::create(
      b, loc, org.n0,
      arith::MulIOp::create(b, loc, warp, indexConst(b, loc, kCols)));
  // Operand rows, clamped inside the operands.
  auto clampedRows = [&](Value base, int64_t count, int64_t size) {
    SmallVector<Value> rows;
    for (int64_t r = 0; r < count; ++r) {
      Value row = arith::AddIOp::create(b, loc, base, indexConst(b, loc, r));
      rows.push_back(
          arith::MinUIOp::create(b, loc, row, indexConst(b, loc, size - 1)));
    }
    return rows;
  };
  SmallVector<Value> aRows = clampedRows(org.m0, kRows, c.M);
  SmallVector<Value> bRows = clampedRows(colBase, kCols, c.N);
  Value laneK =
      arith::MulIOp::create(b, loc, lane, indexConst(b, loc, s.blockK));
  if (org.kBase)
    laneK = arith::AddIOp::create(b, loc, org.kBase, laneK);

  Value zero = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0));
  SmallVector<Value> accInit(kRows * kCols, zero);
  auto vecType = VectorType::get({kVec}, elt);
  Value zeroVec = arith::ConstantOp::create(
      b, loc, vecType, DenseElementsAttr::get(vecType, b.getZeroAttr(elt)));
  auto kLoop = countedLoop(b, loc, org.kTiles, accInit);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(kLoop.getBody());
    Value k0 = stridedIndex(b, loc, kLoop.getInductionVar(), kStep, laneK);
    // All of the step's loads first (memory-level parallelism), then the
    // multiply-accumulates.
    SmallVector<Value> aVecs, bVecs;
    for (int64_t l = 0; l < kLoads; ++l) {
      Value k = arith::AddIOp::create(b, loc, k0, indexConst(b, loc, l * kVec));
      Value inK = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, k,
                                        indexConst(b, loc, c.K));
      Value kc = arith::SelectOp::create(b, loc, inK, k, indexConst(b, loc, 0));
      auto load = [&](Value mem, Value row) -> Value {
        Value v =
            vector::LoadOp::create(b, loc, vecType, mem, ValueRange{row, kc},
                                   /*nontemporal=*/false, llvm::MaybeAlign(16));
        return arith::SelectOp::create(b, loc, inK, v, zeroVec);
      };
      for (Value row : bRows)
        bVecs.push_back(load(c.memB, row));
      for (Value row : aRows)
        aVecs.push_back(load(c.memA, row));
    }
    SmallVector<Value> acc(kLoop.getRegionIterArgs());
    for (int64_t l = 0; l < kLoads; ++l)
      for (int64_t e = 0; e < kVec; ++e)
        for (int64_t r = 0; r < kRows; ++r) {
          Value av = vector::ExtractOp::create(b, loc, aVecs[l * kRows + r], e);
          for (int64_t j = 0; j < kCols; ++j) {
            Value bv =
                vector::ExtractOp::create(b, loc, bVecs[l * kCols + j], e);
            Value &a = acc[r * kCols + j];
            a = multiplyAccumulate(b, loc, mm, av, bv, a);
          }
        }
    scf::YieldOp::create(b, loc, acc);
  }
  // Every lane of the warp gets each output's sum.
  SmallVector<Value> sums;
  for (Value v : kLoop.getResults())
    sums.push_back(warpAllReduce(b, loc, v, [&](Value x, Value y) -> Value {
      return arith::AddFOp::create(b, loc, x, y);
    }));
  emitEpilogue(
      b, loc, c, org, s.splitK, EpilogueThreads{tid, kThreads},
      /*staged=*/nullptr, [&](OutputFn emit) {
        for (int64_t r = 0; r < kRows; ++r)
          for (int64_t j = 0; j < kCols; ++j) {
            int64_t i = r * kCols + j;
            Value mine =
                arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, lane,
                                      indexConst(b, loc, i % 32));
            auto ifOp = scf::IfOp::create(b, loc, mine,
                                          /*withElseRegion=*/false);
            OpBuilder::InsertionGuard guard(b);
            b.setInsertionPointToStart(ifOp.thenBlock());
            Value m =
                arith::AddIOp::create(b, loc, org.m0, indexConst(b, loc, r));
            Value n =
                arith::AddIOp::create(b, loc, colBase, indexConst(b, loc, j));
            emit({sums[i]}, m, n);
          }
      });
  gpu::ReturnOp::create(b, loc);
  return cfg;
}

//===----------------------------------------------------------------------===//
// Tensor-core schedule (mma.sync m16n8k16)
//===----------------------------------------------------------------------===//

/// The tile shape of the tensor-core schedule. Warps form a warpsM x warpsN
/// grid; each owns a warp_m x warp_n tile of 16 x 8 mma tiles.
struct MmaTiles {
  int64_t bm, bn, bk, pad = 8, warpsM, warpsN, stages;
  explicit MmaTiles(const sched::MatmulSchedule &s)
      : bm(s.blockM), bn(s.blockN), bk(s.blockK), warpsM(s.blockM / s.warpM),
        warpsN(s.blockN / s.warpN), stages(s.stages) {}
  int64_t warpTileM() const { return bm / warpsM; }
  int64_t warpTileN() const { return bn / warpsN; }
  int64_t mi() const { return warpTileM() / 16; }
  int64_t ni() const { return warpTileN() / 8; }
  int64_t threads() const { return 32 * warpsM * warpsN; }
};

/// Starts the staged epilogue of the block tile at (m0, n0), its tile at byte
/// `offset` of the dynamic shared memory `smem`: once no warp reads that
/// memory any more (a barrier of the epilogue's threads; a mainloop whose
/// buffers it reuses has no copy in flight after it: kopt.mainloop's drain;
/// with tma_store, the TMA unit has read the previous tile's boxes).
static StagedEpilogue beginStagedEpilogue(OpBuilder &b, Location loc,
                                          const Contraction &c,
                                          const sched::MatmulSchedule &s,
                                          Value smem, int64_t offset, Value m0,
                                          Value n0, const EpilogueThreads &et) {
  if (s.tmaStore)
    waitForTmaStoreReads(b, loc);
  et.barrier(b, loc);
  Type elt = cast<MemRefType>(c.out.getType()).getElementType();
  StagedEpilogue st;
  st.m0 = m0, st.n0 = n0;
  st.bm = s.blockM, st.bn = s.blockN, st.width = s.vectorWidth;
  if (s.tmaStore) {
    st.tensorMap = c.tensorMapC;
    int64_t eltBytes = elt.getIntOrFloatBitWidth() / 8;
    st.swizzleBytes = sched::tmaStoreSwizzleBytes(s.blockN * eltBytes);
    st.boxColumns = st.swizzleBytes / eltBytes;
    // wgmma lanes hold columns 2 (l % 4) (+ 1) + 8 j of their warpgroup's
    // warp_n columns (buildWgmma's storeTile).
    st.lanesAligned = s.instruction == sched::Instruction::Wgmma &&
                      s.warpN % st.boxColumns == 0;
    st.boxRows = sched::tmaBoxRows(s.blockM, c.M);
    // The tile's byte offset plus an opaque zero (inline assembly with side
    // effects, once per tile): the lanes' swizzled store addresses (up to 8
    // XOR patterns per lane) are loop-invariant in a persistent block's tile
    // loop, and LLVM would hoist them out of it, keeping them live through
    // the K loop (measured with 128 x 256 tiles: 64 addresses, 168
    // registers and spills instead of 154).
    Value zero =
        LLVM::InlineAsmOp::create(
            b, loc, b.getI32Type(), ValueRange{}, "mov.u32 $0, 0;", "=r",
            /*has_side_effects=*/true, /*is_align_stack=*/false,
            LLVM::tailcallkind::TailCallKind::None, LLVM::AsmDialectAttr(),
            ArrayAttr())
            .getResult(0);
    Value at = arith::AddIOp::create(
        b, loc, indexConst(b, loc, offset),
        arith::IndexCastUIOp::create(b, loc, b.getIndexType(), zero));
    st.tile =
        sharedView(b, loc, smem, at,
                   {s.blockN / st.boxColumns, s.blockM, st.boxColumns}, elt);
  } else {
    st.tile = sharedView(b, loc, smem, offset, {s.blockM, s.blockN + 8}, elt);
  }
  return st;
}

/// One register of an ldmatrix fragment as mma.sync takes it: vector<2xf16> for
/// f16, an i32 holding two bf16 for bf16.
static Value fragmentRegister(OpBuilder &b, Location loc, Value frag,
                              int64_t i) {
  Value pair = vector::ExtractOp::create(b, loc, frag, i);
  auto pairType = cast<VectorType>(pair.getType());
  if (pairType.getElementType().isF16())
    return pair;
  Value packed = vector::BitCastOp::create(
      b, loc, VectorType::get({1}, b.getI32Type()), pair);
  return vector::ExtractOp::create(b, loc, packed, 0);
}

/// A kopt.mainloop over the block's K tiles (kopt-pipeline stages them),
/// `body` building one K tile's compute on the staged tiles into `acc`.
/// Returns the op; its results are the final accumulators.
static MainloopOp createMainloop(
    OpBuilder &b, Location loc, const Contraction &c,
    const sched::MatmulSchedule &s, Value m0, Value n0, Value kBegin,
    Value kTiles, ValueRange init, ArrayRef<int64_t> tileShapeA,
    ArrayRef<int64_t> tileShapeB, std::optional<int64_t> barrierOffset,
    bool drain,
    function_ref<SmallVector<Value>(Value, Value, ValueRange)> body) {
  MLIRContext *ctx = b.getContext();
  Type elt = cast<MemRefType>(c.memA.getType()).getElementType();
  SmallVector<Value> maps;
  if (c.tensorMapA)
    maps = {c.tensorMapA, c.tensorMapB};
  auto op = MainloopOp::create(
      b, loc, ValueRange(init).getTypes(), c.memA, c.memB, maps, m0, n0, kBegin,
      kTiles, init, ScheduleAttr::get(ctx, s),
      b.getAffineMapArrayAttr({c.mapA, c.mapB}),
      barrierOffset ? b.getI64IntegerAttr(*barrierOffset) : IntegerAttr(),
      drain ? b.getUnitAttr() : UnitAttr());
  auto space = b.getI64IntegerAttr(3);
  SmallVector<Type> argTypes = {
      MemRefType::get(tileShapeA, elt, MemRefLayoutAttrInterface(), space),
      MemRefType::get(tileShapeB, elt, MemRefLayoutAttrInterface(), space)};
  llvm::append_range(argTypes, ValueRange(init).getTypes());
  OpBuilder::InsertionGuard guard(b);
  Block *block = b.createBlock(&op.getBody(), {}, argTypes,
                               SmallVector<Location>(argTypes.size(), loc));
  SmallVector<Value> acc = body(block->getArgument(0), block->getArgument(1),
                                block->getArguments().drop_front(2));
  YieldOp::create(b, loc, acc);
  return op;
}

static FailureOr<LaunchConfig> buildMma(const Contraction &c,
                                        gpu::GPUFuncOp func,
                                        const sched::MatmulSchedule &s) {
  const MmaTiles t(s);
  const int64_t kBM = t.bm, kBN = t.bn, kBK = t.bk, kPad = t.pad;
  const int64_t kWarpsN = t.warpsN, kWarpTileM = t.warpTileM(),
                kWarpTileN = t.warpTileN(), kMI = t.mi(), kNI = t.ni(),
                kThreads = t.threads();
  linalg::GenericOp mm = c.mm;
  Location loc = mm.getLoc();
  LaunchConfig cfg;
  cfg.block = {kThreads, 1, 1};

  OpBuilder b = OpBuilder::atBlockBegin(&func.front());
  Type elt = cast<MemRefType>(c.memA.getType()).getElementType();
  // kopt-pipeline puts the mainloop's buffers from byte 0 of the dynamic
  // shared memory: tiles of [BM][BK + 8] and [BN][BK + 8] (K contiguous; the
  // 8-element pad spreads ldmatrix rows over the banks), A's then B's; the
  // staged epilogue tile reuses them.
  cfg.dynamicSharedBytes = sched::sharedBytes(s, workloadOf(c));
  Value smem = dynamicSharedMemory(b, loc, func);

  Value tid = threadIdX(b, loc);
  Value lane = arith::RemUIOp::create(b, loc, tid, indexConst(b, loc, 32));
  Value warp = arith::DivUIOp::create(b, loc, tid, indexConst(b, loc, 32));
  Value warpM =
      arith::DivUIOp::create(b, loc, warp, indexConst(b, loc, kWarpsN));
  Value warpN =
      arith::RemUIOp::create(b, loc, warp, indexConst(b, loc, kWarpsN));
  Value warpRow =
      arith::MulIOp::create(b, loc, warpM, indexConst(b, loc, kWarpTileM));
  Value warpCol =
      arith::MulIOp::create(b, loc, warpN, indexConst(b, loc, kWarpTileN));
  FailureOr<TileOrigin> origin =
      tileOrigin(b, loc, c, kBM, kBN, kBK, s.swizzle, s.splitK, cfg);
  if (failed(origin))
    return failure();
  const TileOrigin &org = *origin;
  Value m0 = org.m0, n0 = org.n0;

  // ldmatrix row addresses: x4 for A (lane l: row l % 16, column 8 (l / 16)),
  // x2 for B stored [n][k] (lane l: row l % 8, column 8 ((l / 8) % 2)).
  Value aRow = arith::RemUIOp::create(b, loc, lane, indexConst(b, loc, 16));
  Value aCol = arith::MulIOp::create(
      b, loc, arith::DivUIOp::create(b, loc, lane, indexConst(b, loc, 16)),
      indexConst(b, loc, 8));
  Value bRow = arith::RemUIOp::create(b, loc, lane, indexConst(b, loc, 8));
  Value bCol = arith::MulIOp::create(
      b, loc,
      arith::RemUIOp::create(
          b, loc, arith::DivUIOp::create(b, loc, lane, indexConst(b, loc, 8)),
          indexConst(b, loc, 2)),
      indexConst(b, loc, 8));

  Value zero = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0));
  const int64_t kAccs = kMI * kNI * 4;
  SmallVector<Value> accInit(kAccs, zero);
  // One K tile: ldmatrix fragments from the staged tiles, mma.sync into the
  // accumulators.
  auto computeTile = [&](Value smemA, Value smemB,
                         ValueRange accIn) -> SmallVector<Value> {
    SmallVector<Value> acc(accIn);
    auto f32 = b.getF32Type();
    auto resultType =
        LLVM::LLVMStructType::getLiteral(b.getContext(), {f32, f32, f32, f32});
    auto fragA = VectorType::get({4, 2}, elt);
    auto fragB = VectorType::get({2, 2}, elt);
    NVVM::MMATypes ptxType =
        elt.isF16() ? NVVM::MMATypes::f16 : NVVM::MMATypes::bf16;
    for (int64_t ks = 0; ks < kBK / 16; ++ks) {
      Value kOff = indexConst(b, loc, ks * 16);
      // One ldmatrix: this lane's row (warpBase + laneRow + tileOffset) and
      // column (laneCol + kOff) of the staged tile `smem`.
      auto ldmatrix = [&](Value smem, VectorType type, Value warpBase,
                          Value laneRow, Value laneCol, int64_t tileOffset,
                          int64_t tiles) {
        Value row = arith::AddIOp::create(
            b, loc, warpBase,
            arith::AddIOp::create(b, loc, laneRow,
                                  indexConst(b, loc, tileOffset)));
        Value col = arith::AddIOp::create(b, loc, laneCol, kOff);
        return nvgpu::LdMatrixOp::create(b, loc, type, smem,
                                         ValueRange{row, col},
                                         /*transpose=*/false, tiles)
            .getResult();
      };
      SmallVector<Value> aFrag(kMI), bFrag(kNI);
      for (int64_t mi = 0; mi < kMI; ++mi)
        aFrag[mi] = ldmatrix(smemA, fragA, warpRow, aRow, aCol, mi * 16, 4);
      for (int64_t ni = 0; ni < kNI; ++ni)
        bFrag[ni] = ldmatrix(smemB, fragB, warpCol, bRow, bCol, ni * 8, 2);
      for (int64_t mi = 0; mi < kMI; ++mi) {
        SmallVector<Value> aRegs;
        for (int64_t r = 0; r < 4; ++r)
          aRegs.push_back(fragmentRegister(b, loc, aFrag[mi], r));
        for (int64_t ni = 0; ni < kNI; ++ni) {
          SmallVector<Value> bRegs = {fragmentRegister(b, loc, bFrag[ni], 0),
                                      fragmentRegister(b, loc, bFrag[ni], 1)};
          int64_t base = (mi * kNI + ni) * 4;
          SmallVector<Value> cRegs(acc.begin() + base, acc.begin() + base + 4);
          Value d = NVVM::MmaOp::create(
              b, loc, resultType, aRegs, bRegs, cRegs,
              /*shape=*/ArrayRef<int64_t>{16, 8, 16},
              /*b1Op=*/std::nullopt, /*intOverflow=*/std::nullopt,
              /*multiplicandPtxTypes=*/
              std::array<NVVM::MMATypes, 2>{ptxType, ptxType},
              /*multiplicandLayouts=*/
              std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row,
                                             NVVM::MMALayout::col});
          for (int64_t r = 0; r < 4; ++r)
            acc[base + r] = LLVM::ExtractValueOp::create(b, loc, d, r);
        }
      }
    }
    return acc;
  };
  // The staged epilogue reuses the buffers: no copy may be in flight after
  // the mainloop (drain).
  bool staged = sched::stagedEpilogue(s);
  MainloopOp kLoop = createMainloop(
      b, loc, c, s, m0, n0, org.kBase, indexConst(b, loc, org.kTiles), accInit,
      {kBM, kBK + kPad}, {kBN, kBK + kPad}, std::nullopt, staged, computeTile);

  // Epilogue: lane l holds rows l/4 (+ 8) and columns 2 (l % 4) (+ 1) of each
  // 16 x 8 accumulator tile.
  Value groupRow = arith::DivUIOp::create(b, loc, lane, indexConst(b, loc, 4));
  Value groupCol = arith::MulIOp::create(
      b, loc, arith::RemUIOp::create(b, loc, lane, indexConst(b, loc, 4)),
      indexConst(b, loc, 2));
  Value rowBase = arith::AddIOp::create(
      b, loc, arith::AddIOp::create(b, loc, m0, warpRow), groupRow);
  Value colBase = arith::AddIOp::create(
      b, loc, arith::AddIOp::create(b, loc, n0, warpCol), groupCol);
  std::optional<StagedEpilogue> stagedTile;
  if (staged)
    stagedTile = beginStagedEpilogue(b, loc, c, s, smem, 0, m0, n0,
                                     EpilogueThreads{tid, kThreads});
  // Registers r and r + 1 are adjacent columns: with vector_width >= 2 they
  // go out (or into the staged tile) as one store.
  emitEpilogue(b, loc, c, org, s.splitK, EpilogueThreads{tid, kThreads},
               stagedTile ? &*stagedTile : nullptr, [&](OutputFn emit) {
                 for (int64_t mi = 0; mi < kMI; ++mi)
                   for (int64_t ni = 0; ni < kNI; ++ni)
                     forEachAccumulatorOfQuad(
                         b, loc, rowBase, mi * 16, colBase, ni * 8,
                         [&](int64_t r) {
                           return kLoop.getResult((mi * kNI + ni) * 4 + r);
                         },
                         std::min<int64_t>(s.vectorWidth, 2), emit);
               });
  gpu::ReturnOp::create(b, loc);
  return cfg;
}

//===----------------------------------------------------------------------===//
// Warpgroup schedule (wgmma, sm_90a)
//===----------------------------------------------------------------------===//

/// The shared-memory matrix descriptor of a K-major 16-bit tile stored in
/// 128-byte swizzled rows of 64 elements, starting at shared address `addr`
/// (PTX ISA, "Matrix Descriptor Format" of wgmma): bits 0-13 the start
/// address >> 4, bits 16-29 the leading byte offset >> 4 (unused for swizzled
/// K-major layouts: 1), bits 32-45 the stride byte offset >> 4 (1024 bytes
/// between groups of 8 rows: 64), bits 62-63 the swizzle mode (1: 128 bytes).
/// The tile must be 1024-byte aligned; stepping K by 16 elements adds 32 bytes
/// to the start address (the swizzle applies to the absolute address bits).
static Value wgmmaDescriptor(OpBuilder &b, Location loc, Value addr) {
  auto i64 = b.getI64Type();
  auto c = [&](uint64_t v) -> Value {
    return arith::ConstantIntOp::create(b, loc, i64, static_cast<int64_t>(v));
  };
  Value start = arith::ShRUIOp::create(
      b, loc, arith::AndIOp::create(b, loc, addr, c(0x3FFFF)), c(4));
  uint64_t fixed =
      (uint64_t(1) << 16) | (uint64_t(1024 >> 4) << 32) | (uint64_t(1) << 62);
  return arith::OrIOp::create(b, loc, start, c(fixed));
}

/// wgmma m64nNk16 with f32 accumulation from two shared-memory descriptors;
/// the schedule's warp tile is a warpgroup's (warp_m / 64 instructions along
/// M, N = warp_n), its block tile (block_m / warp_m) x (block_n / warp_n)
/// warpgroups. The mainloop's staged tiles are [block_k / 64][rows][64] in
/// the 128-byte swizzled layout; each K step of 16 issues warp_m / 64
/// wgmma per warpgroup (asynchronous: kopt-pipeline commits and waits for
/// them). In a persistent grid the block loops over its tiles (bid, bid +
/// grid, ...), a mainloop and an epilogue each.
static FailureOr<LaunchConfig> buildWgmma(const Contraction &c,
                                          gpu::GPUFuncOp func,
                                          const sched::MatmulSchedule &s,
                                          int64_t persistentBlocks) {
  const int64_t kBM = s.blockM, kBN = s.blockN, kBK = s.blockK,
                kStages = s.stages, kWarpM = s.warpM, kWarpN = s.warpN;
  const int64_t kGroupsN = kBN / kWarpN, kMTiles = kWarpM / 64;
  // The warpgroups of the warp grid (with warp_specialize, the producer warp
  // kopt-pipeline adds follows them: threads kThreads .. kThreads + 31).
  const int64_t kThreads = 32 * s.mathWarps();
  const bool kSpecialized = s.warpSpecialize;
  const int64_t kAccs = kWarpN / 2; // f32 per thread per m64 instruction
  linalg::GenericOp mm = c.mm;
  Location loc = mm.getLoc();
  MLIRContext *ctx = func.getContext();
  LaunchConfig cfg;
  cfg.block = {s.threads(), 1, 1};

  OpBuilder b = OpBuilder::atBlockBegin(&func.front());
  Type elt = cast<MemRefType>(c.memA.getType()).getElementType();
  // 128-byte rows of 64 16-bit or 32 f32 (TF32) elements; each wgmma K step
  // reads 32 bytes of them (k16 for 16-bit operands, k8 for TF32).
  const int64_t kEltBytes = elt.getIntOrFloatBitWidth() / 8;
  const int64_t kRow = 128 / kEltBytes, kStep = 32 / kEltBytes;
  // Shared memory: the mainloop's buffers (A's then B's, from byte 0), in a
  // persistent grid the staged epilogue tile after them (else over them),
  // TMA's mbarriers last.
  const int64_t bytesA = kStages * kBM * kBK * kEltBytes,
                bytesB = kStages * kBN * kBK * kEltBytes;
  Value smem = dynamicSharedMemory(b, loc, func);
  cfg.dynamicSharedBytes = sched::sharedBytes(s, workloadOf(c));
  std::optional<int64_t> barrierOffset;
  if (s.copy == sched::CopyEngine::TMA)
    barrierOffset = cfg.dynamicSharedBytes - sched::barrierSharedBytes(s);

  auto i64 = b.getI64Type();
  auto toI64 = [&](Value index) -> Value {
    return arith::IndexCastUIOp::create(b, loc, i64, index);
  };
  auto cI64 = [&](int64_t v) -> Value {
    return arith::ConstantIntOp::create(b, loc, i64, v);
  };

  Value tid = threadIdX(b, loc);
  Value lane = arith::RemUIOp::create(b, loc, tid, indexConst(b, loc, 32));
  Value warp = arith::DivUIOp::create(b, loc, tid, indexConst(b, loc, 32));
  Value group = arith::DivUIOp::create(b, loc, tid, indexConst(b, loc, 128));
  Value warpInGroup =
      arith::RemUIOp::create(b, loc, warp, indexConst(b, loc, 4));
  Value groupRow = arith::MulIOp::create(
      b, loc,
      arith::DivUIOp::create(b, loc, group, indexConst(b, loc, kGroupsN)),
      indexConst(b, loc, kWarpM));
  Value groupCol = arith::MulIOp::create(
      b, loc,
      arith::RemUIOp::create(b, loc, group, indexConst(b, loc, kGroupsN)),
      indexConst(b, loc, kWarpN));
  const EpilogueThreads epilogueThreads{tid, kThreads, !kSpecialized};
  auto f32 = b.getF32Type();
  auto accType =
      LLVM::LLVMStructType::getLiteral(ctx, SmallVector<Type>(kAccs, f32));
  // The wgmma of one K tile staged in `tileA` / `tileB`: block_k / 16 K
  // steps, warp_m / 64 instructions each, accumulating into `accIn`; the
  // descriptors start at this warpgroup's rows (128 bytes per row).
  auto computeTile = [&](Value tileA, Value tileB,
                         ValueRange accIn) -> SmallVector<Value> {
    Value rowBytesA = arith::MulIOp::create(b, loc, toI64(groupRow), cI64(128));
    Value rowBytesB = arith::MulIOp::create(b, loc, toI64(groupCol), cI64(128));
    Value stageA = arith::AddIOp::create(
        b, loc,
        toI64(memref::ExtractAlignedPointerAsIndexOp::create(b, loc, tileA)),
        rowBytesA);
    Value stageB = arith::AddIOp::create(
        b, loc,
        toI64(memref::ExtractAlignedPointerAsIndexOp::create(b, loc, tileB)),
        rowBytesB);
    NVVM::WgmmaFenceAlignedOp::create(b, loc);
    SmallVector<Value> acc(accIn);
    NVVM::WGMMATypes type = elt.isF16()    ? NVVM::WGMMATypes::f16
                            : elt.isBF16() ? NVVM::WGMMATypes::bf16
                                           : NVVM::WGMMATypes::tf32;
    for (int64_t ks = 0; ks < kBK / kStep; ++ks) {
      // K step ks: sub-tile ks / 4, 32 bytes per step inside its rows.
      int64_t sub = ks / 4, inRow = (ks % 4) * 32;
      Value descB = wgmmaDescriptor(
          b, loc,
          arith::AddIOp::create(b, loc, stageB, cI64(sub * kBN * 128 + inRow)));
      for (int64_t t = 0; t < kMTiles; ++t) {
        Value descA = wgmmaDescriptor(
            b, loc,
            arith::AddIOp::create(
                b, loc, stageA, cI64(sub * kBM * 128 + t * 64 * 128 + inRow)));
        acc[t] = NVVM::WgmmaMmaAsyncOp::create(
            b, loc, accType, acc[t], descA, descB,
            NVVM::MMAShapeAttr::get(ctx, 64, kWarpN, kStep),
            NVVM::WGMMATypesAttr::get(ctx, type),
            NVVM::WGMMATypesAttr::get(ctx, type),
            NVVM::WGMMATypesAttr::get(ctx, NVVM::WGMMATypes::f32),
            NVVM::WGMMAScaleOutAttr::get(ctx, NVVM::WGMMAScaleOut::one),
            NVVM::WGMMAScaleInAttr::get(ctx, NVVM::WGMMAScaleIn::one),
            NVVM::WGMMAScaleInAttr::get(ctx, NVVM::WGMMAScaleIn::one),
            NVVM::MMALayoutAttr::get(ctx, NVVM::MMALayout::row),
            NVVM::MMALayoutAttr::get(ctx, NVVM::MMALayout::col),
            NVVM::MMAIntOverflowAttr());
      }
    }
    return acc;
  };
  // The epilogue of the tile at (m0, n0) (PTX ISA, wgmma .m64nNk16
  // accumulator layout): warp w of the warpgroup holds rows 16 w + l / 4
  // (+ 8), lane l columns 8 j + 2 (l % 4) (+ 1) of every 8-column chunk j,
  // registers 4 j + {0, 1, 2, 3}.
  auto storeTile = [&](Value m0, Value n0, const TileOrigin &org,
                       function_ref<Value(int64_t)> accOf) {
    Value laneRow = arith::AddIOp::create(
        b, loc,
        arith::MulIOp::create(b, loc, warpInGroup, indexConst(b, loc, 16)),
        arith::DivUIOp::create(b, loc, lane, indexConst(b, loc, 4)));
    Value laneCol = arith::MulIOp::create(
        b, loc, arith::RemUIOp::create(b, loc, lane, indexConst(b, loc, 4)),
        indexConst(b, loc, 2));
    Value rowBase = arith::AddIOp::create(
        b, loc, arith::AddIOp::create(b, loc, m0, groupRow), laneRow);
    Value colBase = arith::AddIOp::create(
        b, loc, arith::AddIOp::create(b, loc, n0, groupCol), laneCol);
    // A staged epilogue waits until no warp reads the tile's memory: the
    // mainloop's buffers (drained) or, in a persistent grid, the previous
    // tile's staged tile (the next tile's copies stay in flight).
    std::optional<StagedEpilogue> staged;
    if (sched::stagedEpilogue(s))
      staged = beginStagedEpilogue(b, loc, c, s, smem,
                                   s.persistent ? bytesA + bytesB : 0, m0, n0,
                                   epilogueThreads);
    emitEpilogue(b, loc, c, org, s.splitK, epilogueThreads,
                 staged ? &*staged : nullptr, [&](OutputFn emit) {
                   for (int64_t t = 0; t < kMTiles; ++t) {
                     Value acc = accOf(t);
                     for (int64_t j = 0; j < kWarpN / 8; ++j)
                       forEachAccumulatorOfQuad(
                           b, loc, rowBase, t * 64, colBase, j * 8,
                           [&](int64_t r) -> Value {
                             return LLVM::ExtractValueOp::create(b, loc, acc,
                                                                 4 * j + r);
                           },
                           std::min<int64_t>(s.vectorWidth, 2), emit);
                   }
                 });
  };
  auto zeroAccumulators = [&]() {
    Value zero = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0));
    SmallVector<Value> accInit;
    for (int64_t t = 0; t < kMTiles; ++t) {
      Value acc = LLVM::UndefOp::create(b, loc, accType);
      for (int64_t i = 0; i < kAccs; ++i)
        acc = LLVM::InsertValueOp::create(b, loc, acc, zero, i);
      accInit.push_back(acc);
    }
    return accInit;
  };
  // The mainloop of the tile at (m0, n0) from zero accumulators.
  auto mainloop = [&](Value m0, Value n0, Value kBegin, int64_t kTiles) {
    SmallVector<Value> zeros = zeroAccumulators();
    return createMainloop(
        b, loc, c, s, m0, n0, kBegin, indexConst(b, loc, kTiles), zeros,
        {kBK / kRow, kBM, kRow}, {kBK / kRow, kBN, kRow}, barrierOffset,
        /*drain=*/!s.persistent && sched::stagedEpilogue(s), computeTile);
  };

  if (s.persistent) {
    // Persistent grid: `persistentBlocks` blocks (all resident at once)
    // walk the tiles bid, bid + grid, ... in rasterization order
    // (kopt-pipeline runs the loads of the next tile during this one's last
    // K tiles and its epilogue).
    int64_t tilesM = llvm::divideCeil(c.M, kBM),
            tilesN = llvm::divideCeil(c.N, kBN);
    int64_t tiles = tilesM * tilesN, kTiles = llvm::divideCeil(c.K, kBK);
    int64_t grid = std::min(tiles, persistentBlocks);
    cfg.grid = {grid, 1, 1};
    Value bid = blockIdX(b, loc);
    auto idx = [&](int64_t v) { return indexConst(b, loc, v); };
    // ceil((tiles - bid) / grid) tiles for this block.
    Value myTiles = arith::DivUIOp::create(
        b, loc,
        arith::AddIOp::create(b, loc,
                              arith::SubIOp::create(b, loc, idx(tiles), bid),
                              idx(grid - 1)),
        idx(grid));
    auto tileLoop = scf::ForOp::create(b, loc, idx(0), myTiles, idx(1));
    b.setInsertionPointToStart(tileLoop.getBody());
    Value tile = arith::AddIOp::create(
        b, loc, bid,
        arith::MulIOp::create(b, loc, tileLoop.getInductionVar(), idx(grid)));
    auto [m0, n0] = tileCoordinates(b, loc, c, kBM, kBN, s.swizzle, tile);
    MainloopOp kLoop = mainloop(m0, n0, Value(), kTiles);
    TileOrigin org;
    org.m0 = m0, org.n0 = n0, org.tile = tile;
    storeTile(m0, n0, org, [&](int64_t t) { return kLoop.getResult(t); });
    b.setInsertionPointAfter(tileLoop);
    // The shared memory of the last TMA stores must stay until they are read.
    if (s.tmaStore)
      waitForTmaStoreReads(b, loc);
    gpu::ReturnOp::create(b, loc);
    return cfg;
  }

  FailureOr<TileOrigin> origin =
      tileOrigin(b, loc, c, kBM, kBN, kBK, s.swizzle, s.splitK, cfg);
  if (failed(origin))
    return failure();
  const TileOrigin &org = *origin;
  MainloopOp kLoop = mainloop(org.m0, org.n0, org.kBase, org.kTiles);
  storeTile(org.m0, org.n0, org, [&](int64_t t) { return kLoop.getResult(t); });
  if (s.tmaStore)
    waitForTmaStoreReads(b, loc);
  gpu::ReturnOp::create(b, loc);
  return cfg;
}

/// The first op of `a`, in pre-order, whose name, attributes, operand or
/// result types or region count differ from those of its counterpart in `b`
/// (null when there is none, or when only values differ).
static Operation *firstDifference(Operation *a, Operation *b) {
  SmallVector<Operation *> as, bs;
  a->walk<WalkOrder::PreOrder>([&](Operation *op) { as.push_back(op); });
  b->walk<WalkOrder::PreOrder>([&](Operation *op) { bs.push_back(op); });
  for (size_t i = 0; i < as.size(); ++i) {
    if (i >= bs.size())
      return as[i];
    Operation *x = as[i], *y = bs[i];
    if (x->getName() != y->getName() ||
        x->getAttrDictionary() != y->getAttrDictionary() ||
        x->getOperandTypes() != y->getOperandTypes() ||
        x->getResultTypes() != y->getResultTypes() ||
        x->getNumRegions() != y->getNumRegions())
      return x;
  }
  return nullptr;
}

LogicalResult kopt::tileMatmulKernel(KernelOp kernel,
                                     const sched::Target &target) {
  // A kernel tiled before (tiling-only's output, parsed back): accepted
  // only when it is exactly what tiling its untiled body for its schedule
  // gives, so that the builder never lowers a hand-edited tiled form.
  if (isTiledMatmul(kernel)) {
    if (!kernel.getScheduleAttr())
      return kernel.emitOpError("is tiled but has no schedule attribute");
    OpBuilder b(kernel);
    auto fresh = cast<KernelOp>(b.clone(*kernel));
    bool rebuilt = succeeded(untileMatmulBody(fresh)) &&
                   succeeded(tileMatmulKernel(fresh, target));
    bool same =
        rebuilt && OperationEquivalence::isEquivalentTo(
                       kernel, fresh, OperationEquivalence::IgnoreLocations);
    Operation *differs =
        rebuilt && !same ? firstDifference(kernel, fresh) : nullptr;
    if (!same) {
      InFlightDiagnostic diag = kernel.emitOpError(
          "is tiled, but not as kopt-tile tiles it for its schedule (the "
          "tiled form is for reading: build from the untiled kernel)");
      if (differs)
        diag.attachNote(differs->getLoc())
            << "the first op that differs from kopt-tile's tiling: '"
            << differs->getName() << "'";
    }
    fresh.erase();
    return success(same);
  }
  FailureOr<MatmulBody> body = matchMatmulBody(kernel);
  if (failed(body))
    return failure();
  linalg::GenericOp mm = body->contraction;
  SmallVector<int64_t> loops = mm.getStaticLoopRanges();
  Value result = body->epilogue ? body->epilogue.getResult(0) : mm.getResult(0);
  AffineMap mapA = mm.getMatchingIndexingMap(mm.getDpsInputOperand(0));
  AffineMap mapB = mm.getMatchingIndexingMap(mm.getDpsInputOperand(1));
  sched::MatmulWorkload w = workloadOf(
      loops[0], loops[1], loops[2], mm.getDpsInputOperand(0)->get().getType(),
      mm.getDpsInputOperand(1)->get().getType(), result.getType(), mapA, mapB,
      allowsTf32(kernel));
  // kopt-select-schedule attaches the schedule; without it, the default.
  sched::MatmulSchedule s = sched::defaultSchedule(w, target);
  if (ScheduleAttr attr = kernel.getScheduleAttr())
    s = attr.getSchedule();
  if (std::optional<std::string> reason = sched::validate(s, w, target))
    return kernel.emitOpError("schedule is invalid for ")
           << w.key(target.chip) << ": " << *reason;
  // The launch (and the manifest) record the schedule the kernel was built
  // with.
  kernel.setScheduleAttr(ScheduleAttr::get(kernel.getContext(), s));
  return tileMatmulBody(kernel, s);
}

FailureOr<LaunchConfig> kopt::buildMatmulKernel(KernelOp kernel,
                                                gpu::GPUFuncOp func,
                                                const sched::Target &target) {
  // kopt-tile's upstream step first (a no-op when `tiling-only` ran it).
  if (failed(tileMatmulKernel(kernel, target)))
    return failure();
  KernelIO io(kernel, func);
  FailureOr<Contraction> c = analyze(kernel, io);
  if (failed(c))
    return failure();
  sched::MatmulWorkload w = workloadOf(*c);
  ScheduleAttr attr = kernel.getScheduleAttr();
  if (!attr)
    return kernel.emitOpError("is tiled but has no schedule attribute");
  sched::MatmulSchedule s = attr.getSchedule();
  if (std::optional<std::string> reason = sched::validate(s, w, target))
    return kernel.emitOpError("schedule is invalid for ")
           << w.key(target.chip) << ": " << *reason;
  // The tiles the builder lowers are the schedule's.
  const TiledMatmul &t = c->tiles;
  bool warps = hasWarpTiles(s);
  if (t.blockM != s.blockM || t.blockN != s.blockN || t.kTile != kTileOf(s) ||
      t.promoted != (s.instruction != sched::Instruction::Gemv) ||
      t.warpM != (warps ? s.warpM : 0) || t.warpN != (warps ? s.warpN : 0) ||
      t.innerTile != instructionTile(s, elementBytesOf(t.contraction)) ||
      (t.threadTiles != nullptr) !=
          (s.instruction == sched::Instruction::FFMA)) {
    InFlightDiagnostic diag = kernel.emitOpError("is tiled ")
                              << t.blockM << " x " << t.blockN << " x "
                              << t.kTile;
    if (t.warpTiles)
      diag << " (warp tiles " << t.warpM << " x " << t.warpN << ")";
    diag << " with innermost tiles " << t.innerTile[0] << " x "
         << t.innerTile[1] << " x " << t.innerTile[2];
    diag << (t.promoted ? ", promoted" : "")
         << ", not as its schedule says: " << attr;
    return diag;
  }
  // Split-K: the workspace (tile counters, then S x M x N partials) is the
  // kernel's last parameter.
  int64_t workspace = 0;
  if (s.splitK > 1) {
    workspace = sched::splitKWorkspaceElements(s, w);
    auto type =
        MemRefType::get({workspace}, Float32Type::get(func.getContext()));
    unsigned index = func.getNumArguments();
    if (failed(func.insertArgument(index, type, DictionaryAttr(),
                                   kernel.getLoc())))
      return kernel.emitOpError("cannot add the split-K workspace parameter");
    c->workspace = func.getArgument(index);
  }
  // TMA: A's and B's tensor maps follow, each an i64 holding the global
  // address of a CUtensorMap the runtime encodes from the manifest entry:
  // the operand [rows, K] (dims innermost first: K, rows), a box of 128
  // bytes of K (64 16-bit or 32 f32 elements) x block_m or block_n rows
  // (fewer for an operand with fewer rows: sched::tmaBoxRows), 128-byte
  // swizzle.
  std::vector<TensorMapParam> tensorMaps;
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
         {Operand{"A", c->memA, c->mapA, 0, sched::tmaBoxRows(s.blockM, c->M),
                  &c->tensorMapA},
          Operand{"B", c->memB, c->mapB, 1, sched::tmaBoxRows(s.blockN, c->N),
                  &c->tensorMapB}}) {
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
  // tma_store: C's tensor map follows: C [M, N] (dims N, M), a box of S =
  // sched::tmaStoreSwizzleBytes (128, 64 or 32) bytes of N x block_m rows
  // (fewer when M is: sched::tmaBoxRows), S-byte swizzle; the TMA unit clips
  // the boxes at M and N.
  if (s.tmaStore) {
    MLIRContext *ctx = func.getContext();
    auto type = cast<MemRefType>(c->out.getType());
    auto arg = dyn_cast<BlockArgument>(c->out);
    if (!arg || arg.getOwner() != &func.front() || type.getRank() != 2 ||
        !type.getLayout().isIdentity())
      return kernel.emitOpError("tma_store needs C as a 2-D row-major [M, N] "
                                "kernel parameter; got ")
             << type;
    unsigned index = func.getNumArguments();
    if (failed(func.insertArgument(index, IntegerType::get(ctx, 64),
                                   DictionaryAttr(), kernel.getLoc())))
      return kernel.emitOpError("cannot add the tensor map parameter of C");
    c->tensorMapC = func.getArgument(index);
    tensorMaps.push_back(
        {arg.getArgNumber(),
         {sched::tmaStoreSwizzleBytes(s.blockN * sched::bytesOf(w.c)) /
              sched::bytesOf(w.c),
          sched::tmaBoxRows(s.blockM, c->M)},
         sched::tmaStoreSwizzleBytes(s.blockN * sched::bytesOf(w.c))});
  }
  FailureOr<LaunchConfig> cfg =
      s.instruction == sched::Instruction::Wgmma
          ? buildWgmma(*c, func, s, sched::persistentGridBlocks(s, w, target))
      : s.instruction == sched::Instruction::MmaSync ? buildMma(*c, func, s)
      : s.instruction == sched::Instruction::Gemv    ? buildGemv(*c, func, s)
                                                     : buildSimt(*c, func, s);
  if (succeeded(cfg)) {
    cfg->workspaceElements = workspace;
    cfg->tensorMaps = std::move(tensorMaps);
  }
  return cfg;
}
