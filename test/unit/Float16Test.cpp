//===- Float16Test.cpp - bf16 / f16 conversions
//----------------------------===//

#include "kopt/Runtime/Float16.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

using namespace kopt::rt;

namespace {
float bitsToFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}
} // namespace

TEST(Float16, F16KnownValues) {
  EXPECT_EQ(floatToF16(0.0f), 0x0000);
  EXPECT_EQ(floatToF16(-0.0f), 0x8000);
  EXPECT_EQ(floatToF16(1.0f), 0x3c00);
  EXPECT_EQ(floatToF16(-2.0f), 0xc000);
  EXPECT_EQ(floatToF16(0.5f), 0x3800);
  EXPECT_EQ(floatToF16(65504.0f), 0x7bff); // largest finite
  EXPECT_EQ(floatToF16(65519.0f), 0x7bff); // below the halfway point
  EXPECT_EQ(floatToF16(65520.0f), 0x7c00); // halfway: ties to even = inf
  EXPECT_EQ(floatToF16(1e10f), 0x7c00);
  EXPECT_EQ(floatToF16(-std::numeric_limits<float>::infinity()), 0xfc00);
  EXPECT_EQ(floatToF16(std::ldexp(1.0f, -14)), 0x0400); // smallest normal
  EXPECT_EQ(floatToF16(std::ldexp(1.0f, -24)), 0x0001); // smallest subnormal
  EXPECT_EQ(floatToF16(std::ldexp(1.0f, -25)), 0x0000); // tie to even (0)
  EXPECT_EQ(floatToF16(std::ldexp(3.0f, -26)), 0x0001); // 0.75 ulp: up
  EXPECT_EQ(floatToF16(std::ldexp(3.0f, -25)), 0x0002); // 1.5 ulp: tie to 2
  uint16_t nan = floatToF16(std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(nan & 0x7c00, 0x7c00);
  EXPECT_NE(nan & 0x03ff, 0);
  EXPECT_EQ(f16ToFloat(0x3c00), 1.0f);
  EXPECT_EQ(f16ToFloat(0x7bff), 65504.0f);
  EXPECT_EQ(f16ToFloat(0x0001), std::ldexp(1.0f, -24));
  EXPECT_TRUE(std::isinf(f16ToFloat(0x7c00)));
  EXPECT_TRUE(std::isnan(f16ToFloat(0xffff)));
}

TEST(Float16, Bf16KnownValues) {
  EXPECT_EQ(floatToBf16(1.0f), 0x3f80);
  EXPECT_EQ(floatToBf16(-2.0f), 0xc000);
  EXPECT_EQ(floatToBf16(bitsToFloat(0x3f808000)), 0x3f80); // tie: to even
  EXPECT_EQ(floatToBf16(bitsToFloat(0x3f818000)), 0x3f82); // tie: to even
  EXPECT_EQ(floatToBf16(bitsToFloat(0x3f808001)), 0x3f81); // above the tie
  EXPECT_EQ(floatToBf16(std::numeric_limits<float>::max()), 0x7f80); // inf
  EXPECT_EQ(floatToBf16(std::numeric_limits<float>::infinity()), 0x7f80);
  uint16_t nan = floatToBf16(bitsToFloat(0x7f800001)); // signalling NaN
  EXPECT_TRUE(std::isnan(bf16ToFloat(nan)));
  EXPECT_EQ(bf16ToFloat(0x3f80), 1.0f);
  EXPECT_TRUE(std::isnan(bf16ToFloat(0xffff)));
}

// Every 16-bit pattern decodes and re-encodes to itself (NaN stays NaN).
TEST(Float16, ExhaustiveRoundTrip) {
  for (uint32_t b = 0; b < 0x10000; ++b) {
    uint16_t bits = static_cast<uint16_t>(b);
    float h = f16ToFloat(bits);
    if (std::isnan(h))
      EXPECT_TRUE(std::isnan(f16ToFloat(floatToF16(h)))) << std::hex << b;
    else
      EXPECT_EQ(floatToF16(h), bits) << std::hex << b;
    float bf = bf16ToFloat(bits);
    if (std::isnan(bf))
      EXPECT_TRUE(std::isnan(bf16ToFloat(floatToBf16(bf)))) << std::hex << b;
    else
      EXPECT_EQ(floatToBf16(bf), bits) << std::hex << b;
  }
}

// The midpoint of two neighbouring finite values rounds to the one with an
// even mantissa; just above or below it rounds to the nearer one.
TEST(Float16, ExhaustiveRoundToNearestEven) {
  const float kInf = std::numeric_limits<float>::infinity();
  for (uint32_t b = 0; b < 0x7bff; ++b) {
    float lo = f16ToFloat(static_cast<uint16_t>(b));
    float hi = f16ToFloat(static_cast<uint16_t>(b + 1));
    float mid = lo + (hi - lo) / 2; // exact in float
    uint16_t even = (b & 1) ? b + 1 : b;
    ASSERT_EQ(floatToF16(mid), even) << std::hex << b;
    ASSERT_EQ(floatToF16(-mid), even | 0x8000) << std::hex << b;
    ASSERT_EQ(floatToF16(std::nextafter(mid, 0.0f)), b) << std::hex << b;
    ASSERT_EQ(floatToF16(std::nextafter(mid, kInf)), b + 1) << std::hex << b;
  }
  for (uint32_t b = 0; b < 0x7f7f; ++b) {
    float lo = bf16ToFloat(static_cast<uint16_t>(b));
    float hi = bf16ToFloat(static_cast<uint16_t>(b + 1));
    float mid = lo + (hi - lo) / 2;
    uint16_t even = (b & 1) ? b + 1 : b;
    ASSERT_EQ(floatToBf16(mid), even) << std::hex << b;
    ASSERT_EQ(floatToBf16(std::nextafter(mid, 0.0f)), b) << std::hex << b;
    ASSERT_EQ(floatToBf16(std::nextafter(mid, kInf)), b + 1) << std::hex << b;
  }
}

TEST(Float16, EncodeDecodeArrays) {
  uint16_t h[3];
  encodeElement(DType::BF16, 1.0f, h, 0);
  encodeElement(DType::BF16, -0.5f, h, 1);
  encodeElement(DType::BF16, 3.0f, h, 2);
  std::vector<double> d = decodeArray(DType::BF16, h, 3);
  EXPECT_EQ(d, (std::vector<double>{1.0, -0.5, 3.0}));
  float f[2];
  encodeElement(DType::F32, 0.1f, f, 0);
  EXPECT_EQ(decodeElement(DType::F32, f, 0), double(0.1f));
  encodeElement(DType::F16, 0.1f, h, 0);
  EXPECT_EQ(decodeElement(DType::F16, h, 0),
            double(f16ToFloat(floatToF16(0.1f))));
}

TEST(Float16, Poison) {
  uint8_t bytes[8];
  std::memset(bytes, 0xff, sizeof(bytes));
  for (DType t : {DType::F32, DType::F16, DType::BF16}) {
    EXPECT_TRUE(isPoison(t, bytes, 0));
    EXPECT_TRUE(std::isnan(decodeElement(t, bytes, 1)));
  }
  uint16_t h[1] = {0x7fff}; // a NaN, but not the poison pattern
  EXPECT_FALSE(isPoison(DType::F16, h, 0));
}
