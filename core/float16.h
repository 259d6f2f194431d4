// Bit-exact conversions between f32 and the two 16-bit float formats, f16 (IEEE binary16)
// and bf16 (the top half of an f32). Narrowing rounds to nearest, ties to even; NaN stays
// NaN (quiet); overflow goes to infinity.
#pragma once

#include <cstdint>
#include <cstring>

namespace uopc {

/// f16 bits -> f32 (exact).
float F16ToF32(uint16_t h);
/// f32 -> f16 bits, round to nearest even.
uint16_t F32ToF16(float f);
/// bf16 bits -> f32 (exact: shift left 16).
float BF16ToF32(uint16_t b);
/// f32 -> bf16 bits, round to nearest even. Inline and without a branch, so that a loop of
/// it vectorizes (a bf16 matmul's out is rounded with it, a row at a time).
inline uint16_t F32ToBF16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  return static_cast<uint16_t>((u & 0x7fffffffu) > 0x7f800000u ? (u >> 16) | 0x40u  // quiet NaN
                                                               : rounded);
}

}  // namespace uopc
