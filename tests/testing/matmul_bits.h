// ExpectMatmulBits: an (m x k) @ (k x n) Tensor matmul of fixed sin/cos data gives, bit for
// bit, the sum over k in order that a plain loop computes (what every form of a matmul,
// its threads and its copies must keep): each step a * b + s rounded once where the
// kernels' target fuses multiply-add (passes/reduce_to_accumulators.h), else twice.
#pragma once

#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "devices/registry.h"
#include "frontend/realize.h"
#include "frontend/tensor.h"

namespace uopc::testing {

// Whether the default device's kernels (or UOPC_TARGET's) sum products with one rounding.
inline bool KernelsFuseMultiplyAdd() {
  if (const std::optional<Target>& t = Runtime::Get().target_override())
    return t->FusesMultiplyAdd();
  absl::StatusOr<Device*> d = DeviceRegistry::Get().Default();
  return d.ok() && (*d)->target().FusesMultiplyAdd();
}

inline void ExpectMatmulBits(int m, int k, int n) {
  const bool fused = KernelsFuseMultiplyAdd();
  std::vector<float> a(m * k), b(k * n);
  for (int i = 0; i < m * k; ++i) a[i] = std::sin(0.37f * i);
  for (int i = 0; i < k * n; ++i) b[i] = std::cos(0.11f * i);
  const std::vector<float> c =
      Tensor::FromVector(a, {m, k}).Matmul(Tensor::FromVector(b, {k, n})).ToVector<float>();
  ASSERT_EQ(c.size(), static_cast<size_t>(m * n));
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      float s = 0;
      for (int x = 0; x < k; ++x)
        s = fused ? std::fma(a[i * k + x], b[x * n + j], s) : s + a[i * k + x] * b[x * n + j];
      ASSERT_EQ(c[i * n + j], s) << m << "x" << k << "x" << n << " at " << i << ", " << j;
    }
}

}  // namespace uopc::testing
