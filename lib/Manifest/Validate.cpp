//===- Validate.cpp - The rules of the launch manifest --------------------===//
//
// The ops graph of a kernel, its launch dimensions, the functions' launches
// and the names (docs/manifest.md). The reader runs these on every manifest it
// parses, the compiler on every manifest before writing it.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"

#include <algorithm>
#include <map>
#include <set>

namespace kopt::manifest {

using namespace detail;

namespace {

/// Numpy broadcasting: is `operand` broadcastable to `result`?
bool broadcastsTo(const Shape &operand, const Shape &result) {
  if (operand.size() > result.size())
    return false;
  size_t offset = result.size() - operand.size();
  for (size_t i = 0; i < operand.size(); ++i)
    if (operand[i] != 1 && operand[i] != result[offset + i])
      return false;
  return true;
}

/// The numpy broadcast of two shapes, or nullopt.
std::optional<Shape> broadcastShapes(const Shape &a, const Shape &b) {
  size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1)
      return std::nullopt;
    out[i] = da == 1 ? db : da;
  }
  return out;
}

/// "not valid UTF-8" when `text` is not, naming the field `at`.
Status checkUTF8(const std::string &text, const std::string &at) {
  if (isValidUTF8(text))
    return Status::success();
  return fail(at, "not valid UTF-8 (JSON strings must be); rename it");
}

/// The shapes and dtypes of one op's operands and result (docs/manifest.md,
/// `ops`). `operand(name)` is the tensor an operand reads, null when absent;
/// `at` names the op ("kernels[0] (mm_0).ops[0]").
Status checkOpTypes(const OpSpec &op, const TensorSpec &result,
                    const std::map<std::string, const TensorSpec *> &operand,
                    const std::string &at) {
  const char *name = opName(op.kind);
  auto get = [&](const char *n) -> const TensorSpec * {
    auto it = operand.find(n);
    return it == operand.end() ? nullptr : it->second;
  };
  auto shapeError = [&](const std::string &message) {
    return fail(at, std::string("op ") + name + ": " + message);
  };

  if (op.kind == OpKind::Matmul) {
    const TensorSpec &a = *get("a"), &b = *get("b");
    if (a.shape.size() != 2 || b.shape.size() != 2 || result.shape.size() != 2)
      return shapeError("operands must be 2-D (got " + describe(a) + ", " +
                        describe(b) + ", " + describe(result) + ")");
    if (a.dtype != b.dtype)
      return shapeError(std::string("'a' and 'b' must have the same dtype "
                                    "(got ") +
                        dtypeName(a.dtype) + " and " + dtypeName(b.dtype) +
                        ")");
    // TF32 rounds f32 operands; it means nothing for f16/bf16 ones.
    if (op.attrs.tf32 && a.dtype != DType::F32)
      return fail(at + ".attrs.tf32",
                  std::string("tf32 needs f32 operands, 'a' and 'b' are ") +
                      dtypeName(a.dtype));
    int64_t m = op.attrs.transposeA ? a.shape[1] : a.shape[0];
    int64_t ka = op.attrs.transposeA ? a.shape[0] : a.shape[1];
    int64_t kb = op.attrs.transposeB ? b.shape[1] : b.shape[0];
    int64_t n = op.attrs.transposeB ? b.shape[0] : b.shape[1];
    if (ka != kb)
      return shapeError(
          "contraction sizes differ: " + describe(a) + " and " + describe(b) +
          " with transpose_a=" + (op.attrs.transposeA ? "true" : "false") +
          ", transpose_b=" + (op.attrs.transposeB ? "true" : "false"));
    if (result.shape != Shape{m, n})
      return shapeError("result must be " + shapeToString({m, n}) + ", got " +
                        shapeToString(result.shape));
    return Status::success();
  }

  if (op.kind == OpKind::Pack) {
    const TensorSpec &input = *get("input");
    if (input.shape.size() != 2 || result.shape.size() != 2)
      return shapeError("'input' and 'result' must be 2-D (got " +
                        describe(input) + ", " + describe(result) + ")");
    if (input.dtype != result.dtype)
      return shapeError(std::string("copies without conversion: 'input' is ") +
                        dtypeName(input.dtype) + ", 'result' " +
                        dtypeName(result.dtype));
    Shape src = input.shape;
    if (op.attrs.transpose)
      std::swap(src[0], src[1]);
    if (result.shape[0] < src[0] || result.shape[1] < src[1])
      return shapeError(describe(result) + " is smaller than " +
                        (op.attrs.transpose ? "the transposed " : "") +
                        describe(input));
    return Status::success();
  }

  if (isBinaryOp(op.kind)) {
    const TensorSpec &lhs = *get("lhs"), &rhs = *get("rhs");
    std::optional<Shape> bcast = broadcastShapes(lhs.shape, rhs.shape);
    if (!bcast || !broadcastsTo(lhs.shape, result.shape) ||
        !broadcastsTo(rhs.shape, result.shape) || *bcast != result.shape)
      return shapeError(describe(lhs) + " and " + describe(rhs) +
                        " do not broadcast to " + describe(result));
    return Status::success();
  }

  const TensorSpec &input = *get("input");
  if (isUnaryOp(op.kind)) {
    if (input.shape != result.shape)
      return shapeError(describe(input) + " and " + describe(result) +
                        " must have the same shape");
    return Status::success();
  }

  // Row ops: reduce, softmax, rmsnorm, layernorm work on the last dimension.
  if (input.shape.empty())
    return shapeError("'input' must have at least one dimension");
  if (op.kind == OpKind::Reduce) {
    Shape rows(input.shape.begin(), input.shape.end() - 1);
    Shape keepDim = rows;
    keepDim.push_back(1);
    if (result.shape != rows && result.shape != keepDim)
      return shapeError("reducing " + describe(input) +
                        " over its last dimension gives " +
                        shapeToString(rows) + ", but " + describe(result));
    return Status::success();
  }
  if (input.shape != result.shape)
    return shapeError(describe(input) + " and " + describe(result) +
                      " must have the same shape");
  if (op.kind == OpKind::RmsNorm || op.kind == OpKind::LayerNorm)
    if (std::optional<std::string> e = epsError(op.attrs.eps))
      return fail(at + ".attrs.eps", *e);
  for (const char *n : {"weight", "bias"}) {
    const TensorSpec *t = get(n);
    if (t && t->shape != Shape{input.shape.back()})
      return shapeError(describe(*t) + " must be " +
                        shapeToString({input.shape.back()}) +
                        " (the last dimension of 'input')");
  }
  return Status::success();
}

