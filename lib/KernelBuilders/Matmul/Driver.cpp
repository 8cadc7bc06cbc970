//===- Driver.cpp - matmul kernels: tiling and the path -------------------===//
//
// A matmul kernel: fill(0) + a contraction generic C[m, n] += A[m, k] * B[k, n]
// (any operand layout; the payload exactly acc + a * b) + an optional
// elementwise epilogue generic (the rounding to C's type). kopt-tile first
// tiles it with upstream MLIR (../Tiling.cpp: block tiles by tile-and-fuse,
// zero padding, K tiles, promotion to shared memory, warp and thread tiles)
// for the schedule kopt-select-schedule chose and checked; the
// builders of this folder lower that tiled form as the kernel's
// #kopt.schedule says (docs/schedules.md, docs/compiler.md). This file reads
// the tiled form back (Contraction), checks it against the schedule, adds
// the parameters the schedule needs (TensorMaps.cpp) and picks the path:
//   - Simt.cpp: FFMA (SIMT threads owning chunk x chunk outputs per round,
//     the payload cloned per multiply-accumulate);
//   - Gemv.cpp: gemv (lanes splitting K, operands read from global memory);
//   - MmaSync.cpp: mma.sync m16n8k16 from ldmatrix fragments;
//   - Wgmma.cpp: wgmma m64nNk16 (k8 for TF32) by warpgroups, optionally a
//     persistent grid;
// the tensor-core paths with the K loop as a kopt.mainloop for
// kopt-pipeline (synchronous, cp.async or TMA stages; ../Mainloop/). All
// share the grid (Grid.cpp: grouped rasterization, split-K) and the
// epilogue (Epilogue.cpp: partial tiles stored under masks, in registers,
// staged through shared memory or by TMA; split-K's reduction).
//
//===----------------------------------------------------------------------===//

#include "MatmulBuilder.h"

using namespace mlir;
using namespace kopt;
using namespace kopt::kb;
namespace sched = kopt::schedule;

/// Whether the source matmul allows TF32: kopt-fuse records the matmul's
/// attributes in the kernel's `source`.
static bool allowsTf32(KernelOp kernel) {
  auto tf32Of = [](DictionaryAttr op) {
    if (auto attrs = op.getAs<DictionaryAttr>("attrs"))
      if (auto tf32 = attrs.getAs<BoolAttr>("tf32"))
        return tf32.getValue();
    return false;
  };
  DictionaryAttr source = kernel.getSourceAttr();
  if (!source)
    return false;
  // A fused kernel lists its ops (kopt::fusedKernelSource): the matmul's.
  if (auto ops = source.getAs<ArrayAttr>("ops")) {
    for (auto op : ops.getAsRange<DictionaryAttr>())
      if (auto name = op.getAs<StringAttr>("name");
          name && name.getValue() == "matmul")
        return tf32Of(op);
    return false;
  }
  return tf32Of(source);
}

