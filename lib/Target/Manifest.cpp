//===- Manifest.cpp - PTX extraction and the launch manifest --------------===//

#include "kopt/Dialect/Kopt/KoptDialect.h"
#include "kopt/Target/PTX.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

#include <nlohmann/json.hpp>

using namespace mlir;
using json = nlohmann::ordered_json;

FailureOr<std::string> kopt::extractPTX(ModuleOp module) {
  std::string ptx;
  bool found = false;
  for (auto binary : module.getOps<gpu::BinaryOp>()) {
    for (Attribute a : binary.getObjects()) {
      auto object = dyn_cast<gpu::ObjectAttr>(a);
      if (!object || object.getFormat() != gpu::CompilationTarget::Assembly)
        continue;
      ptx += object.getObject().getValue().str();
      found = true;
    }
  }
  if (!found)
    return emitError(module.getLoc(),
                     "no gpu.binary with PTX (format=isa) in the module; run "
                     "gpu-module-to-binary{format=isa} first"),
           failure();
  return ptx;
}

SmallVector<std::string> kopt::unresolvedFunctions(StringRef ptx) {
  SmallVector<std::string> names;
  SmallVector<StringRef> lines;
  ptx.split(lines, '\n');
  for (StringRef line : lines) {
    line = line.trim();
    if (!line.consume_front(".extern .func"))
      continue;
    // `.extern .func (.param .b32 retval) __nv_expf(` or `.extern .func foo(`
    line = line.trim();
    if (line.starts_with("("))
      line =
          line.drop_until([](char c) { return c == ')'; }).drop_front().trim();
    names.push_back(line.take_until([](char c) { return c == '(' || c == ';'; })
                        .trim()
                        .str());
  }
  return names;
}

static FailureOr<std::string> dtypeName(Operation *at, Type t) {
  if (t.isF32())
    return std::string("f32");
  if (t.isF16())
    return std::string("f16");
  if (t.isBF16())
    return std::string("bf16");
  return emitError(at->getLoc(), "unsupported element type ")
             << t << " in the manifest",
         failure();
}

/// `{"name", "role", "dtype", "shape"}` of one buffer.
static FailureOr<json> bufferJSON(Operation *at, Type type, StringRef name,
                                  StringRef role) {
  auto m = dyn_cast<MemRefType>(type);
  if (!m || !m.hasStaticShape() || !m.getLayout().isIdentity())
    return emitError(at->getLoc(), "launch parameter of type ")
               << type << " is not a static, identity-layout memref",
           failure();
  FailureOr<std::string> dtype = dtypeName(at, m.getElementType());
  if (failed(dtype))
    return failure();
  json j;
  if (!name.empty())
    j["name"] = name.str();
  if (!role.empty())
    j["role"] = role.str();
  j["dtype"] = *dtype;
  j["shape"] = m.getShape().vec();
  return j;
}

