//===- Runtime.h - A small runtime over the CUDA driver API -----*- C++ -*-===//
//
// Loads PTX, launches kernels described by a launch manifest, moves memory and
// times with events, through the CUDA driver API. No MLIR, and no link-time
// dependency on the driver: libcuda.so.1 is opened with dlopen at run time, so
// a machine without a driver gets the error "no CUDA driver: libcuda.so.1 not
// found" instead of a loader failure. cuBLAS (the matmul reference) is opened
// the same way.
//
// Error behaviour: every CUDA call's result is checked; a failure comes back
// as a Status/Expected whose message names the call and gives the CUDA error
// name and string, e.g. "cuLaunchKernel (kernel softmax_0):
// CUDA_ERROR_INVALID_VALUE (invalid argument)". Nothing here throws or aborts.
//
// Threading: a CudaContext makes the device's primary context current on the
// thread that creates it; use it from that thread.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_RUNTIME_RUNTIME_H
#define KOPT_RUNTIME_RUNTIME_H

#include "kopt/Manifest/Manifest.h"
#include "kopt/Runtime/ArgPack.h"
#include "kopt/Runtime/Error.h"
#include "kopt/Runtime/Workspace.h"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

// The driver's opaque handle types, as cuda.h declares them; this header does
// not need cuda.h.
struct CUstream_st;
struct CUfunc_st;
struct CUevent_st;
struct CUmod_st;
struct CUctx_st;

namespace kopt::rt {

/// A device address (CUdeviceptr).
using DevicePtr = uint64_t;
using Stream = CUstream_st *; ///< CUstream; nullptr is the legacy default
using Function = CUfunc_st *; ///< CUfunction
using Event = CUevent_st *;   ///< CUevent

struct DeviceInfo {
  int ordinal = 0;
  std::string name;
  int ccMajor = 0, ccMinor = 0;
  int smCount = 0;
  int64_t totalMemoryBytes = 0;
  int l2CacheBytes = 0;
  /// Largest dynamic shared memory per block after opting in, in bytes.
  int maxSharedPerBlockOptin = 0;
  /// cuDriverGetVersion, e.g. 13000.
  int driverVersion = 0;
};

/// Register and memory use of a loaded kernel (cuFuncGetAttribute).
struct FunctionResources {
  int registers = 0;
  /// Per-thread local memory (spills, local arrays), bytes.
  int localBytes = 0;
  /// Static shared memory, bytes.
  int staticSharedBytes = 0;
  int maxThreadsPerBlock = 0;
};

/// Loads libcuda.so.1 and resolves the driver functions (once per process).
/// Fails with "no CUDA driver: libcuda.so.1 not found" when there is none.
Status loadCudaDriver();

/// Whether the loaded driver has cuFuncGetParamInfo (CUDA 12.4+), i.e. whether
/// CudaContext::getFunction(ptxPath, kernel) checks kernels' parameter counts.
/// False when there is no driver.
bool canCountKernelParams();

class CudaContext;

/// One kernel launch of a function, resolved: the kernel and the device
/// pointers of its parameters (function arguments and workspace buffers).
struct ResolvedLaunch {
  const KernelSpec *kernel = nullptr;
  std::vector<DevicePtr> pointers;
};

/// The launches of `function` for `args` (manifest order) and a workspace of
/// `workspaceBytes` at `workspace`, resolved and checked as
/// CudaContext::launchFunction checks them (the argument count, null and
/// misaligned pointers, the workspace's size and alignment, kernels and
/// buffers that exist), without touching the device: for launchers that
/// pack each launch themselves (the measurement library binds tensor maps
/// per buffer set).
Expected<std::vector<ResolvedLaunch>>
resolveLaunches(const Manifest &manifest, const FunctionSpec &function,
                const std::vector<DevicePtr> &args, DevicePtr workspace,
                int64_t workspaceBytes);

/// A device allocation that frees itself. Move-only.
class DeviceBuffer {
public:
  DeviceBuffer() = default;
  DeviceBuffer(CudaContext *ctx, DevicePtr ptr, int64_t bytes)
      : ctx(ctx), ptr(ptr), bytes(bytes) {}
  DeviceBuffer(DeviceBuffer &&other) noexcept { *this = std::move(other); }
  DeviceBuffer &operator=(DeviceBuffer &&other) noexcept;
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;
  ~DeviceBuffer() { reset(); }

