//===- Manifest.h - The kopt launch manifest (format version 1) -*- C++ -*-===//
//
// Parses and validates the launch manifest that `kopt-opt --kopt-to-ptx` writes
// beside its PTX (see docs/manifest.md). Pure C++17: no CUDA, no MLIR.
//
// Error behaviour: parseManifest/loadManifest never throw and never abort. Any
// malformed input (bad JSON, a missing or mistyped field, an unknown dtype,
// op or class, a non-positive dimension, a wrong version, operands that do not
// fit the op, a launch that names a missing kernel, argument or buffer) gives
// a failure whose message names the file and the field, e.g.
//   "out/softmax.json: kernels[0].params[1].dtype: unknown dtype 'f64'
//    (expected f32, f16 or bf16)".
// The same holds for the optional `tensor_maps` of a kernel (TMA), e.g.
//   "out/mm.json: kernels[0] (mm_0).tensor_maps[1].box[0]: 512 is out of
//    range (1 to 256)",
// and for maps that disagree with the matmul's `schedule` (copy = tma takes
// exactly the maps of a and b, with boxes of the block tile), e.g.
//   "out/mm.json: kernels[0] (mm_0).tensor_maps[0].box[1]: 64, but
//    schedule.block_m is 128".
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_RUNTIME_MANIFEST_H
#define KOPT_RUNTIME_MANIFEST_H

#include "kopt/Runtime/Error.h"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kopt::rt {

/// The manifest format version this parser reads.
inline constexpr int kManifestVersion = 1;

/// Element types of kernel parameters.
enum class DType { F32, F16, BF16 };

/// "f32", "f16" or "bf16".
const char *dtypeName(DType dtype);
/// Parses "f32", "f16" or "bf16"; nullopt for anything else.
std::optional<DType> parseDType(std::string_view name);
/// Bytes per element: 4 for f32, 2 for f16 and bf16.
int64_t dtypeSize(DType dtype);

/// A dense row-major shape. An empty shape is a scalar (one element).
using Shape = std::vector<int64_t>;

/// Number of elements of `shape` (1 for a scalar). The manifest parser rejects
/// shapes whose element count or byte size overflows int64_t, so this is safe
/// on any shape that came out of a parsed manifest.
int64_t numElements(const Shape &shape);
/// Bytes of a dense array of `shape` and `dtype`.
int64_t numBytes(const Shape &shape, DType dtype);
/// "[4096, 32000]".
std::string shapeToString(const Shape &shape);

/// Workspace: scratch memory a kernel needs (split-K matmuls), zero-filled by
/// the runtime before the kernel's first launch; never checked.
enum class Role { Input, Output, Workspace };
const char *roleName(Role role);

/// A tensor: a kernel parameter or a function argument.
struct TensorSpec {
  std::string name;
  Role role = Role::Input;
  DType dtype = DType::F32;
  Shape shape;

  int64_t numElements() const { return kopt::rt::numElements(shape); }
  int64_t numBytes() const { return kopt::rt::numBytes(shape, dtype); }
};

/// The kernel builder that made a kernel.
enum class KernelClass { Elementwise, Row, Matmul, Pack };
const char *kernelClassName(KernelClass cls);

/// The kopt ops a kernel can compute (docs/manifest.md, "kernels[].op").
enum class OpKind {
  Matmul,
  Add,
  Sub,
  Mul,
  Div,
  Max,
  Min,
  Exp,
  Neg,
  Abs,
  Sqrt,
  Rsqrt,
  Tanh,
  Sigmoid,
  Relu,
  Silu,
  Gelu,
  Cast,
  Reduce,
  Softmax,
  RmsNorm,
  LayerNorm,
  Pack,
};
/// The op's name as written in the manifest ("matmul", "rmsnorm", ...).
const char *opName(OpKind op);
std::optional<OpKind> parseOpKind(std::string_view name);
bool isBinaryOp(OpKind op);
/// exp neg abs sqrt rsqrt tanh sigmoid relu silu gelu cast.
bool isUnaryOp(OpKind op);

enum class GeluApproximation { None, Tanh };
enum class ReduceKind { Sum, Max, Mean };
const char *reduceKindName(ReduceKind kind);

