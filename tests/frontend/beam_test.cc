// UOPC_BEAM=3 (set by the BUILD rule; the cache folder the test's own): realizing a matmul
// times three of its forms once and gives the bits of a plain loop.
#include <cmath>
#include <cstdlib>

#include <gtest/gtest.h>

#include "frontend/realize.h"
#include "frontend/tensor.h"

namespace uopc {
namespace {

TEST(Beam, AMatmulIsSearchedOnceAndGivesThePlainLoopsBits) {
  // (before the runtime starts: the search keeps its choices there)
  ASSERT_EQ(setenv("UOPC_CACHE_DIR", testing::TempDir().c_str(), 1), 0);
  KernelSearch* search = Runtime::Get().search();
  ASSERT_NE(search, nullptr);
  const int M = 64, K = 72, N = 192;  // (6 forms: five register tiles, and rows of sums)
  std::vector<float> a(M * K), b(K * N);
  for (int i = 0; i < M * K; ++i) a[i] = std::sin(0.37f * i);
  for (int i = 0; i < K * N; ++i) b[i] = std::cos(0.11f * i);
  for (int run = 0; run < 2; ++run) {  // (the second from the plan cache)
    std::vector<float> c =
        Tensor::FromVector(a, {M, K}).Matmul(Tensor::FromVector(b, {K, N})).ToVector<float>();
    ASSERT_EQ(c.size(), static_cast<size_t>(M * N));
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < N; ++j) {
        float s = 0;
        for (int k = 0; k < K; ++k) s += a[i * K + k] * b[k * N + j];
        ASSERT_EQ(c[i * N + j], s) << i << ", " << j;
      }
  }
  EXPECT_EQ(search->stats().searched, 1);
  EXPECT_EQ(search->stats().forms_timed, 3);
}

}  // namespace
}  // namespace uopc
