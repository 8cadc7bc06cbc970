//===- CudaDriver.cpp - The CUDA driver API, opened with dlopen -----------===//
//
// See include/kopt/Runtime/Runtime.h. The driver's functions are resolved
// from libcuda.so.1 at run time under the versioned names that cuda.h maps
// them to (cuMemAlloc -> cuMemAlloc_v2, ...), so the types come from cuda.h
// and nothing links against libcuda.
//
//===----------------------------------------------------------------------===//

#include "kopt/Runtime/ArgPack.h"
#include "kopt/Runtime/Runtime.h"

#include <cuda.h>
#include <dlfcn.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>

namespace kopt::rt {

namespace {

#define KOPT_STRINGIFY_IMPL(x) #x
/// The name `x` expands to under cuda.h's macros, as a string.
#define KOPT_STRINGIFY(x) KOPT_STRINGIFY_IMPL(x)

// Every driver function kopt uses.
#define KOPT_DRIVER_FUNCTIONS(X)                                               \
  X(cuGetErrorName)                                                            \
  X(cuGetErrorString)                                                          \
  X(cuInit)                                                                    \
  X(cuDriverGetVersion)                                                        \
  X(cuDeviceGetCount)                                                          \
  X(cuDeviceGet)                                                               \
  X(cuDeviceGetName)                                                           \
  X(cuDeviceGetAttribute)                                                      \
  X(cuDeviceTotalMem)                                                          \
  X(cuDevicePrimaryCtxRetain)                                                  \
  X(cuDevicePrimaryCtxRelease)                                                 \
  X(cuCtxSetCurrent)                                                           \
  X(cuCtxSynchronize)                                                          \
  X(cuCtxPushCurrent)                                                          \
  X(cuCtxPopCurrent)                                                           \
  X(cuMemAlloc)                                                                \
  X(cuMemFree)                                                                 \
  X(cuMemcpyHtoD)                                                              \
  X(cuMemcpyHtoDAsync)                                                         \
  X(cuMemcpyDtoH)                                                              \
  X(cuMemcpyDtoDAsync)                                                         \
  X(cuMemsetD8Async)                                                           \
  X(cuStreamCreate)                                                            \
  X(cuStreamDestroy)                                                           \
  X(cuStreamSynchronize)                                                       \
  X(cuStreamGetCtx)                                                            \
  X(cuEventCreate)                                                             \
  X(cuEventDestroy)                                                            \
  X(cuEventRecord)                                                             \
  X(cuEventSynchronize)                                                        \
  X(cuEventQuery)                                                              \
  X(cuEventElapsedTime)                                                        \
  X(cuModuleLoadDataEx)                                                        \
  X(cuModuleUnload)                                                            \
  X(cuModuleGetFunction)                                                       \
  X(cuFuncGetAttribute)                                                        \
  X(cuFuncSetAttribute)                                                        \
  X(cuLaunchKernel)                                                            \
  X(cuTensorMapEncodeTiled)

/// Pointers to the driver's functions. Member names go through cuda.h's
/// macros like the calls do (api.cuMemAlloc is api.cuMemAlloc_v2).
struct DriverApi {
#define KOPT_DECLARE(name) decltype(&::name) name = nullptr;
  KOPT_DRIVER_FUNCTIONS(KOPT_DECLARE)
#undef KOPT_DECLARE
};

DriverApi api;

/// cuFuncGetParamInfo (CUDA 12.4+), resolved when the driver has it: older
/// drivers (and headers) lack it, so it is optional and typed by hand.
using FuncGetParamInfoFn = CUresult (*)(CUfunction func, size_t paramIndex,
                                        size_t *paramOffset, size_t *paramSize);
FuncGetParamInfoFn funcGetParamInfo = nullptr;

/// cuStreamIsCapturing (CUDA 10+), optional so that drivers and fakes without
/// it still load: without it no stream counts as capturing.
using StreamIsCapturingFn = CUresult (*)(CUstream stream, int *status);
StreamIsCapturingFn streamIsCapturing = nullptr;

/// More parameters than a PTX entry can have (4 KiB of .param space, 32764
/// bytes on newer targets): a driver answering beyond this is not believed.
constexpr size_t kMaxKernelParams = 32768;

Status openDriver() {
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    std::string message = "no CUDA driver: libcuda.so.1 not found";
    const char *why = dlerror();
    if (why && !std::strstr(why, "No such file"))
      message += std::string(" (") + why + ")";
    return Status::error(message);
  }
  auto resolve = [&](const char *symbol, const char *plain) -> void * {
    void *fn = dlsym(lib, symbol);
    // cuEventElapsedTime_v2 appeared in CUDA 12.8; the first version has the
    // same signature.
    if (!fn && std::strcmp(plain, "cuEventElapsedTime") == 0)
      fn = dlsym(lib, plain);
    return fn;
  };
#define KOPT_RESOLVE(name)                                                     \
  {                                                                            \
    void *fn = resolve(KOPT_STRINGIFY(name), #name);                           \
    if (!fn)                                                                   \
      return Status::error(std::string("the CUDA driver (libcuda.so.1) has "   \
                                       "no function ") +                       \
                           KOPT_STRINGIFY(name) +                              \
                           "; it is older than the CUDA " +                    \
                           std::to_string(CUDA_VERSION / 1000) + "." +         \
                           std::to_string(CUDA_VERSION % 1000 / 10) +          \
                           " headers kopt was built with");                    \
    api.name = reinterpret_cast<decltype(api.name)>(fn);                       \
  }
  KOPT_DRIVER_FUNCTIONS(KOPT_RESOLVE)
#undef KOPT_RESOLVE
  // Optional: without it the parameter count is not checked.
  funcGetParamInfo =
      reinterpret_cast<FuncGetParamInfoFn>(dlsym(lib, "cuFuncGetParamInfo"));
  streamIsCapturing =
      reinterpret_cast<StreamIsCapturingFn>(dlsym(lib, "cuStreamIsCapturing"));
  return Status::success();
}

/// "what: CUDA_ERROR_NAME (description)", or success.
Status check(CUresult result, const std::string &what) {
  if (result == CUDA_SUCCESS)
    return Status::success();
  const char *name = nullptr, *text = nullptr;
  if (api.cuGetErrorName)
    api.cuGetErrorName(result, &name);
  if (api.cuGetErrorString)
    api.cuGetErrorString(result, &text);
  std::string message = what + ": ";
  message += name ? name : "CUDA error " + std::to_string(int(result));
  if (text)
    message += std::string(" (") + text + ")";
  return Status::error(message);
}

/// A stream or an event from the driver's `create(&handle, flags)`
/// (cuStreamCreate, cuEventCreate).
template <typename Handle>
Expected<Handle> createHandle(CUresult (*create)(Handle *, unsigned int),
                              unsigned int flags, const char *what) {
  Handle handle = nullptr;
  KOPT_RETURN_IF_ERROR(check(create(&handle, flags), what));
  return handle;
}

static_assert(sizeof(CUtensorMap) == kTensorMapBytes,
              "CUtensorMap is 128 bytes");

std::string hexAddress(DevicePtr ptr) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "0x%" PRIx64, static_cast<uint64_t>(ptr));
  return buf;
}

