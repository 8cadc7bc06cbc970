//===- FakeCuda.cpp - A host-only stand-in for libcuda.so.1 ---------------===//
//
// Lets the unit tests run kopt-run end to end on a machine without a GPU:
// built as libcuda.so.1 in its own folder and found through LD_LIBRARY_PATH.
// "Device" memory is host memory (with bounds checks on every copy, memset and
// launch), launches run synchronously on the host, events read the host
// clock. "PTX" is not compiled: a module whose text contains "SYNTAX ERROR"
// fails to load with a ptxas-like error log, any other module offers the
// fake kernels below, whose shapes match test/unit/Inputs/fake/*.json.
//
// Only for tests; it implements just what kopt's runtime calls.
//
//===----------------------------------------------------------------------===//

#include "kopt/Runtime/Float16.h"

#include <cuda.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <string>
#include <vector>

using kopt::rt::bf16ToFloat;
using kopt::rt::f16ToFloat;
using kopt::rt::floatToBf16;
using kopt::rt::floatToF16;

namespace {

bool initialized = false;
std::map<CUdeviceptr, size_t> allocations;

/// Is [ptr, ptr + bytes) inside one allocation?
bool valid(CUdeviceptr ptr, size_t bytes) {
  auto it = allocations.upper_bound(ptr);
  if (it == allocations.begin())
    return false;
  --it;
  return ptr >= it->first && ptr + bytes <= it->first + it->second;
}

// Typed views of the launch arguments: args[i] points at a CUdeviceptr.
template <typename T> T *arg(void **args, int i) {
  return reinterpret_cast<T *>(*static_cast<CUdeviceptr *>(args[i]));
}

struct FakeKernel {
  std::vector<size_t> paramBytes; // checked against the allocations
  void (*run)(void **args);
};

float bf(const uint16_t *p, size_t i) { return bf16ToFloat(p[i]); }
float hf(const uint16_t *p, size_t i) { return f16ToFloat(p[i]); }

void addBcast(void **a, float scale, size_t written) {
  const float *lhs = arg<float>(a, 0), *rhs = arg<float>(a, 1);
  float *out = arg<float>(a, 2);
  for (size_t i = 0; i < written; ++i)
    out[i] = (lhs[i] + rhs[i % 128]) * scale;
}

void softmaxBf16(void **a) {
  const uint16_t *in = arg<uint16_t>(a, 0);
  uint16_t *out = arg<uint16_t>(a, 1);
  for (size_t r = 0; r < 8; ++r) {
    float mx = -INFINITY, sum = 0;
    for (size_t c = 0; c < 1000; ++c)
      mx = std::fmax(mx, bf(in, r * 1000 + c));
    for (size_t c = 0; c < 1000; ++c)
      sum += std::exp(bf(in, r * 1000 + c) - mx);
    for (size_t c = 0; c < 1000; ++c)
      out[r * 1000 + c] =
          floatToBf16(std::exp(bf(in, r * 1000 + c) - mx) / sum);
  }
}

void rmsnormF16(void **a) {
  const uint16_t *in = arg<uint16_t>(a, 0), *w = arg<uint16_t>(a, 1);
  uint16_t *out = arg<uint16_t>(a, 2);
  for (size_t r = 0; r < 4; ++r) {
    float ss = 0;
    for (size_t c = 0; c < 256; ++c)
      ss += hf(in, r * 256 + c) * hf(in, r * 256 + c);
    float inv = 1.0f / std::sqrt(ss / 256 + 1e-6f);
    for (size_t c = 0; c < 256; ++c)
      out[r * 256 + c] = floatToF16(hf(in, r * 256 + c) * inv * hf(w, c));
  }
}

void layernormBf16(void **a) {
  const uint16_t *in = arg<uint16_t>(a, 0), *w = arg<uint16_t>(a, 1),
                 *b = arg<uint16_t>(a, 2);
  uint16_t *out = arg<uint16_t>(a, 3);
  for (size_t r = 0; r < 8; ++r) {
    float mean = 0, var = 0;
    for (size_t c = 0; c < 512; ++c)
      mean += bf(in, r * 512 + c);
    mean /= 512;
    for (size_t c = 0; c < 512; ++c)
      var += (bf(in, r * 512 + c) - mean) * (bf(in, r * 512 + c) - mean);
    var /= 512;
    float inv = 1.0f / std::sqrt(var + 1e-5f);
    for (size_t c = 0; c < 512; ++c)
      out[r * 512 + c] =
          floatToBf16((bf(in, r * 512 + c) - mean) * inv * bf(w, c) + bf(b, c));
  }
}

void geluTanhF32(void **a) {
  const float *in = arg<float>(a, 0);
  float *out = arg<float>(a, 1);
  for (size_t i = 0; i < 1000; ++i) {
    float x = in[i];
    out[i] = 0.5f * x *
             (1.0f + std::tanh(0.7978845608f * (x + 0.044715f * x * x * x)));
  }
}

void reduceMaxBf16(void **a) {
  const uint16_t *in = arg<uint16_t>(a, 0);
  uint16_t *out = arg<uint16_t>(a, 1);
  for (size_t r = 0; r < 16; ++r) {
    float m = -INFINITY;
    for (size_t c = 0; c < 300; ++c)
      m = std::fmax(m, bf(in, r * 300 + c));
    out[r] = floatToBf16(m);
  }
}

void sqrtF32(void **a) {
  const float *in = arg<float>(a, 0);
  float *out = arg<float>(a, 1);
  for (size_t i = 0; i < 1000; ++i) // NaN for inputs outside (0.1, 4)
    out[i] = in[i] >= 0.0999f && in[i] <= 4.0001f ? std::sqrt(in[i]) : NAN;
}

void divF32(void **a) {
  const float *lhs = arg<float>(a, 0), *rhs = arg<float>(a, 1);
  float *out = arg<float>(a, 2);
  for (size_t i = 0; i < 1000; ++i) // NaN for |rhs| outside [0.5, 2]
    out[i] = std::fabs(rhs[i]) >= 0.4999f && std::fabs(rhs[i]) <= 2.0001f
                 ? lhs[i] / rhs[i]
                 : NAN;
}

void castF32Bf16(void **a) {
  const float *in = arg<float>(a, 0);
  uint16_t *out = arg<uint16_t>(a, 1);
  for (size_t i = 0; i < 1000; ++i)
    out[i] = floatToBf16(in[i]);
}

/// Row-major result[32, 40] = op(a) op(b), K = 48, computed directly.
template <int Kind> // 0: nt bf16, 1: tn f16, 2: nn f32
void matmul(void **a) {
  const int M = 32, N = 40, K = 48;
  float *out = arg<float>(a, 2);
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      float acc = 0;
      for (int k = 0; k < K; ++k) {
        float x, y;
        if (Kind == 0) { // a [M, K], b [N, K]
          x = bf(arg<uint16_t>(a, 0), i * K + k);
          y = bf(arg<uint16_t>(a, 1), j * K + k);
        } else if (Kind == 1) { // a [K, M], b [K, N]
          x = hf(arg<uint16_t>(a, 0), k * M + i);
          y = hf(arg<uint16_t>(a, 1), k * N + j);
        } else { // a [M, K], b [K, N]
          x = arg<float>(a, 0)[i * K + k];
          y = arg<float>(a, 1)[k * N + j];
        }
        acc += x * y;
      }
      out[i * N + j] = acc;
    }
}

