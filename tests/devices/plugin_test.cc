// Loading plugins: every way one can fail has its own message; the registry repeats the
// reason when the device is asked for; UOPC_DEVICES fails loudly.
#include "devices/plugin.h"

#include <cstdlib>

#include <gtest/gtest.h>

#include "devices/registry.h"

namespace uopc {
namespace {

std::string Fake(const std::string& variant) {
  return std::string(std::getenv("TEST_SRCDIR")) + "/uopc/tests/devices/libuopc_plugin_fake_" +
         variant + ".so";
}

std::string LoadError(const std::string& path) {
  absl::StatusOr<std::unique_ptr<Plugin>> p = Plugin::Load(path);
  EXPECT_FALSE(p.ok());
  return p.ok() ? "" : std::string(p.status().message());
}

TEST(Plugin, LoadsAMinimalPluginWrittenInC) {
  absl::StatusOr<std::unique_ptr<Plugin>> p = Plugin::Load(Fake("minimal"));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ((*p)->name(), "fake");
  EXPECT_EQ((*p)->Version(), "0.1 (ABI 1.5, uop format 1)");
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
                ": no uopc_plugin_entry_v1 symbol (not a uopc plugin, or built for another ABI)");
}

TEST(Plugin, BuiltForAnotherMajor) {
  EXPECT_EQ(
      LoadError(Fake("entryv2")),
      "plugin " + Fake("entryv2") + ": built for plugin ABI major 2; this host speaks ABI 1.5");
}

TEST(Plugin, TableOfAnotherMajor) {
  EXPECT_EQ(LoadError(Fake("badmajor")),
            "plugin " + Fake("badmajor") +
                ": plugin ABI 2.3; this host speaks ABI 1.5 (the major must match)");
}

TEST(Plugin, EntryRefusesTheHost) {
  EXPECT_EQ(LoadError(Fake("nulltable")),
            "plugin " + Fake("nulltable") +
                ": its entry returned no table: it refuses this host (ABI 1.5)");
}

TEST(Plugin, FailedInitialize) {
  EXPECT_EQ(LoadError(Fake("initfail")),
            "plugin " + Fake("initfail") + ": initialize failed: no accelerator is attached");
}

TEST(Plugin, ProbeSaysUnusable) {
  EXPECT_EQ(LoadError(Fake("probezero")),
            "plugin " + Fake("probezero") + ": unusable on this machine (its probe said no)");
}

TEST(Plugin, UnimplementedSlotsAreStubsNotNull) {
  std::unique_ptr<Plugin> p = *Plugin::Load(Fake("minimal"));
  uopc_program* prog = nullptr;
  absl::Status s = p->Device(&uopc_device_api::program_load, "program_load", nullptr, nullptr,
                             uint64_t{0}, nullptr, uint32_t{0}, &prog);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented);
  EXPECT_EQ(s.message(), "program_load is not implemented by this plugin");
  EXPECT_EQ(p->api().backend->backend_count(), 0u);
}

TEST(Plugin, AnOlderMinorsMissingMembersAreSkippedNotCalled) {
  std::unique_ptr<Plugin> p = *Plugin::Load(Fake("oldminor"));  // built against ABI 1.0
  EXPECT_EQ(p->Version(), "0.1 (ABI 1.0, uop format 1)");
  EXPECT_FALSE(Plugin::Has(p->api().device, &uopc_device_api::copy));
  EXPECT_FALSE(Plugin::Has(p->api().device, &uopc_device_api::memory_info));
  EXPECT_TRUE(Plugin::Has(p->api().device, &uopc_device_api::queue_synchronize));
  absl::Status s = p->Device(&uopc_device_api::copy, "copy", nullptr);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented);
  EXPECT_EQ(s.message(), "plugin fake (ABI 1.0) has no copy");
  EXPECT_FALSE(Plugin::Has(&p->api(), &uopc_plugin_api::initialize_with));  // (initialize ran)
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
