// FNV-1a, a small stable hash for keys that outlive the process (cache file names,
// kernel names). absl::Hash is seeded per process, so it cannot be used for these.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

#include "absl/strings/string_view.h"

namespace uopc {

inline constexpr uint64_t kFnvBasis = 1469598103934665603ull;

/// FNV-1a of `s`, continuing from `h`.
inline uint64_t Fnv1a(absl::string_view s, uint64_t h = kFnvBasis) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

/// 16 lower-case hex digits.
inline std::string Hex64(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace uopc