const std::map<std::string, FakeKernel> &kernels() {
  static const std::map<std::string, FakeKernel> k = {
      {"add_bcast_f32",
       {{64 * 128 * 4, 128 * 4, 64 * 128 * 4},
        [](void **a) { addBcast(a, 1.0f, 64 * 128); }}},
      {"add_unwritten_f32",
       {{64 * 128 * 4, 128 * 4, 64 * 128 * 4},
        [](void **a) { addBcast(a, 1.0f, 64 * 64); }}},
      {"add_wrong_f32",
       {{64 * 128 * 4, 128 * 4, 64 * 128 * 4},
        [](void **a) { addBcast(a, 1.001f, 64 * 128); }}},
      {"softmax_bf16", {{8000 * 2, 8000 * 2}, softmaxBf16}},
      {"rmsnorm_f16", {{1024 * 2, 256 * 2, 1024 * 2}, rmsnormF16}},
      {"layernorm_bf16",
       {{4096 * 2, 512 * 2, 512 * 2, 4096 * 2}, layernormBf16}},
      {"gelu_tanh_f32", {{4000, 4000}, geluTanhF32}},
      {"reduce_max_bf16", {{4800 * 2, 16 * 2}, reduceMaxBf16}},
      {"sqrt_f32", {{4000, 4000}, sqrtF32}},
      {"div_f32", {{4000, 4000, 4000}, divF32}},
      {"cast_f32_bf16", {{4000, 2000}, castF32Bf16}},
      {"matmul_nt_bf16", {{32 * 48 * 2, 40 * 48 * 2, 32 * 40 * 4}, matmul<0>}},
      {"matmul_tn_f16", {{48 * 32 * 2, 48 * 40 * 2, 32 * 40 * 4}, matmul<1>}},
      {"matmul_nn_f32", {{32 * 48 * 4, 48 * 40 * 4, 32 * 40 * 4}, matmul<2>}},
  };
  return k;
}

