//===- Manifest.cpp - Parse and validate the launch manifest --------------===//
//
// See include/kopt/Runtime/Manifest.h and docs/manifest.md.
//
//===----------------------------------------------------------------------===//

#include "kopt/Runtime/Manifest.h"
#include "kopt/Schedule/Schedule.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

using json = nlohmann::json;

namespace kopt::rt {

//===----------------------------------------------------------------------===//
// Enums and shapes
//===----------------------------------------------------------------------===//

const char *dtypeName(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return "f32";
  case DType::F16:
    return "f16";
  case DType::BF16:
    return "bf16";
  }
  return "?";
}

std::optional<DType> parseDType(std::string_view name) {
  if (name == "f32")
    return DType::F32;
  if (name == "f16")
    return DType::F16;
  if (name == "bf16")
    return DType::BF16;
  return std::nullopt;
}

int64_t dtypeSize(DType dtype) { return dtype == DType::F32 ? 4 : 2; }

int64_t numElements(const Shape &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

int64_t numBytes(const Shape &shape, DType dtype) {
  return numElements(shape) * dtypeSize(dtype);
}

std::string shapeToString(const Shape &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

const char *roleName(Role role) {
  switch (role) {
  case Role::Input:
    return "input";
  case Role::Output:
    return "output";
  case Role::Workspace:
    return "workspace";
  }
  return "?";
}

const char *kernelClassName(KernelClass cls) {
  switch (cls) {
  case KernelClass::Elementwise:
    return "elementwise";
  case KernelClass::Row:
    return "row";
  case KernelClass::Matmul:
    return "matmul";
  case KernelClass::Pack:
    return "pack";
  }
  return "?";
}

namespace {
struct OpName {
  OpKind op;
  const char *name;
};
constexpr OpName kOpNames[] = {
    {OpKind::Matmul, "matmul"},   {OpKind::Add, "add"},
    {OpKind::Sub, "sub"},         {OpKind::Mul, "mul"},
    {OpKind::Div, "div"},         {OpKind::Max, "max"},
    {OpKind::Min, "min"},         {OpKind::Exp, "exp"},
    {OpKind::Neg, "neg"},         {OpKind::Abs, "abs"},
    {OpKind::Sqrt, "sqrt"},       {OpKind::Rsqrt, "rsqrt"},
    {OpKind::Tanh, "tanh"},       {OpKind::Sigmoid, "sigmoid"},
    {OpKind::Relu, "relu"},       {OpKind::Silu, "silu"},
    {OpKind::Gelu, "gelu"},       {OpKind::Cast, "cast"},
    {OpKind::Reduce, "reduce"},   {OpKind::Softmax, "softmax"},
    {OpKind::RmsNorm, "rmsnorm"}, {OpKind::LayerNorm, "layernorm"},
    {OpKind::Pack, "pack"},
};
} // namespace

const char *opName(OpKind op) {
  for (const OpName &entry : kOpNames)
    if (entry.op == op)
      return entry.name;
  return "?";
}

std::optional<OpKind> parseOpKind(std::string_view name) {
  for (const OpName &entry : kOpNames)
    if (name == entry.name)
      return entry.op;
  return std::nullopt;
}

bool isBinaryOp(OpKind op) {
  switch (op) {
  case OpKind::Add:
  case OpKind::Sub:
  case OpKind::Mul:
  case OpKind::Div:
  case OpKind::Max:
  case OpKind::Min:
    return true;
  default:
    return false;
  }
}

bool isUnaryOp(OpKind op) {
  switch (op) {
  case OpKind::Exp:
  case OpKind::Neg:
  case OpKind::Abs:
  case OpKind::Sqrt:
  case OpKind::Rsqrt:
  case OpKind::Tanh:
  case OpKind::Sigmoid:
  case OpKind::Relu:
  case OpKind::Silu:
  case OpKind::Gelu:
  case OpKind::Cast:
    return true;
  default:
    return false;
  }
}

const char *reduceKindName(ReduceKind kind) {
  switch (kind) {
  case ReduceKind::Sum:
    return "sum";
  case ReduceKind::Max:
    return "max";
  case ReduceKind::Mean:
    return "mean";
  }
  return "?";
}

const TensorSpec *KernelSpec::findParam(std::string_view paramName) const {
  for (const TensorSpec &p : params)
    if (p.name == paramName)
      return &p;
  return nullptr;
}

int64_t KernelSpec::totalParamBytes() const {
  int64_t total = 0;
  for (const TensorSpec &p : params)
    if (p.role != Role::Workspace)
      total += p.numBytes();
  return total;
}

const BufferSpec *FunctionSpec::findBuffer(int64_t id) const {
  for (const BufferSpec &b : buffers)
    if (b.id == id)
      return &b;
  return nullptr;
}

const KernelSpec *Manifest::findKernel(std::string_view kernelName) const {
  for (const KernelSpec &k : kernels)
    if (k.name == kernelName)
      return &k;
  return nullptr;
}

//===----------------------------------------------------------------------===//
// Operand validation
//===----------------------------------------------------------------------===//

namespace {

Status fail(const std::string &where, const std::string &message) {
  return Status::error(where + ": " + message);
}

std::string joinNames(const std::vector<std::string> &names) {
  std::string s;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i)
      s += ", ";
    s += names[i];
  }
  return s;
}

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

} // namespace

