//===- Tiling.cpp - a matmul kernel's block tiles, by upstream tiling -----===//
//
// kopt-tile's upstream step for matmul kernels (Tiling.h): tile-and-fuse to
// block tiles, padding to whole tiles, K tiling and the promotion of the K
// tiles to shared memory, all with upstream MLIR's transformations; and the
// matcher that reads the tiled form back for the matmul builder.
//
//===----------------------------------------------------------------------===//

#include "Tiling.h"
#include "Common.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/TilingInterface.h"
#include "mlir/Transforms/CSE.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

using namespace mlir;
using namespace kopt;
using namespace kopt::kb;
namespace sched = kopt::schedule;

/// Whether `v` is a constant 0 (a float of either sign, or an integer).
static bool isZeroConstant(Value v) {
  return v && (matchPattern(v, m_AnyZeroFloat()) || matchPattern(v, m_Zero()));
}

/// Whether `init` is a linalg.fill of a constant 0.
static bool isZeroFill(Value init) {
  auto fill = init ? init.getDefiningOp<linalg::FillOp>() : linalg::FillOp();
  return fill && isZeroConstant(fill.getInputs()[0]);
}

LogicalResult kb::checkEpilogueChain(KernelOp kernel, Value first,
                                     ArrayRef<linalg::GenericOp> chain,
                                     int64_t m, int64_t n) {
  Block &block = kernel.getBody().front();
  auto yielded = block.getTerminator()->getOperands();
  Value last = first;
  if (!chain.empty()) {
    linalg::GenericOp lastOp = chain.back();
    last = lastOp.getResult(0);
  }
  if (yielded.size() != 1 || yielded.front() != last)
    return kernel.emitOpError(
        "a matmul kernel yields one result: its epilogue's last value");
  DenseSet<Value> computed = {first};
  SmallVector<int64_t> mn = {m, n};
  for (linalg::GenericOp g : llvm::to_vector(chain)) {
    if (g.getNumResults() != 1 || g.getNumReductionLoops() != 0 ||
        g.getStaticLoopRanges() != ArrayRef<int64_t>(mn) ||
        !g.getIndexingMapsArray().back().isIdentity())
      return g.emitOpError("a matmul kernel's epilogue is elementwise over "
                           "the [")
             << m << ", " << n << "] result";
    if (!g.getBody()->getArguments().back().use_empty())
      return g.emitOpError("epilogue payloads must not read their output");
    for (OpOperand *o : g.getDpsInputOperands()) {
      Value v = o->get();
      auto arg = dyn_cast<BlockArgument>(v);
      bool isArg = arg && arg.getOwner() == &block;
      AffineMap map = g.getMatchingIndexingMap(o);
      bool loadable = llvm::all_of(map.getResults(), [](AffineExpr e) {
        return isa<AffineDimExpr, AffineConstantExpr>(e);
      });
      if (computed.contains(v) ? !map.isIdentity() : !isArg || !loadable)
        return g.emitOpError("epilogue input #")
               << o->getOperandNumber()
               << " must be a kernel argument read through a map of loop "
                  "dimensions and constants, or a value computed before it "
                  "read through the identity map";
    }
    computed.insert(g.getResult(0));
  }
  return success();
}

