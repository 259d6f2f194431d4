// ThreadOuterLoop: the split kernel computes what the kernel did (the reference
// interpreter runs a global range as a loop), its dims are the outer loop's length, and
// what must not be split (an element every iteration writes, too little work) is left as it
// was; a loop of run-time length is sized for its largest value. That chunks of it on threads give the same bits is tested where
// the C device runs them: every frontend test runs with UOPC_THREADS=3.
#include "passes/thread_outer_loop.h"

#include <gtest/gtest.h>

#include "core/symbolic/simplify.h"
#include "tests/testing/lowered_kernels.h"

namespace uopc {
namespace {

using testing::Execute;
using testing::kCases;
using testing::Kernels;

TEST(ThreadOuterLoop, TheSplitKernelComputesWhatTheKernelDid) {
  // (the row max reads its rows along memory, one at a time: 31 to split)
  const uint32_t outer[] = {4, 4, 31};
  for (size_t c = 0; c < std::size(kCases); ++c) {
    SCOPED_TRACE(kCases[c].name);
    for (const UOp& k : Kernels(kCases[c].uir)) {
      LaunchDims dims;
      absl::StatusOr<UOp> split = ThreadOuterLoop(k, &dims);
      ASSERT_TRUE(split.ok()) << split.status();
      EXPECT_EQ(*split != k, outer[c] > 1);
      EXPECT_EQ(dims.global[0], outer[c]);
      EXPECT_EQ(Execute(*split, 7), Execute(k, 7));
    }
  }
}

TEST(ThreadOuterLoop, WhatMustNotBeSplitIsLeftAsItWas) {
  UOp out = UOp::Buffer(DType::kI32, 0, 8);
  UOp i = UOp::Range(8, 0);
  LaunchDims d;
  // every iteration writes element 0
  UOp same = UOp::Sink({out.Index(UOp::ConstInt(DType::kI32, 0)).Store(i).End({i})});
  EXPECT_EQ(*ThreadOuterLoop(same, &d), same);
  EXPECT_EQ(d, LaunchDims{});
  // too little work to wake threads for: 8 iterations, 9 wanted
  UOp small = UOp::Sink({out.Index(i).Store(i * 2).End({i})});
  EXPECT_EQ(*ThreadOuterLoop(small, &d, 9), small);
  EXPECT_NE(*ThreadOuterLoop(small, &d, 8), small);
  EXPECT_EQ(d.global[0], 8u);
}

// Work is counted along the deepest loop nest: 8 x 8 rows of 128 summed, 8192 additions,
// however many loops beside each other a schedule gives them (the rows' accumulators set up
// and stored in loops of their own).
TEST(ThreadOuterLoop, WorkIsTheDeepestNestNotEveryLoopMultiplied) {
  const std::vector<UOp> ks = Kernels(
      "%0 = buffer 8192 : dtype=f32 slot=0\n%1 = reshape %0, 8, 8, 128\n"
      "%2 = reduce %1 : op=add axes=2\n%3 = sink %2\n");
  ASSERT_EQ(ks.size(), 1u);
  UOp k = ks[0];
  int loops = 0;
  for (const UOp& u : k.Toposort()) loops += u.is(Ops::RANGE);
  EXPECT_GT(loops, 3) << ToUir(k);  // (loops beside the nest: what the old count multiplied)
  LaunchDims d;
  EXPECT_EQ(*ThreadOuterLoop(k, &d, 8 * 8 * 128 + 1), k);
  EXPECT_NE(*ThreadOuterLoop(k, &d, 8 * 8 * 128), k);
}

// A loop of run-time length is split too, its launch sized for the largest length (each
// chunk takes its part of the length it runs with: the symbolic and batched generation
// tests run such kernels on 3 threads).
TEST(ThreadOuterLoop, ALoopOfRunTimeLengthIsSizedForItsLargestValue) {
  UOp out = UOp::Buffer(DType::kI32, 0, 600);
  UOp n = UOp::Var("n", 1, 600), j = UOp::Range(n, 0);
  UOp runtime = UOp::Sink({out.Index(j).Store(j * 2).End({j})});
  LaunchDims d;
  absl::StatusOr<UOp> split = ThreadOuterLoop(runtime, &d, 600);
  ASSERT_TRUE(split.ok()) << split.status();
  EXPECT_NE(*split, runtime);
  EXPECT_EQ(d.global[0], 600u);
  // fewer iterations at its largest than asked for: left as it was
  EXPECT_EQ(*ThreadOuterLoop(runtime, &d, 601), runtime);
}

}  // namespace
}  // namespace uopc
