// Opts: the default heuristics, the search space and the checks, on kernels described by
// their loops alone.
#include "passes/opts.h"

#include <gtest/gtest.h>

namespace uopc {
namespace {

const Target kCpu = Target::ReferenceCpu();  // AVX-512: 32 registers of 16 floats

KernelLoops Matmul(int64_t m, int64_t n, int64_t k) {
  return {.outputs = {m, n}, .reduction = {k}, .reduces = true, .matmul = true, .shape = "(m, n)"};
}

KernelLoops Sums(std::vector<std::optional<int64_t>> outputs, int64_t k) {
  return {.outputs = std::move(outputs), .reduction = {k}, .reduces = true, .shape = "(...)"};
}

// A matmul takes the first register tile that divides it; without one, rows of sums.
TEST(Opts, DefaultsAreTheFirstRegisterTileThatFits) {
  EXPECT_EQ(OptsToString(DefaultOpts(Matmul(64, 96, 8), kCpu)), "upcast 0 8, upcast 1 48");
  EXPECT_EQ(OptsToString(DefaultOpts(Matmul(1024, 1024, 8), kCpu)), "upcast 0 8, upcast 1 32");
  EXPECT_EQ(OptsToString(DefaultOpts(Matmul(48, 128, 8), kCpu)), "upcast 0 6, upcast 1 64");
  EXPECT_EQ(OptsToString(DefaultOpts(Matmul(12, 40, 8), kCpu)), "group 0 4, group 1 40");
}

// Other reductions: the whole row (up to 512) or its largest power-of-two block of 16 or
// more (else its largest divisor of 16 to 512), and groups of 4 rows where 4 divides more
// than 4 rows.
TEST(Opts, DefaultsForOtherReductionsAreRowsOfSums) {
  EXPECT_EQ(OptsToString(DefaultOpts(Sums({64, 3}, 8), kCpu)), "group 0 4, group 1 3");
  EXPECT_EQ(OptsToString(DefaultOpts(Sums({4, 100}, 8), kCpu)), "group 1 100");
  EXPECT_EQ(OptsToString(DefaultOpts(Sums({8, 1536}, 8), kCpu)), "group 0 4, group 1 512");
  EXPECT_EQ(OptsToString(DefaultOpts(Sums({8, 1000}, 8), kCpu)), "group 0 4, group 1 500");
  // GPT-2's vocabulary, 29 x 1,733: blocks of 29 (not a sum per column, each read from
  // its own cache line); a prime has no block
  EXPECT_EQ(OptsToString(DefaultOpts(Sums({128, 50257}, 8), kCpu)), "group 0 4, group 1 29");
  EXPECT_EQ(OptsToString(DefaultOpts(Sums({8, 1009}, 8), kCpu)), "");
  EXPECT_EQ(OptsToString(DefaultOpts(Sums({8, std::nullopt}, 8), kCpu)), "");
  EXPECT_EQ(OptsToString(DefaultOpts({.outputs = {8, 8}, .shape = "(8, 8)"}, kCpu)), "");
}

// Sums that read along memory (a row's mean, a softmax's max): 4 rows at once, else 2, else
// one at a time, never a row of sums that reads across the rows.
TEST(Opts, SumsAlongMemoryComeAFewRowsAtOnce) {
  auto rows = [](std::vector<std::optional<int64_t>> outputs) {
    KernelLoops k = Sums(std::move(outputs), 128);
    k.sums_rows = true;
    return k;
  };
  EXPECT_EQ(OptsToString(DefaultOpts(rows({16, 64}), kCpu)), "group 1 4");
  EXPECT_EQ(OptsToString(DefaultOpts(rows({16, 1030}), kCpu)), "group 1 2");
  EXPECT_EQ(OptsToString(DefaultOpts(rows({16, 31}), kCpu)), "");
  EXPECT_EQ(OptsToString(DefaultOpts(rows({16, std::nullopt}), kCpu)), "");
  EXPECT_EQ(OptsToString(OptActions(rows({3, 64}), kCpu)),
            "group 1 4, group 1 16, group 1 64, unroll 0 4, unroll 0 8");
}

TEST(Opts, ActionsAreEverySingleChangeThatFits) {
  EXPECT_EQ(OptsToString(OptActions(Matmul(48, 96, 8), kCpu)),
            "upcast 1 16, upcast 1 32, upcast 1 48, upcast 0 4, upcast 0 6, "
            "upcast 0 8, group 1 16, group 1 96, group 0 2, group 0 4, group 0 8, unroll 0 4");
  EXPECT_EQ(OptsToString(OptActions(Sums({3, 64}, 64), kCpu)),
            "group 1 16, group 1 64, unroll 0 4, unroll 0 8");
  EXPECT_TRUE(OptActions({.outputs = {8, 8}}, kCpu).empty());
}

TEST(Opts, SplitsOfAListAreChecked) {
  const KernelLoops k = Matmul(48, 96, 8);
  absl::StatusOr<LoopSplits> s = SplitsOf(k, *ParseOpts("upcast 0 8, upcast 1 48, unroll 0 4"), kCpu);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_TRUE(s->registers);
  EXPECT_EQ(s->rows, 8);
  EXPECT_EQ(s->columns, 48);
  EXPECT_EQ(OptsToString(s->unrolls), "unroll 0 4");
  s = SplitsOf(k, *ParseOpts("group 1 16"), kCpu);
  ASSERT_TRUE(s.ok());
  EXPECT_FALSE(s->registers);
  EXPECT_EQ(s->rows, 0);
  EXPECT_EQ(s->columns, 16);
  EXPECT_EQ(SplitsOf(k, {}, kCpu).value().columns, 0);
  const absl::Status bad = SplitsOf(k, *ParseOpts("upcast 1 7"), kCpu).status();
  EXPECT_EQ(bad.message(),
            "schedule_opts: opt \"upcast 1 7\" does not apply to a kernel of shape (m, n): expected one "
            "of the last two output loops, of a constant length that AMOUNT (2 or more) divides");
  EXPECT_EQ(SplitsOf(k, *ParseOpts("upcast 1 96, upcast 0 8"), kCpu).status().message(),
            "schedule_opts: opts \"upcast 1 96, upcast 0 8\" hold more than 512 sums in registers");
  EXPECT_FALSE(SplitsOf({.outputs = {8}, .shape = "(8)"}, *ParseOpts("unroll 0 2"), kCpu).ok());
}

// On AVX2 (16 registers of 8 floats) the tiles that fit its registers: 4 x 24 first.
TEST(Opts, RegisterTilesFollowTheTargetsVectorRegisters) {
  absl::StatusOr<Target> avx2 =
      ParseTarget("class=cpu features=avx,avx2,fma vector_bits=256 registers=16 l1d=32K/8");
  ASSERT_TRUE(avx2.ok()) << avx2.status();
  EXPECT_EQ(OptsToString(DefaultOpts(Matmul(64, 96, 8), *avx2)), "upcast 0 4, upcast 1 24");
  EXPECT_EQ(OptsToString(DefaultOpts(Matmul(64, 32, 8), *avx2)), "upcast 0 4, upcast 1 16");
  EXPECT_EQ(OptsToString(DefaultOpts(Matmul(6, 16, 8), *avx2)), "upcast 0 6, upcast 1 16");
  EXPECT_EQ(OptsToString(DefaultOpts(Matmul(6, 16, 8), kCpu)), "group 1 16");  // (no 16-wide tile)
  EXPECT_EQ(SplitsOf(Matmul(64, 96, 8), *ParseOpts("upcast 0 8, upcast 1 24"), *avx2)
                .status()
                .message(),
            "schedule_opts: opts \"upcast 0 8, upcast 1 24\" hold more than 128 sums in registers");
  EXPECT_EQ(OptsToString(OptActions(Matmul(48, 96, 8), *avx2)),
            "upcast 1 8, upcast 1 16, upcast 1 24, upcast 1 32, upcast 0 4, upcast 0 6, "
            "upcast 0 8, group 1 16, group 1 96, group 0 2, group 0 4, group 0 8, unroll 0 4");
  // rows of sums from L1: a quarter of a 16 KiB L1 holds four rows of 256
  absl::StatusOr<Target> small = ParseTarget("class=cpu l1d=16K/4");
  ASSERT_TRUE(small.ok());
  EXPECT_EQ(OptsToString(DefaultOpts(Sums({8, 1536}, 8), *small)), "group 0 4, group 1 256");
}

// A GPU thread computes one output: no register tile or row of sums, whatever the kernel;
// a search may only unroll, and a CPU tile asked for is refused.
TEST(Opts, NoCpuTileReachesAGpuKernel) {
  const Target gpu = Target::ReferenceGpu();
  for (const KernelLoops& k : {Matmul(64, 96, 8), Matmul(1024, 1024, 1024), Sums({64, 3}, 8),
                               Sums({8, 1536}, 8), Sums({8, std::nullopt}, 8)})
    EXPECT_EQ(OptsToString(DefaultOpts(k, gpu)), "") << k.shape;
  EXPECT_EQ(OptsToString(OptActions(Matmul(48, 96, 64), gpu)), "unroll 0 4, unroll 0 8");
  EXPECT_EQ(SplitsOf(Matmul(64, 96, 8), *ParseOpts("upcast 0 8, upcast 1 48"), gpu)
                .status()
                .message(),
            "schedule_opts: opt \"upcast 0 8\" does not apply to a kernel of shape (m, n): a GPU "
            "kernel computes one output a thread (unrolls only)");
  EXPECT_TRUE(SplitsOf(Matmul(64, 96, 8), *ParseOpts("unroll 0 4"), gpu).ok());
}

}  // namespace
}  // namespace uopc
