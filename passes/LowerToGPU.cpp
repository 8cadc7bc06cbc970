//===- LowerToGPU.cpp - kopt-lower-to-gpu ---------------------------------===//
//
// Host side: every function over tensors becomes a function over memrefs in
// destination-passing style, `(inputs..., outputs...) -> ()`, whose body
// launches one kernel per kopt.kernel and allocates the intermediate buffers.
// Device side: each kopt.kernel moves into a gpu.func of `gpu.module
// @kopt_kernels` (its inputs as tensors of the func's memref parameters),
// which kopt-tile then builds (passes/Tile.cpp).
//
//===----------------------------------------------------------------------===//

#include "kopt/Transforms/KernelBuilders.h"
#include "kopt/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"

namespace kopt {
#define GEN_PASS_DEF_KOPTLOWERTOGPU
#include "kopt/Transforms/Passes.h.inc"
} // namespace kopt

using namespace mlir;
using namespace kopt;

namespace {

MemRefType memrefFor(Type tensorType) {
  auto t = cast<RankedTensorType>(tensorType);
  return MemRefType::get(t.getShape(), t.getElementType());
}

struct KoptLowerToGPUPass
    : public kopt::impl::KoptLowerToGPUBase<KoptLowerToGPUPass> {
  using Base::Base;
  void runOnOperation() override;
  LogicalResult lowerFunction(func::FuncOp func, gpu::GPUModuleOp gpuModule);
};

LogicalResult KoptLowerToGPUPass::lowerFunction(func::FuncOp func,
                                                gpu::GPUModuleOp gpuModule) {
  if (func.isExternal())
    return success();
  if (!func.getBody().hasOneBlock())
    return func.emitOpError("must have a single block to be compiled by kopt");
  Block &body = func.getBody().front();
  FunctionType type = func.getFunctionType();

  // Check the body and the types before changing anything.
  for (Type t : llvm::concat<const Type>(type.getInputs(), type.getResults()))
    if (!isa<RankedTensorType>(t) ||
        !cast<RankedTensorType>(t).hasStaticShape())
      return func.emitOpError(
                 "kopt compiles functions over static tensors only, "
                 "got ")
             << t;
  // A zero-size dimension would need an empty grid, which CUDA refuses.
  auto hasZeroDim = [](Type t) {
    auto tensor = dyn_cast<RankedTensorType>(t);
    return tensor && llvm::is_contained(tensor.getShape(), 0);
  };
  // Sizes are computed in 64-bit integers; no GPU holds 2^48 bytes (256 TiB).
  auto tooLarge = [](Type t) {
    auto tensor = dyn_cast<RankedTensorType>(t);
    if (!tensor)
      return false;
    uint64_t bytes = tensor.getElementTypeBitWidth() / 8;
    for (int64_t d : tensor.getShape()) {
      if (d > 0 && bytes > (uint64_t(1) << 48) / static_cast<uint64_t>(d))
        return true;
      bytes *= static_cast<uint64_t>(std::max<int64_t>(d, 1));
    }
    return false;
  };
  for (Operation &op : body)
    for (Type t :
         llvm::concat<const Type>(op.getOperandTypes(), op.getResultTypes())) {
      if (hasZeroDim(t))
        return op.emitOpError("has a tensor with a zero-size dimension (")
               << t << "); kopt does not compile empty tensors";
      if (tooLarge(t))
        return op.emitOpError("has a tensor of more than 2^48 bytes (")
               << t << "), more than any GPU's memory";
    }
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  // A kernel's semantics are pure: one whose results reach no result of the
  // function is not launched (kopt-fuse drops dead kopt ops likewise).
  DenseSet<Operation *> live;
  for (Operation &op : llvm::reverse(body.without_terminator()))
    if (llvm::any_of(op.getUsers(), [&](Operation *user) {
          return user == ret || live.contains(user);
        }))
      live.insert(&op);
  for (Operation &op : body.without_terminator()) {
    if (isa<KernelOp>(op) && !live.contains(&op))
      continue;
    if (isa<KernelOp>(op))
      continue;
    if (isa_and_nonnull<KoptDialect>(op.getDialect()))
      return op.emitOpError("must be grouped into a kopt.kernel first (run "
                            "kopt-fuse before kopt-lower-to-gpu)");
    return op.emitOpError("is not supported by kopt: a compiled function may "
                          "hold kopt ops only");
  }
  DenseSet<Value> returned;
  for (Value v : ret.getOperands()) {
    if (!v.getDefiningOp<KernelOp>())
      return ret.emitOpError(
          "returns a function argument; kopt needs every result "
          "to be computed by a kernel");
    if (!returned.insert(v).second)
      return ret.emitOpError("returns the same value twice; each result needs "
                             "its own kernel (kopt-fuse copies repeated "
                             "results)");
  }

  // The new signature: inputs, then one output buffer per result.
  SmallVector<Type> argTypes;
  for (Type t : llvm::concat<const Type>(type.getInputs(), type.getResults()))
    argTypes.push_back(memrefFor(t));
  OpBuilder b(func);
  auto host = func::FuncOp::create(b, func.getLoc(), func.getName(),
                                   b.getFunctionType(argTypes, {}));
  host.setVisibility(func.getVisibility());
  Block *entry = host.addEntryBlock();
  b.setInsertionPointToStart(entry);

  DenseMap<Value, Value> memrefs;
  for (auto [i, arg] : llvm::enumerate(body.getArguments()))
    memrefs[arg] = entry->getArgument(i);
  for (auto [i, v] : llvm::enumerate(ret.getOperands()))
    memrefs[v] = entry->getArgument(type.getNumInputs() + i);

  SmallVector<Value> allocs;
  for (Operation &op : body.without_terminator()) {
    if (!live.contains(&op))
      continue;
    auto kernel = cast<KernelOp>(op);
    FailureOr<KernelClass> kind = classifyKernel(kernel);
    if (failed(kind))
      return failure();
    if (kernel.getScheduleAttr() && *kind != KernelClass::Matmul)
      return kernel.emitOpError("has a schedule, but only matmul kernels take "
                                "schedules (its class: ")
             << stringifyKernelClass(*kind) << ")";

    SmallVector<Value> operands;
    for (Value in : kernel.getInputs())
      operands.push_back(memrefs.lookup(in));
    for (Value res : kernel.getResults()) {
      Value mem = memrefs.lookup(res);
      if (!mem) {
        mem = memref::AllocOp::create(b, kernel.getLoc(),
                                      memrefFor(res.getType()));
        allocs.push_back(mem);
        memrefs[res] = mem;
      }
      operands.push_back(mem);
    }

    // The device function: the kernel's inputs as tensors of its memref
    // parameters and the kernel itself, for kopt-tile to build.
    OpBuilder gb = OpBuilder::atBlockEnd(gpuModule.getBody());
    SmallVector<Type> params = llvm::map_to_vector(
        operands, [](Value v) -> Type { return v.getType(); });
    auto gpuFunc =
        gpu::GPUFuncOp::create(gb, kernel.getLoc(), kernel.getSymName(),
                               gb.getFunctionType(params, {}));
    gpuFunc->setAttr(gpu::GPUDialect::getKernelFuncAttrName(),
                     gb.getUnitAttr());
    gb.setInsertionPointToStart(&gpuFunc.front());
    IRMapping mapping;
    for (auto [in, param] :
         llvm::zip(kernel.getInputs(), gpuFunc.getArguments()))
      mapping.map(in, UnrealizedConversionCastOp::create(gb, kernel.getLoc(),
                                                         in.getType(), param)
                          .getResult(0));
    gb.clone(*kernel, mapping);
    gpu::ReturnOp::create(gb, kernel.getLoc());

    // The launch; kopt-tile sets its grid, block and shared memory and adds
    // the kernel's workspace and tensor maps.
    Location loc = kernel.getLoc();
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    Value shared = arith::ConstantIntOp::create(b, loc, 0, 32);
    LaunchOp::create(
        b, loc,
        SymbolRefAttr::get(gpuModule.getNameAttr(),
                           {FlatSymbolRefAttr::get(gpuFunc.getNameAttr())}),
        one, one, one, one, one, one, shared, operands,
        b.getStringAttr(stringifyKernelClass(*kind)),
        b.getI64IntegerAttr(kernel.getInputs().size()),
        b.getI64IntegerAttr(kernel.getResults().size()), kernel.getSourceAttr(),
        /*schedule=*/ScheduleAttr(), /*cluster_size=*/DenseI32ArrayAttr());
  }
  for (Value mem : allocs)
    memref::DeallocOp::create(b, func.getLoc(), mem);
  func::ReturnOp::create(b, ret.getLoc());

  host->setAttr("kopt.result_count", b.getI64IntegerAttr(type.getNumResults()));
  func.erase();
  return success();
}

void KoptLowerToGPUPass::runOnOperation() {
  ModuleOp module = getOperation();
  SmallVector<func::FuncOp> funcs;
  for (auto f : module.getOps<func::FuncOp>())
    if (!f.isExternal())
      funcs.push_back(f);
  if (funcs.empty())
    return;
  OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
  auto gpuModule = gpu::GPUModuleOp::create(b, module.getLoc(), "kopt_kernels");
  for (func::FuncOp f : funcs)
    if (failed(lowerFunction(f, gpuModule)))
      return signalPassFailure();
}

} // namespace
