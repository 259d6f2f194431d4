// The kernel search on the C plugin's CPU:0: a matmul's forms timed once, the choice kept
// on disk (a fresh folder per test) and read back by a later search, a bad entry searched
// again, and a spent budget keeping the default.
#include "runtime/kernel_search.h"

#include <filesystem>

#include <gtest/gtest.h>

#include "core/file.h"
#include "core/uir.h"
#include "passes/pipeline.h"
#include "runtime/plan_cache.h"

namespace uopc {
namespace {

// (64 x 72) @ (72 x 192) on CPU:0: register tiles 8x48, 8x32, 4x64, 4x48 and 4x32 fit it,
// and rows of sums: 6 forms
constexpr const char* kMatmul =
    "%0 = buffer 4608 : dtype=f32 slot=0 device=CPU:0\n"
    "%1 = buffer 13824 : dtype=f32 slot=1 device=CPU:0\n"
    "%2 = reshape %0, 64, 72, 1\n%3 = expand %2, 64, 72, 192\n%4 = reshape %1, 1, 72, 192\n"
    "%5 = expand %4, 64, 72, 192\n%6 = mul %3, %5\n%7 = reduce %6 : op=add axes=1\n"
    "%8 = reshape %7, 64, 192\n%9 = sink %8\n";

// A fresh cache root for one test.
std::string FreshRoot() {
  const testing::TestInfo* t = testing::UnitTest::GetInstance()->current_test_info();
  std::string root = testing::TempDir() + "/search_" + t->name();
  std::filesystem::remove_all(root);
  return root;
}

// The matmul's plan, its forms chosen by `search`; the number of forms it was offered.
Plan Lowered(KernelSearch& search, size_t* forms) {
  PassContext ctx;
  ctx.choose_form = [&](const std::vector<UOp>& f) {
    *forms = f.size();
    return search.Choose(f);
  };
  CanonicalGraph c = Canonicalize(*ParseUir(kMatmul));
  PassManager pm = LoweringPipeline();
  absl::StatusOr<Plan> p = Lower(c.sink, static_cast<int>(c.inputs.size()), pm, ctx);
  EXPECT_TRUE(p.ok()) << p.status();
  return p.ok() ? *p : Plan{};
}

TEST(KernelSearch, TimesAKernelsFormsOnceAndRemembersTheChoice) {
  const std::string root = FreshRoot();
  KernelSearch first(DeviceRegistry::Get(), {.beam = 3, .cache_root = root});
  size_t forms = 0;
  const Plan a = Lowered(first, &forms);
  EXPECT_EQ(forms, 6u);
  EXPECT_EQ(first.stats().searched, 1);
  EXPECT_EQ(first.stats().forms_timed, 3);  // the beam's 3, the default first
  EXPECT_EQ(first.stats().remembered, 0);
  EXPECT_GT(first.stats().seconds, 0);
  // a later search (another run) reads the choice: no timing, the same kernel
  KernelSearch second(DeviceRegistry::Get(), {.beam = 3, .cache_root = root});
  const Plan b = Lowered(second, &forms);
  EXPECT_EQ(second.stats().searched, 0);
  EXPECT_EQ(second.stats().forms_timed, 0);
  EXPECT_EQ(second.stats().remembered, 1);
  ASSERT_EQ(a.kernels().size(), 1u);
  ASSERT_EQ(b.kernels().size(), 1u);
  EXPECT_EQ(a.kernels()[0]->ast, b.kernels()[0]->ast);
}

TEST(KernelSearch, ABadEntryIsSearchedAgainAndRewritten) {
  const std::string root = FreshRoot();
  size_t forms = 0;
  {
    KernelSearch search(DeviceRegistry::Get(), {.beam = 2, .cache_root = root});
    Lowered(search, &forms);
  }
  std::vector<std::string> entries;
  for (const auto& e : std::filesystem::directory_iterator(root + "/search"))
    entries.push_back(e.path());
  ASSERT_EQ(entries.size(), 1u);
  for (const char* bad : {"forms 6 best 9\n", "forms 5 best 1\n", "garbage", ""}) {
    ASSERT_TRUE(WriteFileAtomic(entries[0], {bad}).ok());
    KernelSearch search(DeviceRegistry::Get(), {.beam = 2, .cache_root = root});
    Lowered(search, &forms);
    EXPECT_EQ(search.stats().searched, 1) << bad;
    EXPECT_EQ(search.stats().remembered, 0) << bad;
    absl::StatusOr<std::string> text = ReadFile(entries[0]);
    ASSERT_TRUE(text.ok());
    EXPECT_TRUE(*text == "forms 6 best 0\n" || *text == "forms 6 best 1\n") << *text;
  }
}

TEST(KernelSearch, PastItsBudgetAKernelKeepsItsDefaultFormAndNothingIsKept) {
  const std::string root = FreshRoot();
  KernelSearch search(DeviceRegistry::Get(), {.beam = 3, .cache_root = root, .budget_seconds = 0});
  size_t forms = 0;
  const Plan p = Lowered(search, &forms);
  EXPECT_EQ(search.stats().searched, 0);
  EXPECT_FALSE(std::filesystem::exists(root + "/search") &&
               !std::filesystem::is_empty(root + "/search"));
  PassManager pm = LoweringPipeline();
  CanonicalGraph c = Canonicalize(*ParseUir(kMatmul));
  absl::StatusOr<Plan> plain = Lower(c.sink, static_cast<int>(c.inputs.size()), pm);
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(p.kernels()[0]->ast, plain->kernels()[0]->ast);
}

}  // namespace
}  // namespace uopc
