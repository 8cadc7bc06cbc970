//===- Float16.h - Host-side bf16 / f16 conversion --------------*- C++ -*-===//
//
// Bit-exact conversions between float and the 16-bit formats (IEEE binary16
// "f16" and bfloat16 "bf16"), rounding to nearest even like the GPU's cvt.rn.
// NaN stays NaN (made quiet); overflow gives infinity; f16 subnormals are
// handled exactly. Also typed encode/decode of whole arrays.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_RUNTIME_FLOAT16_H
#define KOPT_RUNTIME_FLOAT16_H

#include "kopt/Manifest/Manifest.h"
#include "kopt/Runtime/Error.h"

#include <cstdint>
#include <vector>

namespace kopt::rt {

/// float -> bf16 bits, round to nearest even.
uint16_t floatToBf16(float value);
/// bf16 bits -> float (exact).
float bf16ToFloat(uint16_t bits);
/// float -> f16 bits, round to nearest even (subnormals exact, overflow to
/// infinity).
uint16_t floatToF16(float value);
/// f16 bits -> float (exact).
float f16ToFloat(uint16_t bits);
/// `value` as a TF32 tensor-core operand: the mantissa cut to 10 bits (the
/// low 13 bits dropped, as wgmma does when it reads f32 as tf32; PTX ISA,
/// wgmma .tf32).
float truncateToTf32(float value);

/// Stores `value` rounded to `dtype` at element `index` of the raw array
/// `data`.
void encodeElement(DType dtype, float value, void *data, int64_t index);
/// Element `index` of the raw array `data` of `dtype`, as double (exact).
double decodeElement(DType dtype, const void *data, int64_t index);
/// Decodes `count` elements (uses several threads for large arrays).
std::vector<double> decodeArray(DType dtype, const void *data, int64_t count);

/// Is element `index` of `data` the poison pattern (every byte 0xFF, a NaN in
/// every dtype) that kopt-run writes into outputs before a launch?
bool isPoison(DType dtype, const void *data, int64_t index);

} // namespace kopt::rt

#endif // KOPT_RUNTIME_FLOAT16_H
