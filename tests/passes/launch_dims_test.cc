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

// out[i] = 2 * i for i < n, n a VAR in [1, 600]: a grid for 600 (3 blocks of 256 threads),
// whose threads past n do nothing; at every length the mapped kernel writes what the kernel
// does, and nothing past n.
TEST(LaunchDims, AKernelOfRunTimeLengthGetsAGridForItsLargestLength) {
  UOp n = UOp::Var("n", 1, 600), out = UOp::Buffer(DType::kI32, 0, 600);
  UOp i = UOp::Range(n, 0);
  UOp k = UOp::Sink({out.Index(i).Store(i * 2).End({i})});
  LaunchDims d;
  absl::StatusOr<UOp> mapped = MapToLaunchDims(k, {}, &d);
  ASSERT_TRUE(mapped.ok()) << mapped.status();
  EXPECT_EQ(d.global[0], 3u);
  EXPECT_EQ(d.local[0], 256u);
  // the grid a launch computes: the blocks the length needs
  UOp grid;
  for (const UOp& u : mapped->Toposort())
    if (u.is(Ops::RANGE) && u.arg().Get<RangeArg>().kind == RangeKind::kGlobal) grid = u.src(0);
  ASSERT_TRUE(grid);
  for (int64_t len : {1, 255, 256, 257, 599, 600})
    EXPECT_EQ(EvalIndex(grid, {{"n", len}}), (len + 255) / 256) << len;
  EXPECT_EQ(EvalIndex(grid, {}), std::nullopt);  // (no value for n)
  for (int64_t len : {1, 255, 256, 257, 599, 600}) {
    std::vector<int32_t> want(600, -1), got(600, -1);
    for (auto [kernel, data] : {std::pair{k, &want}, std::pair{*mapped, &got}}) {
      absl::StatusOr<std::vector<UOp>> program = Linearize(kernel);
      ASSERT_TRUE(program.ok()) << program.status();
      absl::Status s = Interpret(*program, {{data->data(), DType::kI32, 600}}, {{"n", len}});
      ASSERT_TRUE(s.ok()) << s << "\n" << ToUir(kernel);
    }
    EXPECT_EQ(got, want) << len;
    EXPECT_EQ(got[len - 1], 2 * (len - 1));
    if (len < 600) {
      EXPECT_EQ(got[len], -1);
    }
  }
  // a prefill's length up to 4,096: 16 blocks of 256 threads
  UOp k4096 = UOp::Sink({UOp::Buffer(DType::kI32, 0, 4096)
                             .Index(UOp::Range(UOp::Var("T", 1, 4096), 0))
                             .Store(UOp::Int(1))
                             .End({UOp::Range(UOp::Var("T", 1, 4096), 0)})});
  ASSERT_TRUE(MapToLaunchDims(k4096, {}, &d).ok());
  EXPECT_EQ(d.global[0], 16u);
  EXPECT_EQ(d.local[0], 256u);
  // and two loops, one of run-time length: (n, 3)
  UOp j = UOp::Range(3, 1), i2 = UOp::Range(n, 0);
  UOp k2 = UOp::Sink({UOp::Buffer(DType::kI32, 0, 1800).Index(i2 * 3 + j).Store(i2 + j * 1000).End({i2, j})});
  absl::StatusOr<UOp> mapped2 = MapToLaunchDims(k2, {}, &d);
  ASSERT_TRUE(mapped2.ok());
  EXPECT_EQ(d.global[0], 8u);  // 1800 / 256, up
  for (int64_t len : {1, 100, 600}) {
    std::vector<int32_t> want(1800, -1), got(1800, -1);
    for (auto [kernel, data] : {std::pair{k2, &want}, std::pair{*mapped2, &got}})
      ASSERT_TRUE(Interpret(*Linearize(kernel), {{data->data(), DType::kI32, 1800}}, {{"n", len}}).ok());
    EXPECT_EQ(got, want) << len;
  }
}

}  // namespace
}  // namespace uopc
