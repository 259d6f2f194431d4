#include "core/upat.h"

#include <gtest/gtest.h>

#include "core/pattern_matcher.h"

namespace uopc {
namespace {

bool Matches(const UPat& p, const UOp& u, Match* out = nullptr) {
  Match m;
  bool ok = p.MatchInto(u, m);
  if (out) *out = m;
  return ok;
}

TEST(UPat, MatchesByOpAndCapturesByName) {
  UOp x = UOp::Var("x", 0, 9);
  Match m;
  ASSERT_TRUE(Matches(UPat::Var("a") + UPat::Cst("c"), x + 3, &m));
  EXPECT_EQ(m["a"], x);
  EXPECT_EQ(m["c"], UOp::Int(3));
  EXPECT_FALSE(Matches(UPat::Var("a") * UPat::Cst("c"), x + 3));
}

TEST(UPat, CommutativeSourcesMatchInEitherOrder) {
  UOp x = UOp::Var("x", 0, 9);
  UOp c_first = UOp::Make(Ops::ADD, DType::kI32, {UOp::Int(3), x});
  Match m;
  ASSERT_TRUE(Matches(UPat::Var("a") + UPat::Cst("c"), c_first, &m));
  EXPECT_EQ(m["a"], x);
  // FLOORDIV is not commutative
  EXPECT_FALSE(Matches(UPat::Op({Ops::FLOORDIV}, {{UPat::Var("a"), UPat::Cst()}}),
                       UOp::Make(Ops::FLOORDIV, DType::kI32, {UOp::Int(3), x})));
}

TEST(UPat, ANameBoundTwiceMustBeOneNode) {
  UOp x = UOp::Var("x", 0, 9), y = UOp::Var("y", 0, 9);
  EXPECT_TRUE(Matches(UPat::Var("a") + UPat::Var("a"), x + x));
  EXPECT_FALSE(Matches(UPat::Var("a") + UPat::Var("a"), x + y));
}

TEST(UPat, FailedAlternativesLeaveNoCaptures) {
  UOp x = UOp::Var("x", 0, 9);
  // first order binds a=3 then fails on x; the swapped order must not see that binding
  Match m;
  ASSERT_TRUE(Matches(UPat::Var("a") + UPat::Cst("c"),
                      UOp::Make(Ops::ADD, DType::kI32, {UOp::Int(3), x}), &m));
  EXPECT_EQ(m["a"], x);
}

TEST(UPat, ConstantValuesDTypesAndArgs) {
  UOp x = UOp::Var("x", 0, 9);
  EXPECT_TRUE(Matches(UPat::Var() * UPat::Val(1), x * 1));
  EXPECT_TRUE(Matches(UPat::Val(1), UOp::Const(DType::kF32, 1.0)));
  EXPECT_TRUE(Matches(UPat::Val(1), UOp::ConstBool(DType::kBool, true)));
  EXPECT_FALSE(Matches(UPat::Val(1), UOp::Int(2)));
  EXPECT_TRUE(Matches(UPat::Var().Ints(), x));
  EXPECT_FALSE(Matches(UPat::Var().Ints(), UOp::Const(DType::kF32, 1.0)));
  EXPECT_FALSE(Matches(UPat::Var().Ints(), UOp::ConstBool(DType::kBool, true)));
  EXPECT_TRUE(Matches(UPat::Var().Ints(true), UOp::ConstBool(DType::kBool, true)));
  EXPECT_TRUE(
      Matches(UPat::Op({Ops::RANGE}).WithArg(RangeArg{1, RangeKind::kLoop}), UOp::Range(4, 1)));
  EXPECT_FALSE(
      Matches(UPat::Op({Ops::RANGE}).WithArg(RangeArg{1, RangeKind::kLoop}), UOp::Range(4, 0)));
}

TEST(PatternMatcher, FirstApplicableRuleWinsAndNullMeansNoRewrite) {
  UOp x = UOp::Var("x", 0, 9);
  PatternMatcher pm({
      {UPat::Var("a") + UPat::Val(0), [](const Match&) { return UOp(); }},  // declines
      {UPat::Var("a") + UPat::Cst(), [](const Match& m) { return m["a"]; }},
      {UPat::Var("a") + UPat::Cst(), [](const Match&) { return UOp::Int(-1); }},
  });
  EXPECT_EQ(pm.Rewrite(x + 0), x);
  EXPECT_EQ(pm.Rewrite(x + 5), x);
  EXPECT_FALSE(pm.Rewrite(x * 5));
}

TEST(PatternMatcher, ARuleThatReturnsItsInputIsNoRewrite) {
  UOp x = UOp::Var("x", 0, 9);
  PatternMatcher pm({{UPat::Var("a"), [](const Match& m) { return m["a"]; }}});
  EXPECT_FALSE(pm.Rewrite(x));
}

TEST(PatternMatcher, ContextReachesTheRule) {
  int calls = 0;
  PatternMatcher pm({{UPat::Op({Ops::VAR}), [](const Match& m) {
                        ++*m.ctx<int>();
                        return UOp();
                      }}});
  pm.Rewrite(UOp::Var("x", 0, 1), &calls);
  pm.Rewrite(UOp::Int(1), &calls);  // indexed by op: a CONST never reaches the VAR rule
  EXPECT_EQ(calls, 1);
}

}  // namespace
}  // namespace uopc
