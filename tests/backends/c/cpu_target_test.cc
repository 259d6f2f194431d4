// backends/c/cpu_target.h: the CPU's target is read from the machine: its features are
// those Linux reports for it, its caches those of sysfs, and the C plugin's devices give it.
#include "backends/c/cpu_target.h"

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <gtest/gtest.h>

#include "absl/strings/str_split.h"

#include "devices/registry.h"

namespace uopc {
namespace {

// The "flags" line of /proc/cpuinfo, as a set.
std::set<std::string> CpuinfoFlags() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("flags", 0) == 0) {
      std::set<std::string> flags;
      for (absl::string_view f : absl::StrSplit(line.substr(line.find(':') + 1), ' ', absl::SkipEmpty()))
        flags.emplace(f);
      return flags;
    }
  return {};
}

TEST(CpuTarget, FeaturesAreThoseLinuxReports) {
  const std::set<std::string> flags = CpuinfoFlags();
  if (flags.empty()) GTEST_SKIP() << "no /proc/cpuinfo flags here";
  const Target t = HostCpuTarget();
  for (const std::string& f : t.features) EXPECT_TRUE(flags.contains(f)) << f;
  // and the other way round, for the features it knows
  for (const char* f : {"avx", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl",
                        "avx512_bf16", "avx512_fp16", "amx_tile", "amx_bf16", "amx_int8"})
    EXPECT_EQ(t.Has(f), flags.contains(f)) << f;
  EXPECT_EQ(t.vector_bits, t.Has("avx512f") ? 512 : t.Has("avx") ? 256 : 128);
  EXPECT_EQ(t.registers, t.Has("avx512f") ? 32 : 16);
  EXPECT_EQ(t.matrix_units.empty(), !t.Has("amx_bf16"));
  EXPECT_GE(t.cores, 1);
}

void Write(const std::filesystem::path& p, const std::string& text) {
  std::filesystem::create_directories(p.parent_path());
  std::ofstream(p) << text << "\n";
}

TEST(CpuTarget, CachesAreReadFromSysfs) {
  const std::filesystem::path root = std::filesystem::path(std::getenv("TEST_TMPDIR")) / "cpu";
  const std::filesystem::path cache = root / "cpu0" / "cache";
  const char* caches[][4] = {{"1", "Data", "48K", "12"},
                             {"1", "Instruction", "32K", "8"},
                             {"2", "Unified", "2048K", "16"},
                             {"3", "Unified", "105M", "15"}};
  for (int i = 0; i < 4; ++i) {
    const std::filesystem::path d = cache / ("index" + std::to_string(i));
    Write(d / "level", caches[i][0]);
    Write(d / "type", caches[i][1]);
    Write(d / "size", caches[i][2]);
    Write(d / "ways_of_associativity", caches[i][3]);
  }
  const Target t = HostCpuTarget(root.string());
  EXPECT_EQ(t.l1d_bytes, 48 << 10);
  EXPECT_EQ(t.l1d_ways, 12);
  EXPECT_EQ(t.l2_bytes, 2 << 20);
  EXPECT_EQ(t.l3_bytes, int64_t{105} << 20);
  EXPECT_EQ(t.L1SetStride(), 4096);
  // where sysfs has nothing, the reference CPU's caches
  const Target none = HostCpuTarget((root / "missing").string());
  EXPECT_EQ(none.l1d_bytes, Target::ReferenceCpu().l1d_bytes);
  EXPECT_EQ(none.l2_bytes, Target::ReferenceCpu().l2_bytes);
}

TEST(CpuTarget, TheCPluginsDevicesDescribeIt) {
  absl::StatusOr<Device*> d = DeviceRegistry::Get().GetDevice("CPU:0");
  ASSERT_TRUE(d.ok()) << d.status();
  Target t = (*d)->target();
  t.kernels.clear();  // (what the plugin supplies for it: matmul_kernels_test)
  EXPECT_EQ(t, HostCpuTarget()) << t.ToString();
}

}  // namespace
}  // namespace uopc