struct FakeFunction {
  const FakeKernel *kernel;
  int maxDynamicShared = 48 * 1024;
};
struct FakeModule {
  std::map<std::string, FakeFunction> functions;
};
struct FakeEvent {
  std::chrono::steady_clock::time_point time;
  bool recorded = false;
};

int primaryContext = 0;

} // namespace

// Opaque handle types: cuda.h only declares them.
struct CUmod_st : FakeModule {};
struct CUfunc_st : FakeFunction {};
struct CUevent_st : FakeEvent {};
struct CUstream_st {
  int dummy;
};

extern "C" {

CUresult cuGetErrorName(CUresult error, const char **pStr) {
  switch (error) {
  case CUDA_SUCCESS:
    *pStr = "CUDA_SUCCESS";
    break;
  case CUDA_ERROR_INVALID_VALUE:
    *pStr = "CUDA_ERROR_INVALID_VALUE";
    break;
  case CUDA_ERROR_NOT_INITIALIZED:
    *pStr = "CUDA_ERROR_NOT_INITIALIZED";
    break;
  case CUDA_ERROR_INVALID_PTX:
    *pStr = "CUDA_ERROR_INVALID_PTX";
    break;
  case CUDA_ERROR_NOT_FOUND:
    *pStr = "CUDA_ERROR_NOT_FOUND";
    break;
  case CUDA_ERROR_INVALID_HANDLE:
    *pStr = "CUDA_ERROR_INVALID_HANDLE";
    break;
  default:
    *pStr = nullptr;
    return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

CUresult cuGetErrorString(CUresult error, const char **pStr) {
  switch (error) {
  case CUDA_ERROR_INVALID_VALUE:
    *pStr = "invalid argument";
    break;
  case CUDA_ERROR_INVALID_PTX:
    *pStr = "a PTX JIT compilation failed";
    break;
  case CUDA_ERROR_NOT_FOUND:
    *pStr = "named symbol not found";
    break;
  default:
    *pStr = "fake error";
  }
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
  switch (attr) {
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
    *v = 9;
    break;
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
    *v = 0;
    break;
  case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
    *v = 132;
    break;
  case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE:
    *v = 50 << 20;
    break;
  case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN:
    *v = 232448;
    break;
  default:
    return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

CUresult cuDeviceTotalMem(size_t *bytes, CUdevice) {
  *bytes = size_t(1) << 30;
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice) {
  *ctx = reinterpret_cast<CUcontext>(&primaryContext);
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease(CUdevice) { return CUDA_SUCCESS; }
CUresult cuCtxSetCurrent(CUcontext) { return CUDA_SUCCESS; }
CUresult cuCtxSynchronize() { return CUDA_SUCCESS; }

CUresult cuMemAlloc(CUdeviceptr *ptr, size_t bytes) {
  if (bytes == 0)
    return CUDA_ERROR_INVALID_VALUE;
  void *p = std::malloc(bytes);
  if (!p)
    return CUDA_ERROR_OUT_OF_MEMORY;
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
  if (!valid(dst, bytes))
    return CUDA_ERROR_INVALID_VALUE;
  std::memcpy(reinterpret_cast<void *>(dst), src, bytes);
  return CUDA_SUCCESS;
}

CUresult cuMemcpyDtoH(void *dst, CUdeviceptr src, size_t bytes) {
  if (!valid(src, bytes))
    return CUDA_ERROR_INVALID_VALUE;
  std::memcpy(dst, reinterpret_cast<void *>(src), bytes);
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
  return CUDA_SUCCESS;
}
CUresult cuStreamDestroy(CUstream stream) {
  delete stream;
  return CUDA_SUCCESS;
}
CUresult cuStreamSynchronize(CUstream) { return CUDA_SUCCESS; }

CUresult cuEventCreate(CUevent *event, unsigned int) {
  *event = new CUevent_st();
  return CUDA_SUCCESS;
}
CUresult cuEventDestroy(CUevent event) {
  delete event;
  return CUDA_SUCCESS;
}
CUresult cuEventRecord(CUevent event, CUstream) {
  event->time = std::chrono::steady_clock::now();
  event->recorded = true;
  return CUDA_SUCCESS;
}
CUresult cuEventSynchronize(CUevent event) {
  return event->recorded ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
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
  switch (attr) {
  case CU_FUNC_ATTRIBUTE_NUM_REGS:
    *v = 32;
    break;
  case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
    *v = 1024;
    break;
  default:
    *v = 0;
  }
  return CUDA_SUCCESS;
}

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
  for (size_t i = 0; i < k.paramBytes.size(); ++i)
    if (!valid(*static_cast<CUdeviceptr *>(args[i]), k.paramBytes[i]))
      return CUDA_ERROR_INVALID_VALUE;
  k.run(args);
  return CUDA_SUCCESS;
}

} // extern "C"