  DevicePtr get() const { return ptr; }
  int64_t size() const { return bytes; }
  /// Frees the allocation now (errors are ignored; use CudaContext::free to
  /// see them).
  void reset();
  /// Gives the allocation up without freeing it and returns its address: for
  /// a context that must not be touched any more (a kernel that timed out may
  /// still run, and cuMemFree would wait for it).
  DevicePtr release();

private:
  CudaContext *ctx = nullptr;
  DevicePtr ptr = 0;
  int64_t bytes = 0;
};

/// Bytes of a CUtensorMap, and the alignment the driver and the kernel need.
inline constexpr int64_t kTensorMapBytes = 128;
inline constexpr int64_t kTensorMapAlignment = 64;

/// The device-side CUtensorMaps of one kernel's `tensor_maps`
/// (docs/manifest.md): one 128-byte device buffer per map (cuMemAlloc, so
/// 256-byte aligned). bind() encodes each map with cuTensorMapEncodeTiled from
/// the device address bound to its tensor and copies it into its buffer, but
/// only when the encoding changed since the last bind, i.e. in practice when
/// the tensor's address changed: launches that reuse the same buffers copy
/// nothing. Pass addresses() to ArgPack::create (CudaContext::packArgs does
/// both). Move-only; frees its buffers when destroyed, so it must outlive the
/// launches that read them. Use it with one CudaContext.
class TensorMaps {
public:
  TensorMaps() = default;
  TensorMaps(TensorMaps &&) = default;
  TensorMaps &operator=(TensorMaps &&) = default;
  TensorMaps(const TensorMaps &) = delete;
  TensorMaps &operator=(const TensorMaps &) = delete;

  /// Makes the maps describe `pointers`, the device pointers of `kernel`'s
  /// parameters in order: allocates the buffers on first use, and encodes and
  /// copies each map whose encoding changed. The copy is enqueued on
  /// `stream` (cuMemcpyHtoDAsync from host memory, which the driver stages
  /// before returning), so it runs after the earlier launches of that stream
  /// that read the old map and before the next one: nothing waits for the
  /// context. Use one TensorMaps per kernel and stream (launchKernel does):
  /// launches on other streams would race with the copy. Fails, naming the
  /// kernel and the tensor, on an address that is not 16-byte aligned, a map
  /// the manifest rules reject, or a CUDA error (with its CUresult name). For
  /// a kernel without tensor maps, bind() holds no maps. Binding the maps of
  /// another kernel than the last frees the old buffers after a context-wide
  /// synchronization (rare: launchKernel keeps one TensorMaps per kernel).
  Status bind(CudaContext &ctx, const KernelSpec &kernel,
              const std::vector<DevicePtr> &pointers, Stream stream);
  /// The maps' device addresses, in `tensor_maps` order (empty before bind).
  const std::vector<DevicePtr> &addresses() const { return mapAddresses; }
  /// How many maps were encoded and copied to the device so far.
  int64_t uploads() const { return uploadCount; }

private:
  struct Map {
    DeviceBuffer buffer;
    /// What the buffer holds: the encoding of `geometry` at `tensor`.
    bool encoded = false;
    DevicePtr tensor = 0;
    TensorMapGeometry geometry;
  };
  std::vector<Map> maps;
  std::vector<DevicePtr> mapAddresses;
  int64_t uploadCount = 0;
};

/// One device's primary context, a module cache and thin checked wrappers.
class CudaContext {
public:
  /// Loads the driver, calls cuInit, retains device `ordinal`'s primary
  /// context and makes it current on the calling thread.
  static Expected<std::unique_ptr<CudaContext>> create(int ordinal = 0);
  /// Unloads the cached modules and releases the primary context.
  ~CudaContext();
  CudaContext(const CudaContext &) = delete;
  CudaContext &operator=(const CudaContext &) = delete;

  const DeviceInfo &device() const { return info; }

  /// Makes this context current on the calling thread on top of the
  /// thread's context stack (cuCtxPushCurrent); popCurrent restores the
  /// previous one. For libraries called from threads that are not the one
  /// that created the context (the C API).
  Status pushCurrent();
  void popCurrent();