/// The op's attributes. Only the fields of the kernel's op are meaningful.
/// `tf32` is the matmul's optional `tf32` (absent = false): the product may run
/// on tensor cores in TF32 (operands' mantissas cut to 10 bits, products summed
/// in f32); validateKernelOperands rejects it on operands that are not f32.
struct OpAttrs {
  bool transposeA = false;                                 // matmul
  bool transposeB = false;                                 // matmul
  bool tf32 = false;                                       // matmul
  GeluApproximation approximate = GeluApproximation::None; // gelu
  ReduceKind reduceKind = ReduceKind::Sum;                 // reduce
  double eps = 0.0;                                        // rmsnorm, layernorm
  bool transpose = false;                                  // pack
};

/// A TMA tensor map the kernel reads (docs/manifest.md,
/// `kernels[].tensor_maps`): a CUtensorMap over the device buffer bound to the
/// input parameter `tensor`, passed as one extra `.u64` parameter (the device
/// address of the 128-byte map) after `params`.
struct TensorMapSpec {
  /// The name of one of the kernel's input parameters (TMA loads) or of its
  /// output (a TMA store epilogue).
  std::string tensor;
  /// Box size per dimension, innermost first; one entry per dimension of the
  /// tensor, each 1 to 256.
  std::vector<int64_t> box;
  /// Shared-memory swizzle span in bytes: 0 (none), 32, 64 or 128.
  int swizzle = 0;
};

/// The most dimensions a tensor map has (cuTensorMapEncodeTiled).
inline constexpr size_t kMaxTensorMapRank = 5;

/// What cuTensorMapEncodeTiled gets for one tensor map, derived from the map
/// and its tensor's parameter: every array is innermost dimension first.
struct TensorMapGeometry {
  /// Index of the map's tensor in the kernel's `params`.
  size_t paramIndex = 0;
  DType dtype = DType::F32;
  /// The tensor's shape reversed (rank entries).
  std::vector<uint64_t> globalDim;
  /// Dense row-major byte strides of dimensions 1 .. rank-1 (rank-1 entries).
  std::vector<uint64_t> globalStrides;
  std::vector<uint32_t> box;
  /// 0, 32, 64 or 128 bytes.
  int swizzle = 0;
};

/// What the runtime reads of a matmul kernel's `schedule` (docs/manifest.md):
/// its copy engine and `tma_store`, which decide the kernel's tensor maps,
/// and, for `copy: "tma"` or `tma_store: true`, the block tile, which gives
/// the maps' box rows. The rest of the schedule is informational.
struct ScheduleSpec {
  /// `copy` as written: "sync", "cp_async" or "tma".
  std::string copy;
  /// `tma_store` (absent: false): the epilogue stores C through a tensor map,
  /// the kernel's last.
  bool tmaStore = false;
  /// `block_m` and `block_n`: read (and required) only when copy is "tma"
  /// or tma_store is true.
  int64_t blockM = 0;
  int64_t blockN = 0;
  /// `num_warps` when given (0: absent): the block must have 32 x num_warps
  /// threads (a warp-specialized kernel launched without its producer warp
  /// would wait forever on its mbarriers).
  int64_t numWarps = 0;
};

/// One `.entry` of the PTX.
struct KernelSpec {
  std::string name;
  KernelClass cls = KernelClass::Elementwise;
  OpKind op = OpKind::Add;
  OpAttrs attrs;
  /// The `attrs` object as JSON text, for reports.
  std::string attrsJson = "{}";
  /// Parameters in PTX order; every one is a `.u64` device pointer.
  std::vector<TensorSpec> params;
  /// TMA tensor maps, in the order of their `.u64` parameters, which follow
  /// `params` in PTX order (empty for kernels without TMA).
  std::vector<TensorMapSpec> tensorMaps;
  /// The `schedule` of a matmul kernel that has one (absent on other
  /// kernels: the parser does not read theirs).
  std::optional<ScheduleSpec> schedule;
  std::array<uint32_t, 3> grid{1, 1, 1};
  std::array<uint32_t, 3> block{1, 1, 1};
  /// Bytes of dynamic shared memory to pass at launch.
  uint32_t dynamicSharedBytes = 0;

  /// The parameter called `name`, or null.
  const TensorSpec *findParam(std::string_view paramName) const;
  /// Number of `.u64` kernel parameters: `params`, then one per tensor map.
  size_t numLaunchParams() const { return params.size() + tensorMaps.size(); }
  /// Sum of the byte sizes of the input and output parameters (workspaces
  /// are not counted: the kernel touches only part of them).
  int64_t totalParamBytes() const;
};

