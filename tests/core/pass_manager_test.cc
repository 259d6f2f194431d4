#include "core/pass_manager.h"

#include <cstdlib>

#include <gtest/gtest.h>

#include "core/uir.h"

namespace uopc {
namespace {

// x -> x + 1 on the root
std::unique_ptr<Pass> AddOne(const std::string& name) {
  return MakePass(name,
                  [](const UOp& g, const PassContext&) -> absl::StatusOr<UOp> { return g + 1; });
}

TEST(PassManager, RunsPassesInOrderAndTimesThem) {
  PassManager pm;
  pm.Add(AddOne("first"));
  pm.Add(MakePass("double",
                  [](const UOp& g, const PassContext&) -> absl::StatusOr<UOp> { return g * 2; }));
  UOp x = UOp::Var("x", 0, 9);
  absl::StatusOr<UOp> out = pm.Run(x);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(*out, (x + 1) * 2);
  ASSERT_EQ(pm.timings().size(), 2u);
  EXPECT_EQ(pm.timings()[0].pass, "first");
  EXPECT_EQ(pm.timings()[1].runs, 1);
}

TEST(PassManager, InsertsBeforeAndAfterNamedPasses) {
  PassManager pm;
  pm.Add(AddOne("a"));
  pm.Add(AddOne("c"));
  ASSERT_TRUE(pm.InsertAfter("a", AddOne("b")).ok());
  ASSERT_TRUE(pm.InsertBefore("a", AddOne("start")).ok());
  EXPECT_EQ(pm.names(), (std::vector<std::string>{"start", "a", "b", "c"}));
  EXPECT_EQ(pm.InsertAfter("zzz", AddOne("d")).message(),
            "no pass 'zzz' in the pipeline (start, a, b, c)");
}

TEST(PassManager, VerificationNamesThePassThatBrokeTheGraph) {
  PassManager pm;
  pm.set_verify(true);
  pm.Add(AddOne("fine"));
  pm.Add(MakePass("breaks", [](const UOp& g, const PassContext&) -> absl::StatusOr<UOp> {
    return UOp::Make(Ops::ADD, DType::kF32, {g, g});  // a dtype the sources do not give
  }));
  absl::StatusOr<UOp> out = pm.Run(UOp::Var("x", 0, 9));
  EXPECT_EQ(out.status().message(),
            "pass breaks produced an invalid graph: add (f32, operands i32 (), i32 ()): dtype f32; "
            "expected dtype i32 "
            "(derived from the sources)");
}

TEST(PassManager, AFailingPassIsNamed) {
  PassManager pm;
  pm.Add(MakePass("refuses", [](const UOp&, const PassContext&) -> absl::StatusOr<UOp> {
    return absl::UnimplementedError("not today");
  }));
  EXPECT_EQ(pm.Run(UOp::Int(1)).status().message(), "pass refuses: not today");
}

TEST(PassManager, PrintsTheGraphAfterANamedPass) {
  setenv("UOPC_PRINT_AFTER", "second", 1);
  PassManager pm;
  pm.Add(AddOne("first"));
  pm.Add(AddOne("second"));
  testing::internal::CaptureStderr();
  ASSERT_TRUE(pm.Run(UOp::Var("x", 0, 9)).ok());
  std::string err = testing::internal::GetCapturedStderr();
  unsetenv("UOPC_PRINT_AFTER");
  EXPECT_EQ(err, "== after second\n%0 = var : name=x lo=0 hi=9\n%1 = add %0, 1\n%2 = add %1, 1\n");
}

TEST(PassRegistry, PluginsRegisterPassesByName) {
  PassRegistry::Get().Register("plugin_pass", [] { return AddOne("plugin_pass"); });
  absl::StatusOr<std::unique_ptr<Pass>> p = PassRegistry::Get().Create("plugin_pass");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ((*p)->name(), "plugin_pass");
  EXPECT_EQ(PassRegistry::Get().Create("nope").status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace uopc