template <typename T> std::string listToString(const std::vector<T> &values) {
  std::string s = "{";
  for (size_t i = 0; i < values.size(); ++i)
    s += (i ? ", " : "") + std::to_string(values[i]);
  return s + "}";
}

bool sameGeometry(const TensorMapGeometry &a, const TensorMapGeometry &b) {
  return a.paramIndex == b.paramIndex && a.dtype == b.dtype &&
         a.globalDim == b.globalDim && a.globalStrides == b.globalStrides &&
         a.box == b.box && a.swizzle == b.swizzle;
}

/// cuTensorMapEncodeTiled of `g` over the tensor at `address`, with element
/// strides 1, no interleave, L2 promotion 256B and no OOB fill (zeros).
CUresult encodeTiled(CUtensorMap &map, const TensorMapGeometry &g,
                     DevicePtr address) {
  CUtensorMapDataType dataType =
      g.dtype == DType::F16    ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16
      : g.dtype == DType::BF16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
                               : CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
  CUtensorMapSwizzle swizzle = g.swizzle == 32    ? CU_TENSOR_MAP_SWIZZLE_32B
                               : g.swizzle == 64  ? CU_TENSOR_MAP_SWIZZLE_64B
                               : g.swizzle == 128 ? CU_TENSOR_MAP_SWIZZLE_128B
                                                  : CU_TENSOR_MAP_SWIZZLE_NONE;
  size_t rank = g.globalDim.size();
  cuuint64_t dims[kMaxTensorMapRank] = {}, strides[kMaxTensorMapRank] = {};
  cuuint32_t box[kMaxTensorMapRank] = {}, elementStrides[kMaxTensorMapRank];
  for (size_t i = 0; i < kMaxTensorMapRank; ++i)
    elementStrides[i] = 1;
  for (size_t i = 0; i < rank && i < kMaxTensorMapRank; ++i) {
    dims[i] = g.globalDim[i];
    box[i] = g.box[i];
  }
  for (size_t i = 0; i < g.globalStrides.size() && i < kMaxTensorMapRank; ++i)
    strides[i] = g.globalStrides[i];
  return api.cuTensorMapEncodeTiled(
      &map, dataType, static_cast<cuuint32_t>(rank),
      reinterpret_cast<void *>(static_cast<uintptr_t>(address)), dims, strides,
      box, elementStrides, CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle,
      CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
}

} // namespace

