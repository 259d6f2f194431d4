#include "core/float16.h"

#include <cmath>
#include <cstring>
#include <random>

#include <gtest/gtest.h>

namespace uopc {
namespace {

uint32_t Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float FromBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

TEST(Float16, EveryF16SurvivesTheRoundTrip) {
  for (uint32_t h = 0; h < 65536; ++h) {
    float f = F16ToF32(static_cast<uint16_t>(h));
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(F16ToF32(F32ToF16(f))));
      continue;
    }
    EXPECT_EQ(F32ToF16(f), h) << "f16 bits " << h;
  }
}

TEST(Float16, MatchesTheCompilersConversion) {
  // gcc's _Float16 conversion rounds to nearest even: it is the oracle.
  std::mt19937 rng(1);
  for (int i = 0; i < 2000000; ++i) {
    float f = FromBits(static_cast<uint32_t>(rng()));
    if (std::isnan(f)) continue;
    _Float16 h = static_cast<_Float16>(f);
    uint16_t want;
    std::memcpy(&want, &h, 2);
    ASSERT_EQ(F32ToF16(f), want) << "f32 bits " << Bits(f);
    ASSERT_EQ(F16ToF32(want), static_cast<float>(h));
  }
}

TEST(Float16, EdgeCases) {
  EXPECT_EQ(F32ToF16(65504.0f), 0x7bff);
  EXPECT_EQ(F32ToF16(65519.0f), 0x7bff);
  EXPECT_EQ(F32ToF16(65520.0f), 0x7c00);  // the tie rounds up to infinity
  EXPECT_EQ(F32ToF16(-0.0f), 0x8000);
  EXPECT_EQ(F32ToF16(std::ldexp(1.0f, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(F32ToF16(std::ldexp(1.0f, -25)), 0x0000);  // half of it: ties to even (0)
  EXPECT_EQ(F32ToF16(std::ldexp(3.0f, -25)), 0x0002);  // 1.5 ulp: ties to even (2)
  EXPECT_EQ(F32ToF16(INFINITY), 0x7c00);
  EXPECT_TRUE(std::isnan(F16ToF32(F32ToF16(NAN))));
}

// The nearest bf16 to f, ties to even, found by comparing the two candidates.
uint16_t NearestBF16(float f) {
  uint32_t u = Bits(f);
  uint16_t lo = static_cast<uint16_t>(u >> 16), hi = static_cast<uint16_t>(lo + 1);
  double d = f, dl = BF16ToF32(lo), dh = BF16ToF32(hi);
  if ((u & 0xffff) == 0) return lo;
  if (std::isinf(dh)) dh = std::ldexp(1.0, 128) * (d < 0 ? -1 : 1);  // past the largest finite
  double el = std::fabs(d - dl), eh = std::fabs(dh - d);
  if (el < eh) return lo;
  if (eh < el) return hi;
  return (lo & 1) ? hi : lo;
}

TEST(BFloat16, EveryBF16SurvivesTheRoundTrip) {
  for (uint32_t b = 0; b < 65536; ++b) {
    float f = BF16ToF32(static_cast<uint16_t>(b));
    EXPECT_EQ(Bits(BF16ToF32(static_cast<uint16_t>(b))), b << 16);
    if (!std::isnan(f)) EXPECT_EQ(F32ToBF16(f), b);
  }
}

TEST(BFloat16, RoundsToNearestEven) {
  std::mt19937 rng(2);
  for (int i = 0; i < 2000000; ++i) {
    float f = FromBits(static_cast<uint32_t>(rng()));
    if (std::isnan(f)) continue;
    ASSERT_EQ(F32ToBF16(f), NearestBF16(f)) << "f32 bits " << Bits(f);
  }
  EXPECT_EQ(F32ToBF16(FromBits(0x3f808000)), 0x3f80);  // tie, even below
  EXPECT_EQ(F32ToBF16(FromBits(0x3f818000)), 0x3f82);  // tie, even above
  EXPECT_TRUE(std::isnan(BF16ToF32(F32ToBF16(NAN))));
}

}  // namespace
}  // namespace uopc
