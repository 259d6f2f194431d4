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
  if (handle_) plugin_->api().device->event_destroy(handle_);
}

absl::Status Event::Wait(uint64_t timeout_ns) const {
  if (!handle_) return absl::OkStatus();
  return plugin_->Device(&uopc_device_api::event_wait, "event_wait", handle_, timeout_ns);
}

absl::StatusOr<bool> Event::Done() const {
  if (!handle_) return true;
  int32_t done = 0;
  absl::Status s = plugin_->Device(&uopc_device_api::event_query, "event_query", handle_, &done);
  if (!s.ok()) return s;
  return done != 0;
}

}  // namespace uopc
