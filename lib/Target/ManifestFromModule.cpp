//===- ManifestFromModule.cpp - The launch manifest of a compiled module --===//
//
// Fills the manifest library's structs (include/kopt/Manifest/Manifest.h)
// from the host functions' kopt.launch ops (their `source`: one op, or the
// `ops` of a fused kernel with its internal `values`; `kernel_class`,
// `num_inputs`, `num_outputs` and `schedule`), runs the library's validator
// (the same rules the runtime's reader applies) and writes the JSON through
// the library's writer: a manifest the runtime would refuse is a located
// error here instead.
//
//===----------------------------------------------------------------------===//

#include "kopt/Dialect/Kopt/KoptDialect.h"
#include "kopt/Manifest/Manifest.h"
#include "kopt/Target/PTX.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

#include <nlohmann/json.hpp>

using namespace mlir;
namespace mf = kopt::manifest;
using json = nlohmann::ordered_json;

namespace {

FailureOr<mf::DType> dtypeOf(Operation *at, Type t) {
  if (t.isF32())
    return mf::DType::F32;
  if (t.isF16())
    return mf::DType::F16;
  if (t.isBF16())
    return mf::DType::BF16;
  return emitError(at->getLoc(), "unsupported element type ")
             << t << " in the manifest",
         failure();
}

/// The dtype and shape of a buffer of `type` (a static, identity-layout
/// memref).
FailureOr<mf::TensorSpec> tensorOf(Operation *at, Type type, StringRef name,
                                   mf::Role role) {
  auto m = dyn_cast<MemRefType>(type);
  if (!m || !m.hasStaticShape() || !m.getLayout().isIdentity())
    return emitError(at->getLoc(), "launch parameter of type ")
               << type << " is not a static, identity-layout memref",
           failure();
  FailureOr<mf::DType> dtype = dtypeOf(at, m.getElementType());
  if (failed(dtype))
    return failure();
  mf::TensorSpec t;
  t.name = name.str();
  t.role = role;
  t.dtype = *dtype;
  t.shape = m.getShape().vec();
  return t;
}

/// An attribute of a launch's `source`'s `attrs` as JSON (unit attributes are
/// booleans, enums their keyword already: kopt-fuse's sourceAttrs).
json attrJSON(Attribute a) {
  if (auto b = dyn_cast<BoolAttr>(a))
    return b.getValue();
  if (auto s = dyn_cast<StringAttr>(a))
    return s.getValue().str();
  if (auto f = dyn_cast<FloatAttr>(a))
    return f.getValueAsDouble();
  if (auto i = dyn_cast<IntegerAttr>(a))
    return i.getInt();
  if (auto d = dyn_cast<DictionaryAttr>(a)) {
    json j = json::object();
    for (NamedAttribute n : d)
      j[n.getName().str()] = attrJSON(n.getValue());
    return j;
  }
  if (auto arr = dyn_cast<ArrayAttr>(a)) {
    json j = json::array();
    for (Attribute e : arr)
      j.push_back(attrJSON(e));
    return j;
  }
  std::string s;
  llvm::raw_string_ostream os(s);
  a.print(os);
  return s;
}

FailureOr<std::array<uint32_t, 3>> dims(kopt::LaunchOp launch,
                                        ArrayRef<Value> vs, StringRef what) {
  std::array<uint32_t, 3> out;
  for (int i = 0; i < 3; ++i) {
    std::optional<int64_t> c = getConstantIntValue(vs[i]);
    if (!c)
      return emitError(launch.getLoc(), "the launch's ")
                 << what << " is not constant",
             failure();
    // Out of uint32_t's range is out of every launch limit; the validator
    // names the limit (0 is out of range too).
    out[i] = *c < 0 || *c > std::numeric_limits<uint32_t>::max()
                 ? 0
                 : static_cast<uint32_t>(*c);
    if (out[i] == 0 && *c != 0)
      return emitError(launch.getLoc(), "the launch's ")
                 << what << " " << *c << " is out of range",
             failure();
  }
  return out;
}

/// "kernels[3] (rmsnorm_3)": the path the runtime's messages use.
std::string kernelPath(size_t index, const std::string &name) {
  std::string at = "kernels[" + std::to_string(index) + "]";
  return mf::isValidUTF8(name) ? at + " (" + name + ")" : at;
}

/// The one op of a kernel made by kopt-fuse, from its launch's `source`: the
/// kind, its attributes, each input parameter as the operand of its name and
/// the output parameter as the result.
FailureOr<mf::OpSpec> sourceOp(kopt::LaunchOp launch,
                               const mf::KernelSpec &kernel,
                               DictionaryAttr source, const std::string &at) {
  StringRef name = source.getAs<StringAttr>("name").getValue();
  std::optional<mf::OpKind> kind = mf::parseOpKind(name);
  if (!kind) {
    InFlightDiagnostic d = emitError(launch.getLoc(), "kernel '")
                           << launch.getKernelName().getValue()
                           << "' computes an op the launch manifest does "
                              "not know";
    if (mf::isValidUTF8(name))
      d << ": '" << name << "'";
    return failure();
  }
  json attrs =
      source.get("attrs") ? attrJSON(source.get("attrs")) : json::object();
  // Never throws: bytes that are not UTF-8 become U+FFFD, which the attribute
  // reader then rejects as an unknown value.
  std::string text = attrs.dump(-1, ' ', false, json::error_handler_t::replace);
  mf::Expected<mf::OpAttrs> parsed =
      mf::parseOpAttrs(*kind, text, at + ".ops[0].attrs");
  if (!parsed.ok())
    return emitError(launch.getLoc(), "invalid launch manifest: ")
               << parsed.error(),
           failure();
  return mf::opOverParams(*kind, *parsed, kernel.params);
}

/// The ops of a kernel kopt-fuse fused, from its launch's `source` (`ops`,
/// `values`: kopt::fusedKernelSource): each op's kind and attributes, its
/// operands (by the manifest's operand names, in order) and its result.
LogicalResult fusedSourceOps(kopt::LaunchOp launch, mf::KernelSpec &kernel,
                             DictionaryAttr source, const std::string &at) {
  auto ops = source.getAs<ArrayAttr>("ops");
  auto values = source.getAs<ArrayAttr>("values");
  auto malformed = [&](const Twine &what) {
    return emitError(launch.getLoc(), "kernel '")
           << launch.getKernelName().getValue()
           << "' has a malformed `source`: " << what;
  };
  for (auto [i, a] : llvm::enumerate(ops)) {
    auto op = dyn_cast<DictionaryAttr>(a);
    auto name = op ? op.getAs<StringAttr>("name") : StringAttr();
    auto operands = op ? op.getAs<ArrayAttr>("operands") : ArrayAttr();
    auto results = op ? op.getAs<ArrayAttr>("results") : ArrayAttr();
    if (!name || !operands || !results || results.size() != 1)
      return malformed("ops[" + Twine(i) +
                       "] needs a name, operands and one result");
    std::optional<mf::OpKind> kind = mf::parseOpKind(name.getValue());
    if (!kind) {
      InFlightDiagnostic d = emitError(launch.getLoc(), "kernel '")
                             << launch.getKernelName().getValue()
                             << "' computes an op the launch manifest does "
                                "not know";
      if (mf::isValidUTF8(name.getValue()))
        d << ": '" << name.getValue() << "'";
      return failure();
    }
    std::string opAt = at + ".ops[" + std::to_string(i) + "]";
    json attrs = op.get("attrs") ? attrJSON(op.get("attrs")) : json::object();
    std::string text =
        attrs.dump(-1, ' ', false, json::error_handler_t::replace);
    mf::Expected<mf::OpAttrs> parsed =
        mf::parseOpAttrs(*kind, text, opAt + ".attrs");
    if (!parsed.ok())
      return emitError(launch.getLoc(), "invalid launch manifest: ")
             << parsed.error();
    mf::OpSpec spec;
    spec.kind = *kind;
    spec.attrs = *parsed;
    size_t numRequired = 0;
    std::vector<std::string> names = mf::operandNames(*kind, &numRequired);
    if (operands.size() < numRequired || operands.size() > names.size())
      return malformed("ops[" + Twine(i) + "] (" + name.getValue() + ") has " +
                       Twine(operands.size()) + " operands");
    for (auto [j, v] : llvm::enumerate(operands)) {
      auto value = dyn_cast<StringAttr>(v);
      if (!value)
        return malformed("ops[" + Twine(i) + "].operands[" + Twine(j) +
                         "] is not a string");
      spec.operands.push_back({names[j], value.getValue().str()});
    }
    auto result = dyn_cast<StringAttr>(results[0]);
    if (!result)
      return malformed("ops[" + Twine(i) + "].results[0] is not a string");
    spec.result = result.getValue().str();
    kernel.ops.push_back(std::move(spec));
  }
  if (values)
    for (auto [i, a] : llvm::enumerate(values)) {
      auto value = dyn_cast<DictionaryAttr>(a);
      auto name = value ? value.getAs<StringAttr>("name") : StringAttr();
      auto type = value ? value.getAs<TypeAttr>("type") : TypeAttr();
      auto tensor =
          type ? dyn_cast<RankedTensorType>(type.getValue()) : nullptr;
      if (!name || !tensor || !tensor.hasStaticShape())
        return malformed("values[" + Twine(i) +
                         "] needs a name and a static tensor type");
      FailureOr<mf::DType> dtype = dtypeOf(launch, tensor.getElementType());
      if (failed(dtype))
        return failure();
      mf::TensorSpec t;
      t.name = name.getValue().str();
      t.dtype = *dtype;
      t.shape = tensor.getShape().vec();
      kernel.values.push_back(std::move(t));
    }
  return success();
}

/// The manifest's kernel for `launch` (the `index`-th of the module), and the
/// launch's arguments in `args`.
FailureOr<mf::KernelSpec>
kernelFromLaunch(kopt::LaunchOp launch, size_t index,
                 const DenseMap<Value, int64_t> &bufferIds,
                 std::vector<mf::LaunchArg> &args) {
  mf::KernelSpec kernel;
  kernel.name = launch.getKernelName().getValue().str();
  std::string at = kernelPath(index, kernel.name);
  // The op's verifier accepts known kernel classes only.
  kernel.cls = *mf::parseKernelClass(launch.getKernelClass());
  DictionaryAttr source = launch.getSourceAttr();
  bool fused = source && source.getAs<ArrayAttr>("ops");
  if (!source || (!fused && !source.getAs<StringAttr>("name")))
    return emitError(launch.getLoc(), "kernel '")
               << launch.getKernelName().getValue()
               << "' has no `source` naming the op it computes (kopt-fuse "
                  "sets it on each kopt.kernel); the launch manifest needs "
                  "it",
           failure();
  SmallVector<std::string> paramNames;
  if (auto names = source.getAs<ArrayAttr>("params"))
    for (Attribute n : names)
      if (auto s = dyn_cast<StringAttr>(n))
        paramNames.push_back(s.getValue().str());

  int64_t numKernelInputs = launch.getNumInputs();
  // Parameters after the inputs and outputs are workspaces (split-K).
  int64_t numKernelIO = numKernelInputs + launch.getNumOutputs();
  for (auto [i, v] : llvm::enumerate(launch.getArgs())) {
    // A tensor map (copy = tma): the runtime encodes it from the parameter
    // it names; launches do not bind it.
    if (Operation *def = v.getDefiningOp())
      if (auto map = def->getAttrOfType<DictionaryAttr>("kopt.tensor_map")) {
        auto tensor = map.getAs<IntegerAttr>("tensor");
        auto box = map.getAs<DenseI64ArrayAttr>("box");
        auto swizzle = map.getAs<IntegerAttr>("swizzle");
        if (!tensor || !box || !swizzle || tensor.getInt() < 0 ||
            tensor.getInt() >= static_cast<int64_t>(kernel.params.size()))
          return emitError(launch.getLoc(), "kernel operand #")
                     << i << " is a malformed tensor map " << map,
                 failure();
        kernel.tensorMaps.push_back({kernel.params[tensor.getInt()].name,
                                     box.asArrayRef().vec(),
                                     static_cast<int>(swizzle.getInt())});
        continue;
      }
    bool isInput = static_cast<int64_t>(i) < numKernelInputs;
    bool isWorkspace = static_cast<int64_t>(i) >= numKernelIO;
    std::string name = isWorkspace             ? "workspace"
                       : i < paramNames.size() ? paramNames[i]
                                               : "p" + std::to_string(i);
    FailureOr<mf::TensorSpec> t = tensorOf(launch, v.getType(), name,
                                           isWorkspace ? mf::Role::Workspace
                                           : isInput   ? mf::Role::Input
                                                       : mf::Role::Output);
    if (failed(t))
      return failure();
    kernel.params.push_back(std::move(*t));
    if (auto arg = dyn_cast<BlockArgument>(v))
      args.push_back({mf::LaunchArg::Kind::Arg, arg.getArgNumber()});
    else if (bufferIds.count(v))
      args.push_back({mf::LaunchArg::Kind::Buffer, bufferIds.lookup(v)});
    else
      return emitError(launch.getLoc(), "kernel operand #")
                 << i << " is neither a function argument nor a buffer",
             failure();
  }

  if (fused) {
    if (failed(fusedSourceOps(launch, kernel, source, at)))
      return failure();
  } else {
    FailureOr<mf::OpSpec> op = sourceOp(launch, kernel, source, at);
    if (failed(op))
      return failure();
    kernel.ops.push_back(std::move(*op));
  }

  FailureOr<std::array<uint32_t, 3>> grid =
      dims(launch, launch.getGridSizes(), "grid");
  FailureOr<std::array<uint32_t, 3>> block =
      dims(launch, launch.getBlockSizes(), "block");
  if (failed(grid) || failed(block))
    return failure();
  kernel.grid = *grid;
  kernel.block = *block;
  if (std::optional<ArrayRef<int32_t>> cluster = launch.getClusterSize())
    for (size_t i = 0; i < 3; ++i)
      kernel.cluster[i] = static_cast<uint32_t>((*cluster)[i]);
  {
    std::optional<int64_t> c =
        getConstantIntValue(launch.getDynamicSharedMemorySize());
    if (!c || *c < 0 || *c > std::numeric_limits<uint32_t>::max())
      return emitError(launch.getLoc(), "dynamic shared memory size is not "
                                        "a constant of 0 to 2^32 - 1"),
             failure();
    kernel.dynamicSharedBytes = static_cast<uint32_t>(*c);
  }
  if (kopt::ScheduleAttr sched = launch.getScheduleAttr()) {
    nlohmann::json j = kopt::schedule::toJSON(sched.getSchedule());
    mf::ScheduleSpec s;
    s.copy = j.value("copy", std::string());
    s.tmaStore = j.value("tma_store", false);
    s.blockM = j.value("block_m", int64_t(0));
    s.blockN = j.value("block_n", int64_t(0));
    s.numWarps = j.value("num_warps", int64_t(0));
    s.json = j.dump();
    kernel.schedule = std::move(s);
  }
  if (mf::Status st = mf::validateKernel(kernel, at); !st.ok())
    return emitError(launch.getLoc(), "invalid launch manifest: ")
               << st.message(),
           failure();
  return kernel;
}

} // namespace