/// The split-K workspace: at most one, the last parameter, of a kernel with
/// exactly one matmul, 1-D f32 of at least 32 tile counters plus two M x N
/// partial sums (docs/schedules.md): a shorter one would be overrun.
Status checkWorkspace(const KernelSpec &kernel, const std::string &where) {
  const TensorSpec *ws = nullptr;
  for (size_t i = 0; i < kernel.params.size(); ++i) {
    if (kernel.params[i].role != Role::Workspace)
      continue;
    std::string at = where + ".params[" + std::to_string(i) + "]";
    if (ws)
      return fail(at, "a second workspace parameter ('" +
                          kernel.params[i].name + "'); a kernel has one");
    if (i + 1 != kernel.params.size())
      return fail(at, "the workspace parameter '" + kernel.params[i].name +
                          "' must be the last parameter");
    ws = &kernel.params[i];
  }
  if (!ws)
    return Status::success();
  size_t matmuls =
      std::count_if(kernel.ops.begin(), kernel.ops.end(),
                    [](const OpSpec &op) { return op.kind == OpKind::Matmul; });
  if (matmuls != 1)
    return fail(where + ".params", "a workspace (split-K) needs exactly one "
                                   "matmul in the kernel's ops, got " +
                                       std::to_string(matmuls));
  const TensorSpec *result =
      kernel.findValue(kernel.findOp(OpKind::Matmul)->result);
  int64_t mn = result && result->shape.size() == 2
                   ? result->shape[0] * result->shape[1]
                   : 0;
  int64_t least = 32 + 2 * mn;
  if (ws->dtype != DType::F32 || ws->shape.size() != 1 || ws->shape[0] < least)
    return fail(where + ".params",
                "op matmul: '" + ws->name +
                    "' must be 1-D f32 with at least 32 + 2 x M x N = " +
                    std::to_string(least) + " elements, got " +
                    dtypeName(ws->dtype) + " " + shapeToString(ws->shape));
  return Status::success();
}

} // namespace

