// The kernel search on the C plugin's CPU:0: a matmul's action lists timed once, the choice
// kept on disk (a fresh folder per test) and read back by a later search, a bad entry
// searched again, and a spent budget keeping the defaults.
#include "runtime/kernel_search.h"

#include <filesystem>

#include <gtest/gtest.h>

#include "core/file.h"
#include "core/uir.h"
#include "passes/pipeline.h"
#include "runtime/plan_cache.h"

namespace uopc {
namespace {

// (192 x 256) @ (256 x 96) on CPU:0 (about 0.1 ms a run: worth searching; one kernel on
// every CPU: b's rows, 384 bytes apart, fall in half the L1's sets, which hold 256 lines,
// so it is read as it lies)
constexpr const char* kMatmul =
    "%0 = buffer 49152 : dtype=f32 slot=0 device=CPU:0\n"
    "%1 = buffer 24576 : dtype=f32 slot=1 device=CPU:0\n"
    "%2 = reshape %0, 192, 256, 1\n%3 = expand %2, 192, 256, 96\n%4 = reshape %1, 1, 256, 96\n"
    "%5 = expand %4, 192, 256, 96\n%6 = mul %3, %5\n%7 = reduce %6 : op=add axes=1\n"
    "%8 = reshape %7, 192, 96\n%9 = sink %8\n";

// A fresh cache root for one test.
std::string FreshRoot() {
  const testing::TestInfo* t = testing::UnitTest::GetInstance()->current_test_info();
  std::string root = testing::TempDir() + "/search_" + t->name();
  std::filesystem::remove_all(root);
  return root;
}

// The matmul's plan, its actions chosen by `search`; the choice, as text.
Plan Lowered(KernelSearch& search, std::string* chosen) {
  PassContext ctx;
  ctx.choose_opts = [&](const OptSpace& space) {
    std::vector<Opt> opts = search.Choose(space);
    EXPECT_TRUE(space.build(opts).ok()) << OptsToString(opts);
    *chosen = OptsToString(opts);
    return opts;
  };
  CanonicalGraph c = Canonicalize(*ParseUir(kMatmul));
  PassManager pm = LoweringPipeline();
  absl::StatusOr<Plan> p = Lower(c.sink, static_cast<int>(c.inputs.size()), pm, ctx);
  EXPECT_TRUE(p.ok()) << p.status();
  return p.ok() ? *p : Plan{};
}

// The matmul's plan with the defaults.
Plan Plain() {
  PassManager pm = LoweringPipeline();
  CanonicalGraph c = Canonicalize(*ParseUir(kMatmul));
  absl::StatusOr<Plan> plain = Lower(c.sink, static_cast<int>(c.inputs.size()), pm);
  EXPECT_TRUE(plain.ok());
  return plain.ok() ? *plain : Plan{};
}

TEST(KernelSearch, SearchesAKernelOnceAndRemembersTheChoice) {
  const std::string root = FreshRoot();
  KernelSearch first(DeviceRegistry::Get(), {.beam = 1, .cache_root = root});
  std::string chosen;
  const Plan a = Lowered(first, &chosen);
  EXPECT_EQ(first.stats().searched, 1);
  // the defaults and none, then each single change of the fastest, for one round or more
  // (how many of the 13 changes give a kernel not timed already depends on which was
  // fastest: timing, so only the round itself is certain)
  EXPECT_GT(first.stats().timed, 2);
  EXPECT_EQ(first.stats().remembered, 0);
  EXPECT_GT(first.stats().seconds, 0);
  // a later search (another run) reads the choice: no timing, the same kernel
  KernelSearch second(DeviceRegistry::Get(), {.beam = 1, .cache_root = root});
  std::string again;
  const Plan b = Lowered(second, &again);
  EXPECT_EQ(again, chosen);
  EXPECT_EQ(second.stats().searched, 0);
  EXPECT_EQ(second.stats().timed, 0);
  EXPECT_EQ(second.stats().remembered, 1);
  ASSERT_EQ(a.kernels().size(), 1u);
  ASSERT_EQ(b.kernels().size(), 1u);
  EXPECT_EQ(a.kernels()[0]->ast, b.kernels()[0]->ast);
}

TEST(KernelSearch, ABadEntryIsSearchedAgainAndRewritten) {
  const std::string root = FreshRoot();
  std::string chosen;
  {
    KernelSearch search(DeviceRegistry::Get(), {.beam = 1, .cache_root = root});
    Lowered(search, &chosen);
  }
  std::vector<std::string> entries;
  for (const auto& e : std::filesystem::directory_iterator(root + "/search"))
    entries.push_back(e.path());
  ASSERT_EQ(entries.size(), 1u);
  for (const char* bad :
       {"opts: upcast 1 7\n", "opts: tile 0 8\n", "forms 6 best 1\n", "garbage", ""}) {
    ASSERT_TRUE(WriteFileAtomic(entries[0], {bad}).ok());
    KernelSearch search(DeviceRegistry::Get(), {.beam = 1, .cache_root = root});
    Lowered(search, &chosen);
    EXPECT_EQ(search.stats().searched, 1) << bad;
    EXPECT_EQ(search.stats().remembered, 0) << bad;
    absl::StatusOr<std::string> text = ReadFile(entries[0]);
    ASSERT_TRUE(text.ok());
    EXPECT_EQ(*text, "opts: " + chosen + "\n");
  }
}

TEST(KernelSearch, PastItsBudgetAKernelKeepsItsDefaultsAndNothingIsKept) {
  const std::string root = FreshRoot();
  KernelSearch search(DeviceRegistry::Get(), {.beam = 3, .cache_root = root, .budget_seconds = 0});
  std::string chosen;
  const Plan p = Lowered(search, &chosen);
  EXPECT_EQ(search.stats().searched, 0);
  EXPECT_FALSE(std::filesystem::exists(root + "/search") &&
               !std::filesystem::is_empty(root + "/search"));
  EXPECT_EQ(p.kernels()[0]->ast, Plain().kernels()[0]->ast);
}

}  // namespace
}  // namespace uopc