  // Memory. Sizes are in bytes.
  Expected<DeviceBuffer> allocate(int64_t bytes);
  Status free(DevicePtr ptr);
  /// Synchronous copies on the legacy default stream (pageable host memory).
  Status copyToDevice(DevicePtr dst, const void *src, int64_t bytes);
  /// Enqueues a copy of `bytes` host bytes at `src` to `dst` on `stream`;
  /// from pageable memory the driver stages `src` before returning, so the
  /// caller may reuse it at once.
  Status copyToDeviceAsync(DevicePtr dst, const void *src, int64_t bytes,
                           Stream stream);
  Status copyToHost(void *dst, DevicePtr src, int64_t bytes);
  /// Enqueues a device-to-device copy of `bytes` bytes on `stream`.
  Status copyDeviceAsync(DevicePtr dst, DevicePtr src, int64_t bytes,
                         Stream stream);
  /// Sets `bytes` bytes at `dst` to `value`, asynchronously on `stream`.
  Status memsetAsync(DevicePtr dst, uint8_t value, int64_t bytes,
                     Stream stream);

  // Streams and events.
  /// A stream ordered with the legacy default stream (CU_STREAM_DEFAULT), so
  /// that copyToDevice/copyToHost (synchronous, on the legacy stream) and
  /// work on it are ordered.
  Expected<Stream> createStream();
  Status destroyStream(Stream stream);
  Status synchronize(Stream stream);
  /// Fails unless `stream` (nullptr: the legacy default stream) belongs to
  /// this context (cuStreamGetCtx), e.g. "the stream 0x55d0... belongs to
  /// another CUDA context (another device?)". A pointer that is not a stream
  /// at all is undefined behaviour in the driver; this catches the streams of
  /// other devices and destroyed-context streams the driver can recognize.
  Status checkStream(Stream stream);
  Status synchronizeContext();
  Expected<Event> createEvent();
  Status destroyEvent(Event event);
  Status record(Event event, Stream stream);
  /// Whether the work before `event`'s last record has finished
  /// (cuEventQuery), without waiting: false while it runs; an error from
  /// that work (e.g. an illegal address in a kernel) comes back as a
  /// failure. For watchdogs that give up on a kernel that does not finish
  /// (kopt/Measure/Measure.h).
  Expected<bool> queryEvent(Event event);
  /// Milliseconds between two recorded events (waits for `end`).
  Expected<float> elapsedMs(Event start, Event end);

