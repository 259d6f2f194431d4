// uopc_device_server: serves one of this machine's devices to the remote plugin
// (backends/remote) over gRPC, until SIGTERM or SIGINT. Prints the address it listens on
// ("uopc_device_server: CPU:0 on 127.0.0.1:41234") once it serves.
//
//   UOPC_DEVICE_TOKEN=secret uopc_device_server --port 0 --device CPU:0 --latency-us 100
//   UOPC_DEVICE_TOKEN=secret UOPC_REMOTE_DEVICES=127.0.0.1:41234 gpt_train --device REMOTE:0
#include <cstdlib>
#include <iostream>

#include <grpcpp/grpcpp.h>

#include "absl/strings/match.h"

#include "core/flags.h"
#include "devices/registry.h"
#include "rpc/grpc_call.h"
#include "tools/device_server.h"

using namespace uopc;

int main(int argc, char** argv) {
  std::string device = "CPU:0", address = "127.0.0.1";
  int64_t port = 0, latency_us = 0;
  double bandwidth_gbps = 0;
  Flags flags(
      "usage: uopc_device_server [flags]\n\nServes a device of this machine to the remote plugin "
      "(REMOTE:N devices of other processes) over gRPC.\nEvery call must carry the token in "
      "UOPC_DEVICE_TOKEN (or UOPC_JOB_TOKEN under uopc_launch).");
  flags.Add("device", &device, "the device to serve (CPU:0, CUDA:0, ...)");
  flags.Add("address", &address, "the address to listen on (0.0.0.0: every interface)");
  flags.Add("port", &port, "the port to listen on (0: any free one, printed)", 0, 65535);
  flags.Add("latency-us", &latency_us, "simulated latency added to every call and batch", 0,
            10'000'000);
  flags.Add("bandwidth-gbps", &bandwidth_gbps,
            "simulated bandwidth of copies, in Gbit/s (0: no limit)", 0, 1e6);
  if (int rc = flags.Parse(argc, argv); rc >= 0) return rc;
  DeviceServerOptions o;
  for (const char* var : {"UOPC_DEVICE_TOKEN", "UOPC_JOB_TOKEN"})
    if (const char* t = std::getenv(var); t && *t && o.token.empty()) o.token = t;
  if (o.token.empty()) {
    std::cerr << "uopc_device_server: no token: set UOPC_DEVICE_TOKEN (every client must send "
                 "it)\n";
    return 1;
  }
  o.latency_us = latency_us;
  o.bandwidth_gbps = bandwidth_gbps;
  // it serves this machine's devices, never remote ones (it could end up serving itself)
  if (absl::StartsWithIgnoreCase(device, "remote")) {
    std::cerr << "uopc_device_server: --device " << device
              << ": a device server serves this machine's devices, not remote ones\n";
    return 1;
  }
  unsetenv("UOPC_REMOTE_DEVICES");
  absl::StatusOr<Device*> d = DeviceRegistry::Get().GetDevice(device);
  if (!d.ok()) {
    std::cerr << "uopc_device_server: " << d.status().message() << "\n";
    return 1;
  }
  BlockStopSignals();
  DeviceServer service(*d, o);
  grpc::ServerBuilder b;
  b.RegisterService(&service);
  if (!ServeUntilSignal(b, address, port, [&](int bound) {
        std::cout << "uopc_device_server: " << (*d)->name() << " on " << address << ":" << bound
                  << std::endl;
      })) {
    std::cerr << "uopc_device_server: cannot listen on " << address << ":" << port << "\n";
    return 1;
  }
  return 0;
}
