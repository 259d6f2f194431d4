// A UOPC_BEAM that is not a beam width (the BUILD rule sets "2x", or one past the i32
// range) means no search, as its warning says: a failed parse read a width of 2 before.
#include <gtest/gtest.h>

#include "frontend/realize.h"

namespace uopc {
namespace {

TEST(BeamEnvironment, ABadWidthMeansNoSearch) {
  EXPECT_EQ(Runtime::Get().search(), nullptr) << std::getenv("UOPC_BEAM");
}

}  // namespace
}  // namespace uopc
