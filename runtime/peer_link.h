// PeerLink: how this process reaches the other ranks of its job, for a plan's copies to and
// from their devices ("rank1/CPU:0", devices/registry.h). runtime/ knows only this
// interface; distributed/ implements it over the job's process group and sets it when the
// process joins a job. A copy to another rank's device is a Send there, a copy from one a
// Recv here; every rank runs the same plans in the same order (one program), so the two
// ends of each copy meet in the same place of their plans.
#pragma once

#include <cstdint>
#include <functional>

#include "absl/status/statusor.h"

namespace uopc {

class PeerLink {
 public:
  virtual ~PeerLink() = default;
  /// What waits for a started message: its status once it is done.
  using Wait = std::function<absl::Status()>;
  /// Starts sending `bytes` bytes at `data` to job rank `to`; `data` must stay as it is
  /// until the returned Wait has returned. Messages to one rank arrive in the order sent.
  virtual Wait Send(int to, const void* data, uint64_t bytes) = 0;
  /// Starts receiving the next message from job rank `from` into `data` (`bytes` bytes,
  /// which the message must have).
  virtual Wait Recv(int from, void* data, uint64_t bytes) = 0;
};

/// Sets the link (which must outlive it; null: none).
void SetPeerLink(PeerLink* link);
/// The link; FAILED_PRECONDITION when this process has none.
absl::StatusOr<PeerLink*> GetPeerLink();

}  // namespace uopc
