//===- Manifest.h - The kopt launch manifest (format version 2) -*- C++ -*-===//
//
// The one schema of the launch manifest that `kopt-opt --kopt-to-ptx` writes
// beside its PTX and that the runtime reads (docs/manifest.md): the structs,
// the names of every enum, the validator, the reader (JSON text -> structs)
// and the writer (structs -> JSON text). Pure C++17 with nlohmann/json inside:
// no CUDA, no MLIR. The compiler (lib/Target/ManifestFromModule.cpp) fills the
// structs from the MLIR module, runs the validator and writes through the
// writer, so it never writes a manifest the runtime refuses.
//
// Error behaviour: nothing here throws or aborts. Any malformed input (bad
// JSON, a missing or mistyped field, an unknown dtype, op or class, a
// non-positive dimension, a wrong version, an ops graph whose values do not
// fit, a launch that names a missing kernel, argument or buffer, a string that
// is not UTF-8) gives a failure whose message names the file and the field,
// e.g.
//   "out/softmax.json: kernels[0].params[1].dtype: unknown dtype 'f64'
//    (expected f32, f16 or bf16)",
//   "out/mm.json: kernels[0] (mm_0).tensor_maps[1].box[0]: 512 is out of
//    range (1 to 256)",
//   "out/mm.json: kernels[0] (mm_0).tensor_maps[0].box[1]: 64, but
//    schedule.block_m is 128".
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_MANIFEST_MANIFEST_H
#define KOPT_MANIFEST_MANIFEST_H

#include "kopt/Manifest/DType.h"
#include "kopt/Manifest/Error.h"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kopt::manifest {

/// The manifest format version this library reads and writes. Version 1 (one
/// `op` per kernel) is refused with a message to re-compile.
inline constexpr int kManifestVersion = 2;

/// A dense row-major shape. An empty shape is a scalar (one element).
using Shape = std::vector<int64_t>;

/// Number of elements of `shape` (1 for a scalar). The reader rejects shapes
/// whose element count or byte size overflows int64_t, so this is safe on any
/// shape that came out of a parsed manifest.
int64_t numElements(const Shape &shape);
/// Bytes of a dense array of `shape` and `dtype`.
int64_t numBytes(const Shape &shape, DType dtype);
/// "[4096, 32000]".
std::string shapeToString(const Shape &shape);

/// Whether `text` is well-formed UTF-8 (JSON strings must be).
bool isValidUTF8(std::string_view text);

/// Workspace: scratch memory a kernel needs (split-K matmuls), zero-filled by
/// the runtime before the kernel's first launch; never checked.
enum class Role { Input, Output, Workspace };
/// "input", "output" or "workspace".
const char *roleName(Role role);
std::optional<Role> parseRole(std::string_view name);

/// The kernel builder that made a kernel (the compiler's classification,
/// kopt::classifyKernel, uses this type).
enum class KernelClass { Elementwise, Row, Matmul, Pack };
/// "elementwise", "row", "matmul" or "pack".
const char *kernelClassName(KernelClass cls);
std::optional<KernelClass> parseKernelClass(std::string_view name);

/// The kopt ops a kernel's graph is made of (docs/manifest.md, "ops").
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
  Log,
  Log1p,
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
/// The op's name as written in the manifest ("matmul", "rmsnorm", ...): the
/// kopt op's name without the `kopt.` prefix.
const char *opName(OpKind op);
std::optional<OpKind> parseOpKind(std::string_view name);
bool isBinaryOp(OpKind op);
/// exp neg abs sqrt rsqrt tanh log log1p sigmoid relu silu gelu cast.
bool isUnaryOp(OpKind op);

/// The names of the operands of an op of `kind`, in order, required ones
/// first: matmul a, b; binary ops lhs, rhs; rmsnorm input, weight;
/// layernorm input, weight, bias; every other op input. `numRequired` is set
/// to how many of them are required (weight and bias are optional).
std::vector<std::string> operandNames(OpKind kind, size_t *numRequired);

enum class GeluApproximation { None, Tanh };
/// "none" or "tanh".
const char *geluApproximationName(GeluApproximation a);
enum class ReduceKind { Sum, Max, Mean };
/// "sum", "max" or "mean".
const char *reduceKindName(ReduceKind kind);

/// The one rule for the `eps` of rmsnorm and layernorm, which the dialect's
/// verifier and the manifest validator both apply: a number in [0, 1].
/// Returns the complaint ("eps must be in [0, 1], got 2") or nullopt.
std::optional<std::string> epsError(double eps);

/// An op's attributes. Only the fields of the op's kind are meaningful.
/// `tf32` is the matmul's optional `tf32` (absent = false): the product may run
/// on tensor cores in TF32 (operands' mantissas cut to 10 bits, products summed
/// in f32); the validator rejects it on operands that are not f32.
struct OpAttrs {
  bool transposeA = false;                                 // matmul
  bool transposeB = false;                                 // matmul
  bool tf32 = false;                                       // matmul
  GeluApproximation approximate = GeluApproximation::None; // gelu
  ReduceKind reduceKind = ReduceKind::Sum;                 // reduce
  double eps = 0.0;                                        // rmsnorm, layernorm
  bool transpose = false;                                  // pack
};

