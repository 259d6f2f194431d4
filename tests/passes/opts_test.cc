// Opts: the default heuristics, the search space and the checks, on kernels described by
// their loops alone.
#include "passes/opts.h"

#include <gtest/gtest.h>

namespace uopc {
namespace {

KernelLoops Matmul(int64_t m, int64_t n, int64_t k) {
  return {.outputs = {m, n}, .reduction = {k}, .reduces = true, .matmul = true, .shape = "(m, n)"};
}

KernelLoops Sums(std::vector<std::optional<int64_t>> outputs, int64_t k) {
  return {.outputs = std::move(outputs), .reduction = {k}, .reduces = true, .shape = "(...)"};
}

// A matmul takes the first register tile that divides it; without one, rows of sums.
TEST(Opts, DefaultsAreTheFirstRegisterTileThatFits) {
  EXPECT_EQ(OptsToString(DefaultOpts(Matmul(64, 96, 8))), "upcast 0 8, upcast 1 48");
  EXPECT_EQ(OptsToString(DefaultOpts(Matmul(1024, 1024, 8))), "upcast 0 8, upcast 1 32");
  EXPECT_EQ(OptsToString(DefaultOpts(Matmul(48, 128, 8))), "upcast 0 6, upcast 1 64");
  EXPECT_EQ(OptsToString(DefaultOpts(Matmul(12, 40, 8))), "group 0 4, group 1 40");
}

// Other reductions: the whole row (up to 512) or its largest power-of-two block of 16 or
// more, and groups of 4 rows where 4 divides more than 4 rows.
TEST(Opts, DefaultsForOtherReductionsAreRowsOfSums) {
  EXPECT_EQ(OptsToString(DefaultOpts(Sums({64, 3}, 8))), "group 0 4, group 1 3");
  EXPECT_EQ(OptsToString(DefaultOpts(Sums({4, 100}, 8))), "group 1 100");
  EXPECT_EQ(OptsToString(DefaultOpts(Sums({8, 1536}, 8))), "group 0 4, group 1 512");
  EXPECT_EQ(OptsToString(DefaultOpts(Sums({8, 1000}, 8))), "");  // (8 is the largest block)
  EXPECT_EQ(OptsToString(DefaultOpts(Sums({8, std::nullopt}, 8))), "");
  EXPECT_EQ(OptsToString(DefaultOpts({.outputs = {8, 8}, .shape = "(8, 8)"})), "");
}

TEST(Opts, ActionsAreEverySingleChangeThatFits) {
  EXPECT_EQ(OptsToString(OptActions(Matmul(48, 96, 8))),
            "upcast 1 16, upcast 1 32, upcast 1 48, upcast 0 4, upcast 0 6, "
            "upcast 0 8, group 1 16, group 1 96, group 0 2, group 0 4, group 0 8, unroll 0 4");
  EXPECT_EQ(OptsToString(OptActions(Sums({3, 64}, 64))),
            "group 1 16, group 1 64, unroll 0 4, unroll 0 8");
  EXPECT_TRUE(OptActions({.outputs = {8, 8}}).empty());
}

TEST(Opts, SplitsOfAListAreChecked) {
  const KernelLoops k = Matmul(48, 96, 8);
  absl::StatusOr<LoopSplits> s = SplitsOf(k, *ParseOpts("upcast 0 8, upcast 1 48, unroll 0 4"));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_TRUE(s->registers);
  EXPECT_EQ(s->rows, 8);
  EXPECT_EQ(s->columns, 48);
  EXPECT_EQ(OptsToString(s->unrolls), "unroll 0 4");
  s = SplitsOf(k, *ParseOpts("group 1 16"));
  ASSERT_TRUE(s.ok());
  EXPECT_FALSE(s->registers);
  EXPECT_EQ(s->rows, 0);
  EXPECT_EQ(s->columns, 16);
  EXPECT_EQ(SplitsOf(k, {}).value().columns, 0);
  const absl::Status bad = SplitsOf(k, *ParseOpts("upcast 1 7")).status();
  EXPECT_EQ(bad.message(),
            "rangeify: opt \"upcast 1 7\" does not apply to a kernel of shape (m, n): expected one "
            "of the last two output loops, of a constant length that AMOUNT (2 or more) divides");
  EXPECT_EQ(SplitsOf(k, *ParseOpts("upcast 1 96, upcast 0 8")).status().message(),
            "rangeify: opts \"upcast 1 96, upcast 0 8\" hold more than 512 sums in registers");
  EXPECT_FALSE(SplitsOf({.outputs = {8}, .shape = "(8)"}, *ParseOpts("unroll 0 2")).ok());
}

}  // namespace
}  // namespace uopc
