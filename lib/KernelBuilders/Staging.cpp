//===- Staging.cpp - operand tiles into shared memory ---------------------===//

#include "Staging.h"

#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"

using namespace mlir;
using namespace kopt;
using namespace kopt::kb;

/// One 8-element chunk of an operand tile, for thread `tid`'s r-th access
/// (chunks are numbered row by row, `tileK / 8` per row): its offsets in the
/// tile, its position in the operand, and whether it lies inside the bounds
/// (K % 8 == 0, so a chunk is wholly inside or outside).
namespace {
struct Chunk {
  Value outerOff, kOff, outer, k, inside;
};
} // namespace
static Chunk chunkOf(OpBuilder &b, Location loc, const StageSpec &s, int64_t r,
                     Value tid, int64_t threads, Value outerBase, Value kBase,
                     Value cOuter, Value cK) {
  constexpr int64_t kVec = 8;
  int64_t chunksPerRow = s.tileK / kVec;
  Chunk c;
  Value e = arith::AddIOp::create(b, loc, tid, indexConst(b, loc, r * threads));
  c.outerOff =
      arith::DivUIOp::create(b, loc, e, indexConst(b, loc, chunksPerRow));
  c.kOff = arith::MulIOp::create(
      b, loc,
      arith::RemUIOp::create(b, loc, e, indexConst(b, loc, chunksPerRow)),
      indexConst(b, loc, kVec));
  c.outer = arith::AddIOp::create(b, loc, outerBase, c.outerOff);
  c.k = arith::AddIOp::create(b, loc, kBase, c.kOff);
  c.inside = arith::AndIOp::create(
      b, loc,
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, c.outer, cOuter),
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, c.k, cK));
  return c;
}

int64_t kb::elementLoads(const StageSpec &s, int64_t threads) {
  return llvm::divideCeil(s.tileOuter * s.tileK, threads);
}

/// Loads element r (tid + r * threads of the tile, k fastest for a
/// K-contiguous operand, else outer fastest) of the thread's share of the
/// tile at (outerBase, kBase).
FailureOr<TileElement> kb::loadTileElement(OpBuilder &b, Location loc,
                                           Operation *diag, const StageSpec &s,
                                           Value outerBase, Value kBase,
                                           Value tid, int64_t threads,
                                           int64_t r) {
  Type elt = cast<MemRefType>(s.mem.getType()).getElementType();
  int64_t tileElems = s.tileOuter * s.tileK;
  TileElement t;
  Value e = arith::AddIOp::create(b, loc, tid, indexConst(b, loc, r * threads));
  if ((r + 1) * threads > tileElems)
    t.inTile = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, e,
                                     indexConst(b, loc, tileElems));
  Value outerOff, kOff;
  if (kContiguous(s.map)) {
    outerOff = arith::DivUIOp::create(b, loc, e, indexConst(b, loc, s.tileK));
    kOff = arith::RemUIOp::create(b, loc, e, indexConst(b, loc, s.tileK));
  } else {
    kOff = arith::DivUIOp::create(b, loc, e, indexConst(b, loc, s.tileOuter));
    outerOff =
        arith::RemUIOp::create(b, loc, e, indexConst(b, loc, s.tileOuter));
  }
  Value outer = arith::AddIOp::create(b, loc, outerBase, outerOff);
  Value k = arith::AddIOp::create(b, loc, kBase, kOff);
  Value inOuter = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                        outer, indexConst(b, loc, s.outerSize));
  Value inK = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, k,
                                    indexConst(b, loc, s.kSize));
  Value inside = arith::AndIOp::create(b, loc, inOuter, inK);
  if (t.inTile)
    inside = arith::AndIOp::create(b, loc, inside, t.inTile);
  Value zero = arith::ConstantOp::create(b, loc, b.getZeroAttr(elt));
  auto ifOp = scf::IfOp::create(b, loc, TypeRange{elt}, inside,
                                /*withElse=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    SmallVector<Value> dims(3, indexConst(b, loc, 0));
    dims[s.outerDim] = outer;
    dims[2] = k;
    FailureOr<SmallVector<Value>> idx = applyIndexingMap(b, loc, s.map, dims);
    if (failed(idx))
      return diag->emitOpError("unsupported operand indexing map");
    scf::YieldOp::create(
        b, loc, memref::LoadOp::create(b, loc, s.mem, *idx).getResult());
    b.setInsertionPointToStart(ifOp.elseBlock());
    scf::YieldOp::create(b, loc, zero);
  }
  t.value = ifOp.getResult(0);
  t.smemIdx = s.smemOuterMajor ? SmallVector<Value>{outerOff, kOff}
                               : SmallVector<Value>{kOff, outerOff};
  return t;
}

/// Stores a loaded element into the shared tile `smem` at `lead` (leading
/// indices, e.g. a buffer of a double-buffered tile) + its tile position.
void kb::storeTileElement(OpBuilder &b, Location loc, const StageSpec &s,
                          Value smem, ValueRange lead, const TileElement &t) {
  OpBuilder::InsertionGuard guard(b);
  if (t.inTile) {
    auto partial = scf::IfOp::create(b, loc, t.inTile,
                                     /*withElseRegion=*/false);
    b.setInsertionPointToStart(partial.thenBlock());
  }
  SmallVector<Value> idx(lead.begin(), lead.end());
  idx.append(t.smemIdx.begin(), t.smemIdx.end());
  memref::StoreOp::create(b, loc, t.value, smem, idx);
}