static json attrJSON(Attribute a) {
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

static FailureOr<std::array<int64_t, 3>>
dims(gpu::LaunchFuncOp launch, gpu::KernelDim3 d, StringRef what) {
  std::array<int64_t, 3> out;
  Value vs[3] = {d.x, d.y, d.z};
  for (int i = 0; i < 3; ++i) {
    std::optional<int64_t> c = getConstantIntValue(vs[i]);
    if (!c)
      return emitError(launch.getLoc(), "the launch's ")
                 << what << " is not constant",
             failure();
    out[i] = *c;
  }
  return out;
}

FailureOr<std::string>
kopt::buildManifest(ModuleOp module, StringRef ptxFileName, StringRef chip) {
  json manifest;
  manifest["kopt_manifest_version"] = 1;
  manifest["chip"] = chip.str();
  manifest["ptx"] = ptxFileName.str();
  json kernels = json::array(), functions = json::array();

  for (auto func : module.getOps<func::FuncOp>()) {
    if (func.isExternal())
      continue;
    int64_t numResults = 0;
    if (auto n = func->getAttrOfType<IntegerAttr>("kopt.result_count"))
      numResults = n.getInt();
    int64_t numInputs = func.getNumArguments() - numResults;
    json fn;
    fn["name"] = func.getName().str();
    json args = json::array(), buffers = json::array(),
         launches = json::array();
    for (auto [i, arg] : llvm::enumerate(func.getArguments())) {
      bool isInput = static_cast<int64_t>(i) < numInputs;
      std::string name = isInput ? "arg" + std::to_string(i)
                                 : "out" + std::to_string(i - numInputs);
      FailureOr<json> j =
          bufferJSON(func, arg.getType(), name, isInput ? "input" : "output");
      if (failed(j))
        return failure();
      args.push_back(*j);
    }
    DenseMap<Value, int64_t> bufferIds;
    WalkResult walk = func.walk([&](Operation *op) -> WalkResult {
      if (auto alloc = dyn_cast<memref::AllocOp>(op)) {
        int64_t id = bufferIds.size();
        bufferIds[alloc.getResult()] = id;
        FailureOr<json> j =
            bufferJSON(op, alloc.getType(), "",
                       alloc->hasAttr("kopt.workspace") ? "workspace" : "");
        if (failed(j))
          return WalkResult::interrupt();
        (*j)["id"] = id;
        buffers.push_back(*j);
        return WalkResult::advance();
      }
      auto launch = dyn_cast<gpu::LaunchFuncOp>(op);
      if (!launch)
        return WalkResult::advance();
      json kernel;
      kernel["name"] = launch.getKernelName().getValue().str();
      if (auto cls = launch->getAttrOfType<StringAttr>("kopt.class"))
        kernel["class"] = cls.getValue().str();
      SmallVector<std::string> paramNames;
      auto source = launch->getAttrOfType<DictionaryAttr>("kopt.source");
      if (!source || !source.getAs<StringAttr>("name"))
        return emitError(launch.getLoc(), "kernel '")
                   << launch.getKernelName().getValue()
                   << "' has no `source` naming the op it computes (kopt-fuse "
                      "sets it on each kopt.kernel); the launch manifest needs "
                      "it",
               WalkResult::interrupt();
      {
        if (auto name = source.getAs<StringAttr>("name"))
          kernel["op"] = name.getValue().str();
        kernel["attrs"] = source.get("attrs") ? attrJSON(source.get("attrs"))
                                              : json::object();
        if (auto names = source.getAs<ArrayAttr>("params"))
          for (Attribute n : names)
            paramNames.push_back(cast<StringAttr>(n).getValue().str());
      }
      int64_t numKernelInputs = launch.getNumKernelOperands();
      if (auto n = launch->getAttrOfType<IntegerAttr>("kopt.num_inputs"))
        numKernelInputs = n.getInt();
      // Parameters after the inputs and outputs are workspaces (split-K).
      int64_t numKernelIO = launch.getNumKernelOperands();
      if (auto n = launch->getAttrOfType<IntegerAttr>("kopt.num_outputs"))
        numKernelIO = numKernelInputs + n.getInt();
      json params = json::array(), launchArgs = json::array(),
           tensorMaps = json::array();
      for (auto [i, v] : llvm::enumerate(launch.getKernelOperands())) {
        // A tensor map (copy = tma): the runtime encodes it from the
        // parameter it names; launches do not bind it.
        if (Operation *def = v.getDefiningOp())
          if (auto map =
                  def->getAttrOfType<DictionaryAttr>("kopt.tensor_map")) {
            auto tensor = map.getAs<IntegerAttr>("tensor");
            auto box = map.getAs<DenseI64ArrayAttr>("box");
            auto swizzle = map.getAs<IntegerAttr>("swizzle");
            if (!tensor || !box || !swizzle || tensor.getInt() < 0 ||
                tensor.getInt() >= static_cast<int64_t>(params.size()))
              return emitError(launch.getLoc(), "kernel operand #")
                         << i << " is a malformed tensor map " << map,
                     WalkResult::interrupt();
            tensorMaps.push_back({{"tensor", params[tensor.getInt()]["name"]},
                                  {"box", json(box.asArrayRef().vec())},
                                  {"swizzle", swizzle.getInt()}});
            continue;
          }
        bool isInput = static_cast<int64_t>(i) < numKernelInputs;
        bool isWorkspace = static_cast<int64_t>(i) >= numKernelIO;
        std::string name = isWorkspace             ? "workspace"
                           : i < paramNames.size() ? paramNames[i]
                                                   : "p" + std::to_string(i);
        FailureOr<json> j = bufferJSON(launch, v.getType(), name,
                                       isWorkspace ? "workspace"
                                       : isInput   ? "input"
                                                   : "output");
        if (failed(j))
          return WalkResult::interrupt();
        params.push_back(*j);
        if (auto arg = dyn_cast<BlockArgument>(v))
          launchArgs.push_back({{"arg", arg.getArgNumber()}});
        else if (bufferIds.count(v))
          launchArgs.push_back({{"buffer", bufferIds.lookup(v)}});
        else
          return emitError(launch.getLoc(), "kernel operand #")
                     << i << " is neither a function argument nor a buffer",
                 WalkResult::interrupt();
      }
      kernel["params"] = params;
      if (!tensorMaps.empty())
        kernel["tensor_maps"] = tensorMaps;
      FailureOr<std::array<int64_t, 3>> grid =
          dims(launch, launch.getGridSizeOperandValues(), "grid");
      FailureOr<std::array<int64_t, 3>> block =
          dims(launch, launch.getBlockSizeOperandValues(), "block");
      if (failed(grid) || failed(block))
        return WalkResult::interrupt();
      kernel["grid"] = *grid;
      kernel["block"] = *block;
      int64_t shared = 0;
      if (Value s = launch.getDynamicSharedMemorySize()) {
        std::optional<int64_t> c = getConstantIntValue(s);
        if (!c)
          return emitError(launch.getLoc(),
                           "dynamic shared memory size is not constant"),
                 WalkResult::interrupt();
        shared = *c;
      }
      kernel["dynamic_shared_bytes"] = shared;
      if (auto sched =
              launch->getAttrOfType<kopt::ScheduleAttr>("kopt.schedule"))
        kernel["schedule"] = kopt::schedule::toJSON(sched.getSchedule());
      kernels.push_back(kernel);
      launches.push_back({{"kernel", kernel["name"]}, {"args", launchArgs}});
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return failure();
    fn["args"] = args;
    fn["buffers"] = buffers;
    fn["launches"] = launches;
    functions.push_back(fn);
  }
  manifest["kernels"] = kernels;
  manifest["functions"] = functions;
  return manifest.dump(2) + "\n";
}
