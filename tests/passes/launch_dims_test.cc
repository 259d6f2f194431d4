// MapToLaunchDims: the mapped kernel computes what the kernel did (both run by the
// reference interpreter, which runs global and local ranges as loops), and its dims cover
// every output element once.
#include "passes/launch_dims.h"

#include <gtest/gtest.h>

#include "tests/testing/lowered_kernels.h"

namespace uopc {
namespace {

using testing::Case;
using testing::Execute;
using testing::kCases;
using testing::Kernels;

TEST(LaunchDims, TheMappedKernelComputesWhatTheKernelDid) {
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.name);
    for (const UOp& k : Kernels(c.uir)) {
      LaunchDims dims;
      absl::StatusOr<UOp> mapped = MapToLaunchDims(k, LaunchLimits{8, 1 << 20}, &dims);
      ASSERT_TRUE(mapped.ok()) << mapped.status();
      EXPECT_NE(*mapped, k);  // something was mapped
      EXPECT_EQ(Execute(*mapped, 7), Execute(k, 7));
    }
  }
}

TEST(LaunchDims, BlocksDivideTheElementsAndRespectTheLimits) {
  auto dims_of = [](const std::string& uir, LaunchLimits limits) {
    LaunchDims d;
    EXPECT_TRUE(MapToLaunchDims(Kernels(uir)[0], limits, &d).ok());
    return std::make_pair(d.global[0], d.local[0]);
  };
  EXPECT_EQ(dims_of(kCases[0].uir, {8, 1 << 20}), std::make_pair(4u, 8u));   // 32 = 4 x 8
  EXPECT_EQ(dims_of(kCases[0].uir, {256, 1 << 20}), std::make_pair(1u, 32u));
  EXPECT_EQ(dims_of(kCases[2].uir, {8, 1 << 20}), std::make_pair(31u, 1u));  // 31 is prime
  EXPECT_EQ(dims_of(kCases[0].uir, {8, 2}), std::make_pair(1u, 1u));  // too many blocks: unmapped
}

TEST(LaunchDims, AKernelOfRunTimeLengthIsLeftAsItWas) {
  UOp n = UOp::Var("n", 1, 8), out = UOp::Buffer(DType::kI32, 0, 8);
  UOp i = UOp::Range(n, 0);
  UOp k = UOp::Sink({out.Index(i).Store(i * 2).End({i})});
  LaunchDims d;
  EXPECT_EQ(*MapToLaunchDims(k, {}, &d), k);
  EXPECT_EQ(d, LaunchDims{});
}

}  // namespace
}  // namespace uopc