/// Stages one operand tile into shared memory, threads walking the operand's
/// contiguous dimension for coalesced loads. With `threads` threads; `tid` is
/// the thread's index. When the operand is contiguous along k, k is a multiple
/// of 8 and shared memory is [outer][k], each thread moves 8 elements (16 bytes
/// for 16-bit types) per access; a chunk is either wholly inside K or wholly
/// outside.
LogicalResult kb::stageTile(OpBuilder &b, Location loc, Operation *diag,
                            const StageSpec &s, Value outerBase, Value kBase,
                            Value tid, int64_t threads) {
  bool kCont = kContiguous(s.map);
  Type elt = cast<MemRefType>(s.mem.getType()).getElementType();
  unsigned bits = elt.getIntOrFloatBitWidth();
  int64_t tileElems = s.tileOuter * s.tileK;
  auto globalIndices = [&](Value outer,
                           Value k) -> FailureOr<SmallVector<Value>> {
    SmallVector<Value> dims(3, indexConst(b, loc, 0));
    dims[s.outerDim] = outer;
    dims[2] = k;
    return applyIndexingMap(b, loc, s.map, dims);
  };

  constexpr int64_t kVec = 8;
  bool vectorized = kCont && s.smemOuterMajor && bits == 16 &&
                    s.kSize % kVec == 0 && s.tileK % kVec == 0 &&
                    (tileElems / kVec) % threads == 0;
  if (vectorized) {
    Value cOuter = indexConst(b, loc, s.outerSize),
          cK = indexConst(b, loc, s.kSize);
    auto vecType = VectorType::get({kVec}, elt);
    Value zero = arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(vecType, b.getZeroAttr(elt)));
    for (int64_t r = 0; r < tileElems / kVec / threads; ++r) {
      Chunk c =
          chunkOf(b, loc, s, r, tid, threads, outerBase, kBase, cOuter, cK);
      Value outerOff = c.outerOff, kOff = c.kOff, outer = c.outer, k = c.k;
      auto ifOp = scf::IfOp::create(b, loc, TypeRange{vecType}, c.inside,
                                    /*withElse=*/true);
      {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(ifOp.thenBlock());
        FailureOr<SmallVector<Value>> idx = globalIndices(outer, k);
        if (failed(idx))
          return diag->emitOpError("unsupported operand indexing map");
        scf::YieldOp::create(
            b, loc,
            vector::LoadOp::create(b, loc, vecType, s.mem, *idx,
                                   /*nontemporal=*/false, llvm::MaybeAlign(16))
                .getResult());
        b.setInsertionPointToStart(ifOp.elseBlock());
        scf::YieldOp::create(b, loc, zero);
      }
      vector::StoreOp::create(b, loc, ifOp.getResult(0), s.smem,
                              ValueRange{outerOff, kOff}, /*nontemporal=*/false,
                              llvm::MaybeAlign(16));
    }
    return success();
  }

  for (int64_t r = 0, n = elementLoads(s, threads); r < n; ++r) {
    FailureOr<TileElement> e =
        loadTileElement(b, loc, diag, s, outerBase, kBase, tid, threads, r);
    if (failed(e))
      return failure();
    storeTileElement(b, loc, s, s.smem, {}, *e);
  }
  return success();
}

/// Issues cp.async copies (16 bytes each, zero-filled outside the bounds) of
/// one operand tile into `stage` of s.smem ([stages][outer][k]); returns the
/// tokens.
LogicalResult kb::stageOperandTiles(OpBuilder &b, Location loc, Operation *diag,
                                    const StageSpec &a, const StageSpec &bs,
                                    Value m0, Value n0, Value k0, Value tid,
                                    int64_t threads) {
  if (failed(stageTile(b, loc, diag, a, m0, k0, tid, threads)))
    return failure();
  return stageTile(b, loc, diag, bs, n0, k0, tid, threads);
}