FailureOr<MatmulBody> kb::matchMatmulBody(KernelOp kernel) {
  MatmulBody body;
  SmallVector<linalg::GenericOp> gs = generics(kernel);
  if (gs.empty())
    return kernel.emitOpError("has no linalg.generic to build a kernel from");
  linalg::GenericOp mm = body.contraction = gs.front();
  if (!isContraction(mm))
    return mm.emitOpError("the first generic of a matmul kernel must be the "
                          "contraction (A and B indexed by k and m or n, C by "
                          "(m, n), a multiply-accumulate payload)");
  if (!isMultiplyAccumulate(mm))
    return mm.emitOpError("the contraction's payload must be acc + a * b (each "
                          "input used as it is or extended to the "
                          "accumulator's type, nothing else)");
  // The rounding epilogue: one input, the contraction's result, identity
  // maps; every generic after it is the fused chain.
  auto isRounding = [&](linalg::GenericOp g) {
    return g.getNumDpsInputs() == 1 &&
           g.getDpsInputOperand(0)->get() == mm.getResult(0) &&
           llvm::all_of(g.getIndexingMapsArray(),
                        [](AffineMap m) { return m.isIdentity(); });
  };
  size_t next = 1;
  if (gs.size() > 1 && isRounding(gs[1]))
    body.epilogue = gs[next++];
  body.chain.assign(gs.begin() + next, gs.end());
  AffineMap outMap = mm.getIndexingMapsArray().back();
  if (outMap !=
      AffineMap::getMultiDimIdentityMap(3, mm.getContext()).getMajorSubMap(2))
    return mm.emitOpError("contraction output must be indexed (d0, d1)");
  Block &block = kernel.getBody().front();
  Value tileResult =
      body.epilogue ? body.epilogue.getResult(0) : mm.getResult(0);
  auto isArg = [&](Value v) {
    auto arg = dyn_cast<BlockArgument>(v);
    return arg && arg.getOwner() == &block;
  };
  if (!isArg(mm.getDpsInputOperand(0)->get()) ||
      !isArg(mm.getDpsInputOperand(1)->get()))
    return mm.emitOpError("matmul operands must be kernel arguments");
  auto shape = cast<RankedTensorType>(tileResult.getType()).getShape();
  if (failed(checkEpilogueChain(kernel, tileResult, body.chain, shape[0],
                                shape[1])))
    return failure();
  if (!isZeroFill(mm.getDpsInitOperand(0)->get()))
    return mm.emitOpError(
        "contraction accumulator must start from a fill of 0");
  return body;
}

bool kb::isTiledMatmul(KernelOp kernel) {
  return llvm::any_of(kernel.getBody().front(),
                      [](Operation &op) { return isa<scf::ForallOp>(op); });
}

bool kb::hasWarpTiles(const sched::MatmulSchedule &s) {
  return s.instruction == sched::Instruction::MmaSync ||
         s.instruction == sched::Instruction::Wgmma;
}

SimtThreads kb::simtThreads(const sched::MatmulSchedule &s) {
  SimtThreads t;
  t.ty = s.threads() / t.tx;
  int64_t rows = s.blockM / t.ty, cols = s.blockN / t.tx;
  t.chunk = rows % 4 == 0 && cols % 4 == 0 ? 4 : 1;
  return t;
}

int64_t kb::elementBytesOf(linalg::GenericOp contraction) {
  return getElementTypeOrSelf(contraction.getDpsInputOperand(0)->get())
             .getIntOrFloatBitWidth() /
         8;
}

SmallVector<int64_t, 3> kb::instructionTile(const sched::MatmulSchedule &s,
                                            int64_t elementBytes) {
  switch (s.instruction) {
  case sched::Instruction::MmaSync:
    return {16, 8, 16};
  case sched::Instruction::Wgmma:
    // m64nNk(32 bytes): k16 for 16-bit operands, k8 for TF32.
    return {64, s.warpN, 32 / elementBytes};
  case sched::Instruction::FFMA: {
    SimtThreads t = simtThreads(s);
    return {t.chunk, t.chunk, s.blockK};
  }
  case sched::Instruction::Gemv:
    return {s.blockM, s.blockN, kTileOf(s)};
  }
  return {};
}

int64_t kb::kTileOf(const sched::MatmulSchedule &s) {
  return s.instruction == sched::Instruction::Gemv ? 32 * s.blockK : s.blockK;
}

/// Erases the ops of `block` left without uses (the untiled originals).
static void eraseDeadOps(RewriterBase &rewriter, Block &block) {
  bool erased = true;
  while (erased) {
    erased = false;
    for (Operation &op : block.without_terminator()) {
      if (isOpTriviallyDead(&op)) {
        rewriter.eraseOp(&op);
        erased = true;
        break;
      }
    }
  }
}