Status loadCudaDriver() {
  static const Status status = openDriver();
  return status;
}

//===----------------------------------------------------------------------===//
// DeviceBuffer
//===----------------------------------------------------------------------===//

DeviceBuffer &DeviceBuffer::operator=(DeviceBuffer &&other) noexcept {
  if (this != &other) {
    reset();
    ctx = other.ctx;
    ptr = other.ptr;
    bytes = other.bytes;
    other.ctx = nullptr;
    other.ptr = 0;
    other.bytes = 0;
  }
  return *this;
}

DevicePtr DeviceBuffer::release() {
  DevicePtr released = ptr;
  ctx = nullptr;
  ptr = 0;
  bytes = 0;
  return released;
}

void DeviceBuffer::reset() {
  if (ctx && ptr)
    (void)ctx->free(ptr);
  ctx = nullptr;
  ptr = 0;
  bytes = 0;
}

//===----------------------------------------------------------------------===//
// TensorMaps
//===----------------------------------------------------------------------===//

Status TensorMaps::bind(CudaContext &ctx, const KernelSpec &kernel,
                        const std::vector<DevicePtr> &pointers,
                        Stream stream) {
  if (pointers.size() != kernel.params.size())
    return Status::error("kernel '" + kernel.name + "' takes " +
                         std::to_string(kernel.params.size()) +
                         " parameters, got " + std::to_string(pointers.size()) +
                         " pointers");
  size_t count = kernel.tensorMaps.size();
  // A CUDA graph would bake in the maps' device buffers, which a later launch
  // re-encodes for its own addresses: replays would then read the wrong
  // tensors. Refuse instead (CUstreamCaptureStatus: 0 is "not capturing").
  int capturing = 0;
  if (count > 0 && streamIsCapturing &&
      streamIsCapturing(stream, &capturing) == CUDA_SUCCESS && capturing != 0)
    return Status::error(
        "kernel '" + kernel.name +
        "' reads its operands through TMA tensor maps, which kopt keeps in "
        "device buffers it re-encodes when addresses change, so it cannot be "
        "captured in a CUDA graph (the stream is capturing); compile it "
        "with a schedule whose copy is cp_async, or launch it outside the "
        "capture");
  if (maps.size() != count) {
    // Another kernel's maps: free the old buffers once nothing reads them.
    if (uploadCount > 0)
      KOPT_RETURN_IF_ERROR(ctx.synchronizeContext().withContext(
          "kernel '" + kernel.name + "': tensor maps"));
    maps.clear();
    mapAddresses.clear();
    maps.resize(count);
  }
  for (size_t i = 0; i < count; ++i) {
    Map &map = maps[i];
    const std::string &tensor = kernel.tensorMaps[i].tensor;
    std::string what = "kernel '" + kernel.name + "': tensor map " +
                       std::to_string(i) + " ('" + tensor + "')";
    Expected<TensorMapGeometry> geometry = tensorMapGeometry(kernel, i);
    if (!geometry.ok())
      return geometry.status();
    DevicePtr address = pointers[geometry->paramIndex];
    if (address == 0)
      return Status::error(what + ": the address bound to '" + tensor +
                           "' is null");
    if (address % 16 != 0)
      return Status::error(what + ": the address " + hexAddress(address) +
                           " bound to '" + tensor +
                           "' is not 16-byte aligned (TMA needs 16)");
    if (map.encoded && map.tensor == address &&
        sameGeometry(map.geometry, *geometry))
      continue;

    if (!map.buffer.get()) {
      Expected<DeviceBuffer> buffer = ctx.allocate(kTensorMapBytes);
      if (!buffer.ok())
        return buffer.status().withContext(what);
      if (buffer->get() % kTensorMapAlignment != 0)
        return Status::error(
            what + ": cuMemAlloc returned " + hexAddress(buffer->get()) +
            ", not " + std::to_string(kTensorMapAlignment) + "-byte aligned");
      map.buffer = buffer.take();
    }
    map.encoded = false;
    CUtensorMap encoded{};
    Status status = check(encodeTiled(encoded, *geometry, address),
                          "cuTensorMapEncodeTiled(kernel '" + kernel.name +
                              "', tensor '" + tensor + "')");
    if (!status.ok())
      return Status::error(
          status.message() + " [" + dtypeName(geometry->dtype) + ", dims " +
          listToString(geometry->globalDim) + ", byte strides " +
          listToString(geometry->globalStrides) + ", box " +
          listToString(geometry->box) + ", swizzle " +
          std::to_string(geometry->swizzle) + ", address " +
          hexAddress(address) + "]");
    // In stream order: after the launches that read the old map.
    KOPT_RETURN_IF_ERROR(
        ctx.copyToDeviceAsync(map.buffer.get(), &encoded, kTensorMapBytes,
                              stream)
            .withContext(what));
    map.encoded = true;
    map.tensor = address;
    map.geometry = geometry.take();
    ++uploadCount;
  }
  mapAddresses.clear();
  for (const Map &map : maps)
    mapAddresses.push_back(map.buffer.get());
  return Status::success();
}

