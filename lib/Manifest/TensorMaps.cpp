//===- TensorMaps.cpp - Validate a kernel's TMA tensor maps ---------------===//
//
// The rules of docs/manifest.md, `tensor_maps` and "Tensor maps and the
// schedule"; see include/kopt/Manifest/Manifest.h.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"
#include "kopt/Schedule/Schedule.h"

#include <limits>

namespace kopt::manifest {

using namespace detail;

namespace {

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
/// (lib/KernelBuilders/Matmul/TensorMaps.cpp).
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
  const OpSpec *matmul = kernel.findOp(OpKind::Matmul);
  if (!matmul) {
    if (count == 0)
      return Status::success();
    return fail(at, "op " + kernel.opsName() +
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
  // 128-byte swizzled (lib/KernelBuilders/Matmul/Wgmma.cpp).
  struct Operand {
    const char *name;
    const char *rowsField;
    int64_t rows;
  };
  const Operand operands[2] = {{"a", "block_m", schedule.blockM},
                               {"b", "block_n", schedule.blockN}};
  for (size_t i = 0; i < 2; ++i) {
    const TensorMapSpec &map = kernel.tensorMaps[i];
    const Operand &o = operands[i];
    std::string mapAt = at + "[" + std::to_string(i) + "]";
    const std::string *operandValue = matmul->operand(o.name);
    const TensorSpec *operand =
        operandValue ? kernel.findParam(*operandValue) : nullptr;
    const TensorSpec *tensor = kernel.findParam(map.tensor);
    // validateOps and validateTensorMaps reject these first, except an
    // operand that is an internal value (a map reads kernel parameters).
    if (!operand)
      return fail(mapAt + ".tensor",
                  std::string("the matmul's '") + o.name +
                      "' is not a kernel parameter; copy = tma reads its "
                      "operands from parameters");
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

} // namespace kopt::manifest
