// IndexSums: an index sum is reassociated outermost loop first, the deepest loop that steps
// it by one added last, with the same values (integer + wraps).
#include "passes/index_sums.h"

#include <gtest/gtest.h>

#include "core/interpreter.h"
#include "passes/linearize.h"

namespace uopc {
namespace {

// out[i * 8 + j] = in[(i * 8 + (k + j)) ...]: i outer, j inner (a unit step), k a constant
// 0 of no loop; the load's index written (j + (i * 8)), the store's ((j * 1) + i * 8).
TEST(IndexSums, AnIndexIsItsOuterTermsThenItsInnerLoop) {
  UOp out = UOp::Buffer(DType::kF32, 0, 32), in = UOp::Buffer(DType::kF32, 1, 32);
  UOp i = UOp::Range(4, 0), j = UOp::Range(8, 1);
  UOp load = in.Index(j + (i * 8)).Load();
  UOp kernel = UOp::Sink({out.Index(j + (i * 8)).Store(load * 2.0f).End({j}).End({i})});
  UOp ordered = OrderIndexSums(kernel);
  int indices = 0;
  for (const UOp& u : ordered.Toposort())
    if (u.is(Ops::INDEX)) {
      ++indices;
      ASSERT_TRUE(u.src(1).is(Ops::ADD));
      EXPECT_EQ(u.src(1).src(1), j);  // (i * 8) + j
      EXPECT_EQ(u.src(1).src(0), i * 8);
    }
  EXPECT_EQ(indices, 2);
  EXPECT_EQ(OrderIndexSums(ordered), ordered);  // in order already: kept
  std::vector<float> a(32), b(32, -1), c(32, -1);
  for (int x = 0; x < 32; ++x) a[x] = static_cast<float>(x);
  ASSERT_TRUE(
      Interpret(*Linearize(kernel), {{b.data(), DType::kF32, 32}, {a.data(), DType::kF32, 32}})
          .ok());
  ASSERT_TRUE(
      Interpret(*Linearize(ordered), {{c.data(), DType::kF32, 32}, {a.data(), DType::kF32, 32}})
          .ok());
  EXPECT_EQ(b, c);
}

// A group's rows (a loop r inside j, stepping the index by 64) come before j, which steps
// it by one: (r * 64 + (i * 4 + j)) -> ((i * 4 + r * 64) + j).
TEST(IndexSums, TheUnitStepComesAfterADeeperLoopsStride) {
  UOp out = UOp::Buffer(DType::kF32, 0, 256);
  UOp i = UOp::Range(16, 0), j = UOp::Range(4, 1), r = UOp::Range(4, 2);
  UOp at = (r * 64) + ((i * 4) + j);
  UOp kernel =
      UOp::Sink({out.Index(at).Store(UOp::ConstFloat(DType::kF32, 1)).End({r}).End({j}).End({i})});
  UOp ordered = OrderIndexSums(kernel);
  for (const UOp& u : ordered.Toposort())
    if (u.is(Ops::INDEX)) {
      EXPECT_EQ(u.src(1), ((i * 4) + (r * 64)) + j);
    }
}

}  // namespace
}  // namespace uopc