//===----------------------------------------------------------------------===//
// CudaContext
//===----------------------------------------------------------------------===//

Expected<std::unique_ptr<CudaContext>> CudaContext::create(int ordinal) {
  KOPT_RETURN_IF_ERROR(loadCudaDriver());
  KOPT_RETURN_IF_ERROR(check(api.cuInit(0), "cuInit"));
  int count = 0;
  KOPT_RETURN_IF_ERROR(check(api.cuDeviceGetCount(&count), "cuDeviceGetCount"));
  if (count == 0)
    return Status::error("no CUDA device found");
  if (ordinal < 0 || ordinal >= count)
    return Status::error("CUDA device " + std::to_string(ordinal) +
                         " requested, but there are " + std::to_string(count) +
                         " devices");
  CUdevice dev;
  KOPT_RETURN_IF_ERROR(check(api.cuDeviceGet(&dev, ordinal), "cuDeviceGet"));

  std::unique_ptr<CudaContext> ctx(new CudaContext());
  DeviceInfo &info = ctx->info;
  info.ordinal = ordinal;
  CUcontext primary = nullptr;
  KOPT_RETURN_IF_ERROR(check(api.cuDevicePrimaryCtxRetain(&primary, dev),
                             "cuDevicePrimaryCtxRetain"));
  ctx->context = primary;
  ctx->retained = true;
  KOPT_RETURN_IF_ERROR(check(api.cuCtxSetCurrent(primary), "cuCtxSetCurrent"));

  char name[256] = {0};
  KOPT_RETURN_IF_ERROR(check(api.cuDeviceGetName(name, sizeof(name) - 1, dev),
                             "cuDeviceGetName"));
  info.name = name;
  auto attribute = [&](CUdevice_attribute attr, int &out,
                       const char *what) -> Status {
    return check(api.cuDeviceGetAttribute(&out, attr, dev),
                 std::string("cuDeviceGetAttribute(") + what + ")");
  };
  KOPT_RETURN_IF_ERROR(attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                                 info.ccMajor, "COMPUTE_CAPABILITY_MAJOR"));
  KOPT_RETURN_IF_ERROR(attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                                 info.ccMinor, "COMPUTE_CAPABILITY_MINOR"));
  KOPT_RETURN_IF_ERROR(attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                                 info.smCount, "MULTIPROCESSOR_COUNT"));
  KOPT_RETURN_IF_ERROR(attribute(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE,
                                 info.l2CacheBytes, "L2_CACHE_SIZE"));
  KOPT_RETURN_IF_ERROR(attribute(
      CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
      info.maxSharedPerBlockOptin, "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN"));
  size_t total = 0;
  KOPT_RETURN_IF_ERROR(
      check(api.cuDeviceTotalMem(&total, dev), "cuDeviceTotalMem"));
  info.totalMemoryBytes = static_cast<int64_t>(total);
  KOPT_RETURN_IF_ERROR(
      check(api.cuDriverGetVersion(&info.driverVersion), "cuDriverGetVersion"));
  return std::move(ctx);
}

CudaContext::~CudaContext() {
  if (api.cuCtxSetCurrent && context)
    api.cuCtxSetCurrent(context);
  // Free the tensor maps while the context is current (after the launches
  // that read them).
  if (!launchMaps.empty() && api.cuCtxSynchronize)
    api.cuCtxSynchronize();
  launchMaps.clear();
  for (auto &entry : modules)
    if (entry.second.module)
      api.cuModuleUnload(entry.second.module);
  if (retained) {
    CUdevice dev;
    if (api.cuDeviceGet(&dev, info.ordinal) == CUDA_SUCCESS)
      api.cuDevicePrimaryCtxRelease(dev);
  }
}

Expected<DeviceBuffer> CudaContext::allocate(int64_t bytes) {
  if (bytes <= 0)
    return Status::error("cuMemAlloc: cannot allocate " +
                         std::to_string(bytes) + " bytes");
  CUdeviceptr ptr = 0;
  KOPT_RETURN_IF_ERROR(
      check(api.cuMemAlloc(&ptr, static_cast<size_t>(bytes)),
            "cuMemAlloc(" + std::to_string(bytes) + " bytes)"));
  return DeviceBuffer(this, ptr, bytes);
}

