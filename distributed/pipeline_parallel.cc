#include "distributed/pipeline_parallel.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace uopc {

absl::StatusOr<PipelineSchedule> ParsePipelineSchedule(const std::string& name) {
  const std::string n = absl::AsciiStrToLower(name);
  if (n == "gpipe") return PipelineSchedule::kGPipe;
  if (n == "1f1b") return PipelineSchedule::k1F1B;
  return absl::InvalidArgumentError(
      absl::StrCat("no pipeline schedule '", name, "'; expected gpipe or 1f1b"));
}

std::vector<PipelinePhase> ScheduleOrder(PipelineSchedule schedule, int stages, int micro_batches) {
  std::vector<PipelinePhase> order;
  // GPipe warms up with every micro-batch; 1F1B with as many as there are stages, then
  // alternates one backward pass with one forward pass
  const int warmup = schedule == PipelineSchedule::kGPipe ? micro_batches
                                                          : std::min(stages, micro_batches);
  for (int m = 0; m < warmup; ++m) order.push_back({true, m});
  for (int m = 0; m < micro_batches; ++m) {
    order.push_back({false, m});
    if (m + warmup < micro_batches) order.push_back({true, m + warmup});
  }
  return order;
}

std::vector<DeviceRef> StageDevices(const std::vector<int>& ranks, const std::string& device) {
  std::vector<DeviceRef> out;
  for (int r : ranks) out.emplace_back(absl::StrCat("rank", r, "/", device));
  return out;
}

Tensor RunPipelineSchedule(const std::vector<PipelinePhase>& order,
                           const std::function<Tensor(int, std::vector<Tensor>*)>& loss_of,
                           const std::vector<Tensor*>& params) {
  int micro_batches = 0;
  for (const PipelinePhase& p : order) micro_batches = std::max(micro_batches, p.micro_batch + 1);
  std::vector<Tensor> losses(micro_batches);
  for (const PipelinePhase& p : order) {
    Tensor& loss = losses[p.micro_batch];
    if (p.forward) {
      std::vector<Tensor> crossings;
      loss = loss_of(p.micro_batch, &crossings);
      std::vector<Tensor*> realize{&loss};
      for (Tensor& c : crossings) realize.push_back(&c);
      Tensor::RealizeAll(realize);
    } else {
      (loss * (1.0 / micro_batches)).Backward();
      RealizeGradients(params);
    }
  }
  Tensor mean = losses.front();
  for (int m = 1; m < micro_batches; ++m) mean = mean + losses[m];
  return micro_batches > 1 ? mean * (1.0 / micro_batches) : mean;
}

void RealizeGradients(const std::vector<Tensor*>& params) {
  std::vector<Tensor> grads;
  for (Tensor* p : params)
    if (p->grad()) grads.push_back(p->grad());
  std::vector<Tensor*> all;
  for (Tensor& g : grads) all.push_back(&g);
  Tensor::RealizeAll(all);
}

std::vector<Tensor> OnEveryStage(const Tensor& t, const std::vector<DeviceRef>& devices) {
  std::vector<Tensor> out;
  for (const DeviceRef& d : devices) out.push_back(t.To(d));
  return out;
}

}  // namespace uopc
