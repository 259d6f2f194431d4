// Pipeline parallelism: the stages of a model on the devices of several ranks
// ("rank0/CPU:0", "rank1/CPU:0": Gpt::Split), every rank running the same program, and a
// step's batch in micro-batches whose forward (F) and backward (B) passes run in the order
// of a schedule. Each F realizes its micro-batch's loss and the activations that crossed
// into each stage (sent forward as they are made); each B accumulates that micro-batch's
// gradients, sending each stage's input gradient back. A rank runs only its own stage's
// part of each, and goes on to the next phase while its sends are in flight, so the stages
// work at once on different micro-batches. A stage's inner activations are recomputed by B
// (only the crossings are kept between F and B).
//
//   GPipe: F0 F1 F2 F3 B0 B1 B2 B3          (every micro-batch's crossings kept until B)
//   1F1B:  F0 F1 B0 F2 B1 F3 B2 B3 (2 stages: at most `stages` micro-batches in flight)
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

#include "frontend/tensor.h"

namespace uopc {

enum class PipelineSchedule { kGPipe, k1F1B };

/// "gpipe" or "1f1b"; the error lists both.
absl::StatusOr<PipelineSchedule> ParsePipelineSchedule(const std::string& name);

/// One phase of a schedule: the forward or the backward pass of a micro-batch.
struct PipelinePhase {
  bool forward = true;
  int micro_batch = 0;
  bool operator==(const PipelinePhase&) const = default;
};

/// The order of the phases of `micro_batches` micro-batches over `stages` stages.
std::vector<PipelinePhase> ScheduleOrder(PipelineSchedule schedule, int stages, int micro_batches);

/// The devices of a pipeline's stages: `device` ("CPU:0") of each of `ranks` ("rank2/CPU:0").
std::vector<DeviceRef> StageDevices(const std::vector<int>& ranks, const std::string& device);

/// Runs `order` (ScheduleOrder): `loss_of(m, crossings)` builds micro-batch m's loss and
/// appends its crossings (Gpt::Forward's). Afterwards each of `params` holds the gradient
/// of the mean of the micro-batches' losses, realized; returns that mean (lazy).
Tensor RunPipelineSchedule(const std::vector<PipelinePhase>& order,
                           const std::function<Tensor(int, std::vector<Tensor>*)>& loss_of,
                           const std::vector<Tensor*>& params);

/// Realizes, in one plan, the gradients that `params` have.
void RealizeGradients(const std::vector<Tensor*>& params);

/// `t` copied to each of `devices` (every rank then reads its own copy): a value that one
/// stage computes (the loss, whether the step was finite) for all.
std::vector<Tensor> OnEveryStage(const Tensor& t, const std::vector<DeviceRef>& devices);

}  // namespace uopc
