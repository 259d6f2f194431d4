// NumberLoops: a kernel's loops and accumulators are numbered in the order they appear,
// whatever numbers they had, so two lowerings of one kernel that differ only in how they
// numbered are one kernel; what it computes does not change, and copies pass through.
#include "passes/number_loops.h"

#include <gtest/gtest.h>

#include "tests/testing/lowered_kernels.h"

namespace uopc {
namespace {

UOp Numbered(const UOp& kernel) {
  absl::StatusOr<UOp> out =
      NumberLoops(UOp::Sink({UOp::Sink({kernel}), UOp::Sink({UOp::Buffer(DType::kI32, 0, 8)})}));
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? out->src(0).src(0) : UOp();
}

// out[i] = sum_{j < i+1} j (in f32), its loops numbered (i, j) and its accumulator `acc`
UOp Triangle(int i_idx, int j_idx, int acc_slot) {
  UOp out = UOp::Buffer(DType::kF32, 0, 8);
  UOp i = UOp::Range(8, i_idx), j = UOp::Range(i + 1, j_idx, RangeKind::kReduce);
  UOp acc = UOp::Alloc(DType::kF32, acc_slot, 1).After({i});
  UOp init = acc.Index(0).Store(UOp::ConstFloat(DType::kF32, 0));
  UOp accj = UOp::Derived(Ops::AFTER, {acc, init, j});
  UOp sum = accj.Index(0).Store(accj.Index(0).Load() + j.Cast(DType::kF32)).End({j});
  return UOp::Sink({out.Index(i).Store(acc.After({sum}).Index(0).Load()).End({i})});
}

TEST(NumberLoops, NumbersLoopsAndAccumulatorsInTheOrderTheyAppear) {
  const UOp a = Numbered(Triangle(7, 3, 5)), b = Numbered(Triangle(1, 9, 2));
  EXPECT_EQ(a, b);  // one kernel, however it was numbered
  EXPECT_EQ(a, Numbered(a));
  std::vector<int> ranges, allocs;
  for (const UOp& u : a.Toposort()) {
    if (u.is(Ops::RANGE)) ranges.push_back(u.arg().Get<RangeArg>().idx);
    if (u.is(Ops::ALLOC)) allocs.push_back(u.arg().Get<ParamArg>().slot);
  }
  EXPECT_EQ(ranges, (std::vector<int>{0, 1}));  // (j's end holds i: i comes first)
  EXPECT_EQ(allocs, std::vector<int>{0});
  EXPECT_EQ(testing::Execute(a, 3), testing::Execute(Triangle(7, 3, 5), 3));
}

TEST(NumberLoops, LeavesCopiesAndOutputsAsTheyAre) {
  UOp src = UOp::Buffer(DType::kF32, 0, 4, "CPU:0"), dst = UOp::Buffer(DType::kF32, 1, 4, "CPU:1");
  UOp copy = UOp::Derived(Ops::ASSIGN, {dst, UOp::Derived(Ops::COPY, {src}, DeviceArg{"CPU:1"})});
  UOp lowered = UOp::Sink({UOp::Sink({copy}), UOp::Sink({dst})});
  EXPECT_EQ(*NumberLoops(lowered), lowered);
  EXPECT_FALSE(NumberLoops(UOp::Sink({copy})).ok());
}

}  // namespace
}  // namespace uopc