Status CudaContext::free(DevicePtr ptr) {
  return check(api.cuMemFree(ptr), "cuMemFree");
}

Status CudaContext::copyToDevice(DevicePtr dst, const void *src,
                                 int64_t bytes) {
  return check(api.cuMemcpyHtoD(dst, src, static_cast<size_t>(bytes)),
               "cuMemcpyHtoD(" + std::to_string(bytes) + " bytes)");
}

Status CudaContext::copyToDeviceAsync(DevicePtr dst, const void *src,
                                      int64_t bytes, Stream stream) {
  return check(api.cuMemcpyHtoDAsync(dst, src, static_cast<size_t>(bytes),
                                     stream),
               "cuMemcpyHtoDAsync(" + std::to_string(bytes) + " bytes)");
}

Status CudaContext::copyToHost(void *dst, DevicePtr src, int64_t bytes) {
  return check(api.cuMemcpyDtoH(dst, src, static_cast<size_t>(bytes)),
               "cuMemcpyDtoH(" + std::to_string(bytes) + " bytes)");
}

Status CudaContext::copyDeviceAsync(DevicePtr dst, DevicePtr src,
                                    int64_t bytes, Stream stream) {
  return check(api.cuMemcpyDtoDAsync(dst, src, static_cast<size_t>(bytes),
                                     stream),
               "cuMemcpyDtoDAsync(" + std::to_string(bytes) + " bytes)");
}

Status CudaContext::memsetAsync(DevicePtr dst, uint8_t value, int64_t bytes,
                                Stream stream) {
  return check(
      api.cuMemsetD8Async(dst, value, static_cast<size_t>(bytes), stream),
      "cuMemsetD8Async(" + std::to_string(bytes) + " bytes)");
}

Expected<Stream> CudaContext::createStream() {
  // A blocking stream: it is ordered with the legacy default stream that the
  // synchronous copies (cuMemcpyHtoD/DtoH) use, so a launch never overtakes
  // the copy of its inputs.
  return createHandle(api.cuStreamCreate, CU_STREAM_DEFAULT, "cuStreamCreate");
}

Status CudaContext::destroyStream(Stream stream) {
  return check(api.cuStreamDestroy(stream), "cuStreamDestroy");
}

Status CudaContext::synchronize(Stream stream) {
  return check(api.cuStreamSynchronize(stream), "cuStreamSynchronize");
}

Status CudaContext::pushCurrent() {
  return check(api.cuCtxPushCurrent(context), "cuCtxPushCurrent");
}

void CudaContext::popCurrent() {
  CUcontext popped = nullptr;
  (void)api.cuCtxPopCurrent(&popped);
}

Status CudaContext::checkStream(Stream stream) {
  if (!stream)
    return Status::success(); // the legacy default stream of the current context
  CUcontext owner = nullptr;
  KOPT_RETURN_IF_ERROR(check(api.cuStreamGetCtx(stream, &owner),
                             "cuStreamGetCtx(stream " +
                                 hexAddress(reinterpret_cast<uintptr_t>(stream)) +
                                 ")"));
  if (owner != context)
    return Status::error("the stream " +
                         hexAddress(reinterpret_cast<uintptr_t>(stream)) +
                         " belongs to another CUDA context than device " +
                         std::to_string(info.ordinal) +
                         "'s primary context (a stream of another device?)");
  return Status::success();
}

Status CudaContext::synchronizeContext() {
  return check(api.cuCtxSynchronize(), "cuCtxSynchronize");
}

Expected<Event> CudaContext::createEvent() {
  return createHandle(api.cuEventCreate, CU_EVENT_DEFAULT, "cuEventCreate");
}

Status CudaContext::destroyEvent(Event event) {
  return check(api.cuEventDestroy(event), "cuEventDestroy");
}

Status CudaContext::record(Event event, Stream stream) {
  return check(api.cuEventRecord(event, stream), "cuEventRecord");
}

Expected<bool> CudaContext::queryEvent(Event event) {
  CUresult result = api.cuEventQuery(event);
  if (result == CUDA_ERROR_NOT_READY)
    return false;
  KOPT_RETURN_IF_ERROR(check(result, "cuEventQuery"));
  return true;
}

Expected<float> CudaContext::elapsedMs(Event start, Event end) {
  KOPT_RETURN_IF_ERROR(
      check(api.cuEventSynchronize(end), "cuEventSynchronize"));
  float ms = 0.0f;
  KOPT_RETURN_IF_ERROR(
      check(api.cuEventElapsedTime(&ms, start, end), "cuEventElapsedTime"));
  return ms;
}

