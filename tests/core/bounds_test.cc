#include "core/bounds.h"

#include <gtest/gtest.h>

namespace uopc {
namespace {

using P = std::pair<int64_t, int64_t>;
P B(const UOp& u) { return {VMin(u), VMax(u)}; }

TEST(Bounds, Leaves) {
  EXPECT_EQ(B(UOp::Int(5)), P(5, 5));
  EXPECT_EQ(B(UOp::Var("n", 1, 8)), P(1, 8));
  EXPECT_EQ(B(UOp::Range(10, 0)), P(0, 9));
  EXPECT_EQ(B(UOp::Buffer(DType::kU8, 0, 4).Index(0).Load()), P(0, 255));
  EXPECT_EQ(B(UOp::Buffer(DType::kI16, 0, 4).Index(0).Load()), P(-32768, 32767));
}

TEST(Bounds, Arithmetic) {
  UOp n = UOp::Var("n", -3, 5), r = UOp::Range(4, 0);
  EXPECT_EQ(B(n + r), P(-3, 8));
  EXPECT_EQ(B(n * -2), P(-10, 6));
  EXPECT_EQ(B(n * r), P(-9, 15));
  EXPECT_EQ(B(n.FloorDiv(2)), P(-2, 2));
  EXPECT_EQ(B(n.FloorDiv(-2)), P(-3, 1));
  EXPECT_EQ(B(n.Mod(4)), P(0, 3));
  EXPECT_EQ(B(r.Mod(8)), P(0, 3));  // already below the divisor
  EXPECT_EQ(B(n.Max(r)), P(0, 5));
}

// A remainder's bounds are exact where one multiple of the divisor holds its operand, and
// never above the operand itself.
TEST(Bounds, RemaindersAreExact) {
  UOp x = UOp::Var("x", 0, 2), n = UOp::Var("n", 1, 8);
  EXPECT_EQ(B((x + 5).Mod(8)), P(5, 7));
  EXPECT_EQ(B(UOp::Var("y", 9, 12).Mod(8)), P(1, 4));
  EXPECT_EQ(B(UOp::Var("z", -7, -5).Mod(4)), P(1, 3));  // floor: -7 % 4 = 1
  EXPECT_EQ(B(UOp::Var("w", 0, 100).Mod(8)), P(0, 7));
  EXPECT_EQ(B(UOp::Var("v", 6, 9).Mod(8)), P(0, 7));    // 6, 7, 0, 1: both ends
  EXPECT_EQ(B((x + 1).Mod(n)), P(0, 3));                // below x + 1 itself
  EXPECT_EQ(B(UOp::Var("u", 0, 30).Mod(n)), P(0, 7));
}

TEST(Bounds, OverflowGivesTheFullRange) {
  UOp big = UOp::Var("big", 0, 2147483647);
  EXPECT_EQ(B(big + 1), P(-2147483648LL, 2147483647));
  EXPECT_EQ(B(big * 2), P(-2147483648LL, 2147483647));
  EXPECT_EQ(B(big.Cast(DType::kI64) + 1), P(1, 2147483648LL));  // fits in i64
  EXPECT_EQ(B(UOp::Var("v", 0, 300).Cast(DType::kI8)), P(-128, 127));
  EXPECT_EQ(B(UOp::Var("v", 0, 100).Cast(DType::kI8)), P(0, 100));
}

TEST(Bounds, Comparisons) {
  UOp r = UOp::Range(4, 0);
  EXPECT_EQ(B(r.Lt(4)), P(1, 1));
  EXPECT_EQ(B(r.Lt(0)), P(0, 0));
  EXPECT_EQ(B(r.Lt(2)), P(0, 1));
  EXPECT_EQ(B(r.Ne(UOp::Int(7))), P(1, 1));
  EXPECT_EQ(B(r.Eq(UOp::Int(7))), P(0, 0));
  EXPECT_EQ(B(r.Lt(2).Where(UOp::Int(10), r)), P(0, 10));
  EXPECT_EQ(B(r.Lt(4).Where(UOp::Int(10), r)), P(10, 10));
  // x < y ? x : y is a min, x < y ? y : x a max (a block's threads left at a run-time end)
  UOp left = UOp::Var("n", 1, 600) - UOp::Range(3, 1) * 256, block = UOp::Int(256);
  EXPECT_EQ(B(left.Lt(block).Where(left, block)), P(-511, 256));
  EXPECT_EQ(B(left.Lt(block).Where(block, left)), P(256, 600));
}

// A gate that picks a value only where it lies in a range bounds the pick: a paged KV cache's
// block number read from the block table, 0 where the entry is out of range.
TEST(Bounds, AGateBoundsTheValueItPicks) {
  UOp entry = UOp::Buffer(DType::kI32, 0, 8).Index(UOp::Range(8, 0)).Load();
  UOp in_range = UOp::Derived(Ops::AND, {UOp::Int(-1).Lt(entry), entry.Lt(UOp::Int(258))});
  EXPECT_EQ(B(in_range.Where(entry, UOp::Int(0))), P(0, 257));
  EXPECT_EQ(B(entry.Lt(UOp::Int(100)).Where(entry, UOp::Int(0))), P(-2147483648LL, 99));
  EXPECT_EQ(B(UOp::Int(4).Lt(entry).Where(entry, UOp::Int(0))), P(0, 2147483647));
  EXPECT_EQ(B(in_range.Where(UOp::Int(0), entry)), P(-2147483648LL, 2147483647));  // (not picked)
  EXPECT_EQ(B(in_range.Where(entry, UOp::Int(0)) * 1024 + UOp::Range(1024, 1)),
            P(0, 258 * 1024 - 1));
}

TEST(Bounds, DivisionByARangeThatHoldsZeroIsUnknown) {
  UOp d = UOp::Var("d", -1, 1);
  EXPECT_EQ(B(UOp::Int(8).FloorDiv(d)), P(-2147483648LL, 2147483647));
}

TEST(Bounds, FloatsAndU64HaveNone) {
  EXPECT_FALSE(HasBounds(DType::kF32));
  EXPECT_FALSE(HasBounds(DType::kU64));
  EXPECT_TRUE(HasBounds(DType::kBool));
  EXPECT_TRUE(HasBounds(DType::kI64));
}

TEST(Bounds, DeepChainsDoNotRecurse) {
  UOp x = UOp::Var("x", 0, 1);
  for (int i = 0; i < 200000; ++i) x = x.Max(UOp::Var("x", 0, 1)) + 0;
  EXPECT_EQ(B(x), P(0, 1));
}

}  // namespace
}  // namespace uopc
