// UOPC_TRACE in a folder that cannot be written (the BUILD rule's /proc/uopc-no-dir) is said
// when tracing starts, and nothing is traced, instead of the trace being lost at exit.
#include <gtest/gtest.h>

#include "core/trace.h"

namespace uopc::trace {
namespace {

TEST(Trace, AnUnwritableTraceIsSaidAtTheStart) {
  ::testing::internal::CaptureStderr();
  EXPECT_FALSE(Enabled());
  EXPECT_EQ(::testing::internal::GetCapturedStderr().rfind(
                "uopc: UOPC_TRACE=/proc/uopc-no-dir/t.json: its folder /proc/uopc-no-dir/ "
                "cannot be written (",
                0),
            0u);
  EXPECT_TRUE(Flush().ok());
}

}  // namespace
}  // namespace uopc::trace
