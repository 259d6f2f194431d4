#include "runtime/peer_link.h"

#include <atomic>

namespace uopc {
namespace {
std::atomic<PeerLink*> link{nullptr};
}  // namespace

void SetPeerLink(PeerLink* l) { link.store(l); }

absl::StatusOr<PeerLink*> GetPeerLink() {
  if (PeerLink* l = link.load()) return l;
  return absl::FailedPreconditionError(
      "no link to the job's other ranks in this process (distributed/pipeline_link.h makes one "
      "when the process joins its job)");
}

}  // namespace uopc