/// tileMatmulBody's step 1, block tiles: `root` (the kernel's result) tiled
/// by [block_m, block_n] into an scf.forall, its producers (the
/// contraction, its fill) fused into the tile. Returns the block tile's
/// contraction.
static FailureOr<linalg::GenericOp> tileToBlocks(IRRewriter &rewriter,
                                                 KernelOp kernel,
                                                 const sched::MatmulSchedule &s,
                                                 Operation *root) {
  scf::SCFTilingOptions blockTiling;
  blockTiling.setLoopType(scf::SCFTilingOptions::LoopType::ForallOp)
      .setTileSizes(
          getAsIndexOpFoldResult(kernel.getContext(), {s.blockM, s.blockN}));
  scf::SCFTileAndFuseOptions tileAndFuse;
  tileAndFuse.setTilingOptions(blockTiling);
  rewriter.setInsertionPoint(root);
  FailureOr<scf::SCFTileAndFuseResult> fused =
      scf::tileConsumerAndFuseProducersUsingSCF(
          rewriter, cast<TilingInterface>(root), tileAndFuse);
  if (failed(fused))
    return kernel.emitOpError("kopt-tile: upstream tile-and-fuse to ")
           << s.blockM << " x " << s.blockN << " block tiles failed";
  for (OpResult r : root->getResults())
    rewriter.replaceAllUsesWith(r, fused->replacements.lookup(r));
  eraseDeadOps(rewriter, kernel.getBody().front());
  linalg::GenericOp mm;
  for (Operation *op : fused->tiledAndFusedOps)
    if (auto g = dyn_cast<linalg::GenericOp>(op))
      if (g.getNumReductionLoops() == 1)
        mm = g;
  if (!mm)
    return kernel.emitOpError(
        "kopt-tile: the contraction was not fused into the block tile");
  return mm;
}

/// Step 2, whole tiles: the contraction's operands zero-padded to block_m x
/// block_n x (K rounded up to whole K tiles); its result sliced back.
/// Returns the padded contraction.
static FailureOr<linalg::LinalgOp>
padToWholeTiles(IRRewriter &rewriter, KernelOp kernel,
                const sched::MatmulSchedule &s, linalg::GenericOp mm) {
  const int64_t kTile = kTileOf(s);
  auto zeroOf = [&](Value v) -> Attribute {
    return rewriter.getZeroAttr(getElementTypeOrSelf(v.getType()));
  };
  linalg::LinalgPaddingOptions padding;
  padding.setPaddingDimensions({0, 1, 2})
      .setPadToMultipleOf({s.blockM, s.blockN, kTile})
      .setPaddingValues({zeroOf(mm.getDpsInputOperand(0)->get()),
                         zeroOf(mm.getDpsInputOperand(1)->get()),
                         zeroOf(mm.getDpsInitOperand(0)->get())})
      .setCopyBackOp(linalg::LinalgPaddingOptions::CopyBackOp::None);
  linalg::LinalgOp padded;
  SmallVector<Value> replacements;
  SmallVector<tensor::PadOp> pads;
  rewriter.setInsertionPoint(mm);
  if (failed(linalg::rewriteAsPaddedOp(rewriter, mm, padding, padded,
                                       replacements, pads)))
    return kernel.emitOpError("kopt-tile: upstream padding of the block "
                              "tile's contraction to whole tiles failed");
  rewriter.replaceOp(mm, replacements);
  return padded;
}

/// Step 4, promotion: each K tile of A and B that `inner` reads copied into
/// a shared-memory tensor (gemv reads them from global memory and skips
/// this step).
static LogicalResult promoteOperandTiles(IRRewriter &rewriter, KernelOp kernel,
                                         linalg::GenericOp inner) {
  auto workgroup = gpu::AddressSpaceAttr::get(kernel.getContext(),
                                              gpu::AddressSpace::Workgroup);
  for (OpOperand *operand : inner.getDpsInputOperands()) {
    rewriter.setInsertionPoint(inner);
    Value operandTile = operand->get();
    auto type = cast<RankedTensorType>(operandTile.getType());
    if (!type.hasStaticShape())
      return kernel.emitOpError("kopt-tile: operand tile ")
             << type << " is not a whole tile after padding";
    // What transform.structured.promote_tensor makes: an allocation in the
    // memory space, the tile materialized into it.
    auto alloc = bufferization::AllocTensorOp::create(
        rewriter, inner.getLoc(), type, ValueRange(), Value(), Value(),
        workgroup);
    auto copy = bufferization::MaterializeInDestinationOp::create(
        rewriter, inner.getLoc(), operandTile, alloc);
    rewriter.modifyOpInPlace(inner, [&] { operand->set(copy.getResult()); });
  }
  return success();
}