/// The contraction of a kernel that kopt-tile's upstream step has tiled
/// (Tiling.h): its generics, operands and extents read off the tiled form.
static FailureOr<Contraction> analyze(KernelOp kernel, const KernelIO &io) {
  FailureOr<TiledMatmul> t = matchTiledMatmul(kernel);
  if (failed(t))
    return failure();
  Contraction c;
  c.mm = t->contraction;
  c.epilogue = t->epilogue;
  c.chain.first = t->blockTiles->getResult(0);
  for (linalg::GenericOp g : t->chain) {
    c.chain.ops.push_back(g);
    SmallVector<Value> &mems = c.chain.inputs.emplace_back();
    // checkEpilogueChain: each input a kernel argument or a value before.
    for (OpOperand *o : g.getDpsInputOperands())
      mems.push_back(isa<BlockArgument>(o->get()) ? io.memrefOf(o->get())
                                                  : Value());
  }
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

sched::MatmulWorkload kb::workloadOf(const Contraction &c) {
  auto dtype = [](Type t) {
    Type elt = getElementTypeOrSelf(t);
    return elt.isF16()    ? sched::DType::F16
           : elt.isBF16() ? sched::DType::BF16
                          : sched::DType::F32;
  };
  sched::MatmulWorkload w;
  w.m = c.M, w.n = c.N, w.k = c.K;
  w.a = dtype(c.memA.getType());
  w.b = dtype(c.memB.getType());
  w.c = dtype(c.out.getType());
  w.aKContiguous = kContiguous(c.mapA);
  w.bKContiguous = kContiguous(c.mapB);
  w.tf32 = c.tf32;
  return w;
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

/// The kernel's schedule, which kopt-select-schedule chose and checked for
/// `target` (the only place schedules are defaulted and checked: nothing
/// after it checks one again); an error at the kernel naming the missing
/// step when it has none, or one checked for another chip.
static FailureOr<ScheduleAttr> checkedSchedule(KernelOp kernel,
                                               const sched::Target &target) {
  ScheduleAttr attr = kernel.getScheduleAttr();
  StringAttr chip = kernel.getScheduleCheckedForAttr();
  if (!attr || !chip)
    return kernel.emitOpError(attr ? "has a schedule that kopt-select-schedule "
                                     "has not checked"
                                   : "has no schedule")
           << ": run kopt-select-schedule before kopt-tile (it chooses and "
              "checks each matmul kernel's schedule)";
  if (chip.getValue() != target.chip)
    return kernel.emitOpError("has a schedule checked for ")
           << chip.getValue() << " by kopt-select-schedule, but kopt-tile "
           << "targets " << target.chip
           << ": run kopt-select-schedule with chip=" << target.chip;
  return attr;
}

LogicalResult kopt::tileMatmulKernel(KernelOp kernel,
                                     const sched::Target &target) {
  // A kernel tiled before (tiling-only's output, parsed back): accepted
  // only when it is exactly what tiling its untiled body for its schedule
  // gives, so that the builder never lowers a hand-edited tiled form.
  if (isTiledMatmul(kernel)) {
    if (failed(checkedSchedule(kernel, target)))
      return failure();
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
  // The body's errors first: they are the kernel's whatever its schedule.
  if (failed(matchMatmulBody(kernel)))
    return failure();
  FailureOr<ScheduleAttr> attr = checkedSchedule(kernel, target);
  if (failed(attr))
    return failure();
  return tileMatmulBody(kernel, attr->getSchedule());
}

/// The tiles the builder lowers are the schedule's: fails with an error at
/// `kernel` when the tiled form `c` was read from is tiled otherwise.
static LogicalResult checkTiles(KernelOp kernel, const Contraction &c,
                                const sched::MatmulSchedule &s,
                                ScheduleAttr attr) {
  const TiledMatmul &t = c.tiles;
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
  return success();
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
  // Checked by kopt-select-schedule (tileMatmulKernel made sure).
  ScheduleAttr attr = kernel.getScheduleAttr();
  sched::MatmulSchedule s = attr.getSchedule();
  if (failed(checkTiles(kernel, *c, s, attr)))
    return failure();
  // The split-K workspace and the tensor maps follow the results.
  FailureOr<ExtraParameters> params =
      addExtraParameters(kernel, func, s, w, *c);
  if (failed(params))
    return failure();
  FailureOr<LaunchConfig> cfg =
      s.instruction == sched::Instruction::Wgmma
          ? buildWgmma(*c, func, s, sched::persistentGridBlocks(s, w, target))
      : s.instruction == sched::Instruction::MmaSync ? buildMma(*c, func, s)
      : s.instruction == sched::Instruction::Gemv    ? buildGemv(*c, func, s)
                                                     : buildSimt(*c, func, s);
  if (succeeded(cfg)) {
    cfg->workspaceElements = params->workspaceElements;
    cfg->tensorMaps = std::move(params->tensorMaps);
  }
  return cfg;
}
