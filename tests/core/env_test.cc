// core/env.h: every environment variable parsed one way; a bad value is one line naming it
// and what it accepts, and counts as unset (never half read).
#include "core/env.h"

#include <cstdlib>

#include <gtest/gtest.h>

#include "core/pass_manager.h"

namespace uopc {
namespace {

TEST(Env, IntegersInARange) {
  unsetenv("UOPC_T_INT");
  EXPECT_EQ(EnvInt("UOPC_T_INT", 0, 9, 4), 4);
  setenv("UOPC_T_INT", "7", 1);
  EXPECT_EQ(EnvInt("UOPC_T_INT", 0, 9, 4), 7);
  for (const char* bad : {"2x", "10", "-1", "", "9223372036854775808"}) {
    setenv("UOPC_T_INT", bad, 1);
    EXPECT_EQ(EnvInt("UOPC_T_INT", 0, 9, 4), 4) << bad;
  }
  setenv("UOPC_T_INT2", "x", 1);
  ::testing::internal::CaptureStderr();
  EnvInt("UOPC_T_INT2", 0, 9, 0);
  EnvInt("UOPC_T_INT2", 0, 9, 0);  // (said once)
  EXPECT_EQ(::testing::internal::GetCapturedStderr(),
            "uopc: UOPC_T_INT2=x is not an integer from 0 to 9; ignored\n");
}

TEST(Env, Booleans) {
  for (const char* on : {"1", "true", "YES", " on"}) {
    setenv("UOPC_T_BOOL", on, 1);
    EXPECT_TRUE(EnvBool("UOPC_T_BOOL", false)) << on;
  }
  for (const char* off : {"0", "false", "no", "OFF"}) {
    setenv("UOPC_T_BOOL", off, 1);
    EXPECT_FALSE(EnvBool("UOPC_T_BOOL", true)) << off;
  }
  setenv("UOPC_T_BOOL", "2", 1);  // neither: the default
  EXPECT_TRUE(EnvBool("UOPC_T_BOOL", true));
  EXPECT_FALSE(EnvBool("UOPC_T_BOOL", false));
}

TEST(Env, NamesFromAList) {
  setenv("UOPC_T_NAMES", "a, c,zz", 1);
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(EnvNames("UOPC_T_NAMES", {"a", "b", "c"}), (std::vector<std::string>{"a", "c"}));
  EXPECT_EQ(::testing::internal::GetCapturedStderr(),
            "uopc: UOPC_T_NAMES=a, c,zz is not a comma-separated list of a, b, c (zz unknown); "
            "ignored\n");
  EXPECT_EQ(EnvNames("UOPC_T_NAMES", {}).size(), 3u);  // (any name)
}

// UOPC_PRINT_AFTER naming no pass says so, with the passes there are.
TEST(Env, PrintAfterAPassThereIsNot) {
  setenv("UOPC_PRINT_AFTER", "kernelise", 1);
  PassManager pm;
  pm.Add(MakePass("first", [](const UOp& g, const PassContext&) -> absl::StatusOr<UOp> { return g; }));
  ::testing::internal::CaptureStderr();
  ASSERT_TRUE(pm.Run(UOp::Sink({UOp::Int(1)})).ok());
  EXPECT_NE(::testing::internal::GetCapturedStderr().find(
                "uopc: UOPC_PRINT_AFTER=kernelise is not a comma-separated list of first"),
            std::string::npos);
  unsetenv("UOPC_PRINT_AFTER");
}

}  // namespace
}  // namespace uopc
