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
#pragma once

#include <memory>
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
  /// A device by name ("CPU:0"; "CPU" means "CPU:0"; any case: "cpu:1"). The error lists
  /// the devices there are and every plugin that did not load, with why.
  absl::StatusOr<Device*> GetDevice(absl::string_view name) const;
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
};

}  // namespace uopc
