//===- FakeCuda.cpp - A host-only stand-in for libcuda.so.1 ---------------===//
//
// Lets the unit tests run kopt-run end to end on a machine without a GPU:
// built as libcuda.so.1 in its own folder and found through LD_LIBRARY_PATH.
// "Device" memory is host memory (with bounds checks on every copy, memset and
// launch), launches run synchronously on the host, events read the host
// clock. "PTX" is not compiled: a module whose text contains "SYNTAX ERROR"
// fails to load with a ptxas-like error log, any other module offers the
// fake kernels below, whose shapes match test/unit/Inputs/fake/*.json.
// cuMemAlloc aligns to 256 bytes like the real driver and fills new memory
// with 0xA5 bytes (it is not zeroed). cuTensorMapEncodeTiled checks its
// arguments against the driver's rules, records them and writes a readable
// encoding into the map (FakeCudaHooks.h); the fake TMA kernels read their
// operands through it. cuFuncGetParamInfo reports each fake kernel's
// parameters (data parameters, then tensor maps; add_bcast_f32_stale claims
// one more than its manifest lists); built with KOPT_FAKE_CUDA_NO_PARAM_INFO
// the library lacks it, like a driver older than CUDA 12.4. Tests read the
// records through the koptFake* functions at the end.
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
#include "kopt/Runtime/Float16.h"

#include <cuda.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

using kopt::rt::bf16ToFloat;
using kopt::rt::f16ToFloat;
using kopt::rt::floatToBf16;
using kopt::rt::floatToF16;

namespace {

bool initialized = false;
std::map<CUdeviceptr, size_t> allocations;
std::vector<KoptFakeEncodeCall> encodeCalls;
size_t memcpyHtoDCount = 0;
std::vector<uint64_t> lastLaunch;
std::vector<std::vector<uint64_t>> launchHistory;
std::set<CUstream> streams;

using Clock = std::chrono::steady_clock;
/// When the fake device finishes the modeled work enqueued so far.
Clock::time_point busyUntil{};
/// The launch count of the kernel being run (0 for its first launch).
long currentLaunchIndex = 0;

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

/// Is [ptr, ptr + bytes) inside one allocation?
bool valid(CUdeviceptr ptr, size_t bytes) {
  auto it = allocations.upper_bound(ptr);
  if (it == allocations.begin())
    return false;
  --it;
  // ptr >= start, so ptr - start cannot wrap; nor can the comparison.
  return ptr >= it->first && ptr - it->first <= it->second &&
         bytes <= it->second - (ptr - it->first);
}

// Typed views of the launch arguments: args[i] points at a CUdeviceptr.
template <typename T> T *arg(void **args, int i) {
  return reinterpret_cast<T *>(*static_cast<CUdeviceptr *>(args[i]));
}

struct FakeKernel {
  std::vector<size_t> paramBytes; // checked against the allocations
  void (*run)(void **args);
  /// Tensor-map parameters after the data parameters: each must be a
  /// 64-byte aligned device CUtensorMap holding an encoding.
  size_t tensorMaps = 0;
  /// The parameter count cuFuncGetParamInfo reports when not -1 (else the
  /// data parameters and the maps): a PTX entry that disagrees with its
  /// manifest, which the runtime must refuse before launching.
  long ptxParams = -1;
  /// Modeled device time of one launch, ms (0: none; see the file header),
  /// from the launch with this index (per loaded module) on.
  double deviceMs = 0;
  long slowFrom = 0;