FailureOr<std::string>
kopt::buildManifest(ModuleOp module, StringRef ptxFileName, StringRef chip) {
  mf::Manifest manifest;
  manifest.chip = chip.str();
  manifest.ptx = ptxFileName.str();
  if (!mf::isValidUTF8(manifest.ptx))
    return emitError(module.getLoc(),
                     "the PTX file's name is not valid UTF-8, and the launch "
                     "manifest (JSON) names it; choose another output"),
           failure();
  if (!mf::isValidUTF8(manifest.chip))
    return emitError(module.getLoc(), "the chip's name is not valid UTF-8"),
           failure();

  for (auto func : module.getOps<func::FuncOp>()) {
    if (func.isExternal())
      continue;
    int64_t numResults = 0;
    if (auto n = func->getAttrOfType<IntegerAttr>("kopt.result_count"))
      numResults = n.getInt();
    int64_t numInputs = func.getNumArguments() - numResults;
    mf::FunctionSpec fn;
    fn.name = func.getName().str();
    std::string at =
        "functions[" + std::to_string(manifest.functions.size()) + "]";
    if (!mf::isValidUTF8(fn.name))
      return emitError(func.getLoc(), "the function's name is not valid "
                                      "UTF-8, and the launch manifest (JSON) "
                                      "names it; rename the function"),
             failure();
    for (auto [i, arg] : llvm::enumerate(func.getArguments())) {
      bool isInput = static_cast<int64_t>(i) < numInputs;
      std::string name = isInput ? "arg" + std::to_string(i)
                                 : "out" + std::to_string(i - numInputs);
      FailureOr<mf::TensorSpec> t =
          tensorOf(func, arg.getType(), name,
                   isInput ? mf::Role::Input : mf::Role::Output);
      if (failed(t))
        return failure();
      fn.args.push_back(std::move(*t));
    }
    DenseMap<Value, int64_t> bufferIds;
    WalkResult walk = func.walk([&](Operation *op) -> WalkResult {
      if (auto alloc = dyn_cast<memref::AllocOp>(op)) {
        int64_t id = bufferIds.size();
        bufferIds[alloc.getResult()] = id;
        FailureOr<mf::TensorSpec> t =
            tensorOf(op, alloc.getType(), "", mf::Role::Input);
        if (failed(t))
          return WalkResult::interrupt();
        fn.buffers.push_back(
            {id, t->dtype, t->shape, alloc->hasAttr("kopt.workspace")});
        return WalkResult::advance();
      }
      auto launch = dyn_cast<kopt::LaunchOp>(op);
      if (!launch)
        return WalkResult::advance();
      mf::LaunchSpec l;
      FailureOr<mf::KernelSpec> kernel =
          kernelFromLaunch(launch, manifest.kernels.size(), bufferIds, l.args);
      if (failed(kernel))
        return WalkResult::interrupt();
      l.kernel = kernel->name;
      manifest.kernels.push_back(std::move(*kernel));
      fn.launches.push_back(std::move(l));
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return failure();
    if (mf::Status st = mf::validateFunction(fn, manifest, at); !st.ok())
      return emitError(func.getLoc(), "invalid launch manifest: ")
                 << st.message(),
             failure();
    manifest.functions.push_back(std::move(fn));
  }
  // Kernels and functions passed one by one; the whole once more (unique
  // kernel names), exactly as the runtime's reader will.
  if (mf::Status st = mf::validateManifest(manifest, ""); !st.ok())
    return emitError(module.getLoc(), "invalid launch manifest: ")
               << st.message(),
           failure();
  return mf::writeManifest(manifest);
}
