// Event: the completion of work queued on a device (a kernel, a copy), owned by the host.
// Another queue of the same plugin can wait for it (Device::Wait), the host can wait for it
// or ask whether it is done. An Event without a handle is already complete (a plugin that
// runs its work before returning may hand back none). Move-only; destroying it does not
// wait.
#pragma once

#include <cstdint>

#include "absl/status/status.h"

#include "backends/plugin_api.h"
#include "devices/plugin.h"

namespace uopc {

class Event {
 public:
  Event() = default;
  /// Takes ownership of `handle` (may be null: complete) of `plugin`.
  Event(const Plugin* plugin, uopc_event* handle) : plugin_(plugin), handle_(handle) {}
  Event(Event&& o) noexcept : plugin_(o.plugin_), handle_(o.handle_) { o.handle_ = nullptr; }
  Event& operator=(Event&& o) noexcept;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  ~Event();

  /// Waits until the work is done (at most `timeout_ns`); the work's error, if it failed.
  absl::Status Wait(uint64_t timeout_ns = ~uint64_t{0}) const;
  /// Whether the work is done (true for an Event without a handle).
  absl::StatusOr<bool> Done() const;
  uopc_event* handle() const { return handle_; }
  const Plugin* plugin() const { return plugin_; }

 private:
  const Plugin* plugin_ = nullptr;
  uopc_event* handle_ = nullptr;
};

}  // namespace uopc