Status validateOps(const KernelSpec &kernel, const std::string &where) {
  if (kernel.ops.empty())
    return fail(where + ".ops", "a kernel computes at least one op");

  // Values defined so far: the inputs at the start, then each op's result.
  std::set<std::string> defined, used;
  for (const TensorSpec &p : kernel.params)
    if (p.role == Role::Input)
      defined.insert(p.name);

  for (size_t i = 0; i < kernel.ops.size(); ++i) {
    const OpSpec &op = kernel.ops[i];
    const char *name = opName(op.kind);
    std::string at = where + ".ops[" + std::to_string(i) + "]";
    size_t numRequired = 0;
    std::vector<std::string> names = operandNames(op.kind, &numRequired);

    std::map<std::string, const TensorSpec *> operands;
    for (const OpOperand &o : op.operands) {
      std::string oat = at + ".operands." + o.name;
      if (std::find(names.begin(), names.end(), o.name) == names.end())
        return fail(oat, std::string("op ") + name + " has no operand '" +
                             o.name + "' (its operands are " +
                             joinNames(names) + ")");
      if (operands.count(o.name))
        return fail(oat, "given twice");
      const TensorSpec *t = kernel.findValue(o.value);
      if (!t)
        return fail(oat, "no parameter or value named '" + o.value + "'");
      if (t->role == Role::Workspace && kernel.findParam(o.value))
        return fail(oat, "'" + o.value +
                             "' is a workspace; ops read inputs and values");
      if (!defined.count(o.value))
        return fail(oat, "'" + o.value +
                             "' is read before an op defines it (ops run in "
                             "order)");
      operands[o.name] = t;
      used.insert(o.value);
    }
    for (size_t j = 0; j < numRequired; ++j)
      if (!operands.count(names[j]))
        return fail(at + ".operands", "missing operand '" + names[j] +
                                          "' (op " + name + " takes " +
                                          joinNames(names) + ")");

    std::string rat = at + ".result";
    const TensorSpec *result = kernel.findValue(op.result);
    if (!result)
      return fail(rat, "no parameter or value named '" + op.result + "'");
    if (const TensorSpec *p = kernel.findParam(op.result);
        p && p->role != Role::Output)
      return fail(rat, "'" + op.result + "' is an " + roleName(p->role) +
                           " parameter; an op defines an output or a value");
    if (!defined.insert(op.result).second)
      return fail(rat, "'" + op.result + "' is defined twice");
    KOPT_RETURN_IF_ERROR(checkOpTypes(op, *result, operands, at));
  }

  for (const TensorSpec &p : kernel.params) {
    if (p.role == Role::Output && !defined.count(p.name))
      return fail(where + ".ops", "no op defines output '" + p.name + "'");
    if (p.role == Role::Input && !used.count(p.name))
      return fail(where + ".ops", "no op reads input '" + p.name + "'");
  }
  for (const TensorSpec &v : kernel.values) {
    if (!defined.count(v.name))
      return fail(where + ".ops", "no op defines value '" + v.name + "'");
    if (!used.count(v.name))
      return fail(where + ".ops", "no op reads value '" + v.name +
                                      "' (a value lives inside the kernel; "
                                      "what is not read is dead)");
  }
  return checkWorkspace(kernel, where);
}

