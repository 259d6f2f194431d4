// Collectives on Tensors, and what data parallelism needs of them: every rank starts from
// rank 0's parameters, and after Backward the gradients are averaged over the ranks in
// one flat bucket (one all-reduce for the whole model, as DDP's buckets). The tensors are
// realized and their values pass through the host; f16 and bf16 travel as f32.
#pragma once

#include <vector>

#include "absl/status/statusor.h"

#include "distributed/process_group.h"
#include "frontend/tensor.h"

namespace uopc {

/// `t`'s value reduced over all ranks (same shape and dtype; blocks until done).
absl::StatusOr<Tensor> AllReduce(ProcessGroup& g, const Tensor& t, ReduceOp op = ReduceOp::kSum);
/// Rank `root`'s value of `t`, on every rank (same shape and dtype on every rank).
absl::StatusOr<Tensor> Broadcast(ProcessGroup& g, const Tensor& t, int root = 0);
/// Assigns rank `root`'s values to every parameter (before training starts).
absl::Status BroadcastParameters(ProcessGroup& g, const std::vector<Tensor*>& params, int root = 0);
/// Replaces the gradient of every parameter that has one by its average over the ranks.
/// Every rank must pass the same parameters, with gradients in the same places. The
/// gradients are computed in one plan together with `with` (the loss: what else the step
/// reads of the same graph, so that none of it is computed twice).
absl::Status AverageGradients(ProcessGroup& g, const std::vector<Tensor*>& params,
                              const std::vector<Tensor*>& with = {});

}  // namespace uopc