Status CudaContext::loadModule(const std::string &ptxPath) {
  if (modules.count(ptxPath))
    return Status::success();
  std::ifstream in(ptxPath, std::ios::binary);
  if (!in)
    return Status::error("cannot read PTX file '" + ptxPath +
                         "': " + std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  return loadModuleData(ptxPath, text.str());
}

Status CudaContext::loadModuleData(const std::string &ptxPath,
                                   const std::string &ptx) {
  // c_str() is NUL-terminated, as the JIT needs.
  if (modules.count(ptxPath))
    return Status::success();
  constexpr size_t kLogBytes = 1 << 16;
  std::vector<char> infoLog(kLogBytes, 0), errorLog(kLogBytes, 0);
  CUjit_option options[] = {
      CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
      CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
      CU_JIT_LOG_VERBOSE};
  void *values[] = {infoLog.data(), reinterpret_cast<void *>(kLogBytes - 1),
                    errorLog.data(), reinterpret_cast<void *>(kLogBytes - 1),
                    reinterpret_cast<void *>(uintptr_t(1))};
  CUmodule module = nullptr;
  CUresult result = api.cuModuleLoadDataEx(&module, ptx.c_str(),
                                           sizeof(options) / sizeof(options[0]),
                                           options, values);
  Status status = check(result, "cuModuleLoadDataEx('" + ptxPath + "')");
  if (!status.ok()) {
    std::string message = status.message();
    if (errorLog[0])
      message += "\nptxas error log:\n" + std::string(errorLog.data());
    if (info.ccMajor)
      message += "\n(device compute capability " +
                 std::to_string(info.ccMajor) + "." +
                 std::to_string(info.ccMinor) + ")";
    return Status::error(message);
  }
  Module &m = modules[ptxPath];
  m.module = module;
  m.infoLog = infoLog.data();
  return Status::success();
}

std::string CudaContext::jitInfoLog(const std::string &ptxPath) const {
  auto it = modules.find(ptxPath);
  return it == modules.end() ? std::string() : it->second.infoLog;
}

Expected<Function> CudaContext::getFunction(const std::string &ptxPath,
                                            const std::string &name) {
  KOPT_RETURN_IF_ERROR(loadModule(ptxPath));
  Module &m = modules[ptxPath];
  auto it = m.functions.find(name);
  if (it != m.functions.end())
    return it->second;
  CUfunction fn = nullptr;
  KOPT_RETURN_IF_ERROR(
      check(api.cuModuleGetFunction(&fn, m.module, name.c_str()),
            "cuModuleGetFunction('" + name + "' in '" + ptxPath + "')"));
  m.functions[name] = fn;
  return fn;
}

bool canCountKernelParams() {
  return loadCudaDriver().ok() && funcGetParamInfo != nullptr;
}

Expected<std::optional<size_t>>
CudaContext::countKernelParams(Function function) {
  if (!funcGetParamInfo)
    return std::optional<size_t>();
  // Indices 0, 1, 2, ... until the driver says there is no such parameter.
  for (size_t i = 0; i < kMaxKernelParams; ++i) {
    size_t offset = 0, size = 0;
    CUresult result = funcGetParamInfo(function, i, &offset, &size);
    if (result == CUDA_ERROR_INVALID_VALUE)
      return std::optional<size_t>(i);
    KOPT_RETURN_IF_ERROR(check(result, "cuFuncGetParamInfo(parameter " +
                                           std::to_string(i) + ")"));
  }
  return Status::error("cuFuncGetParamInfo: more than " +
                       std::to_string(kMaxKernelParams) + " parameters");
}

Expected<Function> CudaContext::getFunction(const std::string &ptxPath,
                                            const KernelSpec &kernel) {
  Expected<Function> fn = getFunction(ptxPath, kernel.name);
  if (!fn.ok())
    return fn;
  auto known = paramCounts.find(*fn);
  if (known == paramCounts.end()) {
    Expected<std::optional<size_t>> count = countKernelParams(*fn);
    if (!count.ok())
      return count.status().withContext("kernel '" + kernel.name + "'");
    known = paramCounts.emplace(*fn, *count).first;
  }
  if (!known->second) // a driver without cuFuncGetParamInfo
    return fn;
  size_t entry = *known->second, params = kernel.params.size(),
         maps = kernel.tensorMaps.size();
  if (entry != params + maps)
    return Status::error(
        "kernel '" + kernel.name + "': the PTX entry takes " +
        std::to_string(entry) + " parameters, the manifest lists " +
        std::to_string(params) + (params == 1 ? " param" : " params") +
        " and " +
        (maps == 0 ? std::string("no tensor maps")
                   : std::to_string(maps) +
                         (maps == 1 ? " tensor map" : " tensor maps")));
  return fn;
}

Expected<FunctionResources> CudaContext::getResources(Function function) {
  FunctionResources r;
  auto get = [&](CUfunction_attribute attr, int &out, const char *what) {
    return check(api.cuFuncGetAttribute(&out, attr, function),
                 std::string("cuFuncGetAttribute(") + what + ")");
  };
  KOPT_RETURN_IF_ERROR(
      get(CU_FUNC_ATTRIBUTE_NUM_REGS, r.registers, "NUM_REGS"));
  KOPT_RETURN_IF_ERROR(get(CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, r.localBytes,
                           "LOCAL_SIZE_BYTES"));
  KOPT_RETURN_IF_ERROR(get(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES,
                           r.staticSharedBytes, "SHARED_SIZE_BYTES"));
  KOPT_RETURN_IF_ERROR(get(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
                           r.maxThreadsPerBlock, "MAX_THREADS_PER_BLOCK"));
  return r;
}

Status CudaContext::launch(Function function, const KernelSpec &kernel,
                           void **args, Stream stream) {
  constexpr uint32_t kDefaultSharedLimit = 48 * 1024;
  uint32_t shared = kernel.dynamicSharedBytes;
  if (shared > kDefaultSharedLimit && sharedLimit[function] < shared) {
    if (info.maxSharedPerBlockOptin &&
        shared > static_cast<uint32_t>(info.maxSharedPerBlockOptin))
      return Status::error(
          "kernel '" + kernel.name + "' needs " + std::to_string(shared) +
          " bytes of dynamic shared memory; the device allows at most " +
          std::to_string(info.maxSharedPerBlockOptin) + " per block");
    KOPT_RETURN_IF_ERROR(check(
        api.cuFuncSetAttribute(function,
                               CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                               static_cast<int>(shared)),
        "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES=" +
            std::to_string(shared) + ", kernel '" + kernel.name + "')"));
    sharedLimit[function] = shared;
  }
  return check(api.cuLaunchKernel(function, kernel.grid[0], kernel.grid[1],
                                  kernel.grid[2], kernel.block[0],
                                  kernel.block[1], kernel.block[2], shared,
                                  stream, args, nullptr),
               "cuLaunchKernel('" + kernel.name + "')");
}

Status CudaContext::unloadModule(const std::string &key) {
  auto it = modules.find(key);
  if (it == modules.end())
    return Status::success();
  for (auto &fn : it->second.functions) {
    for (auto m = launchMaps.begin(); m != launchMaps.end();)
      m = m->first.first == fn.second ? launchMaps.erase(m) : std::next(m);
    sharedLimit.erase(fn.second);
    paramCounts.erase(fn.second);
  }
  CUmodule module = it->second.module;
  modules.erase(it);
  return check(api.cuModuleUnload(module), "cuModuleUnload('" + key + "')");
}

Status CudaContext::launchKernel(const Manifest &manifest,
                                 const KernelSpec &kernel,
                                 const std::vector<DevicePtr> &pointers,
                                 Stream stream) {
  Expected<Function> fn = getFunction(manifest.ptxPath, kernel);
  if (!fn.ok())
    return fn.status();
  TensorMaps noMaps;
  TensorMaps &maps =
      kernel.tensorMaps.empty() ? noMaps : launchMaps[{*fn, stream}];
  Expected<ArgPack> pack = packArgs(kernel, pointers, maps, stream);
  if (!pack.ok())
    return pack.status();
  return launch(*fn, kernel, pack->data(), stream);
}

Expected<ArgPack> CudaContext::packArgs(const KernelSpec &kernel,
                                        const std::vector<DevicePtr> &pointers,
                                        TensorMaps &maps, Stream stream) {
  if (!kernel.tensorMaps.empty())
    KOPT_RETURN_IF_ERROR(maps.bind(*this, kernel, pointers, stream));
  return ArgPack::create(kernel, pointers,
                         kernel.tensorMaps.empty() ? std::vector<DevicePtr>()
                                                   : maps.addresses());
}

Expected<std::vector<ResolvedLaunch>>
resolveLaunches(const Manifest &manifest, const FunctionSpec &function,
                const std::vector<DevicePtr> &args, DevicePtr workspace,
                int64_t workspaceBytes) {
  const std::string where = "function '" + function.name + "'";
  if (args.size() != function.args.size())
    return Status::error(where + " takes " +
                         std::to_string(function.args.size()) +
                         " arguments, got " + std::to_string(args.size()));
  for (size_t i = 0; i < args.size(); ++i) {
    std::string what = where + ": argument " + std::to_string(i) + " ('" +
                       function.args[i].name + "')";
    if (args[i] == 0)
      return Status::error(what + ": null device pointer");
    if (args[i] % 16 != 0)
      return Status::error(what + ": the address " + hexAddress(args[i]) +
                           " is not 16-byte aligned (kopt's kernels use "
                           "16-byte accesses)");
  }
  Expected<WorkspaceLayout> layout = workspaceLayout(function);
  if (!layout.ok())
    return layout.status();
  if (workspaceBytes < layout->bytes)
    return Status::error(where + " needs " + std::to_string(layout->bytes) +
                         " bytes of workspace, got " +
                         std::to_string(workspaceBytes));
  if (layout->bytes > 0 && workspace == 0)
    return Status::error(where + ": null workspace pointer (it needs " +
                         std::to_string(layout->bytes) + " bytes)");
  if (layout->bytes > 0 && workspace % kWorkspaceAlignment != 0)
    return Status::error(where + ": the workspace address " +
                         hexAddress(workspace) + " is not " +
                         std::to_string(kWorkspaceAlignment) +
                         "-byte aligned");

  std::map<int64_t, DevicePtr> buffers;
  for (size_t i = 0; i < function.buffers.size(); ++i)
    buffers[function.buffers[i].id] = workspace + layout->offsets[i];
  std::vector<ResolvedLaunch> plan;
  for (const LaunchSpec &launch : function.launches) {
    const KernelSpec *kernel = manifest.findKernel(launch.kernel);
    if (!kernel)
      return Status::error(where + ": no kernel named '" + launch.kernel +
                           "'");
    std::vector<DevicePtr> pointers;
    for (const LaunchArg &a : launch.args) {
      if (a.kind == LaunchArg::Kind::Arg) {
        if (a.index < 0 || a.index >= static_cast<int64_t>(args.size()))
          return Status::error(where + ": bad argument index " +
                               std::to_string(a.index));
        pointers.push_back(args[a.index]);
      } else {
        auto it = buffers.find(a.index);
        if (it == buffers.end())
          return Status::error(where + ": no buffer with id " +
                               std::to_string(a.index));
        pointers.push_back(it->second);
      }
    }
    plan.push_back({kernel, std::move(pointers)});
  }
  return std::move(plan);
}

Status CudaContext::launchFunction(const Manifest &manifest,
                                   const FunctionSpec &function,
                                   const std::vector<DevicePtr> &args,
                                   DevicePtr workspace, int64_t workspaceBytes,
                                   Stream stream, bool workspaceZeroed) {
  const std::string where = "function '" + function.name + "'";
  // Resolve every launch before enqueuing anything.
  Expected<std::vector<ResolvedLaunch>> plan =
      resolveLaunches(manifest, function, args, workspace, workspaceBytes);
  if (!plan.ok())
    return plan.status();
  KOPT_RETURN_IF_ERROR(checkStream(stream).withContext(where));
  // A split-K workspace must be zero before its kernel's first launch; the
  // kernel leaves it zero again.
  if (!workspaceZeroed) {
    Expected<WorkspaceLayout> layout = workspaceLayout(function);
    if (!layout.ok())
      return layout.status();
    for (size_t i = 0; i < function.buffers.size(); ++i)
      if (function.buffers[i].workspace)
        KOPT_RETURN_IF_ERROR(
            memsetAsync(workspace + layout->offsets[i], 0,
                        numBytes(function.buffers[i].shape,
                                 function.buffers[i].dtype),
                        stream)
                .withContext(where));
  }
  for (const ResolvedLaunch &launch : *plan)
    KOPT_RETURN_IF_ERROR(
        launchKernel(manifest, *launch.kernel, launch.pointers, stream));
  return Status::success();
}

Status CudaContext::runFunction(const Manifest &manifest,
                                const FunctionSpec &function,
                                const std::vector<DevicePtr> &args,
                                Stream stream) {
  Expected<WorkspaceLayout> layout = workspaceLayout(function);
  if (!layout.ok())
    return layout.status();
  DeviceBuffer workspace;
  if (layout->bytes > 0) {
    Expected<DeviceBuffer> buf = allocate(layout->bytes);
    if (!buf.ok())
      return buf.status().withContext("function '" + function.name + "'");
    workspace = buf.take();
  }
  KOPT_RETURN_IF_ERROR(launchFunction(manifest, function, args,
                                      workspace.get(), layout->bytes, stream));
  // The workspace is freed on return; wait for the launches that use it.
  return synchronize(stream).withContext("function '" + function.name + "'");
}

} // namespace kopt::rt
