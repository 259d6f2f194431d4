// A loaded plugin: the shared library opened with dlopen, its entry called, its table
// checked (ABI major, struct size, the calls it must have), initialized. Errors name the
// file and what went wrong: missing file, not loadable, no entry symbol, another ABI major,
// a table too small or missing a call, a failed initialize. A plugin that says it cannot
// work on this machine (no driver, no hardware) is refused with UNAVAILABLE and its reason.
//
// The host speaks ABI 2.0 (backends/plugin_api.h): one Call per call of the ABI, taking its
// args struct, whose error object comes back as an absl::Status; a call the plugin has not
// got (a NULL slot, a slot past its table, an SDK stub) is UNIMPLEMENTED naming it. A
// plugin built for ABI 1.x is called through its own tables (devices/plugin_v1.h), so that
// the rest of the host never sees which major a plugin speaks.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

#include "backends/plugin_api.h"

namespace uopc {

class PluginV1;

class Plugin {
 public:
  /// Opens and initializes the plugin at `path`.
  static absl::StatusOr<std::unique_ptr<Plugin>> Load(const std::string& path);
  ~Plugin();  // plugins stay loaded: objects may outlive their users (see plugin_api.h)

  const std::string& path() const { return path_; }
  const std::string& name() const { return name_; }
  int abi_major() const { return abi_major_; }
  int abi_minor() const { return abi_minor_; }
  uint64_t caps() const { return caps_; }
  /// The core/uop.proto format version it reads.
  uint32_t uop_format() const { return uop_format_; }
  /// The calls of ABI 2.0 its table has not got (NULL, or past its size); none for a 1.x
  /// plugin, whose tables are checked when it loads.
  std::vector<std::string> AbsentCalls() const;
  /// "1.0 (ABI 2.0, uop format 1)"
  std::string Version() const;
  /// Whether kernels reach it with their launch mapped by the host (ABI 1.5 and later).
  bool TakesMappedLaunch() const { return abi_major_ >= 2 || abi_minor_ >= 5; }
  /// The options the host gives plugin `plugin` at initialize: every environment variable
  /// UOPC_<PLUGIN>_<KEY>, as ("<key>", value), keys lower-cased, sorted.
  static std::vector<std::pair<std::string, std::string>> EnvironmentOptions(
      const std::string& plugin);

  /// Calls the plugin's `call` with `args` (its struct_size set here).
#define UOPC_PLUGIN_CALL_(call, returns, required) \
  absl::Status Call(uopc_##call##_args* args) const;
  UOPC_API_CALLS(UOPC_PLUGIN_CALL_)
#undef UOPC_PLUGIN_CALL_

  /// The status of a uopc_error* returned by this plugin (which it then frees).
  absl::Status Take(uopc_error* e) const;
  /// The status of an error's code and message (DEVICE_LOST is UNAVAILABLE, saying so).
  static absl::Status StatusOf(uopc_code code, absl::string_view message);
  /// The host's log, given to plugins (warnings and errors always; the rest at UOPC_DEBUG).
  static void Log(void* ctx, uopc_log_level level, const char* msg, uint64_t len);

 private:
  Plugin() = default;
  /// Whether the table is large enough to hold `slot`, and it is set.
  template <typename T>
  bool Has(T uopc_api::*slot) const {
    const uopc_api* zero = nullptr;
    auto offset = reinterpret_cast<uintptr_t>(&(zero->*slot));
    return api_->struct_size >= offset + sizeof(T) && api_->*slot != nullptr;
  }
  absl::Status Missing(const char* call) const;
  /// Who the plugin says it is, from its table (of either major).
  template <typename Table>
  void Describe(const Table& table);
  /// probe, then initialize with the environment's options.
  absl::Status Start();

  void* handle_ = nullptr;
  const uopc_api* api_ = nullptr;  // ABI 2
  std::unique_ptr<PluginV1> v1_;   // or ABI 1
  std::string path_, name_, version_;
  int abi_major_ = 0, abi_minor_ = 0;
  uint32_t uop_format_ = 0;
  uint64_t caps_ = 0;
};

}  // namespace uopc