/// Cleanup: fold what the steps left (full-tile slices, constant bounds),
/// drop the dead ops and common subexpressions. No canonicalization
/// patterns: they would fold a single block tile's or K tile's loop away.
static LogicalResult settle(IRRewriter &rewriter, KernelOp kernel) {
  GreedyRewriteConfig config;
  config.setRegionSimplificationLevel(GreedySimplifyRegionLevel::Disabled);
  if (failed(applyPatternsGreedily(
          kernel.getBody(),
          FrozenRewritePatternSet(RewritePatternSet(kernel.getContext())),
          config)))
    return kernel.emitOpError("kopt-tile: the tiled kernel does not settle");
  DominanceInfo dominance;
  eliminateCommonSubExpressions(rewriter, dominance, kernel);
  // The body's constants (which the cleanup gathered at its start in the
  // order it met them) in the order of their first uses, so that the same
  // tiled ops give the same body however they were reached (kopt-tile checks
  // a tiled kernel it reads back against a fresh tiling of its untiled form).
  Block &block = kernel.getBody().front();
  DenseMap<Operation *, unsigned> firstUse;
  unsigned n = 0;
  kernel.getBody().walk<WalkOrder::PreOrder>([&](Operation *op) {
    for (Value v : op->getOperands())
      if (Operation *def = v.getDefiningOp();
          def && def->getBlock() == &block && isa<arith::ConstantOp>(def))
        firstUse.try_emplace(def, n++);
  });
  SmallVector<Operation *> constants;
  for (Operation &op : block)
    if (isa<arith::ConstantOp>(op))
      constants.push_back(&op);
  llvm::stable_sort(constants, [&](Operation *x, Operation *y) {
    return firstUse.lookup(x) < firstUse.lookup(y);
  });
  for (Operation *c : llvm::reverse(constants))
    c->moveBefore(&block, block.begin());
  return success();
}

LogicalResult kb::tileMatmulBody(KernelOp kernel,
                                 const sched::MatmulSchedule &s) {
  FailureOr<MatmulBody> body = matchMatmulBody(kernel);
  if (failed(body))
    return failure();
  MLIRContext *ctx = kernel.getContext();
  IRRewriter rewriter(ctx);
  Operation *root =
      body->epilogue ? body->epilogue.getOperation() : body->contraction;

  // 1. Block tiles.
  FailureOr<linalg::GenericOp> mm = tileToBlocks(rewriter, kernel, s, root);
  if (failed(mm))
    return failure();

  // 2. Whole tiles.
  FailureOr<linalg::LinalgOp> padded =
      padToWholeTiles(rewriter, kernel, s, *mm);
  if (failed(padded))
    return failure();

  // Steps 3, 5 and 6 tile the innermost contraction so far with upstream's
  // scf::tileUsingSCF: into scf.for loops, or an scf.forall with `mapping`.
  auto inner = cast<linalg::GenericOp>(padded->getOperation());
  auto tile = [&](ArrayRef<int64_t> sizes, bool forall,
                  ArrayRef<Attribute> mapping,
                  const Twine &what) -> LogicalResult {
    scf::SCFTilingOptions options;
    options
        .setLoopType(forall ? scf::SCFTilingOptions::LoopType::ForallOp
                            : scf::SCFTilingOptions::LoopType::ForOp)
        .setTileSizes(getAsIndexOpFoldResult(ctx, sizes))
        .setMapping(mapping);
    rewriter.setInsertionPoint(inner);
    FailureOr<scf::SCFTilingResult> tiled = scf::tileUsingSCF(
        rewriter, cast<TilingInterface>(inner.getOperation()), options);
    if (failed(tiled) || tiled->tiledOps.size() != 1)
      return kernel.emitOpError("kopt-tile: upstream tiling to ")
             << what << " failed";
    rewriter.replaceOp(inner, tiled->replacements);
    inner = cast<linalg::GenericOp>(tiled->tiledOps.front());
    return success();
  };

  // 3. K tiles: the padded contraction's reduction tiled by the K tile.
  const int64_t kTile = kTileOf(s);
  if (failed(tile({0, 0, kTile}, /*forall=*/false, {},
                  "K tiles of " + Twine(kTile))))
    return failure();

  // 4. Promotion.
  if (s.instruction != sched::Instruction::Gemv &&
      failed(promoteOperandTiles(rewriter, kernel, inner)))
    return failure();
  // 5. Warp tiles (tensor cores: mma.sync warps, wgmma warpgroups): the
  //    contraction on the promoted K tiles tiled by [warp_m, warp_n] into an
  //    scf.forall with one iteration per warp (warpgroup), N fastest.
  if (hasWarpTiles(s)) {
    bool wgmma = s.instruction == sched::Instruction::Wgmma;
    auto dim = [&](gpu::MappingId id) -> Attribute {
      if (wgmma)
        return gpu::GPUWarpgroupMappingAttr::get(ctx, id);
      return gpu::GPUWarpMappingAttr::get(ctx, id);
    };
    if (failed(tile({s.warpM, s.warpN, 0}, /*forall=*/true,
                    {dim(gpu::MappingId::DimY), dim(gpu::MappingId::DimX)},
                    Twine(s.warpM) + " x " + Twine(s.warpN) + " warp tiles")))
      return failure();
  }

  // 6. Thread tiles. Tensor cores: the warp tile in tiles of one
  //    instruction (scf.for over M, N, K; each lane's part of an instruction
  //    tile is the instruction's fragment layout). FFMA: rounds of the
  //    thread grid (scf.for), then an scf.forall with one iteration per
  //    thread (#gpu.thread<y>, #gpu.thread<x>) owning chunk x chunk outputs
  //    of the round: thread (ty, tx) computes rows ty * chunk + i * rows of
  //    a round, as the builder lays them out. gemv's lanes split K (a
  //    partial reduction), which the builder does.
  SmallVector<int64_t, 3> instr = instructionTile(s, elementBytesOf(inner));
  switch (s.instruction) {
  case sched::Instruction::MmaSync:
  case sched::Instruction::Wgmma:
    if (failed(tile(instr, /*forall=*/false, {}, "instruction tiles")))
      return failure();
    break;
  case sched::Instruction::FFMA: {
    SimtThreads t = simtThreads(s);
    if (failed(tile({t.ty * t.chunk, t.tx * t.chunk, 0}, /*forall=*/false, {},
                    "rounds of the thread grid")) ||
        failed(tile({t.chunk, t.chunk, 0}, /*forall=*/true,
                    {gpu::GPUThreadMappingAttr::get(ctx, gpu::MappingId::DimY),
                     gpu::GPUThreadMappingAttr::get(ctx, gpu::MappingId::DimX)},
                    "thread tiles")))
      return failure();
    break;
  }
  case sched::Instruction::Gemv:
    break;
  }
  return settle(rewriter, kernel);
}

