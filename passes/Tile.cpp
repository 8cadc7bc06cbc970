//===- Tile.cpp - kopt-tile -----------------------------------------------===//
//
// Builds the body of each gpu.func that kopt-lower-to-gpu left holding a
// kopt.kernel, with the kernel builder of its class
// (include/kopt/Transforms/KernelBuilders.h), then completes its launches:
// grid, block, dynamic shared memory, split-K workspace, TMA tensor maps.
//
//===----------------------------------------------------------------------===//

#include "kopt/Transforms/KernelBuilders.h"
#include "kopt/Transforms/Passes.h"

#include "mlir/Dialect/Linalg/Transforms/TilingInterfaceImpl.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"

namespace kopt {
#define GEN_PASS_DEF_KOPTTILE
#include "kopt/Transforms/Passes.h.inc"
} // namespace kopt

using namespace mlir;
using namespace kopt;

namespace {

struct KoptTilePass : public kopt::impl::KoptTileBase<KoptTilePass> {
  using Base::Base;
  void getDependentDialects(DialectRegistry &registry) const override {
    Base::getDependentDialects(registry);
    // Upstream's tiling of the linalg ops (matmul kernels' block and K
    // tiles) goes through their TilingInterface models.
    linalg::registerTilingInterfaceExternalModels(registry);
  }
  void runOnOperation() override;
};

/// Sets `launch`'s dimensions and shared memory from `cfg` and appends the
/// kernel's workspace (allocated before the launch, freed before the host
/// function returns) and tensor maps to its operands.
void completeLaunch(LaunchOp launch, const LaunchConfig &cfg,
                    ScheduleAttr schedule) {
  OpBuilder b(launch);
  Location loc = launch.getLoc();
  auto c = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  launch.getGridXMutable().assign(c(cfg.grid[0]));
  launch.getGridYMutable().assign(c(cfg.grid[1]));
  launch.getGridZMutable().assign(c(cfg.grid[2]));
  launch.getBlockXMutable().assign(c(cfg.block[0]));
  launch.getBlockYMutable().assign(c(cfg.block[1]));
  launch.getBlockZMutable().assign(c(cfg.block[2]));
  launch.getDynamicSharedMemorySizeMutable().assign(
      arith::ConstantIntOp::create(b, loc, cfg.dynamicSharedBytes, 32));
  if (cfg.cluster != std::array<int64_t, 3>{1, 1, 1})
    launch.setClusterSizeAttr(
        b.getDenseI32ArrayAttr({static_cast<int32_t>(cfg.cluster[0]),
                                static_cast<int32_t>(cfg.cluster[1]),
                                static_cast<int32_t>(cfg.cluster[2])}));
  SmallVector<Value> extra;
  // A workspace (split-K), allocated per launch; the runtime zero-fills it
  // before first use (the manifest marks it).
  if (cfg.workspaceElements > 0) {
    auto alloc = memref::AllocOp::create(
        b, loc, MemRefType::get({cfg.workspaceElements}, b.getF32Type()));
    alloc->setAttr("kopt.workspace", b.getUnitAttr());
    extra.push_back(alloc);
    auto host = launch->getParentOfType<func::FuncOp>();
    OpBuilder end(host.getBody().back().getTerminator());
    memref::DeallocOp::create(end, loc, alloc);
  }
  // Tensor maps (copy = tma): the runtime encodes each from the tensor the
  // attribute names; the host value is a placeholder the manifest replaces
  // with its `tensor_maps` entry.
  for (const TensorMapParam &m : cfg.tensorMaps) {
    auto map = arith::ConstantIntOp::create(b, loc, b.getI64Type(), 0);
    map->setAttr(
        "kopt.tensor_map",
        b.getDictionaryAttr(
            {b.getNamedAttr("tensor", b.getI64IntegerAttr(m.tensor)),
             b.getNamedAttr("box", b.getDenseI64ArrayAttr(m.box)),
             b.getNamedAttr("swizzle", b.getI64IntegerAttr(m.swizzleBytes))}));
    extra.push_back(map);
  }
  launch.getArgsMutable().append(extra);
  if (schedule)
    launch.setScheduleAttr(schedule);
}

void KoptTilePass::runOnOperation() {
  ModuleOp module = getOperation();
  std::optional<schedule::Target> target = schedule::Target::forChip(chip);
  if (!target) {
    emitError(module.getLoc(), "kopt-tile: unknown chip '") << chip << "'";
    return signalPassFailure();
  }
  // kopt-lower-to-gpu outlines the kernels first.
  WalkResult notOutlined = module.walk([&](KernelOp kernel) {
    if (kernel->getParentOfType<gpu::GPUFuncOp>())
      return WalkResult::advance();
    kernel.emitOpError("is not outlined into a gpu.func: run "
                       "kopt-lower-to-gpu before kopt-tile");
    return WalkResult::interrupt();
  });
  if (notOutlined.wasInterrupted())
    return signalPassFailure();
  // The gpu.funcs still holding their kernel, and their launches.
  SmallVector<std::pair<gpu::GPUFuncOp, KernelOp>> funcs;
  module.walk([&](gpu::GPUFuncOp func) {
    if (func.getBody().empty())
      return;
    for (auto kernel : func.front().getOps<KernelOp>()) {
      funcs.push_back({func, kernel});
      break;
    }
  });
  // One symbol table per symbol-table op, built once: a lookup per launch
  // through SymbolTable::lookupNearestSymbolFrom scans the gpu.module, which
  // made this pass quadratic in the number of kernels.
  SymbolTableCollection symbols;
  DenseMap<Operation *, SmallVector<LaunchOp>> launches;
  module.walk([&](LaunchOp launch) {
    if (Operation *callee =
            symbols.lookupNearestSymbolFrom(launch, launch.getKernel()))
      launches[callee].push_back(launch);
  });

  for (auto [func, kernel] : funcs) {
    FailureOr<KernelClass> kind = classifyKernel(kernel);
    if (failed(kind))
      return signalPassFailure();
    // tiling-only: upstream's tiling of the matmul kernels, nothing built.
    if (tilingOnly) {
      if (*kind == KernelClass::Matmul &&
          failed(tileMatmulKernel(kernel, *target)))
        return signalPassFailure();
      continue;
    }
    // The builders fill an empty entry block; the one holding the kernel
    // (its inputs cast from the parameters) stays behind it until then.
    Block *old = &func.front();
    auto *entry = new Block();
    for (BlockArgument arg : old->getArguments())
      entry->addArgument(arg.getType(), arg.getLoc());
    func.getBody().push_front(entry);
    FailureOr<LaunchConfig> cfg = buildKernel(kernel, *kind, func, *target);
    if (failed(cfg))
      return signalPassFailure();
    ScheduleAttr schedule = kernel.getScheduleAttr();
    for (Operation &op : llvm::make_early_inc_range(llvm::reverse(*old))) {
      op.dropAllUses();
      op.erase();
    }
    old->erase();
    OpBuilder b(func);
    func.setKnownBlockSizeAttr(
        b.getDenseI32ArrayAttr({static_cast<int32_t>(cfg->block[0]),
                                static_cast<int32_t>(cfg->block[1]),
                                static_cast<int32_t>(cfg->block[2])}));
    if (cfg->cluster != std::array<int64_t, 3>{1, 1, 1})
      func.setKnownClusterSizeAttr(
          b.getDenseI32ArrayAttr({static_cast<int32_t>(cfg->cluster[0]),
                                  static_cast<int32_t>(cfg->cluster[1]),
                                  static_cast<int32_t>(cfg->cluster[2])}));
    for (LaunchOp launch : launches.lookup(func))
      completeLaunch(launch, *cfg, schedule);
  }
}

} // namespace
