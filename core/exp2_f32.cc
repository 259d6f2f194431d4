#include "core/exp2_f32.h"

#include <cmath>
#include <cstdint>
#include <cstring>

namespace uopc {

// (backends/c/render_c.cc's uopc_exp2f is the same function in C: change both together)
float Exp2F32(float x) {
  // below -150 the result is 0; it is chosen after computing 2^0, not computed, because
  // multiplying into the subnormals costs a hundred cycles or more on x86 (a microcode
  // assist), and softmax's masked scores (-inf) are often most of its inputs
  const bool zero = x < -150.0f;
  const float c = zero ? 0.0f : x > 129.0f ? 129.0f : x;  // (NaN stays)
  const float n = std::rint(c), f = c - n;
  float p = std::fmaf(1.5356125e-4f, f, 1.3398818e-3f);
  p = std::fmaf(p, f, 9.6184276e-3f);
  p = std::fmaf(p, f, 5.5503327e-2f);
  p = std::fmaf(p, f, 2.4022648e-1f);
  p = std::fmaf(p, f, 6.9314718e-1f);
  p = std::fmaf(p, f, 1.0f);
  const int32_t e = static_cast<int32_t>(n == n ? n : 0.0f), e1 = e >> 1;
  const uint32_t b1 = static_cast<uint32_t>(e1 + 127) << 23,
                 b2 = static_cast<uint32_t>(e - e1 + 127) << 23;
  float s1, s2;
  std::memcpy(&s1, &b1, sizeof s1);
  std::memcpy(&s2, &b2, sizeof s2);
  return zero ? 0.0f : (p * s1) * s2;
}

}  // namespace uopc
