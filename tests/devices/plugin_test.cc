// Loading plugins: every way one can fail has its own message; the registry repeats the
// reason when the device is asked for; UOPC_DEVICES fails loudly.
#include "devices/plugin.h"

#include <cstdlib>

#include <gtest/gtest.h>

#include "devices/registry.h"
#include "tests/backends/conformance/conformance.h"

namespace uopc {
namespace {

std::string Fake(const std::string& variant) {
  return std::string(std::getenv("TEST_SRCDIR")) + "/uopc/tests/devices/libuopc_plugin_fake_" +
         variant + ".so";
}

std::string Fake2(const std::string& variant) {
  return std::string(std::getenv("TEST_SRCDIR")) + "/uopc/tests/devices/libuopc_plugin_fake2_" +
         variant + ".so";
}

std::string LoadError(const std::string& path) {
  absl::StatusOr<std::unique_ptr<Plugin>> p = Plugin::Load(path);
  EXPECT_FALSE(p.ok());
  return p.ok() ? "" : std::string(p.status().message());
}

TEST(Plugin, LoadsAMinimalPluginOfABI1WrittenInC) {
  absl::StatusOr<std::unique_ptr<Plugin>> p = Plugin::Load(Fake("minimal"));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ((*p)->name(), "fake");
  EXPECT_EQ((*p)->Version(), "0.1 (ABI 1.5, uop format 1)");
}

TEST(Plugin, LoadsAPluginOfABI2WrittenInCAgainstTheHeaderAlone) {
  absl::StatusOr<std::unique_ptr<Plugin>> p = Plugin::Load(Fake2("minimal"));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ((*p)->Version(), "0.2 (ABI 2.1, uop format 1)");
  // the optional calls it leaves NULL are absent: UNIMPLEMENTED naming them, never called
  EXPECT_EQ((*p)->AbsentCalls(),
            (std::vector<std::string>{"initialize", "shutdown", "backend_count", "backend_get",
                                      "backend_describe", "backend_supports", "backend_target",
                                      "render", "compile", "memory_info", "buffer_address",
                                      "buffer_wrap", "copy", "program_load", "program_unload",
                                      "launch", "event_query", "kernel_launch"}));
  uopc_memory_info_args m{};
  absl::Status s = (*p)->Call(&m);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented);
  EXPECT_EQ(s.message(), "plugin fake2 (ABI 2.1) has no memory_info");
}

TEST(Device, APluginOfABI2Works) {
  DiscoveryOptions o;
  o.paths = {Fake2("minimal")};
  auto r = DeviceRegistry::Discover(o);
  absl::StatusOr<Device*> d = r->GetDevice("FAKE2:0");
  ASSERT_TRUE(d.ok()) << d.status();
  Buffer b = *(*d)->Allocate(DType::kI32, 3);
  int32_t in[3] = {5, -6, 7}, out[3] = {0, 0, 0};
  ASSERT_TRUE((*d)->CopyIn(b, in, 12).ok());
  ASSERT_TRUE((*d)->CopyOut(out, b, 12).ok());
  EXPECT_EQ(std::vector<int32_t>(out, out + 3), std::vector<int32_t>(in, in + 3));
  // its own error objects, read through its error calls
  EXPECT_EQ((*d)->Allocate(DType::kF32, 1 << 20).status().message(), "fake2: more than 1 MiB");
  EXPECT_TRUE((*d)->TakesMappedLaunch());
}

TEST(Plugin, APluginOfABI2WithoutACallOfItsCapsIsRefusedNamingIt) {
  EXPECT_EQ(LoadError(Fake2("nocopyout")),
            "plugin " + Fake2("nocopyout") +
                ": its table has no copy_d2h, which a plugin of its caps must have (see "
                "plugin_api.h; plugin_sdk.h fills a stub for every call)");
}

TEST(Plugin, AnABI2EntryWithATableOfAnotherMajor) {
  EXPECT_EQ(LoadError(Fake2("major3")),
            "plugin " + Fake2("major3") +
                ": plugin ABI 3.1 from its uopc_plugin_entry_v2; this host speaks ABI 2.1 and 1.x "
                "(a table's major must be its entry's)");
}

TEST(Plugin, AnABI2TableTooSmall) {
  EXPECT_EQ(LoadError(Fake2("smalltable")),
            "plugin " + Fake2("smalltable") + ": its table is " +
                std::to_string(offsetof(uopc_api, copy)) + " bytes; ABI 2.0 needs " +
                std::to_string(offsetof(uopc_api, queue_synchronize) + sizeof(void*)));
}

TEST(Plugin, AProbeOfABI2SaysWhyItCannotWork) {
  absl::StatusOr<std::unique_ptr<Plugin>> p = Plugin::Load(Fake2("probefails"));
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(p.status().message(), "plugin " + Fake2("probefails") +
                                      ": unusable on this machine (fake2: no such hardware here)");
}

TEST(Plugin, MissingFile) {
  EXPECT_EQ(LoadError("/no/such/libuopc_plugin_x.so"),
            "plugin /no/such/libuopc_plugin_x.so: no such file");
}

TEST(Plugin, NotASharedLibrary) {
  std::string path = std::string(std::getenv("TEST_TMPDIR")) + "/libuopc_plugin_text.so";
  FILE* f = std::fopen(path.c_str(), "w");
  std::fputs("not an ELF file", f);
  std::fclose(f);
  EXPECT_EQ(LoadError(path).rfind("plugin " + path + ": cannot be loaded: ", 0), 0u)
      << LoadError(path);
}

TEST(Plugin, MissingEntrySymbol) {
  EXPECT_EQ(LoadError(Fake("noentry")),
            "plugin " + Fake("noentry") +
                ": no uopc_plugin_entry_v2 or uopc_plugin_entry_v1 symbol (not a uopc plugin, or "
                "built for another ABI)");
}

TEST(Plugin, BuiltForAnotherMajor) {
  EXPECT_EQ(LoadError(Fake("entryv3")),
            "plugin " + Fake("entryv3") +
                ": built for plugin ABI major 3; this host speaks ABI 2.1 and 1.x");
}

TEST(Plugin, TableOfAnotherMajor) {
  EXPECT_EQ(LoadError(Fake("badmajor")),
            "plugin " + Fake("badmajor") +
                ": plugin ABI 2.3 from its uopc_plugin_entry_v1; this host speaks ABI 2.1 and 1.x "
                "(a table's major must be its entry's)");
}

TEST(Plugin, EntryRefusesTheHost) {
  EXPECT_EQ(LoadError(Fake("nulltable")),
            "plugin " + Fake("nulltable") +
                ": its entry returned no table: it refuses this host (ABI 2.1 and 1.x)");
}

TEST(Plugin, FailedInitialize) {
  EXPECT_EQ(LoadError(Fake("initfail")),
            "plugin " + Fake("initfail") + ": initialize failed: no accelerator is attached");
}

TEST(Plugin, ProbeSaysUnusable) {
  EXPECT_EQ(LoadError(Fake("probezero")),
            "plugin " + Fake("probezero") + ": unusable on this machine (its probe said no)");
}

TEST(Plugin, UnimplementedSlotsOfABI1AreStubsNotNull) {
  std::unique_ptr<Plugin> p = *Plugin::Load(Fake("minimal"));
  uopc_program_load_args load{};
  absl::Status s = p->Call(&load);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented);
  EXPECT_EQ(s.message(), "program_load is not implemented by this plugin");
  uopc_backend_count_args count{};
  ASSERT_TRUE(p->Call(&count).ok());
  EXPECT_EQ(count.count, 0u);
}