  size_t reportedParams() const {
    return ptxParams >= 0 ? static_cast<size_t>(ptxParams)
                          : paramBytes.size() + tensorMaps;
  }
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

void reluF32(void **a) {
  const float *in = arg<float>(a, 0);
  float *out = arg<float>(a, 1);
  for (size_t i = 0; i < 1000; ++i)
    out[i] = std::fmax(in[i], 0.0f);
}

/// relu for the first 3 launches, then relu + 0.5.
void reluDriftF32(void **a) {
  reluF32(a);
  if (currentLaunchIndex >= 3)
    for (size_t i = 0; i < 1000; ++i)
      arg<float>(a, 1)[i] += 0.5f;
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

/// What a TF32 tensor-core matmul computes (tf32.json): row-major
/// result[32, 40] = a[32, 48] b[40, 48]^T, f32 operands with their mantissas
/// cut to TF32's 10 bits (the low 13 bits dropped, as wgmma does with f32 in
/// shared memory), f32 sums.
void matmulTf32(void **a) {
  const int M = 32, N = 40, K = 48;
  const float *x = arg<float>(a, 0), *y = arg<float>(a, 1);
  float *out = arg<float>(a, 2);
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      float acc = 0;
      for (int k = 0; k < K; ++k)
        acc += kopt::rt::truncateToTf32(x[i * K + k]) *
               kopt::rt::truncateToTf32(y[j * K + k]);
      out[i * N + j] = acc;
    }
}

/// Is the map at kernel argument `i` the one tma.json asks for: bf16 over the
/// tensor at argument `tensorArg` (row-major [rows, 48]), box {box0, box1},
/// `swizzle`, element strides 1, no interleave, L2 256B, no OOB fill?
bool expectedMap(void **a, int i, int tensorArg, uint64_t rows, uint32_t box0,
                 uint32_t box1, CUtensorMapSwizzle swizzle,
                 KoptFakeTensorMap &m) {
  if (!koptFakeDecodeTensorMap(arg<void>(a, i), m))
    return false;
  bool ok =
      m.dataType == CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 && m.rank == 2 &&
      m.globalAddress == *static_cast<CUdeviceptr *>(a[tensorArg]) &&
      m.globalDim[0] == 48 && m.globalDim[1] == rows &&
      m.globalStrides[0] == 96 && m.boxDim[0] == box0 && m.boxDim[1] == box1 &&
      m.elementStrides[0] == 1 && m.elementStrides[1] == 1 &&
      m.interleave == CU_TENSOR_MAP_INTERLEAVE_NONE && m.swizzle == swizzle &&
      m.l2Promotion == CU_TENSOR_MAP_L2_PROMOTION_L2_256B &&
      m.oobFill == CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE;
  return ok;
}

/// result[32, 40] (f32) = a[32, 48] b[40, 48]^T (bf16), with a and b read
/// through the tensor maps at arguments MapArg and MapArg + 1 (after the
/// split-K workspace at argument 3 when MapArg is 4, which must be zero and
/// is left zero). A map that is not what tma.json asks for leaves the result
/// unwritten, so that the check fails.
template <int MapArg> void matmulTma(void **a) {
  KoptFakeTensorMap ma, mb;
  if (!expectedMap(a, MapArg, 0, 32, 32, 16, CU_TENSOR_MAP_SWIZZLE_64B, ma) ||
      !expectedMap(a, MapArg + 1, 1, 40, 64, 8, CU_TENSOR_MAP_SWIZZLE_128B, mb))
    return;
  if (MapArg == 4) {
    const float *ws = arg<float>(a, 3);
    for (size_t i = 0; i < 32 + 2 * 32 * 40; ++i)
      if (ws[i] != 0.0f)
        return;
  }
  auto at = [](const KoptFakeTensorMap &m, uint64_t row, uint64_t col) {
    const auto *base = reinterpret_cast<const uint8_t *>(m.globalAddress);
    uint16_t v;
    std::memcpy(&v, base + row * m.globalStrides[0] + col * 2, 2);
    return bf16ToFloat(v);
  };
  float *out = arg<float>(a, 2);
  for (uint64_t i = 0; i < 32; ++i)
    for (uint64_t j = 0; j < 40; ++j) {
      float acc = 0;
      for (uint64_t k = 0; k < 48; ++k)
        acc += at(ma, i, k) * at(mb, j, k);
      out[i * 40 + j] = acc;
    }
}

/// A fused kernel (fused.json): y = gelu(x w^T + bias), x [32, 48], w
/// [40, 48], bias [40], f32, gelu without approximation.
void matmulBiasGeluF32(void **a) {
  const int M = 32, N = 40, K = 48;
  const float *x = arg<float>(a, 0), *w = arg<float>(a, 1),
              *bias = arg<float>(a, 2);
  float *out = arg<float>(a, 3);
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      float acc = 0;
      for (int k = 0; k < K; ++k)
        acc += x[i * K + k] * w[j * K + k];
      float v = acc + bias[j];
      out[i * N + j] = 0.5f * v * (1.0f + std::erf(v / std::sqrt(2.0f)));
    }
}

/// A kernel of two outputs (fused.json): s = lhs + rhs, e = exp(s), f32
/// [1000]; `wrongSecond` spoils e.
template <bool wrongSecond> void addExpF32(void **a) {
  const float *lhs = arg<float>(a, 0), *rhs = arg<float>(a, 1);
  float *s = arg<float>(a, 2), *e = arg<float>(a, 3);
  for (int i = 0; i < 1000; ++i) {
    s[i] = lhs[i] + rhs[i];
    e[i] = std::exp(s[i]) * (wrongSecond ? 1.01f : 1.0f);
  }
}

void addExpDriftF32(void **a) {
  addExpF32<false>(a);
  if (currentLaunchIndex >= 3)
    for (int i = 0; i < 1000; ++i)
      arg<float>(a, 3)[i] *= 1.01f;
}

const std::map<std::string, FakeKernel> &kernels() {
  static const std::map<std::string, FakeKernel> k = {
      {"add_bcast_f32",
       {{64 * 128 * 4, 128 * 4, 64 * 128 * 4},
        [](void **a) { addBcast(a, 1.0f, 64 * 128); }}},
      {"add_unwritten_f32",
       {{64 * 128 * 4, 128 * 4, 64 * 128 * 4},
        [](void **a) { addBcast(a, 1.0f, 64 * 64); }}},
      // add_bcast_f32 under a stale manifest: the fake "PTX entry" says it
      // takes 4 parameters (stale.json lists 3); launched anyway, it adds.
      {"add_bcast_f32_stale",
       {{64 * 128 * 4, 128 * 4, 64 * 128 * 4},
        [](void **a) { addBcast(a, 1.0f, 64 * 128); },
        0,
        4}},
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
      {"relu_slow_f32", {{4000, 4000}, reluF32, 0, -1, 2.0}},
      {"relu_hang_f32", {{4000, 4000}, reluF32, 0, -1, 3600e3}},
      {"relu_hang_later_f32", {{4000, 4000}, reluF32, 0, -1, 3600e3, 1}},
      {"relu_drift_f32", {{4000, 4000}, reluDriftF32}},
      {"matmul_nt_bf16", {{32 * 48 * 2, 40 * 48 * 2, 32 * 40 * 4}, matmul<0>}},
      {"matmul_tn_f16", {{48 * 32 * 2, 48 * 40 * 2, 32 * 40 * 4}, matmul<1>}},
      {"matmul_nn_f32", {{32 * 48 * 4, 48 * 40 * 4, 32 * 40 * 4}, matmul<2>}},
      {"matmul_nt_tf32", {{32 * 48 * 4, 40 * 48 * 4, 32 * 40 * 4}, matmulTf32}},
      // The same kernel under a manifest entry without tf32 (exact f32).
      {"matmul_nt_tf32_exact",
       {{32 * 48 * 4, 40 * 48 * 4, 32 * 40 * 4}, matmulTf32}},
      {"matmul_bias_gelu_f32",
       {{32 * 48 * 4, 40 * 48 * 4, 40 * 4, 32 * 40 * 4}, matmulBiasGeluF32}},
      {"add_exp_f32", {{4000, 4000, 4000, 4000}, addExpF32<false>}},
      {"add_exp_wrong_f32", {{4000, 4000, 4000, 4000}, addExpF32<true>}},
      {"add_exp_drift_f32", {{4000, 4000, 4000, 4000}, addExpDriftF32}},
      {"matmul_tma_bf16",
       {{32 * 48 * 2, 40 * 48 * 2, 32 * 40 * 4}, matmulTma<3>, 2}},
      {"matmul_tma_splitk_bf16",
       {{32 * 48 * 2, 40 * 48 * 2, 32 * 40 * 4, (32 + 2 * 32 * 40) * 4},
        matmulTma<4>,
        2}},
  };
  return k;
}

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
  case CUDA_ERROR_NOT_READY:
    *pStr = "CUDA_ERROR_NOT_READY";
    break;
  case CUDA_ERROR_LAUNCH_TIMEOUT:
    *pStr = "CUDA_ERROR_LAUNCH_TIMEOUT";
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
  case CUDA_ERROR_LAUNCH_TIMEOUT:
    *pStr = "the fake device would be busy for more than 5 s";
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

} // extern "C"

