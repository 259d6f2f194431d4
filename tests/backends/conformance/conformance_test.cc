// The conformance suite on the C backend plugin, loaded through the real loader.
#include "tests/backends/conformance/conformance.h"

#include <iostream>

#include <gtest/gtest.h>

#include "devices/registry.h"

namespace uopc {
namespace {

TEST(Conformance, CBackendPassesEverything) {
  absl::StatusOr<Device*> d = DeviceRegistry::Get().GetDevice("CPU");
  ASSERT_TRUE(d.ok()) << d.status();
  ConformanceReport r = RunConformance(**d);
  for (const ConformanceCase& c : r.cases)
    if (c.status == ConformanceCase::kFail)
      ADD_FAILURE() << c.section << ": " << c.name << ": " << c.detail;
  std::cout << r.matrix << r.passed << " passed, " << r.failed << " failed, " << r.skipped
            << " skipped\n";
  EXPECT_EQ(r.failed, 0);
  EXPECT_EQ(r.skipped, 0);  // the C backend supports every loop-level op and dtype
  EXPECT_GT(r.passed, 350);
}

}  // namespace
}  // namespace uopc
