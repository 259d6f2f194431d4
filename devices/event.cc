#include "devices/event.h"

namespace uopc {

Event& Event::operator=(Event&& o) noexcept {
  if (this != &o) {
    this->~Event();
    plugin_ = o.plugin_;
    handle_ = o.handle_;
    o.handle_ = nullptr;
  }
  return *this;
}

Event::~Event() {
  if (!handle_) return;
  uopc_event_destroy_args a{};
  a.event = handle_;
  plugin_->Call(&a).IgnoreError();
}

absl::Status Event::Wait(uint64_t timeout_ns) const {
  if (!handle_) return absl::OkStatus();
  uopc_event_wait_args a{};
  a.event = handle_;
  a.timeout_ns = timeout_ns;
  return plugin_->Call(&a);
}

absl::StatusOr<bool> Event::Done() const {
  if (!handle_) return true;
  uopc_event_query_args a{};
  a.event = handle_;
  if (absl::Status s = plugin_->Call(&a); !s.ok()) return s;
  return a.done != 0;
}

}  // namespace uopc