//===----------------------------------------------------------------------===//
// Reading the tiled form back
//===----------------------------------------------------------------------===//

/// `v` traced through tensor.extract_slice, zero tensor.pad and promotions to
/// shared memory (bufferization.materialize_in_destination into an
/// alloc_tensor in workgroup memory) to the
/// value they start from; `promoted` is set when it passes such a copy. Null
/// when a pad with another value or a copy elsewhere stands in between.
static Value sliceSource(Value v, bool *promoted = nullptr) {
  while (Operation *def = v.getDefiningOp()) {
    if (auto slice = dyn_cast<tensor::ExtractSliceOp>(def)) {
      v = slice.getSource();
    } else if (auto pad = dyn_cast<tensor::PadOp>(def)) {
      if (!isZeroConstant(pad.getConstantPaddingValue()))
        return {};
      v = pad.getSource();
    } else if (auto copy =
                   dyn_cast<bufferization::MaterializeInDestinationOp>(def)) {
      auto alloc = copy.getDest().getDefiningOp<bufferization::AllocTensorOp>();
      auto space = alloc ? dyn_cast_or_null<gpu::AddressSpaceAttr>(
                               alloc.getMemorySpaceAttr())
                         : gpu::AddressSpaceAttr();
      if (!space || space.getValue() != gpu::AddressSpace::Workgroup ||
          alloc.getCopy())
        return {};
      if (promoted)
        *promoted = true;
      v = copy.getSource();
    } else {
      break;
    }
  }
  return v;
}

/// A constant index of `ofr`, or -1.
static int64_t constantOr(OpFoldResult ofr) {
  std::optional<int64_t> v = getConstantIntValue(ofr);
  return v ? *v : -1;
}

/// The error of a kernel that matchTiledMatmul does not recognize, at `at`.
static InFlightDiagnostic notTiledForm(Operation *at, const Twine &what) {
  return at->emitOpError("is not kopt-tile's tiled matmul form: ") << what;
}