  // Modules and launches.
  /// Loads (once; cached by path) the PTX file at `ptxPath` with
  /// cuModuleLoadDataEx. A JIT failure's message holds ptxas's error log.
  Status loadModule(const std::string &ptxPath);
  /// Loads PTX text (once; cached under `key`, which getFunction and
  /// launchKernel take in place of a path: set Manifest::ptxPath to it).
  Status loadModuleData(const std::string &key, const std::string &ptx);
  /// Unloads the module cached under `key` (a path or a loadModuleData key)
  /// with its functions' tensor maps; nothing when there is none. The caller
  /// makes sure no launch of it still runs.
  Status unloadModule(const std::string &key);
  /// The JIT's info log (verbose: registers, spills) of a loaded module.
  std::string jitInfoLog(const std::string &ptxPath) const;
  /// The `.entry` called `name` of the PTX at `ptxPath` (loading it first).
  Expected<Function> getFunction(const std::string &ptxPath,
                                 const std::string &name);
  /// The `.entry` of `kernel` in the PTX at `ptxPath`, checked against the
  /// manifest: when the driver has cuFuncGetParamInfo (CUDA 12.4+), the
  /// entry's parameter count must be `kernel.numLaunchParams()` (its params,
  /// then one per tensor map), else this fails before anything is launched,
  /// e.g. "kernel 'matmul_0': the PTX entry takes 5 parameters, the manifest
  /// lists 3 params and no tensor maps (...)". Older drivers skip the check.
  Expected<Function> getFunction(const std::string &ptxPath,
                                 const KernelSpec &kernel);
  /// The number of parameters of `function` (cuFuncGetParamInfo on indices
  /// 0, 1, 2, ... until CUDA_ERROR_INVALID_VALUE); nullopt when the driver
  /// has no cuFuncGetParamInfo (older than CUDA 12.4).
  Expected<std::optional<size_t>> countKernelParams(Function function);
  Expected<FunctionResources> getResources(Function function);
  /// Launches `function` with the grid, block and dynamic shared memory of
  /// `kernel` on `stream`; `args` is cuLaunchKernel's kernelParams (see
  /// ArgPack). Raises the function's dynamic shared memory limit first when
  /// the kernel needs more than 48 KiB. Asynchronous: execution errors show at
  /// the next synchronize.
  Status launch(Function function, const KernelSpec &kernel, void **args,
                Stream stream);
  /// The kernelParams of `kernel` for `pointers` (one per parameter, in
  /// order): binds `maps` to them (TensorMaps::bind; nothing for a kernel
  /// without tensor maps) and packs the pointers, then the maps' addresses.
  /// The pack and `maps` must outlive the launches that use them; the maps
  /// are copied in `stream`'s order, so launch the pack on `stream`.
  Expected<ArgPack> packArgs(const KernelSpec &kernel,
                             const std::vector<DevicePtr> &pointers,
                             TensorMaps &maps, Stream stream);
  /// Looks up `kernel` in the manifest's PTX, packs `pointers` (one per
  /// parameter, in order) and launches on `stream`. A kernel's tensor maps
  /// are kept by the context (one set per function and stream, freed with
  /// its module) and re-encoded, in stream order, only when the addresses
  /// bound to their tensors change.
  Status launchKernel(const Manifest &manifest, const KernelSpec &kernel,
                      const std::vector<DevicePtr> &pointers, Stream stream);
  /// Enqueues every launch of `function` in order on `stream`, allocating
  /// and synchronizing nothing: `args` are the device pointers of its
  /// arguments (manifest order); `workspace` is a device region of
  /// `workspaceBytes` (at least workspaceLayout(function).bytes, 256-byte
  /// aligned) holding its intermediate buffers at the layout's offsets. The
  /// split-K workspace buffers in it are zero-filled on `stream` first
  /// unless `workspaceZeroed` (the caller keeps them from an earlier launch:
  /// split-K kernels leave them zero). Checks, before enqueuing anything,
  /// the argument count, that no pointer is null, that every pointer is
  /// 16-byte aligned (the kernels' vector and TMA accesses need it), the
  /// workspace's size and alignment, and that `stream` is this context's.
  /// Tensor maps as in launchKernel (one set per kernel and stream).
  Status launchFunction(const Manifest &manifest, const FunctionSpec &function,
                        const std::vector<DevicePtr> &args,
                        DevicePtr workspace, int64_t workspaceBytes,
                        Stream stream, bool workspaceZeroed = false);
  /// launchFunction with a workspace allocated here, then waits for
  /// `stream` and frees it: for tools (kopt-run), not for frameworks.
  Status runFunction(const Manifest &manifest, const FunctionSpec &function,
                     const std::vector<DevicePtr> &args, Stream stream);

private:
  CudaContext() = default;

  struct Module {
    CUmod_st *module = nullptr;
    std::string infoLog;
    std::map<std::string, Function> functions;
  };
  DeviceInfo info;
  CUctx_st *context = nullptr;
  bool retained = false;
  std::map<std::string, Module> modules;
  /// Dynamic shared memory limit already set per function, bytes.
  std::map<Function, uint32_t> sharedLimit;
  /// The tensor maps of launchKernel, per function and stream.
  std::map<std::pair<Function, Stream>, TensorMaps> launchMaps;
  /// Parameter counts of the functions checked so far (nullopt: unknown).
  std::map<Function, std::optional<size_t>> paramCounts;
};

/// cuBLAS, opened with dlopen ("libcublas.so.13", then "libcublas.so", then
/// the toolkit's library folder), for the matmul reference.
class Cublas {
public:
  /// Fails with a clear message when cuBLAS cannot be opened. `ctx`'s context
  /// must be current.
  static Expected<std::unique_ptr<Cublas>> create(CudaContext &ctx);
  ~Cublas();
  Cublas(const Cublas &) = delete;
  Cublas &operator=(const Cublas &) = delete;

  /// result[M, N] (f32, row-major) = op(a) * op(b) where op transposes when
  /// the flag is set: `a` is stored [M, K] ([K, M] when transposeA) and `b`
  /// [K, N] ([N, K] when transposeB), both of `inputType`, row-major.
  /// cublasGemmEx with CUBLAS_COMPUTE_32F (no TF32), on `stream`.
  Status gemmRowMajorF32(int64_t m, int64_t n, int64_t k, bool transposeA,
                         bool transposeB, DType inputType, DevicePtr a,
                         DevicePtr b, DevicePtr result, Stream stream);

  /// The library that was opened.
  const std::string &libraryPath() const { return path; }

private:
  Cublas() = default;
  void *handle = nullptr;
  std::string path;
};

} // namespace kopt::rt

#endif // KOPT_RUNTIME_RUNTIME_H