/// A tensor: a kernel parameter, a function argument or an internal value of
/// a kernel (whose role is meaningless).
struct TensorSpec {
  std::string name;
  Role role = Role::Input;
  DType dtype = DType::F32;
  Shape shape;

  int64_t numElements() const { return manifest::numElements(shape); }
  int64_t numBytes() const { return manifest::numBytes(shape, dtype); }
};

/// One operand of an op: the op's operand name (e.g. "lhs") and the value it
/// reads (a kernel parameter or an internal value, by name).
struct OpOperand {
  std::string name;
  std::string value;
};

/// One op of a kernel's graph (docs/manifest.md, `kernels[].ops`).
struct OpSpec {
  OpKind kind = OpKind::Add;
  OpAttrs attrs;
  /// In the order of operandNames(kind); optional operands may be absent.
  std::vector<OpOperand> operands;
  /// The value the op defines: an output parameter or an internal value.
  std::string result;

  /// The value read by operand `operandName`, or null when absent.
  const std::string *operand(std::string_view operandName) const;
};

/// A TMA tensor map the kernel reads (docs/manifest.md,
/// `kernels[].tensor_maps`): a CUtensorMap over the device buffer bound to the
/// parameter `tensor`, passed as one extra `.u64` parameter (the device
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

/// What the validator reads of a matmul kernel's `schedule`
/// (docs/manifest.md): its copy engine and `tma_store`, which decide the
/// kernel's tensor maps, and, for `copy: "tma"` or `tma_store: true`, the
/// block tile, which gives the maps' box rows. The rest of the schedule is
/// informational and kept as JSON text in `json`.
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
  /// The whole `schedule` object as JSON text (docs/schedules.md); the
  /// writer writes it as given (empty: the fields above only).
  std::string json;
};

/// One `.entry` of the PTX.
struct KernelSpec {
  std::string name;
  KernelClass cls = KernelClass::Elementwise;
  /// The graph of ops the kernel computes, in order (at least one).
  std::vector<OpSpec> ops;
  /// Values the ops pass to each other inside the kernel (`role` unused):
  /// never in memory the runtime sees.
  std::vector<TensorSpec> values;
  /// Parameters in PTX order; every one is a `.u64` device pointer.
  std::vector<TensorSpec> params;
  /// TMA tensor maps, in the order of their `.u64` parameters, which follow
  /// `params` in PTX order (empty for kernels without TMA).
  std::vector<TensorMapSpec> tensorMaps;
  /// The `schedule` of a kernel with a matmul that has one (the reader does
  /// not read other kernels').
  std::optional<ScheduleSpec> schedule;
  std::array<uint32_t, 3> grid{1, 1, 1};
  std::array<uint32_t, 3> block{1, 1, 1};
  /// Blocks per thread-block cluster (sm_90), fixed in the kernel's PTX
  /// (`.reqnctapercluster`), so a plain launch honours it; the grid is a
  /// multiple of it. {1, 1, 1}: no cluster (the manifest omits the field).
  std::array<uint32_t, 3> cluster{1, 1, 1};
  /// Bytes of dynamic shared memory to pass at launch.
  uint32_t dynamicSharedBytes = 0;

  /// The parameter called `name`, or null.
  const TensorSpec *findParam(std::string_view paramName) const;
  /// The parameter or internal value called `name`, or null.
  const TensorSpec *findValue(std::string_view valueName) const;
  /// The kernel's only op when its graph has exactly one, else null.
  const OpSpec *singleOp() const;
  /// The first op of `kind`, or null.
  const OpSpec *findOp(OpKind kind) const;
  /// "matmul", or the kinds of a chain joined by '+': "matmul+add+gelu".
  std::string opsName() const;
  /// Number of `.u64` kernel parameters: `params`, then one per tensor map.
  size_t numLaunchParams() const { return params.size() + tensorMaps.size(); }
  /// Sum of the byte sizes of the input and output parameters (workspaces
  /// are not counted: the kernel touches only part of them).
  int64_t totalParamBytes() const;
};

/// The op of a kernel that computes one op over its parameters, named after
/// the op's operands (as kopt-fuse names them): every input parameter is the
/// operand of its name, the output parameter the result (workspaces are not
/// operands). The compiler describes each kopt-fuse kernel so.
OpSpec opOverParams(OpKind kind, const OpAttrs &attrs,
                    const std::vector<TensorSpec> &params);

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
  /// `ptx` resolved against the manifest's folder (reader only).
  std::string ptxPath;
  /// The file the manifest was read from (or the name given to parseManifest).
  std::string sourceName;
  std::vector<KernelSpec> kernels;
  std::vector<FunctionSpec> functions;

  /// The kernel called `name`, or null.
  const KernelSpec *findKernel(std::string_view kernelName) const;
};

