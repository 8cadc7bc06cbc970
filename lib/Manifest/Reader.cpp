//===- Reader.cpp - Read the launch manifest from JSON --------------------===//
//
// Turns manifest text into the structs of include/kopt/Manifest/Manifest.h,
// checking every field's type, then validates the result (Validate.cpp,
// TensorMaps.cpp): the runtime accepts exactly what validateManifest accepts.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

using json = nlohmann::json;

namespace kopt::manifest {

using namespace detail;

namespace {

/// Reads fields of one JSON document, naming the source file and the field
/// path in every error.
class Reader {
public:
  explicit Reader(std::string sourceName) : source(std::move(sourceName)) {}

  /// "<source>: <path>", or `path` for a reader without a source name.
  std::string located(const std::string &path) const {
    return source.empty() ? path : source + ": " + path;
  }

  Status error(const std::string &path, const std::string &message) const {
    return Status::error(located(path) + ": " + message);
  }

  static const char *typeName(const json &v) {
    if (v.is_number_integer())
      return "an integer";
    if (v.is_number_float())
      return "a number";
    if (v.is_string())
      return "a string";
    if (v.is_boolean())
      return "a boolean";
    if (v.is_array())
      return "an array";
    if (v.is_object())
      return "an object";
    return "null";
  }

  /// obj[key], or a "missing field" error.
  Expected<const json *> field(const json &obj, const std::string &path,
                               const char *key) const {
    auto it = obj.find(key);
    if (it == obj.end())
      return error(sub(path, key), "missing field");
    return &*it;
  }

  static std::string sub(const std::string &path, const char *key) {
    return path.empty() ? std::string(key) : path + "." + key;
  }
  static std::string sub(const std::string &path, size_t index) {
    return path + "[" + std::to_string(index) + "]";
  }

  Expected<std::string> getString(const json &obj, const std::string &path,
                                  const char *key) const {
    Expected<const json *> v = field(obj, path, key);
    if (!v.ok())
      return v.status();
    if (!(*v)->is_string())
      return error(sub(path, key),
                   std::string("must be a string, got ") + typeName(**v));
    return (*v)->get<std::string>();
  }

