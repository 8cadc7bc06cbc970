//===- FakeCuda.cpp - A host-only stand-in for libcuda.so.1 ---------------===//
//
// Lets the unit tests run kopt-run end to end on a machine without a GPU:
// built as libcuda.so.1 in its own folder and found through LD_LIBRARY_PATH.
// This file holds the devices, memory, streams, events, modules and launches;
// FakeKernels.cpp the kernels, FakeTensorMap.cpp cuTensorMapEncodeTiled.
// "Device" memory is host memory (with bounds checks on every copy, memset and
// launch), launches run synchronously on the host, events read the host
// clock. "PTX" is not compiled: a module whose text contains "SYNTAX ERROR"
// fails to load with a ptxas-like error log, any other module offers the
// fake kernels, whose shapes match test/unit/Inputs/fake/*.json. cuMemAlloc
// aligns to 256 bytes like the real driver and fills new memory with 0xA5
// bytes (it is not zeroed). cuTensorMapEncodeTiled checks its arguments
// against the driver's rules, records them and writes a readable encoding
// into the map (FakeCudaHooks.h); the fake TMA kernels read their operands
// through it. cuFuncGetParamInfo reports each fake kernel's parameters (data
// parameters, then tensor maps; add_bcast_f32_stale claims one more than its
// manifest lists); built with KOPT_FAKE_CUDA_NO_PARAM_INFO the library lacks
// it, like a driver older than CUDA 12.4. Tests read the records through the
// koptFake* functions.
//
// Device time: a launch's memory effects happen at once, but a kernel with
// a modeled duration (`deviceMs`: relu_slow_f32 2 ms, relu_hang_f32 an hour,
// relu_hang_later_f32 an hour from its second launch on) keeps the fake device
// busy for that long after it would start, like an asynchronous GPU: an event
// recorded behind it completes (cuEventQuery says CUDA_ERROR_NOT_READY until
// then) and reads the clock only when the device is done, and the synchronizing
// calls (stream, context and event synchronization, the synchronous copies)
// wait for it. One that would wait longer than 5 s fails at once with
// CUDA_ERROR_LAUNCH_TIMEOUT instead of blocking the test; releasing the primary
// context drops the modeled work. relu_drift_f32 computes relu for its first 3
// launches (per loaded module) and relu + 0.5 from then on: a kernel whose
// output goes wrong only on later runs. add_exp_drift_f32 does the same to the
// second of its two outputs (e = exp(s), times 1.01 from its 4th launch on).
//
// Only for tests; it implements just what kopt's runtime calls.
//
//===----------------------------------------------------------------------===//

#include "FakeCudaHooks.h"
#include "FakeCudaState.h"

#include <cuda.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

using kopt::fake::currentLaunchIndex;
using kopt::fake::FakeKernel;
using kopt::fake::kernels;
using kopt::fake::valid;

namespace kopt::fake {
long currentLaunchIndex = 0;
} // namespace kopt::fake

