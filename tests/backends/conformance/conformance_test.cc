// The conformance suite on the C backend plugin, loaded through the real loader.
#include "tests/backends/conformance/conformance.h"

#include <algorithm>
#include <iostream>

#include <gtest/gtest.h>

#include "devices/registry.h"

namespace uopc {
namespace {

// The suite on device `name`, with `peer` for its peer copies; each failure reported.
ConformanceReport RunOn(const char* name, const char* peer) {
  absl::StatusOr<Device*> d = DeviceRegistry::Get().GetDevice(name);
  absl::StatusOr<Device*> p = DeviceRegistry::Get().GetDevice(peer);
  if (!d.ok() || !p.ok()) {
    ADD_FAILURE() << (d.ok() ? p.status() : d.status());
    return {};
  }
  ConformanceOptions o;
  o.peer = *p;
  ConformanceReport r = RunConformance(**d, o);
  for (const ConformanceCase& c : r.cases)
    if (c.status == ConformanceCase::kFail)
      ADD_FAILURE() << c.section << ": " << c.name << ": " << c.detail;
  std::cout << r.matrix << r.passed << " passed, " << r.failed << " failed, " << r.skipped
            << " skipped\n";
  return r;
}

TEST(Conformance, CBackendPassesEverything) {
  ConformanceReport r = RunOn("CPU:0", "CPU:1");  // (UOPC_CPU_DEVICES, from the BUILD rule)
  EXPECT_EQ(r.failed, 0);
  EXPECT_EQ(r.skipped, 0);  // the C backend supports every loop-level op, dtype and call
  EXPECT_GT(r.passed, 350);
  for (const char* section : {"launch", "queues", "peers"})
    EXPECT_TRUE(std::any_of(r.cases.begin(), r.cases.end(), [&](const ConformanceCase& c) {
      return c.section == section;
    })) << section;
}

// EMU:0 (UOPC_CPU_EMULATE, from the BUILD rule): the kernels an sm_90 GPU gets, run here; its
// launch cases are mapped to blocks of threads as a GPU's are.
TEST(Conformance, TheEmulatedGpuPassesEverything) {
  ASSERT_TRUE((*DeviceRegistry::Get().GetDevice("EMU:0"))->target().IsGpu());
  ConformanceReport r = RunOn("EMU:0", "CPU:0");
  EXPECT_EQ(r.failed, 0);
  EXPECT_EQ(r.skipped, 0);
  EXPECT_GT(r.passed, 350);
}

}  // namespace
}  // namespace uopc
