#include "core/float16.h"

#include <cstring>

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

}  // namespace

float F16ToF32(uint16_t h) {
  uint32_t sign = uint32_t{h & 0x8000u} << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ffu;
  if (exp == 0x1f) return FromBits(sign | 0x7f800000u | (man << 13));  // inf, nan
  if (exp != 0) return FromBits(sign | ((exp + 112) << 23) | (man << 13));
  if (man == 0) return FromBits(sign);  // signed zero
  // subnormal: value = man * 2^-24, exact in f32
  float v = static_cast<float>(man) * FromBits(0x33800000u);
  return sign ? -v : v;
}

uint16_t F32ToF16(float f) {
  uint32_t u = Bits(f);
  uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u) return sign | 0x7e00u | ((abs >> 13) & 0x3ffu);  // nan, quiet
  if (abs >= 0x477ff000u) return sign | 0x7c00u;  // rounds to >= 65520: infinity
  if (abs < 0x38800000u) {                        // below f16's smallest normal: subnormal or zero
    // round abs * 2^24 to an integer, ties to even, by adding in f32 (exact rounding).
    float scaled = FromBits(abs) * FromBits(0x4b800000u);  // * 2^24
    float magic = FromBits(0x4b000000u);                   // 2^23: forces integer rounding
    uint32_t r = Bits(scaled + magic) - Bits(magic);
    return sign | static_cast<uint16_t>(r);
  }
  // normal: rebias the exponent, then round the 13 dropped mantissa bits to nearest even
  uint32_t v = abs - (112u << 23);
  uint32_t round = 0xfffu + ((v >> 13) & 1u);
  return sign | static_cast<uint16_t>((v + round) >> 13);
}

float BF16ToF32(uint16_t b) { return FromBits(uint32_t{b} << 16); }

}  // namespace uopc
