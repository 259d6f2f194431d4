// uopc's half-precision conversions, for an independent reference to check
// (half_conversions_test.py: numpy's float16, ml_dtypes' bfloat16). Writes, under OUT_DIR:
//   to_f32.{bf16,f16}: the f32 bits of each of the 65,536 patterns, converted by a kernel;
//   from_f32.inputs: f32 bit patterns (every rounding boundary of both formats, the
//     specials, and random ones); from_f32.{bf16,f16}: each converted by a kernel.
//   host_*: the same, converted on the host (core/alu.h's CastValue: constant folding, the
//     interpreter, FromVector).
// Raw little-endian arrays. Runs on the default device (the C plugin: gcc's kernels).
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "core/alu.h"
#include "core/element.h"
#include "frontend/tensor.h"

namespace {

template <typename T>
bool Write(const std::string& path, const std::vector<int64_t>& values) {
  std::vector<T> raw(values.begin(), values.end());
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(raw.data()), static_cast<std::streamsize>(raw.size() * sizeof(T)));
  return static_cast<bool>(f);
}

// The f32 bit patterns to convert: each bf16 pattern with the low half at and around the
// halfway point; each f16 value's f32 bits with the 13 dropped bits at and around theirs;
// and 2^18 from a fixed LCG.
std::vector<int64_t> F32Inputs() {
  std::vector<int64_t> in;
  for (uint32_t p = 0; p < 65536; ++p)
    for (uint32_t low : {0x0u, 0x1u, 0x7FFFu, 0x8000u, 0x8001u, 0xFFFFu}) in.push_back(p << 16 | low);
  for (uint32_t sign : {0u, 0x80000000u})
    for (uint32_t e = 0; e < 256; ++e)      // every exponent (f16's subnormals, overflow)
      for (uint32_t m = 0; m < 1024; ++m)   // f16's 10 mantissa bits
        for (uint32_t low : {0x0u, 0xFFFu, 0x1000u, 0x1001u, 0x1FFFu})
          in.push_back(sign | e << 23 | m << 13 | low);
  uint64_t x = 0x9E3779B97F4A7C15ull;
  for (int i = 0; i < (1 << 18); ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    in.push_back(static_cast<uint32_t>(x >> 32));
  }
  return in;
}

// `in` (patterns of `from`, `from_bytes` wide) converted to `to` by CastValue, as patterns.
std::vector<int64_t> OnHost(const std::vector<int64_t>& in, uopc::DType from, uopc::DType to) {
  std::vector<int64_t> out;
  for (int64_t bits : in) {
    uint32_t b = static_cast<uint32_t>(bits);
    uopc::Arg v = uopc::LoadElement(&b, from, 0);
    uint32_t r = 0;
    uopc::StoreElement(&r, to, 0, uopc::CastValue(v, from, to));
    out.push_back(r);
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2 || std::string(argv[1]) == "--help") {
    std::cerr << "usage: half_conversions_peer OUT_DIR  (writes uopc's f32 <-> bf16/f16 "
                 "conversions of every pattern, for half_conversions_test.py)\n";
    return 2;
  }
  using uopc::DType;
  using uopc::Tensor;
  const std::string dir = argv[1];
  try {
    std::vector<int64_t> patterns(65536);
    for (int64_t i = 0; i < 65536; ++i) patterns[i] = i;
    const Tensor bits = Tensor::FromVector(patterns, {65536}, DType::kU16);
    std::vector<int64_t> in = F32Inputs();
    const Tensor f32 = Tensor::FromVector(in, {static_cast<int64_t>(in.size())}, DType::kU32)
                           .Bitcast(DType::kF32);
    bool ok = Write<uint32_t>(dir + "/from_f32.inputs", in);
    for (auto [t, name] : {std::pair{DType::kBF16, "bf16"}, std::pair{DType::kF16, "f16"}}) {
      ok &= Write<uint32_t>(dir + "/to_f32." + name,
                            bits.Bitcast(t).Float().Bitcast(DType::kU32).ToVector<int64_t>());
      ok &= Write<uint16_t>(dir + "/from_f32." + name,
                            f32.Cast(t).Bitcast(DType::kU16).ToVector<int64_t>());
      ok &= Write<uint32_t>(dir + "/host_to_f32." + name, OnHost(patterns, t, DType::kF32));
      ok &= Write<uint16_t>(dir + "/host_from_f32." + name, OnHost(in, DType::kF32, t));
    }
    if (!ok) {
      std::cerr << "half_conversions_peer: cannot write under " << dir << "\n";
      return 1;
    }
  } catch (const std::exception& e) {
    std::cerr << "half_conversions_peer: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