/// matchTiledMatmul's walk up from the contraction to the K loop `kLoop`:
/// each tile loop between them (scf.for of instruction tiles or FFMA's
/// rounds, the warps' or threads' scf.forall) carries one accumulator tile
/// into the loop inside and yields or inserts that loop's result. `inner`
/// starts as the contraction's result and `accumulator` as its
/// accumulator's source; they end as the outermost tile loop's. Records the
/// warp and thread tiles in `t`.
static LogicalResult matchTileLoops(TiledMatmul &t, scf::ForOp kLoop,
                                    Value &inner, Value &accumulator) {
  auto fail = [&](Operation *at, const Twine &what) {
    return notTiledForm(at, what);
  };
  for (Operation *op = inner.getDefiningOp()->getParentOp(); op != kLoop;
       op = op->getParentOp()) {
    // Each loop's accumulator (iter_arg or shared_out) feeds the loop
    // inside, and the loop inside's result is what it yields or inserts.
    Value arg, result;
    Value yielded;
    if (auto loop = dyn_cast<scf::ForOp>(op)) {
      if (loop.getNumRegionIterArgs() != 1)
        return fail(op, "a tile loop carries more than the accumulator");
      arg = loop.getRegionIterArgs()[0];
      result = loop.getResult(0);
      yielded = sliceSource(loop.getBody()->getTerminator()->getOperand(0));
      if (auto insert = loop.getBody()
                            ->getTerminator()
                            ->getOperand(0)
                            .getDefiningOp<tensor::InsertSliceOp>())
        yielded = insert.getSource();
    } else if (auto forall = dyn_cast<scf::ForallOp>(op)) {
      if (forall.getNumResults() != 1 || forall.getRank() != 2 ||
          !llvm::all_of(forall.getMixedLowerBound(),
                        [](OpFoldResult lb) { return isZeroInteger(lb); }))
        return fail(op, "a tile loop is not a 2-D loop from 0 over the "
                        "accumulator");
      arg = forall.getRegionIterArgs()[0];
      result = forall.getResult(0);
      auto inserts =
          llvm::to_vector(forall.getTerminator()
                              .getBody()
                              ->getOps<tensor::ParallelInsertSliceOp>());
      if (inserts.size() != 1)
        return fail(op, "a tile loop does not insert one tile");
      yielded = inserts.front().getSource();
      auto mapping = forall.getMapping();
      Attribute kind =
          mapping && !mapping->empty() ? (*mapping)[0] : Attribute();
      if (isa_and_nonnull<gpu::GPUWarpMappingAttr,
                          gpu::GPUWarpgroupMappingAttr>(kind) &&
          !t.warpTiles) {
        t.warpTiles = forall;
        t.warpM = constantOr(forall.getMixedStep()[0]);
        t.warpN = constantOr(forall.getMixedStep()[1]);
      } else if (isa_and_nonnull<gpu::GPUThreadMappingAttr>(kind) &&
                 !t.threadTiles) {
        t.threadTiles = forall;
      } else {
        return fail(op, "a tile loop is neither warps' nor threads'");
      }
    } else {
      return fail(op, "the contraction is not in tile loops");
    }
    if (accumulator != arg || yielded != inner)
      return fail(op, "a tile loop does not carry the accumulator tile");
    inner = result;
    Value init = isa<scf::ForOp>(op) ? cast<scf::ForOp>(op).getInitArgs()[0]
                                     : cast<scf::ForallOp>(op).getOutputs()[0];
    accumulator = sliceSource(init);
  }
  return success();
}

