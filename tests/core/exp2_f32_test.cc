// Exp2F32 against the exact exp2 (double, rounded to float): within 1 ulp across the floats
// whose exp2 is finite and not 0, the edges exact, and rarely off by that ulp.
#include "core/exp2_f32.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include <gtest/gtest.h>

namespace uopc {
namespace {

uint32_t Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

TEST(Exp2F32, WithinOneUlpOfTheExactValueAndRarelyOff) {
  int64_t floats = 0, off = 0;
  for (uint64_t b = 0; b < (uint64_t{1} << 32); b += 257) {
    const uint32_t u = static_cast<uint32_t>(b);
    float x;
    std::memcpy(&x, &u, sizeof x);
    if (!(x >= -160.0f && x <= 130.0f)) continue;
    const float want = static_cast<float>(std::exp2(static_cast<double>(x))), got = Exp2F32(x);
    const int64_t ulps = std::llabs(static_cast<int64_t>(Bits(want)) - Bits(got));
    ASSERT_LE(ulps, 1) << std::hexfloat << x << ": " << got << ", exactly " << want;
    ++floats, off += ulps;
  }
  EXPECT_GT(floats, 8000000);
  EXPECT_LT(off, floats / 100);  // (0.86% over every float of the range)
}

TEST(Exp2F32, EdgesAreExact) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  for (float x : {0.0f, -0.0f, 1.0f, -1.0f, 10.0f, -126.0f, -149.0f, 127.0f})
    EXPECT_EQ(Exp2F32(x), std::ldexp(1.0f, static_cast<int>(x))) << x;
  EXPECT_EQ(Exp2F32(-150.0f), 0.0f);  // (2^-150: halfway to the least subnormal, to even)
  EXPECT_EQ(Exp2F32(-1000.0f), 0.0f);
  EXPECT_EQ(Exp2F32(-kInf), 0.0f);
  EXPECT_EQ(Exp2F32(128.0f), kInf);
  EXPECT_EQ(Exp2F32(kInf), kInf);
  EXPECT_LT(Exp2F32(127.99999f), kInf);
  EXPECT_TRUE(std::isnan(Exp2F32(std::numeric_limits<float>::quiet_NaN())));
}

}  // namespace
}  // namespace uopc
