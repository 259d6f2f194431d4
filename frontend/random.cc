#include "frontend/random.h"

#include <cmath>

namespace uopc {

RandomStream& RandomStream::Global() {
  static RandomStream s;
  return s;
}

uint64_t RandomStream::Next() {
  // splitmix64 of the counter, keyed by the seed: a bijection per seed, well mixed
  uint64_t z = (counter_++) + 0x9e3779b97f4a7c15ull * (seed_ + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

std::vector<float> RandomStream::Uniform(int64_t n) {
  std::vector<float> out(n);
  for (float& v : out)
    v = static_cast<float>(Next() >> 40) * (1.0f / 16777216.0f);  // 24 bits: exact floats in [0, 1)
  return out;
}

std::vector<float> RandomStream::Normal(int64_t n) {
  std::vector<float> out(n);
  for (int64_t i = 0; i < n; i += 2) {
    double u1 = (static_cast<double>(Next() >> 11) + 1.0) * (1.0 / 9007199254740992.0);  // (0, 1]
    double u2 = static_cast<double>(Next() >> 11) * (1.0 / 9007199254740992.0);
    double r = std::sqrt(-2.0 * std::log(u1)), t = 2.0 * M_PI * u2;
    out[i] = static_cast<float>(r * std::cos(t));
    if (i + 1 < n) out[i + 1] = static_cast<float>(r * std::sin(t));
  }
  return out;
}

std::vector<int32_t> RandomStream::Integers(int64_t n, int64_t lo, int64_t hi) {
  std::vector<int32_t> out(n);
  uint64_t span = static_cast<uint64_t>(hi - lo);
  for (int32_t& v : out) v = static_cast<int32_t>(lo + static_cast<int64_t>(Next() % span));
  return out;
}

}  // namespace uopc
