// The remote plugin against real uopc_device_server processes on loopback: the conformance
// suite on REMOTE:0, and what the host sees when the server dies or restarts. Every wait is
// bounded: the plugin's timeout is 20 s here, and a dead server is seen as soon as its
// connection drops.
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"

#include "backends/c/cpu_target.h"
#include "devices/device.h"
#include "devices/plugin.h"
#include "tests/backends/conformance/conformance.h"
#include "tests/testing/command.h"
#include "tests/testing/server_process.h"

namespace uopc {
namespace {

using testing::Runfile;
using testing::ServerProcess;

std::unique_ptr<ServerProcess> StartServer(std::vector<std::string> args = {},
                                           const std::string& port = "0") {
  args.insert(args.begin(), {"--port", port});
  return std::make_unique<ServerProcess>(Runfile("tools/uopc_device_server"), args);
}

// The remote plugin, (re)initialized to the servers at `addresses`.
std::unique_ptr<Plugin> LoadRemote(const std::string& addresses) {
  setenv("UOPC_REMOTE_DEVICES", addresses.c_str(), 1);
  setenv("UOPC_REMOTE_TIMEOUT", "20", 1);
  absl::StatusOr<std::unique_ptr<Plugin>> p =
      Plugin::Load(Runfile("backends/remote/libuopc_plugin_remote.so"));
  EXPECT_TRUE(p.ok()) << p.status();
  return p.ok() ? *std::move(p) : nullptr;
}

bool IsDeviceLost(const absl::Status& s) {
  return absl::IsUnavailable(s) && s.message().find("DEVICE_LOST") != std::string::npos;
}

TEST(RemoteDevice, PassesTheConformanceSuite) {
  std::unique_ptr<ServerProcess> server = StartServer();
  ASSERT_TRUE(server->ok()) << server->first_line();
  EXPECT_NE(server->first_line().find("CPU:0 on 127.0.0.1:"), std::string::npos);
  std::unique_ptr<Plugin> plugin = LoadRemote(server->address());
  ASSERT_TRUE(plugin);
  absl::StatusOr<std::unique_ptr<Device>> d = Device::Open(*plugin, 0);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ((*d)->name(), "REMOTE:0");
  // its kernels are lowered here for the server's device: this machine's CPU, with the
  // kernels the server's C plugin supplies (run there, through kernel_launch: the suite's
  // supplied section)
  Target without = (*d)->target();
  without.kernels.clear();
  EXPECT_EQ(without, HostCpuTarget()) << (*d)->target().ToString();
  const Target host = HostCpuTarget();  // (AMX's, or AVX2's without AVX-512)
  EXPECT_TRUE((*d)->target().kernels.empty() || host.Has("amx_bf16") ||
              (host.Has("avx2") && !host.Has("avx512f")))
      << (*d)->target().ToString();
  ConformanceReport r = RunConformance(**d);
  for (const ConformanceCase& c : r.cases)
    EXPECT_NE(c.status, ConformanceCase::kFail) << c.section << ": " << c.name << ": " << c.detail;
  EXPECT_GT(r.passed, 300);
  std::printf("%d passed, %d failed, %d skipped\n", r.passed, r.failed, r.skipped);
}

TEST(RemoteDevice, WithoutAServerOpeningFailsSayingWhere) {
  std::unique_ptr<ServerProcess> server = StartServer();
  ASSERT_TRUE(server->ok());
  const std::string address = server->address();
  server->Kill();
  setenv("UOPC_REMOTE_CONNECT_TIMEOUT", "1", 1);
  std::unique_ptr<Plugin> plugin = LoadRemote(address);
  unsetenv("UOPC_REMOTE_CONNECT_TIMEOUT");
  ASSERT_TRUE(plugin);
  absl::StatusOr<std::unique_ptr<Device>> d = Device::Open(*plugin, 0);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find(address), std::string::npos) << d.status();
  EXPECT_NE(d.status().message().find("REMOTE:0"), std::string::npos) << d.status();
}

TEST(RemoteDevice, AWrongTokenIsRefused) {
  std::unique_ptr<ServerProcess> server = StartServer();
  ASSERT_TRUE(server->ok());
  setenv("UOPC_REMOTE_TOKEN", "not-the-token", 1);
  std::unique_ptr<Plugin> plugin = LoadRemote(server->address());
  unsetenv("UOPC_REMOTE_TOKEN");
  ASSERT_TRUE(plugin);
  absl::StatusOr<std::unique_ptr<Device>> d = Device::Open(*plugin, 0);
  ASSERT_FALSE(d.ok());
  EXPECT_TRUE(absl::IsPermissionDenied(d.status())) << d.status();
}

// The server dies with copies and launches queued (each call slowed to 2 ms, so most are
// still pending): the pending work and every later call fail as DEVICE_LOST, naming the
// device and the address; the CPU device of the same process goes on.
TEST(RemoteDevice, AServerKilledMidPlanMakesItsDeviceLostAndNothingElse) {
  std::unique_ptr<ServerProcess> server = StartServer({"--latency-us", "2000"});
  ASSERT_TRUE(server->ok());
  std::unique_ptr<Plugin> plugin = LoadRemote(server->address());
  ASSERT_TRUE(plugin);
  absl::StatusOr<std::unique_ptr<Device>> remote = Device::Open(*plugin, 0);
  ASSERT_TRUE(remote.ok()) << remote.status();
  Device& dev = **remote;
  absl::StatusOr<Buffer> a = dev.Allocate(DType::kF32, 1 << 18), b = dev.Allocate(DType::kF32, 1 << 18);
  ASSERT_TRUE(a.ok() && b.ok());
  std::vector<float> host(1 << 18, 1.5f);
  for (int i = 0; i < 200; ++i) {
    ASSERT_TRUE(dev.EnqueueCopyIn(*a, host.data(), host.size() * 4).ok());
    ASSERT_TRUE(dev.EnqueueCopy(*b, 0, *a, 0, host.size() * 4).ok());
  }
  server->Kill();
  absl::Status pending = dev.Synchronize();
  EXPECT_TRUE(IsDeviceLost(pending)) << pending;
  EXPECT_NE(pending.message().find("REMOTE:0"), std::string::npos) << pending;
  EXPECT_NE(pending.message().find(server->address()), std::string::npos) << pending;
  absl::Status later = dev.CopyOut(host.data(), *b, 16);
  EXPECT_TRUE(IsDeviceLost(later)) << later;
  absl::StatusOr<Buffer> more = dev.Allocate(DType::kF32, 1 << 20);  // (not from the cache)
  EXPECT_TRUE(IsDeviceLost(more.status())) << more.status();

  absl::StatusOr<std::unique_ptr<Plugin>> c = Plugin::Load(Runfile("backends/c/libuopc_plugin_c.so"));
  ASSERT_TRUE(c.ok()) << c.status();
  absl::StatusOr<std::unique_ptr<Device>> cpu = Device::Open(**c, 0);
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  absl::StatusOr<Buffer> x = (*cpu)->Allocate(DType::kF32, 4);
  ASSERT_TRUE(x.ok());
  const float in[4] = {1, 2, 3, 4};
  float out[4] = {};
  ASSERT_TRUE((*cpu)->CopyIn(*x, in, 16).ok());
  ASSERT_TRUE((*cpu)->CopyOut(out, *x, 16).ok());
  EXPECT_EQ(out[3], 4.0f);
}

// A server restarted on the same port: the device opens again (a new session), and works;
// a buffer of the old session is refused as lost, not taken for one of the new session.
TEST(RemoteDevice, ARestartedServerIsANewSessionAndOldBuffersAreLost) {
  std::unique_ptr<ServerProcess> server = StartServer();
  ASSERT_TRUE(server->ok());
  const std::string port = std::to_string(server->port());
  std::unique_ptr<Plugin> plugin = LoadRemote(server->address());
  ASSERT_TRUE(plugin);
  absl::StatusOr<std::unique_ptr<Device>> first = Device::Open(*plugin, 0);
  ASSERT_TRUE(first.ok()) << first.status();
  absl::StatusOr<Buffer> old = (*first)->Allocate(DType::kI32, 4);
  ASSERT_TRUE(old.ok());
  const int32_t in[4] = {7, 8, 9, 10};
  ASSERT_TRUE((*first)->CopyIn(*old, in, 16).ok());

  server->Kill();
  server = StartServer({}, port);
  ASSERT_TRUE(server->ok()) << server->first_line();
  int32_t out[4] = {};
  absl::Status stale = (*first)->CopyOut(out, *old, 16);
  EXPECT_TRUE(IsDeviceLost(stale)) << stale;

  absl::StatusOr<std::unique_ptr<Device>> second = Device::Open(*plugin, 0);
  ASSERT_TRUE(second.ok()) << second.status();
  absl::StatusOr<Buffer> fresh = (*second)->Allocate(DType::kI32, 4);
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  ASSERT_TRUE((*second)->CopyIn(*fresh, in, 16).ok());
  ASSERT_TRUE((*second)->CopyOut(out, *fresh, 16).ok());
  EXPECT_EQ(out[2], 9);
  // the old buffer on the new session's queue: lost, not one of the new session's buffers
  absl::StatusOr<Event> mixed = (*second)->EnqueueCopy(*fresh, 0, *old, 0, 16);
  absl::Status s = mixed.ok() ? (*second)->Synchronize() : mixed.status();
  EXPECT_TRUE(IsDeviceLost(s)) << s;
  EXPECT_NE(s.message().find("lost session"), std::string::npos) << s;
  EXPECT_TRUE((*second)->CopyOut(out, *fresh, 16).ok());
}

}  // namespace
}  // namespace uopc
