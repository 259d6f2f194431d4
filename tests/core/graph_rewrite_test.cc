#include "core/graph_rewrite.h"

#include <gtest/gtest.h>

#include "core/uir.h"

namespace uopc {
namespace {

// Counts down: a constant n > 0 becomes n - 1, so the fixed point of n is 0.
const PatternMatcher& CountDown() {
  static const PatternMatcher* pm = new PatternMatcher({
      {UPat::Cst("c"),
       [](const Match& m) {
         int64_t v = *m["c"].ConstIntValue();
         return v > 0 ? UOp::Int(v - 1) : UOp();
       }},
  });
  return *pm;
}

TEST(GraphRewrite, RewritesToAFixedPoint) {
  UOp x = UOp::Var("x", 0, 9);
  EXPECT_EQ(*GraphRewrite(x + 5, CountDown()), x + 0);
}

TEST(GraphRewrite, WhatARuleBuildsIsRewrittenToo) {
  // x*c -> x + x*(c-1) until c is 1: the new MUL nodes are rewritten as they appear.
  PatternMatcher pm({
      {UPat::Var("x") * UPat::Cst("c"),
       [](const Match& m) {
         int64_t c = *m["c"].ConstIntValue();
         return c > 1 ? m["x"] + m["x"] * (c - 1) : UOp();
       }},
  });
  UOp x = UOp::Var("x", 0, 9);
  EXPECT_EQ(*GraphRewrite(x * 3, pm), x + (x + x * 1));
}

TEST(GraphRewrite, SharedSubgraphsAreRewrittenOnce) {
  PatternMatcher pm({{UPat::Op({Ops::VAR}), [](const Match& m) {
                        ++*m.ctx<int>();
                        return UOp();
                      }}});
  UOp x = UOp::Var("x", 0, 9);
  UOp shared = x * 2;
  int calls = 0;
  EXPECT_TRUE(GraphRewrite(shared + shared * shared, pm, &calls).ok());
  EXPECT_EQ(calls, 1);
}

TEST(GraphRewrite, SourcesAreRewrittenBeforeTheirUsers) {
  // x + 0 -> x can only fire on the root once its source (1 + -1) has folded to 0.
  PatternMatcher pm({
      {UPat::Var("x") + UPat::Val(0), [](const Match& m) { return m["x"]; }},
      {UPat::Cst("a") + UPat::Cst("b"),
       [](const Match& m) { return UOp::Int(*m["a"].ConstIntValue() + *m["b"].ConstIntValue()); }},
  });
  UOp x = UOp::Var("x", 0, 9);
  EXPECT_EQ(*GraphRewrite(x + (UOp::Int(1) + UOp::Int(-1)), pm), x);
}

TEST(GraphRewrite, DeepGraphsDoNotRecurse) {
  UOp x = UOp::Var("x", 0, 9);
  UOp e = x;
  for (int i = 0; i < 300000; ++i) e = e + 1;
  UOp out = *GraphRewrite(e, CountDown());
  UOp want = x;
  for (int i = 0; i < 300000; ++i) want = want + 0;
  EXPECT_EQ(out, want);
}

// x + 1 -> x - 1 and x - 1 -> x + 1 undo each other: the rewrite stops and names both.
TEST(GraphRewrite, RulesThatUndoEachOtherAreNamedNotLoopedOn) {
  PatternMatcher pm("flip", {
      {UPat::Var("x") + UPat::Val(1), [](const Match& m) { return m["x"] + -1; }},
      {UPat::Var("x") + UPat::Val(-1), [](const Match& m) { return m["x"] + 1; }},
  });
  absl::StatusOr<UOp> r = GraphRewrite(UOp::Var("x", 0, 9) + 1, pm);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "graph_rewrite: a node was rewritten 10000 times in a row; these rules keep undoing "
            "each other: flip[0], flip[1] (at add)");
}

TEST(GraphRewrite, RulesAreNamedByTheirTableAndPlace) {
  PatternMatcher a("a", {{UPat::Cst("c"), [](const Match&) { return UOp(); }}});
  PatternMatcher b("b", {{UPat::Cst("c"), [](const Match&) { return UOp(); }},
                         {UPat::Cst("c"), [](const Match&) { return UOp(); }}});
  PatternMatcher ab = a + b;
  EXPECT_EQ(ab.RuleName(0), "a[0]");
  EXPECT_EQ(ab.RuleName(2), "b[1]");
  EXPECT_EQ(PatternMatcher({{UPat::Cst("c"), [](const Match&) { return UOp(); }}}).RuleName(0),
            "rules[0]");
}

}  // namespace
}  // namespace uopc