TEST(Plugin, AnOlderMinorsMissingMembersAreSkippedNotCalled) {
  std::unique_ptr<Plugin> p = *Plugin::Load(Fake("oldminor"));  // built against ABI 1.0
  EXPECT_EQ(p->Version(), "0.1 (ABI 1.0, uop format 1)");
  uopc_memory_info_args m{};
  absl::Status s = p->Call(&m);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented);
  EXPECT_EQ(s.message(), "plugin fake (ABI 1.0) has no memory_info");
  // copy of 2.0 is copy_d2d of 1.0 (here the SDK's stub)
  uopc_copy_args c{};
  s = p->Call(&c);
  EXPECT_EQ(s.message(), "copy_d2d is not implemented by this plugin");
  EXPECT_FALSE(p->TakesMappedLaunch());
}

TEST(Plugin, InitializeWithGetsTheEnvironmentsOptionsForItsName) {
  // UOPC_FAKE_* from the BUILD rule, for the plugin named "fake"; UOPC_FAKEX_* is not its
  absl::StatusOr<std::unique_ptr<Plugin>> p = Plugin::Load(Fake("options"));
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("initialize failed: options servers=a:1,b:2;token=t0k;"),
            std::string::npos)
      << p.status();
  EXPECT_EQ(Plugin::EnvironmentOptions("fakex"),
            (std::vector<std::pair<std::string, std::string>>{{"other", "not for it"}}));
}

TEST(Device, AnABI10PluginStillWorks) {
  DiscoveryOptions o;
  o.paths = {Fake("oldminor")};
  auto r = DeviceRegistry::Discover(o);
  Device* d = *r->GetDevice("FAKE:0");
  Buffer b = *d->Allocate(DType::kI32, 2);
  int32_t in[2] = {7, 8}, out[2] = {0, 0};
  ASSERT_TRUE(d->CopyIn(b, in, 8).ok());
  ASSERT_TRUE(d->CopyOut(out, b, 8).ok());
  EXPECT_EQ(out[1], 8);
  EXPECT_EQ(d->Memory().status().message(), "plugin fake (ABI 1.0) has no memory_info");
  // no backend_target before 1.4: the reference target of its type, the kernels it had
  EXPECT_EQ(d->target(), Target::ReferenceCpu());
  // and kernels of plain loops: it maps their launch itself (the host does from 1.5)
  EXPECT_FALSE(d->TakesMappedLaunch());
}