//===----------------------------------------------------------------------===//
// Validation (Validate.cpp, TensorMaps.cpp). `where` prefixes every message
// (e.g. "f.json: kernels[2] (mm_0)"), which then names the field.
//===----------------------------------------------------------------------===//

/// Checks `kernel`'s ops graph against its parameters and internal values
/// (docs/manifest.md, `ops`): every operand reads an input parameter or a
/// value an earlier op defined, every op defines a new output parameter or
/// internal value, every input is read, every output and internal value
/// defined, shapes and dtypes fit each op, attributes are in range (eps,
/// tf32), and a workspace parameter is the last of a kernel with one matmul
/// and large enough for it.
Status validateOps(const KernelSpec &kernel, const std::string &where);

/// Checks `kernel`'s tensor maps against its parameters (docs/manifest.md,
/// `tensor_maps`: the tensor names an input or output parameter of rank 1 to
/// 5, a box of the same rank with entries 1 to 256 whose innermost row is a
/// multiple of 16 bytes and fits the swizzle span, a swizzle of 0, 32, 64 or
/// 128, byte strides that are multiples of 16 below 2^40).
Status validateTensorMaps(const KernelSpec &kernel, const std::string &where);

/// Checks which tensor maps `kernel` takes (docs/manifest.md, `tensor_maps`
/// and `schedule`): none unless its graph has a matmul; on a matmul kernel
/// with a `schedule`, exactly two when schedule.copy is "tma" (map 0 of the
/// matmul's `a` with box [128 / sizeof(dtype), block_m], map 1 of its `b`
/// with box [128 / sizeof(dtype), block_n], both swizzle 128; a map may name
/// the other input instead when that input has the same last (K) dimension),
/// one more for tma_store, and none with any other copy. A matmul without
/// `schedule` is held to validateTensorMaps' rules only.
Status validateTensorMapSchedule(const KernelSpec &kernel,
                                 const std::string &where);

/// Every rule on one kernel: a non-empty UTF-8 name and UTF-8 names of its
/// parameters and values, unique names, grid and block in range (at most
/// 1024 threads, matching schedule.num_warps), validateOps,
/// validateTensorMaps and validateTensorMapSchedule. The reader calls it for
/// every kernel; the compiler before writing one.
Status validateKernel(const KernelSpec &kernel, const std::string &where);

/// Every rule on one function of `manifest`: UTF-8 names, argument roles,
/// unique buffer ids, and launches that name a kernel of `manifest` and bind
/// each parameter to an argument or buffer of its dtype and size (outputs
/// not to inputs, workspaces only to workspace buffers).
Status validateFunction(const FunctionSpec &function, const Manifest &manifest,
                        const std::string &where);

/// The whole manifest: its version, chip and ptx (non-empty, UTF-8), every
/// kernel (validateKernel, unique names) and every function
/// (validateFunction). `where` is the manifest's name ("" for none).
Status validateManifest(const Manifest &manifest, const std::string &where);

/// The cuTensorMapEncodeTiled arguments of `kernel.tensorMaps[mapIndex]`
/// (dtype, dimensions and strides of its tensor, box, swizzle). Fails, naming
/// the kernel and the tensor, on a map that validateTensorMaps rejects.
Expected<TensorMapGeometry> tensorMapGeometry(const KernelSpec &kernel,
                                              size_t mapIndex);

//===----------------------------------------------------------------------===//
// Reading (Reader.cpp) and writing (Writer.cpp)
//===----------------------------------------------------------------------===//

/// Parses and validates manifest text. `sourceName` prefixes every error
/// message; `baseDir` is the folder the `ptx` field is relative to (may be
/// empty).
Expected<Manifest> parseManifest(std::string_view text,
                                 const std::string &sourceName,
                                 const std::string &baseDir = "");

/// Reads, parses and validates the manifest file at `path`.
Expected<Manifest> loadManifest(const std::string &path);

/// The attributes of an op of `kind` from their JSON object text (as in
/// `ops[].attrs`); the kind's own attributes are required. Errors name
/// `where` and the field ("...attrs.transpose_b: missing field"). Values are
/// only read here; validateOps checks their ranges.
Expected<OpAttrs> parseOpAttrs(OpKind kind, std::string_view attrsJson,
                               const std::string &where);

/// The manifest as JSON text (docs/manifest.md), indented by two, with a
/// final newline. It writes what it is given: validate first (the compiler
/// does). Strings that are not UTF-8 are written with U+FFFD in place of the
/// bad bytes (validateManifest rejects them), never a crash.
std::string writeManifest(const Manifest &manifest);

/// `ops[i].attrs` as compact JSON text ({"transpose_a":false,...}).
std::string writeOpAttrs(const OpSpec &op);

/// `kernel.ops` as compact JSON text (the array of docs/manifest.md).
std::string writeOps(const KernelSpec &kernel);

} // namespace kopt::manifest

#endif // KOPT_MANIFEST_MANIFEST_H
