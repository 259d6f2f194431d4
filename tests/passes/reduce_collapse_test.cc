// Reduce collapse (passes/reduce_collapse.h): which sums over a loop become a value at an
// index, and what the rules make of a one-hot.
#include "passes/reduce_collapse.h"

#include <gtest/gtest.h>

#include "core/graph_rewrite.h"
#include "core/uir.h"

namespace uopc {
namespace {

UOp Load(int slot, const UOp& at) { return UOp::Buffer(DType::kF32, slot, 64).Index(at).Load(); }

TEST(ReduceCollapse, ASumOfAOneHotTimesARowIsTheRowAtTheIndexGuarded) {
  UOp r = UOp::Range(UOp::Int(10), 0, RangeKind::kReduce);
  UOp e = UOp::Buffer(DType::kI32, 1, 4).Index(UOp::Int(2)).Load();
  UOp one_hot = e.Eq(r).Cast(DType::kI32).Cast(DType::kF32);
  std::vector<UOp> loops{r};
  UOp got = CollapseReduce(Ops::ADD, one_hot * Load(0, r * 3), loops);
  EXPECT_TRUE(loops.empty());
  UOp valid = UOp::Derived(Ops::AND, {UOp::Int(-1).Lt(e), e.Lt(UOp::Int(10))});
  EXPECT_EQ(ToUir(got), ToUir(valid.Where(Load(0, valid.Where(e, UOp::Int(0)) * 3),
                                          UOp::ConstFloat(DType::kF32, 0))));
}

TEST(ReduceCollapse, OnlyTheLoopTheIndexPicksCollapses) {
  UOp r = UOp::Range(UOp::Int(10), 0, RangeKind::kReduce);
  UOp s = UOp::Range(UOp::Int(6), 1, RangeKind::kReduce);
  UOp e = UOp::Buffer(DType::kI32, 1, 6).Index(s).Load();  // (moves with s, not with r)
  std::vector<UOp> loops{r, s};
  UOp got = CollapseReduce(Ops::ADD, e.Eq(r).Where(Load(0, r + s), UOp::ConstFloat(DType::kF32, 0)),
                           loops);
  ASSERT_EQ(loops.size(), 1u);
  EXPECT_EQ(loops[0], s);
  for (const UOp& u : got.Toposort()) EXPECT_FALSE(u == r);
}

TEST(ReduceCollapse, NoCollapseWhereTheIndexMovesWithTheLoopOrTheOpIsNotASum) {
  UOp r = UOp::Range(UOp::Int(10), 0, RangeKind::kReduce);
  UOp zero = UOp::ConstFloat(DType::kF32, 0);
  UOp v = (r * 2).Eq(r).Where(Load(0, r), zero);  // r == 2r: not an index picked by r
  std::vector<UOp> loops{r};
  EXPECT_EQ(CollapseReduce(Ops::ADD, v, loops), v);
  EXPECT_EQ(loops.size(), 1u);
  UOp e = UOp::Buffer(DType::kI32, 1, 4).Index(UOp::Int(0)).Load();
  UOp pick = e.Eq(r).Where(Load(0, r), zero);
  EXPECT_EQ(CollapseReduce(Ops::MAX, pick, loops), pick);  // (the max of 0 and the pick)
  EXPECT_EQ(
      CollapseReduce(Ops::ADD, e.Eq(r).Where(Load(0, r), UOp::ConstFloat(DType::kF32, 1)), loops)
          .op(),
      Ops::WHERE);
  EXPECT_EQ(loops.size(), 1u);
}

TEST(ReduceCollapse, AMaxLosesTheLoopsItsValueDoesNotMoveWith) {
  // the largest of an index broadcast over a row (an index check's): the index's own largest
  UOp r = UOp::Range(UOp::Int(1024), 0, RangeKind::kReduce);
  UOp s = UOp::Range(UOp::Int(6), 1, RangeKind::kReduce);
  UOp e = UOp::Buffer(DType::kU32, 1, 6).Index(s).Load();
  std::vector<UOp> loops{s, r};
  EXPECT_EQ(CollapseReduce(Ops::MAX, e, loops), e);
  ASSERT_EQ(loops.size(), 1u);
  EXPECT_EQ(loops[0], s);
  // a loop that may run no step keeps the reduction's identity: it stays
  UOp n = UOp::Var("n", 0, 8);
  UOp maybe_none = UOp::Range(n, 2, RangeKind::kReduce);
  std::vector<UOp> kept{maybe_none};
  EXPECT_EQ(CollapseReduce(Ops::MAX, e, kept), e);
  EXPECT_EQ(kept.size(), 1u);
  // a sum of a value repeated is not the value
  std::vector<UOp> summed{s, r};
  CollapseReduce(Ops::ADD, e, summed);
  EXPECT_EQ(summed.size(), 2u);
}

TEST(ReduceCollapse, TheRulesBringTheComparisonOutToAWhere) {
  UOp b = UOp::Buffer(DType::kBool, 0, 4).Index(UOp::Int(0)).Load();
  UOp y = Load(1, UOp::Int(0));
  absl::StatusOr<UOp> got = GraphRewrite(b.Cast(DType::kI32).Cast(DType::kF32) * y, OneHotRules());
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, b.Where(y, UOp::ConstFloat(DType::kF32, 0)));
}

}  // namespace
}  // namespace uopc