FailureOr<TiledMatmul> kb::matchTiledMatmul(KernelOp kernel) {
  TiledMatmul t;
  Block &block = kernel.getBody().front();
  auto fail = [&](Operation *at, const Twine &what) {
    return notTiledForm(at, what);
  };
  // The block tiles: the only scf.forall of the body; the fused epilogue
  // chain (the generics after it) reads its result.
  for (auto forall : block.getOps<scf::ForallOp>()) {
    if (t.blockTiles)
      return fail(forall, "the kernel has more than one block tile loop");
    t.blockTiles = forall;
  }
  if (!t.blockTiles || t.blockTiles->getNumResults() != 1)
    return fail(kernel, "the kernel's result is not an scf.forall's");
  for (Operation *op = t.blockTiles->getNextNode(); op;
       op = op->getNextNode())
    if (auto g = dyn_cast<linalg::GenericOp>(op))
      t.chain.push_back(g);
  scf::ForallOp forall = t.blockTiles;
  if (forall.getRank() != 2 ||
      !llvm::all_of(forall.getMixedLowerBound(),
                    [](OpFoldResult lb) { return isZeroInteger(lb); }))
    return fail(forall, "the block tiles are not a 2-D loop from 0");
  t.M = constantOr(forall.getMixedUpperBound()[0]);
  t.N = constantOr(forall.getMixedUpperBound()[1]);
  t.blockM = constantOr(forall.getMixedStep()[0]);
  t.blockN = constantOr(forall.getMixedStep()[1]);
  if (t.M <= 0 || t.N <= 0 || t.blockM <= 0 || t.blockN <= 0)
    return fail(forall, "the block tiles' bounds and steps are not constants");
  // The K loop and the contraction in it.
  for (auto loop : forall.getBody()->getOps<scf::ForOp>()) {
    if (t.kTiles)
      return fail(loop, "the block tile has more than one K loop");
    t.kTiles = loop;
  }
  if (!t.kTiles)
    return fail(forall, "the block tile has no K loop");
  scf::ForOp kLoop = t.kTiles;
  // The contraction, in the K loop or in the loops that tile it further
  // (warp tiles, instruction tiles, FFMA's rounds and thread tiles): one
  // generic, each loop between carrying one accumulator tile.
  SmallVector<linalg::GenericOp> found;
  kLoop.getBody()->walk([&](linalg::GenericOp g) { found.push_back(g); });
  if (found.size() != 1)
    return fail(kLoop, "the K loop does not hold one contraction");
  linalg::GenericOp mm = t.contraction = found.front();
  if (!isContraction(mm) || !isMultiplyAccumulate(mm))
    return fail(mm, "it is not a contraction (A and B indexed by k and m or "
                    "n, C by (m, n), a payload acc + a * b)");
  if (kLoop.getNumRegionIterArgs() != 1)
    return fail(kLoop, "the K loop does not carry one contraction's "
                       "accumulator");
  // The loops between the K loop and the contraction.
  Value inner = mm.getResult(0);
  Value accumulator = sliceSource(mm.getDpsInitOperand(0)->get());
  if (failed(matchTileLoops(t, kLoop, inner, accumulator)))
    return failure();
  if (accumulator != kLoop.getRegionIterArgs()[0] ||
      kLoop.getBody()->getTerminator()->getOperand(0) != inner)
    return fail(kLoop, "the K loop does not carry the contraction's "
                       "accumulator");
  t.innerTile = llvm::to_vector_of<int64_t, 3>(mm.getStaticLoopRanges());
  if (!isZeroInteger(kLoop.getLowerBound()) ||
      constantOr(kLoop.getStep()) <= 0 ||
      constantOr(kLoop.getUpperBound()) <= 0)
    return fail(kLoop, "the K loop's bounds and step are not constants");
  t.kTile = constantOr(kLoop.getStep());
  // The operands: K tiles of padded slices of the kernel's arguments.
  bool promotedA = false, promotedB = false;
  t.a = sliceSource(mm.getDpsInputOperand(0)->get(), &promotedA);
  t.b = sliceSource(mm.getDpsInputOperand(1)->get(), &promotedB);
  auto isArg = [&](Value v) {
    auto arg = dyn_cast_or_null<BlockArgument>(v);
    return arg && arg.getOwner() == &block;
  };
  if (!isArg(t.a) || !isArg(t.b))
    return fail(mm, "its operands are not zero-padded tiles of the kernel's "
                    "arguments");
  if (promotedA != promotedB)
    return fail(mm, "one operand is promoted to shared memory, the other "
                    "not");
  t.promoted = promotedA;
  for (OpOperand *in : mm.getDpsInputOperands())
    if (!cast<RankedTensorType>(in->get().getType()).hasStaticShape())
      return fail(mm, "its operand tiles are not padded to whole tiles");
  // K: the extent of A along the reduction dimension.
  AffineMap mapA = mm.getMatchingIndexingMap(mm.getDpsInputOperand(0));
  auto typeA = cast<RankedTensorType>(t.a.getType());
  for (auto [i, e] : llvm::enumerate(mapA.getResults()))
    if (e == getAffineDimExpr(2, kernel.getContext()))
      t.K = typeA.getDimSize(i);
  int64_t paddedK = llvm::divideCeil(t.K, t.kTile) * t.kTile;
  if (t.K <= 0 || constantOr(kLoop.getUpperBound()) != paddedK)
    return fail(kLoop, "the K loop does not cover K in whole K tiles");
  // The accumulator starts as a (padded) fill of 0.
  if (!isZeroFill(sliceSource(kLoop.getInitArgs()[0])))
    return fail(kLoop, "the accumulator does not start from a fill of 0");
  // The epilogue (if any) on the valid part of the K loop's result, and the
  // block tile's result inserted into the output.
  auto inParallel = forall.getTerminator();
  auto inserts = llvm::to_vector(
      inParallel.getBody()->getOps<tensor::ParallelInsertSliceOp>());
  if (inserts.size() != 1)
    return fail(forall, "the block tile does not insert one result");
  Value tile = inserts.front().getSource();
  if (auto g = tile.getDefiningOp<linalg::GenericOp>()) {
    t.epilogue = g;
    if (g.getNumDpsInputs() != 1 || g->getParentOp() != forall ||
        g.getNumReductionLoops() != 0)
      return fail(g, "the epilogue is not elementwise on the accumulator");
    tile = g.getDpsInputOperand(0)->get();
  }
  if (sliceSource(tile) != kLoop.getResult(0))
    return fail(forall, "the block tile's result is not the K loop's");
  if (failed(checkEpilogueChain(kernel, forall.getResult(0), t.chain, t.M,
                                t.N)))
    return failure();
  return t;
}