/// An intermediate device buffer of a function.
struct BufferSpec {
  int64_t id = 0;
  DType dtype = DType::F32;
  Shape shape;
  /// A workspace (`"role": "workspace"`): zero-filled once when allocated.
  bool workspace = false;
};

/// One argument of a launch: the function's `index`-th argument, or the buffer
/// whose id is `index`.
struct LaunchArg {
  enum class Kind { Arg, Buffer };
  Kind kind = Kind::Arg;
  int64_t index = 0;
};

struct LaunchSpec {
  std::string kernel;
  std::vector<LaunchArg> args;
};

/// One source `func.func`: its tensors, intermediate buffers and the kernel
/// launches, in order.
struct FunctionSpec {
  std::string name;
  std::vector<TensorSpec> args;
  std::vector<BufferSpec> buffers;
  std::vector<LaunchSpec> launches;

  const BufferSpec *findBuffer(int64_t id) const;
};

struct Manifest {
  int version = kManifestVersion;
  std::string chip;
  /// The `ptx` field as written (relative to the manifest's folder).
  std::string ptx;
  /// `ptx` resolved against the manifest's folder.
  std::string ptxPath;
  /// The file the manifest was read from (or the name given to parseManifest).
  std::string sourceName;
  std::vector<KernelSpec> kernels;
  std::vector<FunctionSpec> functions;

  /// The kernel called `name`, or null.
  const KernelSpec *findKernel(std::string_view kernelName) const;
};

/// Checks `kernel`'s tensor maps against its parameters (docs/manifest.md,
/// `tensor_maps`: the tensor names an input parameter of rank 1 to 5, a box
/// of the same rank with entries 1 to 256 whose innermost row is a multiple
/// of 16 bytes and fits the swizzle span, a swizzle of 0, 32, 64 or 128, byte
/// strides that are multiples of 16 below 2^40). parseManifest calls this for
/// every kernel; `where` prefixes the error message (e.g. "f.json:
/// kernels[2] (mm_0)"), which names the field, e.g. "...tensor_maps[1].box[0]:
/// 512 is out of range (1 to 256)".
Status validateTensorMaps(const KernelSpec &kernel, const std::string &where);

/// Checks which tensor maps `kernel` takes (docs/manifest.md, `tensor_maps`
/// and `schedule`): none unless it is a matmul; on a matmul with a
/// `schedule`, exactly two when schedule.copy is "tma" (map 0 of 'a' with box
/// [128 / sizeof(dtype), block_m], map 1 of 'b' with box [128 / sizeof(dtype),
/// block_n], both swizzle 128; a map may name the other input instead when
/// that input has the same last (K) dimension, as when both operands are one
/// buffer) and none with any other copy. A matmul without `schedule` is held
/// to validateTensorMaps' rules only. parseManifest calls this after
/// validateTensorMaps; errors name the field and both sides, e.g.
/// "...tensor_maps[0].box[1]: 64, but schedule.block_m is 128".
Status validateTensorMapSchedule(const KernelSpec &kernel,
                                 const std::string &where);

/// The cuTensorMapEncodeTiled arguments of `kernel.tensorMaps[mapIndex]`
/// (dtype, dimensions and strides of its tensor, box, swizzle). Fails, naming
/// the kernel and the tensor, on a map that validateTensorMaps rejects.
Expected<TensorMapGeometry> tensorMapGeometry(const KernelSpec &kernel,
                                              size_t mapIndex);

/// Parses manifest text. `sourceName` prefixes every error message;
/// `baseDir` is the folder the `ptx` field is relative to (may be empty).
Expected<Manifest> parseManifest(std::string_view text,
                                 const std::string &sourceName,
                                 const std::string &baseDir = "");

/// Reads and parses the manifest file at `path`.
Expected<Manifest> loadManifest(const std::string &path);

/// Checks that `kernel`'s parameters fit its op (names, roles, count and
/// shapes; see docs/manifest.md). parseManifest calls this for every kernel;
/// `where` prefixes the error message (e.g. "f.json: kernels[2]").
Status validateKernelOperands(const KernelSpec &kernel,
                              const std::string &where);

} // namespace kopt::rt

#endif // KOPT_RUNTIME_MANIFEST_H
