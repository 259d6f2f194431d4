// The conformance suite on the C backend plugin, loaded through the real loader.
#include "tests/backends/conformance/conformance.h"

#include <algorithm>
#include <iostream>

#include <gtest/gtest.h>

#include "devices/registry.h"

namespace uopc {
namespace {

TEST(Conformance, CBackendPassesEverything) {
  absl::StatusOr<Device*> d = DeviceRegistry::Get().GetDevice("CPU:0");
  absl::StatusOr<Device*> peer = DeviceRegistry::Get().GetDevice("CPU:1");  // UOPC_CPU_DEVICES
  ASSERT_TRUE(d.ok()) << d.status();
  ASSERT_TRUE(peer.ok()) << peer.status();
  ConformanceOptions o;
  o.peer = *peer;
  ConformanceReport r = RunConformance(**d, o);
  for (const ConformanceCase& c : r.cases)
    if (c.status == ConformanceCase::kFail)
      ADD_FAILURE() << c.section << ": " << c.name << ": " << c.detail;
  std::cout << r.matrix << r.passed << " passed, " << r.failed << " failed, " << r.skipped
            << " skipped\n";
  EXPECT_EQ(r.failed, 0);
  EXPECT_EQ(r.skipped, 0);  // the C backend supports every loop-level op, dtype and call
  EXPECT_GT(r.passed, 350);
  for (const char* section : {"launch", "queues", "peers"})
    EXPECT_TRUE(std::any_of(r.cases.begin(), r.cases.end(), [&](const ConformanceCase& c) {
      return c.section == section;
    })) << section;
}

}  // namespace
}  // namespace uopc