namespace {
/// Bytes per element of a tensor-map data type; 0 for the packed ones.
uint64_t tensorMapElementBytes(CUtensorMapDataType t) {
  switch (t) {
  case CU_TENSOR_MAP_DATA_TYPE_UINT8:
    return 1;
  case CU_TENSOR_MAP_DATA_TYPE_UINT16:
  case CU_TENSOR_MAP_DATA_TYPE_FLOAT16:
  case CU_TENSOR_MAP_DATA_TYPE_BFLOAT16:
    return 2;
  case CU_TENSOR_MAP_DATA_TYPE_UINT32:
  case CU_TENSOR_MAP_DATA_TYPE_INT32:
  case CU_TENSOR_MAP_DATA_TYPE_FLOAT32:
  case CU_TENSOR_MAP_DATA_TYPE_FLOAT32_FTZ:
  case CU_TENSOR_MAP_DATA_TYPE_TFLOAT32:
  case CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ:
    return 4;
  case CU_TENSOR_MAP_DATA_TYPE_UINT64:
  case CU_TENSOR_MAP_DATA_TYPE_INT64:
  case CU_TENSOR_MAP_DATA_TYPE_FLOAT64:
    return 8;
  default:
    return 0;
  }
}

/// The rules of cuTensorMapEncodeTiled (cuda.h) for the tiled,
/// non-interleaved maps kopt makes, plus the fake's own: the tensor lies
/// inside one allocation.
bool validEncode(const KoptFakeEncodeCall &c) {
  if (!c.tensorMap || c.tensorMap % 64 != 0 || c.rank < 1 || c.rank > 5)
    return false;
  uint64_t esize =
      tensorMapElementBytes(static_cast<CUtensorMapDataType>(c.dataType));
  if (esize == 0 || !c.globalAddress || c.globalAddress % 16 != 0 ||
      c.interleave != CU_TENSOR_MAP_INTERLEAVE_NONE || c.l2Promotion < 0 ||
      c.l2Promotion > CU_TENSOR_MAP_L2_PROMOTION_L2_256B || c.oobFill < 0 ||
      c.oobFill > CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA)
    return false;
  uint64_t span = 0;
  switch (c.swizzle) {
  case CU_TENSOR_MAP_SWIZZLE_NONE:
    break;
  case CU_TENSOR_MAP_SWIZZLE_32B:
    span = 32;
    break;
  case CU_TENSOR_MAP_SWIZZLE_64B:
    span = 64;
    break;
  case CU_TENSOR_MAP_SWIZZLE_128B:
    span = 128;
    break;
  default:
    return false;
  }
  if (c.boxDim[0] * esize % 16 != 0 || (span && c.boxDim[0] * esize > span))
    return false;
  uint64_t last = esize; // one past the last byte, from globalAddress
  for (uint32_t i = 0; i < c.rank; ++i) {
    if (c.globalDim[i] < 1 || c.globalDim[i] > (uint64_t(1) << 32) ||
        c.boxDim[i] < 1 || c.boxDim[i] > 256 || c.elementStrides[i] < 1 ||
        c.elementStrides[i] > 8)
      return false;
    uint64_t stride = i == 0 ? esize : c.globalStrides[i - 1];
    if (i > 0 && (stride % 16 != 0 || stride >= (uint64_t(1) << 40)))
      return false;
    last += (c.globalDim[i] - 1) * stride;
  }
  return valid(c.globalAddress, last);
}
} // namespace

