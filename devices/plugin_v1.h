// A plugin built for ABI 1.x (devices/plugin_api_v1.h), seen through the calls of ABI 2.0:
// each 2.0 call becomes the 1.x slot that does the same (positional arguments, outputs
// beside the args struct; render_kernel or render, copy or copy_d2d, initialize_with or
// initialize), and a slot the plugin's minor lacks is UNIMPLEMENTED naming it. Used by
// Plugin only; the rest of the host never sees which major a plugin speaks.
#pragma once

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#include "devices/plugin_api_v1.h"

namespace uopc {

class PluginV1 {
 public:
  /// The table that uopc_plugin_entry_v1 gave, checked: its size, its required slots.
  /// Errors say what is wrong without the file's name (the caller adds it).
  static absl::StatusOr<std::unique_ptr<PluginV1>> Check(const uopc_plugin_api* api);
  /// The host_api a 1.x plugin is given at entry (major 1: what it checks).
  static const uopc_host_api* Host();

  const uopc_plugin_api& api() const { return *api_; }

#define UOPC_PLUGIN_V1_CALL_(call, returns, required) \
  absl::Status Call(uopc_##call##_args* args) const;
  UOPC_API_CALLS(UOPC_PLUGIN_V1_CALL_)
#undef UOPC_PLUGIN_V1_CALL_

  absl::Status Take(uopc_error* e) const;

 private:
  explicit PluginV1(const uopc_plugin_api* api) : api_(api) {}
  template <typename S, typename T>
  static bool Has(const S* table, T S::*member) {
    if (!table) return false;
    const S* zero = nullptr;
    auto offset = reinterpret_cast<uintptr_t>(&(zero->*member));
    return table->struct_size >= offset + sizeof(T) && table->*member != nullptr;
  }
  absl::Status Missing(const char* slot) const;
  template <typename Fn, typename... A>
  absl::Status Device(Fn uopc_device_api::*fn, const char* name, A&&... args) const {
    if (!Has(api_->device, fn)) return Missing(name);
    return Take((api_->device->*fn)(std::forward<A>(args)...));
  }
  template <typename Fn, typename... A>
  absl::Status Backend(Fn uopc_backend_api::*fn, const char* name, A&&... args) const {
    if (!Has(api_->backend, fn)) return Missing(name);
    return Take((api_->backend->*fn)(std::forward<A>(args)...));
  }

  const uopc_plugin_api* api_;
};

}  // namespace uopc