FailureOr<SmallVector<Value>>
kb::issueTileAsync(OpBuilder &b, Location loc, Operation *diag,
                   const StageSpec &s, Value stage, Value outerBase,
                   Value kBase, Value tid, int64_t threads) {
  constexpr int64_t kVec = 8;
  Value cOuter = indexConst(b, loc, s.outerSize),
        cK = indexConst(b, loc, s.kSize);
  Value c0 = indexConst(b, loc, 0);
  SmallVector<Value> tokens;
  auto tokenType = nvgpu::DeviceAsyncTokenType::get(b.getContext());
  for (int64_t r = 0; r < s.tileOuter * s.tileK / kVec / threads; ++r) {
    Chunk c = chunkOf(b, loc, s, r, tid, threads, outerBase, kBase, cOuter, cK);
    Value outerOff = c.outerOff, kOff = c.kOff, outer = c.outer, k = c.k,
          inside = c.inside;
    // Outside the bounds: read nothing (source size 0 zero-fills the 16 bytes)
    // from a valid address.
    SmallVector<Value> dims(3, c0);
    dims[s.outerDim] = arith::SelectOp::create(b, loc, inside, outer, c0);
    dims[2] = arith::SelectOp::create(b, loc, inside, k, c0);
    FailureOr<SmallVector<Value>> idx = applyIndexingMap(b, loc, s.map, dims);
    if (failed(idx))
      return diag->emitOpError("unsupported operand indexing map");
    Value srcElements =
        arith::SelectOp::create(b, loc, inside, indexConst(b, loc, kVec), c0);
    SmallVector<Value> dst = {stage, outerOff, kOff};
    if (s.swizzle128) {
      // Shared memory is [stages][tileK / 64][outer][64]: sub-tile kOff / 64,
      // chunk (kOff % 64) / 8 stored at chunk ((kOff % 64) / 8) ^ (outer % 8).
      Value sub = arith::DivUIOp::create(b, loc, kOff, indexConst(b, loc, 64));
      Value chunk = arith::DivUIOp::create(
          b, loc, arith::RemUIOp::create(b, loc, kOff, indexConst(b, loc, 64)),
          indexConst(b, loc, kVec));
      Value phase =
          arith::RemUIOp::create(b, loc, outerOff, indexConst(b, loc, 8));
      Value swizzled = arith::MulIOp::create(
          b, loc, arith::XOrIOp::create(b, loc, chunk, phase),
          indexConst(b, loc, kVec));
      dst = {stage, sub, outerOff, swizzled};
    }
    tokens.push_back(nvgpu::DeviceAsyncCopyOp::create(
        b, loc, tokenType, s.smem, dst, s.mem, *idx, b.getIndexAttr(kVec),
        srcElements, b.getUnitAttr()));
  }
  return tokens;
}

/// The name of the dynamic shared memory array of the kernels of a gpu.module.
static constexpr llvm::StringLiteral kDynamicSmem = "kopt_dynamic_smem";

/// The module's dynamic shared memory array (created on first use): a public
/// zero-size global in address space 3 lowers to `.extern .shared .align 1024
/// .b8 kopt_dynamic_smem[]` (../shared/MLIR22-NOTES.md:
/// gpu.dynamic_shared_memory does not). It stands first in the gpu.module, so
/// the lookup of every kernel after the first stops at the first op.
Value kb::dynamicSharedMemory(OpBuilder &b, Location loc, gpu::GPUFuncOp func) {
  auto module = func->getParentOfType<gpu::GPUModuleOp>();
  auto type = MemRefType::get({0}, b.getI8Type(), MemRefLayoutAttrInterface(),
                              b.getI64IntegerAttr(3));
  if (!module.lookupSymbol(kDynamicSmem)) {
    OpBuilder mb = OpBuilder::atBlockBegin(module.getBody());
    memref::GlobalOp::create(mb, loc, kDynamicSmem, mb.getStringAttr("public"),
                             type, Attribute(),
                             /*constant=*/false, mb.getI64IntegerAttr(1024));
  }
  return memref::GetGlobalOp::create(b, loc, type, kDynamicSmem);
}

/// A view of `shape` x `elt` at byte `offset` of the dynamic shared memory.
Value kb::sharedView(OpBuilder &b, Location loc, Value smem, int64_t offset,
                     ArrayRef<int64_t> shape, Type elt) {
  auto type = MemRefType::get(shape, elt, MemRefLayoutAttrInterface(),
                              b.getI64IntegerAttr(3));
  return memref::ViewOp::create(b, loc, type, smem, indexConst(b, loc, offset),
                                ValueRange{});
}

Value kb::sharedView(OpBuilder &b, Location loc, Value smem, Value offset,
                     ArrayRef<int64_t> shape, Type elt) {
  auto type = MemRefType::get(shape, elt, MemRefLayoutAttrInterface(),
                              b.getI64IntegerAttr(3));
  return memref::ViewOp::create(b, loc, type, smem, offset, ValueRange{});
}