// What a device-only plugin supports of the conformance suite, it passes: one built for ABI
// 1.0 (through the host's 1.x calls), one of 1.5, and one of 2.0 written against the header
// alone.
TEST(Device, PluginsOfEveryABIPassTheConformanceSuiteInWhatTheySupport) {
  for (const auto& [path, device] :
       {std::pair{Fake("oldminor"), "FAKE:0"}, std::pair{Fake("minimal"), "FAKE:0"},
        std::pair{Fake2("minimal"), "FAKE2:0"}}) {
    DiscoveryOptions o;
    o.paths = {path};
    auto r = DeviceRegistry::Discover(o);
    absl::StatusOr<Device*> d = r->GetDevice(device);
    ASSERT_TRUE(d.ok()) << d.status();
    ConformanceReport report = RunConformance(**d);
    for (const ConformanceCase& c : report.cases)
      if (c.status == ConformanceCase::kFail)
        ADD_FAILURE() << path << ": " << c.section << ": " << c.name << ": " << c.detail;
    EXPECT_GT(report.passed, 10) << path;
  }
}

TEST(Registry, RepeatsWhyAPluginDidNotLoadWhenItsDeviceIsAskedFor) {
  DiscoveryOptions o;
  o.paths = {Fake("minimal"), Fake("initfail")};
  o.log_failures = false;
  auto r = DeviceRegistry::Discover(o);
  ASSERT_EQ(r->devices().size(), 1u);
  EXPECT_EQ(r->devices()[0]->name(), "FAKE:0");
  // the second file is plugin "fake" too, and fails anyway
  absl::StatusOr<Device*> d = r->GetDevice("CUDA");
  EXPECT_EQ(d.status().message(), "no device CUDA:0 (devices: FAKE:0; not loaded: plugin " +
                                      Fake("initfail") +
                                      ": initialize failed: no accelerator is attached)");
}

TEST(Registry, RequiredDevicesFailLoudly) {
  DiscoveryOptions o;
  o.paths = {Fake("minimal")};
  o.required = {"FAKE:0", "TPU:3"};
  o.log_failures = false;
  auto r = DeviceRegistry::Discover(o);
  EXPECT_EQ(
      r->required_status().message(),
      "UOPC_DEVICES asks for TPU:3, which is not available: no device TPU:3 (devices: FAKE:0)");
  EXPECT_FALSE(r->Default().ok());
}

TEST(Registry, AnAbsurdDeviceCountIsRefused) {
  DiscoveryOptions o;
  o.paths = {Fake("manydevices")};
  o.log_failures = false;
  auto r = DeviceRegistry::Discover(o);
  EXPECT_TRUE(r->devices().empty());
  ASSERT_EQ(r->failures().size(), 1u);
  EXPECT_EQ(r->failures()[0].status.message(),
            "plugin fake (" + Fake("manydevices") +
                ") reports 4294967295 devices; at most 4096 are accepted (a broken plugin?)");
}

TEST(Registry, OneFileFoundTwiceLoadsOnce) {
  DiscoveryOptions o;
  o.paths = {Fake("minimal"), Fake("minimal")};
  auto r = DeviceRegistry::Discover(o);
  EXPECT_EQ(r->plugins().size(), 1u);
  EXPECT_TRUE(r->failures().empty());
}

TEST(Registry, FindsTheCPluginInRunfiles) {
  DiscoveryOptions o = DiscoveryOptions::FromEnvironment();
  auto r = DeviceRegistry::Discover(o);
  absl::StatusOr<Device*> d = r->GetDevice("CPU");
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ((*d)->backend_name(), "c-gcc");
}

TEST(Device, MemoryOfAFakeDevice) {
  DiscoveryOptions o;
  o.paths = {Fake("minimal")};
  auto r = DeviceRegistry::Discover(o);
  Device* d = *r->GetDevice("FAKE:0");
  Buffer b = *d->Allocate(DType::kI32, 4);
  int32_t in[4] = {1, -2, 3, -4}, out[4] = {0, 0, 0, 0};
  ASSERT_TRUE(d->CopyIn(b, in, 16).ok());
  ASSERT_TRUE(d->CopyOut(out, b, 16).ok());
  EXPECT_EQ(std::vector<int32_t>(out, out + 4), std::vector<int32_t>(in, in + 4));
  EXPECT_EQ(d->CopyIn(b, in, 16, 8).message(),
            "copy to FAKE:0: 16 bytes at offset 8 of a 16-byte buffer");
  EXPECT_EQ(d->Allocate(DType::kF32, 1 << 20).status().message(),
            "fake: 4194304 bytes is more than 1 MiB");
  EXPECT_EQ(d->Build({"x"}, {"k"}).status().message(),
            "device FAKE:0 has no backend to compile for it");
}

}  // namespace
}  // namespace uopc