  Expected<int64_t> asInt(const json &v, const std::string &path) const {
    if (!v.is_number_integer())
      return error(path, std::string("must be an integer, got ") + typeName(v));
    if (v.is_number_unsigned() &&
        v.get<uint64_t>() >
            static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      return error(path, "integer out of range");
    return v.get<int64_t>();
  }

  Expected<int64_t> getInt(const json &obj, const std::string &path,
                           const char *key) const {
    Expected<const json *> v = field(obj, path, key);
    if (!v.ok())
      return v.status();
    return asInt(**v, sub(path, key));
  }

  Expected<const json *> getArray(const json &obj, const std::string &path,
                                  const char *key) const {
    Expected<const json *> v = field(obj, path, key);
    if (!v.ok())
      return v;
    if (!(*v)->is_array())
      return error(sub(path, key),
                   std::string("must be an array, got ") + typeName(**v));
    return v;
  }

  Status expectObject(const json &v, const std::string &path) const {
    if (!v.is_object())
      return error(path, std::string("must be an object, got ") + typeName(v));
    return Status::success();
  }

  Expected<DType> getDType(const json &obj, const std::string &path) const {
    Expected<std::string> name = getString(obj, path, "dtype");
    if (!name.ok())
      return name.status();
    std::optional<DType> dtype = parseDType(*name);
    if (!dtype)
      return error(sub(path, "dtype"),
                   "unknown dtype '" + *name + "' (expected f32, f16 or bf16)");
    return *dtype;
  }

  /// A shape: an array of positive integers whose element count and byte
  /// size (at 4 bytes an element) fit in int64_t.
  Expected<Shape> getShape(const json &obj, const std::string &path) const {
    Expected<const json *> arr = getArray(obj, path, "shape");
    if (!arr.ok())
      return arr.status();
    std::string at = sub(path, "shape");
    Shape shape;
    int64_t elements = 1;
    const int64_t limit = std::numeric_limits<int64_t>::max() / 4;
    for (size_t i = 0; i < (*arr)->size(); ++i) {
      Expected<int64_t> d = asInt((**arr)[i], sub(at, i));
      if (!d.ok())
        return d.status();
      if (*d <= 0)
        return error(sub(at, i),
                     "dimension " + std::to_string(*d) + " must be positive");
      if (elements > limit / *d)
        return error(at, "too many elements (the byte size overflows 64 bits)");
      elements *= *d;
      shape.push_back(*d);
    }
    return shape;
  }

  Expected<TensorSpec> getTensor(const json &v, const std::string &path) const {
    KOPT_RETURN_IF_ERROR(expectObject(v, path));
    TensorSpec t;
    Expected<std::string> name = getString(v, path, "name");
    if (!name.ok())
      return name.status();
    t.name = *name;
    Expected<std::string> role = getString(v, path, "role");
    if (!role.ok())
      return role.status();
    if (*role == "input")
      t.role = Role::Input;
    else if (*role == "output")
      t.role = Role::Output;
    else if (*role == "workspace")
      t.role = Role::Workspace;
    else
      return error(sub(path, "role"), "unknown role '" + *role +
                                          "' (expected input, output or "
                                          "workspace)");
    Expected<DType> dtype = getDType(v, path);
    if (!dtype.ok())
      return dtype.status();
    t.dtype = *dtype;
    Expected<Shape> shape = getShape(v, path);
    if (!shape.ok())
      return shape.status();
    t.shape = shape.take();
    return t;
  }

  /// An array of exactly three positive integers, each at most `limits[i]`.
  /// An array of exactly three integers, each in [1, limits[i]].
  Expected<std::array<uint32_t, 3>>
  getDims(const json &obj, const std::string &path, const char *key,
          const std::array<int64_t, 3> &limits) const {
    Expected<const json *> arr = getArray(obj, path, key);
    if (!arr.ok())
      return arr.status();
    std::string at = sub(path, key);
    if ((*arr)->size() != 3)
      return error(at, "must have 3 entries (x, y, z), got " +
                           std::to_string((*arr)->size()));
    std::array<uint32_t, 3> dims{};
    for (size_t i = 0; i < 3; ++i) {
      Expected<int64_t> d = asInt((**arr)[i], sub(at, i));
      if (!d.ok())
        return d.status();
      KOPT_RETURN_IF_ERROR(checkDim(located(sub(at, i)), *d, limits[i]));
      dims[i] = static_cast<uint32_t>(*d);
    }
    return dims;
  }

  Expected<bool> getBool(const json &obj, const std::string &path,
                         const char *key) const {
    Expected<const json *> v = field(obj, path, key);
    if (!v.ok())
      return v.status();
    if (!(*v)->is_boolean())
      return error(sub(path, key),
                   std::string("must be a boolean, got ") + typeName(**v));
    return (*v)->get<bool>();
  }

  Expected<double> getNumber(const json &obj, const std::string &path,
                             const char *key) const {
    Expected<const json *> v = field(obj, path, key);
    if (!v.ok())
      return v.status();
    if (!(*v)->is_number())
      return error(sub(path, key),
                   std::string("must be a number, got ") + typeName(**v));
    return (*v)->get<double>();
  }

  Expected<ScheduleSpec> getSchedule(const json &v,
                                     const std::string &path) const {
    KOPT_RETURN_IF_ERROR(expectObject(v, path));
    ScheduleSpec s;
    Expected<std::string> copy = getString(v, path, "copy");
    if (!copy.ok())
      return copy.status();
    s.copy = *copy;
    if (v.contains("num_warps")) {
      Expected<int64_t> warps = getInt(v, path, "num_warps");
      if (!warps.ok())
        return warps.status();
      if (*warps < 1 || *warps > 32)
        return error(sub(path, "num_warps"), "value " + std::to_string(*warps) +
                                                 " out of range [1, 32]");
      s.numWarps = *warps;
    }
    if (v.contains("warp_specialize")) {
      Expected<bool> ws = getBool(v, path, "warp_specialize");
      if (!ws.ok())
        return ws.status();
    }
    if (v.contains("tma_store")) {
      Expected<bool> store = getBool(v, path, "tma_store");
      if (!store.ok())
        return store.status();
      s.tmaStore = *store;
    }
    if (s.copy != "tma" && !s.tmaStore)
      return s;
    Expected<int64_t> blockM = getInt(v, path, "block_m");
    if (!blockM.ok())
      return blockM.status();
    Expected<int64_t> blockN = getInt(v, path, "block_n");
    if (!blockN.ok())
      return blockN.status();
    s.blockM = *blockM;
    s.blockN = *blockN;
    return s;
  }

  /// One `tensor_maps` entry: its fields' types; validateTensorMaps checks
  /// their values against the kernel's parameters.
  Expected<TensorMapSpec> getTensorMap(const json &v,
                                       const std::string &path) const {
    KOPT_RETURN_IF_ERROR(expectObject(v, path));
    TensorMapSpec map;
    Expected<std::string> tensor = getString(v, path, "tensor");
    if (!tensor.ok())
      return tensor.status();
    map.tensor = *tensor;
    Expected<const json *> box = getArray(v, path, "box");
    if (!box.ok())
      return box.status();
    for (size_t i = 0; i < (*box)->size(); ++i) {
      Expected<int64_t> b = asInt((**box)[i], sub(sub(path, "box"), i));
      if (!b.ok())
        return b.status();
      map.box.push_back(*b);
    }
    Expected<int64_t> swizzle = getInt(v, path, "swizzle");
    if (!swizzle.ok())
      return swizzle.status();
    if (*swizzle < 0 || *swizzle > 1024) // keeps it an int
      return error(sub(path, "swizzle"), badSwizzle(*swizzle));
    map.swizzle = static_cast<int>(*swizzle);
    return map;
  }

  /// The attributes of an op of `kind` (`path` names the attrs object); the
  /// kind's own attributes are required, others ignored.
  Status readAttrs(const json &attrs, const std::string &path, OpKind kind,
                   OpAttrs &out) const {
    switch (kind) {
    case OpKind::Matmul: {
      Expected<bool> ta = getBool(attrs, path, "transpose_a");
      if (!ta.ok())
        return ta.status();
      Expected<bool> tb = getBool(attrs, path, "transpose_b");
      if (!tb.ok())
        return tb.status();
      out.transposeA = *ta;
      out.transposeB = *tb;
      // Optional: absent means exact f32 semantics.
      if (attrs.contains("tf32")) {
        Expected<bool> tf32 = getBool(attrs, path, "tf32");
        if (!tf32.ok())
          return tf32.status();
        out.tf32 = *tf32;
      }
      break;
    }
    case OpKind::Pack: {
      Expected<bool> t = getBool(attrs, path, "transpose");
      if (!t.ok())
        return t.status();
      out.transpose = *t;
      break;
    }
    case OpKind::Gelu: {
      Expected<std::string> a = getString(attrs, path, "approximate");
      if (!a.ok())
        return a.status();
      if (*a == "none")
        out.approximate = GeluApproximation::None;
      else if (*a == "tanh")
        out.approximate = GeluApproximation::Tanh;
      else
        return error(sub(path, "approximate"),
                     "unknown value '" + *a + "' (expected none or tanh)");
      break;
    }
    case OpKind::Reduce: {
      Expected<std::string> k = getString(attrs, path, "kind");
      if (!k.ok())
        return k.status();
      if (*k == "sum")
        out.reduceKind = ReduceKind::Sum;
      else if (*k == "max")
        out.reduceKind = ReduceKind::Max;
      else if (*k == "mean")
        out.reduceKind = ReduceKind::Mean;
      else
        return error(sub(path, "kind"), "unknown reduction '" + *k +
                                            "' (expected sum, max or mean)");
      break;
    }
    case OpKind::RmsNorm:
    case OpKind::LayerNorm: {
      // The range is validateOps' (epsError).
      Expected<double> eps = getNumber(attrs, path, "eps");
      if (!eps.ok())
        return eps.status();
      out.eps = *eps;
      break;
    }
    default:
      break;
    }
    return Status::success();
  }

  /// One `ops` entry: {"op", "attrs" (optional), "operands", "result"}.
  Expected<OpSpec> getOp(const json &v, const std::string &path) const {
    KOPT_RETURN_IF_ERROR(expectObject(v, path));
    OpSpec op;
    Expected<std::string> name = getString(v, path, "op");
    if (!name.ok())
      return name.status();
    std::optional<OpKind> kind = parseOpKind(*name);
    if (!kind)
      return error(sub(path, "op"), "unknown op '" + *name + "'");
    op.kind = *kind;

    static const json kEmpty = json::object();
    const json *attrs = &kEmpty;
    if (auto it = v.find("attrs"); it != v.end()) {
      KOPT_RETURN_IF_ERROR(expectObject(*it, sub(path, "attrs")));
      attrs = &*it;
    }
    KOPT_RETURN_IF_ERROR(
        readAttrs(*attrs, sub(path, "attrs"), op.kind, op.attrs));

    // Operands, an object keyed by operand name; kept in the op's order.
    Expected<const json *> operands = field(v, path, "operands");
    if (!operands.ok())
      return operands.status();
    std::string oat = sub(path, "operands");
    KOPT_RETURN_IF_ERROR(expectObject(**operands, oat));
    std::vector<std::string> names = operandNames(op.kind, nullptr);
    for (auto it = (*operands)->begin(); it != (*operands)->end(); ++it)
      if (std::find(names.begin(), names.end(), it.key()) == names.end())
        return error(sub(oat, it.key().c_str()),
                     "op " + *name + " has no operand '" + it.key() +
                         "' (its operands are " + joinNames(names) + ")");
    for (const std::string &n : names) {
      if (!(*operands)->contains(n))
        continue;
      Expected<std::string> value = getString(**operands, oat, n.c_str());
      if (!value.ok())
        return value.status();
      op.operands.push_back({n, *value});
    }
    Expected<std::string> result = getString(v, path, "result");
    if (!result.ok())
      return result.status();
    op.result = *result;
    return op;
  }

  Expected<KernelSpec> getKernel(const json &v, const std::string &path) const {
    KOPT_RETURN_IF_ERROR(expectObject(v, path));
    KernelSpec k;
    Expected<std::string> name = getString(v, path, "name");
    if (!name.ok())
      return name.status();
    if (name->empty())
      return error(sub(path, "name"), "must not be empty");
    k.name = *name;
    // From here on, name the kernel in paths: "kernels[0] (softmax_0)".
    std::string at = path + " (" + k.name + ")";

    Expected<std::string> cls = getString(v, at, "class");
    if (!cls.ok())
      return cls.status();
    std::optional<KernelClass> kernelClass = parseKernelClass(*cls);
    if (!kernelClass)
      return error(sub(at, "class"), "unknown class '" + *cls +
                                         "' (expected elementwise, row, "
                                         "matmul or pack)");
    k.cls = *kernelClass;

    if (v.contains("op"))
      return error(sub(at, "op"),
                   "a version 1 field: a version 2 kernel lists its ops in "
                   "'ops'; re-compile the module with kopt-opt");
    Expected<const json *> ops = getArray(v, at, "ops");
    if (!ops.ok())
      return ops.status();
    for (size_t i = 0; i < (*ops)->size(); ++i) {
      Expected<OpSpec> op = getOp((**ops)[i], sub(sub(at, "ops"), i));
      if (!op.ok())
        return op.status();
      k.ops.push_back(op.take());
    }

    // values: optional (absent or [] = none), {name, dtype, shape} each.
    if (auto it = v.find("values"); it != v.end()) {
      std::string vat = sub(at, "values");
      if (!it->is_array())
        return error(vat,
                     std::string("must be an array, got ") + typeName(*it));
      for (size_t i = 0; i < it->size(); ++i) {
        const json &e = (*it)[i];
        std::string eat = sub(vat, i);
        KOPT_RETURN_IF_ERROR(expectObject(e, eat));
        TensorSpec t;
        Expected<std::string> vname = getString(e, eat, "name");
        if (!vname.ok())
          return vname.status();
        t.name = *vname;
        Expected<DType> dtype = getDType(e, eat);
        if (!dtype.ok())
          return dtype.status();
        t.dtype = *dtype;
        Expected<Shape> shape = getShape(e, eat);
        if (!shape.ok())
          return shape.status();
        t.shape = shape.take();
        k.values.push_back(std::move(t));
      }
    }

    Expected<const json *> params = getArray(v, at, "params");
    if (!params.ok())
      return params.status();
    for (size_t i = 0; i < (*params)->size(); ++i) {
      Expected<TensorSpec> t =
          getTensor((**params)[i], sub(sub(at, "params"), i));
      if (!t.ok())
        return t.status();
      k.params.push_back(t.take());
    }

    Expected<std::array<uint32_t, 3>> grid =
        getDims(v, at, "grid", kGridLimits);
    if (!grid.ok())
      return grid.status();
    k.grid = *grid;
    Expected<std::array<uint32_t, 3>> block =
        getDims(v, at, "block", kBlockLimits);
    if (!block.ok())
      return block.status();
    k.block = *block;
    // cluster: optional (absent = {1, 1, 1}).
    if (v.contains("cluster")) {
      Expected<std::array<uint32_t, 3>> cluster =
          getDims(v, at, "cluster", kClusterLimits);
      if (!cluster.ok())
        return cluster.status();
      k.cluster = *cluster;
    }

    Expected<int64_t> smem = getInt(v, at, "dynamic_shared_bytes");
    if (!smem.ok())
      return smem.status();
    if (*smem < 0 || *smem > std::numeric_limits<uint32_t>::max())
      return error(sub(at, "dynamic_shared_bytes"),
                   "value " + std::to_string(*smem) + " out of range");
    k.dynamicSharedBytes = static_cast<uint32_t>(*smem);

    // tensor_maps: optional (absent or [] = none).
    if (auto it = v.find("tensor_maps"); it != v.end()) {
      std::string mapsAt = sub(at, "tensor_maps");
      if (!it->is_array())
        return error(mapsAt,
                     std::string("must be an array, got ") + typeName(*it));
      for (size_t i = 0; i < it->size(); ++i) {
        Expected<TensorMapSpec> map = getTensorMap((*it)[i], sub(mapsAt, i));
        if (!map.ok())
          return map.status();
        k.tensorMaps.push_back(map.take());
      }
    }

    // schedule: optional, read on kernels with a matmul only; its copy
    // decides the tensor maps.
    if (auto it = v.find("schedule");
        it != v.end() && k.findOp(OpKind::Matmul)) {
      Expected<ScheduleSpec> schedule = getSchedule(*it, sub(at, "schedule"));
      if (!schedule.ok())
        return schedule.status();
      k.schedule = schedule.take();
      k.schedule->json = it->dump();
    }
    KOPT_RETURN_IF_ERROR(validateKernel(k, located(at)));
    return k;
  }

  /// A function's fields; validateFunction checks the launches against the
  /// kernels.
  Expected<FunctionSpec> getFunction(const json &v,
                                     const std::string &path) const {
    KOPT_RETURN_IF_ERROR(expectObject(v, path));
    FunctionSpec f;
    Expected<std::string> name = getString(v, path, "name");
    if (!name.ok())
      return name.status();
    f.name = *name;
    std::string at = path + " (" + f.name + ")";

    Expected<const json *> args = getArray(v, at, "args");
    if (!args.ok())
      return args.status();
    for (size_t i = 0; i < (*args)->size(); ++i) {
      Expected<TensorSpec> t = getTensor((**args)[i], sub(sub(at, "args"), i));
      if (!t.ok())
        return t.status();
      f.args.push_back(t.take());
    }

    Expected<const json *> buffers = getArray(v, at, "buffers");
    if (!buffers.ok())
      return buffers.status();
    for (size_t i = 0; i < (*buffers)->size(); ++i) {
      const json &b = (**buffers)[i];
      std::string bat = sub(sub(at, "buffers"), i);
      KOPT_RETURN_IF_ERROR(expectObject(b, bat));
      BufferSpec buf;
      Expected<int64_t> id = getInt(b, bat, "id");
      if (!id.ok())
        return id.status();
      buf.id = *id;
      Expected<DType> dtype = getDType(b, bat);
      if (!dtype.ok())
        return dtype.status();
      buf.dtype = *dtype;
      Expected<Shape> shape = getShape(b, bat);
      if (!shape.ok())
        return shape.status();
      buf.shape = shape.take();
      if (b.contains("role")) {
        Expected<std::string> role = getString(b, bat, "role");
        if (!role.ok())
          return role.status();
        if (*role != "workspace")
          return error(sub(bat, "role"), "unknown buffer role '" + *role +
                                             "' (expected workspace, or no "
                                             "role)");
        buf.workspace = true;
      }
      f.buffers.push_back(std::move(buf));
    }

    Expected<const json *> launches = getArray(v, at, "launches");
    if (!launches.ok())
      return launches.status();
    for (size_t i = 0; i < (*launches)->size(); ++i) {
      const json &l = (**launches)[i];
      std::string lat = sub(sub(at, "launches"), i);
      KOPT_RETURN_IF_ERROR(expectObject(l, lat));
      LaunchSpec launch;
      Expected<std::string> kernelName = getString(l, lat, "kernel");
      if (!kernelName.ok())
        return kernelName.status();
      launch.kernel = *kernelName;
      Expected<const json *> largs = getArray(l, lat, "args");
      if (!largs.ok())
        return largs.status();
      for (size_t j = 0; j < (*largs)->size(); ++j) {
        const json &a = (**largs)[j];
        std::string aat = sub(sub(lat, "args"), j);
        KOPT_RETURN_IF_ERROR(expectObject(a, aat));
        bool hasArg = a.contains("arg"), hasBuffer = a.contains("buffer");
        if (hasArg == hasBuffer)
          return error(aat, "must have exactly one of 'arg' and 'buffer'");
        LaunchArg arg;
        arg.kind = hasArg ? LaunchArg::Kind::Arg : LaunchArg::Kind::Buffer;
        Expected<int64_t> index = getInt(a, aat, hasArg ? "arg" : "buffer");
        if (!index.ok())
          return index.status();
        arg.index = *index;
        launch.args.push_back(arg);
      }
      f.launches.push_back(std::move(launch));
    }
    return f;
  }

  Expected<Manifest> getManifest(const json &doc) const {
    if (!doc.is_object())
      return Status::error(source +
                           ": the manifest must be a JSON object, got " +
                           typeName(doc));
    Manifest m;
    m.sourceName = source;
    Expected<int64_t> version = getInt(doc, "", "kopt_manifest_version");
    if (!version.ok())
      return version.status();
    if (*version == 1)
      return error("kopt_manifest_version",
                   "version 1 is no longer read (this runtime reads version " +
                       std::to_string(kManifestVersion) +
                       ", where each kernel lists its ops); re-compile the "
                       "module with kopt-opt");
    if (*version != kManifestVersion)
      return error("kopt_manifest_version",
                   "unsupported version " + std::to_string(*version) +
                       " (this runtime reads version " +
                       std::to_string(kManifestVersion) + ")");
    m.version = static_cast<int>(*version);

    Expected<std::string> chip = getString(doc, "", "chip");
    if (!chip.ok())
      return chip.status();
    m.chip = *chip;
    Expected<std::string> ptx = getString(doc, "", "ptx");
    if (!ptx.ok())
      return ptx.status();
    if (ptx->empty())
      return error("ptx", "must not be empty");
    m.ptx = *ptx;

    Expected<const json *> kernels = getArray(doc, "", "kernels");
    if (!kernels.ok())
      return kernels.status();
    for (size_t i = 0; i < (*kernels)->size(); ++i) {
      Expected<KernelSpec> k = getKernel((**kernels)[i], sub("kernels", i));
      if (!k.ok())
        return k.status();
      if (m.findKernel(k->name))
        return error(sub("kernels", i) + ".name",
                     "duplicate kernel name '" + k->name + "'");
      m.kernels.push_back(k.take());
    }

    Expected<const json *> functions = getArray(doc, "", "functions");
    if (!functions.ok())
      return functions.status();
    for (size_t i = 0; i < (*functions)->size(); ++i) {
      Expected<FunctionSpec> f =
          getFunction((**functions)[i], sub("functions", i));
      if (!f.ok())
        return f.status();
      m.functions.push_back(f.take());
    }
    // Kernels were validated as they were read; the whole manifest once more
    // (functions against kernels), as the compiler does before writing.
    KOPT_RETURN_IF_ERROR(validateManifest(m, source));
    return m;
  }

private:
  std::string source;
};

} // namespace

Expected<OpAttrs> parseOpAttrs(OpKind kind, std::string_view attrsJson,
                               const std::string &where) {
  json attrs = json::parse(attrsJson.begin(), attrsJson.end(), nullptr,
                           /*allow_exceptions=*/false);
  if (attrs.is_discarded() || !attrs.is_object())
    return Status::error(where + ": not a JSON object");
  OpSpec op;
  KOPT_RETURN_IF_ERROR(Reader("").readAttrs(attrs, where, kind, op.attrs));
  return op.attrs;
}

Expected<Manifest> parseManifest(std::string_view text,
                                 const std::string &sourceName,
                                 const std::string &baseDir) {
  json doc;
  try {
    doc = json::parse(text.begin(), text.end());
  } catch (const json::exception &e) {
    // e.what() reads "[json.exception.parse_error.101] parse error at line 3,
    // column 5: ..."; drop the bracketed id.
    std::string what = e.what();
    if (size_t close = what.find("] ");
        !what.empty() && what[0] == '[' && close != std::string::npos)
      what = what.substr(close + 2);
    return Status::error(sourceName + ": invalid JSON: " + what);
  }

  Expected<Manifest> m = [&]() -> Expected<Manifest> {
    try {
      return Reader(sourceName).getManifest(doc);
    } catch (const std::exception &e) {
      // Not expected (every access is checked), but never let one escape.
      return Status::error(sourceName + ": " + e.what());
    }
  }();
  if (!m.ok())
    return m;
  std::filesystem::path ptx(m->ptx);
  m->ptxPath = (ptx.is_absolute() || baseDir.empty())
                   ? ptx.string()
                   : (std::filesystem::path(baseDir) / ptx).string();
  return m;
}

Expected<Manifest> loadManifest(const std::string &path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    return Status::error(path + ": is a directory, not a manifest file");
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return Status::error(path +
                         ": cannot open manifest: " + std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad())
    return Status::error(path + ": cannot read manifest");
  std::string baseDir = std::filesystem::path(path).parent_path().string();
  return parseManifest(text.str(), path, baseDir);
}

} // namespace kopt::manifest