extern "C" {

CUresult cuTensorMapEncodeTiled(
    CUtensorMap *tensorMap, CUtensorMapDataType dataType, cuuint32_t rank,
    void *globalAddress, const cuuint64_t *globalDim,
    const cuuint64_t *globalStrides, const cuuint32_t *boxDim,
    const cuuint32_t *elementStrides, CUtensorMapInterleave interleave,
    CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2Promotion,
    CUtensorMapFloatOOBfill oobFill) {
  KoptFakeEncodeCall c;
  c.tensorMap = reinterpret_cast<uint64_t>(tensorMap);
  c.dataType = dataType;
  c.rank = rank;
  c.globalAddress = reinterpret_cast<uint64_t>(globalAddress);
  for (uint32_t i = 0; i < std::min<uint32_t>(rank, 5); ++i) {
    c.globalDim[i] = globalDim ? globalDim[i] : 0;
    c.boxDim[i] = boxDim ? boxDim[i] : 0;
    c.elementStrides[i] = elementStrides ? elementStrides[i] : 0;
    if (i + 1 < rank)
      c.globalStrides[i] = globalStrides ? globalStrides[i] : 0;
  }
  c.interleave = interleave;
  c.swizzle = swizzle;
  c.l2Promotion = l2Promotion;
  c.oobFill = oobFill;
  bool ok = globalDim && boxDim && elementStrides &&
            (rank < 2 || globalStrides) && validEncode(c);
  c.result = ok ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
  encodeCalls.push_back(c);
  if (!ok)
    return CUDA_ERROR_INVALID_VALUE;
  KoptFakeTensorMap m{};
  m.magic = kKoptFakeTensorMapMagic;
  m.globalAddress = c.globalAddress;
  for (uint32_t i = 0; i < rank; ++i) {
    m.globalDim[i] = c.globalDim[i];
    m.boxDim[i] = c.boxDim[i];
    m.elementStrides[i] = static_cast<uint8_t>(c.elementStrides[i]);
    if (i + 1 < rank)
      m.globalStrides[i] = c.globalStrides[i];
  }
  m.dataType = static_cast<uint8_t>(dataType);
  m.rank = static_cast<uint8_t>(rank);
  m.interleave = static_cast<uint8_t>(interleave);
  m.swizzle = static_cast<uint8_t>(swizzle);
  m.l2Promotion = static_cast<uint8_t>(l2Promotion);
  m.oobFill = static_cast<uint8_t>(oobFill);
  std::memset(tensorMap, 0, sizeof(CUtensorMap));
  std::memcpy(tensorMap, &m, sizeof(m));
  return CUDA_SUCCESS;
}

// Recording, for tests (FakeCudaHooks.h).
size_t koptFakeTensorMapEncodeCount() { return encodeCalls.size(); }

bool koptFakeTensorMapEncodeCall(size_t index, KoptFakeEncodeCall *out) {
  if (index >= encodeCalls.size() || !out)
    return false;
  *out = encodeCalls[index];
  return true;
}

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
