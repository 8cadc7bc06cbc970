//===- FakeKernels.cpp - The fake driver's host "kernels" -----------------===//
//
// The kernels every module of the fake libcuda.so.1 offers (see FakeCuda.cpp
// for the driver), shaped like test/unit/Inputs/fake/*.json: they run on the
// host over the "device" memory (host memory), the TMA ones read their
// operands through the fake encoding of their tensor maps (FakeCudaHooks.h).
//
//===----------------------------------------------------------------------===//

#include "FakeCudaHooks.h"
#include "FakeCudaState.h"
#include "kopt/Runtime/Float16.h"

#include <cmath>
#include <cstring>

using kopt::rt::bf16ToFloat;
using kopt::rt::f16ToFloat;
using kopt::rt::floatToBf16;
using kopt::rt::floatToF16;

namespace kopt::fake {

namespace {
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
} // namespace

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

} // namespace kopt::fake
