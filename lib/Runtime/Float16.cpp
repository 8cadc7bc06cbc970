//===- Float16.cpp - Host-side bf16 / f16 conversion ----------------------===//

#include "kopt/Runtime/Float16.h"
#include "kopt/Runtime/Parallel.h"

#include <cstring>

namespace kopt::rt {

namespace {
uint32_t floatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return u;
}
float bitsFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}
} // namespace

uint16_t floatToBf16(float value) {
  uint32_t x = floatBits(value);
  if ((x & 0x7fffffffu) > 0x7f800000u) // NaN: keep sign and top payload, quiet
    return static_cast<uint16_t>((x >> 16) | 0x0040u);
  // Round to nearest even on the low 16 bits; a carry into the exponent is
  // the correct result (up to infinity).
  x += 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(x >> 16);
}

float bf16ToFloat(uint16_t bits) { return bitsFloat(uint32_t(bits) << 16); }

uint16_t floatToF16(float value) {
  uint32_t x = floatBits(value);
  uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  uint32_t a = x & 0x7fffffffu;
  if (a > 0x7f800000u) // NaN: quiet, keep the top payload bits
    return sign | 0x7e00u | static_cast<uint16_t>((a >> 13) & 0x3ffu);
  if (a >= 0x477ff000u) // >= 65520 (halfway past 65504) and inf: infinity
    return sign | 0x7c00u;
  if (a >= 0x38800000u) {         // normal in f16: |x| >= 2^-14
    uint32_t r = a - 0x38000000u; // rebias the exponent from 127 to 15
    r += 0x0fffu + ((r >> 13) & 1u);
    return sign | static_cast<uint16_t>(r >> 13);
  }
  // Subnormal or zero in f16: add 0.5 so that the float addition (round to
  // nearest even) rounds at the f16 subnormal step 2^-24; the low mantissa
  // bits of the sum are the f16 mantissa.
  float sum = bitsFloat(a) + 0.5f;
  return sign | static_cast<uint16_t>(floatBits(sum) - 0x3f000000u);
}

float truncateToTf32(float value) {
  uint32_t u;
  std::memcpy(&u, &value, 4);
  u &= 0xffffe000u;
  std::memcpy(&value, &u, 4);
  return value;
}

float f16ToFloat(uint16_t bits) {
  uint32_t sign = uint32_t(bits & 0x8000u) << 16;
  uint32_t exp = (bits >> 10) & 0x1fu;
  uint32_t mant = bits & 0x3ffu;
  if (exp == 0) {
    // Zero or subnormal: mant * 2^-24, exact in float.
    float v = static_cast<float>(mant) * bitsFloat(0x33800000u); // 2^-24
    return sign ? -v : v;
  }
  if (exp == 31)
    return bitsFloat(sign | 0x7f800000u | (mant << 13));
  return bitsFloat(sign | ((exp + 112u) << 23) | (mant << 13));
}

void encodeElement(DType dtype, float value, void *data, int64_t index) {
  switch (dtype) {
  case DType::F32:
    static_cast<float *>(data)[index] = value;
    return;
  case DType::F16:
    static_cast<uint16_t *>(data)[index] = floatToF16(value);
    return;
  case DType::BF16:
    static_cast<uint16_t *>(data)[index] = floatToBf16(value);
    return;
  }
}

double decodeElement(DType dtype, const void *data, int64_t index) {
  switch (dtype) {
  case DType::F32:
    return static_cast<const float *>(data)[index];
  case DType::F16:
    return f16ToFloat(static_cast<const uint16_t *>(data)[index]);
  case DType::BF16:
    return bf16ToFloat(static_cast<const uint16_t *>(data)[index]);
  }
  return 0.0;
}

std::vector<double> decodeArray(DType dtype, const void *data, int64_t count) {
  std::vector<double> out(count);
  parallelFor(count, 1 << 16, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i)
      out[i] = decodeElement(dtype, data, i);
  });
  return out;
}

bool isPoison(DType dtype, const void *data, int64_t index) {
  if (dtype == DType::F32)
    return static_cast<const uint32_t *>(data)[index] == 0xffffffffu;
  return static_cast<const uint16_t *>(data)[index] == 0xffffu;
}

} // namespace kopt::rt