Status validateKernel(const KernelSpec &kernel, const std::string &where) {
  if (kernel.name.empty())
    return fail(where + ".name", "must not be empty");
  KOPT_RETURN_IF_ERROR(checkUTF8(kernel.name, where + ".name"));

  std::set<std::string> names;
  auto checkNames = [&](const std::vector<TensorSpec> &tensors,
                        const char *field) -> Status {
    for (size_t i = 0; i < tensors.size(); ++i) {
      std::string at = where + "." + field + "[" + std::to_string(i) + "].name";
      KOPT_RETURN_IF_ERROR(checkUTF8(tensors[i].name, at));
      if (tensors[i].name.empty())
        return fail(at, "must not be empty");
      if (!names.insert(tensors[i].name).second)
        return fail(at, "duplicate name '" + tensors[i].name + "'");
    }
    return Status::success();
  };
  KOPT_RETURN_IF_ERROR(checkNames(kernel.params, "params"));
  KOPT_RETURN_IF_ERROR(checkNames(kernel.values, "values"));

  for (size_t i = 0; i < 3; ++i) {
    std::string index = "[" + std::to_string(i) + "]";
    KOPT_RETURN_IF_ERROR(
        checkDim(where + ".grid" + index, kernel.grid[i], kGridLimits[i]));
    KOPT_RETURN_IF_ERROR(
        checkDim(where + ".block" + index, kernel.block[i], kBlockLimits[i]));
  }
  uint64_t clusterBlocks = 1;
  for (size_t i = 0; i < 3; ++i) {
    std::string index = "[" + std::to_string(i) + "]";
    KOPT_RETURN_IF_ERROR(checkDim(where + ".cluster" + index, kernel.cluster[i],
                                  kClusterLimits[i]));
    clusterBlocks *= kernel.cluster[i];
  }
  if (clusterBlocks > uint64_t(kMaxClusterBlocks))
    return fail(where + ".cluster", std::to_string(clusterBlocks) +
                                        " blocks per cluster (at most " +
                                        std::to_string(kMaxClusterBlocks) +
                                        ")");
  for (size_t i = 0; i < 3; ++i)
    if (kernel.grid[i] % kernel.cluster[i] != 0)
      return fail(where + ".grid[" + std::to_string(i) + "]",
                  std::to_string(kernel.grid[i]) +
                      (kernel.grid[i] == 1 ? " block" : " blocks") +
                      ", not a multiple of the cluster's " +
                      std::to_string(kernel.cluster[i]));
  uint64_t threads =
      uint64_t(kernel.block[0]) * kernel.block[1] * kernel.block[2];
  if (threads > 1024)
    return fail(where + ".block",
                std::to_string(threads) + " threads per block (at most 1024)");

  KOPT_RETURN_IF_ERROR(validateOps(kernel, where));
  KOPT_RETURN_IF_ERROR(validateTensorMaps(kernel, where));
  if (kernel.schedule && kernel.schedule->numWarps &&
      threads != uint64_t(32 * kernel.schedule->numWarps))
    return fail(
        where + ".block",
        std::to_string(threads) + " threads, but schedule.num_warps is " +
            std::to_string(kernel.schedule->numWarps) + " (" +
            std::to_string(32 * kernel.schedule->numWarps) + " threads)");
  return validateTensorMapSchedule(kernel, where);
}

