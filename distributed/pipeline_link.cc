#include "distributed/pipeline_link.h"

#include "devices/registry.h"

namespace uopc {
namespace {
constexpr int kPipelineTag = 0x5049;  // ("PI": apart from the job's own sends and receives)
}  // namespace

PipelineLink::PipelineLink(ProcessGroup& job) : job_(job) {
  DeviceRegistry::Get().SetJobRank(job.rank());
  SetPeerLink(this);
}

PipelineLink::~PipelineLink() {
  SetPeerLink(nullptr);
  DeviceRegistry::Get().SetJobRank(-1);
}

PeerLink::Wait PipelineLink::Send(int to, const void* data, uint64_t bytes) {
  std::shared_ptr<Work> w =
      job_.Send(data, static_cast<int64_t>(bytes), DType::kU8, to, kPipelineTag);
  return [w] { return w->Wait(); };
}

PeerLink::Wait PipelineLink::Recv(int from, void* data, uint64_t bytes) {
  std::shared_ptr<Work> w =
      job_.Recv(data, static_cast<int64_t>(bytes), DType::kU8, from, kPipelineTag);
  return [w] { return w->Wait(); };
}

}  // namespace uopc
