// The device registry: finds plugins, loads them, opens their devices, and remembers why
// a plugin did not load, to say so when its device is asked for.
//
// Where plugins are found, in order: beside the running binary (and in its uopc_plugins/
// folder, and in Bazel runfiles under backends/), the folders of UOPC_PLUGIN_DIRS
// (colon-separated), and the files of UOPC_PLUGINS (comma- or colon-separated paths).
// Folders are scanned for libuopc_plugin_*.so. A plugin that did not load is said on stderr,
// unless it is for hardware this machine lacks (UNAVAILABLE: the CUDA plugin without a
// driver); either way the reason is kept, and given when its device is asked for.
// UOPC_DEVICES lists devices the user insists on: if one is missing, the registry fails
// loudly, with every load failure.
//
// In a job of several processes (distributed/), devices also have names across the job:
// "rank1/CPU:0" is CPU:0 of rank 1. On rank 1 it is its own CPU:0; elsewhere a peer device
// (Device::Peer: no memory here), like this process's device of that name.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

#include "devices/device.h"
#include "devices/plugin.h"

namespace uopc {

/// More devices than this from one plugin is a broken plugin, refused.
inline constexpr uint32_t kMaxDevicesPerPlugin = 4096;

struct DiscoveryOptions {
  std::vector<std::string> dirs;      // scanned for libuopc_plugin_*.so
  std::vector<std::string> paths;     // loaded as given
  std::vector<std::string> required;  // device names that must exist
  bool log_failures = true;           // one line on stderr per plugin that did not load
  /// From the environment and the running binary's location (see above).
  static DiscoveryOptions FromEnvironment();
};

class DeviceRegistry {
 public:
  struct Failure {
    std::string path;
    absl::Status status;
  };

  /// The process-wide registry (discovered from the environment on first use).
  static DeviceRegistry& Get();
  static std::unique_ptr<DeviceRegistry> Discover(const DiscoveryOptions& options);

  const std::vector<std::unique_ptr<Plugin>>& plugins() const { return plugins_; }
  const std::vector<Failure>& failures() const { return failures_; }
  std::vector<Device*> devices() const;
  /// The devices of one plugin.
  std::vector<Device*> DevicesOf(const Plugin& plugin) const;
  /// A device by name ("CPU:0"; "CPU" means "CPU:0"; any case: "cpu:1"; "rank1/CPU:0" once
  /// this process has a job rank). The error lists the devices there are and every plugin
  /// that did not load, with why.
  absl::StatusOr<Device*> GetDevice(absl::string_view name) const;
  /// This process's rank in its job, which its devices' "rankN/" names use (distributed/
  /// sets it on joining a job); -1, as before any is set: no "rankN/" name resolves.
  void SetJobRank(int rank);
  int job_rank() const;
  /// The first device of UOPC_DEVICES, else the first device found.
  absl::StatusOr<Device*> Default() const;
  /// OK unless a device the user insisted on (UOPC_DEVICES) is missing.
  const absl::Status& required_status() const { return required_; }

 private:
  std::string WhatIsMissing() const;

  std::vector<std::unique_ptr<Plugin>> plugins_;
  std::vector<std::unique_ptr<Device>> devices_;
  std::vector<Failure> failures_;
  std::vector<std::string> required_names_;
  absl::Status required_;
  mutable std::mutex mu_;  // guards the two below
  int job_rank_ = -1;
  mutable std::vector<std::unique_ptr<Device>> peers_;  // made when first named
};

}  // namespace uopc