Status validateKernelOperands(const KernelSpec &kernel,
                              const std::string &where) {
  const char *op = opName(kernel.op);
  std::vector<std::string> required, optional;
  if (kernel.op == OpKind::Matmul) {
    required = {"a", "b"};
    optional = {"workspace"}; // split-K
  } else if (isBinaryOp(kernel.op)) {
    required = {"lhs", "rhs"};
  } else if (kernel.op == OpKind::RmsNorm) {
    required = {"input"};
    optional = {"weight"};
  } else if (kernel.op == OpKind::LayerNorm) {
    required = {"input"};
    optional = {"weight", "bias"};
  } else {
    required = {"input"};
  }
  required.push_back("result");

  std::vector<std::string> all = required;
  all.insert(all.end() - 1, optional.begin(), optional.end());
  size_t minCount = required.size(), maxCount = all.size();
  size_t count = kernel.params.size();
  if (count < minCount || count > maxCount) {
    std::string expected =
        minCount == maxCount
            ? std::to_string(minCount)
            : std::to_string(minCount) + " to " + std::to_string(maxCount);
    return fail(where + ".params", std::string("op ") + op + " takes " +
                                       expected + " parameters (" +
                                       joinNames(all) + "), the kernel has " +
                                       std::to_string(count));
  }

  std::set<std::string> seen;
  for (size_t i = 0; i < count; ++i) {
    const TensorSpec &p = kernel.params[i];
    std::string at = where + ".params[" + std::to_string(i) + "]";
    if (std::find(all.begin(), all.end(), p.name) == all.end())
      return fail(at + ".name", "unexpected parameter '" + p.name +
                                    "' for op " + op + " (expected " +
                                    joinNames(all) + ")");
    if (!seen.insert(p.name).second)
      return fail(at + ".name", "duplicate parameter '" + p.name + "'");
    Role expectedRole = p.name == "result"      ? Role::Output
                        : p.name == "workspace" ? Role::Workspace
                                                : Role::Input;
    if (p.role != expectedRole)
      return fail(at + ".role", "parameter '" + p.name + "' of op " + op +
                                    " must have role '" +
                                    roleName(expectedRole) + "'");
  }
  for (const std::string &name : required)
    if (!kernel.findParam(name))
      return fail(where + ".params", "missing parameter '" + name + "' (op " +
                                         op + " takes " + joinNames(all) + ")");

  const TensorSpec &result = *kernel.findParam("result");
  auto shapeError = [&](const std::string &message) {
    return fail(where + ".params", std::string("op ") + op + ": " + message);
  };
  auto describe = [](const TensorSpec &t) {
    return "'" + t.name + "' " + shapeToString(t.shape);
  };

  if (kernel.op == OpKind::Matmul) {
    const TensorSpec &a = *kernel.findParam("a");
    const TensorSpec &b = *kernel.findParam("b");
    if (a.shape.size() != 2 || b.shape.size() != 2 || result.shape.size() != 2)
      return shapeError("operands must be 2-D (got " + describe(a) + ", " +
                        describe(b) + ", " + describe(result) + ")");
    if (a.dtype != b.dtype)
      return shapeError(std::string("'a' and 'b' must have the same dtype "
                                    "(got ") +
                        dtypeName(a.dtype) + " and " + dtypeName(b.dtype) +
                        ")");
    // TF32 rounds f32 operands; it means nothing for f16/bf16 ones.
    if (kernel.attrs.tf32 && a.dtype != DType::F32)
      return fail(where + ".attrs.tf32",
                  std::string("tf32 needs f32 operands, 'a' and 'b' are ") +
                      dtypeName(a.dtype));
    int64_t m = kernel.attrs.transposeA ? a.shape[1] : a.shape[0];
    int64_t ka = kernel.attrs.transposeA ? a.shape[0] : a.shape[1];
    int64_t kb = kernel.attrs.transposeB ? b.shape[1] : b.shape[0];
    int64_t n = kernel.attrs.transposeB ? b.shape[0] : b.shape[1];
    if (ka != kb)
      return shapeError(
          "contraction sizes differ: " + describe(a) + " and " + describe(b) +
          " with transpose_a=" + (kernel.attrs.transposeA ? "true" : "false") +
          ", transpose_b=" + (kernel.attrs.transposeB ? "true" : "false"));
    if (result.shape != Shape{m, n})
      return shapeError("result must be " + shapeToString({m, n}) + ", got " +
                        shapeToString(result.shape));
    if (const TensorSpec *ws = kernel.findParam("workspace")) {
      // Split-K: tile counters (at least 32), then split_k >= 2 partial sums
      // of M x N (docs/schedules.md): a shorter one would be overrun.
      if (&kernel.params.back() != ws)
        return shapeError("'workspace' must be the last parameter");
      int64_t least = 32 + 2 * m * n;
      if (ws->dtype != DType::F32 || ws->shape.size() != 1 ||
          ws->shape[0] < least)
        return shapeError("'workspace' must be 1-D f32 with at least 32 + 2 "
                          "x M x N = " +
                          std::to_string(least) + " elements, got " +
                          dtypeName(ws->dtype) + " " +
                          shapeToString(ws->shape));
    }
    return Status::success();
  }

  if (kernel.op == OpKind::Pack) {
    const TensorSpec &input = *kernel.findParam("input");
    if (input.shape.size() != 2 || result.shape.size() != 2)
      return shapeError("'input' and 'result' must be 2-D (got " +
                        describe(input) + ", " + describe(result) + ")");
    if (input.dtype != result.dtype)
      return shapeError(std::string("copies without conversion: 'input' is ") +
                        dtypeName(input.dtype) + ", 'result' " +
                        dtypeName(result.dtype));
    Shape src = input.shape;
    if (kernel.attrs.transpose)
      std::swap(src[0], src[1]);
    if (result.shape[0] < src[0] || result.shape[1] < src[1])
      return shapeError(describe(result) + " is smaller than " +
                        (kernel.attrs.transpose ? "the transposed " : "") +
                        describe(input));
    return Status::success();
  }

  if (isBinaryOp(kernel.op)) {
    const TensorSpec &lhs = *kernel.findParam("lhs");
    const TensorSpec &rhs = *kernel.findParam("rhs");
    std::optional<Shape> bcast = broadcastShapes(lhs.shape, rhs.shape);
    if (!bcast || !broadcastsTo(lhs.shape, result.shape) ||
        !broadcastsTo(rhs.shape, result.shape) || *bcast != result.shape)
      return shapeError(describe(lhs) + " and " + describe(rhs) +
                        " do not broadcast to " + describe(result));
    return Status::success();
  }

  const TensorSpec &input = *kernel.findParam("input");
  if (isUnaryOp(kernel.op)) {
    if (input.shape != result.shape)
      return shapeError(describe(input) + " and " + describe(result) +
                        " must have the same shape");
    return Status::success();
  }

  // Row ops: reduce, softmax, rmsnorm, layernorm work on the last dimension.
  if (input.shape.empty())
    return shapeError("'input' must have at least one dimension");
  if (kernel.op == OpKind::Reduce) {
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
  for (const char *name : {"weight", "bias"}) {
    const TensorSpec *t = kernel.findParam(name);
    if (t && t->shape != Shape{input.shape.back()})
      return shapeError(describe(*t) + " must be " +
                        shapeToString({input.shape.back()}) +
                        " (the last dimension of 'input')");
  }
  return Status::success();
}

//===----------------------------------------------------------------------===//
// Tensor maps
//===----------------------------------------------------------------------===//

namespace {

/// The message for a swizzle that is not 0, 32, 64 or 128.
std::string badSwizzle(int64_t swizzle) {
  return std::to_string(swizzle) +
         " is not a swizzle span (expected 0, 32, 64 or 128 bytes)";
}

/// Checks `kernel.tensorMaps[index]` and fills `geometry`. Errors are
/// "<prefix>tensor_maps[<index>].<field>: <message>".
Status checkTensorMap(const KernelSpec &kernel, size_t index,
                      const std::string &prefix, TensorMapGeometry &geometry) {
  const TensorMapSpec &map = kernel.tensorMaps[index];
  std::string at = prefix + "tensor_maps[" + std::to_string(index) + "]";
  std::string tensorAt = at + ".tensor", boxAt = at + ".box";

  // The tensor: an input or output parameter of rank 1 to 5.
  size_t paramIndex = kernel.params.size();
  for (size_t i = 0;
       i < kernel.params.size() && paramIndex == kernel.params.size(); ++i)
    if (kernel.params[i].name == map.tensor)
      paramIndex = i;
  if (paramIndex == kernel.params.size()) {
    std::vector<std::string> names;
    for (const TensorSpec &p : kernel.params)
      names.push_back(p.name);
    return fail(tensorAt, "no parameter named '" + map.tensor +
                              "' (the kernel's parameters are " +
                              joinNames(names) + ")");
  }
  const TensorSpec &tensor = kernel.params[paramIndex];
  std::string described = "'" + tensor.name + "' (" + dtypeName(tensor.dtype) +
                          " " + shapeToString(tensor.shape) + ")";
  if (tensor.role == Role::Workspace)
    return fail(tensorAt, "parameter '" + tensor.name + "' has role '" +
                              roleName(tensor.role) +
                              "'; a tensor map reads an input or writes an "
                              "output parameter");
  size_t rank = tensor.shape.size();
  if (rank < 1 || rank > kMaxTensorMapRank)
    return fail(tensorAt, described + " has rank " + std::to_string(rank) +
                              "; a tensor map needs rank 1 to " +
                              std::to_string(kMaxTensorMapRank));

  if (map.swizzle != 0 && map.swizzle != 32 && map.swizzle != 64 &&
      map.swizzle != 128)
    return fail(at + ".swizzle", badSwizzle(map.swizzle));

  // The box: one size per dimension, innermost first.
  if (map.box.size() != rank)
    return fail(boxAt, "has " + std::to_string(map.box.size()) +
                           " entries, but " + described + " has rank " +
                           std::to_string(rank) +
                           " (one box size per dimension, innermost first)");
  for (size_t i = 0; i < rank; ++i)
    if (map.box[i] < 1 || map.box[i] > 256)
      return fail(boxAt + "[" + std::to_string(i) + "]",
                  std::to_string(map.box[i]) + " is out of range (1 to 256)");
  int64_t elementBytes = dtypeSize(tensor.dtype);
  int64_t innerBytes = map.box[0] * elementBytes;
  std::string inner = std::to_string(map.box[0]) + " x " +
                      std::to_string(elementBytes) + " bytes (" +
                      dtypeName(tensor.dtype) +
                      ") = " + std::to_string(innerBytes) + " bytes";
  if (innerBytes % 16 != 0)
    return fail(boxAt + "[0]",
                inner + " is not a multiple of 16 bytes (the box's inner "
                        "dimension must be)");
  if (map.swizzle != 0 && innerBytes > map.swizzle)
    return fail(boxAt + "[0]", inner + " exceed the " +
                                   std::to_string(map.swizzle) +
                                   "-byte swizzle span");

  // Dimensions (innermost first) and dense row-major byte strides of
  // dimensions 1 .. rank-1. The manifest's shapes are at most 2^63 bytes.
  constexpr int64_t kMaxDim = int64_t(1) << 32, kMaxStride = int64_t(1) << 40;
  geometry = TensorMapGeometry();
  geometry.paramIndex = paramIndex;
  geometry.dtype = tensor.dtype;
  geometry.swizzle = map.swizzle;
  int64_t stride = elementBytes;
  for (size_t i = 0; i < rank; ++i) {
    size_t dim = rank - 1 - i; // the shape's dimension, outermost first
    int64_t extent = tensor.shape[dim];
    if (extent < 1) // parsed shapes are positive; hand-built ones may not be
      return fail(tensorAt, described + ": dimension " + std::to_string(dim) +
                                " is " + std::to_string(extent) +
                                ", not positive");
    if (extent > kMaxDim)
      return fail(tensorAt, described + ": dimension " + std::to_string(dim) +
                                " is " + std::to_string(extent) +
                                ", above the tensor-map limit of 2^32");
    if (i > 0) {
      // `stride` is the byte stride of shape dimension `dim`.
      if (stride % 16 != 0)
        return fail(tensorAt, described + ": the byte stride of dimension " +
                                  std::to_string(dim) + " is " +
                                  std::to_string(stride) +
                                  ", not a multiple of 16");
      if (stride >= kMaxStride)
        return fail(tensorAt, described + ": the byte stride of dimension " +
                                  std::to_string(dim) + " is " +
                                  std::to_string(stride) + ", not below 2^40");
      geometry.globalStrides.push_back(static_cast<uint64_t>(stride));
    }
    geometry.globalDim.push_back(static_cast<uint64_t>(extent));
    geometry.box.push_back(static_cast<uint32_t>(map.box[i]));
    if (i + 1 < rank) {
      // Parsed shapes cannot overflow here; hand-built ones could.
      if (stride > std::numeric_limits<int64_t>::max() / extent)
        return fail(tensorAt, described + ": the byte stride of dimension " +
                                  std::to_string(dim - 1) +
                                  " overflows 64 bits");
      stride *= extent;
    }
  }
  return Status::success();
}

} // namespace

Status validateTensorMaps(const KernelSpec &kernel, const std::string &where) {
  TensorMapGeometry geometry;
  for (size_t i = 0; i < kernel.tensorMaps.size(); ++i)
    KOPT_RETURN_IF_ERROR(checkTensorMap(kernel, i, where + ".", geometry));
  return Status::success();
}

namespace {
/// "1 tensor map", "2 tensor maps".
std::string tensorMapCount(size_t count) {
  return std::to_string(count) + (count == 1 ? " tensor map" : " tensor maps");
}
} // namespace

namespace {
/// The TMA store epilogue's map (tensor_maps[index], `at` naming the array):
/// of the kernel's 2-D output, box [S / sizeof(dtype), tmaBoxRows(block_m,
/// M)], S-byte swizzle, S = tmaStoreSwizzleBytes(block_n * sizeof(dtype))
/// (lib/KernelBuilders/Matmul.cpp).
Status validateStoreTensorMap(const KernelSpec &kernel, size_t index,
                              const std::string &at) {
  const ScheduleSpec &schedule = *kernel.schedule;
  const TensorMapSpec &map = kernel.tensorMaps[index];
  std::string mapAt = at + "[" + std::to_string(index) + "]";
  const TensorSpec *tensor = kernel.findParam(map.tensor);
  if (!tensor || tensor->role != Role::Output)
    return fail(mapAt + ".tensor",
                "'" + map.tensor +
                    "' is not an output parameter of the kernel (with "
                    "tma_store the last map writes the output)");
  if (tensor->shape.size() != 2)
    return fail(mapAt + ".tensor",
                "tma_store writes a 2-D [M, N] output, but '" + tensor->name +
                    "' is " + shapeToString(tensor->shape));
  // (checkTensorMap holds the box to the tensor's rank, 2.)
  // Rows of S bytes, the largest of 128, 64 and 32 dividing block_n's.
  const int64_t size = dtypeSize(tensor->dtype);
  const std::string blockBytes =
      "block_n x sizeof(" + std::string(dtypeName(tensor->dtype)) +
      ") = " + std::to_string(schedule.blockN) + " x " + std::to_string(size) +
      " = " + std::to_string(schedule.blockN * size) + " bytes";
  const int64_t span =
      kopt::schedule::tmaStoreSwizzleBytes(schedule.blockN * size);
  if (span == 0)
    return fail(mapAt, "schedule." + blockBytes +
                           " is not a multiple of 32 (tma_store stores boxes "
                           "of 32 to 128 bytes of columns)");
  if (map.box[0] != span / size)
    return fail(mapAt + ".box[0]",
                std::to_string(map.box[0]) + ", but with schedule." +
                    blockBytes + " tma_store writes rows of " +
                    std::to_string(span) +
                    " bytes: " + std::to_string(span / size) + " elements");
  int64_t rows =
      kopt::schedule::tmaBoxRows(schedule.blockM, tensor->shape.front());
  if (map.box[1] != rows)
    return fail(mapAt + ".box[1]",
                std::to_string(map.box[1]) + ", but schedule.block_m is " +
                    std::to_string(schedule.blockM) + " and M " +
                    std::to_string(tensor->shape.front()) +
                    ": the boxes have min(block_m, M rounded up to 8) = " +
                    std::to_string(rows) + " rows");
  if (map.swizzle != span)
    return fail(mapAt + ".swizzle", std::to_string(map.swizzle) +
                                        ", but the tma_store map's rows of " +
                                        std::to_string(span) +
                                        " bytes use swizzle " +
                                        std::to_string(span));
  return Status::success();
}
} // namespace

Status validateTensorMapSchedule(const KernelSpec &kernel,
                                 const std::string &where) {
  const std::string at = where + ".tensor_maps";
  const size_t count = kernel.tensorMaps.size();
  if (kernel.op != OpKind::Matmul) {
    if (count == 0)
      return Status::success();
    return fail(at, std::string("op ") + opName(kernel.op) +
                        " takes no tensor maps (only a matmul whose "
                        "schedule.copy is 'tma' or schedule.tma_store true has "
                        "them), got " +
                        std::to_string(count));
  }
  if (!kernel.schedule)
    return Status::success(); // the per-entry rules only
  const ScheduleSpec &schedule = *kernel.schedule;
  const bool loads = schedule.copy == "tma";
  const size_t expected = (loads ? 2 : 0) + (schedule.tmaStore ? 1 : 0);
  if (!schedule.tmaStore && !loads) {
    if (count == 0)
      return Status::success();
    return fail(at, "schedule.copy is '" + schedule.copy +
                        "', which takes no tensor maps, got " +
                        std::to_string(count));
  }
  if (!schedule.tmaStore && count != 2)
    return fail(at, "schedule.copy is 'tma', which takes 2 tensor maps (of "
                    "'a', then 'b'), got " +
                        std::to_string(count));
  if (count != expected)
    return fail(at,
                "schedule.copy is '" + schedule.copy +
                    "' and schedule.tma_store is true, which take " +
                    tensorMapCount(expected) + " (" +
                    (loads ? "of 'a', 'b', then the output" : "of the output") +
                    "), got " + std::to_string(count));
  if (schedule.tmaStore)
    KOPT_RETURN_IF_ERROR(validateStoreTensorMap(kernel, expected - 1, at));
  if (!loads)
    return Status::success();

  // Map 0 reads A's [block_m, 128-byte] tiles, map 1 B's [block_n, 128-byte]
  // ones (fewer rows for an operand with fewer: schedule::tmaBoxRows), both
  // 128-byte swizzled (lib/KernelBuilders/Matmul.cpp).
  struct Operand {
    const char *name;
    const char *rowsField;
    int64_t rows;
  };
  const Operand operands[2] = {{"a", "block_m", schedule.blockM},
                               {"b", "block_n", schedule.blockN}};
  auto describe = [](const TensorSpec &t) {
    return "'" + t.name + "' " + shapeToString(t.shape);
  };
  for (size_t i = 0; i < 2; ++i) {
    const TensorMapSpec &map = kernel.tensorMaps[i];
    const Operand &o = operands[i];
    std::string mapAt = at + "[" + std::to_string(i) + "]";
    const TensorSpec *operand = kernel.findParam(o.name);
    const TensorSpec *tensor = kernel.findParam(map.tensor);
    // validateKernelOperands and validateTensorMaps reject these first.
    if (!operand)
      return fail(where + ".params",
                  std::string("missing parameter '") + o.name + "'");
    if (!tensor || tensor->role != Role::Input)
      return fail(mapAt + ".tensor", "'" + map.tensor +
                                         "' is not an input parameter of "
                                         "the kernel");
    // Another input (the other operand) only when it has the same K: the
    // compiler names one parameter for both maps when a and b are one buffer.
    if (tensor != operand && (tensor->shape.empty() || operand->shape.empty() ||
                              tensor->shape.back() != operand->shape.back()))
      return fail(mapAt + ".tensor",
                  describe(*tensor) + ", but map " + std::to_string(i) +
                      " of a copy = tma kernel reads " + describe(*operand) +
                      " (another input only with the same last, K, "
                      "dimension)");
    if (map.box.size() != 2)
      return fail(mapAt + ".box",
                  "has " + std::to_string(map.box.size()) +
                      " entries, but a copy = tma box has 2 (128 bytes of "
                      "K, then " +
                      o.rowsField + " rows)");
    int64_t rowElements = 128 / dtypeSize(tensor->dtype);
    if (map.box[0] != rowElements)
      return fail(mapAt + ".box[0]",
                  std::to_string(map.box[0]) + ", but copy = tma reads rows " +
                      "of 128 bytes: 128 / sizeof(" + dtypeName(tensor->dtype) +
                      ") is " + std::to_string(rowElements));
    if (operand->shape.size() != 2)
      return fail(mapAt + ".tensor",
                  "copy = tma reads 2-D [rows, K] operands, but the kernel's " +
                      describe(*operand) + " is not");
    int64_t boxRows =
        kopt::schedule::tmaBoxRows(o.rows, operand->shape.front());
    if (map.box[1] != boxRows && boxRows == o.rows)
      return fail(mapAt + ".box[1]", std::to_string(map.box[1]) +
                                         ", but schedule." + o.rowsField +
                                         " is " + std::to_string(o.rows));
    if (map.box[1] != boxRows)
      return fail(mapAt + ".box[1]",
                  std::to_string(map.box[1]) + ", but " + describe(*operand) +
                      " has fewer rows than schedule." + o.rowsField + " (" +
                      std::to_string(o.rows) +
                      "): its boxes have its rows rounded up to 8, " +
                      std::to_string(boxRows));
    if (map.swizzle != 128)
      return fail(mapAt + ".swizzle",
                  std::to_string(map.swizzle) +
                      ", but copy = tma maps use swizzle 128");
  }
  return Status::success();
}

Expected<TensorMapGeometry> tensorMapGeometry(const KernelSpec &kernel,
                                              size_t mapIndex) {
  if (mapIndex >= kernel.tensorMaps.size())
    return Status::error("kernel '" + kernel.name + "' has " +
                         std::to_string(kernel.tensorMaps.size()) +
                         " tensor maps, no tensor map " +
                         std::to_string(mapIndex));
  TensorMapGeometry geometry;
  KOPT_RETURN_IF_ERROR(checkTensorMap(
      kernel, mapIndex, "kernel '" + kernel.name + "': ", geometry));
  return geometry;
}

//===----------------------------------------------------------------------===//
// JSON reading
//===----------------------------------------------------------------------===//

namespace {

/// Reads fields of one JSON document, naming the source file and the field
/// path in every error.
class Reader {
public:
  explicit Reader(std::string sourceName) : source(std::move(sourceName)) {}

  Status error(const std::string &path, const std::string &message) const {
    return Status::error(source + ": " + path + ": " + message);
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
      if (*d <= 0 || *d > limits[i])
        return error(sub(at, i), "value " + std::to_string(*d) +
                                     " out of range [1, " +
                                     std::to_string(limits[i]) + "]");
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

  Status readAttrs(const json &attrs, const std::string &path,
                   KernelSpec &k) const {
    switch (k.op) {
    case OpKind::Matmul: {
      Expected<bool> ta = getBool(attrs, path, "transpose_a");
      if (!ta.ok())
        return ta.status();
      Expected<bool> tb = getBool(attrs, path, "transpose_b");
      if (!tb.ok())
        return tb.status();
      k.attrs.transposeA = *ta;
      k.attrs.transposeB = *tb;
      // Optional: absent means exact f32 semantics.
      if (attrs.contains("tf32")) {
        Expected<bool> tf32 = getBool(attrs, path, "tf32");
        if (!tf32.ok())
          return tf32.status();
        k.attrs.tf32 = *tf32;
      }
      break;
    }
    case OpKind::Pack: {
      Expected<bool> t = getBool(attrs, path, "transpose");
      if (!t.ok())
        return t.status();
      k.attrs.transpose = *t;
      break;
    }
    case OpKind::Gelu: {
      Expected<std::string> a = getString(attrs, path, "approximate");
      if (!a.ok())
        return a.status();
      if (*a == "none")
        k.attrs.approximate = GeluApproximation::None;
      else if (*a == "tanh")
        k.attrs.approximate = GeluApproximation::Tanh;
      else
        return error(sub(path, "approximate"),
                     "unknown value '" + *a + "' (expected none or tanh)");
      break;
    }
    case OpKind::Reduce: {
      Expected<std::string> kind = getString(attrs, path, "kind");
      if (!kind.ok())
        return kind.status();
      if (*kind == "sum")
        k.attrs.reduceKind = ReduceKind::Sum;
      else if (*kind == "max")
        k.attrs.reduceKind = ReduceKind::Max;
      else if (*kind == "mean")
        k.attrs.reduceKind = ReduceKind::Mean;
      else
        return error(sub(path, "kind"), "unknown reduction '" + *kind +
                                            "' (expected sum, max or mean)");
      break;
    }
    case OpKind::RmsNorm:
    case OpKind::LayerNorm: {
      Expected<double> eps = getNumber(attrs, path, "eps");
      if (!eps.ok())
        return eps.status();
      if (!(*eps >= 0.0) || *eps > 1.0)
        return error(sub(path, "eps"),
                     "value " + std::to_string(*eps) + " out of range [0, 1]");
      k.attrs.eps = *eps;
      break;
    }
    default:
      break;
    }
    return Status::success();
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
    if (*cls == "elementwise")
      k.cls = KernelClass::Elementwise;
    else if (*cls == "row")
      k.cls = KernelClass::Row;
    else if (*cls == "matmul")
      k.cls = KernelClass::Matmul;
    else if (*cls == "pack")
      k.cls = KernelClass::Pack;
    else
      return error(sub(at, "class"), "unknown class '" + *cls +
                                         "' (expected elementwise, row, "
                                         "matmul or pack)");

    Expected<std::string> op = getString(v, at, "op");
    if (!op.ok())
      return op.status();
    std::optional<OpKind> kind = parseOpKind(*op);
    if (!kind)
      return error(sub(at, "op"), "unknown op '" + *op + "'");
    k.op = *kind;

    // attrs: optional, an object; the op's own attributes are required.
    static const json kEmpty = json::object();
    const json *attrs = &kEmpty;
    if (auto it = v.find("attrs"); it != v.end()) {
      KOPT_RETURN_IF_ERROR(expectObject(*it, sub(at, "attrs")));
      attrs = &*it;
    }
    KOPT_RETURN_IF_ERROR(readAttrs(*attrs, sub(at, "attrs"), k));
    k.attrsJson = attrs->dump();

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

    constexpr int64_t kMaxGridX = (int64_t(1) << 31) - 1;
    Expected<std::array<uint32_t, 3>> grid =
        getDims(v, at, "grid", {kMaxGridX, 65535, 65535});
    if (!grid.ok())
      return grid.status();
    k.grid = *grid;
    Expected<std::array<uint32_t, 3>> block =
        getDims(v, at, "block", {1024, 1024, 64});
    if (!block.ok())
      return block.status();
    k.block = *block;
    uint64_t threads = uint64_t(k.block[0]) * k.block[1] * k.block[2];
    if (threads > 1024)
      return error(sub(at, "block"), std::to_string(threads) +
                                         " threads per block (at most 1024)");

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

    KOPT_RETURN_IF_ERROR(validateKernelOperands(k, source + ": " + at));
    KOPT_RETURN_IF_ERROR(validateTensorMaps(k, source + ": " + at));

    // schedule: optional, read on matmul kernels only; its copy decides the
    // tensor maps.
    if (auto it = v.find("schedule"); it != v.end() && k.op == OpKind::Matmul) {
      Expected<ScheduleSpec> schedule = getSchedule(*it, sub(at, "schedule"));
      if (!schedule.ok())
        return schedule.status();
      k.schedule = schedule.take();
      uint64_t threads = uint64_t(k.block[0]) * k.block[1] * k.block[2];
      if (k.schedule->numWarps &&
          threads != uint64_t(32 * k.schedule->numWarps))
        return error(
            sub(at, "block"),
            std::to_string(threads) + " threads, but schedule.num_warps is " +
                std::to_string(k.schedule->numWarps) + " (" +
                std::to_string(32 * k.schedule->numWarps) + " threads)");
    }
    KOPT_RETURN_IF_ERROR(validateTensorMapSchedule(k, source + ": " + at));
    return k;
  }

  /// The parts of a `schedule` the runtime checks the tensor maps against:
  /// `copy` (a string), `tma_store` (a boolean, when given), and `block_m`,
  /// `block_n` (integers) when copy is "tma" or tma_store is true.
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

  Expected<FunctionSpec> getFunction(const json &v, const std::string &path,
                                     const Manifest &m) const {
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
      if (t->role == Role::Workspace)
        return error(sub(sub(sub(at, "args"), i), "role"),
                     "a function argument is an input or an output; "
                     "workspaces are buffers");
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
      if (f.findBuffer(*id))
        return error(sub(bat, "id"),
                     "duplicate buffer id " + std::to_string(*id));
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
      const KernelSpec *kernel = m.findKernel(*kernelName);
      if (!kernel)
        return error(sub(lat, "kernel"),
                     "no kernel named '" + *kernelName + "' in 'kernels'");
      launch.kernel = *kernelName;
      Expected<const json *> largs = getArray(l, lat, "args");
      if (!largs.ok())
        return largs.status();
      if ((*largs)->size() != kernel->params.size())
        return error(sub(lat, "args"),
                     "kernel '" + kernel->name + "' takes " +
                         std::to_string(kernel->params.size()) +
                         " parameters, the launch passes " +
                         std::to_string((*largs)->size()));
      for (size_t j = 0; j < (*largs)->size(); ++j) {
        const json &a = (**largs)[j];
        std::string aat = sub(sub(lat, "args"), j);
        KOPT_RETURN_IF_ERROR(expectObject(a, aat));
        bool hasArg = a.contains("arg"), hasBuffer = a.contains("buffer");
        if (hasArg == hasBuffer)
          return error(aat, "must have exactly one of 'arg' and 'buffer'");
        LaunchArg arg;
        const TensorSpec &param = kernel->params[j];
        DType dtype;
        int64_t bytes;
        std::string what;
        if (hasArg) {
          Expected<int64_t> index = getInt(a, aat, "arg");
          if (!index.ok())
            return index.status();
          if (*index < 0 || *index >= static_cast<int64_t>(f.args.size()))
            return error(sub(aat, "arg"),
                         "no argument " + std::to_string(*index) +
                             " (the function has " +
                             std::to_string(f.args.size()) + ")");
          arg.kind = LaunchArg::Kind::Arg;
          arg.index = *index;
          const TensorSpec &t = f.args[*index];
          if (param.role == Role::Workspace)
            return error(aat, "kernel workspace parameter '" + param.name +
                                  "' must be bound to a workspace buffer, not "
                                  "function argument " +
                                  std::to_string(*index));
          if (t.role == Role::Input && param.role == Role::Output)
            return error(aat, "kernel output parameter '" + param.name +
                                  "' is bound to function input argument " +
                                  std::to_string(*index));
          dtype = t.dtype;
          bytes = t.numBytes();
          what = "argument " + std::to_string(*index) + " is " +
                 dtypeName(t.dtype) + " " + shapeToString(t.shape);
        } else {
          Expected<int64_t> id = getInt(a, aat, "buffer");
          if (!id.ok())
            return id.status();
          const BufferSpec *buf = f.findBuffer(*id);
          if (!buf)
            return error(sub(aat, "buffer"),
                         "no buffer with id " + std::to_string(*id));
          if (buf->workspace != (param.role == Role::Workspace))
            return error(
                aat, buf->workspace
                         ? "workspace buffer " + std::to_string(*id) +
                               " is bound to kernel parameter '" + param.name +
                               "', which is not a "
                               "workspace"
                         : "kernel workspace parameter '" + param.name +
                               "' is bound to buffer " + std::to_string(*id) +
                               ", which is not a workspace");
          arg.kind = LaunchArg::Kind::Buffer;
          arg.index = *id;
          dtype = buf->dtype;
          bytes = numBytes(buf->shape, buf->dtype);
          what = "buffer " + std::to_string(*id) + " is " +
                 dtypeName(buf->dtype) + " " + shapeToString(buf->shape);
        }
        if (dtype != param.dtype || bytes != param.numBytes())
          return error(aat, what + " but kernel parameter '" + param.name +
                                "' is " + dtypeName(param.dtype) + " " +
                                shapeToString(param.shape));
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
          getFunction((**functions)[i], sub("functions", i), m);
      if (!f.ok())
        return f.status();
      m.functions.push_back(f.take());
    }
    return m;
  }

private:
  std::string source;
};

} // namespace

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

} // namespace kopt::rt