Status validateFunction(const FunctionSpec &f, const Manifest &m,
                        const std::string &where) {
  KOPT_RETURN_IF_ERROR(checkUTF8(f.name, where + ".name"));
  const std::string at =
      isValidUTF8(f.name) ? where + " (" + f.name + ")" : where;
  for (size_t i = 0; i < f.args.size(); ++i) {
    std::string aat = at + ".args[" + std::to_string(i) + "]";
    KOPT_RETURN_IF_ERROR(checkUTF8(f.args[i].name, aat + ".name"));
    if (f.args[i].role == Role::Workspace)
      return fail(aat + ".role", "a function argument is an input or an "
                                 "output; workspaces are buffers");
  }
  std::set<int64_t> ids;
  for (size_t i = 0; i < f.buffers.size(); ++i)
    if (!ids.insert(f.buffers[i].id).second)
      return fail(at + ".buffers[" + std::to_string(i) + "].id",
                  "duplicate buffer id " + std::to_string(f.buffers[i].id));

  for (size_t i = 0; i < f.launches.size(); ++i) {
    const LaunchSpec &launch = f.launches[i];
    std::string lat = at + ".launches[" + std::to_string(i) + "]";
    const KernelSpec *kernel = m.findKernel(launch.kernel);
    if (!kernel)
      return fail(lat + ".kernel",
                  "no kernel named '" + launch.kernel + "' in 'kernels'");
    if (launch.args.size() != kernel->params.size())
      return fail(lat + ".args", "kernel '" + kernel->name + "' takes " +
                                     std::to_string(kernel->params.size()) +
                                     " parameters, the launch passes " +
                                     std::to_string(launch.args.size()));
    for (size_t j = 0; j < launch.args.size(); ++j) {
      const LaunchArg &arg = launch.args[j];
      std::string aat = lat + ".args[" + std::to_string(j) + "]";
      const TensorSpec &param = kernel->params[j];
      DType dtype;
      int64_t bytes;
      std::string what;
      if (arg.kind == LaunchArg::Kind::Arg) {
        if (arg.index < 0 || arg.index >= static_cast<int64_t>(f.args.size()))
          return fail(aat + ".arg", "no argument " + std::to_string(arg.index) +
                                        " (the function has " +
                                        std::to_string(f.args.size()) + ")");
        const TensorSpec &t = f.args[arg.index];
        if (param.role == Role::Workspace)
          return fail(aat, "kernel workspace parameter '" + param.name +
                               "' must be bound to a workspace buffer, not "
                               "function argument " +
                               std::to_string(arg.index));
        if (t.role == Role::Input && param.role == Role::Output)
          return fail(aat, "kernel output parameter '" + param.name +
                               "' is bound to function input argument " +
                               std::to_string(arg.index));
        dtype = t.dtype;
        bytes = t.numBytes();
        what = "argument " + std::to_string(arg.index) + " is " +
               dtypeName(t.dtype) + " " + shapeToString(t.shape);
      } else {
        const BufferSpec *buf = f.findBuffer(arg.index);
        if (!buf)
          return fail(aat + ".buffer",
                      "no buffer with id " + std::to_string(arg.index));
        if (buf->workspace != (param.role == Role::Workspace))
          return fail(aat, buf->workspace
                               ? "workspace buffer " +
                                     std::to_string(arg.index) +
                                     " is bound to kernel parameter '" +
                                     param.name + "', which is not a workspace"
                               : "kernel workspace parameter '" + param.name +
                                     "' is bound to buffer " +
                                     std::to_string(arg.index) +
                                     ", which is not a workspace");
        dtype = buf->dtype;
        bytes = numBytes(buf->shape, buf->dtype);
        what = "buffer " + std::to_string(arg.index) + " is " +
               dtypeName(buf->dtype) + " " + shapeToString(buf->shape);
      }
      if (dtype != param.dtype || bytes != param.numBytes())
        return fail(aat, what + " but kernel parameter '" + param.name +
                             "' is " + dtypeName(param.dtype) + " " +
                             shapeToString(param.shape));
    }
  }
  return Status::success();
}

Status validateManifest(const Manifest &m, const std::string &where) {
  auto field = [&](const std::string &name) {
    return where.empty() ? name : where + ": " + name;
  };
  if (m.version != kManifestVersion)
    return fail(field("kopt_manifest_version"),
                "unsupported version " + std::to_string(m.version) +
                    " (this library reads version " +
                    std::to_string(kManifestVersion) + ")");
  KOPT_RETURN_IF_ERROR(checkUTF8(m.chip, field("chip")));
  if (m.ptx.empty())
    return fail(field("ptx"), "must not be empty");
  KOPT_RETURN_IF_ERROR(checkUTF8(m.ptx, field("ptx")));
  std::set<std::string> names;
  for (size_t i = 0; i < m.kernels.size(); ++i) {
    const KernelSpec &k = m.kernels[i];
    std::string at = field("kernels[" + std::to_string(i) + "]");
    std::string named = isValidUTF8(k.name) ? at + " (" + k.name + ")" : at;
    KOPT_RETURN_IF_ERROR(validateKernel(k, named));
    if (!names.insert(k.name).second)
      return fail(at + ".name", "duplicate kernel name '" + k.name + "'");
  }
  for (size_t i = 0; i < m.functions.size(); ++i)
    KOPT_RETURN_IF_ERROR(validateFunction(
        m.functions[i], m, field("functions[" + std::to_string(i) + "]")));
  return Status::success();
}

} // namespace kopt::manifest