LogicalResult kb::untileMatmulBody(KernelOp kernel) {
  FailureOr<TiledMatmul> t = matchTiledMatmul(kernel);
  if (failed(t))
    return failure();
  Block &block = kernel.getBody().front();
  // After the body's constants, where kopt-lower-to-linalg's ops begin (the
  // fused epilogue chain after the block tiles reads the result).
  auto firstOp = llvm::find_if(
      block, [](Operation &op) { return !isa<arith::ConstantOp>(op); });
  OpBuilder b(&block, firstOp);
  // In the order kopt-lower-to-linalg writes them: the accumulator's empty
  // tensor, the zero, the fill, the contraction, the epilogue's empty
  // tensor, the epilogue.
  linalg::GenericOp tiled = t->contraction;
  Location loc = tiled.getLoc();
  auto clone = [&](linalg::GenericOp from, Type result, ValueRange ins,
                   Value out) {
    auto g = linalg::GenericOp::create(
        b, from.getLoc(), TypeRange{result}, ins, ValueRange{out},
        from.getIndexingMapsArray(), from.getIteratorTypesArray());
    IRMapping map;
    from.getRegion().cloneInto(&g.getRegion(), map);
    return g.getResult(0);
  };
  Type accElt = getElementTypeOrSelf(tiled.getDpsInitOperand(0)->get());
  auto accType = RankedTensorType::get({t->M, t->N}, accElt);
  Value empty = tensor::EmptyOp::create(b, loc, accType.getShape(), accElt);
  // The fill's zero: the tiled body's own when it has one (tiling's cleanup
  // gathered its constants at its start), else a new one there.
  Attribute zeroAttr = b.getZeroAttr(accElt);
  Value zero;
  for (auto cst : block.getOps<arith::ConstantOp>())
    if (cst.getValue() == zeroAttr && !zero)
      zero = cst;
  if (!zero) {
    OpBuilder top = OpBuilder::atBlockBegin(&block);
    zero = arith::ConstantOp::create(top, loc, cast<TypedAttr>(zeroAttr));
  }
  Value fill = linalg::FillOp::create(b, loc, zero, empty).getResult(0);
  Value result = clone(tiled, accType, {t->a, t->b}, fill);
  if (linalg::GenericOp epilogue = t->epilogue) {
    auto outType =
        cast<RankedTensorType>(t->blockTiles->getResult(0).getType());
    Value out = tensor::EmptyOp::create(
        b, epilogue.getLoc(), outType.getShape(), outType.getElementType());
    result = clone(epilogue, outType, {result}, out);
  }
  t->blockTiles->getResult(0).replaceAllUsesWith(result);
  IRRewriter rewriter(kernel.getContext());
  rewriter.eraseOp(t->blockTiles);
  eraseDeadOps(rewriter, block);
  return success();
}