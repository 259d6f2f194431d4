// UOPC_BEAM=3 (set by the BUILD rule; the cache folder the test's own): realizing a matmul
// searches its actions once and gives the bits of a plain loop.
#include <cstdlib>

#include <gtest/gtest.h>

#include "frontend/realize.h"
#include "frontend/tensor.h"
#include "tests/testing/matmul_bits.h"

namespace uopc {
namespace {

TEST(Beam, AMatmulIsSearchedOnceAndGivesThePlainLoopsBits) {
  // (before the runtime starts: the search keeps its choices there)
  ASSERT_EQ(setenv("UOPC_CACHE_DIR", ::testing::TempDir().c_str(), 1), 0);
  KernelSearch* search = Runtime::Get().search();
  ASSERT_NE(search, nullptr);
  // (the second from the plan cache)
  for (int run = 0; run < 2; ++run) testing::ExpectMatmulBits(192, 256, 192);
  EXPECT_EQ(search->stats().searched, 1);
  EXPECT_GT(search->stats().timed, 2);  // (the defaults, none, and a round of changes)
}

}  // namespace
}  // namespace uopc