namespace {

bool initialized = false;
std::map<CUdeviceptr, size_t> allocations;
size_t memcpyHtoDCount = 0;
std::vector<uint64_t> lastLaunch;
std::vector<std::vector<uint64_t>> launchHistory;
std::set<CUstream> streams;

using Clock = std::chrono::steady_clock;
/// When the fake device finishes the modeled work enqueued so far.
Clock::time_point busyUntil{};

/// Waits until `t`, or fails at once when that is more than 5 s away.
CUresult waitUntil(Clock::time_point t) {
  Clock::time_point now = Clock::now();
  if (t <= now)
    return CUDA_SUCCESS;
  if (t - now > std::chrono::seconds(5))
    return CUDA_ERROR_LAUNCH_TIMEOUT;
  std::this_thread::sleep_until(t);
  return CUDA_SUCCESS;
}
CUresult waitForDevice() { return waitUntil(busyUntil); }

struct FakeFunction {
  const FakeKernel *kernel;
  int maxDynamicShared = 48 * 1024;
  long launches = 0;
};
struct FakeModule {
  std::map<std::string, FakeFunction> functions;
};
struct FakeEvent {
  /// When the device reaches the event (in the future behind modeled work).
  Clock::time_point time;
  bool recorded = false;
};

int primaryContext = 0;

/// The results the fake returns: cuGetErrorName's name and
/// cuGetErrorString's text ("fake error" for those without one).
struct ErrorText {
  CUresult code;
  const char *name;
  const char *text;
};
constexpr ErrorText kErrors[] = {
    {CUDA_SUCCESS, "CUDA_SUCCESS", nullptr},
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", nullptr},
    {CUDA_ERROR_INVALID_PTX, "CUDA_ERROR_INVALID_PTX",
     "a PTX JIT compilation failed"},
    {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", nullptr},
    {CUDA_ERROR_NOT_READY, "CUDA_ERROR_NOT_READY", nullptr},
    {CUDA_ERROR_LAUNCH_TIMEOUT, "CUDA_ERROR_LAUNCH_TIMEOUT",
     "the fake device would be busy for more than 5 s"},
};

const ErrorText *findError(CUresult error) {
  for (const ErrorText &e : kErrors)
    if (e.code == error)
      return &e;
  return nullptr;
}

/// `*v` = the value `table` gives `attr` (a device's or a function's
/// attribute); for one it lacks, `otherwise`, or CUDA_ERROR_INVALID_VALUE
/// without one.
template <typename Attr>
CUresult lookUpAttribute(int *v, Attr attr,
                         std::initializer_list<std::pair<Attr, int>> table,
                         std::optional<int> otherwise) {
  for (const std::pair<Attr, int> &entry : table)
    if (entry.first == attr) {
      *v = entry.second;
      return CUDA_SUCCESS;
    }
  if (!otherwise)
    return CUDA_ERROR_INVALID_VALUE;
  *v = *otherwise;
  return CUDA_SUCCESS;
}

} // namespace

bool kopt::fake::valid(CUdeviceptr ptr, size_t bytes) {
  auto it = allocations.upper_bound(ptr);
  if (it == allocations.begin())
    return false;
  --it;
  // ptr >= start, so ptr - start cannot wrap; nor can the comparison.
  return ptr >= it->first && ptr - it->first <= it->second &&
         bytes <= it->second - (ptr - it->first);
}

// Opaque handle types: cuda.h only declares them.
struct CUmod_st : FakeModule {};
struct CUfunc_st : FakeFunction {};
struct CUevent_st : FakeEvent {};
struct CUstream_st {
  int dummy;
};

extern "C" {

CUresult cuGetErrorName(CUresult error, const char **pStr) {
  const ErrorText *e = findError(error);
  *pStr = e ? e->name : nullptr;
  return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuGetErrorString(CUresult error, const char **pStr) {
  const ErrorText *e = findError(error);
  *pStr = e && e->text ? e->text : "fake error";
  return CUDA_SUCCESS;
}

CUresult cuInit(unsigned int) {
  initialized = true;
  return CUDA_SUCCESS;
}

CUresult cuDriverGetVersion(int *v) {
  *v = 13000;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int *count) {
  if (!initialized)
    return CUDA_ERROR_NOT_INITIALIZED;
  *count = 1;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice *dev, int ordinal) {
  if (ordinal != 0)
    return CUDA_ERROR_INVALID_VALUE;
  *dev = 0;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char *name, int len, CUdevice) {
  std::strncpy(name, "kopt fake device", len);
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetAttribute(int *v, CUdevice_attribute attr, CUdevice) {
  return lookUpAttribute<CUdevice_attribute>(
      v, attr,
      {{CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 9},
       {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 0},
       {CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 132},
       {CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, 50 << 20},
       {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, 232448}},
      std::nullopt);
}

CUresult cuDeviceTotalMem(size_t *bytes, CUdevice) {
  *bytes = size_t(1) << 30;
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice) {
  *ctx = reinterpret_cast<CUcontext>(&primaryContext);
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease(CUdevice) {
  busyUntil = Clock::time_point{}; // the context's work is gone
  return CUDA_SUCCESS;
}
CUresult cuCtxSetCurrent(CUcontext) { return CUDA_SUCCESS; }
CUresult cuCtxSynchronize() { return waitForDevice(); }
CUresult cuCtxPushCurrent(CUcontext) { return CUDA_SUCCESS; }
CUresult cuCtxPopCurrent(CUcontext *ctx) {
  if (ctx)
    *ctx = reinterpret_cast<CUcontext>(&primaryContext);
  return CUDA_SUCCESS;
}

CUresult cuMemAlloc(CUdeviceptr *ptr, size_t bytes) {
  if (bytes == 0)
    return CUDA_ERROR_INVALID_VALUE;
  // 256-byte aligned, like the real driver; not zeroed (0xA5 bytes), so that
  // a runtime that forgets to zero a workspace is caught.
  void *p = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
  if (!p)
    return CUDA_ERROR_OUT_OF_MEMORY;
  std::memset(p, 0xA5, bytes);
  *ptr = reinterpret_cast<CUdeviceptr>(p);
  allocations[*ptr] = bytes;
  return CUDA_SUCCESS;
}

CUresult cuMemFree(CUdeviceptr ptr) {
  auto it = allocations.find(ptr);
  if (it == allocations.end())
    return CUDA_ERROR_INVALID_VALUE;
  std::free(reinterpret_cast<void *>(ptr));
  allocations.erase(it);
  return CUDA_SUCCESS;
}

CUresult cuMemcpyHtoD(CUdeviceptr dst, const void *src, size_t bytes) {
  ++memcpyHtoDCount;
  if (CUresult r = waitForDevice(); r != CUDA_SUCCESS)
    return r;
  if (!valid(dst, bytes))
    return CUDA_ERROR_INVALID_VALUE;
  std::memcpy(reinterpret_cast<void *>(dst), src, bytes);
  return CUDA_SUCCESS;
}

// Host memory is staged at once, as the real driver does for pageable
// memory; the fake runs everything synchronously, so the copy is done.
CUresult cuMemcpyHtoDAsync(CUdeviceptr dst, const void *src, size_t bytes,
                           CUstream) {
  return cuMemcpyHtoD(dst, src, bytes);
}

CUresult cuMemcpyDtoH(void *dst, CUdeviceptr src, size_t bytes) {
  if (CUresult r = waitForDevice(); r != CUDA_SUCCESS)
    return r;
  if (!valid(src, bytes))
    return CUDA_ERROR_INVALID_VALUE;
  std::memcpy(dst, reinterpret_cast<void *>(src), bytes);
  return CUDA_SUCCESS;
}

CUresult cuMemcpyDtoDAsync(CUdeviceptr dst, CUdeviceptr src, size_t bytes,
                           CUstream) {
  if (!valid(src, bytes) || !valid(dst, bytes))
    return CUDA_ERROR_INVALID_VALUE;
  std::memmove(reinterpret_cast<void *>(dst), reinterpret_cast<void *>(src),
               bytes);
  return CUDA_SUCCESS;
}

CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char value, size_t n,
                         CUstream) {
  if (!valid(dst, n))
    return CUDA_ERROR_INVALID_VALUE;
  std::memset(reinterpret_cast<void *>(dst), value, n);
  return CUDA_SUCCESS;
}

CUresult cuStreamCreate(CUstream *stream, unsigned int) {
  *stream = new CUstream_st();
  streams.insert(*stream);
  return CUDA_SUCCESS;
}
CUresult cuStreamDestroy(CUstream stream) {
  if (!streams.erase(stream))
    return CUDA_ERROR_INVALID_HANDLE;
  delete stream;
  return CUDA_SUCCESS;
}
CUresult cuStreamSynchronize(CUstream) { return waitForDevice(); }
CUresult cuStreamGetCtx(CUstream stream, CUcontext *ctx) {
  // Only the streams the fake made: anything else is not a stream.
  if (!stream || !ctx || !streams.count(stream))
    return CUDA_ERROR_INVALID_HANDLE;
  *ctx = reinterpret_cast<CUcontext>(&primaryContext);
  return CUDA_SUCCESS;
}

CUresult cuEventCreate(CUevent *event, unsigned int) {
  *event = new CUevent_st();
  return CUDA_SUCCESS;
}
CUresult cuEventDestroy(CUevent event) {
  delete event;
  return CUDA_SUCCESS;
}
CUresult cuEventRecord(CUevent event, CUstream) {
  event->time = std::max(Clock::now(), busyUntil);
  event->recorded = true;
  return CUDA_SUCCESS;
}
CUresult cuEventSynchronize(CUevent event) {
  if (!event->recorded)
    return CUDA_ERROR_INVALID_HANDLE;
  return waitUntil(event->time);
}
CUresult cuEventQuery(CUevent event) {
  // Like the driver: an event never recorded has nothing to wait for.
  return event->recorded && event->time > Clock::now() ? CUDA_ERROR_NOT_READY
                                                       : CUDA_SUCCESS;
}
CUresult cuEventElapsedTime(float *ms, CUevent start, CUevent end) {
  if (!start->recorded || !end->recorded)
    return CUDA_ERROR_INVALID_HANDLE;
  *ms =
      std::chrono::duration<float, std::milli>(end->time - start->time).count();
  return CUDA_SUCCESS;
}

CUresult cuModuleLoadDataEx(CUmodule *module, const void *image,
                            unsigned int numOptions, CUjit_option *options,
                            void **values) {
  const char *text = static_cast<const char *>(image);
  if (std::strstr(text, "SYNTAX ERROR")) {
    for (unsigned i = 0; i < numOptions; ++i)
      if (options[i] == CU_JIT_ERROR_LOG_BUFFER)
        std::strcpy(static_cast<char *>(values[i]),
                    "ptxas fatal   : fake syntax error at line 1");
    return CUDA_ERROR_INVALID_PTX;
  }
  for (unsigned i = 0; i < numOptions; ++i)
    if (options[i] == CU_JIT_INFO_LOG_BUFFER)
      std::strcpy(static_cast<char *>(values[i]),
                  "ptxas info    : fake module loaded");
  *module = new CUmod_st();
  return CUDA_SUCCESS;
}

CUresult cuModuleUnload(CUmodule module) {
  delete module;
  return CUDA_SUCCESS;
}

CUresult cuModuleGetFunction(CUfunction *fn, CUmodule module,
                             const char *name) {
  auto it = kernels().find(name);
  if (it == kernels().end())
    return CUDA_ERROR_NOT_FOUND;
  FakeFunction &f = module->functions[name];
  f.kernel = &it->second;
  *fn = static_cast<CUfunction>(&f);
  return CUDA_SUCCESS;
}

CUresult cuFuncGetAttribute(int *v, CUfunction_attribute attr, CUfunction) {
  return lookUpAttribute<CUfunction_attribute>(
      v, attr,
      {{CU_FUNC_ATTRIBUTE_NUM_REGS, 32},
       {CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, 1024}},
      0);
}

#ifndef KOPT_FAKE_CUDA_NO_PARAM_INFO
// CUDA 12.4+. The build of the fake without it (an older driver) lets tests
// check that the runtime then skips the parameter count.
CUresult cuFuncGetParamInfo(CUfunction fn, size_t paramIndex,
                            size_t *paramOffset, size_t *paramSize) {
  if (!fn || !fn->kernel)
    return CUDA_ERROR_INVALID_HANDLE;
  if (!paramOffset || paramIndex >= fn->kernel->reportedParams())
    return CUDA_ERROR_INVALID_VALUE;
  *paramOffset = 8 * paramIndex; // every parameter is a .u64
  if (paramSize)
    *paramSize = 8;
  return CUDA_SUCCESS;
}
#endif

CUresult cuFuncSetAttribute(CUfunction fn, CUfunction_attribute attr,
                            int value) {
  if (attr != CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES || value < 0 ||
      value > 232448)
    return CUDA_ERROR_INVALID_VALUE;
  fn->maxDynamicShared = value;
  return CUDA_SUCCESS;
}

CUresult cuLaunchKernel(CUfunction fn, unsigned gx, unsigned gy, unsigned gz,
                        unsigned bx, unsigned by, unsigned bz,
                        unsigned sharedMemBytes, CUstream, void **args,
                        void **extra) {
  if (!gx || !gy || !gz || !bx || !by || !bz || extra || !args)
    return CUDA_ERROR_INVALID_VALUE;
  // Like the real driver: more than 48 KiB needs the attribute raised first.
  if (int(sharedMemBytes) > fn->maxDynamicShared)
    return CUDA_ERROR_INVALID_VALUE;
  const FakeKernel &k = *fn->kernel;
  lastLaunch.clear();
  for (size_t i = 0; i < k.paramBytes.size() + k.tensorMaps; ++i)
    lastLaunch.push_back(*static_cast<uint64_t *>(args[i]));
  for (size_t i = 0; i < k.paramBytes.size(); ++i)
    if (!valid(*static_cast<CUdeviceptr *>(args[i]), k.paramBytes[i]))
      return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = k.paramBytes.size(); i < lastLaunch.size(); ++i) {
    KoptFakeTensorMap map;
    if (!valid(lastLaunch[i], 128) || lastLaunch[i] % 64 != 0 ||
        !koptFakeDecodeTensorMap(reinterpret_cast<const void *>(lastLaunch[i]),
                                 map))
      return CUDA_ERROR_INVALID_VALUE;
  }
  launchHistory.push_back(lastLaunch);
  currentLaunchIndex = fn->launches++;
  k.run(args);
  if (k.deviceMs > 0 && currentLaunchIndex >= k.slowFrom) {
    Clock::time_point start = std::max(Clock::now(), busyUntil);
    busyUntil =
        start + std::chrono::duration_cast<Clock::duration>(
                    std::chrono::duration<double, std::milli>(k.deviceMs));
  }
  return CUDA_SUCCESS;
}

// Recording, for tests (FakeCudaHooks.h).
size_t koptFakeMemcpyHtoDCount() { return memcpyHtoDCount; }

size_t koptFakeLastLaunch(uint64_t *values, size_t max) {
  size_t n = std::min(max, lastLaunch.size());
  std::copy(lastLaunch.begin(), lastLaunch.begin() + n, values);
  return n;
}

size_t koptFakeLaunchCount() { return launchHistory.size(); }

size_t koptFakeLaunchParams(size_t index, uint64_t *values, size_t max) {
  if (index >= launchHistory.size())
    return 0;
  const std::vector<uint64_t> &params = launchHistory[index];
  size_t n = std::min(max, params.size());
  std::copy(params.begin(), params.begin() + n, values);
  return n;
}

} // extern "C"
