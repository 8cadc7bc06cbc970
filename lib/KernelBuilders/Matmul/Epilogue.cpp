//===- Epilogue.cpp - rounding and storing C ------------------------------===//
//
// The matmul kernels' epilogue (Epilogue.h): each thread's accumulators
// rounded by the epilogue payload and stored inside the bounds, from
// registers, through a staged shared-memory tile (wide stores) or by TMA
// (swizzled boxes, cp.async.bulk.tensor); under split-K the partial sums
// go through the workspace and the last block of each tile adds them.
//
//===----------------------------------------------------------------------===//

#include "Epilogue.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

using namespace mlir;
using namespace kopt;
using namespace kopt::kb;
namespace sched = kopt::schedule;

/// A zero of the type of `g`'s output block argument, which its payload does
/// not read (checked).
static Value unusedOutput(OpBuilder &b, Location loc, linalg::GenericOp g) {
  Type t = g.getBody()->getArguments().back().getType();
  return arith::ConstantOp::create(b, loc, b.getZeroAttr(t));
}

/// The accumulators `vs` of outputs (m, n), (m, n + 1), ... rounded by the
/// epilogue payload (the conversion to C's element type), then through the
/// fused epilogue chain, whose kernel-argument inputs (a bias, a residual)
/// are loaded at each element's (m, n) through their indexing maps: one
/// vector load for the group when the input is contiguous along n and the
/// group cannot straddle C's edge (N a multiple of its size, as n is), else
/// an element load each. With `clamp` the loads are at (min(m, M - 1),
/// min(n, N - size)), for elements past C's edge that are computed but not
/// stored.
static SmallVector<Value> roundResults(OpBuilder &b, Location loc,
                                       const Contraction &c, ArrayRef<Value> vs,
                                       Value m, Value n, bool clamp) {
  SmallVector<Value> rounded;
  for (Value v : vs)
    rounded.push_back(c.epilogue ? clonePayload(b, c.epilogue,
                                                {v, unusedOutput(b, loc,
                                                                 c.epilogue)})
                                 : v);
  if (c.chain.ops.empty())
    return rounded;
  const int64_t k = vs.size();
  const bool vectors = k > 1 && c.N % k == 0;
  if (clamp) {
    m = arith::MinUIOp::create(b, loc, m, indexConst(b, loc, c.M - 1));
    n = arith::MinUIOp::create(b, loc, n,
                               indexConst(b, loc, c.N - (vectors ? k : 1)));
  }
  auto column = [&](int64_t i) -> Value {
    if (i == 0)
      return n;
    Value col = arith::AddIOp::create(b, loc, n, indexConst(b, loc, i));
    // Clamped element by element when no vector keeps the group inside.
    return clamp ? arith::MinUIOp::create(b, loc, col,
                                          indexConst(b, loc, c.N - 1))
                       .getResult()
                 : col;
  };
  // Each kernel-argument input's k lanes.
  SmallVector<SmallVector<SmallVector<Value>>> loaded;
  for (auto [gi, gc] : llvm::enumerate(c.chain.ops)) {
    linalg::GenericOp g = gc;
    SmallVector<SmallVector<Value>> &perInput = loaded.emplace_back();
    for (auto [o, mem] : llvm::zip(g.getDpsInputOperands(),
                                   c.chain.inputs[gi])) {
      SmallVector<Value> &lanes = perInput.emplace_back();
      if (!mem)
        continue;
      AffineMap map = g.getMatchingIndexingMap(o);
      // checkEpilogueChain admitted maps of dimensions and constants.
      if (vectors && laneAccess(map, 1) != LaneAccess::Other) {
        FailureOr<Lanes> l = loadLanes(b, loc, mem, map, ValueRange{m, n}, k);
        for (int64_t i = 0; i < k; ++i)
          lanes.push_back(l->lane(b, loc, i));
        continue;
      }
      for (int64_t i = 0; i < k; ++i) {
        SmallVector<Value> idx = *applyIndexingMap(
            b, loc, map, ValueRange{m, column(i)});
        lanes.push_back(memref::LoadOp::create(b, loc, mem, idx));
      }
    }
  }
  for (int64_t i = 0; i < k; ++i) {
    DenseMap<Value, Value> at;
    at[c.chain.first] = rounded[i];
    for (auto [gi, gc] : llvm::enumerate(c.chain.ops)) {
      linalg::GenericOp g = gc;
      SmallVector<Value> args;
      for (auto [oi, o] : llvm::enumerate(g.getDpsInputOperands()))
        args.push_back(c.chain.inputs[gi][oi] ? loaded[gi][oi][i]
                                              : at.lookup(o->get()));
      args.push_back(unusedOutput(b, loc, g));
      at[g.getResult(0)] = clonePayload(b, g, args);
    }
    linalg::GenericOp last = c.chain.ops.back();
    rounded[i] = at.lookup(last.getResult(0));
  }
  return rounded;
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
  SmallVector<Value> rounded =
      roundResults(b, loc, c, vs, m, n, /*clamp=*/false);
  storeElements(b, loc, rounded, c.out, ValueRange{m, n});
}

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
  // Elements past C's edge are staged too (the stores skip them).
  SmallVector<Value> rounded =
      roundResults(b, loc, c, vs, m, n, /*clamp=*/true);
  if (st.tensorMap)
    return stageSwizzled(b, loc, st, rounded, m, n);
  Value row = arith::SubIOp::create(b, loc, m, st.m0);
  Value col = arith::SubIOp::create(b, loc, n, st.n0);
  storeElements(b, loc, rounded, st.tile, ValueRange{row, col});
}

void kb::waitForTmaStoreReads(OpBuilder &b, Location loc) {
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

StagedEpilogue kb::beginStagedEpilogue(OpBuilder &b, Location loc,
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

std::pair<Value, Value> kb::accumulatorLaneOrigin(OpBuilder &b, Location loc,
                                                  Value lane, Value laneRow,
                                                  Value m0, Value tileRow,
                                                  Value n0, Value tileCol) {
  Value laneCol = arith::MulIOp::create(
      b, loc, arith::RemUIOp::create(b, loc, lane, indexConst(b, loc, 4)),
      indexConst(b, loc, 2));
  Value rowBase = arith::AddIOp::create(
      b, loc, arith::AddIOp::create(b, loc, m0, tileRow), laneRow);
  Value colBase = arith::AddIOp::create(
      b, loc, arith::AddIOp::create(b, loc, n0, tileCol), laneCol);
  return {rowBase, colBase};
}

void kb::forEachAccumulatorOfQuad(OpBuilder &b, Location loc, Value rowBase,
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
void kb::emitEpilogue(OpBuilder &b, Location loc, const Contraction &c,
                      const TileOrigin &o, int64_t splitK,
                      const EpilogueThreads &et, const StagedEpilogue *staged,
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
