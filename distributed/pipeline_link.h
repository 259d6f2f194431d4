// PipelineLink: the job's process group as the runtime's link to the other ranks
// (runtime/peer_link.h), so that a plan's COPY to a device of another rank ("rank1/CPU:0")
// is a send there, and a COPY from one a receive here: how pipeline stages on different
// processes pass activations forward and their gradients back. While it lives, this process
// also answers to its job's device names ("rank0/CPU:0" is its own CPU:0 on rank 0).
//
//   PipelineLink link(*world);                       // every rank
//   model.Split({"rank0/CPU:0", "rank1/CPU:0"});     // every rank: the same program
#pragma once

#include "distributed/process_group.h"
#include "runtime/peer_link.h"

namespace uopc {

class PipelineLink : public PeerLink {
 public:
  /// Over `job`, the group of all the job's ranks (ProcessGroup::Create).
  explicit PipelineLink(ProcessGroup& job);
  ~PipelineLink() override;
  PipelineLink(const PipelineLink&) = delete;
  PipelineLink& operator=(const PipelineLink&) = delete;

  Wait Send(int to, const void* data, uint64_t bytes) override;
  Wait Recv(int from, void* data, uint64_t bytes) override;

 private:
  ProcessGroup& job_;
};

}  // namespace uopc
