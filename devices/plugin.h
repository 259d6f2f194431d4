// A loaded plugin: the shared library opened with dlopen, its entry called, its table
// checked (ABI major, struct sizes), initialized. Errors name the file and what went
// wrong: missing file, not loadable, no entry symbol, another ABI major, a table too small,
// a failed initialize. A plugin whose probe says it cannot work on this machine (no driver,
// no hardware) is refused with UNAVAILABLE and the reason its initialize gives. Calls into the plugin go through Call(), which turns its error
// objects into absl::Status and treats a table member the plugin's (older, smaller)
// struct does not have as UNIMPLEMENTED rather than reading past it.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#include "backends/plugin_api.h"

namespace uopc {

class Plugin {
 public:
  /// Opens and initializes the plugin at `path`.
  static absl::StatusOr<std::unique_ptr<Plugin>> Load(const std::string& path);
  ~Plugin();  // plugins stay loaded: objects may outlive their users (see plugin_api.h)

  const uopc_plugin_api& api() const { return *api_; }
  const std::string& path() const { return path_; }
  const std::string& name() const { return name_; }
  /// "1.0 (ABI 1.0, uop format 1)"
  std::string Version() const;
  /// The options the host gives plugin `plugin` at initialize (ABI 1.2): every environment
  /// variable UOPC_<PLUGIN>_<KEY>, as ("<key>", value), keys lower-cased, sorted.
  static std::vector<std::pair<std::string, std::string>> EnvironmentOptions(
      const std::string& plugin);

  /// The status of a uopc_error* returned by this plugin (which it then frees).
  absl::Status Take(uopc_error* e) const;
  /// Calls device-table member `fn` (an error-returning function) as a Status;
  /// UNIMPLEMENTED if this plugin's table is too old to have it.
  template <typename Fn, typename... A>
  absl::Status Device(Fn uopc_device_api::*fn, const char* name, A&&... args) const {
    if (!Has(api_->device, fn)) return Missing(name);
    return Take((api_->device->*fn)(std::forward<A>(args)...));
  }
  /// The same for the backend table.
  template <typename Fn, typename... A>
  absl::Status Backend(Fn uopc_backend_api::*fn, const char* name, A&&... args) const {
    if (!Has(api_->backend, fn)) return Missing(name);
    return Take((api_->backend->*fn)(std::forward<A>(args)...));
  }
  /// Whether `table` is large enough to hold `member`, and it is set.
  template <typename S, typename T>
  static bool Has(const S* table, T S::*member) {
    if (!table) return false;
    const S* zero = nullptr;
    auto offset = reinterpret_cast<uintptr_t>(&(zero->*member));
    return table->struct_size >= offset + sizeof(T) && table->*member != nullptr;
  }

 private:
  Plugin() = default;
  absl::Status Missing(const char* fn) const;
  /// initialize_with (ABI 1.2) with the environment's options, else initialize.
  absl::Status Initialize() const;

  void* handle_ = nullptr;
  const uopc_plugin_api* api_ = nullptr;
  std::string path_, name_;
};

}  // namespace uopc
